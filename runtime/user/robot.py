"""A human-like robot in the live participant's place (Study B dry runs, tests, benchmarks).

It speaks what the reveal graph has the participant say — the frozen realization of each plan
that comes due, from the task's bank — but with a person's timing rather than the simulator's:

* a reply starts ``onset_ms`` (150–600 ms) after the agent's turn ends, usually before the
  simulator's response gap is over (the participant attributes it to the queued plan);
* on a share of turns (``overlap_share``) it starts over the agent's last words, 0–300 ms
  before the turn ends, with the reply it anticipates (the participant's own policy, asked on
  a copy with the acts of the turn so far — a person who understood the question);
* a cue that is not an answer (a barge-in, a world event, a silence opening) is acted on
  ``cue_reaction_ms`` (300–700 ms) after it appears.

Timing draws come from a generator seeded with (task, seed): the same run repeats. The robot
reads the participant's state (:attr:`~runtime.user.live_user.LiveParticipant.upcoming`, its
policy) the way a person reads the role card, and the orchestrator's playout
(:attr:`~runtime.session.orchestrator.Orchestrator.agent_audio_left_ms`) the way a person hears a
question ending. It is a test driver, never part of a real participant's session.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from runtime.core.audio import FRAME_MS, FRAME_SAMPLES, Pcm, frames, silence
from runtime.core.events import AgentAct, AgentSpeechEnd, AgentSpeechStart, Event
from runtime.core.spec import TaskSpec, UserPlan
from runtime.session.observer import Act
from runtime.speechbank.bank import BankPlayer
from runtime.user.live_user import LiveParticipant
from runtime.user.simulator import select_realization

if TYPE_CHECKING:
    from runtime.core.events import ClockMode
    from runtime.session.orchestrator import RunResult
    from runtime.speech.asr import ASR
    from runtime.speech.asr_queue import TranscriptionQueue

_TIMED_CUES = ("duplex:", "world_event:", "opening:silence")
"""Plans that come due at a media time of their own, not as a reply to an agent turn."""


@dataclass(frozen=True)
class HumanTiming:
    onset_ms: tuple[int, int] = (150, 600)
    overlap_share: float = 0.3
    overlap_ms: tuple[int, int] = (0, 300)
    cue_reaction_ms: tuple[int, int] = (300, 700)
    pause_ms: int = 800
    """Least quiet between two of its own utterances (one breath: two utterances closer than
    an end-of-turn silence would be heard as one)."""


@dataclass(frozen=True)
class Spoken:
    t_ms: int
    plan_id: str
    text: str
    how: str
    """``reply`` (after the turn), ``overlap`` (over its last words) or ``cue``."""


class HumanRobot:
    """Drives a :class:`LiveParticipant`'s microphone. Call :meth:`on_event` with every run
    event and :meth:`frame` once per 40 ms frame (its result goes to ``push_audio``). Not
    thread-safe: one robot per call, driven from the call's thread. :attr:`last_text` is what
    it said last (for an ASR stand-in); with the real recognizer it is unused."""

    def __init__(
        self, task: TaskSpec, participant: LiveParticipant, *, seed: int = 0,
        timing: HumanTiming | None = None,
        agent_audio_left_ms: Callable[[], int | None] | None = None,
    ) -> None:
        self.task = task
        self.participant = participant
        self.seed = seed
        self.timing = timing or HumanTiming()
        self._left = agent_audio_left_ms
        digest = hashlib.sha256(f"{task.id}:{seed}:robot".encode()).digest()
        self._rng = random.Random(int.from_bytes(digest[:8], "big"))
        self._bank = BankPlayer(task)
        self._queue: list[Pcm] = []
        self._answered: set[tuple[str, int]] = set()
        self._acts: dict[int, list[Act]] = {}
        self._turn = 0
        self._agent_speaking = False
        self._turn_end: int | None = None
        self._reply_at: int | None = None
        self._overlap_at: int | None = None
        """This turn: start over its last words when this much audio is left (None: not)."""
        self._cue_at: dict[tuple[str, int], int] = {}
        self._quiet_since = -self.timing.pause_ms
        self.spoken: list[Spoken] = []
        self.last_text = ""

    # ------------------------------------------------------------------ what it hears

    def on_event(self, event: Event) -> None:
        if isinstance(event, AgentSpeechStart):
            self._agent_speaking, self._turn = True, event.turn
            self._turn_end = self._reply_at = None
            lo, hi = self.timing.overlap_ms
            self._overlap_at = (self._rng.randint(lo, hi)
                                if self._rng.random() < self.timing.overlap_share else None)
        elif isinstance(event, AgentAct):
            # A transcript may arrive just before its audio starts: acts are kept by turn.
            self._acts.setdefault(event.turn, []).append(Act.model_validate(
                {"act": event.act, "field": event.field, "artifact": event.artifact,
                 "action": event.action, "text": event.text}))
        elif isinstance(event, AgentSpeechEnd):
            self._agent_speaking = False
            self._turn_end = event.t_media_ms
            lo, hi = self.timing.onset_ms
            self._reply_at = event.t_media_ms + self._rng.randint(lo, hi)

    # ------------------------------------------------------------------ what it says

    def frame(self, t_ms: int) -> Pcm:
        """The microphone's 40 ms frame at ``t_ms``."""
        if not self._queue:
            self._maybe_start(t_ms)
        if not self._queue:
            return silence()
        chunk = self._queue.pop(0)
        if not self._queue:
            self._quiet_since = t_ms + FRAME_MS
        if len(chunk) < FRAME_SAMPLES:
            chunk = np.concatenate([chunk, silence(FRAME_SAMPLES - len(chunk))])
        return chunk

    def _speak(self, plan: UserPlan, t_ms: int, how: str) -> None:
        real = select_realization(self.task.id, self.seed, plan,
                                  self.participant.policy.occurrences(plan.id))
        self._queue = frames(self._bank.audio(real.id, real.audio))
        self.spoken.append(Spoken(t_ms, plan.id, real.text, how))
        self.last_text = real.text

    def _maybe_start(self, t_ms: int) -> None:
        if self.participant.speaking or t_ms < self._quiet_since + self.timing.pause_ms:
            return
        if self._agent_speaking and self._overlap_at is not None and self._acts.get(self._turn):
            left = self._left() if self._left is not None else None
            if left is not None and left <= self._overlap_at:
                self._overlap_at = None
                plan = self._anticipate()
                if plan is not None and plan.realizations:
                    self._reply_at = None
                    self._speak(plan, t_ms, "overlap")
                    return
        up = self.participant.upcoming
        if up is None or (up.plan_id, up.shown_ms) in self._answered:
            return
        plan = self.task.plan(up.plan_id)
        if plan is None or not plan.realizations:
            return
        key = (up.plan_id, up.shown_ms)
        if up.trigger.startswith(_TIMED_CUES):
            # A cue of its own (cut in now, news reached you): act on it once seen.
            if key not in self._cue_at:
                lo, hi = self.timing.cue_reaction_ms
                self._cue_at[key] = max(t_ms, up.shown_ms) + self._rng.randint(lo, hi)
            if t_ms < self._cue_at[key]:
                return
            how = "cue"
        else:
            if self._agent_speaking:
                return
            reply_at = self._reply_at if self._reply_at is not None else up.shown_ms
            if t_ms < reply_at:
                return
            how = "reply"
        self._answered.add(key)
        self._reply_at = None
        self._speak(plan, t_ms, how)

    def _anticipate(self) -> UserPlan | None:
        """The reply the participant's policy gives this turn's acts so far (asked on a copy:
        the participant's own policy answers only when the turn has ended)."""
        return self.participant.anticipate(self._acts.get(self._turn, []))


