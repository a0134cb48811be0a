"""Wire models of StepFun's realtime API (``wss://api.stepfun.ai/v1/realtime``).

StepFun follows the OpenAI realtime *beta* protocol: event names ``response.audio.delta``,
``response.audio_transcript.delta``/``.done``, a flat session with ``modalities``,
``input_audio_format``/``output_audio_format`` (``pcm16``: mono 24 kHz PCM16LE) and
OpenAI-style function definitions in ``tools``. Server turn detection is off by default, so
the client commits the input buffer and asks for each response itself. As in the beta
protocol, ``response.function_call_arguments.done`` carries no function name (the shared
adapter takes it from the call's output item). Types outside the catalog raise a protocol
error in strict mode (StepFun documents no forward-compatible extras).
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

DEFAULT_VOICE = "qingchunshaonv"
STEP_AUDIO_2_VOICES: tuple[str, ...] = ("qingchunshaonv", "wenrounansheng")
"""The voices step-audio-2 models accept on the realtime API (others are refused with a 400);
other StepFun models take any voice id of the account's voice list."""
RATE = 24_000


Modality = Literal["text", "audio"]


def _text_and_audio() -> list[Modality]:
    return ["text", "audio"]


class StepFunSession(BaseModel):
    model_config = ConfigDict(extra="forbid")
    modalities: list[Modality] = Field(default_factory=_text_and_audio)
    """Fixed to ``["text", "audio"]`` by StepFun."""
    instructions: str
    voice: str
    input_audio_format: Literal["pcm16"] = "pcm16"
    output_audio_format: Literal["pcm16"] = "pcm16"
    tools: list[dict[str, Any]]


class SessionUpdate(ClientEvent):
    type: Literal["session.update"] = "session.update"
    session: StepFunSession


CATALOG = Catalog("stepfun", {
    **handled("response.audio"),
    **ignored(
        "conversation.created", "conversation.item.created", "conversation.item.deleted",
        "conversation.item.truncated",
        "conversation.item.input_audio_transcription.completed",
        "conversation.item.input_audio_transcription.failed",
        "input_audio_buffer.committed", "input_audio_buffer.cleared",
        "input_audio_buffer.speech_stopped",
        "response.content_part.added", "response.content_part.done",
        "response.text.delta", "response.text.done",
        "response.function_call_arguments.delta",
        "rate_limits.updated",
        # StepFun's reasoning models stream their thinking before they speak (StepFun's own
        # Step-Realtime-Console, src/lib/openai-realtime-api-beta/lib/conversation.js):
        "response.thinking.delta", "response.thinking.done",
    ),
})
