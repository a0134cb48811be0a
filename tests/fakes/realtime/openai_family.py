"""Fakes of the OpenAI realtime protocol and its look-alikes: OpenAI (GA), xAI Grok, StepFun.

One session class speaks the shared response lifecycle; subclasses set the event names and
the provider's quirks:

* **OpenAI** validates every message both ways against the ``openai`` SDK's GA realtime models
  (a drift in the SDK shows up as ``violations``), rejects a ``session.update`` whose voice is
  not on the allowlist (and so never gets the tools), calls tools only when the session (or the
  ``response.create``) says ``tool_choice: "auto"``, and answers a ``response.create`` sent while
  a response is active with ``conversation_already_has_active_response``.
* **Grok** hangs (``response.created``, then nothing) when a ``response.create`` arrives before
  every ``function_call_output`` of the previous tool calls; its server VAD does not cancel the
  response by itself; it opens with ``conversation.created`` (xAI's first message).
* **StepFun** speaks the OpenAI *beta* protocol (``response.audio.delta``, item content type
  ``audio``, ``modalities``) and is validated both ways against the SDK's beta models. Turn
  detection is off unless the session sets ``turn_detection: {type: server_vad}``; then its
  server VAD commits and answers (and, like Grok's, leaves cancelling to the client).

What every fake checks, always (like the real services):

* ``conversation.item.truncate``: an unknown ``item_id``, an item that is not model audio, a
  ``content_index`` other than 0 or an ``audio_end_ms`` beyond the audio actually sent for the
  item is an ``error`` (``invalid_request_error``/``invalid_value``; the length message is the
  one public clients report from OpenAI: "Audio content of X ms is already shorter than Y ms").
* Turn detection follows the session: ``turn_detection: null`` (OpenAI GA:
  ``audio.input.turn_detection``) means no server VAD, so nothing happens until the client
  sends ``input_audio_buffer.commit`` and ``response.create``. ``create_response: false`` keeps
  the VAD events but leaves the response to the client; ``interrupt_response: false`` never
  cancels on speech.
* ``conversation.item.retrieve`` (OpenAI) answers ``conversation.item.retrieved``;
  ``conversation.item.delete`` (all three) answers ``conversation.item.deleted``; both are an
  ``error`` for an unknown item. A client event type the provider does not document is an
  ``error`` (``unknown_event``).
* ``response.create`` parameters, validated then applied: ``output_modalities`` (GA) /
  ``modalities`` (beta) text-only → text deltas (``response.output_text.*`` or
  ``response.text.*``) and no audio (GA allows one modality, beta requires ``text``);
  ``tool_choice`` (``none``: no calls; a named function: only that function, which must be a
  declared tool) and ``tools`` override the session's for that response; ``instructions``: when
  the script has nothing to say, the fake model says the instructions; ``conversation: "none"``:
  out of band (``conversation_id`` null, the output is kept out of the conversation, so it
  cannot be truncated or retrieved); ``metadata`` is echoed in the response;
  ``max_output_tokens`` (beta ``max_response_output_tokens``) cuts the speech after that many
  words with status ``incomplete``; an OpenAI voice off the allowlist is an ``error``.

Wire modes (:attr:`Scenario.mode`): ``minimal`` sends only the lifecycle the adapters act on
(plus the acknowledgements every server sends); ``full_events`` also sends, interleaved in the
normal flow, every unsolicited server event the provider documents (:attr:`extras`): keep-alive
``ping`` (xAI), input transcription updates, ``rate_limits.updated`` after each response, text
deltas next to the audio, conversation item lifecycle events, output audio buffer events, MCP
tool listing and calls (OpenAI), DTMF and the idle timeout (``input_audio_buffer.
timeout_triggered``: the event only, no response follows it). Events that only answer a client
request (retrieved, deleted, truncated, cleared) are sent in every mode when asked.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import TypeAdapter, ValidationError

from runtime.agents.scripted import ScriptTool
from runtime.core.audio import FRAME_MS
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
    text_events: tuple[tuple[str, str], ...]
    """(delta, done) event names of text output; xAI documents both spellings."""
    audio_content: str
    """Item content type of model audio: ``output_audio`` (GA) / ``audio`` (beta)."""
    text_content: str
    modalities: str
    """The response's modality field: ``output_modalities`` (GA) / ``modalities`` (beta)."""
    max_tokens: str
    call_name: bool = True
    """``response.function_call_arguments.done`` names the function (GA); the beta event does
    not (the name is on the call's output item)."""


GA = Names(
    "response.output_audio.delta", "response.output_audio.done",
    "response.output_audio_transcript.delta", "response.output_audio_transcript.done",
    "conversation.item.added",
    (("response.output_text.delta", "response.output_text.done"),),
    "output_audio", "output_text", "output_modalities", "max_output_tokens",
)
BETA = Names(
    "response.audio.delta", "response.audio.done",
    "response.audio_transcript.delta", "response.audio_transcript.done",
    "conversation.item.created",
    (("response.text.delta", "response.text.done"),),
    "audio", "text", "modalities", "max_response_output_tokens", call_name=False,
)
XAI = dataclasses.replace(GA, text_events=GA.text_events + BETA.text_events)

