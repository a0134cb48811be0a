"""Fake of OpenAI's Live API (``/v1/live/sessions``), checked against the SDK's Live models.

The session starts with the client's ``session.start`` (model, audio format, voice, delegation
to a Responses backend). The fake's voice layer detects the user's turns itself (server VAD),
reports user speech as ``session.input_transcript.delta`` and stops talking when the user
barges in. A turn with tools is *delegated*: ``session.delegation.created``, then the backend's
Responses stream wrapped in ``response.event`` (function calls as ``response.output_item.done``,
then ``response.completed`` one user frame later). The client answers with
``response.item.create`` per tool output and one ``response.create``; the backend completes and
the voice speaks the turn's ``say``.

Besides ``session.start`` the fake accepts the rest of the SDK's ``live.ClientEvent`` commands a
client may send on a voice session: ``session.update`` (→ ``session.updated``; the model,
frontend instructions and audio are immutable and refused), ``session.input_audio.mute`` /
``unmute`` (→ ``muted`` / ``unmuted``; muted audio is not heard) and
``session.instructions.append`` (→ ``session.instructions.appended``).

Wire modes (:attr:`~tests.adapters.harness.Scenario.mode`):

* ``minimal``: output audio only while speaking, input transcripts at the user's onset, the
  backend's ``response.completed`` one user frame after its last output;
* ``full_events``: also ``info`` and ``session.usage.updated`` messages, and the backend's whole
  Responses stream for a tool turn (``response.in_progress``, ``response.output_item.added``,
  function-call argument deltas, reasoning summary text);
* ``silence_stream``: what tau2-bench's notes report of the real service: output audio streams
  continuously, *including silence* (one chunk of zeros per received user frame when the voice
  has nothing to say, and after a barge-in), and input transcripts lag the user's speech by
  :data:`TRANSCRIPT_LAG_MS` of audio;
* ``open_backend``: the backend's delegated response never sends a terminal lifecycle event
  (no ``response.completed``); it is over once its function calls are out.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
from pydantic import TypeAdapter, ValidationError

from runtime.agents.scripted import EnergyVAD
from tests.fakes.realtime.base import (
    FakeRealtimeServer,
    FakeSession,
    Say,
    Speech,
    Tools,
    b64_pcm,
    pcm_b64,
)
from tests.fakes.realtime.openai_family import FAILURES, _literal_types, _union_arms

TRANSCRIPT_LAG_MS = 800
"""``silence_stream``: input transcripts trail the user's onset by this much received audio."""

LIVE_VOICES = (
    "alloy", "ash", "ballad", "beacon", "bossa", "cedar", "cinder", "coral", "delta", "echo",
    "gleam", "marin", "meridian", "quartz", "ripple", "sage", "shida", "shimmer", "stone",
    "tempo", "verse", "vesper", "willow",
)


