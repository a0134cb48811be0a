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


class AuthSession(SQLModel, table=True):
    """A researcher's login, held on the server: the cookie carries only its id (signed), so
    logging out, the idle timeout and the absolute lifetime end it for every copy of the
    cookie. Only a hash of the id is stored."""

    __tablename__ = "auth_session"

    id: int | None = Field(default=None, primary_key=True)
    key_hash: str = Field(max_length=64, unique=True, index=True)
    """SHA-256 (hex) of the session id the cookie carries."""
    user_id: int = Field(foreign_key="user.id", index=True)
    created_at: datetime = Field(default_factory=_now)
    last_seen_at: datetime = Field(default_factory=_now)
    ended_at: datetime | None = None
    """Set at logout (or when a timeout is found): the session never opens again."""
    ended_reason: str = Field(default="", max_length=32)
