"""OpenAI realtime adapter (``openai-realtime[:MODEL]``), GA protocol over a websocket.

D.2 fixes, each with a test in ``tests/adapters/test_pitfalls.py``:

* ``tool_choice="auto"`` in the session (without it the model never calls tools);
* the voice clamped to OpenAI's allowlist (an unknown voice rejects the whole
  ``session.update``, and the tools sent with it silently vanish);
* ``response.create`` coalesced against the active response (no
  ``conversation_already_has_active_response``);
* barge-in: the server's ``input_audio_buffer.speech_started`` → ``Interrupted``, and
  ``conversation.item.truncate`` at the position the user actually heard.

Server turn detection (``server_vad``) decides when the user's turn ends and creates the
response; the adapter only creates responses itself to continue after tool outputs.
"""

from __future__ import annotations

from collections.abc import Mapping

from runtime.agents.base import AgentSessionConfig
from runtime.agents.providers._openai_style import (
    OpenAIStyleAdapter,
    function_tools,
)
from runtime.agents.providers._realtime import (
    ProviderSettings,
    clamp_voice,
    settings_from_env,
    with_query,
)
from runtime.agents.providers.openai_realtime.events import (
    CATALOG,
    DEFAULT_VOICE,
    RATE,
    VOICES,
    AudioOutput,
    RealtimeSession,
    SessionAudio,
    SessionUpdate,
)

KIND = "openai-realtime"
DEFAULT_MODEL = "gpt-realtime-2.1"
"""GPT-realtime-2.1 (paper §5), a model id of the ``openai`` SDK's realtime types."""
DEFAULT_URL = "wss://api.openai.com/v1/realtime"
URL_ENV = "APEX_OPENAI_REALTIME_URL"
KEY_ENV = "OPENAI_API_KEY"
VOICE_ENV = "APEX_OPENAI_REALTIME_VOICE"


class OpenAIRealtimeAdapter(OpenAIStyleAdapter):
    catalog = CATALOG

    def endpoint(self) -> str:
        return with_query(self.settings.url, model=self.settings.model)

    def session(self, config: AgentSessionConfig) -> SessionUpdate:
        voice = clamp_voice(KIND, config.voice or self.settings.voice, VOICES, DEFAULT_VOICE)
        return SessionUpdate(session=RealtimeSession(
            instructions=config.instructions,
            audio=SessionAudio(output=AudioOutput(voice=voice)),
            tools=function_tools(config.tools),
            tool_choice="auto",
        ))

    async def start_session(self, config: AgentSessionConfig) -> None:
        await self.handshake(self.session(config))


def make_adapter(model: str | None, env: Mapping[str, str]) -> OpenAIRealtimeAdapter:
    """``openai-realtime[:MODEL]``; reads the endpoint, key and voice from ``env`` (no I/O)."""
    settings: ProviderSettings = settings_from_env(
        env, kind=KIND, model=model, default_model=DEFAULT_MODEL, url_env=URL_ENV,
        default_url=DEFAULT_URL, key_env=KEY_ENV, voice_env=VOICE_ENV,
        default_voice=None, input_rate=RATE, output_rate=RATE,
    )
    return OpenAIRealtimeAdapter(settings)
