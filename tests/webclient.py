"""The web app from a TestClient: an app with a researcher account, logging in, and the
clients of the ``web_client`` fixture (tests/conftest.py). Shared by the route tests."""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from fastapi.testclient import TestClient

PASSWORD = "correct horse battery"


def page_csrf(client: TestClient, path: str = "/login") -> str:
    """The CSRF token of the form on ``path`` (the session's token)."""
    html = client.get(path).text
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, html[:500]
    return match.group(1)


def log_in(client: TestClient, *, username: str = "ada", next_url: str = "/tasks") -> str:
    """Log in through the form; returns the logged-in session's CSRF token (login starts a
    new session with a new token: the login form's token no longer works)."""
    token = page_csrf(client)
    r = client.post("/login", data={"csrf_token": token, "username": username,
                                    "password": PASSWORD, "next": next_url},
                    follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == next_url, r.text[:500]
    return page_csrf(client, "/tasks")


def researcher_app(data_dir: Path, runs: Path | None = None, *,
                   users: Sequence[str] = ("ada",), **settings: Any) -> Any:
    """A fresh app on ``data_dir`` with researcher accounts ``users`` (password
    :data:`PASSWORD`) and ``runs`` copied into its runs directory; ``settings`` are further
    :class:`app.settings.Settings` fields (the secret key is "test-secret" unless given)."""
    from sqlmodel import Session

    from app.auth import create_user
    from app.settings import Settings
    from app.web import create_app

    config = Settings(data_dir=data_dir, **{"secret_key": "test-secret", **settings})
    if runs is not None:
        shutil.copytree(runs, config.runs_dir)
    app = create_app(config)
    with Session(app.state.engine) as session:
        for username in users:
            create_user(session, username, PASSWORD)
    return app


@contextlib.contextmanager
def client_of(app: Any, *, next_url: str | None = "/tasks") -> Iterator[TestClient]:
    """A TestClient of ``app``, logged in as "ada" (then at ``next_url``) unless ``next_url``
    is None."""
    with TestClient(app) as client:
        if next_url is not None:
            log_in(client, next_url=next_url)
        yield client


class WebClient(Protocol):
    """The ``web_client`` fixture (tests/conftest.py)."""

    def __call__(self, runs: Path | None = None, *, next_url: str | None = "/tasks",
                 app: Any = None, **settings: Any) -> TestClient: ...


@contextlib.contextmanager
def web_clients(data_dir: Path) -> Iterator[WebClient]:
    """What the ``web_client`` fixture yields: ``build(runs, **settings)`` is a client of a
    fresh :func:`researcher_app` on ``data_dir`` (one per test), ``build(app=app)`` a client of
    an app the test made; logged in as "ada" unless ``next_url`` is None. The clients are
    closed, and the apps made here let go of their database, when the block ends."""
    made: list[Any] = []
    clients = contextlib.ExitStack()

    def build(runs: Path | None = None, *, next_url: str | None = "/tasks",
              app: Any = None, **settings: Any) -> TestClient:
        if app is None:
            app = researcher_app(data_dir, runs, **settings)
            made.append(app)
        return clients.enter_context(client_of(app, next_url=next_url))

    try:
        yield build
    finally:
        clients.close()
        for app in made:
            app.state.engine.dispose()