class GptLiveSession(FakeSession):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The voice layer's server VAD waits longer than the other fakes' before it ends a user
        # turn, so a caller answering two questions with a short pause between the answers is
        # one turn whatever the bank's codec leaves in that pause (apexv1_001's oracle asks the
        # beneficiary and the doctor in one turn; in ``open_backend`` nothing else holds the
        # next turn back).
        self.vad = EnergyVAD(hangover_ms=800)
        self.config: dict[str, Any] | None = None
        self.backend_active: str | None = None
        self.delegation = ""
        self.last_calls: list[str] = []
        self.outputs: dict[str, str] = {}
        self.seq = 0
        self.muted = False
        self.lagging: list[tuple[int, dict[str, Any]]] = []
        """``silence_stream``: input transcripts waiting for their release (audio ms)."""

    @property
    def mode(self) -> str:
        return self.scenario.mode or "minimal"

    # ------------------------------------------------------------------ helpers

    def resource(self) -> dict[str, Any]:
        config = self.config or {}
        return {"id": "sess_fake", "expires_at": int(time.time()) + 3600,
                "model": config.get("model", "gpt-live-1"), "status": "active",
                **{k: v for k, v in config.items() if k != "model"}}

    async def error(self, kind: str, client_event_id: str | None = None,
                    **extra: Any) -> None:
        detail = {**FAILURES[kind], **extra}
        if client_event_id is not None:
            detail["client_event_id"] = client_event_id
        await self.emit({"type": "error", "event_id": self.new_id("event"), "error": detail})

    def backend_response(self, rid: str, status: str) -> dict[str, Any]:
        backend = (self.config or {}).get("delegation", {}).get("responses", {})
        return {"id": rid, "object": "response", "created_at": 0,
                "model": backend.get("model", "backend"), "status": status, "output": [],
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}

    async def nested(self, event: dict[str, Any], *, done: bool = False) -> None:
        self.seq += 1
        wrapped = {"type": "response.event", "event_id": self.new_id("event"),
                   "delegation_id": self.delegation,
                   "event": {**event, "sequence_number": self.seq}}
        if done:
            await self.done(wrapped)
        else:
            await self.emit(wrapped)

    # ------------------------------------------------------------------ protocol

    async def on_open(self) -> None:
        pass  # the Live API waits for session.start

    async def on_message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "session.start":
            await self.on_start(message)
        elif kind == "session.input_audio.append":
            await self.flush_deferred()
            changes = [] if self.muted else self.hear(message["audio"])
            if self.muted:
                self.audio_ms += len(pcm_b64(message["audio"])) * 1000 // self.server.input_rate
            for change in changes:
                if change == "onset":
                    await self.transcript({"type": "session.input_transcript.delta",
                                           "event_id": self.new_id("event"), "delta": "[user] ",
                                           "start_ms": self.audio_ms, "end_ms": self.audio_ms})
                    if not getattr(self.server, "talks_over", False):
                        self.speech = None  # the voice stops when the user talks over it
                elif change == "end":
                    await self.act(self.model.user_turn_ended())
            await self.release_transcripts()
            await self.pump()
        elif kind == "session.update":
            await self.on_update(message)
        elif kind in ("session.input_audio.mute", "session.input_audio.unmute"):
            self.muted = kind.endswith(".mute")
            await self.emit({"type": "session.input_audio.muted" if self.muted
                             else "session.input_audio.unmuted",
                             "event_id": self.new_id("event"),
                             "client_event_id": message.get("event_id")})
        elif kind == "session.instructions.append":
            if message.get("delegation_id") is not None:
                await self.error("protocol", message.get("event_id"), code="invalid_value",
                                 message="delegation_id must be null with Responses "
                                         "delegation.", param="delegation_id")
                return
            await self.emit({"type": "session.instructions.appended",
                             "event_id": self.new_id("event"),
                             "client_event_id": message.get("event_id"),
                             "start_ms": self.audio_ms, "end_ms": self.audio_ms})
        elif kind == "response.item.create":
            item = message["item"]
            if item.get("type") == "function_call_output":
                self.outputs[item["call_id"]] = item["output"]
        elif kind == "response.create":
            if self.backend_active is not None:
                await self.error("protocol", message.get("event_id"),
                                 code="response_already_active",
                                 message="The delegated response is still active.")
                return
            say = self.model.continuation()
            rid = self.new_id("resp")
            self.backend_active = rid
            await self.nested({"type": "response.created",
                               "response": self.backend_response(rid, "in_progress")})
            await self.complete_backend(rid)
            if say is not None:
                await self.speak(say.text)
        elif kind == "session.close":
            await self.emit({"type": "session.closed", "event_id": self.new_id("event"),
                             "reason": "close_requested", "session": self.resource(),
                             "usage": {"seconds": self.audio_ms / 1000}})
            await self.ws.close()
        else:
            await self.error("protocol", message.get("event_id"), code="unknown_event",
                             message=f"Unknown event type {kind!r}.")

    async def on_start(self, message: dict[str, Any]) -> None:
        session = message.get("session", {})
        if self.scenario.handshake_error not in (None, "authentication"):
            await self.error(self.scenario.handshake_error, message.get("event_id"))
            return
        voice = session.get("audio", {}).get("output", {}).get("voice")
        if isinstance(voice, str) and voice not in LIVE_VOICES:
            await self.error("protocol", message.get("event_id"), code="invalid_value",
                             message=f"Invalid voice {voice!r}.",
                             param="session.audio.output.voice")
            return
        self.config = session
        await self.emit({"type": "session.started", "event_id": self.new_id("event"),
                         "client_event_id": message.get("event_id"),
                         "session": self.resource()})
        if self.mode == "full_events":
            await self.emit({"type": "info", "event_id": self.new_id("event"),
                             "code": "session_notice",
                             "message": "Fake Live session started."})

    async def begin(self) -> bool:
        """Count one model output (a delegation or an utterance); False if it fails."""
        self.responses += 1
        number = self.responses
        if self.scenario.unknown_event_on_response == number:
            await self.emit({"type": "session.telepathy.delta", "event_id": self.new_id("event")})
        failure = self.scenario.error_on_response.get(number)
        if failure is not None:
            await self.error(failure)
            return False
        return True

    async def act(self, action: Tools | Say | None) -> None:
        if isinstance(action, Tools):
            await self.delegate(action)
        elif isinstance(action, Say):
            await self.speak(action.text)

    async def delegate(self, action: Tools) -> None:
        if not await self.begin():
            return
        self.delegation = self.new_id("deleg")
        rid = self.new_id("resp")
        self.backend_active = rid
        await self.emit({"type": "session.delegation.created", "event_id": self.new_id("event"),
                         "offset_ms": self.audio_ms,
                         "delegation": {"id": self.delegation, "target": "responses",
                                        "type": "delegation", "response_id": rid}})
        await self.nested({"type": "response.created",
                           "response": self.backend_response(rid, "in_progress")})
        full = self.mode == "full_events"
        if full:
            await self.nested({"type": "response.in_progress",
                               "response": self.backend_response(rid, "in_progress")})
            await self.reasoning_summary()
        self.last_calls = []
        for index, call in enumerate(action.calls):
            call_id, item_id = self.new_id("call"), self.new_id("fc")
            arguments = json.dumps(call.args)
            item = {"type": "function_call", "id": item_id, "call_id": call_id,
                    "name": call.name, "arguments": arguments, "status": "completed"}
            if full:
                await self.nested({"type": "response.output_item.added", "output_index": index,
                                   "item": {**item, "arguments": "",
                                            "status": "in_progress"}})
                await self.nested({"type": "response.function_call_arguments.delta",
                                   "item_id": item_id, "output_index": index,
                                   "delta": arguments})
                await self.nested({"type": "response.function_call_arguments.done",
                                   "item_id": item_id, "output_index": index,
                                   "name": call.name, "arguments": arguments})
            await self.nested({"type": "response.output_item.done", "output_index": index,
                               "item": item})
            self.last_calls.append(call_id)
        self.model.pending_say = action.say_after
        await self.complete_backend(rid)

    async def complete_backend(self, rid: str) -> None:
        """The backend response is over: ``response.completed`` (one user frame later), or,
        in ``open_backend`` mode, no terminal event at all."""
        if self.mode == "open_backend":
            self.backend_active = None
            return
        await self.nested({"type": "response.completed",
                           "response": self.backend_response(rid, "completed")}, done=True)

    async def reasoning_summary(self) -> None:
        """``full_events``: a reasoning item with its summary streamed, before the calls."""
        item_id = self.new_id("rs")
        text = "Looking that up."
        await self.nested({"type": "response.output_item.added", "output_index": 0,
                           "item": {"type": "reasoning", "id": item_id, "summary": []}})
        await self.nested({"type": "response.reasoning_summary_part.added", "item_id": item_id,
                           "output_index": 0, "summary_index": 0,
                           "part": {"type": "summary_text", "text": ""}})
        await self.nested({"type": "response.reasoning_summary_text.delta", "item_id": item_id,
                           "output_index": 0, "summary_index": 0, "delta": text})
        await self.nested({"type": "response.reasoning_summary_text.done", "item_id": item_id,
                           "output_index": 0, "summary_index": 0, "text": text})
        await self.nested({"type": "response.reasoning_summary_part.done", "item_id": item_id,
                           "output_index": 0, "summary_index": 0,
                           "part": {"type": "summary_text", "text": text}})

    async def on_update(self, message: dict[str, Any]) -> None:
        session = message.get("session", {})
        immutable = sorted(k for k in ("model", "instructions", "audio") if k in session)
        delegation = session.get("delegation")
        if isinstance(delegation, dict) and delegation.get("type") not in (None, "responses"):
            immutable.append("delegation.type")
        if immutable:
            await self.error("protocol", message.get("event_id"), code="invalid_value",
                             message=f"Immutable session settings: {', '.join(immutable)}.",
                             param=f"session.{immutable[0]}")
            return
        if isinstance(delegation, dict) and isinstance(delegation.get("responses"), dict):
            config = dict(self.config or {})
            backend = dict(config.get("delegation", {}).get("responses", {}))
            backend.update(delegation["responses"])
            config["delegation"] = {"type": "responses", "responses": backend}
            self.config = config
        await self.emit({"type": "session.updated", "event_id": self.new_id("event"),
                         "client_event_id": message.get("event_id"),
                         "session": self.resource()})

    async def transcript(self, event: dict[str, Any]) -> None:
        """An input transcript delta, now or (``silence_stream``) after the service's lag."""
        if self.mode == "silence_stream":
            self.lagging.append((self.audio_ms + TRANSCRIPT_LAG_MS, event))
        else:
            await self.emit(event)

    async def release_transcripts(self) -> None:
        while self.lagging and self.lagging[0][0] <= self.audio_ms:
            await self.emit(self.lagging.pop(0)[1])
        if self.mode == "full_events" and self.audio_ms % 2000 < 40:
            await self.emit({"type": "session.usage.updated", "event_id": self.new_id("event"),
                             "usage": {"seconds": self.audio_ms / 1000},
                             "context_window": {"usage_ratio": 0.01}})

    async def speak(self, text: str) -> None:
        if not await self.begin():
            return
        await self.emit({"type": "session.output_transcript.delta",
                         "event_id": self.new_id("event"), "delta": text,
                         "start_ms": self.audio_ms, "end_ms": self.audio_ms})
        self.speech = Speech("voice", self.new_id("item"), text, self.speech_pcm(text))
        await self.pump()

    async def pump(self) -> None:
        speech = self.speech
        if speech is None:
            if self.mode == "silence_stream" and self.config is not None:
                rate = self.server.output_rate
                await self.emit({"type": "session.output_audio.delta", "delta": b64_pcm(
                    np.zeros(min(self.chunk_samples(), rate), dtype=np.int16))})
            return
        chunk = speech.pcm[speech.pos:speech.pos + self.chunk_samples()]
        speech.pos += len(chunk)
        await self.emit({"type": "session.output_audio.delta", "delta": b64_pcm(chunk)})
        if self.scenario.disconnect_on_response == self.responses:
            self.drop()
            return
        if speech.pos >= len(speech.pcm):
            self.speech = None

    async def finished(self, event: dict[str, Any]) -> None:
        if event.get("event", {}).get("type") == "response.completed":
            self.backend_active = None


