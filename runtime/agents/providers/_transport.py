"""One websocket to a realtime provider: open, send JSON, collect what arrives, and settle.

:class:`WebsocketTransport` is the only place that touches the network for the OpenAI-style
adapters. It keeps what the provider sent in arrival order (raw text, parsed later by the
adapter's wire models so an unknown event raises where it is consumed), counts the messages
each way, and maps every way the socket can fail onto :mod:`runtime.agents.errors`:

* refused, unreachable, timed-out or dropped connections → ``InfrastructureError``
  (``connectivity``: the run ends as an infrastructure drop);
* a handshake the provider answers with an HTTP status (401, 429, 5xx, …) →
  :class:`~runtime.agents.errors.ProviderError`, categorized by that status.

**Lockstep with a local fake (virtual clock).** In ``virtual`` clock mode the orchestrator
calls ``poll`` as fast as it can, so a networked adapter must know when the provider has
answered everything it was sent, or the run would depend on scheduling. A fake server can
offer a :data:`LockstepSync`: the transport calls it with the number of messages it has sent;
the fake returns once it has processed that many and finished answering them, with the number
of messages it has sent in all; the transport then waits until that many have arrived (or the
socket dropped). That is exact and deterministic, costs a few event-loop turns per frame, and
needs no wall-clock sleeps. Real providers offer no such hook: run them with ``--clock
realtime``, where ``poll`` never waits and takes whatever has arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import (
    ConnectionClosed,
    InvalidHandshake,
    InvalidStatus,
    InvalidURI,
)

from runtime.agents.errors import (
    ErrorCategory,
    ProviderConfigError,
    ProviderError,
    connection_lost,
    provider_error,
)

log = logging.getLogger(__name__)

LockstepSync = Callable[[int], Awaitable[int]]
"""``await sync(client_sent) -> server_sent``: see the module docstring."""

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def check_ws_url(url: str, env_var: str) -> str:
    """A ``ws://`` or ``wss://`` URL, or a :class:`ProviderConfigError` naming ``env_var``."""
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ProviderConfigError(
            f"{env_var}={url!r} is not a websocket URL; expected ws://HOST[:PORT]/PATH or "
            "wss://HOST/PATH"
        )
    return url


