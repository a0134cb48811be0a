"""xAI Grok Voice Agent adapter (``grok[:MODEL]``).

OpenAI-compatible event names are remapped onto the normalized events: audio from
``response.output_audio.delta``, transcripts from ``response.output_audio_transcript.*``,
tool calls from ``response.function_call_arguments.done``. D.2's parallel-tool-call hang is
avoided by the shared response lifecycle: every ``function_call_output`` of a response is
submitted before a single continuation ``response.create``.

Barge-in: xAI's server VAD sends ``input_audio_buffer.speech_started`` but does not stop the
response by itself (pipecat's xAI realtime service, changelog: interruptions under server VAD
must send ``response.cancel`` and ``conversation.item.truncate``): the adapter emits
``Interrupted``, drops the rest of that response, sends ``response.cancel`` while one is being
generated, and ``conversation.item.truncate`` with the heard position.

The wire sample rate defaults to the runtime's 24 kHz; ``APEX_GROK_SAMPLE_RATE`` picks another
rate xAI accepts (the audio is then resampled with soxr both ways).
"""

from __future__ import annotations

from collections.abc import Mapping

from runtime.agents.base import AgentSessionConfig
from runtime.agents.providers._openai_style import (
    OpenAIStyleAdapter,
    function_tools,
)
from runtime.agents.providers._realtime import env_rate, settings_from_env, with_query
from runtime.agents.providers.grok.events import (
    CATALOG,
    DEFAULT_VOICE,
    RATES,
    AudioDirection,
    GrokSession,
    PcmFormat,
    SessionAudio,
    SessionUpdate,
    grok_voice,
)
from runtime.core.audio import SAMPLE_RATE

KIND = "grok"
DEFAULT_MODEL = "grok-voice-think-fast-2.0"
DEFAULT_URL = "wss://api.x.ai/v1/realtime"
URL_ENV = "APEX_GROK_URL"
KEY_ENV = "XAI_API_KEY"
VOICE_ENV = "APEX_GROK_VOICE"
RATE_ENV = "APEX_GROK_SAMPLE_RATE"


class GrokAdapter(OpenAIStyleAdapter):
    catalog = CATALOG
    cancel_on_barge_in = True

    def endpoint(self) -> str:
        return with_query(self.settings.url, model=self.settings.model)

    def session(self, config: AgentSessionConfig) -> SessionUpdate:
        return SessionUpdate(session=GrokSession(
            instructions=config.instructions,
            voice=grok_voice(config.voice or self.settings.voice),
            audio=SessionAudio(
                input=AudioDirection(format=PcmFormat(rate=self.settings.input_rate)),
                output=AudioDirection(format=PcmFormat(rate=self.settings.output_rate)),
            ),
            tools=function_tools(config.tools),
        ))

    async def start_session(self, config: AgentSessionConfig) -> None:
        await self.handshake(self.session(config))


def make_adapter(model: str | None, env: Mapping[str, str]) -> GrokAdapter:
    """``grok[:MODEL]``; reads the endpoint, key, voice and wire rate from ``env`` (no I/O)."""
    rate = env_rate(env, RATE_ENV, SAMPLE_RATE, RATES)
    return GrokAdapter(settings_from_env(
        env, kind=KIND, model=model, default_model=DEFAULT_MODEL, url_env=URL_ENV,
        default_url=DEFAULT_URL, key_env=KEY_ENV, voice_env=VOICE_ENV,
        default_voice=DEFAULT_VOICE, input_rate=rate, output_rate=rate,
    ))
