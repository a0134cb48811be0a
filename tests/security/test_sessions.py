"""Researcher sessions (issue #15, item 8), tried the way an attacker would: a session cookie
copied before logout must be dead after it; a CSRF token planted before login must not work
after it; idle and absolute timeouts end a session on the server; and a cross-site POST (which
arrives without the session cookie) must not replace the researcher's cookie."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app import auth
from tests.clock import Clock
from tests.webclient import PASSWORD, log_in, page_csrf, researcher_app

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

COOKIE = "apex_session"


def _app(tmp_path: Path, **settings: Any) -> Any:
    return researcher_app(tmp_path / "data", secret_key="session-test", **settings)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Any]:
    app = _app(tmp_path)
    yield app
    app.state.engine.dispose()


def _logged_in(client: TestClient) -> bool:
    r = client.get("/tasks", follow_redirects=False)
    if r.status_code == 200:
        return True
    assert r.status_code == 303 and r.headers["location"].startswith("/login"), r.status_code
    return False


def test_a_cookie_copied_before_logout_is_dead_after_it(app: Any) -> None:
    with TestClient(app) as client:
        token = log_in(client)
        stolen = client.cookies[COOKIE]
        r = client.post("/logout", data={"csrf_token": token}, follow_redirects=False)
        assert r.status_code == 303
        assert not _logged_in(client)
    thief = TestClient(app, cookies={COOKIE: stolen})
    assert not _logged_in(thief), "the pre-logout cookie still opens the researcher pages"


def test_login_rotates_the_session_and_its_csrf_token(app: Any) -> None:
    """Session fixation: an attacker who planted a cookie (and so knows its CSRF token) before
    the researcher logged in must not be able to use that token afterwards."""
    with TestClient(app) as client:
        planted = page_csrf(client)
        cookie_before = client.cookies[COOKIE]
        client.post("/login", data={"csrf_token": planted, "username": "ada",
                                    "password": PASSWORD, "next": "/tasks"},
                    follow_redirects=False)
        assert _logged_in(client)
        assert client.cookies[COOKIE] != cookie_before
        after = page_csrf(client, "/tasks")
        assert after != planted
        forged = client.post("/logout", data={"csrf_token": planted}, follow_redirects=False)
        assert forged.status_code == 403
        assert _logged_in(client)
    # The pre-login cookie itself never becomes a logged-in session.
    assert not _logged_in(TestClient(app, cookies={COOKIE: cookie_before}))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock.install(monkeypatch, auth, "_now")


def test_idle_sessions_expire_on_the_server(tmp_path: Path, clock: Clock) -> None:
    app = _app(tmp_path, session_idle_minutes=2.0)
    with TestClient(app) as client:
        log_in(client)
        cookie = client.cookies[COOKIE]
        for _ in range(6):  # 6 x 100 s: three idle limits in all, but never 2 min without a request
            clock.advance(100)
            assert _logged_in(client), "activity within the idle limit must keep it alive"
        clock.advance(121)
        assert not _logged_in(client)
    # Replaying the cookie as it was does not revive it.
    assert not _logged_in(TestClient(app, cookies={COOKIE: cookie}))
    app.state.engine.dispose()


def test_sessions_have_an_absolute_lifetime(tmp_path: Path, clock: Clock) -> None:
    app = _app(tmp_path, session_max_hours=1.0)  # an hour, however active
    with TestClient(app) as client:
        log_in(client)
        for _ in range(5):
            clock.advance(11 * 60)  # 55 min in all, a request every 11 min
            assert _logged_in(client)
        clock.advance(6 * 60)
        assert not _logged_in(client)
    app.state.engine.dispose()


def test_a_cross_site_post_does_not_log_the_researcher_out(app: Any) -> None:
    """SameSite=Lax keeps the cookie off a cross-site POST, so it arrives with no session and
    fails CSRF; the 403 page must not hand out a fresh session cookie that would replace the
    researcher's in the browser."""
    with TestClient(app) as client:
        log_in(client)
        cookie = client.cookies[COOKIE]
        evil = TestClient(app)  # the same browser, minus its cookie, as SameSite sends it
        r = evil.post("/studies/b", data={"name": "x"}, headers={"Origin": "https://evil.test"},
                      follow_redirects=False)
        assert r.status_code in (303, 403)  # refused: no login (or no CSRF token) with it
        assert "set-cookie" not in {k.lower() for k in r.headers}, r.headers.get("set-cookie")
        r = evil.post("/logout", data={}, follow_redirects=False)
        assert r.status_code == 403 and "set-cookie" not in {k.lower() for k in r.headers}
        assert client.cookies[COOKIE] == cookie and _logged_in(client)
