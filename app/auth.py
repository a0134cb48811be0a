"""Researcher accounts: argon2 password hashes, signed session cookies, CSRF tokens."""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerifyMismatchError
from fastapi import Depends, HTTPException, Request
from sqlmodel import Session, select

from app.deps import SessionDep
from app.models import User

_hasher = PasswordHasher()
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"


class UserError(ValueError):
    """A user could not be created; the message says why."""


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerifyMismatchError, InvalidHashError):
        return False


def create_user(session: Session, username: str, password: str) -> User:
    username = username.strip()
    if not username or len(username) > 64:
        raise UserError("the username must be 1–64 characters")
    if len(password) < 8:
        raise UserError("the password must be at least 8 characters")
    if session.exec(select(User).where(User.username == username)).first() is not None:
        raise UserError(f"user '{username}' already exists")
    user = User(username=username, password_hash=hash_password(password))
    session.add(user)
    session.commit()
    session.refresh(user)
    return user


def authenticate(session: Session, username: str, password: str) -> User | None:
    user = session.exec(select(User).where(User.username == username.strip())).first()
    if user is None or not verify_password(user.password_hash, password):
        return None
    return user


def csrf_token(request: Request) -> str:
    """The session's CSRF token (created on first use)."""
    token = request.session.get("csrf")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        request.session["csrf"] = token
    return token


async def verify_csrf(request: Request) -> None:
    """Every state-changing request carries the session's token (form field or header)."""
    expected = request.session.get("csrf")
    given = request.headers.get(CSRF_HEADER)
    if given is None:
        form = await request.form()
        value = form.get(CSRF_FIELD)
        given = value if isinstance(value, str) else None
    if not isinstance(expected, str) or given is None or not hmac.compare_digest(expected, given):
        raise HTTPException(
            status_code=403, detail="missing or invalid CSRF token; reload the page"
        )


class LoginRequired(Exception):
    """Raised by :func:`current_user`; the app answers with a redirect to the login page."""

    def __init__(self, next_url: str) -> None:
        self.next_url = next_url


def current_user(request: Request, session: SessionDep) -> User:
    user_id = request.session.get("user_id")
    user = session.get(User, user_id) if isinstance(user_id, int) else None
    if user is None:
        raise LoginRequired(str(request.url.path))
    return user


UserDep = Annotated[User, Depends(current_user)]
CsrfDep = Depends(verify_csrf)
