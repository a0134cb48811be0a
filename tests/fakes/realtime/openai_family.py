"""Fakes of the OpenAI realtime protocol and its look-alikes: OpenAI (GA), xAI Grok, StepFun.

One session class speaks the shared response lifecycle; subclasses set the event names and
the provider's quirks:

* **OpenAI** validates every message both ways against the ``openai`` SDK's realtime models
  (a drift in the SDK shows up as ``violations``), rejects a ``session.update`` whose voice is
  not on the allowlist (and so never gets the tools), calls tools only when the session says
  ``tool_choice: "auto"``, and answers a ``response.create`` sent while a response is active
  with ``conversation_already_has_active_response``.
* **Grok** hangs (``response.created``, then nothing) when a ``response.create`` arrives before
  every ``function_call_output`` of the previous tool calls.
* **StepFun** has no server turn detection: it answers only after an explicit
  ``input_audio_buffer.commit`` and ``response.create``, and stops on ``response.cancel``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import TypeAdapter, ValidationError

from tests.fakes.realtime.base import (
    Action,
    FakeRealtimeServer,
    FakeSession,
    Say,
    Speech,
    Tools,
    b64_pcm,
)

OPENAI_VOICES = (
    "alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse", "marin", "cedar",
)

FAILURES: dict[str, dict[str, str]] = {
    "rate_limit": {"type": "rate_limit_error", "code": "rate_limit_exceeded",
                   "message": "Rate limit reached for requests per minute."},
    "quota": {"type": "insufficient_quota", "code": "insufficient_quota",
              "message": "You exceeded your current quota."},
    "server": {"type": "server_error", "code": "server_error",
               "message": "The server had an error while processing your request."},
    "authentication": {"type": "invalid_request_error", "code": "invalid_api_key",
                       "message": "Incorrect API key provided."},
    "protocol": {"type": "invalid_request_error", "code": "unknown_parameter",
                 "message": "Unknown parameter: 'session.telepathy'."},
}


@dataclass(frozen=True)
class Names:
    audio_delta: str
    audio_done: str
    transcript_delta: str
    transcript_done: str
    item_added: str


GA = Names(
    "response.output_audio.delta", "response.output_audio.done",
    "response.output_audio_transcript.delta", "response.output_audio_transcript.done",
    "conversation.item.added",
)
BETA = Names(
    "response.audio.delta", "response.audio.done",
    "response.audio_transcript.delta", "response.audio_transcript.done",
    "conversation.item.created",
)


class OpenAIFamilySession(FakeSession):
    names: ClassVar[Names] = GA
    server_vad: ClassVar[bool] = True
    voices: ClassVar[tuple[str, ...] | None] = None
    tools_need_choice_auto: ClassVar[bool] = False
    refuse_overlapping_create: ClassVar[bool] = False
    hang_on_early_create: ClassVar[bool] = False
    cancels_on_speech: ClassVar[bool] = True
    """Server VAD cancels the active response by itself at ``speech_started`` (OpenAI); False:
    the response keeps streaming until the client sends ``response.cancel`` (xAI)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config: dict[str, Any] | None = None
        self.active: str | None = None
        self.output: list[dict[str, Any]] = []
        self.last_calls: list[str] = []
        self.outputs: dict[str, str] = {}
        self.user_turn_pending = False
        self.user_item = ""
        self.truncations: list[dict[str, Any]] = []
        self.hung = False

    # ------------------------------------------------------------------ session

    def session_snapshot(self) -> dict[str, Any]:
        return {"type": "realtime", "id": "sess_fake", "model": "fake-model",
                **(self.config or {})}

    async def on_open(self) -> None:
        await self.emit({"type": "session.created", "event_id": self.new_id("event"),
                         "session": self.session_snapshot()})

    def voice_of(self, session: dict[str, Any]) -> str | None:
        voice = session.get("audio", {}).get("output", {}).get("voice")
        return voice if isinstance(voice, str) else None

    def tools_enabled(self) -> bool:
        if not self.config or not self.config.get("tools"):
            return False
        return not self.tools_need_choice_auto or self.config.get("tool_choice") == "auto"

    async def error(self, kind: str, event_id: str | None = None, **extra: Any) -> None:
        detail = {**FAILURES[kind], **extra}
        if event_id is not None:
            detail["event_id"] = event_id
        await self.emit({"type": "error", "event_id": self.new_id("event"), "error": detail})

    async def on_session_update(self, message: dict[str, Any]) -> None:
        session = message.get("session", {})
        if self.scenario.handshake_error not in (None, "authentication"):
            await self.error(self.scenario.handshake_error, message.get("event_id"))
            return
        voice = self.voice_of(session)
        if self.voices is not None and voice is not None and voice not in self.voices:
            # The whole update is rejected: instructions, tools and all.
            await self.error(
                "protocol", message.get("event_id"), code="invalid_value",
                message=f"Invalid value: '{voice}'. Supported values are: "
                        + ", ".join(f"'{v}'" for v in self.voices) + ".",
                param="session.audio.output.voice",
            )
            return
        self.config = {**(self.config or {}), **session}
        await self.emit({"type": "session.updated", "event_id": self.new_id("event"),
                         "session": self.session_snapshot()})

    # ------------------------------------------------------------------ messages

    async def on_message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "session.update":
            await self.on_session_update(message)
        elif kind == "input_audio_buffer.append":
            await self.flush_deferred()
            for change in self.hear(message["audio"]):
                if self.server_vad and change == "onset":
                    await self.on_speech_started()
                elif self.server_vad and change == "end":
                    await self.on_speech_stopped()
            await self.pump()
        elif kind == "input_audio_buffer.commit":
            self.user_item = self.new_id("item")
            await self.emit({"type": "input_audio_buffer.committed",
                             "event_id": self.new_id("event"), "item_id": self.user_item,
                             "previous_item_id": None})
            self.user_turn_pending = True
        elif kind == "input_audio_buffer.clear":
            await self.emit({"type": "input_audio_buffer.cleared",
                             "event_id": self.new_id("event")})
        elif kind == "conversation.item.create":
            item = message["item"]
            if item.get("type") == "function_call_output":
                self.outputs[item["call_id"]] = item["output"]
            await self.emit({"type": self.names.item_added, "event_id": self.new_id("event"),
                             "previous_item_id": None,
                             "item": {"id": self.new_id("item"), "object": "realtime.item",
                                      "status": "completed", **item}})
        elif kind == "response.create":
            await self.on_response_create(message)
        elif kind == "response.cancel":
            if self.active is not None:
                await self.cancel("client_cancelled")
            else:
                await self.emit({"type": "error", "event_id": self.new_id("event"), "error": {
                    "type": "invalid_request_error", "code": "response_cancel_not_active",
                    "message": "Cancellation failed: no active response found.",
                    "event_id": message.get("event_id"),
                }})
        elif kind == "conversation.item.truncate":
            self.truncations.append(message)
            await self.emit({"type": "conversation.item.truncated",
                             "event_id": self.new_id("event"), "item_id": message["item_id"],
                             "content_index": message.get("content_index", 0),
                             "audio_end_ms": message["audio_end_ms"]})
        else:
            await self.emit({"type": "error", "event_id": self.new_id("event"), "error": {
                "type": "invalid_request_error", "code": "unknown_event",
                "message": f"Unknown event type {kind!r}.", "event_id": message.get("event_id"),
            }})

    async def on_speech_started(self) -> None:
        self.user_item = self.new_id("item")
        await self.emit({"type": "input_audio_buffer.speech_started",
                         "event_id": self.new_id("event"), "audio_start_ms": self.audio_ms,
                         "item_id": self.user_item})
        if self.cancels_on_speech and self.active is not None and self.speech is not None:
            await self.cancel("turn_detected")

    async def on_speech_stopped(self) -> None:
        await self.emit({"type": "input_audio_buffer.speech_stopped",
                         "event_id": self.new_id("event"), "audio_end_ms": self.audio_ms,
                         "item_id": self.user_item})
        await self.emit({"type": "input_audio_buffer.committed",
                         "event_id": self.new_id("event"), "item_id": self.user_item,
                         "previous_item_id": None})
        if self.active is None and not self.hung:
            await self.start_response(self.model.user_turn_ended())

    async def on_response_create(self, message: dict[str, Any]) -> None:
        if self.active is not None:
            if self.refuse_overlapping_create:
                await self.emit({"type": "error", "event_id": self.new_id("event"), "error": {
                    "type": "invalid_request_error",
                    "code": "conversation_already_has_active_response",
                    "message": "Conversation already has an active response in progress: "
                               f"{self.active}. Wait until the response is finished before "
                               "creating a new one.",
                    "event_id": message.get("event_id"),
                }})
            return
        missing = [c for c in self.last_calls if c not in self.outputs]
        if self.hang_on_early_create and missing:
            # xAI's parallel-call hang: the response starts and never produces anything.
            self.hung = True
            self.active = self.new_id("resp")
            await self.emit(self.response_event("response.created", self.active, "in_progress"))
            return
        action: Action | None
        if self.model.pending_say is not None:
            action = self.model.continuation()
        elif self.user_turn_pending:
            action = self.model.user_turn_ended()
        else:
            action = None
        self.user_turn_pending = False
        await self.start_response(action)

    # ------------------------------------------------------------------ responses

    def response_event(self, kind: str, response_id: str, status: str,
                       details: dict[str, Any] | None = None) -> dict[str, Any]:
        response: dict[str, Any] = {
            "id": response_id, "object": "realtime.response", "status": status,
            "output": list(self.output) if kind == "response.done" else [],
        }
        if details is not None:
            response["status_details"] = details
        return {"type": kind, "event_id": self.new_id("event"), "response": response}

    async def start_response(self, action: Action | None) -> None:
        self.responses += 1
        number = self.responses
        rid = self.new_id("resp")
        self.active, self.output = rid, []
        scenario = self.scenario
        if scenario.unknown_event_on_response == number:
            await self.emit({"type": "response.telepathy.delta", "event_id": self.new_id("event"),
                             "response_id": rid})
        failure = scenario.error_on_response.get(number)
        if failure == "protocol":
            await self.error("protocol")
            self.active = None
            return
        await self.emit(self.response_event("response.created", rid, "in_progress"))
        if failure is not None:
            self.active = None
            await self.emit(self.response_event(
                "response.done", rid, "failed", {"type": "failed", "error": FAILURES[failure]},
            ))
            return
        if isinstance(action, Tools) and not self.tools_enabled():
            action = Say(action.say_after) if action.say_after else None
        if isinstance(action, Tools):
            await self.call_tools(rid, action)
            self.model.pending_say = action.say_after
            await self.done(self.response_event("response.done", rid, "completed"))
        elif isinstance(action, Say):
            await self.start_speech(rid, action.text)
        else:
            await self.done(self.response_event("response.done", rid, "completed"))

    async def call_tools(self, rid: str, action: Tools) -> None:
        self.last_calls = []
        for index, call in enumerate(action.calls):
            call_id, item_id = self.new_id("call"), self.new_id("item")
            arguments = json.dumps(call.args)
            item = {"id": item_id, "object": "realtime.item", "type": "function_call",
                    "call_id": call_id, "name": call.name, "arguments": ""}
            await self.emit({"type": "response.output_item.added",
                             "event_id": self.new_id("event"), "response_id": rid,
                             "output_index": index, "item": {**item, "status": "in_progress"}})
            await self.emit({"type": "response.function_call_arguments.delta",
                             "event_id": self.new_id("event"), "response_id": rid,
                             "item_id": item_id, "output_index": index, "call_id": call_id,
                             "delta": arguments})
            await self.emit({"type": "response.function_call_arguments.done",
                             "event_id": self.new_id("event"), "response_id": rid,
                             "item_id": item_id, "output_index": index, "call_id": call_id,
                             "name": call.name, "arguments": arguments})
            done = {**item, "arguments": arguments, "status": "completed"}
            await self.emit({"type": "response.output_item.done",
                             "event_id": self.new_id("event"), "response_id": rid,
                             "output_index": index, "item": done})
            self.output.append(done)
            self.last_calls.append(call_id)

    def _part(self, rid: str, item_id: str) -> dict[str, Any]:
        return {"event_id": self.new_id("event"), "response_id": rid, "item_id": item_id,
                "output_index": 0, "content_index": 0}

    async def start_speech(self, rid: str, text: str) -> None:
        item_id = self.new_id("item")
        message = {"id": item_id, "object": "realtime.item", "type": "message",
                   "role": "assistant", "content": []}
        await self.emit({"type": "response.output_item.added", "event_id": self.new_id("event"),
                         "response_id": rid, "output_index": 0,
                         "item": {**message, "status": "in_progress"}})
        await self.emit({"type": "response.content_part.added", **self._part(rid, item_id),
                         "part": {"type": "audio", "transcript": ""}})
        await self.emit({"type": self.names.transcript_delta, **self._part(rid, item_id),
                         "delta": text})
        self.speech = Speech(rid, item_id, text, self.speech_pcm(text))
        await self.pump()

    async def pump(self) -> None:
        speech = self.speech
        if speech is None or self.hung:
            return
        chunk = speech.pcm[speech.pos:speech.pos + self.chunk_samples()]
        speech.pos += len(chunk)
        await self.emit({"type": self.names.audio_delta, **self._part(speech.response_id,
                                                                      speech.item_id),
                         "delta": b64_pcm(chunk)})
        if self.scenario.disconnect_on_response == self.responses:
            self.drop()
            return
        if speech.pos >= len(speech.pcm):
            self.speech = None
            await self.finish_speech(speech, "completed")

    async def finish_speech(self, speech: Speech, status: str) -> None:
        rid, item_id = speech.response_id, speech.item_id
        await self.emit({"type": self.names.audio_done, **self._part(rid, item_id)})
        await self.emit({"type": self.names.transcript_done, **self._part(rid, item_id),
                         "transcript": speech.text})
        await self.emit({"type": "response.content_part.done", **self._part(rid, item_id),
                         "part": {"type": "audio", "transcript": speech.text}})
        item = {"id": item_id, "object": "realtime.item", "type": "message",
                "role": "assistant", "status": status,
                "content": [{"type": "output_audio", "transcript": speech.text}]}
        await self.emit({"type": "response.output_item.done", "event_id": self.new_id("event"),
                         "response_id": rid, "output_index": 0, "item": item})
        self.output.append(item)
        done = self.response_event("response.done", rid, status)
        if status == "completed":
            await self.done(done)
        else:
            await self.emit(done)

    async def cancel(self, reason: str) -> None:
        rid = self.active
        if rid is None:
            return
        speech, self.speech = self.speech, None
        self.deferred = [e for e in self.deferred if e.get("type") != "response.done"]
        self.active = None
        if speech is not None:
            await self.emit({"type": self.names.audio_done,
                             **self._part(speech.response_id, speech.item_id)})
        await self.emit(self.response_event(
            "response.done", rid, "cancelled", {"type": "cancelled", "reason": reason},
        ))

    async def finished(self, event: dict[str, Any]) -> None:
        if event.get("type") == "response.done":
            self.active = None


