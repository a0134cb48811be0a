"""Researcher accounts: argon2 password hashes, server-side sessions behind a signed cookie,
CSRF tokens (docs/security.md, "Identity, sessions and state").

Password hashing and checking run in a small thread pool of their own, never on the event loop
(an argon2 check takes a few hundred milliseconds and 64 MiB). A login for an unknown username
checks the password against a dummy hash, so the answer takes as long as for a real account.

The session cookie (Starlette's signed ``apex_session``) carries a random session id and the CSRF
token; the session itself is a row of ``auth_session`` (only the id's SHA-256 is stored). Login
starts a new session with a new CSRF token (nothing from before login survives it); logout, the
idle timeout (``session_idle_minutes``) and the absolute lifetime (``session_max_hours``) end the
row, so every copy of the cookie stops working at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Annotated

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from fastapi import Depends, HTTPException, Request
from sqlalchemy import delete
from sqlmodel import Session, col, select

from app.deps import SessionDep
from app.models import AuthSession, User
from app.settings import Settings

_hasher = PasswordHasher()
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
SESSION_ID = "sid"
"""The session-cookie entry holding the server-side session id."""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
HASH_WORKERS = 2
"""argon2 checks at once (each takes 64 MiB and a core for a few hundred milliseconds); more
logins wait their turn without holding the event loop or the server's request threads."""
KEEP_ENDED_SESSIONS = timedelta(days=30)
"""Session rows are deleted (at a login) once they are this long past their absolute
lifetime."""

_hash_pool = ThreadPoolExecutor(max_workers=HASH_WORKERS, thread_name_prefix="argon2")
_dummy_lock = threading.Lock()
_dummy: str | None = None


class UserError(ValueError):
    """A user could not be created; the message says why."""


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def _dummy_hash() -> str:
    """A hash of a random password with the same parameters as every account's: checking a
    password against it costs what a real check costs."""
    global _dummy
    with _dummy_lock:
        if _dummy is None:
            _dummy = _hasher.hash(secrets.token_urlsafe(24))
        return _dummy


def _check(password_hash: str | None, password: str) -> bool:
    """Runs in the hash pool: the real check, or the same work against the dummy hash when
    there is no account."""
    if password_hash is None:
        verify_password(_dummy_hash(), password)
        return False
    return verify_password(password_hash, password)


def _find_user(session: Session, username: str) -> User | None:
    name = username.strip()
    if not name or len(name) > 64:  # no such account can exist; still costs a check
        return None
    return session.exec(select(User).where(User.username == name)).first()


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
    """The account if ``password`` is its password (blocking: for scripts and the CLI)."""
    user = _find_user(session, username)
    return user if _check(user.password_hash if user else None, password) else None


async def authenticate_async(session: Session, username: str, password: str) -> User | None:
    """:func:`authenticate` for request handlers: the argon2 check runs in the hash pool, so
    the event loop keeps serving other requests meanwhile."""
    user = _find_user(session, username)
    stored = user.password_hash if user is not None else None
    # End the read before waiting for the hash pool: a queue of logins must not hold the
    # database's connections (a full pool froze every other page; bench/bench_web_load.py).
    session.rollback()
    ok = await asyncio.get_running_loop().run_in_executor(_hash_pool, _check, stored, password)
    return user if ok else None


# --------------------------------------------------------------------------- sessions


def _now() -> datetime:
    return datetime.now(UTC)


def _aware(moment: datetime) -> datetime:
    """SQLite hands datetimes back without their zone; they were stored in UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def start_session(request: Request, session: Session, user: User) -> None:
    """Log ``user`` in: whatever the cookie held before is dropped (its CSRF token too) and a
    new server-side session with a new id and a new CSRF token takes its place."""
    assert user.id is not None
    now = _now()
    settings = _settings(request)
    stale = now - timedelta(hours=settings.session_max_hours) - KEEP_ENDED_SESSIONS
    session.execute(delete(AuthSession).where(col(AuthSession.created_at) < stale))
    session_id = secrets.token_urlsafe(32)
    session.add(AuthSession(key_hash=_digest(session_id), user_id=user.id, created_at=now,
                            last_seen_at=now))
    session.commit()
    request.session.clear()
    request.session[SESSION_ID] = session_id
    request.session["csrf"] = secrets.token_urlsafe(32)


def _end(session: Session, row: AuthSession, reason: str) -> None:
    row.ended_at, row.ended_reason = _now(), reason
    session.add(row)
    session.commit()


def end_session(request: Request, session: Session) -> None:
    """Log out: the server-side session ends (every copy of the cookie is dead) and the cookie
    is emptied."""
    session_id = request.session.get(SESSION_ID)
    if isinstance(session_id, str):
        row = session.exec(select(AuthSession)
                           .where(AuthSession.key_hash == _digest(session_id))).first()
        if row is not None and row.ended_at is None:
            _end(session, row, "logout")
    request.session.clear()


def _session_user(request: Request, session: Session) -> User | None:
    session_id = request.session.get(SESSION_ID)
    if not isinstance(session_id, str):
        return None
    row = session.exec(select(AuthSession)
                       .where(AuthSession.key_hash == _digest(session_id))).first()
    if row is None or row.ended_at is not None:
        return None
    settings = _settings(request)
    now = _now()
    idle = timedelta(minutes=settings.session_idle_minutes)
    seen = _aware(row.last_seen_at)
    if now - _aware(row.created_at) > timedelta(hours=settings.session_max_hours):
        _end(session, row, "expired")
        return None
    if now - seen > idle:
        _end(session, row, "idle")
        return None
    user = session.get(User, row.user_id)
    if user is None:
        _end(session, row, "no account")
        return None
    if now - seen > min(timedelta(minutes=1), idle / 4):  # a write a minute at most
        row.last_seen_at = now
        session.add(row)
        session.commit()
    return user


def csrf_token(request: Request) -> str:
    """The session's CSRF token, created on first use by a page view (GET). A POST that
    arrives without one (a cross-site form: SameSite keeps the cookie off it) never mints one:
    the page it gets (a 403, say) must not send a cookie that would replace the visitor's
    real session in their browser."""
    token = request.session.get("csrf")
    if not isinstance(token, str):
        if request.method not in SAFE_METHODS:
            return ""
        token = secrets.token_urlsafe(32)
        request.session["csrf"] = token
    return token


async def verify_csrf(request: Request) -> None:
    """Every state-changing request carries the session's token (form field or header)."""
    expected = request.session.get("csrf")
    given = request.headers.get(CSRF_HEADER)
    if given is None and isinstance(expected, str):  # no session, no token: body left unread
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
    user = _session_user(request, session)
    if user is None:
        if SESSION_ID in request.session:  # ended or expired: the cookie forgets it
            request.session.pop(SESSION_ID, None)
        raise LoginRequired(str(request.url.path))
    return user


UserDep = Annotated[User, Depends(current_user)]
CsrfDep = Depends(verify_csrf)