def run_with_robot(
    task: TaskSpec, run_dir: Path, *, seed: int = 0, agent: str = "scripted:oracle",
    timing: HumanTiming | None = None, asr: ASR | None = None,
    clock: ClockMode = "virtual", transcription_queue: TranscriptionQueue | None = None,
    transcribe_inline: bool | None = None,
) -> tuple[RunResult, HumanRobot, LiveParticipant]:
    """One run of ``agent`` against a :class:`HumanRobot` in cue mode. ``asr`` None: the
    robot's own words stand in for recognition (``bank-text``); pass ``shared_asr()`` for
    the real recognizer. By default a virtual clock transcribes inline (zero ASR latency in
    media time) and a realtime clock on the shared queue, as a live call does."""
    from runtime.session.campaign import parse_agent_spec
    from runtime.session.orchestrator import Orchestrator

    stand_in = _RobotWords()
    participant = LiveParticipant(
        task, seed=seed, asr=asr or stand_in,
        transcribe_inline=clock == "virtual" if transcribe_inline is None else transcribe_inline,
        transcription_queue=transcription_queue,
    )
    holder: dict[str, Orchestrator] = {}
    robot = HumanRobot(task, participant, seed=seed, timing=timing,
                       agent_audio_left_ms=lambda: holder["orch"].agent_audio_left_ms)
    stand_in.robot = robot

    def on_frame(user: Pcm, agent_pcm: Pcm, t_ms: int) -> None:
        del user, agent_pcm
        participant.push_audio(robot.frame(t_ms + FRAME_MS))

    factory = parse_agent_spec(agent)
    orch = Orchestrator(
        task, factory.make(task), participant, run_dir, agent_spec=factory.spec, seed=seed,
        clock=clock, wall_clock_in_log=False,
        meta_extra={"run_id": f"{task.id}.robot.{seed}", "live": True, "robot": True},
        on_frame=on_frame, on_event=robot.on_event,
    )
    holder["orch"] = orch
    try:
        result = asyncio.run(orch.run())
    finally:
        participant.close()
    return result, robot, participant


class _RobotWords:
    """Recognition stand-in: the words the robot said last (its realization's text)."""

    name = "bank-text"

    def __init__(self) -> None:
        self.robot: HumanRobot | None = None

    def transcribe(self, pcm: Pcm, sample_rate: int = 24_000, *,
                   prompt: str | None = None) -> str:
        del pcm, sample_rate, prompt
        return self.robot.last_text if self.robot is not None else ""
