"""Wire models of OpenAI's Live API (``wss://api.openai.com/v1/live/sessions``).

Unlike the realtime API, the Live API names the model in the first client message,
``session.start``, not in the URL; audio is ``{type: audio/pcm, rate: 24000}`` (or 16000);
the voice is fixed at startup (default ``marin``). The voice model delegates cognition and
function calling to a backend Responses model (``session.delegation``); the backend's stream
reaches the client wrapped in ``response.event`` messages, tool results go back as
``response.item.create`` items and ``response.create`` continues the delegated response.

Server events: :data:`CATALOG` covers the ``openai`` SDK's ``live.ServerEvent`` union and
:data:`NESTED` the Responses stream (``responses.ResponseStreamEvent``) carried inside
``response.event`` (``tests/adapters/test_wire_drift.py`` keeps both equal to the SDK). The
adapter's models are in this module; anything outside the two sets raises.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime.agents.errors import UnknownWireEvent, WireProtocolError
from runtime.agents.providers._openai_style import Catalog, WireEvent, ignored

VOICES: tuple[str, ...] = (
    "alloy", "ash", "ballad", "beacon", "bossa", "cedar", "cinder", "coral", "delta", "echo",
    "gleam", "marin", "meridian", "quartz", "ripple", "sage", "shida", "shimmer", "stone",
    "tempo", "verse", "vesper", "willow",
)
"""Built-in Live voices (the SDK's ``live.BuiltInVoice``)."""
DEFAULT_VOICE = "marin"
RATES: tuple[int, ...] = (16_000, 24_000)


# --------------------------------------------------------------------------- client messages


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AudioPcm(_Strict):
    type: Literal["audio/pcm"] = "audio/pcm"
    rate: Literal[16000, 24000] = 24000


class AudioOutput(_Strict):
    voice: str = DEFAULT_VOICE


class SessionAudio(_Strict):
    format: AudioPcm = Field(default_factory=AudioPcm)
    output: AudioOutput = Field(default_factory=AudioOutput)


class ResponsesBackend(_Strict):
    model: str
    instructions: str
    tools: list[dict[str, Any]]
    tool_choice: Literal["auto"] = "auto"
    parallel_tool_calls: bool = True


class ResponsesDelegation(_Strict):
    type: Literal["responses"] = "responses"
    responses: ResponsesBackend


class LiveSession(_Strict):
    model: str
    instructions: str
    audio: SessionAudio
    delegation: ResponsesDelegation


class _Client(_Strict):
    event_id: str | None = None


class SessionStart(_Client):
    type: Literal["session.start"] = "session.start"
    session: LiveSession


class InputAudioAppend(_Client):
    type: Literal["session.input_audio.append"] = "session.input_audio.append"
    audio: str


class FunctionCallOutput(_Strict):
    type: Literal["function_call_output"] = "function_call_output"
    call_id: str
    output: str


class ResponseItemCreate(_Client):
    type: Literal["response.item.create"] = "response.item.create"
    item: FunctionCallOutput


class ResponseCreate(_Client):
    type: Literal["response.create"] = "response.create"


class SessionClose(_Client):
    type: Literal["session.close"] = "session.close"


# --------------------------------------------------------------------------- server events


class LiveError(BaseModel):
    model_config = ConfigDict(extra="allow")
    code: str = ""
    message: str = ""
    type: str = ""
    client_event_id: str | None = None
    param: str | None = None


class ErrorEvent(WireEvent):
    error: LiveError


class SessionStarted(WireEvent):
    session: dict[str, Any] = Field(default_factory=dict)


class SessionClosed(WireEvent):
    reason: str


class OutputAudioDelta(WireEvent):
    delta: str


class TranscriptDelta(WireEvent):
    delta: str
    start_ms: int = 0
    end_ms: int = 0


class OutputTranscriptDelta(TranscriptDelta):
    pass


class InputTranscriptDelta(TranscriptDelta):
    pass


class Delegation(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    target: str = ""


class DelegationCreated(WireEvent):
    delegation: Delegation


class ResponseEvent(WireEvent):
    """A Responses stream event from the backend, wrapped; parse ``event`` with :func:`nested`."""

    event: dict[str, Any]
    delegation_id: str | None = None


CATALOG = Catalog("gpt-live", {
    "error": ErrorEvent,
    "session.started": SessionStarted,
    "session.updated": SessionStarted,
    "session.closed": SessionClosed,
    "session.output_audio.delta": OutputAudioDelta,
    "session.output_transcript.delta": OutputTranscriptDelta,
    "session.input_transcript.delta": InputTranscriptDelta,
    "session.delegation.created": DelegationCreated,
    "response.event": ResponseEvent,
    **ignored(
        "info", "session.usage.updated",
        "session.input_audio.muted", "session.input_audio.unmuted",
        "session.output_audio.fixture.playing", "session.output_audio.fixture.played",
        "session.instructions.appended", "session.thinking.appended",
        "session.commentary.appended",
        "decision.event", "decision.item.created", "decision.item.deleted",
        # Sideband-only notifications (documented; harmless if a proxy forwards them).
        "session.input_audio.append", "transport.dtmf.received", "transport.dtmf.send",
        "transport.dtmf.sent", "transport.ringing", "transport.answered", "transport.failed",
    ),
})


# ------------------------------------------------------------------ nested Responses events


class NestedEvent(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str


class NestedResponse(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = ""
    status: str | None = None
    error: dict[str, Any] | None = None


class NestedLifecycle(NestedEvent):
    """``response.created`` / ``.in_progress`` / ``.completed`` / ``.failed`` / ``.incomplete``."""

    response: NestedResponse


class OutputItem(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None


class NestedOutputItemDone(NestedEvent):
    item: OutputItem


class NestedError(NestedEvent):
    code: str | None = None
    message: str = ""


NESTED_LIFECYCLE = (
    "response.created", "response.in_progress", "response.queued", "response.completed",
    "response.failed", "response.incomplete",
)

NESTED: dict[str, type[NestedEvent]] = {
    **dict.fromkeys(NESTED_LIFECYCLE, NestedLifecycle),
    "response.output_item.done": NestedOutputItemDone,
    "error": NestedError,
    **dict.fromkeys((
        "response.audio.delta", "response.audio.done", "response.audio.transcript.delta",
        "response.audio.transcript.done", "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done", "response.code_interpreter_call.completed",
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.interpreting", "response.compaction.compacting",
        "response.content_part.added", "response.content_part.done",
        "response.file_search_call.completed", "response.file_search_call.in_progress",
        "response.file_search_call.searching", "response.function_call_arguments.delta",
        "response.function_call_arguments.done", "response.shell_call_command.added",
        "response.shell_call_command.delta", "response.shell_call_command.done",
        "response.shell_call_output_content.delta", "response.shell_call_output_content.done",
        "response.output_item.added", "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done", "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done", "response.reasoning_text.delta",
        "response.reasoning_text.done", "response.refusal.delta", "response.refusal.done",
        "response.output_text.delta", "response.output_text.done",
        "response.web_search_call.completed", "response.web_search_call.in_progress",
        "response.web_search_call.searching", "response.image_generation_call.completed",
        "response.image_generation_call.generating",
        "response.image_generation_call.in_progress",
        "response.image_generation_call.partial_image", "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done", "response.mcp_call.completed",
        "response.mcp_call.failed", "response.mcp_call.in_progress",
        "response.mcp_list_tools.completed", "response.mcp_list_tools.failed",
        "response.mcp_list_tools.in_progress", "response.output_text.annotation.added",
        "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done",
    ), NestedEvent),
}
"""Responses stream event type → model (those the adapter does not act on: plain NestedEvent)."""


def nested(event: dict[str, Any]) -> NestedEvent:
    """The Responses stream event inside a ``response.event``; unknown types raise."""
    kind = event.get("type")
    model = NESTED.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise UnknownWireEvent(
            f"response.event/{kind}",
            f"gpt-live sent a response.event wrapping an unknown Responses event {kind!r}: "
            + json.dumps(event)[:200],
        )
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        raise WireProtocolError(f"gpt-live sent a malformed nested {kind!r} event: {exc}") from None
