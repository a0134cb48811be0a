"""Logging in to the web app from a TestClient: shared by the route tests."""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

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


@contextlib.contextmanager
def researcher_client(data_dir: Path, runs: Path | None = None, *,
                      next_url: str | None = "/tasks") -> Iterator[TestClient]:
    """A TestClient of a fresh app on ``data_dir`` with researcher "ada" (:data:`PASSWORD`),
    ``runs`` copied into its runs directory, logged in unless ``next_url`` is None."""
    from sqlmodel import Session

    from app.auth import create_user
    from app.settings import Settings
    from app.web import create_app

    settings = Settings(data_dir=data_dir, secret_key="test-secret")
    if runs is not None:
        shutil.copytree(runs, settings.runs_dir)
    app = create_app(settings)
    with Session(app.state.engine) as session:
        create_user(session, "ada", PASSWORD)
    with TestClient(app) as client:
        if next_url is not None:
            log_in(client, next_url=next_url)
        yield client
