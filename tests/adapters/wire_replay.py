"""Replaying recorded sessions (``tests/fixtures/wire/*.jsonl``) through the real adapters.

:class:`ReplayServer` plays the provider's side of a fixture on 127.0.0.1 (TLS for Gemini,
whose SDK insists on it): it accepts the adapter's connection and sends the recorded server
frames, audio re-synthesised to the recorded byte length, paced against what the client sends.
Each recorded server frame is due once the client has sent as many non-audio messages and as
many audio messages as had been recorded before it; frames go out in recorded order. A close
recorded from the server closes the socket with the same code (or drops it, for a drop).

The server is also a lockstep peer (``settle``), so :func:`replay` runs the fixture's task with
its frozen simulator on the virtual clock, deterministically, through the provider's real
adapter (``make_adapter``: its wire models, event handling and client messages) in strict
protocol mode (tests/conftest.py), and :func:`mismatches` compares what the adapter produced
with what it produced when the session was recorded.

:func:`record_against_fake` records a fresh fixture with the recorder itself against a
provider's local fake (used by ``tests/fixtures/wire/regenerate.py`` and the round-trip test).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from runtime.agents.base import AgentAdapter
from runtime.agents.registry import PROVIDER_MODULES
from runtime.agents.wire_format import Expectation, Fixture, Frame, carries_audio, read_fixture
from runtime.agents.wire_record import (
    Recording,
    expectation_of,
    loopback_tls,
    provider_wire,
    record_session,
    server_tls,
)
from runtime.core.spec import find_task
from runtime.session.campaign import AgentFactory, run_one
from tests.adapters.harness import ProviderHarness, discover, oracle_conversation

REPLAY_KEY = "replay-key-not-a-secret"


@dataclass
class _Due:
    frame: Frame
    controls: int
    """Non-audio client messages recorded before this frame."""
    audio: int
    """Audio client messages recorded before this frame."""


def schedule(frames: list[Frame]) -> list[_Due]:
    """The server frames of a recording with the client traffic each one waited for."""
    controls = audio = 0
    due = []
    for frame in frames:
        if frame.dir == "client":
            if frame.is_close:
                continue
            if frame.audio:
                audio += 1
            else:
                controls += 1
        else:
            due.append(_Due(frame, controls, audio))
    return due


class ReplayServer:
    """Serve one recorded session to one client; ``settle`` is its lockstep hook."""

    def __init__(self, frames: list[Frame], *, tls_dir: Path | None = None) -> None:
        self.due = schedule(frames)
        self.tls_dir = tls_dir
        self.ca_file: Path | None = None
        self.received: list[Any] = []
        """What the client sent, parsed (raw text for non-JSON frames)."""
        self.released = 0
        self.controls = 0
        self.audio = 0
        self._processed = 0
        self._sent = 0
        self._ended = False
        self._progress = asyncio.Condition()
        self._server: Server | None = None
        self.connections = 0

    async def __aenter__(self) -> ReplayServer:
        ctx = None
        if self.tls_dir is not None:
            cert, key = loopback_tls(self.tls_dir)
            self.ca_file = cert
            ctx = server_tls(cert, key)
        self._server = await serve(self._handle, "127.0.0.1", 0, ssl=ctx, compression=None,
                                   max_size=16 * 1024 * 1024, ping_interval=None)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def origin(self) -> str:
        assert self._server is not None
        port = int(next(iter(self._server.sockets)).getsockname()[1])
        return f"{'https' if self.tls_dir else 'ws'}://127.0.0.1:{port}"

    @property
    def pending(self) -> list[_Due]:
        """Recorded server frames never released."""
        return self.due[self.released:]

    async def settle(self, client_sent: int) -> int:
        async with self._progress:
            await self._progress.wait_for(lambda: self._processed >= client_sent or self._ended)
            return self._sent

    async def _release(self, ws: ServerConnection) -> bool:
        """Send every frame now due; False once the recorded server closed the session."""
        while self.released < len(self.due):
            item = self.due[self.released]
            if item.controls > self.controls or item.audio > self.audio:
                return True
            self.released += 1
            if item.frame.close is not None:
                code = item.frame.close.get("code")
                if code is None:
                    ws.transport.abort()
                else:
                    await ws.close(code, str(item.frame.close.get("reason", "")))
                return False
            await ws.send(item.frame.payload())
            self._sent += 1
        return True

    async def _handle(self, ws: ServerConnection) -> None:
        self.connections += 1
        if self.connections > 1:
            await ws.close(1008, "replay serves one session")
            return
        try:
            if not await self._release(ws):
                return
            async for raw in ws:
                try:
                    message: Any = json.loads(raw)
                except (UnicodeDecodeError, json.JSONDecodeError):
                    message = raw
                self.received.append(message)
                if carries_audio(message):
                    self.audio += 1
                else:
                    self.controls += 1
                going = await self._release(ws)
                async with self._progress:
                    self._processed += 1
                    self._progress.notify_all()
                if not going:
                    return
        except ConnectionClosed:
            pass
        finally:
            async with self._progress:
                self._ended = True
                self._progress.notify_all()


# --------------------------------------------------------------------------- replay a fixture


@dataclass
class ReplayOutcome:
    fixture: Fixture
    got: Expectation
    pending: int
    """Recorded server frames the replay never reached."""
    client_controls: list[str] = field(default_factory=list)
    """``type`` (or top-level key) of every non-audio message the adapter sent."""


def message_kind(message: Any) -> str:
    """``type`` of an OpenAI-style message; ``key.subkey`` of a Gemini one
    (``realtime_input.activity_start``, ``tool_response.function_responses``)."""
    if isinstance(message, dict):
        kind = message.get("type")
        if isinstance(kind, str):
            return kind
        parts = []
        for key in sorted(message):
            body = message[key]
            parts.append(f"{key}.{','.join(sorted(body))}" if isinstance(body, dict) else key)
        return ";".join(parts)
    return type(message).__name__


def recorded_controls(fixture: Fixture) -> list[str]:
    return [message_kind(f.msg if f.msg is not None else f.text)
            for f in fixture.frames if f.dir == "client" and not f.is_close and not f.audio]


def _adapter_env(fixture: Fixture, server: ReplayServer) -> dict[str, str]:
    """The recorded settings, a dummy key, and the endpoint pointed at the replay server."""
    header = fixture.header
    wire = provider_wire(header.agent.spec, header.settings, require_key=False)
    path = urlsplit(header.upstream).path
    env = {**header.settings, wire.key_envs[0]: REPLAY_KEY,
           wire.url_env: server.origin + (path.rstrip("/") if wire.tls else path)}
    if wire.ca_env is not None and server.ca_file is not None:
        env[wire.ca_env] = str(server.ca_file)
    return env


async def replay(fixture: Fixture | Path, out: Path) -> ReplayOutcome:
    """Run the fixture's task against its recorded server side; what the adapter produced."""
    if isinstance(fixture, Path):
        fixture = read_fixture(fixture)
    header = fixture.header
    task = find_task(header.task_id)
    with tempfile.TemporaryDirectory(prefix="apex-wire-replay-") as tls_dir:
        server = ReplayServer(fixture.frames,
                              tls_dir=Path(tls_dir) if header.agent.kind == "gemini-live"
                              else None)
        async with server:
            env = _adapter_env(fixture, server)
            module = importlib.import_module(PROVIDER_MODULES[header.agent.kind])
            model = header.agent.model

            def make(_task: Any) -> AgentAdapter:
                adapter: Any = module.make_adapter(model, env)
                adapter.attach_lockstep(server.settle)
                made: AgentAdapter = adapter
                return made

            result = await run_one(task, AgentFactory(header.agent.spec, make), out,
                                   seed=header.seed, repeat=0, clock="virtual")
    return ReplayOutcome(
        fixture=fixture, got=expectation_of(result.run_dir), pending=len(server.pending),
        client_controls=[message_kind(m) for m in server.received if not carries_audio(m)],
    )


