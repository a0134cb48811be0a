"""OpenAI Live API adapter (``gpt-live[:MODEL]``).

* The model is named in ``session.start`` (never in the URL); audio
  ``{type: audio/pcm, rate: 24000}`` (``APEX_GPT_LIVE_SAMPLE_RATE=16000`` also works, with soxr
  resampling); the voice defaults to ``marin`` and is clamped to the built-in voices.
* Cognition and tools are delegated to a backend Responses model (``APEX_GPT_LIVE_BACKEND``,
  default ``gpt-5.6-sol``; reported scores characterize the composite system). Its function
  calls arrive as ``response.output_item.done`` inside ``response.event``; each result goes back
  as a ``response.item.create`` ``function_call_output`` and, once every call of the backend
  response has its output and that response completed, one ``response.create`` continues it.
* The Live API has no response boundaries for the voice layer (no ``response.done``, no
  transcript-done). The adapter closes an agent utterance when its audio has played out and
  nothing new arrived: it then emits the accumulated transcript (``TranscriptDone``) and
  ``ResponseDone``.
* Barge-in: the server handles turn-taking and stops speaking by itself; the client learns of
  the user's speech from ``session.input_transcript.delta``. If agent audio is still audible at
  that moment the adapter emits the transcript so far and ``Interrupted``. The Live API takes
  no truncation message on the primary websocket, so nothing goes back on the wire.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from runtime.agents.base import (
    AgentSessionConfig,
    Hangup,
    InfrastructureError,
    Interrupted,
    ResponseDone,
    ToolCallRequest,
    TranscriptDelta,
    TranscriptDone,
)
from runtime.agents.errors import ErrorCategory, ProviderError, connection_lost, provider_error
from runtime.agents.providers._openai_style import function_tools, parse_arguments
from runtime.agents.providers._realtime import (
    GatedRealtimeAdapter,
    ProviderSettings,
    clamp_voice,
    decode_pcm16,
    env_rate,
    settings_from_env,
)
from runtime.agents.providers.gpt_live.events import (
    CATALOG,
    DEFAULT_VOICE,
    RATES,
    VOICES,
    AudioOutput,
    AudioPcm,
    DelegationCreated,
    ErrorEvent,
    FunctionCallOutput,
    InputAudioAppend,
    InputTranscriptDelta,
    LiveSession,
    NestedError,
    NestedLifecycle,
    NestedOutputItemDone,
    OutputAudioDelta,
    OutputTranscriptDelta,
    ResponseCreate,
    ResponseEvent,
    ResponseItemCreate,
    ResponsesBackend,
    ResponsesDelegation,
    SessionAudio,
    SessionClose,
    SessionClosed,
    SessionStart,
    SessionStarted,
    nested,
)
from runtime.audio import SAMPLE_RATE

KIND = "gpt-live"
DEFAULT_MODEL = "gpt-live-1"
DEFAULT_BACKEND = "gpt-5.6-sol"
DEFAULT_URL = "wss://api.openai.com/v1/live/sessions"
URL_ENV = "APEX_GPT_LIVE_URL"
KEY_ENV = "OPENAI_API_KEY"
VOICE_ENV = "APEX_GPT_LIVE_VOICE"
RATE_ENV = "APEX_GPT_LIVE_SAMPLE_RATE"
BACKEND_ENV = "APEX_GPT_LIVE_BACKEND"

UTTERANCE = "live-utterance"
"""Item id of the Live voice's audio (the primary websocket carries no item ids)."""


