"""The shared skeleton of every websocket realtime adapter.

:class:`RealtimeAdapter` implements :class:`~runtime.agents.base.AgentAdapter` once: connect
(credentials, endpoint, handshake errors), stream user frames (resampled with soxr to the
provider's rate), poll (settle with a lockstep fake, parse every arrival with the provider's
wire models, turn it into normalized events), barge-in truncation, close. A provider subclass
supplies only its protocol: the endpoint, the session handshake, the wire models, and what each
server event means (:meth:`RealtimeAdapter.handle`).

:class:`PlayoutMirror` follows the orchestrator's playout of the agent channel sample by sample,
from the events this adapter returned and the media time of each call. It is what lets an
adapter answer "which audio item was the user hearing, and how far into it" when the
orchestrator reports a barge-in with ``truncated(heard_ms)``, and "is the agent audible right
now" for providers whose barge-in is detected on the client.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
from pydantic import BaseModel

from runtime.agents.base import (
    AgentEvent,
    AgentSessionConfig,
    AudioDelta,
    Interrupted,
    ProtocolUnknown,
    ResponseDone,
)
from runtime.agents.errors import (
    ErrorCategory,
    ProviderConfigError,
    ProviderError,
    UnknownWireEvent,
    WireProtocolError,
    connection_lost,
    strict_protocol,
)
from runtime.agents.providers._transport import LockstepSync, WebsocketTransport, check_ws_url
from runtime.core.audio import FRAME_MS, FRAME_SAMPLES, SAMPLE_RATE, Pcm, StreamResampler

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class ProviderSettings:
    """Everything a provider adapter needs, read from the environment by ``make_adapter``."""

    kind: str
    """The registry kind (``openai-realtime``, ``grok``, …)."""
    model: str
    url: str
    url_env: str
    key_env: str
    api_key: str | None = field(default=None, repr=False)
    voice: str | None = None
    input_rate: int = SAMPLE_RATE
    """Sample rate of the audio this adapter sends to the provider."""
    output_rate: int = SAMPLE_RATE
    """Sample rate of the audio the provider sends back."""
    options: Mapping[str, str] = field(default_factory=dict)

    def require_key(self) -> str:
        if not self.api_key:
            raise ProviderConfigError(
                f"{self.kind}: no API key; set the environment variable {self.key_env}"
            )
        return self.api_key


def env_rate(env: Mapping[str, str], name: str, default: int, allowed: tuple[int, ...]) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        rate = int(raw)
    except ValueError:
        rate = -1
    if rate not in allowed:
        raise ProviderConfigError(
            f"{name}={raw!r} is not a sample rate this provider accepts; use one of "
            + ", ".join(str(r) for r in allowed)
        )
    return rate


def with_query(url: str, **params: str) -> str:
    """``url`` with ``params`` added to its query string unless already present."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    for key, value in params.items():
        query.setdefault(key, value)
    return urlunsplit(parts._replace(query=urlencode(query)))


def settings_from_env(
    env: Mapping[str, str], *, kind: str, model: str | None, default_model: str,
    url_env: str, default_url: str, key_env: str, voice_env: str, default_voice: str | None,
    input_rate: int = SAMPLE_RATE, output_rate: int = SAMPLE_RATE,
    options: Mapping[str, str] | None = None,
) -> ProviderSettings:
    """Common ``make_adapter`` plumbing; reads ``env`` only (no I/O)."""
    url = env.get(url_env, "").strip() or default_url
    return ProviderSettings(
        kind=kind, model=model or default_model, url=check_ws_url(url, url_env),
        url_env=url_env, key_env=key_env, api_key=env.get(key_env) or None,
        voice=env.get(voice_env, "").strip() or default_voice,
        input_rate=input_rate, output_rate=output_rate, options=dict(options or {}),
    )


