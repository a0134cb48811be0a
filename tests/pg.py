"""Every database test on SQLite and on PostgreSQL (issue #18; docs/webapp.md "PostgreSQL").

A pytest plugin (loaded by tests/conftest.py). Test modules that touch the database say so with
``pytestmark = pytest.mark.database``; each of their tests then runs twice, ``[sqlite]`` and
``[postgresql]``. The PostgreSQL run gets a fresh database of its own (a copy of a template
migrated once per session) in a throw-away cluster that this plugin starts for the session:
``initdb`` into a temporary folder, listening on 127.0.0.1 only at a free port, password
authentication, stopped and deleted at the end. As root, the cluster runs as ``nobody`` (the
server refuses to run as root).

The app reads the database from ``DATABASE_URL``: the plugin sets it for the PostgreSQL run
(and clears it for every other test), so ``create_app(Settings(data_dir=…))`` and servers
started in subprocesses use the test's database without any change to the test. Module-scoped
apps take :func:`module_database_url` instead.

A test that is inherently about SQLite (the file checks of app/db.py) is marked
``pytest.mark.sqlite_only(reason=…)``. A test that opens the database without either mark
fails, naming the mark to add, so no database test is left on SQLite alone by accident.

Tests of the PostgreSQL path itself are marked ``pytest.mark.postgresql_only`` and run once,
``[postgresql]``.

PostgreSQL missing on a developer's machine is a failure of the ``[postgresql]`` tests with a
message saying what to install, never a silent skip; ``APEX_TEST_POSTGRES=0`` runs the
database tests on SQLite only: the header of the test report says so and each PostgreSQL run
is reported as skipped with that reason.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import pwd
import re
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event

OPT_OUT_ENV = "APEX_TEST_POSTGRES"
BINDIR_ENV = "APEX_TEST_PG_BINDIR"
BACKENDS = ("sqlite", "postgresql")
URL_ENVS = ("DATABASE_URL", "APEX_DATABASE_URL")
TIME_ZONE = "Asia/Kathmandu"
TEMPLATE = "apex_head"
"""The database every test database is copied from: migrated to the newest revision once."""
INSTALL_HINT = ("install Debian's PostgreSQL (`sudo apt-get install postgresql`, or "
                "`make system-packages` as root), point APEX_TEST_PG_BINDIR at the folder "
                "holding initdb, or run the database tests on SQLite only with "
                "APEX_TEST_POSTGRES=0")


class PostgresUnavailable(Exception):
    """The throw-away cluster cannot be started; the message says why and what to do."""


def postgres_wanted() -> bool:
    raw = os.environ.get(OPT_OUT_ENV, "1").strip().lower()
    if raw in ("1", "yes", "true", "on", ""):
        return True
    if raw in ("0", "no", "false", "off"):
        return False
    raise pytest.UsageError(f"{OPT_OUT_ENV}={raw!r}: use 1 (the default: database tests on "
                            "SQLite and PostgreSQL) or 0 (SQLite only)")


# --------------------------------------------------------------------------- the cluster


def _version(path: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path.parent.name)) or (0,)


def find_bindir() -> Path:
    """The folder with ``initdb``, ``pg_ctl`` and ``postgres``: APEX_TEST_PG_BINDIR, else the
    newest Debian ``/usr/lib/postgresql/<version>/bin``, else wherever ``initdb`` is on PATH."""
    given = os.environ.get(BINDIR_ENV)
    candidates: list[Path] = []
    if given:
        candidates.append(Path(given))
    else:
        debian = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version, reverse=True)
        candidates += debian
        on_path = shutil.which("initdb")
        if on_path:
            candidates.append(Path(on_path).resolve().parent)
    for folder in candidates:
        if all(os.access(folder / n, os.X_OK) for n in ("initdb", "pg_ctl", "postgres")):
            return folder
    where = given or "/usr/lib/postgresql/*/bin and PATH"
    raise PostgresUnavailable(
        f"PostgreSQL is needed for the [postgresql] database tests, but no initdb, pg_ctl and "
        f"postgres were found (looked in {where}); {INSTALL_HINT}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _reachable_by_others(folder: Path) -> bool:
    """``folder`` and every folder above it can be walked through by another user."""
    where = folder.resolve()
    return all(stat.S_IMODE(p.stat().st_mode) & 0o001 for p in (where, *where.parents))


class Cluster:
    """A throw-away PostgreSQL cluster on 127.0.0.1 (see the module docstring)."""

    user = "apex"

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.password = secrets.token_hex(16)
        self.port = 0
        self.root: Path | None = None
        self._as: dict[str, Any] = {}
        self._names = itertools.count(1)
        self._lock = threading.Lock()

    # The server refuses to run as root: as root, initdb and postgres run as ``nobody`` in a
    # folder that belongs to it.
    def _run_as(self) -> dict[str, Any]:
        if os.geteuid() != 0:
            return {}
        try:
            who = pwd.getpwnam("nobody")
        except KeyError:
            raise PostgresUnavailable(
                "running as root, the test cluster must run as an unprivileged user, but the "
                "system has no user 'nobody'; run the tests as an ordinary user") from None
        return {"user": who.pw_uid, "group": who.pw_gid, "extra_groups": []}

    def _pg(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        assert self.root is not None
        env = {"PATH": f"{self.bindir}:/usr/bin:/bin", "HOME": str(self.root), "LC_ALL": "C",
               "TZ": "UTC"}
        return subprocess.run([str(self.bindir / args[0]), *args[1:]], cwd=self.root, env=env,
                              capture_output=True, text=True, timeout=timeout, check=False,
                              **self._as)

    def start(self) -> None:
        self._as = self._run_as()
        base = Path(tempfile.gettempdir())
        if self._as and not _reachable_by_others(base):
            base = Path("/tmp")
        self.root = Path(tempfile.mkdtemp(prefix="apex-pg-", dir=base))
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self._as:
            for path in (self.root, pwfile):
                os.chown(path, self._as["user"], self._as["group"])
        data = self.root / "data"
        done = self._pg("initdb", "-D", str(data), "-U", self.user, f"--pwfile={pwfile}",
                        "--auth=scram-sha-256", "--encoding=UTF8", "--no-locale", "--no-sync")
        if done.returncode != 0:
            raise PostgresUnavailable(
                f"initdb ({self.bindir}) failed: {_tail(done.stderr or done.stdout)}; "
                f"{INSTALL_HINT}")
        pwfile.unlink()
        # Throw-away data: no fsync. Loopback only, no Unix socket; enough connections for
        # two app servers and the pools of the apps a test leaves to the garbage collector.
        # The server's default zone is deliberately not UTC (+05:45): a timestamp that depends
        # on it shows up as a failing test, not as a shift in a real deployment.
        for attempt in range(3):
            self.port = _free_port()
            options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} "
                       "-c unix_socket_directories='' -c fsync=off -c synchronous_commit=off "
                       "-c full_page_writes=off -c max_connections=300 "
                       f"-c timezone={TIME_ZONE}")
            done = self._pg("pg_ctl", "-D", str(data), "-l", str(self.root / "server.log"),
                            "-w", "-t", "60", "-o", options, "start")
            if done.returncode == 0:
                break
            if attempt == 2 or "could not bind" not in self._log():
                raise PostgresUnavailable(
                    f"the test cluster did not start: {_tail(self._log() or done.stderr)}")
        atexit.register(self.stop)
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
        from app.db import make_engine, migrate

        engine = make_engine(self.url(TEMPLATE))
        try:
            migrate(engine)
        finally:
            engine.dispose()

    def _log(self) -> str:
        assert self.root is not None
        log = self.root / "server.log"
        return log.read_text(errors="replace") if log.exists() else ""

    def stop(self) -> None:
        if self.root is None:
            return
        root, self.root = self.root, None
        if (root / "data" / "postmaster.pid").exists():
            self.root = root
            self._pg("pg_ctl", "-D", str(root / "data"), "-m", "immediate", "-w", "stop",
                     timeout=60)
            self.root = None
        shutil.rmtree(root, ignore_errors=True)

    def url(self, database: str) -> str:
        return (f"postgresql+psycopg://{self.user}:{self.password}@127.0.0.1:{self.port}/"
                f"{database}")

    @contextlib.contextmanager
    def admin(self) -> Iterator[Any]:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user=self.user,
                             password=self.password, dbname="postgres",
                             autocommit=True) as conn:
            yield conn

    def new_database(self, *, empty: bool = False) -> str:
        """A fresh database: a copy of the migrated template, or ``empty`` (no tables)."""
        with self._lock:
            name = f"t{os.getpid()}_{next(self._names)}"
        template = "template0" if empty else TEMPLATE
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return name

    def drop_database(self, name: str) -> None:
        """Drop it, ending whatever connections a test's engines left open."""
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _tail(text: str, lines: int = 6) -> str:
    kept = [ln.strip() for ln in text.strip().splitlines() if ln.strip()][-lines:]
    return " | ".join(kept) or "(no output)"


