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
  connection without a close frame;
* session resumption: when the setup carries ``sessionResumption``, a
  ``sessionResumptionUpdate`` with a fresh handle follows ``setupComplete`` and every point
  where the model turns idle with no function call pending (the service's resumable points);
  each handle names a snapshot of the fake model's conversation. :class:`GoAway` sends
  ``goAway`` at a scripted point, ``rotate_after_ms`` once a connection has received that much
  user audio (the service resets connections by age); either closes the connection
  (:data:`DEADLINE_EXPIRED`) once the time left has passed on the user audio clock. A new
  connection whose setup carries a known handle continues the same conversation from that
  snapshot; an unknown handle is refused (:data:`RESUME_REFUSED`), and
  so is a resumption while an earlier socket of the session is still open
  (:data:`RESUME_WHILE_OPEN`).

Modes (``mode=``): ``minimal`` sends what the adapter acts on (and the resumption updates the
setup asked for); ``full_events`` also sends the rest of the Live API's server messages
interleaved in the normal flow, as the service does: ``usageMetadata`` with every
``turnComplete`` (which also carries ``interactionStatus``), ``voiceActivity`` at the user's
activity start and end, ``interimInputTranscription`` while the user speaks and
``inputTranscription`` when they stop, and a non-resumable ``sessionResumptionUpdate`` whenever
the model starts generating.

Lockstep: :meth:`FakeGeminiLive.sync` (a ``LockstepSync``) returns once the fake has processed
the first ``n`` client messages of its latest connection and sent everything they caused, with
the number of messages it has sent on it so far, which makes virtual-clock runs exact.
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
from google.genai import _live_converters, types
from pydantic import ValidationError
from pydantic.alias_generators import to_camel
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

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
DEADLINE_EXPIRED = (1011, "Deadline expired before operation could complete.")
"""The close that followed a ``goAway`` (``{"timeLeft": "50s"}``) in a client's log
(kizuna-ai-lab/sokuji issue 179)."""
RESUME_REFUSED = (1007, "Session resumption handle is invalid or has expired.")
"""An unknown handle. Clients report the service refusing a resumption with 1007 (Google AI
developer forum, "resumption afterwards fails with 1007"); the reason text is the fake's own."""
RESUME_WHILE_OPEN = (1011, "Internal error encountered.")
"""A resumption while an earlier socket of the session is still open: refused with 1011, as
verified against the service by aicc2025/sip-to-ai pull request 14."""

Mode = Literal["minimal", "full_events"]
MODES: tuple[Mode, ...] = ("minimal", "full_events")


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


@dataclass(frozen=True)
class GoAway:
    """Send ``goAway`` with ``timeLeft``, then go on; once ``time_left_ms`` more of user audio
    has arrived the connection is closed with :data:`DEADLINE_EXPIRED`. Sent once: a session
    resumed from an earlier snapshot does not repeat it."""

    time_left_ms: int = 10_000


Step = Say | Tools | Interrupt | Close | Drop | Fail | Send | GoAway


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


def duration(ms: float) -> str:
    """A protobuf ``Duration`` as JSON (``"3s"``, ``"1.500s"``)."""
    return f"{int(ms) // 1000}s" if ms % 1000 == 0 else f"{ms / 1000:.3f}s"


SERVER_KINDS = frozenset(to_camel(name) for name in types.LiveServerMessage.model_fields)
"""The top-level keys of a server message: google-genai's ``LiveServerMessage`` fields."""


def sdk_parse(raw: Mapping[str, Any]) -> types.LiveServerMessage:
    """What google-genai's ``receive()`` makes of a server frame, but strict: the SDK's own
    Developer API converter (``voiceActivity.type`` becomes ``voice_activity_type``), then its
    model with every extra field forbidden, where ``receive()`` would silently drop it. Raises
    ``ValueError`` (``ValidationError``) for anything the SDK does not model."""
    unknown = sorted(set(raw) - SERVER_KINDS)
    if unknown:
        raise ValueError(f"server message kinds the SDK does not know: {unknown}")
    return types.LiveServerMessage.model_validate(
        _live_converters._LiveServerMessage_from_mldev(dict(raw)))


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


@dataclass(frozen=True)
class _Snapshot:
    """The fake model's conversation at a resumable point (what a resumption handle names)."""

    lineage: int
    """The connection that started the session (shared by every resumption of it)."""
    turn_index: int
    user_turns_waiting: int
    call_seq: int


class _Session:
    def __init__(self, fake: FakeGeminiLive, setup: ClientSetup, lineage: int,
                 resumed: _Snapshot | None = None, clock_ms: float = 0.0) -> None:
        self.fake = fake
        self.setup = setup
        self.lineage = lineage
        self.turn_index = resumed.turn_index if resumed else 0
        self.state: Literal["idle", "generating", "streaming", "tools", "playing"] = "idle"
        self.steps: list[Step] = []
        self.stream: list[tuple[float, bytes]] = []
        """Frames of the current utterance not sent yet, each with the clock it is due at."""
        self.clock_ms = clock_ms
        self.playing_until = clock_ms
        self.pending_calls: dict[str, str] = {}
        self.user_turns_waiting = resumed.user_turns_waiting if resumed else 0
        self.call_seq = resumed.call_seq if resumed else 0
        self.close_at: float | None = None
        """User audio clock at which a ``goAway``'s time runs out."""
        self.opened_at = clock_ms
        self.rotated = False
        self.activity_from: float | None = None
        """Clock at the user's activityStart (full_events transcriptions)."""
        self.interim_sent = False
        self.turn_audio_ms = 0
        self.out = _Out()

    @property
    def full(self) -> bool:
        return self.fake.mode == "full_events"

    # -- emitting
    def emit(self, frame: bytes, *, check: bool = True) -> None:
        self.out.frames.append((frame, check))

    def emit_raw(self, message: dict[str, Any], *, check: bool = False) -> None:
        self.emit(json.dumps(message).encode(), check=check)

    def begin(self) -> _Out:
        self.out = _Out()
        return self.out

    # -- session resumption
    def offer_handle(self) -> None:
        """At a resumable point: a fresh handle naming the conversation as it is now."""
        if self.setup.setup.session_resumption is None or self.pending_calls:
            return
        if not self.fake.resumable:
            self.emit(_server(types.LiveServerMessage(
                session_resumption_update=types.LiveServerSessionResumptionUpdate(
                    resumable=False))))
            return
        self.fake.handle_seq += 1
        handle = f"fake-handle-{self.fake.handle_seq}"
        self.fake.handles[handle] = _Snapshot(
            lineage=self.lineage, turn_index=self.turn_index,
            user_turns_waiting=self.user_turns_waiting, call_seq=self.call_seq,
        )
        self.emit(_server(types.LiveServerMessage(
            session_resumption_update=types.LiveServerSessionResumptionUpdate(
                new_handle=handle, resumable=True))))

    def not_resumable(self) -> None:
        """full_events: the model generates, so this is not a point to resume from."""
        if self.full and self.setup.setup.session_resumption is not None:
            self.emit(_server(types.LiveServerMessage(
                session_resumption_update=types.LiveServerSessionResumptionUpdate(
                    new_handle="", resumable=False))))

    def go_away(self, time_left_ms: int) -> None:
        self.fake.go_aways += 1
        self.emit(_server(types.LiveServerMessage(
            go_away=types.LiveServerGoAway(time_left=duration(time_left_ms)))))
        self.close_at = self.clock_ms + time_left_ms

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
        self.turn_audio_ms = 0
        self.state = "generating"
        self.not_resumable()
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
                self.offer_handle()
                self.maybe_start_turn()
                return
            elif isinstance(step, GoAway):
                key = (self.turn_index, len(self.steps))
                if key not in self.fake.go_aways_sent:
                    self.fake.go_aways_sent.add(key)
                    self.go_away(step.time_left_ms)
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
        self.turn_audio_ms += step.duration_ms
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

    def turn_complete(self) -> None:
        """``turnComplete``; in full_events with ``interactionStatus`` and ``usageMetadata``
        in the same message, as the service sends them."""
        if not self.full:
            self.emit(_content(turn_complete=True))
            return
        spoken = round(self.turn_audio_ms * 32 / 1000)  # Gemini counts 32 tokens per second
        heard = round(self.clock_ms * 32 / 1000)
        self.emit(_server(types.LiveServerMessage(
            server_content=types.LiveServerContent(
                turn_complete=True, interaction_status=types.InteractionStatus.IDLE),
            usage_metadata=types.UsageMetadata(
                prompt_token_count=heard, response_token_count=spoken,
                total_token_count=heard + spoken,
                prompt_tokens_details=[types.ModalityTokenCount(
                    modality=types.MediaModality.AUDIO, token_count=heard)],
                response_tokens_details=[types.ModalityTokenCount(
                    modality=types.MediaModality.AUDIO, token_count=spoken)],
            ),
        )))

    def interrupt(self) -> None:
        if self.pending_calls:
            self.emit(_server(types.LiveServerMessage(
                tool_call_cancellation=types.LiveServerToolCallCancellation(
                    ids=list(self.pending_calls)))))
            self.pending_calls = {}
        self.emit(_content(interrupted=True))
        if self.fake.complete_interrupted:
            self.turn_complete()
        self.fake.interruptions += 1
        self.steps, self.stream = [], []
        self.playing_until = self.clock_ms
        self.state = "idle"
        self.offer_handle()
        self.maybe_start_turn()

    def on_clock(self) -> None:
        """The user audio clock advanced: stream what is due, confirm a played-out turn."""
        while self.stream and self.stream[0][0] <= self.clock_ms:
            self.emit(self.stream.pop(0)[1])
        if self.state == "streaming" and not self.stream:
            self.state = "generating"
            self.run_steps()
        self.check_played()
        rotate = self.fake.rotate_after_ms
        if rotate is not None and not self.rotated and self.clock_ms - self.opened_at >= rotate:
            self.rotated = True
            self.go_away(self.fake.rotate_time_left_ms)
        if self.close_at is not None and self.clock_ms >= self.close_at and self.out.end is None:
            self.out.end = _Closing(*DEADLINE_EXPIRED)

    def check_played(self) -> None:
        if self.state == "playing" and self.clock_ms >= self.playing_until:
            self.turn_complete()
            self.state = "idle"
            self.offer_handle()
            self.maybe_start_turn()

    # -- client messages
    def on_message(self, msg: types.LiveClientMessage) -> None:
        if msg.realtime_input is not None:
            self.on_realtime(msg.realtime_input)
        elif msg.tool_response is not None:
            self.on_tool_response(msg.tool_response)
        else:
            raise _Closing(*INVALID_ARGUMENT)

    def voice_activity(self, kind: str) -> None:
        """full_events: the service's voice-activity notice. On the wire (Developer API) its
        field is ``type``; the SDK's converter renames it ``voice_activity_type``."""
        if self.full:
            self.emit_raw({"voiceActivity": {"type": kind,
                                             "audioOffset": duration(round(self.clock_ms))}},
                          check=True)

    def on_realtime(self, rt: types.LiveClientRealtimeInput) -> None:
        explicit = rt.activity_start is not None or rt.activity_end is not None
        if explicit and not self.setup.automatic_activity_detection_disabled:
            raise _Closing(*EXPLICIT_ACTIVITY_REFUSED)
        if rt.activity_start is not None:
            self.fake.activity_starts += 1
            self.activity_from, self.interim_sent = self.clock_ms, False
            self.voice_activity("ACTIVITY_START")
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
            if self.full and self.activity_from is not None and not self.interim_sent:
                self.interim_sent = True
                self.emit(_content(interim_input_transcription=types.Transcription(
                    text="…")))
            self.on_clock()
        if rt.activity_end is not None:
            self.fake.activity_ends += 1
            if self.full:
                spoken = self.clock_ms - (self.activity_from or 0.0)
                self.emit(_content(input_transcription=types.Transcription(
                    text=f"[{spoken / 1000:.1f} s of user speech]", finished=True)))
            self.activity_from = None
            self.voice_activity("ACTIVITY_END")
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


@dataclass
class _Progress:
    """Lockstep counters of one connection."""

    processed: int = 0
    sent: int = 0
    ended: bool = False


class FakeGeminiLive:
    """Use as ``async with FakeGeminiLive(turns) as fake:``; point the adapter at ``env()``."""

    def __init__(
        self, turns: Sequence[Turn] = (), *, api_key: str = FAKE_KEY,
        reject: tuple[int, str] | None = None, speedup: float = 4.0,
        complete_interrupted: bool = True, mode: Mode = "minimal",
        resumable: bool = True, honour_handles: bool = True,
        rotate_after_ms: int | None = None, rotate_time_left_ms: int = 10_000,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; the fake's modes are {MODES}")
        self.turns = list(turns)
        self.mode: Mode = mode
        self.resumable = resumable
        """False: every ``sessionResumptionUpdate`` says ``resumable: false`` (no handle)."""
        self.honour_handles = honour_handles
        """False: every resumption is refused as if its handle had expired."""
        self.rotate_after_ms = rotate_after_ms
        """Each connection gets a ``goAway`` (``rotate_time_left_ms``) once it has received this
        much user audio, wherever the conversation is."""
        self.rotate_time_left_ms = rotate_time_left_ms
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
        # Session resumption.
        self.handles: dict[str, _Snapshot] = {}
        """Every handle handed out, with the conversation snapshot it names."""
        self.handle_seq = 0
        self.resumed: list[str] = []
        """Handles new connections resumed from, in order."""
        self.go_aways = 0
        self.go_aways_sent: set[tuple[int, int]] = set()
        self._sockets: dict[int, ServerConnection] = {}
        """The latest socket of each session (by lineage)."""
        self._latest: dict[int, _Session] = {}
        self._server: Server | None = None
        # Lockstep counters of the latest connection.
        self._current = _Progress()
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
        """The ``LockstepSync`` of the latest connection: wait until it has processed
        ``client_sent`` messages (or ended); the number of messages it has sent."""
        async with self._progress:
            await self._progress.wait_for(
                lambda: self._current.processed >= client_sent or self._current.ended
            )
            return self._current.sent

    async def _advance(self, progress: _Progress, sent: int) -> None:
        async with self._progress:
            progress.processed += 1
            progress.sent += sent
            self._progress.notify_all()

    # -- serving
    async def _send(self, ws: ServerConnection, out: _Out) -> int:
        for frame, check in out.frames:
            message = json.loads(frame)
            self.sent.append(message)
            if check:  # what the fake builds must parse back through the SDK, losing nothing
                try:
                    sdk_parse(message)
                except ValueError as exc:
                    self.violations.append(f"server: {exc}")
            await ws.send(frame)
        return len(out.frames)

    def _open_session(self, ws: ServerConnection, setup: ClientSetup) -> _Session:
        """A new session, or the one the setup's resumption handle names (refused with the
        service's close when the handle is unknown or its earlier socket still open)."""
        wanted = setup.setup.session_resumption
        handle = wanted.handle if wanted is not None else None
        if handle:
            snapshot = self.handles.get(handle) if self.honour_handles else None
            if snapshot is None:
                raise _Closing(*RESUME_REFUSED)
            earlier = self._sockets.get(snapshot.lineage)
            if earlier is not None and earlier.state is State.OPEN:
                raise _Closing(*RESUME_WHILE_OPEN)
            self.resumed.append(handle)
            before = self._latest.get(snapshot.lineage)
            session = _Session(self, setup, snapshot.lineage, snapshot,
                               clock_ms=before.clock_ms if before else 0.0)
        else:
            session = _Session(self, setup, self.sessions)
        self._sockets[session.lineage] = ws
        self._latest[session.lineage] = session
        return session

    async def _end(self, ws: ServerConnection, closing: _Closing, progress: _Progress) -> None:
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
            progress.ended = True
            self._progress.notify_all()

    async def _handle(self, ws: ServerConnection) -> None:
        self.sessions += 1
        progress = _Progress()
        async with self._progress:
            self._current = progress
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
            session = self._open_session(ws, setup)
            out = session.begin()
            session.emit(_server(types.LiveServerMessage(
                setup_complete=types.LiveServerSetupComplete(session_id=f"fake-{self.sessions}"))))
            session.offer_handle()
            session.maybe_start_turn()
            await self._flush(ws, out, progress)
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
                await self._flush(ws, out, progress)
        except _Closing as closing:
            await self._end(ws, closing, progress)
        except ConnectionClosed:
            pass
        finally:
            async with self._progress:
                progress.ended = True
                self._progress.notify_all()

    async def _flush(self, ws: ServerConnection, out: _Out, progress: _Progress) -> None:
        sent = await self._send(ws, out)
        await self._advance(progress, sent)
        if out.end is not None:
            raise out.end