GA_CLIENT_EVENTS = frozenset({
    "session.update", "input_audio_buffer.append", "input_audio_buffer.commit",
    "input_audio_buffer.clear", "conversation.item.create", "conversation.item.retrieve",
    "conversation.item.truncate", "conversation.item.delete", "response.create",
    "response.cancel", "output_audio_buffer.clear",
})
"""The ``openai`` SDK's GA ``RealtimeClientEvent`` union."""

IDLE_TIMEOUT_FRAMES = 25
"""Quiet user frames after a finished response before ``timeout_triggered`` (full_events)."""
PING_EVERY_FRAMES = 25


@dataclass
class ResponseParams:
    """What a ``response.create`` asked for (defaults: the session's)."""

    text_only: bool = False
    instructions: str | None = None
    tool_choice: Any = None
    """None: the session's."""
    tools: list[dict[str, Any]] | None = None
    """None: the session's."""
    out_of_band: bool = False
    metadata: dict[str, str] | None = None
    max_tokens: int | None = None


class RequestError(Exception):
    """A client request the fake refuses: ``error`` with ``message`` and ``param``."""

    def __init__(self, message: str, param: str | None = None,
                 code: str = "invalid_value") -> None:
        super().__init__(message)
        self.message, self.param, self.code = message, param, code