_cluster_error: PostgresUnavailable | None = None


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """The session's throw-away cluster; a clear failure (not a skip) when it cannot start."""
    global _cluster_error
    if _cluster_error is not None:
        pytest.fail(str(_cluster_error), pytrace=False)
    cluster: Cluster | None = None
    try:
        cluster = Cluster(find_bindir())
        cluster.start()
    except PostgresUnavailable as exc:
        _cluster_error = exc
    except (OSError, subprocess.SubprocessError) as exc:
        _cluster_error = PostgresUnavailable(f"the test cluster did not start: {exc}; "
                                             f"{INSTALL_HINT}")
    if _cluster_error is not None or cluster is None:
        if cluster is not None:
            cluster.stop()
        pytest.fail(str(_cluster_error), pytrace=False)
    yield cluster
    cluster.stop()


# --------------------------------------------------------------------------- the two backends


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "database: the test touches the database; it runs "
                            "once on SQLite and once on PostgreSQL (tests/pg.py)")
    config.addinivalue_line("markers", "sqlite_only(reason): a database test that is "
                            "inherently about SQLite (tests/pg.py)")
    config.addinivalue_line("markers", "postgresql_only: a test of the PostgreSQL path itself "
                            "(tests/pg.py)")
    event.listen(Engine, "engine_connect", _count_connection)


