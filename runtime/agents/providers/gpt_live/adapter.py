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
  transcript-done), and the real service streams output audio continuously, *silence
  included* (tau2-bench's notes from the service). The adapter therefore gates the output on
  energy: a chunk quieter than :data:`SILENCE_RMS` is silence. Silence between utterances is
  dropped; silence inside one is held back and played only if speech resumes (a pause). An
  utterance closes once :data:`END_SILENCE_MS` of silence has arrived, or, on a service that
  simply stops sending, once its audio has played out and nothing new arrived: the adapter
  then emits the accumulated transcript (``TranscriptDone``) and ``ResponseDone``.
* Barge-in: the server handles turn-taking and stops speaking by itself. Input transcripts lag
  the user's speech by 600-1,000 ms, so the adapter watches the microphone audio it forwards
  (an energy VAD): when the agent's speech turns to silence while the user, who started
  talking during it, is still talking, the service has yielded and the adapter emits the
  transcript so far and ``Interrupted`` at once. A ``session.input_transcript.delta`` while
  agent speech is audible and no new speech arrived with it is the fallback signal. Speech
  that keeps coming while the user talks (a backchannel the service talked over) is no
  barge-in. The Live API takes no truncation message on the primary websocket, so nothing
  goes back on the wire.
* Continuation: the backend's Responses stream is expected to end each delegated response
  with a terminal lifecycle event (``response.completed``/``failed``/``incomplete``). If every
  function call of the response has its output and the backend has been quiet for
  :data:`BACKEND_IDLE_MS` without one, the response is taken as over (logged at INFO; this
  is not the agent's error) and the continuation is sent; a late terminal event of that
  response is then ignored.
"""

from __future__ import annotations

import contextlib
import logging
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
from runtime.agents.scripted import EnergyVAD
from runtime.core.audio import SAMPLE_RATE, Pcm, rms

log = logging.getLogger(__name__)

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

SILENCE_RMS = 60.0
"""An output chunk whose RMS is below this (about -55 dBFS) is silence, not speech."""
END_SILENCE_MS = 600
"""Streamed silence that ends an utterance."""
YIELD_SILENCE_MS = 80
"""Streamed silence while the user talks over the agent that means the service yielded."""
BACKEND_IDLE_MS = 1000
"""A backend response whose calls all have outputs and that has been quiet this long (media
time) without a terminal lifecycle event is taken as over."""


class GptLiveAdapter(GatedRealtimeAdapter):
    def __init__(self, settings: ProviderSettings) -> None:
        super().__init__(settings)
        self._text: list[str] = []
        self._open = False
        """An agent utterance is under way (output arrived since it was last closed)."""
        self._arrived = False
        """Any output (silence included) arrived during the current poll."""
        self._utterance = 0
        self._held: list[Pcm] = []
        """Silence inside the open utterance, played only if speech resumes."""
        self._held_ms = 0
        self._last_output_ms = 0
        self._user_vad = EnergyVAD()
        self._talked_over = False
        """The user began speaking while the open utterance was audible and still is."""
        self._input_transcript = False
        """A user transcript delta arrived during the current poll."""
        self._speech_arrived = False
        """Non-silent agent audio arrived during the current poll."""
        self._backend_id: str | None = None
        self._backend_quiet_since = 0
        self._abandoned: set[str] = set()

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
        self._held, self._held_ms, self._talked_over = [], 0, False

    def _barge_in(self) -> None:
        self._close_utterance()
        self.emit(Interrupted(reason="barge_in"))

    async def on_user_frame(self, frame: Pcm, t_media_ms: int) -> None:
        change = self._user_vad.push(frame)
        if change == "onset" and self._open and (self.playout.audible or not self._held):
            self._talked_over = True  # the agent was mid-speech, not in a pause or done
        elif change == "end":
            self._talked_over = False

    async def after_events(self, t_media_ms: int) -> None:
        if (self._input_transcript and self._open and self.playout.audible
                and not self._speech_arrived):
            self._barge_in()  # the user's words, and the agent's speech stopped coming
        if self._open and not self.playout.audible:
            stalled = t_media_ms - self._last_output_ms >= END_SILENCE_MS
            if self._held_ms >= END_SILENCE_MS or stalled or (
                not self._arrived and not self._held_ms
            ):
                self._close_utterance()
                self.emit(ResponseDone())
        self._arrived = self._speech_arrived = self._input_transcript = False
        await self._backend_idle(t_media_ms)

    async def _backend_idle(self, t_media_ms: int) -> None:
        """Release the continuation of a backend response that never completed."""
        rid = self._backend_id
        if (rid is None or not self.gate.active or self.gate.awaiting or not self.gate.outputs
                or t_media_ms - self._backend_quiet_since < BACKEND_IDLE_MS):
            return
        self._abandoned.add(rid)
        self._backend_id = None
        log.info("%s: backend response %s sent its function calls but no terminal lifecycle "
                 "event within %d ms; continuing without it", KIND, rid, BACKEND_IDLE_MS)
        self.gate.finished()
        await self._continue_if_due()

    def _on_output_audio(self, pcm: Pcm) -> None:
        self._arrived = True
        self._last_output_ms = self.now_ms
        item = f"{UTTERANCE}-{self._utterance}"
        if len(pcm) == 0 or rms(pcm) < SILENCE_RMS:
            if not self._open:
                return  # streamed silence between utterances
            self._held.append(pcm)
            self._held_ms += len(pcm) * 1000 // self.settings.output_rate
            if self._talked_over and self._user_vad.in_speech and (
                self._held_ms >= YIELD_SILENCE_MS
            ):
                self._barge_in()  # the service stopped talking because the user did
            return
        if not self._open:
            self._utterance += 1
            item = f"{UTTERANCE}-{self._utterance}"
        for pause in self._held:  # a pause inside the utterance: play it after all
            self.emit_audio(pause, item)
        self._held, self._held_ms = [], 0
        self._open = self._speech_arrived = True
        self.emit_audio(pcm, item)

    # ------------------------------------------------------------------ events

    async def handle(self, event: Any) -> None:
        if isinstance(event, OutputAudioDelta):
            self._on_output_audio(decode_pcm16(event.delta))
        elif isinstance(event, OutputTranscriptDelta):
            if not self._open:
                self._utterance += 1
            self._open = self._arrived = True
            self._last_output_ms = self.now_ms
            self._text.append(event.delta)
            self.emit(TranscriptDelta(text=event.delta))
        elif isinstance(event, InputTranscriptDelta):
            self._input_transcript = True
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
        self._backend_quiet_since = self.now_ms
        if isinstance(event, NestedOutputItemDone):
            item = event.item
            if item.type == "function_call" and item.call_id and item.name:
                self.gate.tool_call(item.call_id)
                self.emit(ToolCallRequest(
                    call_id=item.call_id, name=item.name,
                    args=parse_arguments(item.arguments or ""),
                ))
        elif isinstance(event, NestedLifecycle):
            if event.response.id in self._abandoned:
                return  # given up on (BACKEND_IDLE_MS): its late end changes nothing
            if event.type in ("response.created", "response.in_progress", "response.queued"):
                self._backend_id = event.response.id or self._backend_id
                self.gate.started()
                return
            self._backend_id = None
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
