"""The database at start-up (issue #15, item 13), as an unlucky operator meets it: a 0-byte
``apex.db`` (a full disk, a botched restore) must not be silently re-initialised with a new
password and no accounts or studies; a damaged one must not end in a traceback; each is
refused with one line saying what to do, ``--init-db`` starts empty only when asked (keeping
the old file), and the database file is readable by its owner only."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlmodel import Session, select

from app.auth import create_user
from app.models import User
from app.settings import Settings
from app.web import create_app

# Inherently SQLite: these are the checks app/db.py makes of the database *file* (0 bytes,
# damaged, not SQLite, missing from a used data folder, --init-db keeping the old file aside,
# mode 0600). PostgreSQL's own start-up path (an unreachable server, a wrong password, a
# missing database) is tested on PostgreSQL in tests/test_postgres.py.
pytestmark = pytest.mark.sqlite_only(reason="checks of the SQLite database file")

ROOT = Path(__file__).resolve().parents[2]


def _used_data_dir(tmp_path: Path) -> Path:
    """A data directory a server has run in: a database with an account, a session secret."""
    data = tmp_path / "data"
    app = create_app(Settings(data_dir=data))
    with Session(app.state.engine) as db:
        create_user(db, "ada", "correct horse battery")
    app.state.engine.dispose()
    assert (data / "apex.db").stat().st_size > 0 and (data / "secret_key").is_file()
    return data


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(data: Path, *extra: str, wait_s: float = 60.0) -> tuple[int | None, str, str]:
    """``apex-voice serve`` on loopback; returns (exit code or None if it came up, stdout,
    stderr). A server that comes up is stopped again."""
    env = {**os.environ, "APEX_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)}
    env.pop("APEX_SECRET_KEY", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from app.cli import main; main()", "serve", "--no-demo-runs",
         "--host", "127.0.0.1", "--port", str(_free_port()), *extra],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")),
                              daemon=True)
    reader.start()
    deadline = time.monotonic() + wait_s
    try:
        while time.monotonic() < deadline:
            code = proc.poll()
            if code is not None:
                reader.join(timeout=5)
                return code, "".join(lines), proc.stderr.read() if proc.stderr else ""
            if "APEX-Voice Studio on" in "".join(lines):
                time.sleep(0.5)
                return None, "".join(lines), ""
            time.sleep(0.1)
        raise AssertionError(f"serve neither started nor exited in {wait_s} s: {lines}")
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _one_line_refusal(code: int | None, out: str, err: str) -> str:
    assert code is not None, f"the server started on a bad database:\n{out}"
    assert code != 0
    assert "Traceback" not in err and "Traceback" not in out, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_an_empty_database_file_is_refused_not_reinitialised(tmp_path: Path) -> None:
    data = _used_data_dir(tmp_path)
    (data / "apex.db").write_bytes(b"")  # a full disk, a restore that copied nothing
    line = _one_line_refusal(*_serve(data))
    assert "apex.db" in line and "empty" in line
    assert "backup" in line and "--init-db" in line
    assert (data / "apex.db").stat().st_size == 0  # left exactly as found
    assert not (data / "initial-password.txt").exists()  # no new account was made


def test_a_damaged_database_is_refused_in_one_line(tmp_path: Path) -> None:
    data = _used_data_dir(tmp_path)
    db = data / "apex.db"
    good = db.read_bytes()
    damaged = bytearray(good)
    damaged[100:4096] = os.urandom(3996)  # the schema page overwritten
    db.write_bytes(bytes(damaged))
    line = _one_line_refusal(*_serve(data))
    assert "apex.db" in line and "damaged" in line and "backup" in line
    assert db.read_bytes() == bytes(damaged)
    db.write_bytes(b"this is not a database at all" * 100)
    line = _one_line_refusal(*_serve(data))
    assert "apex.db" in line and "not an SQLite database" in line


def test_init_db_starts_empty_only_when_asked_and_keeps_the_old_file(tmp_path: Path) -> None:
    data = _used_data_dir(tmp_path)
    # On a healthy database the flag is refused: it would throw away every account.
    line = _one_line_refusal(*_serve(data, "--init-db"))
    assert "--init-db" in line and "healthy" in line
    (data / "apex.db").write_bytes(b"")
    code, out, _ = _serve(data, "--init-db")
    assert code is None, out
    assert "Log in as 'researcher'" in out
    kept = [p for p in data.iterdir() if p.name.startswith("apex.db.") and "empty" in p.name]
    assert len(kept) == 1 and kept[0].stat().st_size == 0
    engine_app = create_app(Settings(data_dir=data))
    with Session(engine_app.state.engine) as db:
        assert [u.username for u in db.exec(select(User)).all()] == ["researcher"]
    engine_app.state.engine.dispose()


def test_database_files_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        app = create_app(Settings(data_dir=tmp_path / "fresh"))
        app.state.engine.dispose()
        mode = stat.S_IMODE((tmp_path / "fresh" / "apex.db").stat().st_mode)
        assert mode == 0o600, oct(mode)
        # A database an older version left world-readable is tightened at start-up.
        (tmp_path / "fresh" / "apex.db").chmod(0o644)
        app = create_app(Settings(data_dir=tmp_path / "fresh"))
        app.state.engine.dispose()
        mode = stat.S_IMODE((tmp_path / "fresh" / "apex.db").stat().st_mode)
        assert mode == 0o600, oct(mode)
    finally:
        os.umask(old)


@pytest.mark.parametrize("content", [b"", b"garbage" * 200])
def test_user_create_refuses_a_bad_database_too(tmp_path: Path, content: bytes) -> None:
    data = _used_data_dir(tmp_path)
    (data / "apex.db").write_bytes(content)
    env = {**os.environ, "APEX_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", "from app.cli import main; main()", "user",
                        "create", "mallory", "--password-stdin"], input="long-enough-pw\n",
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    _one_line_refusal(r.returncode, r.stdout, r.stderr)
    assert (data / "apex.db").read_bytes() == content
