"""Wire models of the OpenAI realtime protocol (GA, ``/v1/realtime``) used by this adapter.

Server events: :data:`CATALOG` lists every type in the ``openai`` SDK's ``RealtimeServerEvent``
union (``tests/adapters/test_wire_drift.py`` checks the two sets stay equal). The ones the
adapter acts on have typed models; the rest are :class:`Ignored` by name. A type outside the
catalog raises a protocol error.

Client events: the session setup below; the per-turn messages (append, function output,
``response.create``, truncate) are the shared ones in :mod:`.._openai_style`. The fake server
validates everything this adapter sends against the SDK's ``RealtimeClientEvent`` models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from runtime.agents.providers._openai_style import (
    Catalog,
    ClientEvent,
    handled,
    ignored,
)

VOICES: tuple[str, ...] = (
    "alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse", "marin", "cedar",
)
"""OpenAI's built-in realtime voices (the SDK's ``RealtimeAudioConfigOutput.voice``)."""
DEFAULT_VOICE = "marin"
RATE = 24_000
"""``audio/pcm`` on the OpenAI realtime API is 24 kHz mono PCM16LE, both ways."""


Modality = Literal["audio", "text"]


def _audio_only() -> list[Modality]:
    return ["audio"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AudioFormat(_Strict):
    type: Literal["audio/pcm"] = "audio/pcm"
    rate: Literal[24000] = 24000


class TurnDetection(_Strict):
    type: Literal["server_vad"] = "server_vad"
    create_response: bool = True
    interrupt_response: bool = True


class AudioInput(_Strict):
    format: AudioFormat = Field(default_factory=AudioFormat)
    turn_detection: TurnDetection = Field(default_factory=TurnDetection)


class AudioOutput(_Strict):
    format: AudioFormat = Field(default_factory=AudioFormat)
    voice: str


class SessionAudio(_Strict):
    input: AudioInput = Field(default_factory=AudioInput)
    output: AudioOutput


class RealtimeSession(_Strict):
    type: Literal["realtime"] = "realtime"
    instructions: str
    output_modalities: list[Modality] = Field(default_factory=_audio_only)
    audio: SessionAudio
    tools: list[dict[str, Any]]
    tool_choice: Literal["auto", "none", "required"] = "auto"
    """D.2: without ``tool_choice="auto"`` the model never called a tool (0% AFA)."""


class SessionUpdate(ClientEvent):
    type: Literal["session.update"] = "session.update"
    session: RealtimeSession


CATALOG = Catalog("openai-realtime", {
    **handled(),
    **ignored(
        "conversation.created", "conversation.item.created", "conversation.item.added",
        "conversation.item.done", "conversation.item.deleted", "conversation.item.retrieved",
        "conversation.item.truncated",
        "conversation.item.input_audio_transcription.completed",
        "conversation.item.input_audio_transcription.delta",
        "conversation.item.input_audio_transcription.failed",
        "conversation.item.input_audio_transcription.segment",
        "input_audio_buffer.cleared", "input_audio_buffer.committed",
        "input_audio_buffer.dtmf_event_received", "input_audio_buffer.speech_stopped",
        "input_audio_buffer.timeout_triggered",
        "output_audio_buffer.started", "output_audio_buffer.stopped",
        "output_audio_buffer.cleared",
        "rate_limits.updated",
        "response.content_part.added", "response.content_part.done",
        "response.output_text.delta", "response.output_text.done",
        "response.function_call_arguments.delta",
        "mcp_list_tools.in_progress", "mcp_list_tools.completed", "mcp_list_tools.failed",
        "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done",
        "response.mcp_call.in_progress", "response.mcp_call.completed",
        "response.mcp_call.failed",
    ),
})
