"""Database engine, sessions and schema migrations (Alembic, run at start-up).

:func:`open_database` is what the server and the CLI use: before anything touches an SQLite
database it checks the file and refuses, with one line saying why and what to do, a database
that is empty (0 bytes), not an SQLite file, damaged, or missing from a data directory that was
used before; it never starts empty in place of one unless asked (``init_db``, ``apex-voice serve
--init-db``), and then keeps the old file aside. Database files are created readable by their
owner only (0600); an older, wider mode is tightened.

Any other URL (PostgreSQL: ``postgresql+psycopg://user:pass@host/db``, docs/webapp.md
"PostgreSQL") is first connected to: a server that cannot be reached, a wrong password or a
database that does not exist is refused with one line naming the URL (password hidden) and
what to do. Sessions on PostgreSQL run in UTC, so the zone-less timestamp columns hold UTC as
they do on SQLite; concurrent start-ups of several app processes migrate one at a time.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from alembic import command
from alembic.config import Config
from alembic.util.exc import CommandError
from sqlalchemy import Engine, make_url, text
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlmodel import Session, create_engine

if TYPE_CHECKING:
    from app.settings import Settings

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
SQLITE_HEADER = b"SQLite format 3\x00"
WHAT_TO_DO = ("restore it from a backup (stop the server, copy the backup over it), or start "
              "with an empty database with `apex-voice serve --init-db` (the {what} file is "
              "kept aside)")


class DatabaseRefused(Exception):
    """The database cannot be used as it is; the message is one line: why, and what to do."""


MIGRATION_LOCK = 0x41504558  # "APEX": the advisory lock that serializes migrations
LOCK_WAIT = "15s"
"""Longest wait for a row lock on PostgreSQL (the locks of app/study_a.py and app/study_b.py
last milliseconds)."""


def shown_url(url: str) -> str:
    """``url`` fit for messages and logs: its password hidden."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "(a database URL that cannot be parsed)"


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        return create_engine(url, connect_args={"check_same_thread": False})
    if make_url(url).get_backend_name() == "postgresql":
        # Sessions run in UTC, whatever the server's default zone (timestamps are UTC). A row
        # lock is waited for at most LOCK_WAIT: request handlers wait on the event loop, so a
        # lock that is never released must end in an error for one request, not freeze the
        # process.
        return create_engine(url, pool_pre_ping=True, connect_args={
            "options": f"-c timezone=UTC -c lock_timeout={LOCK_WAIT}"})
    return create_engine(url, pool_pre_ping=True)


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (default: the newest migration). On PostgreSQL the
    whole upgrade is one transaction under an advisory lock, so app processes starting at
    the same time migrate one after the other (the later ones find nothing left to do)."""
    cfg = alembic_config()
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":  # another process's migration may take a while
            conn.execute(text("SET LOCAL lock_timeout = 0"))
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Take the schema back to ``revision`` (``base``: no tables); for tests and operators
    undoing an upgrade."""
    cfg = alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)


def session_for(engine: Engine) -> Iterator[Session]:
    with Session(engine) as session:
        yield session


P = ParamSpec("P")
R = TypeVar("R")