def pytest_report_header(config: pytest.Config) -> str:
    if postgres_wanted():
        return ("database tests: SQLite and PostgreSQL (a throw-away cluster; "
                f"{OPT_OUT_ENV}=0 for SQLite only)")
    return f"database tests: SQLite only ({OPT_OUT_ENV}=0): the [postgresql] runs are skipped"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    node = metafunc.definition
    if node.get_closest_marker("sqlite_only"):
        return
    if node.get_closest_marker("postgresql_only"):
        backends: tuple[str, ...] = BACKENDS[1:]
    elif node.get_closest_marker("database"):
        backends = BACKENDS
    else:
        return
    # Opting out shows each PostgreSQL run as skipped, with the reason, in the report.
    params = [b if b == "sqlite" or postgres_wanted() else pytest.param(b, marks=pytest.mark.skip(
        reason=f"{OPT_OUT_ENV}=0: the PostgreSQL runs are left out")) for b in backends]
    metafunc.parametrize("db_backend", params, indirect=True, scope="module")


_connections = 0


def _count_connection(*_: Any) -> None:
    global _connections
    _connections += 1


@pytest.fixture(scope="module")
def db_backend(request: pytest.FixtureRequest) -> str:
    """``sqlite`` or ``postgresql`` for a database test; ``sqlite`` for every other test."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture(scope="module")
def module_database_url(request: pytest.FixtureRequest, db_backend: str) -> Iterator[str | None]:
    """For a module-scoped app: ``None`` on SQLite (the default file in its data folder), a
    fresh PostgreSQL database for the module otherwise. Pass it as ``Settings(database_url=…)``."""
    if db_backend != "postgresql":
        yield None
        return
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    name = cluster.new_database()
    yield cluster.url(name)
    cluster.drop_database(name)


@pytest.fixture(autouse=True)
def _database_for_the_test(request: pytest.FixtureRequest, db_backend: str,
                           monkeypatch: pytest.MonkeyPatch) -> Iterator[str | None]:
    """Point DATABASE_URL at a fresh PostgreSQL database for a ``[postgresql]`` test; clear it
    for every other test (a developer's own DATABASE_URL never reaches the tests)."""
    for name in URL_ENVS:
        monkeypatch.delenv(name, raising=False)
    if db_backend == "postgresql":
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        name = cluster.new_database()
        url = cluster.url(name)
        monkeypatch.setenv("DATABASE_URL", url)
        yield url
        cluster.drop_database(name)
        return
    before = _connections
    yield None
    node = request.node
    if (_connections != before and node.get_closest_marker("database") is None
            and node.get_closest_marker("sqlite_only") is None):
        pytest.fail(
            f"{node.nodeid} opened the database but its module is not marked: add "
            "`pytestmark = pytest.mark.database` (it then runs on SQLite and PostgreSQL), or "
            "mark the test `pytest.mark.sqlite_only(reason=…)` if it is about SQLite itself "
            "(tests/pg.py)", pytrace=False)