class WebsocketTransport:
    """A websocket client that buffers incoming text frames and counts traffic both ways."""

    def __init__(self, provider: str, *, open_timeout_s: float = 10.0,
                 settle_timeout_s: float = 10.0) -> None:
        self.provider = provider
        self.open_timeout_s = open_timeout_s
        self.settle_timeout_s = settle_timeout_s
        self.sent = 0
        self.received = 0
        self.lockstep: LockstepSync | None = None
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._inbox: list[str | bytes] = []
        self._arrived = asyncio.Event()
        self._closing = False
        self.dropped: str | None = None
        """Why the connection ended, when the provider (not we) ended it."""

    # ------------------------------------------------------------------ open / close

    async def open(self, url: str, headers: Mapping[str, str]) -> None:
        host = urlsplit(url).hostname or ""
        try:
            self._ws = await connect(
                url,
                additional_headers=dict(headers),
                open_timeout=self.open_timeout_s,
                # Base64 PCM barely compresses; deflate would only cost CPU on every frame.
                compression=None,
                # Loopback fakes must never be routed through a proxy from the environment.
                proxy=None if host in LOOPBACK_HOSTS else True,
                max_size=16 * 1024 * 1024,
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            body = exc.response.body.decode("utf-8", "replace")[:300] if exc.response.body else ""
            error_type, code = _error_fields(body)
            raise provider_error(
                f"{self.provider} refused the websocket handshake with HTTP {status}"
                + (f": {body.strip()}" if body.strip() else ""),
                status=status, error_type=error_type, code=code, during_handshake=True,
            ) from None
        except InvalidURI as exc:
            raise ProviderConfigError(f"{self.provider}: invalid endpoint URL: {exc}") from None
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            raise connection_lost(
                f"could not connect to {self.provider} at {_redact(url)}: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        self._reader = asyncio.create_task(self._read(), name=f"{self.provider}-reader")

    async def close(self) -> None:
        self._closing = True
        if self._ws is not None:
            with contextlib.suppress(TimeoutError, ConnectionClosed, OSError):
                await asyncio.wait_for(self._ws.close(), timeout=2.0)
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None

    # ------------------------------------------------------------------ traffic

    async def _read(self) -> None:
        assert self._ws is not None
        try:
            async for message in self._ws:
                self._inbox.append(message)
                self.received += 1
                self._arrived.set()
        except ConnectionClosed as exc:
            if not self._closing:
                self.dropped = f"connection closed ({exc})"
        except OSError as exc:
            if not self._closing:
                self.dropped = f"socket error ({exc})"
        else:
            if not self._closing:
                self.dropped = "the provider closed the connection"
        finally:
            self._arrived.set()

    async def send(self, message: BaseModel | Mapping[str, Any]) -> None:
        """Send one JSON message; a dropped connection raises ``InfrastructureError``."""
        if self._ws is None:
            raise RuntimeError(f"{self.provider}: send before connect")
        if self.dropped is not None:
            raise connection_lost(f"{self.provider}: {self.dropped}")
        text = (
            message.model_dump_json(exclude_none=True) if isinstance(message, BaseModel)
            else json.dumps(message, separators=(",", ":"))
        )
        try:
            await self._ws.send(text)
        except (ConnectionClosed, OSError) as exc:
            self.dropped = self.dropped or f"connection lost while sending ({exc})"
            raise connection_lost(f"{self.provider}: {self.dropped}") from None
        self.sent += 1

    def drain(self) -> list[str | bytes]:
        """Every message that arrived since the last drain, in order."""
        out, self._inbox = self._inbox, []
        self._arrived.clear()
        return out

    @property
    def connected(self) -> bool:
        """Open, not dropped, not closing."""
        return self._ws is not None and self.dropped is None and not self._closing

    @property
    def pending(self) -> bool:
        return bool(self._inbox)

    async def wait_arrival(self, timeout_s: float) -> bool:
        """Wait until something arrives or the connection drops; False on timeout."""
        if self._inbox or self.dropped is not None:
            return True
        try:
            await asyncio.wait_for(self._arrived.wait(), timeout=timeout_s)
        except TimeoutError:
            return False
        return True

    async def settle(self) -> None:
        """With a lockstep hook: wait until the peer has answered everything sent so far."""
        if self.lockstep is None or self.dropped is not None:
            return
        try:
            expected = await asyncio.wait_for(self.lockstep(self.sent), self.settle_timeout_s)
            deadline = asyncio.get_running_loop().time() + self.settle_timeout_s
            while self.received < expected and self.dropped is None:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    raise TimeoutError
                self._arrived.clear()
                if self.received >= expected or self.dropped is not None:
                    break
                await asyncio.wait_for(self._arrived.wait(), timeout=left)
        except TimeoutError:
            raise ProviderError(  # a fake that never answers is a broken test, say so loudly
                category=ErrorCategory.SERVER,
                message=f"{self.provider}: lockstep peer did not settle within "
                        f"{self.settle_timeout_s} s (sent {self.sent}, received {self.received})",
                fatal=True,
            ) from None


def _error_fields(body: str) -> tuple[str | None, str | None]:
    """``error.type`` and ``error.code`` of a JSON error body (OpenAI style), if any: a 429
    whose code is ``insufficient_quota`` is a quota problem, not a rate limit."""
    try:
        data = json.loads(body)
    except ValueError:
        return None, None
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None, None
    kind, code = error.get("type"), error.get("code")
    return (kind if isinstance(kind, str) else None), (code if isinstance(code, str) else None)


def _redact(url: str) -> str:
    """A URL without its query string (which may carry a key on some providers)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"
