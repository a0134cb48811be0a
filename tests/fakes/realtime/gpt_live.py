"""Fake of OpenAI's Live API (``/v1/live/sessions``), checked against the SDK's Live models.

The session starts with the client's ``session.start`` (model, audio format, voice, delegation
to a Responses backend). The fake's voice layer detects the user's turns itself (server VAD),
reports user speech as ``session.input_transcript.delta`` and stops talking when the user
barges in. A turn with tools is *delegated*: ``session.delegation.created``, then the backend's
Responses stream wrapped in ``response.event`` (function calls as ``response.output_item.done``,
then ``response.completed`` one user frame later). The client answers with
``response.item.create`` per tool output and one ``response.create``; the backend completes and
the voice speaks the turn's ``say``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic import TypeAdapter, ValidationError

from tests.fakes.realtime.base import FakeRealtimeServer, FakeSession, Say, Speech, Tools, b64_pcm
from tests.fakes.realtime.openai_family import FAILURES, _literal_types, _union_arms

LIVE_VOICES = (
    "alloy", "ash", "ballad", "beacon", "bossa", "cedar", "cinder", "coral", "delta", "echo",
    "gleam", "marin", "meridian", "quartz", "ripple", "sage", "shida", "shimmer", "stone",
    "tempo", "verse", "vesper", "willow",
)


class GptLiveSession(FakeSession):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config: dict[str, Any] | None = None
        self.backend_active: str | None = None
        self.delegation = ""
        self.last_calls: list[str] = []
        self.outputs: dict[str, str] = {}
        self.seq = 0

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
            for change in self.hear(message["audio"]):
                if change == "onset":
                    await self.emit({"type": "session.input_transcript.delta",
                                     "event_id": self.new_id("event"), "delta": "[user] ",
                                     "start_ms": self.audio_ms, "end_ms": self.audio_ms})
                    self.speech = None  # the voice stops when the user talks over it
                elif change == "end":
                    await self.act(self.model.user_turn_ended())
            await self.pump()
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
            await self.nested({"type": "response.completed",
                               "response": self.backend_response(rid, "completed")}, done=True)
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
        self.last_calls = []
        for index, call in enumerate(action.calls):
            call_id = self.new_id("call")
            await self.nested({"type": "response.output_item.done", "output_index": index,
                               "item": {"type": "function_call", "id": self.new_id("fc"),
                                        "call_id": call_id, "name": call.name,
                                        "arguments": json.dumps(call.args),
                                        "status": "completed"}})
            self.last_calls.append(call_id)
        self.model.pending_say = action.say_after
        await self.nested({"type": "response.completed",
                           "response": self.backend_response(rid, "completed")}, done=True)

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
