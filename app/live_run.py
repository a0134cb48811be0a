"""What a live demo (app/demo.py) and a Study B call (app/live.py) share (issue 16).

Both are one run on a thread of its own, watched by a page over server-sent events and
heard over a WebRTC peer connection: a session waits, runs, and ends; a stop is honoured at
the run's next frame; a run that does not reach its next frame soon after a stop is
abandoned (its thread finishes on its own and changes nothing); the page's stream sleeps on a
:class:`~app.rtc.ChangeSignal`. Their managers hold the sessions of this server, reap them on
a :class:`~app.rtc.Janitor`, apply the server's limit overrides to each task, and stop them
all at shutdown. Each subclass keeps what is its own: the demo's listener feeds and grade,
the call's participant, database row and disconnect policy.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from fastapi import FastAPI, Request

from app.rtc import MAX_SDP_CHARS, ChangeSignal, Janitor, close_peer
from runtime.core.events import ClockMode
from runtime.core.spec import TaskSpec

log = logging.getLogger(__name__)

ACTIVE: frozenset[str] = frozenset({"waiting", "running"})
"""The states of a session that has not ended."""


class LiveRun:
    """A run on its own thread with a page watching it. Subclasses set ``thread_name`` and
    implement ``_thread_main``."""

    thread_name: ClassVar[str] = "live"

    def __init__(self, *, task: TaskSpec, run_dir: Path,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.task = task
        self.run_dir = run_dir
        self.state: str = "waiting"
        self.detail = ""
        self.media_ms = 0
        self.pc: Any = None
        """The WebRTC peer connection (``aiortc.RTCPeerConnection``), when there is one."""
        self.listening = False
        self.subscribers = 0
        self.last_seen = time.monotonic()
        self.ended_at: float | None = None
        self.signal = ChangeSignal(loop)
        self._stop = threading.Event()
        self._stop_reason = ""
        self._stop_at = 0.0
        self._thread: threading.Thread | None = None
        self._abandoned = False
        self._drains: list[asyncio.Task[None]] = []

    @property
    def done(self) -> bool:
        return self.state not in ACTIVE

    def changed(self) -> asyncio.Event:
        """Set when an event or a state change arrives (take it before reading the feed)."""
        return self.signal.changed()

    def start(self) -> bool:
        """Start the run (once) on its own thread; False if it already started or ended."""
        if self.state != "waiting":
            return False
        self.state = "running"
        self._thread = threading.Thread(target=self._thread_main, daemon=True,
                                        name=f"{self.thread_name}-{self._label()}")
        self._thread.start()
        self.signal.wake()
        return True

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _label(self) -> str:
        return self.run_dir.name

    def _thread_main(self) -> None:
        raise NotImplementedError

    def _stop_running(self, reason: str) -> bool:
        """Ask a running run to end at its next frame (once); True if this asked."""
        if self.state == "running" and not self._stop.is_set():
            self._stop_reason = reason
            self._stop_at = time.monotonic()
            self._stop.set()
            return True
        return False

    def _stuck(self, now: float, after_s: float) -> bool:
        """A stop was asked ``after_s`` ago and the run has not reached its next frame."""
        return self.state == "running" and self._stop.is_set() and now - self._stop_at > after_s

    async def close_peer(self) -> None:
        """Close the peer connection and stop draining its tracks."""
        pc, self.pc = self.pc, None
        self.listening = False
        await close_peer(pc)
        for task in self._drains:
            task.cancel()
        self._drains = []


def check_offer(sdp: str, sdp_type: str, error: type[Exception]) -> None:
    """An SDP offer a session may answer, or ``error`` saying what was expected."""
    if sdp_type != "offer" or not sdp or len(sdp) > MAX_SDP_CHARS:
        raise error("expected an SDP offer of at most 20,000 characters")


async def read_offer(request: Request) -> tuple[str, str] | None:
    """``(sdp, type)`` from an offer request's JSON body, or None when it is not
    ``{sdp, type}`` JSON."""
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(body, dict) or not isinstance(body.get("sdp"), str):
        return None
    return body["sdp"], str(body.get("type", ""))


class ConnectionAware(Protocol):
    def mark_connected(self) -> None: ...

    def mark_disconnected(self) -> None: ...


def mark_participant(participant: ConnectionAware, connected: bool, what: str) -> None:
    """Tell a live participant its connection came or went (it logs
    ``participant.connection``); a failure is logged, never raised into the caller."""
    try:
        if connected:
            participant.mark_connected()
        else:
            participant.mark_disconnected()
    except Exception:
        log.exception("%s: connection mark failed", what)


S = TypeVar("S", bound=LiveRun)


class LiveRunManager(Generic[S]):
    """The live sessions of this server: the janitor that reaps them, the task limits
    overridden for them, and shutdown."""

    shutdown_reason: ClassVar[str] = "the server shut down"

    def __init__(self, runs_dir: Path, *, clock: ClockMode, limits: Mapping[str, int] | None,
                 reap_every_s: float, name: str) -> None:
        self.runs_dir = runs_dir
        self.clock: ClockMode = clock
        self.limits = dict(limits or {})
        """Overrides of the task's ``limits`` (e.g. a short ``max_duration_ms`` in tests)."""
        self.reap_every_s = reap_every_s
        self._janitor = Janitor(self.reap, reap_every_s, name)

    def sessions_held(self) -> list[S]:
        raise NotImplementedError

    async def reap(self, now: float | None = None) -> None:
        raise NotImplementedError

    def _effective(self, task: TaskSpec) -> TaskSpec:
        """``task`` with this server's limit overrides."""
        if self.limits:
            task = task.model_copy(update={"limits": task.limits.model_copy(update=self.limits)})
        return task

    async def close(self, timeout_s: float = 10.0) -> None:
        """Stop every session (server shutdown) and wait briefly for their runs to end."""
        await self._janitor.stop()
        held = self.sessions_held()
        for session in held:
            self._stop_for_shutdown(session)
        deadline = time.monotonic() + timeout_s
        while any(not s.done for s in held) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for session in held:
            await session.close_peer()
        self._forget_all()

    def _stop_for_shutdown(self, session: S) -> None:
        raise NotImplementedError

    def _forget_all(self) -> None:
        """After shutdown: drop the sessions (the demo keeps them for its result pages)."""


def closing_manager(attr: str, start: Callable[[FastAPI], object] | None = None
                    ) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]:
    """A router lifespan that runs ``start(app)`` at start-up and closes the manager on
    ``app.state.<attr>`` (if one was made) at shutdown."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if start is not None:
            start(app)
        yield
        manager: LiveRunManager[Any] | None = getattr(app.state, attr, None)
        if manager is not None:
            await manager.close()

    return lifespan