def releasing(fn: Callable[Concatenate[Session, P], R]) -> Callable[Concatenate[Session, P], R]:
    """For a function that takes a row lock (``SELECT … FOR UPDATE``) in ``session``'s
    transaction: whatever it raises, the transaction is rolled back first, so the lock never
    outlives the call. (A request handler that returned with a lock still held would release it
    only when its session closes, after an ``await``; meanwhile the same process's next request
    for that row blocks the event loop, and the close never runs: both processes of a shared
    PostgreSQL stalled that way. Every lock must end before anything awaits.)"""

    @functools.wraps(fn)
    def wrapper(session: Session, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(session, *args, **kwargs)
        except BaseException:
            session.rollback()
            raise

    return wrapper


def _sqlite_path(url: str) -> Path | None:
    if not url.startswith("sqlite:///"):
        return None
    raw = url.removeprefix("sqlite:///").split("?", 1)[0]
    return Path(raw) if raw and raw != ":memory:" else None


def _state(path: Path) -> tuple[str, str]:
    """``(state, detail)``: ``missing``, ``empty``, ``not-sqlite``, ``damaged`` or
    ``healthy`` (detail: how many accounts it holds)."""
    if not path.exists():
        return "missing", ""
    if path.stat().st_size == 0:
        return "empty", ""
    with path.open("rb") as fh:
        head = fh.read(len(SQLITE_HEADER))
    if head != SQLITE_HEADER:
        return "not-sqlite", repr(head[:16])
    try:
        with contextlib.closing(sqlite3.connect(path)) as conn:
            rows = conn.execute("PRAGMA quick_check").fetchall()
            if [r[0] for r in rows] != ["ok"]:
                return "damaged", "; ".join(str(r[0]) for r in rows[:3])
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not tables:
                return "empty", "no tables"
            users = (conn.execute('SELECT count(*) FROM "user"').fetchone()[0]
                     if "user" in tables else 0)
    except sqlite3.DatabaseError as exc:
        return "damaged", str(exc)
    return "healthy", f"{users} account{'s' if users != 1 else ''}"


def _create_private(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _keep_aside(path: Path, state: str) -> Path:
    """Move the database (and its journal files) to ``<name>.<state>-<time>``; never delete."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.{state}-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.{state}-{stamp}-{n}")
    path.rename(target)
    for suffix in ("-journal", "-wal", "-shm"):
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            extra.rename(target.with_name(target.name + suffix))
    return target


def _prepare_sqlite(path: Path, *, init: bool, used_before: str | None) -> None:
    """Check the file before SQLAlchemy may create or write it; see the module docstring."""
    state, detail = _state(path)
    if state == "healthy":
        if init:
            raise DatabaseRefused(
                f"--init-db refused: the database {path} is healthy ({detail}); --init-db only "
                "starts an empty database in place of an empty, missing or damaged one. Start "
                "without --init-db (to really start over, move the file away yourself first)")
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            path.chmod(0o600)
        return
    if state == "missing":
        if used_before is not None and not init:
            raise DatabaseRefused(
                f"the database {path} is missing, but this data directory was used before "
                f"({used_before} is there); restore the database from a backup, or start with "
                "an empty database with `apex-voice serve --init-db`")
        _create_private(path)
        return
    what = {"empty": "empty", "not-sqlite": "unreadable", "damaged": "damaged"}[state]
    if not init:
        why = {
            "empty": f"is empty ({detail or '0 bytes'}): every account and study it held is "
                     "gone",
            "not-sqlite": f"is not an SQLite database (it starts with {detail})",
            "damaged": f"is damaged ({detail})",
        }[state]
        raise DatabaseRefused(f"the database {path} {why}; {WHAT_TO_DO.format(what=what)}")
    _keep_aside(path, what)
    _create_private(path)


def _check_server(url: str, engine: Engine) -> None:
    """Connect once before migrating: an unreachable server, a refused login or a missing
    database is one line naming the URL (no password) and what to do."""
    try:
        with engine.connect():
            pass
    except SQLAlchemyError as exc:
        engine.dispose()
        cause = getattr(exc, "orig", None) or exc
        first = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
        first = first.replace(make_url(url).password or "\0", "***")
        raise DatabaseRefused(
            f"the database {shown_url(url)} cannot be reached ({first}); check that its server "
            "is running and reachable from here, that the user, password and database name in "
            "DATABASE_URL are right and that the database exists (create it with the server's "
            "tools, e.g. `createdb`)") from None


def open_database(settings: Settings) -> Engine:
    """The app's engine, checked (SQLite) and migrated; :class:`DatabaseRefused` with a
    one-line message when the database cannot be used as it is."""
    url = settings.db_url()
    path = _sqlite_path(url)
    if path is not None:
        default = path.resolve() == (settings.data_dir / "apex.db").resolve()
        marks = [n for n in ("secret_key", "initial-password.txt")
                 if (settings.data_dir / n).exists()]
        _prepare_sqlite(path, init=settings.init_db,
                        used_before=str(settings.data_dir / marks[0]) if default and marks
                        else None)
    elif settings.init_db:
        raise DatabaseRefused("--init-db applies to the SQLite database in the data directory "
                              "only; create an empty database with your database server's "
                              "tools instead")
    try:
        engine = make_engine(url)
    except (ArgumentError, ImportError) as exc:
        raise DatabaseRefused(
            f"DATABASE_URL {shown_url(url)} cannot be used ({exc}); write it as "
            "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE, or leave it unset for the "
            "SQLite database in the data directory") from None
    if path is None:
        _check_server(url, engine)
    try:
        migrate(engine)
    except (SQLAlchemyError, CommandError, sqlite3.Error) as exc:
        engine.dispose()
        where = engine.url.render_as_string(hide_password=True)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatabaseRefused(
            f"the database {where} cannot be opened or brought up to date ({first}); check "
            "that it is this application's database and that this version is not older than "
            "the one that last used it, or restore it from a backup") from None
    return engine
