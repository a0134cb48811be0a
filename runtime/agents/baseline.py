"""The ``baseline`` agent: the paper's local cascaded voice agent ("cascaded baseline" control).

VAD → ASR → dialogue policy → TTS, all on this machine:

* :class:`~runtime.speech.vad.SileroVAD` watches the user channel frame by frame; its end of
  utterance (800 ms of silence) hands the utterance's audio to the ASR, and its speech onset
  while the agent is still talking is a barge-in: the agent yields (``Interrupted``) and the
  orchestrator drops and logs the unplayed rest.
* :class:`~runtime.speech.asr.WhisperASR` (faster-whisper tiny.en) transcribes the utterance:
  the audio up to the VAD's pause (:data:`PAUSE_MS` of silence, when every word is in),
  padded with silence to the length of the end-of-utterance wait. In
  ``realtime`` mode that transcription starts at the pause, while the VAD waits out the rest
  of the 800 ms, so the answer is not 800 ms plus the ASR's time late; if the caller speaks
  again before the end, the next pause replaces it. Both clock modes transcribe the same
  audio, so a run's transcript does not depend on the mode or the machine's speed.
* A :class:`~runtime.agents.baseline_policy.DialoguePolicy` decides: the deterministic
  :class:`~runtime.agents.baseline_policy.RulePolicy` (agent spec ``baseline``), or an
  OpenAI-compatible chat model with tools (``baseline:llm``,
  :mod:`runtime.agents.baseline_llm`).
* A :class:`~runtime.speechbank.bank.TTSEngine` speaks: Kokoro (``runtime.speechbank.tts_kokoro``)
when that module
  and its assets are available, espeak-ng otherwise; ``APEX_BASELINE_TTS=kokoro|espeak``
  forces one, ``APEX_BASELINE_VOICE`` picks the voice. Speech is cached on disk per text.

Clock modes: in ``virtual`` mode recognition, policy and synthesis run inline, so media time
stands still while they work (as fast as the models allow, deterministic). In ``realtime``
mode they run in a worker thread while the media clock keeps going, so the measured response
latency (user end of speech → agent audio) is the real one.

The agent sees only the session config (shared instruction, task context, tool schemas) and
the user's audio; never the task's gold values, user facts, plans or grading spec.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import datetime as dt
import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from runtime.agents.base import (
    AgentAdapter,
    AgentErrorSignal,
    AgentEvent,
    AgentSessionConfig,
    AudioDelta,
    Hangup,
    InfrastructureError,
    Interrupted,
    ResponseDone,
    ToolCallRequest,
    TranscriptDone,
)
from runtime.agents.baseline_policy import (
    AwaitPlayout,
    CallTool,
    DialoguePolicy,
    HangUp,
    RulePolicy,
    Say,
    TaskView,
    Turn,
)
from runtime.core.audio import FRAME_MS, SAMPLE_RATE, Pcm
from runtime.core.spec import TaskSpec
from runtime.speech.asr import ASR, ASRError, single_thread_asr
from runtime.speech.vad import VAD, SileroVAD, VADError
from runtime.speechbank.bank import EspeakEngine, SpeechCache, TTSEngine, TTSError

PAUSE_MS = 300
"""Silence after which the baseline's VAD reports a pause and the agent takes the utterance's
audio (and, in realtime mode, starts transcribing it); the end of the utterance is still
:data:`END_OF_UTTERANCE_MS` of silence."""
END_OF_UTTERANCE_MS = 800
"""The VAD's end of utterance (:class:`~runtime.speech.vad.SileroVAD`'s default)."""

ESPEAK_VOICE = "en-us+m3"
KOKORO_VOICE = "am_michael"


class BaselineConfigError(Exception):
    """The baseline agent was configured wrongly (an unknown variant, a missing LLM URL, an
    unavailable TTS engine that was asked for by name); the message says what to set."""


class Speaker(Protocol):
    """Text to the agent's audio (mono PCM16 at the runtime rate)."""

    def speak(self, text: str) -> Pcm: ...


# --------------------------------------------------------------------------- TTS selection