class OpenAISession(OpenAIFamilySession):
    voices = OPENAI_VOICES
    tools_need_choice_auto = True
    refuse_overlapping_create = True


class GrokSession(OpenAIFamilySession):
    hang_on_early_create = True
    cancels_on_speech = False
    """pipecat's changelog for its xAI realtime service: under server VAD an interruption needs
    ``response.cancel`` (and ``conversation.item.truncate``) from the client."""

    def voice_of(self, session: dict[str, Any]) -> str | None:
        voice = session.get("voice")
        return voice if isinstance(voice, str) else None

    def session_snapshot(self) -> dict[str, Any]:
        return {"id": "sess_fake", **(self.config or {})}


class StepFunSession(OpenAIFamilySession):
    names = BETA
    server_vad = False

    def voice_of(self, session: dict[str, Any]) -> str | None:
        voice = session.get("voice")
        return voice if isinstance(voice, str) else None

    def session_snapshot(self) -> dict[str, Any]:
        return {"id": "sess_fake", "object": "realtime.session", **(self.config or {})}


# --------------------------------------------------------------------------- servers


class OpenAIFake(FakeRealtimeServer):
    """OpenAI realtime (GA), checked against the SDK's models both ways."""

    session_class = OpenAISession

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from openai.types.realtime import RealtimeClientEvent, RealtimeServerEvent

        self._client_model: TypeAdapter[Any] = TypeAdapter(RealtimeClientEvent)
        self._server_model: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)
        self._server_types = {
            t for arm in _union_arms(RealtimeServerEvent) for t in _literal_types(arm)
        }

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
        except ValidationError as exc:
            self.violations.append(f"server {event.get('type')}: {exc}")


