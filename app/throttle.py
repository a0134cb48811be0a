"""Rate limits of the web app (docs/security.md): failed logins per account and per client
address, and new places claimed through a Study B shared join link per link and per client.

Moving windows held in this process's memory (the ``limits`` library): one server process
(``apex-voice serve``) sees every request. The limits come from the settings
(``login_account_limit``, ``login_client_limit``, ``join_link_limit``, ``join_client_limit``);
each app gets its own counters on ``app.state.throttle``.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass

from fastapi import FastAPI, Request
from limits import RateLimitItem, parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from app.settings import Settings


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after_s: int = 0
    """Seconds until the window has room again (0 when allowed)."""


class Throttle:
    """The app's rate limits; each check names its limit and the keys it counts under."""

    def __init__(self, settings: Settings) -> None:
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self.login_account = parse(settings.login_account_limit)
        self.login_client = parse(settings.login_client_limit)
        self.join_link = parse(settings.join_link_limit)
        self.join_client = parse(settings.join_client_limit)

    def check(self, *limits: tuple[RateLimitItem, str]) -> Verdict:
        """Would one more hit fit under every ``(limit, key)``? Counts nothing."""
        wait = 0
        for item, key in limits:
            if not self._limiter.test(item, key):
                stats = self._limiter.get_window_stats(item, key)
                wait = max(wait, math.ceil(stats.reset_time - time.time()), 1)
        return Verdict(wait == 0, wait)

    def hit(self, *limits: tuple[RateLimitItem, str]) -> None:
        for item, key in limits:
            self._limiter.hit(item, key)

    def clear(self, item: RateLimitItem, key: str) -> None:
        self._limiter.clear(item, key)


def throttle_for(app: FastAPI) -> Throttle:
    """The app's throttle, created on first use from its settings."""
    found: Throttle | None = getattr(app.state, "throttle", None)
    if found is None:
        found = Throttle(app.state.settings)
        app.state.throttle = found
    return found


def client_key(request: Request) -> str:
    """The client's address as the server sees it (behind a reverse proxy on the same host,
    uvicorn takes it from ``X-Forwarded-For``)."""
    host = request.client.host if request.client else ""
    return f"client:{host or 'unknown'}"


def account_key(username: str) -> str:
    """One key per account name however it is typed (case, surrounding spaces), of bounded
    length whatever was posted."""
    digest = hashlib.sha256(username.strip().casefold().encode("utf-8", "replace")).hexdigest()
    return f"account:{digest[:32]}"