def _kokoro_engine() -> tuple[TTSEngine | None, str]:
    """A ready :class:`runtime.speechbank.tts_kokoro.KokoroEngine` (assets set up), or why not.
    Imported
    lazily: it pulls in torch."""
    try:
        found = importlib.util.find_spec("runtime.speechbank.tts_kokoro") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return None, "runtime/speechbank/tts_kokoro.py is not in this checkout"
    try:
        module = importlib.import_module("runtime.speechbank.tts_kokoro")
        engine: TTSEngine = module.KokoroEngine()
        engine.describe()  # checks the assets
    except (ImportError, AttributeError, TypeError, OSError, TTSError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return engine, ""


def select_tts(env: Mapping[str, str]) -> tuple[TTSEngine, str]:
    """The TTS engine and voice for the baseline: ``APEX_BASELINE_TTS`` (``kokoro``,
    ``espeak`` or unset = Kokoro when available, else espeak-ng)."""
    choice = (env.get("APEX_BASELINE_TTS") or "auto").strip().lower()
    if choice not in {"auto", "kokoro", "espeak"}:
        raise BaselineConfigError(
            f"APEX_BASELINE_TTS={choice!r}: use 'kokoro' or 'espeak' (or leave it unset)"
        )
    voice = env.get("APEX_BASELINE_VOICE") or None
    if choice in ("auto", "kokoro"):
        engine, why = _kokoro_engine()
        if engine is not None:
            return engine, voice or KOKORO_VOICE
        if choice == "kokoro":
            raise BaselineConfigError(f"APEX_BASELINE_TTS=kokoro, but Kokoro is unavailable: {why}")
    return EspeakEngine(), voice or ESPEAK_VOICE


class SharedSpeech:
    """One on-disk agent-speech cache for every baseline agent of a campaign; the engine is
    chosen on first use (I/O happens then, never at construction). Thread-safe."""

    def __init__(self, env: Mapping[str, str], cache_dir: Path) -> None:
        self._env = dict(env)
        self._dir = cache_dir
        self._cache: SpeechCache | None = None
        self._lock = threading.Lock()

    def _ensure(self) -> SpeechCache:
        if self._cache is None:
            engine, voice = select_tts(self._env)
            self._cache = SpeechCache(engine, self._dir / "baseline", voice=voice)
        return self._cache

    def speak(self, text: str) -> Pcm:
        with self._lock:
            return self._ensure().speak(text)


# --------------------------------------------------------------------------- the adapter

PolicyFactory = Callable[[AgentSessionConfig], DialoguePolicy]


class BaselineAgent:
    """The cascaded baseline as an :class:`~runtime.agents.base.AgentAdapter`."""

    name = "baseline"

    def __init__(
        self, policy_factory: PolicyFactory, speech: Speaker, *, asr: ASR | None = None,
        vad_factory: Callable[[], VAD] | None = None, label: str = "baseline",
        silence_ms: int = 4000, preroll_frames: int = 8,
    ) -> None:
        self.name = label
        self._policy_factory = policy_factory
        self._speech = speech
        self._asr_given = asr
        self._asr: ASR | None = asr
        self._vad_factory = vad_factory or _pausing_vad
        self._silence_ms = silence_ms
        self._preroll: collections.deque[Pcm] = collections.deque(maxlen=preroll_frames)
        self._lock = threading.Lock()
        self._outbox: list[AgentEvent] = []
        self._utterances: collections.deque[tuple[int, Pcm]] = collections.deque()
        self._current: list[Pcm] | None = None
        self._paused: Pcm | None = None
        """The current utterance's audio as of the VAD's last pause, padded with silence to
        the end of utterance."""
        self._pause_pad = np.zeros(SAMPLE_RATE * (END_OF_UTTERANCE_MS - PAUSE_MS) // 1000,
                                   dtype=np.int16)
        self._asr_pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._early: dict[int, tuple[Pcm, concurrent.futures.Future[str]]] = {}
        """Realtime mode: transcriptions started at a pause, by id() of the audio (kept
        alive here, so the id is not reused while the entry lives)."""
        self._job: Turn | None = None
        self._waiting: tuple[str, str] | None = None
        self._results: dict[str, dict[str, Any]] = {}
        self._playout: bool | None = None
        self._speaking_until = 0
        self._barged = False
        self._last_activity = 0
        self._silence_armed = True
        self._silence_due = False
        self._hung_up = False
        self._calls = 0
        self._worker: asyncio.Task[None] | None = None
        self._realtime = False
        self._debug = bool(os.environ.get("APEX_BASELINE_DEBUG"))
        self.transcripts: list[tuple[int, str]] = []
        """(media ms of the utterance end, ASR text): what the agent heard."""

    # ------------------------------------------------------------------ protocol

    async def connect(self, config: AgentSessionConfig) -> None:
        if config.sample_rate != SAMPLE_RATE:
            raise InfrastructureError(
                f"baseline agent runs at {SAMPLE_RATE} Hz, not {config.sample_rate}"
            )
        self._realtime = config.clock == "realtime"
        try:
            if self._asr is None:
                self._asr = await asyncio.to_thread(single_thread_asr)
            self._vad = self._vad_factory()
            self._policy = self._policy_factory(config)
        except (ASRError, VADError, TTSError, BaselineConfigError) as exc:
            raise InfrastructureError(f"baseline agent: {exc}") from None
        self._job = self._policy.opening()

    async def send_audio(self, frame: Pcm, t_media_ms: int) -> None:
        change = self._vad.push(frame)
        if change == "onset":
            self._current = [*self._preroll, frame]
            self._last_activity = t_media_ms
            self._silence_armed = True
            if t_media_ms < self._speaking_until:  # barge-in: yield the floor
                with self._lock:
                    self._outbox.append(Interrupted(reason="barge_in"))
                self._speaking_until = t_media_ms
                self._barged = True
        elif self._current is not None:
            self._current.append(frame)
            if change == "pause":
                # The rest of the end-of-utterance wait, as silence: the recognizer hears
                # the utterance as it would at the end (Whisper reads a word cut close to
                # the silence differently), without waiting for it.
                self._paused = np.concatenate([*self._current, self._pause_pad])
                if self._realtime:
                    self._transcribe_early(self._paused)
            elif change == "end":
                audio = self._paused if self._paused is not None else np.concatenate(
                    self._current)
                self._current = self._paused = None
                self._utterances.append((t_media_ms, audio))
                self._last_activity = t_media_ms
        self._preroll.append(frame)

    def _transcribe_early(self, audio: Pcm) -> None:
        """Start transcribing ``audio`` on the recognizer's own thread; an earlier pause's
        transcription that has not started yet is dropped (speech resumed after it)."""
        if self._asr_pool is None:
            self._asr_pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="baseline-asr")
        for key, (_audio, future) in list(self._early.items()):
            if future.cancel() or future.done():
                self._early.pop(key, None)  # the worker may have just taken it
        assert self._asr is not None, "connect() loads the recognizer"
        self._early[id(audio)] = (
            audio, self._asr_pool.submit(self._asr.transcribe, audio, SAMPLE_RATE))

    def _transcribe(self, audio: Pcm) -> str:
        early = self._early.pop(id(audio), None)
        if early is not None and early[0] is audio:
            return early[1].result()
        assert self._asr is not None, "connect() loads the recognizer"
        if self._asr_pool is not None:  # realtime: one recognizer call at a time
            return self._asr_pool.submit(self._asr.transcribe, audio, SAMPLE_RATE).result()
        return self._asr.transcribe(audio, SAMPLE_RATE)

    async def send_tool_result(self, call_id: str, output: dict[str, Any]) -> None:
        with self._lock:
            self._results[call_id] = output

    async def truncated(self, heard_ms: int) -> None:
        self._policy.on_interrupted(heard_ms)

    async def poll(self, t_media_ms: int) -> list[AgentEvent]:
        t = t_media_ms
        if self._waiting is not None and self._waiting[0] == "playout" and self._playout is None:
            if self._barged:
                self._playout = False
            elif t >= self._speaking_until - FRAME_MS:
                self._playout = True
        busy = self._job is not None or bool(self._utterances) or self._vad.in_speech
        if (
            not busy and not self._hung_up and self._silence_armed
            and t - max(self._last_activity, self._speaking_until) >= self._silence_ms
        ):
            self._silence_armed = False
            self._silence_due = True
        if self._realtime:
            await self._drive_in_thread()
        else:
            self._drive_safely()
        with self._lock:
            out, self._outbox = self._outbox, []
        for ev in out:
            if isinstance(ev, AudioDelta):
                frames = -(-len(ev.pcm) // (SAMPLE_RATE * FRAME_MS // 1000))
                self._speaking_until = max(self._speaking_until, t) + frames * FRAME_MS
                self._barged = False
                self._silence_armed = True
        return out

    async def close(self) -> None:
        if self._worker is not None:
            # Closing: the run is over either way; a late worker failure changes nothing.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._worker), timeout=30)
        self._job = None
        self._outbox = []
        if self._asr_pool is not None:
            self._asr_pool.shutdown(wait=False, cancel_futures=True)
            self._asr_pool = None
        self._early.clear()

    # ------------------------------------------------------------------ driving the policy

    async def _drive_in_thread(self) -> None:
        if self._worker is not None and self._worker.done():
            worker, self._worker = self._worker, None
            exc = worker.exception()
            if exc is not None:
                self._raise_mapped(exc)
        if self._worker is None and self._has_work():
            self._worker = asyncio.create_task(asyncio.to_thread(self._drive))

    def _drive_safely(self) -> None:
        try:
            self._drive()
        except Exception as exc:
            self._raise_mapped(exc)

    def _raise_mapped(self, exc: BaseException) -> None:
        if isinstance(exc, InfrastructureError):
            raise exc
        if isinstance(exc, ASRError | VADError | TTSError | BaselineConfigError):
            raise InfrastructureError(f"baseline agent: {exc}") from None
        with self._lock:
            self._outbox.append(AgentErrorSignal(
                category="agent", message=f"baseline policy failed: {type(exc).__name__}: {exc}",
                fatal=True,
            ))
        self._job = None

    def _has_work(self) -> bool:
        if self._hung_up:
            return False
        if self._job is None:
            return bool(self._utterances) or self._silence_due
        if self._waiting is None:
            return True
        kind, key = self._waiting
        if kind == "tool":
            with self._lock:
                return key in self._results
        return self._playout is not None

    def _drive(self) -> None:
        """Advance the policy until it must wait (a tool result, playout) or has nothing to
        do. Runs inline (virtual clock) or in a worker thread (realtime clock)."""
        while not self._hung_up:
            if self._job is None:
                if self._utterances:
                    end_ms, audio = self._utterances.popleft()
                    text = self._transcribe(audio)
                    self.transcripts.append((end_ms, text))
                    if self._debug:
                        print(f"[baseline heard @{end_ms} ms] {text}", file=sys.stderr)
                    self._job = self._policy.on_user(text)
                elif self._silence_due:
                    self._silence_due = False
                    silent = self._silence_ms
                    self._job = self._policy.on_silence(silent)
                    if self._job is None:
                        return
                else:
                    return
                self._waiting = None
            value: Any = None
            if self._waiting is not None:
                kind, key = self._waiting
                if kind == "tool":
                    with self._lock:
                        if key not in self._results:
                            return
                        value = self._results.pop(key)
                else:
                    if self._playout is None:
                        return
                    value, self._playout = self._playout, None
                self._waiting = None
            try:
                step = self._job.send(value)
            except StopIteration:
                self._job = None
                continue
            if isinstance(step, Say):
                audio = self._speech.speak(step.text)
                with self._lock:
                    self._outbox += [TranscriptDone(text=step.text), AudioDelta(pcm=audio),
                                     ResponseDone()]
            elif isinstance(step, CallTool):
                self._calls += 1
                call_id = f"b{self._calls}"
                with self._lock:
                    self._outbox.append(ToolCallRequest(call_id=call_id, name=step.name,
                                                        args=dict(step.args)))
                self._waiting = ("tool", call_id)
                return
            elif isinstance(step, AwaitPlayout):
                self._playout = None
                self._waiting = ("playout", "")
                return
            elif isinstance(step, HangUp):
                with self._lock:
                    self._outbox.append(Hangup())
                self._hung_up = True
                self._job = None
                return


def _pausing_vad() -> VAD:
    return SileroVAD(min_silence_ms=END_OF_UTTERANCE_MS, pause_ms=PAUSE_MS)


# --------------------------------------------------------------------------- the factory

def _today(env: Mapping[str, str]) -> dt.date | None:
    raw = env.get("APEX_BASELINE_TODAY")
    if not raw:
        return None
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise BaselineConfigError(f"APEX_BASELINE_TODAY={raw!r}: expected YYYY-MM-DD") from None


def make_factory(
    variant: str | None, env: Mapping[str, str], cache_dir: Path
) -> Callable[[TaskSpec], AgentAdapter]:
    """Adapter factory for ``baseline`` (rule policy) and ``baseline:llm`` (chat model at
    ``APEX_BASELINE_LLM_URL`` with ``APEX_BASELINE_LLM_MODEL``, key ``APEX_BASELINE_LLM_KEY``).
    Validates the configuration now; loads nothing (models load at connect)."""
    today = _today(env)
    choice = (env.get("APEX_BASELINE_TTS") or "auto").strip().lower()
    if choice not in {"auto", "kokoro", "espeak"}:
        raise BaselineConfigError(
            f"APEX_BASELINE_TTS={choice!r}: use 'kokoro' or 'espeak' (or leave it unset)"
        )
    speech = SharedSpeech(env, cache_dir / "agent-speech")
    policy_factory: PolicyFactory
    label = "baseline"
    if variant in (None, "", "rules"):
        def policy_factory(config: AgentSessionConfig) -> DialoguePolicy:
            return RulePolicy(TaskView.from_config(config), today=today)
    elif variant == "llm":
        from runtime.agents.baseline_llm import LLMPolicy, llm_settings

        settings = llm_settings(env)
        label = f"baseline:llm:{settings.model}"

        def policy_factory(config: AgentSessionConfig) -> DialoguePolicy:
            return LLMPolicy(config, settings)
    else:
        raise BaselineConfigError(
            f"unknown baseline variant {variant!r}: use 'baseline' (rule policy) or "
            "'baseline:llm' (with --llm-url URL --llm-model NAME)"
        )

    def make(task: TaskSpec) -> AgentAdapter:
        del task  # the baseline sees only the session config: instruction, context, tools
        return BaselineAgent(policy_factory, speech, label=label)

    return make