def mismatches(outcome: ReplayOutcome, *, expect: Expectation | None = None) -> list[str]:
    """How the replay differs from the recording (empty: the adapter behaved the same)."""
    want = expect or outcome.fixture.header.expect
    got = outcome.got
    problems = []
    if got.tool_calls != want.tool_calls:
        problems.append(
            "tool calls differ:\n  recorded " + _calls(want) + "\n  replayed " + _calls(got)
        )
    if got.transcripts != want.transcripts:
        problems.append(f"agent transcripts differ:\n  recorded {want.transcripts}\n"
                        f"  replayed {got.transcripts}")
    if got.protocol_unknown:
        problems.append(f"message types the adapter does not model: {got.protocol_unknown}")
    if got.errors != want.errors:
        problems.append(f"provider errors differ: recorded {want.errors}, replayed {got.errors}")
    if got.failure_class != "none" or (got.end_reason, got.failure_class) != (
        want.end_reason, want.failure_class,
    ):
        problems.append(f"the run ended with {got.end_reason}/{got.failure_class}, recorded "
                        f"{want.end_reason}/{want.failure_class}")
    if problems and outcome.pending:
        problems.append(f"({outcome.pending} recorded server frames were never reached)")
    return problems


def client_drift(outcome: ReplayOutcome) -> list[str]:
    """How the adapter's own non-audio messages differ from the recorded ones (types, in
    order). Not part of :func:`mismatches`: an adapter may legitimately change what it sends
    (a fixture stands for a provider's behaviour, not ours); the round-trip test, which
    records and replays the same code, uses it."""
    recorded = recorded_controls(outcome.fixture)
    if outcome.client_controls == recorded:
        return []
    return [f"client messages differ:\n  recorded {recorded}\n  replayed {outcome.client_controls}"]


def _calls(e: Expectation) -> str:
    return json.dumps([c.model_dump() for c in e.tool_calls])


# --------------------------------------------------------------------------- record vs a fake


HARNESSES: dict[str, Callable[[], ProviderHarness]] = discover()


def fake_env(harness: Any, key: str, query: str = "") -> dict[str, str]:
    """The environment ``apex-voice run`` would need to reach ``harness``'s running fake
    (``query`` is added to the endpoint URL, except for Gemini, whose variable is an origin)."""
    fake = harness.fake
    fake.api_key = key  # the fake now refuses any other key
    if harness.kind == "gemini-live":
        env: dict[str, str] = fake.env()
        env["GEMINI_API_KEY"] = key
        return env
    env = {harness.url_env: fake.url + (f"?{query}" if query else ""), harness.key_env: key}
    if harness.rate_env is not None:
        env[harness.rate_env] = str(harness.input_rate)
    return env


def _lockstep(harness: Any) -> Any:
    fake = harness.fake
    return fake.sync if harness.kind == "gemini-live" else fake.settle


async def record_against_fake(kind: str, task_id: str, out: Path, *, key: str,
                              run_dir: Path, query: str = "",
                              env: dict[str, str] | None = None) -> Recording:
    """Record one virtual-clock session of ``task_id`` with the recorder, the fake of ``kind``
    playing the task's oracle through its protocol."""
    harness = HARNESSES[kind]()
    await harness.start(oracle_conversation(task_id))
    try:
        full = {**fake_env(harness, key, query), **(env or {})}
        return await record_session(find_task(task_id), kind, out, run_dir=run_dir, env=full,
                                    clock="virtual", lockstep=_lockstep(harness))
    finally:
        with contextlib.suppress(Exception):
            await harness.stop()
