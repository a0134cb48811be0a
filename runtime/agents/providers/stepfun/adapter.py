"""StepFun realtime adapter (``stepfun[:MODEL]``, Step-Audio).

* PCM16 mono 24 kHz both ways (the runtime's rate: no resampling).
* Turn-taking on the client: an energy VAD (the scripted agent's :class:`EnergyVAD`) finds the
  end of each user utterance; the adapter then sends an explicit
  ``input_audio_buffer.commit`` followed by ``response.create`` (coalesced against an active
  response). Without the commit StepFun never answers.
* Tools as OpenAI-style function definitions.
* Barge-in: a user onset while agent audio is audible emits ``Interrupted``; if the response
  is still being generated the adapter sends ``response.cancel`` and drops what is left of it.
"""

from __future__ import annotations

from collections.abc import Mapping

from runtime.agents.base import AgentSessionConfig
from runtime.agents.providers._openai_style import (
    InputAudioBufferCommit,
    OpenAIStyleAdapter,
    function_tools,
)
from runtime.agents.providers._realtime import (
    ProviderSettings,
    clamp_voice,
    settings_from_env,
    with_query,
)
from runtime.agents.providers.stepfun.events import (
    CATALOG,
    DEFAULT_VOICE,
    RATE,
    STEP_AUDIO_2_VOICES,
    SessionUpdate,
    StepFunSession,
)
from runtime.agents.scripted import EnergyVAD
from runtime.core.audio import Pcm

KIND = "stepfun"
DEFAULT_MODEL = "stepaudio-3-realtime-preview"
"""Step-Audio3 (paper §5); the realtime model id of StepFun's StepAudio 3 Realtime page."""
DEFAULT_URL = "wss://api.stepfun.ai/v1/realtime"
URL_ENV = "APEX_STEPFUN_URL"
KEY_ENV = "STEPFUN_API_KEY"
VOICE_ENV = "APEX_STEPFUN_VOICE"


class StepFunAdapter(OpenAIStyleAdapter):
    catalog = CATALOG
    server_vad = False
    cancel_on_barge_in = True
    truncates = False

    def __init__(self, settings: ProviderSettings) -> None:
        super().__init__(settings)
        self.vad = EnergyVAD()
        self.commits = 0

    def endpoint(self) -> str:
        return with_query(self.settings.url, model=self.settings.model)

    def session(self, config: AgentSessionConfig) -> SessionUpdate:
        return SessionUpdate(session=StepFunSession(
            instructions=config.instructions,
            voice=self.voice(config.voice or self.settings.voice),
            tools=function_tools(config.tools),
        ))

    def voice(self, requested: str | None) -> str:
        """step-audio-2 models take only two voices: clamp to them (a refused session would
        lose the tools); other models get the requested voice."""
        if self.settings.model.startswith("step-audio-2"):
            return clamp_voice(KIND, requested, STEP_AUDIO_2_VOICES, DEFAULT_VOICE)
        return requested or DEFAULT_VOICE

    async def start_session(self, config: AgentSessionConfig) -> None:
        await self.handshake(self.session(config))

    async def on_user_frame(self, frame: Pcm, t_media_ms: int) -> None:
        change = self.vad.push(frame)
        if change == "onset":
            await self.barge_in()
        elif change == "end":
            self.commits += 1
            await self.send(InputAudioBufferCommit(event_id=self.next_id("commit")))
            await self.request_response()


def make_adapter(model: str | None, env: Mapping[str, str]) -> StepFunAdapter:
    """``stepfun[:MODEL]``; reads the endpoint, key and voice from ``env`` (no I/O)."""
    return StepFunAdapter(settings_from_env(
        env, kind=KIND, model=model, default_model=DEFAULT_MODEL, url_env=URL_ENV,
        default_url=DEFAULT_URL, key_env=KEY_ENV, voice_env=VOICE_ENV,
        default_voice=DEFAULT_VOICE, input_rate=RATE, output_rate=RATE,
    ))
