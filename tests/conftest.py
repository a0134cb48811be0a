"""Shared fixtures: a private speech cache, helpers to run scripted campaigns and the web
app's test clients (``web_client``)."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.agents.errors import STRICT_PROTOCOL_ENV
from runtime.core.spec import TaskSpec, default_tasks_dir, find_task, load_tasks
from runtime.session.campaign import parse_agent_spec, run_dir_for, run_one
from tests.webclient import WebClient, web_clients

# Database tests on SQLite and on PostgreSQL (a throw-away cluster per session; tests/pg.py).
pytest_plugins = ["tests.pg"]

# Strict wire parsing in every test: a message type an adapter does not model fails the run,
# so the fakes stay honest (tests of the tolerant default set it to 0 themselves).
os.environ[STRICT_PROTOCOL_ENV] = "1"


# Modules whose tests run on the wall clock (WebRTC peers, a browser, a realtime media clock,
# timings compared with each other, processes killed mid-write) or start a cluster of their
# own: marked ``serial``, so `make pytest` runs them one at a time after the other tests have
# run on two workers. Single tests elsewhere carry ``@pytest.mark.serial`` themselves.
SERIAL = (
    "tests/browser/",
    "tests/test_live_call.py",
    "tests/test_study_b_validity.py",
    "tests/test_demo_routes.py",
    "tests/test_ray_executor.py",
    "tests/test_durability.py",
    "tests/test_rtc_pacing.py",
    "tests/security/test_login.py",
    "tests/security/test_crash_recovery.py",
)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects on the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(config.rootpath)
    for item in items:
        where = Path(item.path).relative_to(root).as_posix()
        if where.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep the agent-speech and judge caches of the test run out of the user's home."""
    old = {k: os.environ.get(k) for k in ("APEX_VOICE_CACHE_DIR", "APEX_JUDGE_CACHE")}
    cache = tmp_path_factory.mktemp("cache")
    os.environ["APEX_VOICE_CACHE_DIR"] = str(cache)
    os.environ["APEX_JUDGE_CACHE"] = str(cache / "judge.sqlite")
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def web_client(tmp_path: Path) -> Iterator[WebClient]:
    """Builds the test's web clients (tests/webclient.py): ``web_client(runs)`` a client of a
    fresh app on ``tmp_path / "data"`` with researcher "ada" and ``runs`` copied into its runs
    directory (further keywords: its Settings), logged in (then at ``next_url``, "/tasks"
    unless given; None: not logged in); ``web_client(app=app)`` a client of an app the test
    made. Closed when the test ends."""
    with web_clients(tmp_path / "data") as build:
        yield build


@functools.cache
def _bundled_tasks() -> tuple[TaskSpec, ...]:
    return tuple(load_tasks([default_tasks_dir()]))


def bundled_tasks() -> list[TaskSpec]:
    """The bundled suite, loaded once per test process: loading every task file takes
    seconds (2.7 s for 91 tasks), and each per-script test grades against the whole suite.
    The specs are frozen models; a test that needs a changed task copies it (``model_copy``)
    or loads its own."""
    return list(_bundled_tasks())


def run_script(
    task_id: str, script: str | Path, out: Path, *, seed: int = 0, repeat: int = 0,
    wall_clock_in_log: bool = True,
) -> Path:
    """Run one scripted episode in virtual time and return its run directory."""
    task = find_task(task_id)
    factory = parse_agent_spec(f"scripted:{script}")
    run_dir = run_dir_for(out, task.id, repeat)
    asyncio.run(run_one(task, factory, run_dir, seed=seed, repeat=repeat,
                        wall_clock_in_log=wall_clock_in_log))
    return run_dir