class GptLiveFake(FakeRealtimeServer):
    """OpenAI Live API, checked against the SDK's ``live`` models both ways."""

    path = "/v1/live/sessions"
    session_class = GptLiveSession
    talks_over = False
    """The voice keeps talking when the user speaks over it (a backchannel it ignores)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from openai.types.live import ClientEvent, ServerEvent
        from openai.types.responses import ResponseStreamEvent

        self._client_model: TypeAdapter[Any] = TypeAdapter(ClientEvent)
        self._server_model: TypeAdapter[Any] = TypeAdapter(ServerEvent)
        self._nested_model: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
        self._server_types = {t for arm in _union_arms(ServerEvent) for t in _literal_types(arm)}

    def check_client_event(self, message: dict[str, Any]) -> None:
        try:
            self._client_model.validate_python(message)
        except ValidationError as exc:
            self.violations.append(f"client {message.get('type')}: {exc}")

    def check_server_event(self, event: dict[str, Any]) -> None:
        if event.get("type") not in self._server_types:
            return  # deliberately off-protocol (the unknown-event scenario)
        try:
            self._server_model.validate_python(event)
            if event["type"] == "response.event":
                self._nested_model.validate_python(event["event"])
        except ValidationError as exc:
            self.violations.append(f"server {event.get('type')}: {exc}")