class OpenAIFamilySession(FakeSession):
    names: ClassVar[Names] = GA
    vad_by_default: ClassVar[bool] = True
    """Server turn detection when the session says nothing about it."""
    vad_types: ClassVar[tuple[str, ...]] = ("server_vad", "semantic_vad")
    turn_detection_param: ClassVar[str] = "session.audio.input.turn_detection.type"
    default_modalities: ClassVar[tuple[str, ...]] = ("audio",)
    voices: ClassVar[tuple[str, ...] | None] = None
    tools_need_choice_auto: ClassVar[bool] = False
    refuse_overlapping_create: ClassVar[bool] = False
    hang_on_early_create: ClassVar[bool] = False
    cancels_on_speech: ClassVar[bool] = True
    """Server VAD cancels the active response by itself at ``speech_started`` (OpenAI); False:
    the response keeps streaming until the client sends ``response.cancel`` (xAI)."""
    client_events: ClassVar[frozenset[str]] = GA_CLIENT_EVENTS
    """Client event types the provider documents; any other is an ``unknown_event`` error."""
    extras: ClassVar[frozenset[str]] = frozenset()
    """Unsolicited server event types the provider sends in ``full_events`` mode."""

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
        self.full = self.scenario.mode == "full_events"
        self.params = ResponseParams()
        self.items: dict[str, dict[str, Any]] = {}
        """The conversation: item id → item, as last sent."""
        self.item_audio: dict[str, int] = {}
        """Model audio item id → samples sent for it (what a truncate may cut to)."""
        self.text_parts: dict[str, str] = {}
        """full_events: model audio item id → the text part sent next to it."""
        self.speech_status = "completed"
        self.buffer_ms = 0
        self.user_turns = 0
        self.frames = 0
        self.idle = 0
        self.timed_out = self.listed_mcp = self.called_mcp = self.sent_dtmf = False

    # ------------------------------------------------------------------ plumbing

    async def emit(self, event: dict[str, Any]) -> None:
        await super().emit(event)
        if event.get("type") == "response.done":
            await self.extra({"type": "rate_limits.updated", "event_id": self.new_id("event"),
                              "rate_limits": [
                                  {"name": "requests", "limit": 1000, "remaining": 999,
                                   "reset_seconds": 60.0},
                                  {"name": "tokens", "limit": 50_000, "remaining": 49_000,
                                   "reset_seconds": 1.5},
                              ]})

    async def extra(self, event: dict[str, Any]) -> None:
        """Send an unsolicited event the provider documents, in ``full_events`` mode only."""
        if self.full and event["type"] in self.extras:
            await self.emit(event)

    async def refuse(self, message: dict[str, Any], err: RequestError) -> None:
        await self.emit({"type": "error", "event_id": self.new_id("event"), "error": {
            "type": "invalid_request_error", "code": err.code, "message": err.message,
            "param": err.param, "event_id": message.get("event_id"),
        }})

    # ------------------------------------------------------------------ session

    def session_snapshot(self) -> dict[str, Any]:
        return {"type": "realtime", "id": "sess_fake", "model": "fake-model",
                **(self.config or {})}

    async def on_open(self) -> None:
        await self.emit({"type": "session.created", "event_id": self.new_id("event"),
                         "session": self.session_snapshot()})
        await self.extra(self.conversation_created())

    def conversation_created(self) -> dict[str, Any]:
        return {"type": "conversation.created", "event_id": self.new_id("event"),
                "conversation": {"id": "conv_fake", "object": "realtime.conversation"}}

    def voice_of(self, session: dict[str, Any]) -> str | None:
        voice = session.get("audio", {}).get("output", {}).get("voice")
        return voice if isinstance(voice, str) else None

    def turn_detection(self) -> dict[str, Any] | None:
        """The session's turn detection; None: off (the client commits and asks)."""
        session = self.config or {}
        default = {"type": "server_vad"} if self.vad_by_default else None
        detection = session.get("turn_detection", default)
        return detection if isinstance(detection, dict) else None

    def allowed_calls(self, calls: list[ScriptTool]) -> list[ScriptTool]:
        """The scripted calls this response may make under its tools and tool choice."""
        session = self.config or {}
        tools = self.params.tools if self.params.tools is not None else session.get("tools")
        if not tools:
            return []
        choice = self.params.tool_choice
        if choice is None:
            choice = session.get("tool_choice", None if self.tools_need_choice_auto else "auto")
        if choice in ("auto", "required"):
            return calls
        name = choice.get("name") if isinstance(choice, dict) else choice
        return [c for c in calls if choice != "none" and c.name == name]

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
        previous, self.config = self.config, {**(self.config or {}), **session}
        detection = self.turn_detection()
        if detection is not None and detection.get("type", "server_vad") not in self.vad_types:
            self.config = previous
            raise RequestError(
                f"Invalid turn detection type {detection.get('type')!r}; supported: "
                + ", ".join(self.vad_types) + ".", self.turn_detection_param)
        await self.emit({"type": "session.updated", "event_id": self.new_id("event"),
                         "session": self.session_snapshot()})
        if not self.listed_mcp:
            self.listed_mcp = True
            for outcome in ("completed", "failed"):
                item_id = self.new_id("mcpl")
                for kind in ("mcp_list_tools.in_progress", f"mcp_list_tools.{outcome}"):
                    await self.extra({"type": kind, "event_id": self.new_id("event"),
                                      "item_id": item_id})

    # ------------------------------------------------------------------ messages

    async def on_message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        handlers = {
            "session.update": self.on_session_update,
            "input_audio_buffer.append": self.on_append,
            "input_audio_buffer.commit": self.on_commit,
            "input_audio_buffer.clear": self.on_clear,
            "conversation.item.create": self.on_item_create,
            "conversation.item.retrieve": self.on_item_retrieve,
            "conversation.item.delete": self.on_item_delete,
            "conversation.item.truncate": self.on_truncate,
            "response.create": self.on_response_create,
            "response.cancel": self.on_response_cancel,
            "output_audio_buffer.clear": self.on_output_clear,
        }
        try:
            if kind not in self.client_events or kind not in handlers:
                raise RequestError(f"Unknown event type {kind!r}.", code="unknown_event")
            await handlers[kind](message)
        except RequestError as err:
            await self.refuse(message, err)

    async def on_append(self, message: dict[str, Any]) -> None:
        await self.flush_deferred()
        self.frames += 1
        before = self.audio_ms
        changes = self.hear(message["audio"])
        self.buffer_ms += self.audio_ms - before
        detection = self.turn_detection()
        if detection is not None:  # server VAD
            for change in changes:
                if change == "onset":
                    await self.on_speech_started(detection)
                elif change == "end":
                    await self.on_speech_stopped(detection)
        await self.pump()
        await self.keep_alive()

    async def keep_alive(self) -> None:
        """full_events: xAI's ``ping``, and one idle timeout after a finished response."""
        if self.frames % PING_EVERY_FRAMES == 0:
            await self.extra({"type": "ping", "event_id": self.new_id("event"),
                              "timestamp": 1_700_000_000_000 + self.audio_ms})
        if self.vad.in_speech or self.active is not None or self.responses == 0:
            self.idle = 0
            return
        self.idle += 1
        if self.idle == IDLE_TIMEOUT_FRAMES and not self.timed_out:
            self.timed_out = True
            await self.extra({"type": "input_audio_buffer.timeout_triggered",
                              "event_id": self.new_id("event"),
                              "audio_start_ms": self.audio_ms - IDLE_TIMEOUT_FRAMES * FRAME_MS,
                              "audio_end_ms": self.audio_ms, "item_id": self.new_id("item")})

    async def on_commit(self, message: dict[str, Any]) -> None:
        if self.buffer_ms < 100:
            raise RequestError(
                "Error committing input audio buffer: buffer too small. Expected at least "
                f"100ms of audio, but buffer only has {self.buffer_ms}ms of audio.",
                code="input_audio_buffer_commit_empty")
        await self.commit_user_turn(self.new_id("item"))
        self.user_turn_pending = True

    async def on_clear(self, message: dict[str, Any]) -> None:
        self.buffer_ms = 0
        await self.emit({"type": "input_audio_buffer.cleared", "event_id": self.new_id("event")})

    async def on_item_create(self, message: dict[str, Any]) -> None:
        item = message["item"]
        if item.get("type") == "function_call_output":
            self.outputs[item["call_id"]] = item["output"]
        stored = {"id": item.get("id") or self.new_id("item"), "object": "realtime.item",
                  "status": "completed", **{k: v for k, v in item.items() if k != "id"}}
        self.items[stored["id"]] = stored
        await self.emit({"type": self.names.item_added, "event_id": self.new_id("event"),
                         "previous_item_id": None, "item": stored})
        await self.extra({"type": "conversation.item.done", "event_id": self.new_id("event"),
                          "previous_item_id": None, "item": stored})

    def item(self, message: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        item_id = message.get("item_id")
        item = self.items.get(item_id) if isinstance(item_id, str) else None
        if item is None:
            raise RequestError(f"Item with item_id not found: {item_id}", "item_id")
        return str(item_id), item

    async def on_item_retrieve(self, message: dict[str, Any]) -> None:
        _, item = self.item(message)
        await self.emit({"type": "conversation.item.retrieved", "event_id": self.new_id("event"),
                         "item": item})

    async def on_item_delete(self, message: dict[str, Any]) -> None:
        item_id, _ = self.item(message)
        del self.items[item_id]
        self.item_audio.pop(item_id, None)
        await self.emit({"type": "conversation.item.deleted", "event_id": self.new_id("event"),
                         "item_id": item_id})

    async def on_truncate(self, message: dict[str, Any]) -> None:
        item_id, item = self.item(message)
        if item_id not in self.item_audio:
            raise RequestError("Only model output audio messages can be truncated", "item_id")
        if message.get("content_index", 0) != 0:
            raise RequestError("Invalid content_index: the item has one audio content part.",
                               "content_index")
        sent_ms = self.item_audio[item_id] * 1000 // self.server.output_rate
        end = message["audio_end_ms"]
        if end > sent_ms:
            raise RequestError(
                f"Audio content of {sent_ms}ms is already shorter than {end}ms", "audio_end_ms")
        self.truncations.append(message)
        self.item_audio[item_id] = end * self.server.output_rate // 1000
        for part in item.get("content", []):
            if part.get("type") == self.names.audio_content:
                part["transcript"] = None  # the server drops the transcript of a cut item
        await self.emit({"type": "conversation.item.truncated", "event_id": self.new_id("event"),
                         "item_id": item_id, "content_index": 0, "audio_end_ms": end})

    async def on_response_cancel(self, message: dict[str, Any]) -> None:
        if self.active is None:
            raise RequestError("Cancellation failed: no active response found.",
                               code="response_cancel_not_active")
        await self.cancel("client_cancelled")

    async def on_output_clear(self, message: dict[str, Any]) -> None:
        # OpenAI documents output_audio_buffer.clear for WebRTC and SIP sessions only.
        raise RequestError("output_audio_buffer.clear is only supported for WebRTC and SIP "
                           "sessions, not over a websocket.", code="invalid_request")

    # ------------------------------------------------------------------ user turns

    async def on_speech_started(self, detection: dict[str, Any]) -> None:
        self.user_item = self.new_id("item")
        if self.full and not self.sent_dtmf:
            self.sent_dtmf = True
            await self.extra({"type": "input_audio_buffer.dtmf_event_received", "event": "5",
                              "received_at": 1_700_000_000 + self.audio_ms // 1000})
        await self.emit({"type": "input_audio_buffer.speech_started",
                         "event_id": self.new_id("event"), "audio_start_ms": self.audio_ms,
                         "item_id": self.user_item})
        interrupts = self.cancels_on_speech and detection.get("interrupt_response", True)
        if interrupts and self.active is not None and self.speech is not None:
            await self.cancel("turn_detected")

    async def on_speech_stopped(self, detection: dict[str, Any]) -> None:
        await self.emit({"type": "input_audio_buffer.speech_stopped",
                         "event_id": self.new_id("event"), "audio_end_ms": self.audio_ms,
                         "item_id": self.user_item})
        await self.commit_user_turn(self.user_item)
        if not detection.get("create_response", True):
            self.user_turn_pending = True
        elif self.active is None and not self.hung:
            await self.start_response(self.model.user_turn_ended())

    async def commit_user_turn(self, item_id: str) -> None:
        await self.emit({"type": "input_audio_buffer.committed",
                         "event_id": self.new_id("event"), "item_id": item_id,
                         "previous_item_id": None})
        self.buffer_ms = 0
        self.user_turns += 1
        item = {"id": item_id, "object": "realtime.item", "type": "message", "role": "user",
                "status": "completed", "content": [{"type": "input_audio", "transcript": None}]}
        self.items[item_id] = item
        await self.conversation_item(item, done=False)
        await self.conversation_item(item, done=True)
        await self.transcribe(item_id)

    async def transcribe(self, item_id: str) -> None:
        """full_events: odd user turns are transcribed, even ones fail to transcribe."""
        text = f"user turn {self.user_turns}"
        base = {"item_id": item_id, "content_index": 0}
        prefix = "conversation.item.input_audio_transcription"
        if self.user_turns % 2 == 0:
            await self.extra({**base, "type": f"{prefix}.failed", "event_id": self.new_id("event"),
                              "error": {"type": "transcription_error",
                                        "code": "audio_unintelligible",
                                        "message": "The audio could not be transcribed."}})
            return
        for kind, payload in (
            ("delta", {"delta": text}),
            ("updated", {"transcript": text}),
            ("segment", {"id": self.new_id("seg"), "text": text, "speaker": "A", "start": 0.0,
                         "end": 1.0}),
            ("completed", {"transcript": text, "usage": {"type": "duration", "seconds": 1.0}}),
        ):
            await self.extra({**base, "type": f"{prefix}.{kind}",
                              "event_id": self.new_id("event"), **payload})

    async def conversation_item(self, item: dict[str, Any], *, done: bool) -> None:
        """full_events: the conversation's item lifecycle next to the response's."""
        kinds = ("conversation.item.done",) if done else (
            "conversation.item.created", "conversation.item.added")
        for kind in kinds:
            await self.extra({"type": kind, "event_id": self.new_id("event"),
                              "previous_item_id": None, "item": item})

    # ------------------------------------------------------------------ response.create

    def response_params(self, response: dict[str, Any]) -> ResponseParams:
        """Validate a ``response.create``'s ``response`` and read what the fake honours."""
        params = ResponseParams()
        modalities = response.get(self.names.modalities)
        if modalities is not None:
            self.check_modalities(list(modalities))
            params.text_only = "audio" not in modalities
        declared = response.get("tools")
        if declared is None:
            declared = (self.config or {}).get("tools") or []
        choice = response.get("tool_choice")
        name = choice.get("name") if isinstance(choice, dict) else choice
        if name is not None and name not in ("auto", "none", "required") and name not in {
                t.get("name") for t in declared}:
            raise RequestError(f"Tool choice {name!r} is not one of the declared tools.",
                               "response.tool_choice")
        voice = self.response_voice(response)
        if self.voices is not None and voice is not None and voice not in self.voices:
            raise RequestError(f"Invalid value: '{voice}'. Supported values are: "
                               + ", ".join(f"'{v}'" for v in self.voices) + ".",
                               "response.audio.output.voice")
        max_tokens = response.get(self.names.max_tokens)
        return dataclasses.replace(
            params, instructions=response.get("instructions"), tool_choice=choice,
            tools=response.get("tools"), out_of_band=response.get("conversation") == "none",
            metadata=response.get("metadata"),
            max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        )

    def check_modalities(self, modalities: list[str]) -> None:
        if len(set(modalities)) != 1:  # GA: audio (with its transcript) or text, not both
            raise RequestError(f"Invalid output_modalities {modalities}: use ['audio'] or "
                               "['text'].", "response.output_modalities")

    def response_voice(self, response: dict[str, Any]) -> str | None:
        voice = ((response.get("audio") or {}).get("output") or {}).get("voice")
        return voice if isinstance(voice, str) else None

    async def on_response_create(self, message: dict[str, Any]) -> None:
        params = self.response_params(message.get("response") or {})
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
        if action is None and params.instructions:
            action = Say(params.instructions)  # the fake model reads its instructions out
        self.user_turn_pending = False
        await self.start_response(action, params)

    # ------------------------------------------------------------------ responses

    def response_event(self, kind: str, response_id: str, status: str,
                       details: dict[str, Any] | None = None) -> dict[str, Any]:
        params = self.params
        response: dict[str, Any] = {
            "id": response_id, "object": "realtime.response", "status": status,
            "output": list(self.output) if kind == "response.done" else [],
            "conversation_id": None if params.out_of_band else "conv_fake",
            self.names.modalities: ["text"] if params.text_only else list(
                self.default_modalities),
        }
        if params.metadata is not None:
            response["metadata"] = dict(params.metadata)
        if details is not None:
            response["status_details"] = details
        return {"type": kind, "event_id": self.new_id("event"), "response": response}

    async def start_response(self, action: Action | None,
                             params: ResponseParams | None = None) -> None:
        self.params = params or ResponseParams()
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
        if isinstance(action, Tools):
            calls = self.allowed_calls(action.calls)
            if calls:
                action = Tools(calls, action.say_after)
            else:
                action = Say(action.say_after) if action.say_after else None
        if isinstance(action, Tools):
            await self.call_mcp(rid)
            await self.call_tools(rid, action)
            self.model.pending_say = action.say_after
            await self.done(self.response_event("response.done", rid, "completed"))
        elif isinstance(action, Say):
            words = action.text.split()
            limit = self.params.max_tokens
            if limit is not None and len(words) > limit:
                text, self.speech_status = " ".join(words[:limit]), "incomplete"
            else:
                text, self.speech_status = action.text, "completed"
            if self.params.text_only:
                await self.write_text(rid, text)
            else:
                await self.start_speech(rid, text)
        else:
            await self.done(self.response_event("response.done", rid, "completed"))

    async def output_item(self, rid: str, index: int, item: dict[str, Any], *,
                          done: bool) -> None:
        """``response.output_item.added``/``.done``; the item joins the conversation unless
        the response is out of band."""
        kind = "response.output_item.done" if done else "response.output_item.added"
        await self.emit({"type": kind, "event_id": self.new_id("event"), "response_id": rid,
                         "output_index": index, "item": item})
        if done:
            self.output.append(item)
        if not self.params.out_of_band:
            self.items[item["id"]] = item
            await self.conversation_item(item, done=done)

    async def call_mcp(self, rid: str) -> None:
        """full_events (OpenAI): one MCP call that completes and one that fails, once."""
        if self.called_mcp or not self.full or "response.mcp_call.completed" not in self.extras:
            return
        self.called_mcp = True
        for outcome in ("completed", "failed"):
            index, item_id = len(self.output), self.new_id("mcp")
            item = {"id": item_id, "type": "mcp_call", "server_label": "fake_mcp",
                    "name": "echo", "arguments": ""}
            await self.output_item(rid, index, item, done=False)
            arguments = json.dumps({"text": outcome})
            ref = {"response_id": rid, "item_id": item_id, "output_index": index}
            await self.extra({"type": "response.mcp_call_arguments.delta",
                              "event_id": self.new_id("event"), **ref, "delta": arguments})
            await self.extra({"type": "response.mcp_call_arguments.done",
                              "event_id": self.new_id("event"), **ref, "arguments": arguments})
            for kind in ("in_progress", outcome):
                await self.extra({"type": f"response.mcp_call.{kind}",
                                  "event_id": self.new_id("event"), "item_id": item_id,
                                  "output_index": index})
            result = {"output": "ok"} if outcome == "completed" else {"error": {
                "type": "tool_execution_error", "message": "The fake MCP tool failed."}}
            await self.output_item(rid, index, {**item, "arguments": arguments, **result},
                                   done=True)

    async def call_tools(self, rid: str, action: Tools) -> None:
        self.last_calls = []
        for call in action.calls:
            index = len(self.output)
            call_id, item_id = self.new_id("call"), self.new_id("item")
            arguments = json.dumps(call.args)
            item = {"id": item_id, "object": "realtime.item", "type": "function_call",
                    "call_id": call_id, "name": call.name, "arguments": ""}
            await self.output_item(rid, index, {**item, "status": "in_progress"}, done=False)
            await self.emit({"type": "response.function_call_arguments.delta",
                             "event_id": self.new_id("event"), "response_id": rid,
                             "item_id": item_id, "output_index": index, "call_id": call_id,
                             "delta": arguments})
            named = {"name": call.name} if self.names.call_name else {}
            await self.emit({"type": "response.function_call_arguments.done",
                             "event_id": self.new_id("event"), "response_id": rid,
                             "item_id": item_id, "output_index": index, "call_id": call_id,
                             **named, "arguments": arguments})
            await self.output_item(rid, index, {**item, "arguments": arguments,
                                                "status": "completed"}, done=True)
            self.last_calls.append(call_id)

    def _part(self, rid: str, item_id: str, content_index: int = 0) -> dict[str, Any]:
        return {"event_id": self.new_id("event"), "response_id": rid, "item_id": item_id,
                "output_index": 0, "content_index": content_index}

    async def write_text(self, rid: str, text: str) -> None:
        """A text-only response: text deltas, no audio."""
        item_id = self.new_id("item")
        message = {"id": item_id, "object": "realtime.item", "type": "message",
                   "role": "assistant", "content": []}
        await self.output_item(rid, 0, {**message, "status": "in_progress"}, done=False)
        await self.emit({"type": "response.content_part.added", **self._part(rid, item_id),
                         "part": {"type": "text", "text": ""}})
        for number, (delta, done) in enumerate(self.names.text_events):
            send = self.emit if number == 0 else self.extra
            await send({"type": delta, **self._part(rid, item_id), "delta": text})
            await send({"type": done, **self._part(rid, item_id), "text": text})
        await self.emit({"type": "response.content_part.done", **self._part(rid, item_id),
                         "part": {"type": "text", "text": text}})
        status = self.speech_status
        await self.output_item(rid, 0, {**message, "status": status, "content": [
            {"type": self.names.text_content, "text": text}]}, done=True)
        await self.done(self.response_event("response.done", rid, status, self.status_details()))

    def status_details(self) -> dict[str, Any] | None:
        if self.speech_status == "incomplete":
            return {"type": "incomplete", "reason": "max_output_tokens"}
        return None

    async def text_part(self, rid: str, item_id: str, text: str) -> None:
        """full_events: a text content part next to the audio (content index 1)."""
        if not self.full or self.names.text_events[0][0] not in self.extras:
            return
        self.text_parts[item_id] = text
        await self.emit({"type": "response.content_part.added", **self._part(rid, item_id, 1),
                         "part": {"type": "text", "text": ""}})
        for delta, done in self.names.text_events:
            await self.extra({"type": delta, **self._part(rid, item_id, 1), "delta": text})
            await self.extra({"type": done, **self._part(rid, item_id, 1), "text": text})
        await self.emit({"type": "response.content_part.done", **self._part(rid, item_id, 1),
                         "part": {"type": "text", "text": text}})

    async def start_speech(self, rid: str, text: str) -> None:
        item_id = self.new_id("item")
        message = {"id": item_id, "object": "realtime.item", "type": "message",
                   "role": "assistant", "content": []}
        await self.output_item(rid, 0, {**message, "status": "in_progress"}, done=False)
        await self.emit({"type": "response.content_part.added", **self._part(rid, item_id),
                         "part": {"type": "audio", "transcript": ""}})
        await self.emit({"type": self.names.transcript_delta, **self._part(rid, item_id),
                         "delta": text})
        await self.text_part(rid, item_id, text)
        self.speech = Speech(rid, item_id, text, self.speech_pcm(text))
        self.item_audio[item_id] = 0
        await self.extra({"type": "output_audio_buffer.started",
                          "event_id": self.new_id("event"), "response_id": rid})
        await self.pump()

    async def pump(self) -> None:
        speech = self.speech
        if speech is None or self.hung:
            return
        chunk = speech.pcm[speech.pos:speech.pos + self.chunk_samples()]
        speech.pos += len(chunk)
        self.item_audio[speech.item_id] = speech.pos
        await self.emit({"type": self.names.audio_delta, **self._part(speech.response_id,
                                                                      speech.item_id),
                         "delta": b64_pcm(chunk)})
        if self.scenario.disconnect_on_response == self.responses:
            self.drop()
            return
        if speech.pos >= len(speech.pcm):
            self.speech = None
            await self.finish_speech(speech, self.speech_status, self.status_details())

    async def finish_speech(self, speech: Speech, status: str,
                            details: dict[str, Any] | None = None) -> None:
        rid, item_id = speech.response_id, speech.item_id
        await self.emit({"type": self.names.audio_done, **self._part(rid, item_id)})
        await self.emit({"type": self.names.transcript_done, **self._part(rid, item_id),
                         "transcript": speech.text})
        await self.emit({"type": "response.content_part.done", **self._part(rid, item_id),
                         "part": {"type": "audio", "transcript": speech.text}})
        content = [{"type": self.names.audio_content, "transcript": speech.text}]
        if item_id in self.text_parts:
            content.append({"type": self.names.text_content, "text": self.text_parts[item_id]})
        item = {"id": item_id, "object": "realtime.item", "type": "message",
                "role": "assistant", "status": "completed" if status == "completed"
                else "incomplete", "content": content}
        await self.output_item(rid, 0, item, done=True)
        if status != "cancelled":
            await self.extra({"type": "output_audio_buffer.stopped",
                              "event_id": self.new_id("event"), "response_id": rid})
        done = self.response_event("response.done", rid, status, details)
        if status == "cancelled":
            await self.emit(done)
        else:
            await self.done(done)

    async def cancel(self, reason: str) -> None:
        rid = self.active
        if rid is None:
            return
        speech, self.speech = self.speech, None
        self.deferred = [e for e in self.deferred if e.get("type") != "response.done"]
        self.active = None
        details = {"type": "cancelled", "reason": reason}
        if speech is None:
            await self.emit(self.response_event("response.done", rid, "cancelled", details))
            return
        await self.extra({"type": "output_audio_buffer.cleared",
                          "event_id": self.new_id("event"), "response_id": rid})
        await self.finish_speech(speech, "cancelled", details)

    async def finished(self, event: dict[str, Any]) -> None:
        if event.get("type") == "response.done":
            self.active = None


class OpenAISession(OpenAIFamilySession):
    voices = OPENAI_VOICES
    tools_need_choice_auto = True
    refuse_overlapping_create = True
    extras = frozenset({
        "conversation.created", "conversation.item.added", "conversation.item.created",
        "conversation.item.done",
        "conversation.item.input_audio_transcription.delta",
        "conversation.item.input_audio_transcription.segment",
        "conversation.item.input_audio_transcription.completed",
        "conversation.item.input_audio_transcription.failed",
        "input_audio_buffer.dtmf_event_received", "input_audio_buffer.timeout_triggered",
        "output_audio_buffer.started", "output_audio_buffer.stopped",
        "output_audio_buffer.cleared", "rate_limits.updated",
        "response.output_text.delta", "response.output_text.done",
        "mcp_list_tools.in_progress", "mcp_list_tools.completed", "mcp_list_tools.failed",
        "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done",
        "response.mcp_call.in_progress", "response.mcp_call.completed",
        "response.mcp_call.failed",
    })
    """Every unsolicited type of the SDK's ``RealtimeServerEvent`` union."""

    def turn_detection(self) -> dict[str, Any] | None:
        audio_in = ((self.config or {}).get("audio") or {}).get("input") or {}
        detection = audio_in.get("turn_detection", {"type": "server_vad"})
        return detection if isinstance(detection, dict) else None


class GrokSession(OpenAIFamilySession):
    names = XAI
    hang_on_early_create = True
    cancels_on_speech = False
    """pipecat's changelog for its xAI realtime service: under server VAD an interruption needs
    ``response.cancel`` (and ``conversation.item.truncate``) from the client."""
    vad_types = ("server_vad",)
    turn_detection_param = "session.turn_detection.type"
    client_events = GA_CLIENT_EVENTS - {"conversation.item.retrieve", "output_audio_buffer.clear"}
    extras = frozenset({
        "ping", "conversation.item.added", "conversation.item.created",
        "conversation.item.done",
        "conversation.item.input_audio_transcription.delta",
        "conversation.item.input_audio_transcription.updated",
        "conversation.item.input_audio_transcription.completed",
        "input_audio_buffer.timeout_triggered", "rate_limits.updated",
        "response.output_text.delta", "response.output_text.done",
        "response.text.delta", "response.text.done",
    })

    async def on_open(self) -> None:
        # xAI's first message (docs.x.ai voice agent guide; pipecat's ConversationCreated).
        await self.emit(self.conversation_created())

    def voice_of(self, session: dict[str, Any]) -> str | None:
        voice = session.get("voice")
        return voice if isinstance(voice, str) else None

    def session_snapshot(self) -> dict[str, Any]:
        return {"id": "sess_fake", **(self.config or {})}


class StepFunSession(OpenAIFamilySession):
    names = BETA
    vad_by_default = False
    vad_types = ("server_vad",)
    """StepFun: turn detection off by default; ``server_vad`` is the only type it takes."""
    turn_detection_param = "session.turn_detection.type"
    cancels_on_speech = False
    default_modalities = ("text", "audio")
    client_events = GA_CLIENT_EVENTS - {"conversation.item.retrieve", "output_audio_buffer.clear"}
    extras = frozenset({
        "conversation.created", "conversation.item.created",
        "conversation.item.input_audio_transcription.completed",
        "conversation.item.input_audio_transcription.failed",
        "rate_limits.updated", "response.text.delta", "response.text.done",
        "response.thinking.delta", "response.thinking.done",
    })

    def voice_of(self, session: dict[str, Any]) -> str | None:
        voice = session.get("voice")
        return voice if isinstance(voice, str) else None

    def check_modalities(self, modalities: list[str]) -> None:
        if "text" not in modalities:  # beta: ["text"] or ["text", "audio"]
            raise RequestError(f"Invalid modalities {modalities}: use ['text'] or "
                               "['text', 'audio'].", "response.modalities")

    def response_voice(self, response: dict[str, Any]) -> str | None:
        voice = response.get("voice")
        return voice if isinstance(voice, str) else None

    def session_snapshot(self) -> dict[str, Any]:
        return {"id": "sess_fake", **(self.config or {})}

    async def text_part(self, rid: str, item_id: str, text: str) -> None:
        """StepFun's reasoning models think aloud before they speak (Step-Realtime-Console's
        ``response.thinking.*`` handlers), then the beta text part."""
        if self.full:
            for kind, payload in (("delta", {"delta": "thinking"}), ("done", {})):
                await self.extra({"type": f"response.thinking.{kind}",
                                  **self._part(rid, item_id), **payload})
        await super().text_part(rid, item_id, text)


# --------------------------------------------------------------------------- servers


class SdkCheckedFake(FakeRealtimeServer):
    """Validates every message both ways against the ``openai`` SDK's realtime unions: the
    event must validate and carry no field its model does not declare (a misspelled or
    renamed field is a violation even though the SDK's models would keep it as an extra).
    Server event types outside the union are left alone (deliberately off-protocol events,
    and a provider's own additions)."""

    sdk_types: ClassVar[str]
    """``openai.types.realtime`` (GA) or ``openai.types.beta.realtime``."""
    server_extras_allowed: ClassVar[frozenset[str]] = frozenset({".session.id"})
    """Documented fields the SDK's models lack (the session id in session events)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        import importlib

        module = importlib.import_module(self.sdk_types)
        client, server = module.RealtimeClientEvent, module.RealtimeServerEvent
        self._client_model: TypeAdapter[Any] = TypeAdapter(client)
        self._server_model: TypeAdapter[Any] = TypeAdapter(server)
        self.server_types = frozenset(
            t for arm in _union_arms(server) for t in _literal_types(arm))
        """The SDK union's server event types."""

    def check_client_event(self, message: dict[str, Any]) -> None:
        self._check("client", self._client_model, message, frozenset())

    def check_server_event(self, event: dict[str, Any]) -> None:
        if event.get("type") in self.server_types:
            self._check("server", self._server_model, event, self.server_extras_allowed)

    def _check(self, side: str, model: TypeAdapter[Any], message: dict[str, Any],
               allowed: frozenset[str]) -> None:
        try:
            parsed = model.validate_python(message)
        except ValidationError as exc:
            self.violations.append(f"{side} {message.get('type')}: {exc}")
            return
        extras = [f for f in undeclared_fields(parsed) if f not in allowed]
        if extras:
            self.violations.append(f"{side} {message.get('type')}: undeclared fields {extras}")


class OpenAIFake(SdkCheckedFake):
    """OpenAI realtime (GA), checked against the SDK's GA models both ways."""

    session_class = OpenAISession
    sdk_types = "openai.types.realtime"


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


class StepFunFake(SdkCheckedFake):
    """StepFun realtime: the OpenAI beta protocol (checked against the SDK's beta models both
    ways), turn detection off unless the session asks for ``server_vad``."""

    session_class = StepFunSession
    sdk_types = "openai.types.beta.realtime"

    def check_client_event(self, message: dict[str, Any]) -> None:
        super().check_client_event(message)
        if message.get("type") != "session.update":
            return
        session = message.get("session", {})
        expected = {"modalities": ["text", "audio"], "input_audio_format": "pcm16",
                    "output_audio_format": "pcm16"}
        problems = [f"{k}={session.get(k)!r}" for k, v in expected.items()
                    if k in session and session.get(k) != v]
        detection = session.get("turn_detection")
        if detection is not None and detection.get("type") != "server_vad":
            problems.append(f"turn_detection={detection!r} (StepFun takes server_vad or null)")
        if problems:
            self.violations.append(f"stepfun session.update: {problems}")


def undeclared_fields(model: Any, path: str = "") -> list[str]:
    """Fields of a validated SDK model that its class does not declare (pydantic extras)."""
    from pydantic import BaseModel

    found: list[str] = []
    if isinstance(model, BaseModel):
        found += [f"{path}.{k}" for k in (model.model_extra or {})]
        for name in type(model).model_fields:
            found += undeclared_fields(getattr(model, name), f"{path}.{name}")
    elif isinstance(model, list):
        for index, item in enumerate(model):
            found += undeclared_fields(item, f"{path}[{index}]")
    return found


def _union_arms(union: Any) -> list[Any]:
    import typing

    args = typing.get_args(union)
    if typing.get_origin(union) is typing.Annotated:
        args = typing.get_args(args[0])
    return list(args)


def _literal_types(model: Any) -> list[str]:
    import typing

    return list(typing.get_args(model.model_fields["type"].annotation))