class GptLiveAdapter(GatedRealtimeAdapter):
    def __init__(self, settings: ProviderSettings) -> None:
        super().__init__(settings)
        self._text: list[str] = []
        self._open = False
        """An agent utterance is under way (output arrived since it was last closed)."""
        self._fresh = False
        """Output arrived during the current poll."""
        self._utterance = 0

    def endpoint(self) -> str:
        return self.settings.url

    def audio_message(self, audio_b64: str) -> InputAudioAppend:
        return InputAudioAppend(audio=audio_b64)

    def parse(self, raw: str | bytes) -> Any:
        return CATALOG.parse(raw)

    def session(self, config: AgentSessionConfig) -> SessionStart:
        voice = clamp_voice(KIND, config.voice or self.settings.voice, VOICES, DEFAULT_VOICE)
        rate = 24000 if self.settings.input_rate == 24000 else 16000
        return SessionStart(session=LiveSession(
            model=self.settings.model,
            instructions=config.instructions,
            audio=SessionAudio(format=AudioPcm(rate=rate), output=AudioOutput(voice=voice)),
            delegation=ResponsesDelegation(responses=ResponsesBackend(
                model=self.settings.options.get("backend", DEFAULT_BACKEND),
                instructions=config.instructions,
                tools=function_tools(config.tools),
            )),
        ))

    async def start_session(self, config: AgentSessionConfig) -> None:
        start = self.session(config)
        start.event_id = self.next_id("setup")
        await self.send(start)

        def answered(event: Any) -> bool:
            return isinstance(event, SessionStarted | ErrorEvent)

        for event in await self.await_event(answered, "session.started"):
            if isinstance(event, ErrorEvent):
                raise provider_error(
                    f"gpt-live rejected session.start: {event.error.message}"
                    + (f" (param {event.error.param})" if event.error.param else ""),
                    error_type=event.error.type, code=event.error.code, during_handshake=True,
                )

    # ------------------------------------------------------------------ tools

    def response_create(self, event_id: str) -> ResponseCreate:
        return ResponseCreate(event_id=event_id)

    def tool_output(self, event_id: str, call_id: str, output_json: str) -> ResponseItemCreate:
        return ResponseItemCreate(
            event_id=event_id, item=FunctionCallOutput(call_id=call_id, output=output_json),
        )

    # ------------------------------------------------------------------ utterances

    def _close_utterance(self) -> None:
        self.flush_audio(f"{UTTERANCE}-{self._utterance}")
        text = "".join(self._text).strip()
        if text:
            self.emit(TranscriptDone(text=text))
        self._text, self._open = [], False

    async def after_events(self, t_media_ms: int) -> None:
        if self._open and not self._fresh and not self.playout.audible:
            self._close_utterance()
            self.emit(ResponseDone())
        self._fresh = False

    # ------------------------------------------------------------------ events

    async def handle(self, event: Any) -> None:
        if isinstance(event, OutputAudioDelta):
            if not self._open:
                self._utterance += 1
            self._open = self._fresh = True
            self.emit_audio(decode_pcm16(event.delta), f"{UTTERANCE}-{self._utterance}")
        elif isinstance(event, OutputTranscriptDelta):
            self._open = self._fresh = True
            self._text.append(event.delta)
            self.emit(TranscriptDelta(text=event.delta))
        elif isinstance(event, InputTranscriptDelta):
            if self.playout.audible:
                self._close_utterance()
                self.emit(Interrupted(reason="barge_in"))
        elif isinstance(event, ResponseEvent):
            await self._on_backend(event)
        elif isinstance(event, DelegationCreated):
            pass  # metadata only; the backend's stream follows in response.event
        elif isinstance(event, ErrorEvent):
            err = event.error
            error = provider_error(
                f"gpt-live: {err.message}" + (f" (param {err.param})" if err.param else ""),
                error_type=err.type, code=err.code,
            )
            self.gate.refused(err.client_event_id)
            if error.category is ErrorCategory.PROTOCOL and err.client_event_id and not (
                err.client_event_id.startswith("setup")
            ):
                error = ProviderError(error.category, error.message, error.code, fatal=False)
            self.fail(error)
        elif isinstance(event, SessionClosed):
            await self._on_closed(event.reason)

    async def _on_backend(self, wrapper: ResponseEvent) -> None:
        event = nested(wrapper.event)
        if isinstance(event, NestedOutputItemDone):
            item = event.item
            if item.type == "function_call" and item.call_id and item.name:
                self.gate.tool_call(item.call_id)
                self.emit(ToolCallRequest(
                    call_id=item.call_id, name=item.name,
                    args=parse_arguments(item.arguments or ""),
                ))
        elif isinstance(event, NestedLifecycle):
            if event.type in ("response.created", "response.in_progress", "response.queued"):
                self.gate.started()
                return
            self.gate.finished()
            if event.type == "response.failed":
                error = event.response.error or {}
                self.fail(provider_error(
                    f"gpt-live backend response {event.response.id} failed: "
                    f"{error.get('message') or error.get('code') or 'no detail'}",
                    code=str(error.get("code") or "") or None,
                ))
            await self._continue_if_due()
        elif isinstance(event, NestedError):
            self.fail(provider_error(f"gpt-live backend: {event.message}", code=event.code))

    async def _on_closed(self, reason: str) -> None:
        if reason == "close_requested":
            return
        if reason == "remote_hangup":
            self.emit(Hangup())
        elif reason == "content":
            self.fail(ProviderError(
                ErrorCategory.SERVER, "gpt-live closed the session (content filter)", "content",
                fatal=True,
            ))
        else:  # connection_lost, expired: the session is gone under us
            raise connection_lost(f"gpt-live closed the session: {reason}")

    async def close(self) -> None:
        if self.transport.connected and not self.failed:
            # Best effort on the way out: the socket may be half gone already.
            with contextlib.suppress(InfrastructureError):
                await self.send(SessionClose(event_id=self.next_id("close")))
        await super().close()


def make_adapter(model: str | None, env: Mapping[str, str]) -> GptLiveAdapter:
    """``gpt-live[:MODEL]``; reads the endpoint, key, voice, rate and backend from ``env``."""
    rate = env_rate(env, RATE_ENV, SAMPLE_RATE, RATES)
    backend = env.get(BACKEND_ENV, "").strip() or DEFAULT_BACKEND
    return GptLiveAdapter(settings_from_env(
        env, kind=KIND, model=model, default_model=DEFAULT_MODEL, url_env=URL_ENV,
        default_url=DEFAULT_URL, key_env=KEY_ENV, voice_env=VOICE_ENV, default_voice=None,
        input_rate=rate, output_rate=rate, options={"backend": backend},
    ))
