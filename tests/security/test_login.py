"""Login hardening (issue #15, item 2), tried the way an attacker would: a few scripts hammering
``POST /login`` must not freeze the server for everyone else, guessing passwords must be
throttled per account and per client, and the answer time must not tell which usernames
exist."""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.webclient import PASSWORD, page_csrf, researcher_app

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)


def _app(tmp_path: Path, **settings: Any) -> Any:
    return researcher_app(tmp_path / "data", users=("ada", "grace"), secret_key="login-test",
                          **settings)


@pytest.fixture
def roomy_app(tmp_path: Path) -> Iterator[Any]:
    """Throttling set out of the way: these tests are about the event loop and timing."""
    app = _app(tmp_path, login_account_limit="1000/minute", login_client_limit="1000/minute")
    yield app
    app.state.engine.dispose()


def _attempt(client: TestClient, token: str, username: str, password: str) -> httpx.Response:
    return client.post("/login", data={"csrf_token": token, "username": username,
                                       "password": password, "next": "/tasks"},
                       follow_redirects=False)


async def test_password_guessing_does_not_freeze_the_server(roomy_app: Any) -> None:
    """Four scripts guessing passwords in a loop; meanwhile a visitor fetches a stylesheet.
    Hashing on the event loop made that GET wait for every guess in the queue (seconds)."""
    transport = httpx.ASGITransport(app=roomy_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        html = (await c.get("/login")).text
        token = re.search(r'name="csrf_token" value="([^"]+)"', html)
        assert token
        await c.get("/static/css/app.css")  # warm the static route once

        t0 = time.perf_counter()
        r = await c.post("/login", data={"csrf_token": token.group(1), "username": "ada",
                                         "password": "wrong-guess"})
        one_guess = time.perf_counter() - t0
        assert r.status_code == 401

        stop = asyncio.Event()

        async def guesser(n: int) -> int:
            tries = 0
            while not stop.is_set():
                await c.post("/login", data={"csrf_token": token.group(1), "username": "ada",
                                             "password": f"guess-{n}-{tries}"})
                tries += 1
            return tries

        guessers = [asyncio.create_task(guesser(n)) for n in range(4)]
        await asyncio.sleep(0.3)  # every guesser is mid-hash now
        waits = []
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as v:
            for _ in range(5):
                t0 = time.perf_counter()
                assert (await v.get("/static/css/app.css")).status_code == 200
                waits.append(time.perf_counter() - t0)
        stop.set()
        tries = await asyncio.gather(*guessers)
    assert sum(tries) >= 4
    # Blocked, each GET waits behind at least one whole guess (and usually several).
    assert statistics.median(waits) < one_guess / 2, (waits, one_guess)


def test_unknown_usernames_take_as_long_as_known_ones(roomy_app: Any) -> None:
    """Timing the answer to a wrong password must not reveal whether the account exists."""
    with TestClient(roomy_app) as client:
        token = page_csrf(client)
        _attempt(client, token, "ada", "warm-up")

        def timed(username: str) -> float:
            t0 = time.perf_counter()
            r = _attempt(client, token, username, "not-the-password")
            assert r.status_code == 401 and "Wrong username or password" in r.text
            return time.perf_counter() - t0

        known, unknown = [], []
        for i in range(5):
            known.append(timed("ada"))
            unknown.append(timed(f"nobody-{i}"))
    k, u = statistics.median(known), statistics.median(unknown)
    assert u > 0.6 * k, f"unknown user answered in {u * 1000:.0f} ms, known in {k * 1000:.0f} ms"


def test_guessing_one_account_is_throttled_then_the_attacker_is(tmp_path: Path) -> None:
    app = _app(tmp_path, login_account_limit="3/15 minutes", login_client_limit="6/15 minutes")
    attacker = TestClient(app, client=("203.0.113.7", 40000))
    token = page_csrf(attacker)
    for i in range(3):
        assert _attempt(attacker, token, "ada", f"guess-{i}").status_code == 401
    # The account is locked for a while: even the right password is not tried any more.
    locked = _attempt(attacker, token, "ada", PASSWORD)
    assert locked.status_code == 429, locked.text[:300]
    assert int(locked.headers["Retry-After"]) > 0
    assert "Too many login attempts" in locked.text
    # …from any address: spreading the guesses over machines does not help.
    elsewhere = TestClient(app, client=("198.51.100.9", 40001))
    assert _attempt(elsewhere, page_csrf(elsewhere), "ada", PASSWORD).status_code == 429
    # Another account is untouched; the attacker then moves on to guess other usernames and
    # runs into the per-client limit.
    for i in range(3):
        assert _attempt(attacker, token, f"user{i}", "guess").status_code == 401
    assert _attempt(attacker, token, "grace", PASSWORD).status_code == 429
    # grace herself, from her own machine, still gets in.
    grace = TestClient(app, client=("192.0.2.55", 40002))
    r = _attempt(grace, page_csrf(grace), "grace", PASSWORD)
    assert r.status_code == 303 and r.headers["location"] == "/tasks"
    app.state.engine.dispose()
