"""A local websocket server that plays a realtime voice provider, for tests and benchmarks.

:class:`FakeRealtimeServer` listens on ``127.0.0.1`` (port 0), refuses a wrong API key at the
HTTP handshake like the providers do, records every message a client sends (``received``),
and runs one :class:`FakeSession` per connection. A session is a protocol (subclass) plus a
scripted *fake model* (:class:`FakeModel`): at each end of a user turn it takes the next turn
of the scenario's script — tool calls first, then speech (a tone of the transcript's length)
once the client has sent the tool outputs and asked to continue.

Determinism: the session answers each client message completely before reading the next, and
never uses timers. Audio "faster than real time" is paced by the user frames it receives
(``Scenario.audio_speedup`` times 40 ms of agent audio per 40 ms user frame), and a response's
``done`` event lags its last content by one user frame, as a real server's would. So
:meth:`FakeRealtimeServer.settle` — the lockstep hook the adapters call in virtual-clock runs —
can say exactly when everything a client sent has been answered.
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import numpy as np
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from runtime.agents.scripted import EnergyVAD, ScriptTool, ScriptTurn
from runtime.core.audio import FRAME_MS, Pcm
from tests.adapters.harness import Scenario

API_KEY = "test-key"


def tone(ms: int, rate: int, hz: float, amplitude: float = 8000.0) -> Pcm:
    n = rate * ms // 1000
    t = np.arange(n) / rate
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype(np.int16)


def b64_pcm(pcm: Pcm) -> str:
    return base64.b64encode(pcm.astype("<i2").tobytes()).decode("ascii")


def pcm_b64(data: str) -> Pcm:
    return np.frombuffer(base64.b64decode(data), dtype="<i2").astype(np.int16)


# --------------------------------------------------------------------------- the fake model


@dataclass
class Tools:
    calls: list[ScriptTool]
    say_after: str | None


@dataclass
class Say:
    text: str


Action = Tools | Say


class FakeModel:
    """The scripted "model": one script turn per user turn end."""

    def __init__(self, turns: list[ScriptTurn]) -> None:
        self.turns = turns
        self.next = 0
        self.pending_say: str | None = None

    def user_turn_ended(self) -> Action | None:
        while self.next < len(self.turns):
            turn = self.turns[self.next]
            self.next += 1
            if turn.tools:
                return Tools(list(turn.tools), turn.say)
            if turn.say:
                return Say(turn.say)
        return None

    def continuation(self) -> Say | None:
        say, self.pending_say = self.pending_say, None
        return Say(say) if say else None


# --------------------------------------------------------------------------- sessions


@dataclass
class Speech:
    """Agent audio being streamed out, paced by received user frames."""

    response_id: str
    item_id: str
    text: str
    pcm: Pcm
    pos: int = 0


class FakeSession:
    """One client connection. Subclasses implement :meth:`on_open` and :meth:`on_message`."""

    def __init__(self, server: FakeRealtimeServer, ws: ServerConnection) -> None:
        self.server = server
        self.scenario: Scenario = server.scenario
        self.ws = ws
        self.sent = 0
        self.processed = 0
        self.closed = False
        self.dropped = False
        self._changed = asyncio.Event()
        script = self.scenario.script
        self.model = FakeModel(list(script.turns) if script else [])
        self.vad = EnergyVAD()
        self.deferred: list[dict[str, Any]] = []
        self.speech: Speech | None = None
        self.responses = 0
        self.audio_ms = 0
        self.user_audio: list[Pcm] = []
        self._ids = 0

    # ------------------------------------------------------------------ plumbing

    def new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}_{self._ids:04d}"

    async def emit(self, event: dict[str, Any]) -> None:
        if self.dropped or self.closed:
            return
        if self.server.record:
            self.server.check_server_event(event)
            self.server.emitted.append(event)
        await self.ws.send(json.dumps(event))
        self.sent += 1

    def drop(self) -> None:
        """Abrupt disconnect: the TCP connection goes away without a close frame."""
        self.dropped = True
        self.ws.transport.abort()

    async def run(self) -> None:
        try:
            await self.on_open()
            async for raw in self.ws:
                message = json.loads(raw)
                if self.server.record:
                    self.server.received.append(message)
                    self.server.check_client_event(message)
                if not self.dropped:
                    await self.on_message(message)
                self.processed += 1
                self._changed.set()
        except ConnectionClosed:
            pass
        finally:
            self.closed = True
            self._changed.set()

    async def settle(self, client_sent: int) -> int:
        while self.processed < client_sent and not self.closed:
            self._changed.clear()
            await self._changed.wait()
        return self.sent

    # ------------------------------------------------------------------ shared behaviour

    def speech_pcm(self, text: str) -> Pcm:
        ms = max(400, len(text) * self.scenario.speech_ms_per_char)
        return tone(ms, self.server.output_rate, self.scenario.tone_hz)

    def chunk_samples(self) -> int:
        speedup = self.scenario.audio_speedup
        if speedup <= 0:
            return 1 << 30
        return int(self.server.output_rate * FRAME_MS * speedup / 1000)

    def hear(self, audio_b64: str) -> list[str]:
        """Record one chunk of user audio; the VAD changes it caused (``onset``/``end``)."""
        pcm = pcm_b64(audio_b64)
        self.user_audio.append(pcm)
        self.audio_ms += len(pcm) * 1000 // self.server.input_rate
        change = self.vad.push(pcm)
        return [change] if change else []

    async def flush_deferred(self) -> None:
        events, self.deferred = self.deferred, []
        for event in events:
            await self.finished(event)
            await self.emit(event)

    async def finished(self, event: dict[str, Any]) -> None:
        """Bookkeeping when a deferred ``done`` event goes out (subclasses)."""

    async def done(self, event: dict[str, Any]) -> None:
        """Send a response's ``done`` event now or after the next user frame
        (``Scenario.done_lag_frames``)."""
        if self.scenario.done_lag_frames <= 0:
            await self.finished(event)
            await self.emit(event)
        else:
            self.deferred.append(event)

    async def on_open(self) -> None:
        raise NotImplementedError

    async def on_message(self, message: dict[str, Any]) -> None:
        raise NotImplementedError


class FakeRealtimeServer:
    """Serve one protocol on 127.0.0.1:0; use ``async with`` or start()/stop()."""

    path = "/v1/realtime"
    session_class: type[FakeSession] = FakeSession

    def __init__(self, scenario: Scenario | None = None, *, api_key: str = API_KEY,
                 input_rate: int = 24_000, output_rate: int = 24_000,
                 record: bool = True) -> None:
        self.scenario = scenario or Scenario()
        self.record = record
        """Keep and check every message (tests); off for long benchmark runs."""
        self.api_key = api_key
        self.input_rate = input_rate
        self.output_rate = output_rate
        self.received: list[dict[str, Any]] = []
        self.emitted: list[dict[str, Any]] = []
        """Every event the fake sent, in order."""
        self.requests: list[tuple[str, Headers]] = []
        self.sessions: list[FakeSession] = []
        self.violations: list[str] = []
        """Client or server messages that do not match the provider's models (should be [])."""
        self._server: Server | None = None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> FakeRealtimeServer:
        self._server = await serve(
            self._handle, "127.0.0.1", 0, process_request=self._check_request,
            compression=None, max_size=16 * 1024 * 1024, ping_interval=None,
        )
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> FakeRealtimeServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(next(iter(self._server.sockets)).getsockname()[1])

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}{self.path}"

    # ------------------------------------------------------------------ handshake

    def _check_request(self, connection: ServerConnection, request: Request) -> Response | None:
        self.requests.append((request.path, request.headers))
        auth = request.headers.get("Authorization", "")
        if auth != f"Bearer {self.api_key}" or self.scenario.handshake_error == "authentication":
            return connection.respond(
                HTTPStatus.UNAUTHORIZED,
                '{"error": {"type": "invalid_request_error", "code": "invalid_api_key", '
                '"message": "Incorrect API key provided."}}\n',
            )
        return None

    async def _handle(self, ws: ServerConnection) -> None:
        session = self.session_class(self, ws)
        self.sessions.append(session)
        await session.run()

    # ------------------------------------------------------------------ lockstep

    async def settle(self, client_sent: int) -> int:
        """The :data:`~runtime.agents.providers._transport.LockstepSync` of the last session."""
        while not self.sessions:
            await asyncio.sleep(0)
        return await self.sessions[-1].settle(client_sent)

    # ------------------------------------------------------------------ model checks

    def check_client_event(self, message: dict[str, Any]) -> None:
        """Validate a client message against the provider's models; record violations."""

    def check_server_event(self, event: dict[str, Any]) -> None:
        """Validate a server event against the provider's models; record violations."""