class GrokFake(FakeRealtimeServer):
    """xAI's Grok Voice Agent: OpenAI GA event names, xAI's flat session shape."""

    session_class = GrokSession

    def check_client_event(self, message: dict[str, Any]) -> None:
        if message.get("type") != "session.update":
            return
        session = message.get("session", {})
        problems = [k for k in ("instructions", "voice", "turn_detection", "audio", "tools")
                    if k not in session]
        audio = session.get("audio", {})
        for side, rate in (("input", self.input_rate), ("output", self.output_rate)):
            fmt = audio.get(side, {}).get("format", {})
            if fmt != {"type": "audio/pcm", "rate": rate}:
                problems.append(f"audio.{side}.format={fmt}")
        if problems:
            self.violations.append(f"grok session.update: {problems}")


class StepFunFake(FakeRealtimeServer):
    """StepFun realtime: OpenAI beta event names, client-side turn detection."""

    session_class = StepFunSession

    def check_client_event(self, message: dict[str, Any]) -> None:
        if message.get("type") != "session.update":
            return
        session = message.get("session", {})
        expected = {"modalities": ["text", "audio"], "input_audio_format": "pcm16",
                    "output_audio_format": "pcm16"}
        problems = [f"{k}={session.get(k)!r}" for k, v in expected.items() if session.get(k) != v]
        if "turn_detection" in session and session["turn_detection"] is not None:
            problems.append("turn_detection must stay off (client commits)")
        if problems:
            self.violations.append(f"stepfun session.update: {problems}")


def _union_arms(union: Any) -> list[Any]:
    import typing

    args = typing.get_args(union)
    if typing.get_origin(union) is typing.Annotated:
        args = typing.get_args(args[0])
    return list(args)


def _literal_types(model: Any) -> list[str]:
    import typing

    return list(typing.get_args(model.model_fields["type"].annotation))
