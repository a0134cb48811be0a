"""Wire models of xAI's Grok Voice Agent API (``wss://api.x.ai/v1/realtime``).

xAI speaks the OpenAI realtime *event names* (GA spelling: ``response.output_audio.delta``,
``response.output_audio_transcript.delta``/``.done``, ``response.function_call_arguments.done``)
with its own *session shape*: ``voice``, ``instructions``, ``turn_detection`` and the audio
formats sit directly in ``session``, and PCM carries an explicit sample rate. The server events
below are the OpenAI-compatible set xAI documents, plus the events public clients that ran
against the service have seen: ``ping`` (a keep-alive with a ``timestamp``; pipecat's
``services/xai/realtime/events.py`` ``PingEvent``), live transcription updates, the input
buffer's inactivity timeout, truncated/deleted items and text-only deltas. A type not listed
here is logged and ignored (``agent.protocol_unknown``) unless strict mode is on
(runtime/agents/errors.py ``strict_protocol``).
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

DEFAULT_VOICE = "Ara"
VOICES: tuple[str, ...] = ("Ara", "Rex", "Sal", "Eve", "Leo")
"""xAI's documented voice names. The paper (D.2) writes ``xai_ara``; the wire takes ``Ara``."""


def grok_voice(requested: str | None) -> str:
    """The wire name of a voice: a documented name in any case, or with the ``xai_`` prefix the
    paper uses, becomes the documented spelling; other names pass through (xAI adds voices)."""
    if not requested:
        return DEFAULT_VOICE
    bare = requested.removeprefix("xai_").removeprefix("XAI_")
    return next((v for v in VOICES if v.lower() == bare.lower()), requested)
RATES: tuple[int, ...] = (8_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000)
"""Sample rates xAI accepts for ``audio/pcm``; the adapter defaults to the runtime's 24 kHz."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PcmFormat(_Strict):
    type: Literal["audio/pcm"] = "audio/pcm"
    rate: int


class AudioDirection(_Strict):
    format: PcmFormat


class SessionAudio(_Strict):
    input: AudioDirection
    output: AudioDirection


class TurnDetection(_Strict):
    type: Literal["server_vad"] = "server_vad"


class GrokSession(_Strict):
    instructions: str
    voice: str
    turn_detection: TurnDetection = Field(default_factory=TurnDetection)
    audio: SessionAudio
    tools: list[dict[str, Any]]


class SessionUpdate(ClientEvent):
    type: Literal["session.update"] = "session.update"
    session: GrokSession


CATALOG = Catalog("grok", {
    **handled(),
    **ignored(
        "conversation.created", "conversation.item.added", "conversation.item.created",
        "conversation.item.done",
        "conversation.item.input_audio_transcription.completed",
        "input_audio_buffer.speech_stopped", "input_audio_buffer.committed",
        "input_audio_buffer.cleared",
        "response.content_part.added", "response.content_part.done",
        "response.output_text.delta", "response.output_text.done",
        "response.function_call_arguments.delta",
        "rate_limits.updated",
        # Seen from the real service by public clients (docs/adapters.md, "Grok"):
        "ping", "conversation.item.input_audio_transcription.updated",
        "conversation.item.input_audio_transcription.delta",
        "input_audio_buffer.timeout_triggered", "conversation.item.truncated",
        "conversation.item.deleted", "response.text.delta", "response.text.done",
    ),
})