def clamp_voice(kind: str, requested: str | None, allowed: tuple[str, ...], default: str) -> str:
    """A voice from ``allowed``: an unknown one falls back to ``default`` (with a warning).

    D.2: OpenAI rejects a whole ``session.update`` whose voice is not on its allowlist, which
    silently drops the tools sent with it; clamping keeps the tools.
    """
    if requested is None:
        return default
    for voice in allowed:
        if voice.lower() == requested.lower():
            return voice
    log.warning("%s: voice %r is not one of %s; using %r", kind, requested, allowed, default)
    return default


# --------------------------------------------------------------------------- playout mirror


@dataclass
class _Segment:
    item_id: str
    start: int
    """First sample of this segment within the playout turn."""
    samples: int
    item_pos: int
    """How many samples of the same item were emitted before this segment."""


@dataclass(frozen=True)
class TruncationPoint:
    item_id: str
    audio_end_ms: int
    """How much of the item the user heard."""
    item_ms: int
    """Duration of the item's audio emitted so far."""
    turn_played_ms: int
    """What the mirror believes the orchestrator played of the turn (= its ``heard_ms``)."""


class PlayoutMirror:
    """Follows :class:`~runtime.session.orchestrator.Orchestrator` playout of the agent channel.

    The orchestrator, once per 40 ms iteration: polls the adapter; starts a playout *turn* on
    the first audio delta while silent; on ``Interrupted`` drops the unplayed buffer (if any);
    plays one frame; and ends the turn once the buffer is empty and ``ResponseDone`` was seen.
    This class replays those rules from the events the adapter returned, so it knows at every
    media time what is still buffered, how much of the turn was played, and which provider
    audio item each played sample came from (a turn may span several items: speech before a
    tool call and the answer after it).
    """

    _KEEP_ITEMS = 64

    def __init__(self) -> None:
        self.speaking = False
        self.buffered = 0
        self.played = 0
        self.response_done = True
        self.segments: list[_Segment] = []
        self._item_samples: dict[str, int] = {}
        self._last_t: int | None = None

    def advance(self, t_media_ms: int) -> None:
        """The orchestrator has played one frame per iteration since the last call."""
        if self._last_t is not None:
            for _ in range(max(0, (t_media_ms - self._last_t) // FRAME_MS)):
                if self.speaking and self.buffered:
                    chunk = min(FRAME_SAMPLES, self.buffered)
                    self.buffered -= chunk
                    self.played += chunk
                if self.speaking and not self.buffered and self.response_done:
                    self.speaking = False
        if self._last_t is None or t_media_ms > self._last_t:
            self._last_t = t_media_ms

    def audio(self, item_id: str, samples: int) -> None:
        if not self.speaking:
            self.speaking, self.played, self.buffered = True, 0, 0
            self.response_done = False
            self.segments = []
        start = self.played + self.buffered
        pos = self._item_samples.get(item_id, 0)
        last = self.segments[-1] if self.segments else None
        if last is not None and last.item_id == item_id and last.start + last.samples == start:
            last.samples += samples
        else:
            self.segments.append(_Segment(item_id, start, samples, pos))
        self._item_samples[item_id] = pos + samples
        if len(self._item_samples) > self._KEEP_ITEMS:
            del self._item_samples[next(iter(self._item_samples))]
        self.buffered += samples

    def done(self) -> None:
        self.response_done = True

    @property
    def audible(self) -> bool:
        """Agent audio is buffered for playout right now (a barge-in would cut it)."""
        return self.speaking and self.buffered > 0

    def interrupt(self) -> TruncationPoint | None:
        """Apply ``Interrupted``; where the user was when the audio was cut (None: no cut)."""
        if not (self.speaking and self.buffered):
            return None
        played = self.played
        seg = next(
            (s for s in self.segments if s.start <= played < s.start + s.samples),
            self.segments[-1],
        )
        heard = seg.item_pos + min(max(played - seg.start, 0), seg.samples)
        point = TruncationPoint(
            item_id=seg.item_id,
            audio_end_ms=heard * 1000 // SAMPLE_RATE,
            item_ms=self._item_samples.get(seg.item_id, heard) * 1000 // SAMPLE_RATE,
            turn_played_ms=played * 1000 // SAMPLE_RATE,
        )
        self.speaking, self.buffered, self.segments = False, 0, []
        return point


# --------------------------------------------------------------------------- continuation gate


class ContinuationGate:
    """When to ask the provider for a response, so that it is asked once and never twice.

    D.2 found two ways to get this wrong: a ``response.create`` sent while a response is still
    active is refused (OpenAI's ``conversation_already_has_active_response``, which truncated
    the turn), and a continuation sent after the *first* of several parallel tool outputs
    leaves the others unanswered (Grok hung). The gate owes a continuation once at least one
    tool output was submitted and every tool call emitted has its output, and it releases it
    only when no response is active (from our request, or the provider announcing one, until
    that response is done).
    """

    def __init__(self) -> None:
        self.active = False
        self.awaiting: list[str] = []
        """Tool calls emitted whose output has not been submitted yet, in order."""
        self.outputs = 0
        """Outputs submitted since the last request (a continuation is owed)."""
        self.wanted = False
        """A response was asked for (end of a user turn) while another was active."""
        self.request_id: str | None = None

    def tool_call(self, call_id: str) -> None:
        self.awaiting.append(call_id)

    def output(self, call_id: str) -> None:
        if call_id in self.awaiting:
            self.awaiting.remove(call_id)
        self.outputs += 1

    def want(self) -> None:
        self.wanted = True

    def due(self) -> bool:
        owed = self.outputs > 0 and not self.awaiting
        return (owed or self.wanted) and not self.active

    def requested(self, request_id: str) -> None:
        self.active, self.outputs, self.wanted = True, 0, False
        self.request_id = request_id

    def started(self) -> None:
        self.active = True

    def finished(self) -> None:
        self.active = False
        self.request_id = None

    def refused(self, request_id: str | None) -> bool:
        """Our request ``request_id`` was refused: nothing will finish it. True if it was ours."""
        if request_id is None or request_id != self.request_id:
            return False
        self.finished()
        return True


# --------------------------------------------------------------------------- the adapter


class RealtimeAdapter(ABC):
    """Base of the websocket realtime adapters; subclasses speak one provider's protocol."""

    handshake_timeout_s = 15.0

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        self.name = f"{settings.kind}:{settings.model}"
        self.transport = WebsocketTransport(settings.kind)
        self.playout = PlayoutMirror()
        self._to_provider = StreamResampler(SAMPLE_RATE, settings.input_rate)
        self._from_provider = StreamResampler(settings.output_rate, SAMPLE_RATE)
        self._out: list[AgentEvent] = []
        self._failed = False
        self._truncation: TruncationPoint | None = None
        self._ids = 0
        self.now_ms = 0

    # ------------------------------------------------------------------ plug-in points

    @abstractmethod
    def endpoint(self) -> str:
        """The websocket URL (with the model in the query where the provider wants it)."""

    def headers(self, api_key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"}

    @abstractmethod
    async def start_session(self, config: AgentSessionConfig) -> None:
        """Send the session setup and wait for its acknowledgement (:meth:`await_event`)."""

    @abstractmethod
    def parse(self, raw: str | bytes) -> BaseModel:
        """One server message → its wire model; :class:`WireProtocolError` if unknown."""

    @abstractmethod
    def audio_message(self, audio_b64: str) -> BaseModel | Mapping[str, Any]:
        """The client message carrying one chunk of user audio."""

    @abstractmethod
    async def handle(self, event: BaseModel) -> None:
        """Act on one server event: :meth:`emit` normalized events, send follow-ups."""

    async def on_user_frame(self, frame: Pcm, t_media_ms: int) -> None:
        """Called with every user frame before it is sent (client-side turn detection)."""
        del frame, t_media_ms

    async def after_events(self, t_media_ms: int) -> None:
        """Called at the end of every poll, after the arrivals were handled."""
        del t_media_ms

    async def truncate_item(self, item_id: str, audio_end_ms: int) -> None:
        """Tell the provider the user heard only ``audio_end_ms`` of ``item_id``."""
        del item_id, audio_end_ms

    # ------------------------------------------------------------------ helpers for subclasses

    def attach_lockstep(self, sync: LockstepSync) -> None:
        """Virtual-clock lockstep with a local fake (see :mod:`._transport`)."""
        self.transport.lockstep = sync

    def next_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}_{self._ids}"

    def emit(self, event: AgentEvent) -> None:
        """Queue a normalized event for the next ``poll``, keeping the playout mirror in step."""
        if isinstance(event, ResponseDone):
            self.playout.done()
        elif isinstance(event, Interrupted):
            point = self.playout.interrupt()
            if point is not None:
                self._truncation = point
            self._from_provider.flush()  # the cut audio's filter tail must not leak onward
        self._out.append(event)

    def emit_audio(self, pcm: Pcm, item_id: str) -> None:
        """Provider audio (at its output rate) → 24 kHz ``AudioDelta`` for ``item_id``."""
        out = self._from_provider.push(pcm)
        if len(out):
            self.playout.audio(item_id, len(out))
            self._out.append(AudioDelta(pcm=out))

    def flush_audio(self, item_id: str) -> None:
        """The resampler's tail at the end of an audio item."""
        tail = self._from_provider.flush()
        if len(tail) and item_id:
            self.playout.audio(item_id, len(tail))
            self._out.append(AudioDelta(pcm=tail))

    def fail(self, error: ProviderError) -> None:
        self.emit(error.signal())
        if error.fatal:
            self._failed = True

    @property
    def failed(self) -> bool:
        return self._failed

    async def send(self, message: BaseModel | Mapping[str, Any]) -> None:
        await self.transport.send(message)

    async def await_event(
        self, done: Callable[[BaseModel], bool], what: str,
    ) -> list[BaseModel]:
        """During the handshake: parse arrivals until ``done`` accepts one; return them all.

        A drop raises ``InfrastructureError``; silence past :attr:`handshake_timeout_s` is a
        fatal ``server`` error (the provider accepted the socket but never answered).
        """
        seen: list[BaseModel] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.handshake_timeout_s
        while True:
            for raw in self.transport.drain():
                event = self.parse(raw)
                seen.append(event)
                if done(event):
                    # Anything that arrived behind the acknowledgement is handled by poll.
                    return seen
            if self.transport.dropped is not None:
                raise connection_lost(
                    f"{self.settings.kind}: {self.transport.dropped} while waiting for {what}"
                )
            left = deadline - loop.time()
            if left <= 0 or not await self.transport.wait_arrival(left):
                raise ProviderError(
                    ErrorCategory.SERVER,
                    f"{self.settings.kind}: no {what} within {self.handshake_timeout_s:.0f} s",
                    fatal=True,
                )

    # ------------------------------------------------------------------ AgentAdapter

    async def connect(self, config: AgentSessionConfig) -> None:
        if config.sample_rate != SAMPLE_RATE:
            raise ValueError(
                f"{self.settings.kind}: the runtime streams {SAMPLE_RATE} Hz, not "
                f"{config.sample_rate}"
            )
        key = self.settings.require_key()
        if config.clock == "virtual" and self.transport.lockstep is None:
            raise ProviderConfigError(
                f"{self.settings.kind} talks to a live service and cannot follow a virtual "
                "clock: run it with --clock realtime (virtual time needs a lockstep fake, "
                "see docs/adapters.md)"
            )
        try:
            await self.transport.open(self.endpoint(), self.headers(key))
            await self.start_session(config)
        except ProviderError as err:
            # Some providers echo the key they refused; it never reaches the event log.
            self.fail(replace(err, message=err.message.replace(key, "***")))
        except WireProtocolError as exc:
            self.fail(ProviderError(ErrorCategory.PROTOCOL, f"{self.settings.kind}: {exc}",
                                    fatal=True))

    async def send_audio(self, frame: Pcm, t_media_ms: int) -> None:
        self.now_ms = t_media_ms
        self.playout.advance(t_media_ms)
        if self._failed:
            return
        await self.on_user_frame(frame, t_media_ms)
        pcm = self._to_provider.push(frame)
        if len(pcm):
            data = base64.b64encode(pcm.astype("<i2", copy=False).tobytes()).decode("ascii")
            await self.send(self.audio_message(data))

    @abstractmethod
    async def send_tool_result(self, call_id: str, output: dict[str, Any]) -> None:
        """Return one tool result to the provider (and continue when the protocol says so)."""

    async def poll(self, t_media_ms: int) -> list[AgentEvent]:
        self.now_ms = t_media_ms
        self.playout.advance(t_media_ms)
        if not self._failed:
            try:
                await self.transport.settle()
            except ProviderError as err:
                self.fail(err)
        if not self._failed:
            for raw in self.transport.drain():
                try:
                    await self.handle(self.parse(raw))
                except UnknownWireEvent as exc:
                    if strict_protocol():
                        self.fail(ProviderError(
                            ErrorCategory.PROTOCOL, f"{self.settings.kind}: {exc}", fatal=True,
                        ))
                        break
                    self.emit(ProtocolUnknown(event_type=exc.event_type, message=str(exc)))
                except WireProtocolError as exc:
                    self.fail(ProviderError(
                        ErrorCategory.PROTOCOL, f"{self.settings.kind}: {exc}", fatal=True,
                    ))
                    break
            if not self._failed:
                await self.after_events(t_media_ms)
        out, self._out = self._out, []
        if not out and not self._failed and self.transport.dropped is not None:
            raise connection_lost(f"{self.settings.kind}: {self.transport.dropped}")
        return out

    async def truncated(self, heard_ms: int) -> None:
        point, self._truncation = self._truncation, None
        if point is None or self._failed or self.transport.dropped is not None:
            return
        if point.turn_played_ms != heard_ms:  # the mirror lost step with the orchestrator
            log.warning("%s: playout mirror says %d ms heard, orchestrator %d ms",
                        self.settings.kind, point.turn_played_ms, heard_ms)
        await self.truncate_item(point.item_id, point.audio_end_ms)

    async def close(self) -> None:
        self._out = []
        await self.transport.close()


class GatedRealtimeAdapter(RealtimeAdapter):
    """A realtime adapter whose protocol needs an explicit request to continue after tool
    outputs (OpenAI-style ``response.create``): tool results go out through one
    :class:`ContinuationGate`. Subclasses give the two wire messages of their protocol."""

    def __init__(self, settings: ProviderSettings) -> None:
        super().__init__(settings)
        self.gate = ContinuationGate()

    @abstractmethod
    def response_create(self, event_id: str) -> BaseModel:
        """The protocol's request for a response."""

    @abstractmethod
    def tool_output(self, event_id: str, call_id: str, output_json: str) -> BaseModel:
        """The protocol's message carrying one tool result (``output_json``: a JSON text)."""

    async def _continue_if_due(self) -> None:
        if self.gate.due():
            request_id = self.next_id("create")
            self.gate.requested(request_id)
            await self.send(self.response_create(request_id))

    async def send_tool_result(self, call_id: str, output: dict[str, Any]) -> None:
        if self.failed:
            return
        await self.send(self.tool_output(self.next_id("output"), call_id, json.dumps(output)))
        self.gate.output(call_id)
        await self._continue_if_due()


def decode_pcm16(b64: str) -> Pcm:
    """Base64 PCM16LE → samples; malformed data is a protocol error."""
    try:
        raw = base64.b64decode(b64, validate=True)
    except ValueError as exc:
        raise WireProtocolError(f"audio payload is not base64: {exc}") from None
    if len(raw) % 2:
        raise WireProtocolError(f"PCM16 audio payload has an odd length ({len(raw)} bytes)")
    return np.frombuffer(raw, dtype="<i2").astype(np.int16, copy=False)
