"""Database tables (SQLModel). Run data itself lives in run directories on disk."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Field, SQLModel


def _now() -> datetime:
    return datetime.now(UTC)


class UserBase(SQLModel):
    username: str = Field(index=True, unique=True, max_length=64)


class User(UserBase, table=True):
    """A researcher account."""

    id: int | None = Field(default=None, primary_key=True)
    password_hash: str
    created_at: datetime = Field(default_factory=_now)


class UserPublic(UserBase):
    id: int
