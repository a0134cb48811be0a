"""A fake Gemini Live API server on 127.0.0.1, speaking ``BidiGenerateContent`` over TLS.

The google-genai SDK always dials ``wss://<origin>/ws/google.ai.generativelanguage.<version>.
GenerativeService.BidiGenerateContent`` with the key in an ``x-goog-api-key`` header, sends one
``setup`` message and waits for ``setupComplete``. This fake serves exactly that, with a
self-signed certificate for 127.0.0.1 (``ca_file`` is what the client must trust).

Wire shapes come from the SDK itself: every client message is validated with the SDK's
``types`` models (``extra="forbid"``, so a field the SDK does not know fails loudly) and every
server message is built from ``types.LiveServerMessage`` and serialized by alias (lowerCamel,
base64 bytes), so a drift in the SDK breaks these tests instead of passing silently. The SDK's
``LiveClientSetup`` model lacks ``realtimeInputConfig`` (the SDK writes it straight from
``LiveConnectConfig``), so that field is validated on its own with ``types.RealtimeInputConfig``.

Behaviour is a deterministic state machine driven by the client's messages, like the real
service in the respects the adapter relies on:

* the fake's clock is the user audio it has received (16 kHz samples → ms);
* a scripted :class:`Turn` starts after the end of the next user activity (``activityEnd``) or,
  for ``after="now"``, as soon as the model is idle (right after ``setupComplete`` for a first
  turn); it streams its audio ``speedup`` times faster than real time (paced by the user audio
  it receives: no timers), calls tools (one ``toolCall`` per :class:`Tools` step, parallel when
  it lists several) and waits for their ``toolResponse``;
* ``turnComplete`` is held back until the user audio clock has passed the end of the turn's
  audio (the service assumes real-time playback), so an ``activityStart`` while the turn is
  still "playing" interrupts it: ``interrupted`` then ``turnComplete``;
* explicit ``activityStart``/``activityEnd`` are refused (close 1007) unless the setup disabled
  automatic activity detection, as the service does;
* errors are close frames with the service's codes and reasons; :class:`Drop` aborts the TCP
  connection without a close frame.

Lockstep: :meth:`FakeGeminiLive.sync` (a ``LockstepSync``) returns once the fake has processed
the first ``n`` client messages and sent everything they caused, with the number of messages it
has sent so far, which makes virtual-clock runs exact.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import json
import math
import ssl
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from google.genai import types
from pydantic import ValidationError
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

FAKE_KEY = "fake-gemini-key"
PATH_PREFIX = "/ws/google.ai.generativelanguage."
PATH_SUFFIX = ".GenerativeService.BidiGenerateContent"
OUTPUT_RATE = 24_000

# Close frames as the Live API sends them.
BAD_KEY = (1007, "API key not valid. Please pass a valid API key.")
RATE_LIMITED = (1011, "Resource has been exhausted (e.g. check quota).")
QUOTA_EXCEEDED = (
    1011, "You exceeded your current quota, please check your plan and billing details.",
)
SERVER_ERROR = (1011, "Internal error encountered.")
INVALID_ARGUMENT = (1007, "Request contains an invalid argument.")
EXPLICIT_ACTIVITY_REFUSED = (
    1007, "Explicit activity control is not supported when automatic activity detection is "
    "enabled.",
)


# ------------------------------------------------------------------ the script


@dataclass(frozen=True)
class Say:
    """Speak ``text``: audio (a tone standing in for speech) plus its output transcription."""

    text: str
    ms: int | None = None
    """Audio duration; by default 55 ms per character, at least 600 ms."""
    rate: int = OUTPUT_RATE
    tone_hz: float = 190.0
    amplitude: int = 4000
    chunk_ms: int = 200

    @property
    def duration_ms(self) -> int:
        return self.ms if self.ms is not None else max(600, 55 * len(self.text))


@dataclass(frozen=True)
class Call:
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tools:
    """One ``toolCall`` message (parallel when it lists several calls); waits for the answers."""

    calls: tuple[Call, ...]

    @classmethod
    def of(cls, *calls: Call) -> Tools:
        return cls(tuple(calls))


@dataclass(frozen=True)
class Interrupt:
    """The server cuts its own turn short: ``interrupted`` then ``turnComplete``."""


@dataclass(frozen=True)
class Close:
    """Close the websocket with a close frame (``code``, ``reason``)."""

    code: int
    reason: str


@dataclass(frozen=True)
class Drop:
    """Abort the TCP connection: no close frame (the client sees 1006)."""


@dataclass(frozen=True)
class Fail:
    """An error object in place of the rest of the turn (``{"code", "message", "status"}``,
    which the SDK's receive() raises as an ``APIError``); the session stays open."""

    code: int
    message: str
    status: str


@dataclass(frozen=True)
class Send:
    """Send a raw JSON message as is (e.g. a message kind the client does not know)."""

    message: dict[str, Any]


Step = Say | Tools | Interrupt | Close | Drop | Fail | Send


@dataclass(frozen=True)
class Turn:
    """One model turn. ``after="user"``: starts at the end of the next user activity;
    ``after="now"``: as soon as the model is idle (right after setup for a first turn)."""

    steps: tuple[Step, ...]
    after: Literal["user", "now"] = "user"

    @classmethod
    def of(cls, *steps: Step, after: Literal["user", "now"] = "user") -> Turn:
        return cls(tuple(steps), after)


def tone(hz: float, ms: int, rate: int, amplitude: int = 4000) -> np.ndarray[Any, Any]:
    n = rate * ms // 1000
    t = np.arange(n) / rate
    return np.round(amplitude * np.sin(2 * math.pi * hz * t)).astype(np.int16)


# ------------------------------------------------------------------ TLS for 127.0.0.1

_TLS: tuple[Path, Path] | None = None
_TLS_DIR: tempfile.TemporaryDirectory[str] | None = None


def _tls_material() -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (made once per test process)."""
    global _TLS, _TLS_DIR
    if _TLS is None:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        _TLS_DIR = tempfile.TemporaryDirectory(prefix="fake-gemini-tls-")
        cert_path = Path(_TLS_DIR.name) / "cert.pem"
        key_path = Path(_TLS_DIR.name) / "key.pem"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ))
        _TLS = (cert_path, key_path)
    return _TLS


# ------------------------------------------------------------------ wire helpers


def _server(message: types.LiveServerMessage) -> bytes:
    """Serialize as the service does: lowerCamel keys, base64 bytes, sent as a binary frame."""
    return message.model_dump_json(by_alias=True, exclude_none=True).encode()


def _content(**kwargs: Any) -> bytes:
    return _server(types.LiveServerMessage(server_content=types.LiveServerContent(**kwargs)))


def _pop_any(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if k in d:
            return d.pop(k)
    return None


@dataclass
class ClientSetup:
    """The setup message as the SDK's types understand it."""

    setup: types.LiveClientSetup
    realtime_input_config: types.RealtimeInputConfig | None
    raw: dict[str, Any]

    @property
    def automatic_activity_detection_disabled(self) -> bool:
        ric = self.realtime_input_config
        aad = ric.automatic_activity_detection if ric else None
        return bool(aad and aad.disabled)


def validate_setup(message: Mapping[str, Any]) -> ClientSetup:
    if set(message) != {"setup"}:
        raise ValueError(f"first message must be {{'setup': …}}, got keys {sorted(message)}")
    body = dict(message["setup"])
    ric_raw = _pop_any(body, "realtimeInputConfig", "realtime_input_config")
    setup = types.LiveClientSetup.model_validate(body)
    ric = types.RealtimeInputConfig.model_validate(ric_raw) if ric_raw is not None else None
    return ClientSetup(setup=setup, realtime_input_config=ric, raw=dict(message["setup"]))


def validate_client(raw: str | bytes) -> types.LiveClientMessage:
    """One client message after setup, validated by the SDK's own model (JSON mode: base64)."""
    return types.LiveClientMessage.model_validate_json(raw)


# ------------------------------------------------------------------ one session


class _Closing(Exception):
    def __init__(self, code: int | None, reason: str = "") -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass
class _Out:
    frames: list[tuple[bytes, bool]] = field(default_factory=list)
    """What to send, in order, each with whether it must validate as a LiveServerMessage
    (deliberate protocol breaks and error objects are not checked)."""
    end: _Closing | None = None


class _Session:
    def __init__(self, fake: FakeGeminiLive, setup: ClientSetup) -> None:
        self.fake = fake
        self.setup = setup
        self.turn_index = 0
        self.state: Literal["idle", "generating", "streaming", "tools", "playing"] = "idle"
        self.steps: list[Step] = []
        self.stream: list[tuple[float, bytes]] = []
        """Frames of the current utterance not sent yet, each with the clock it is due at."""
        self.clock_ms = 0.0
        self.playing_until = 0.0
        self.pending_calls: dict[str, str] = {}
        self.user_turns_waiting = 0
        self.call_seq = 0
        self.out = _Out()

    # -- emitting
    def emit(self, frame: bytes, *, check: bool = True) -> None:
        self.out.frames.append((frame, check))

    def emit_raw(self, message: dict[str, Any]) -> None:
        self.emit(json.dumps(message).encode(), check=False)

    def begin(self) -> _Out:
        self.out = _Out()
        return self.out

    # -- turns
    def maybe_start_turn(self) -> None:
        """Start the next scripted turn if the model is idle and the turn's trigger happened."""
        if self.state != "idle" or self.turn_index >= len(self.fake.turns):
            return
        turn = self.fake.turns[self.turn_index]
        if turn.after == "user":
            if not self.user_turns_waiting:
                return
            self.user_turns_waiting -= 1
        self.turn_index += 1
        self.steps = list(turn.steps)
        self.fake.turns_started += 1
        self.state = "generating"
        self.run_steps()

    def run_steps(self) -> None:
        while self.steps:
            step = self.steps.pop(0)
            if isinstance(step, Say):
                self.say(step)
                if self.stream:
                    self.state = "streaming"
                    return
            elif isinstance(step, Tools):
                self.call_tools(step)
                return
            elif isinstance(step, Interrupt):
                self.interrupt()
                return
            elif isinstance(step, Close):
                self.out.end = _Closing(step.code, step.reason)
                return
            elif isinstance(step, Drop):
                self.out.end = _Closing(None)
                return
            elif isinstance(step, Fail):
                self.emit_raw({"code": step.code, "message": step.message, "status": step.status})
                self.steps, self.stream = [], []
                self.state = "idle"
                self.maybe_start_turn()
                return
            else:
                self.emit_raw(step.message)
        self.emit(_content(generation_complete=True))
        self.state = "playing"
        self.check_played()

    def say(self, step: Say) -> None:
        audio = tone(step.tone_hz, step.duration_ms, step.rate, step.amplitude)
        per_chunk = step.rate * step.chunk_ms // 1000
        chunks = [audio[i:i + per_chunk] for i in range(0, len(audio), per_chunk)] or [audio]
        words = step.text.split(" ")
        per_words = max(1, math.ceil(len(words) / len(chunks)))
        frames: list[tuple[float, bytes]] = []
        for i, chunk in enumerate(chunks):
            offset = i * step.chunk_ms
            blob = types.Blob(data=chunk.astype("<i2").tobytes(),
                              mime_type=f"audio/pcm;rate={step.rate}")
            frames.append((offset, _content(model_turn=types.Content(
                role="model", parts=[types.Part(inline_data=blob)]))))
            piece = words[i * per_words:(i + 1) * per_words]
            if piece:
                text = " ".join(piece) + (" " if (i + 1) * per_words < len(words) else "")
                frames.append((offset, _content(
                    output_transcription=types.Transcription(text=text))))
        rest = words[len(chunks) * per_words:]
        if rest:
            frames.append((frames[-1][0], _content(
                output_transcription=types.Transcription(text=" ".join(rest)))))
        speedup = self.fake.speedup
        for offset, frame in frames:
            if speedup <= 0 or offset == 0:
                self.emit(frame)
            else:
                self.stream.append((self.clock_ms + offset / speedup, frame))
        self.playing_until = max(self.playing_until, self.clock_ms) + step.duration_ms
        self.fake.spoken.append(step.text)

    def call_tools(self, step: Tools) -> None:
        calls = []
        for call in step.calls:
            self.call_seq += 1
            call_id = f"function-call-{self.fake.sessions}-{self.call_seq}"
            self.pending_calls[call_id] = call.name
            calls.append(types.FunctionCall(id=call_id, name=call.name, args=dict(call.args)))
        self.emit(_server(types.LiveServerMessage(
            tool_call=types.LiveServerToolCall(function_calls=calls))))
        self.state = "tools"

    def interrupt(self) -> None:
        if self.pending_calls:
            self.emit(_server(types.LiveServerMessage(
                tool_call_cancellation=types.LiveServerToolCallCancellation(
                    ids=list(self.pending_calls)))))
            self.pending_calls = {}
        self.emit(_content(interrupted=True))
        if self.fake.complete_interrupted:
            self.emit(_content(turn_complete=True))
        self.fake.interruptions += 1
        self.steps, self.stream = [], []
        self.playing_until = self.clock_ms
        self.state = "idle"
        self.maybe_start_turn()

    def on_clock(self) -> None:
        """The user audio clock advanced: stream what is due, confirm a played-out turn."""
        while self.stream and self.stream[0][0] <= self.clock_ms:
            self.emit(self.stream.pop(0)[1])
        if self.state == "streaming" and not self.stream:
            self.state = "generating"
            self.run_steps()
        self.check_played()

    def check_played(self) -> None:
        if self.state == "playing" and self.clock_ms >= self.playing_until:
            self.emit(_content(turn_complete=True))
            self.state = "idle"
            self.maybe_start_turn()

    # -- client messages
    def on_message(self, msg: types.LiveClientMessage) -> None:
        if msg.realtime_input is not None:
            self.on_realtime(msg.realtime_input)
        elif msg.tool_response is not None:
            self.on_tool_response(msg.tool_response)
        else:
            raise _Closing(*INVALID_ARGUMENT)

    def on_realtime(self, rt: types.LiveClientRealtimeInput) -> None:
        explicit = rt.activity_start is not None or rt.activity_end is not None
        if explicit and not self.setup.automatic_activity_detection_disabled:
            raise _Closing(*EXPLICIT_ACTIVITY_REFUSED)
        if rt.activity_start is not None:
            self.fake.activity_starts += 1
            if self.state != "idle":
                self.interrupt()
        if rt.audio is not None:
            mime = rt.audio.mime_type or ""
            if not mime.startswith("audio/pcm"):
                raise _Closing(1007, f"Unsupported mime type {mime}.")
            rate = int(mime.split("rate=")[1]) if "rate=" in mime else 16_000
            pcm = np.frombuffer(rt.audio.data or b"", dtype="<i2").astype(np.int16)
            self.fake.input_chunks.append((rate, pcm))
            self.clock_ms += len(pcm) * 1000 / rate
            self.on_clock()
        if rt.activity_end is not None:
            self.fake.activity_ends += 1
            self.user_turns_waiting += 1
            self.maybe_start_turn()

    def on_tool_response(self, response: types.LiveClientToolResponse) -> None:
        self.fake.tool_responses.append(response)
        for fr in response.function_responses or []:
            if fr.id not in self.pending_calls or self.pending_calls[fr.id] != fr.name:
                raise _Closing(1007, f"Invalid function response: unknown call {fr.id!r}.")
            del self.pending_calls[fr.id]
        if self.state == "tools" and not self.pending_calls:
            self.state = "generating"
            self.run_steps()


# ------------------------------------------------------------------ the server


class FakeGeminiLive:
    """Use as ``async with FakeGeminiLive(turns) as fake:``; point the adapter at ``env()``."""

    def __init__(
        self, turns: Sequence[Turn] = (), *, api_key: str = FAKE_KEY,
        reject: tuple[int, str] | None = None, speedup: float = 4.0,
        complete_interrupted: bool = True,
    ) -> None:
        self.turns = list(turns)
        self.complete_interrupted = complete_interrupted
        """False: an interrupted turn gets ``interrupted`` but no ``turnComplete`` (public
        clients report the service doing so)."""
        self.speedup = speedup
        """Utterances stream this many times faster than real time, paced by the user audio
        received; 0 sends each utterance in one burst."""
        self.api_key = api_key
        self.reject = reject
        # What the client sent, in order.
        self.messages: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.setups: list[ClientSetup] = []
        self.tool_responses: list[types.LiveClientToolResponse] = []
        self.input_chunks: list[tuple[int, np.ndarray[Any, Any]]] = []
        # What the fake did.
        self.sent: list[dict[str, Any]] = []
        self.spoken: list[str] = []
        self.violations: list[str] = []
        """Messages either side sent that the SDK's models reject (should stay empty)."""
        self.sessions = 0
        self.turns_started = 0
        self.interruptions = 0
        self.activity_starts = 0
        self.activity_ends = 0
        self.closed_with: tuple[int | None, str] | None = None
        self._server: Server | None = None
        # Lockstep counters of the latest session.
        self._processed = 0
        self._sent_count = 0
        self._ended = False
        self._progress = asyncio.Condition()

    # -- lifecycle
    async def __aenter__(self) -> FakeGeminiLive:
        cert, key = _tls_material()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self._server = await serve(self._handle, "127.0.0.1", 0, ssl=ctx, compression=None)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> str:
        return str(_tls_material()[0])

    def env(self, **extra: str) -> dict[str, str]:
        """Environment for ``make_adapter``: key, endpoint and the certificate to trust."""
        return {
            "GEMINI_API_KEY": self.api_key, "APEX_GEMINI_LIVE_URL": self.base_url,
            "APEX_GEMINI_LIVE_CA_FILE": self.ca_file, **extra,
        }

    # -- what the client sent
    def input_audio(self, rate: int = 16_000) -> np.ndarray[Any, Any]:
        chunks = [pcm for r, pcm in self.input_chunks if r == rate]
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)

    def kinds(self) -> list[str]:
        """The kind of every client message (``setup``, ``activityStart``, ``audio``, …)."""
        out = []
        for m in self.messages:
            (key, body), = m.items()
            out.append(next(iter(body)) if key in ("realtime_input", "realtimeInput") else key)
        return out

    # -- lockstep
    async def sync(self, client_sent: int) -> int:
        """The ``LockstepSync`` of the latest session: wait until it has processed
        ``client_sent`` messages (or ended); the number of messages it has sent."""
        async with self._progress:
            await self._progress.wait_for(
                lambda: self._processed >= client_sent or self._ended
            )
            return self._sent_count

    async def _advance(self, sent: int) -> None:
        async with self._progress:
            self._processed += 1
            self._sent_count += sent
            self._progress.notify_all()

    # -- serving
    async def _send(self, ws: ServerConnection, out: _Out) -> int:
        for frame, check in out.frames:
            self.sent.append(json.loads(frame))
            if check:  # what the fake builds must parse back with the SDK's model
                try:
                    types.LiveServerMessage.model_validate_json(frame)
                except ValidationError as exc:
                    self.violations.append(f"server: {exc.errors()[0]}")
            await ws.send(frame)
        return len(out.frames)

    async def _end(self, ws: ServerConnection, closing: _Closing) -> None:
        self.closed_with = (closing.code, closing.reason)
        if closing.code is None:
            for _ in range(100):  # let what was already sent leave, then cut TCP short
                if not ws.transport.get_write_buffer_size():
                    break
                await asyncio.sleep(0.001)
            ws.transport.abort()
        else:
            await ws.close(closing.code, closing.reason)
        async with self._progress:
            self._ended = True
            self._progress.notify_all()

    async def _handle(self, ws: ServerConnection) -> None:
        self.sessions += 1
        async with self._progress:
            self._processed, self._sent_count, self._ended = 0, 0, False
        request = ws.request
        assert request is not None
        self.paths.append(request.path)
        self.headers.append({k.lower(): v for k, v in request.headers.raw_items()})
        try:
            if not (request.path.startswith(PATH_PREFIX) and request.path.endswith(PATH_SUFFIX)):
                raise _Closing(1008, "Requested entity was not found.")
            raw = await ws.recv()
            first = json.loads(raw)
            self.messages.append(first)
            try:
                setup = validate_setup(first)
            except (ValidationError, ValueError) as exc:
                self.violations.append(f"client setup: {exc}")
                raise _Closing(1007, f"Invalid JSON payload received. {exc}"[:120]) from None
            self.setups.append(setup)
            if request.headers.get("x-goog-api-key") != self.api_key:
                raise _Closing(*BAD_KEY)
            if self.reject is not None:
                raise _Closing(*self.reject)
            session = _Session(self, setup)
            out = session.begin()
            session.emit(_server(types.LiveServerMessage(
                setup_complete=types.LiveServerSetupComplete(session_id=f"fake-{self.sessions}"))))
            session.maybe_start_turn()
            await self._flush(ws, out)
            async for raw in ws:
                message = json.loads(raw)
                self.messages.append(message)
                out = session.begin()
                try:
                    client_message = validate_client(raw)
                except ValidationError as exc:
                    self.violations.append(f"client: {exc.errors()[0]}")
                    raise _Closing(1007, f"Invalid JSON payload received. {exc}"[:120]) from None
                session.on_message(client_message)
                await self._flush(ws, out)
        except _Closing as closing:
            await self._end(ws, closing)
        except ConnectionClosed:
            pass
        finally:
            async with self._progress:
                self._ended = True
                self._progress.notify_all()

    async def _flush(self, ws: ServerConnection, out: _Out) -> None:
        sent = await self._send(ws, out)
        if out.end is not None:
            await self._advance(sent)
            raise out.end
        await self._advance(sent)
