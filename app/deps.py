"""Typed FastAPI dependencies (the engine and settings live on ``app.state``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Path, Request
from sqlmodel import Session

from app.settings import Settings


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_session(request: Request) -> Iterator[Session]:
    with Session(request.app.state.engine) as session:
        yield session


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session, scope="function")]
"""A database session for the route function only: closed (its connection back in the pool)
when the route returns, before the response is sent, so an event stream or a slow download
never holds a connection."""

MAX_DB_ID = 2**31 - 1
DbId = Annotated[int, Path(ge=1, le=MAX_DB_ID)]
"""A row id in a URL: a number no id column can hold is a page that does not exist (404)."""


def is_htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"
