"""The live participant in cue mode (runtime/user/live_user.py): a "robot participant" that speaks
the task's own bank audio when a cue or reveal comes due drives full virtual-clock runs; the
role card is scanned for gold values over whole runs of every task; the microphone buffer is
bounded and thread-safe; ASR never blocks the media clock; the orchestrator holds a gated
call while a speech decision is being computed."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grading.gates import grade_run_dir
from runtime.core.audio import FRAME_MS, FRAME_SAMPLES, SAMPLE_RATE, Pcm, silence
from runtime.core.events import (
    AuthBlocked,
    AuthDecisionEvent,
    AuthGrant,
    AuthRevoke,
    AuthUse,
    CardFact,
    CueShow,
    Event,
    ToolCall,
    UserPlanEvent,
    UserSpeechStart,
    UserTranscript,
    read_events,
)
from runtime.core.spec import Lifecycle, TaskSpec, find_task
from runtime.session.campaign import parse_agent_spec, run_one
from runtime.session.observer import Act
from runtime.session.orchestrator import Orchestrator
from runtime.speechbank.bank import BankPlayer
from runtime.user.live_user import (
    STALL_FRAMES,
    LiveParticipant,
    RoleCard,
    field_gold_strings,
    mentions,
    user_known_values,
)
from runtime.user.simulator import RevealPolicy, SpeechAuthorization, UserFrame, select_realization
from tests.conftest import bundled_tasks

TASKS = {t.id: t for t in bundled_tasks()}


# --------------------------------------------------------------------------- robot participant

class TextASR:
    """Stands in for Whisper where the words are known: returns what the robot is saying
    (``override`` maps a plan id to other words, e.g. a hesitation)."""

    name = "robot-text"

    def __init__(self) -> None:
        self.text = ""

    def transcribe(self, pcm: Pcm, sample_rate: int = SAMPLE_RATE, *,
                   prompt: str | None = None) -> str:
        del pcm, sample_rate, prompt
        return self.text


@dataclass
class Robot:
    """Speaks the realization of each plan the moment it comes due (what the frozen
    simulator would have played), 40 ms per frame, as a microphone would deliver it."""

    task: TaskSpec
    participant: LiveParticipant
    text_asr: TextASR | None = None
    override: dict[str, str] = field(default_factory=dict)
    on_card_change: Callable[[RoleCard, int], None] | None = None
    _audio: Pcm | None = None
    _pos: int = 0
    _last: tuple[str, int] | None = None
    _dirty: bool = True

    def __post_init__(self) -> None:
        self.bank = BankPlayer(self.task)

    def on_event(self, event: Event) -> None:
        if event.type in ("card.fact", "cue.show", "cue.done"):
            self._dirty = True

    def on_frame(self, user: Pcm, agent: Pcm, t: int) -> None:
        del user, agent
        pend = self.participant.pending
        if self._audio is None and pend is not None and (pend.plan_id, pend.shown_ms) != self._last:
            self._last = (pend.plan_id, pend.shown_ms)
            plan = self.task.plan(pend.plan_id)
            assert plan is not None
            real = select_realization(self.task.id, self.participant.seed, plan)
            self._audio, self._pos = self.bank.audio(real.id, real.audio), 0
            if self.text_asr is not None:
                self.text_asr.text = self.override.get(plan.id, real.text)
        chunk = silence()
        if self._audio is not None:
            part = self._audio[self._pos:self._pos + FRAME_SAMPLES]
            self._pos += FRAME_SAMPLES
            chunk = np.concatenate([part, silence(FRAME_SAMPLES - len(part))])
            if self._pos >= len(self._audio):
                self._audio = None
        self.participant.push_audio(chunk)
        if self._dirty and self.on_card_change is not None:
            self._dirty = False
            self.on_card_change(self.participant.role_card(), t)


def run_live(
    task: TaskSpec, out: Path, *, real_asr: bool = False, override: dict[str, str] | None = None,
    on_card_change: Callable[[RoleCard, int], None] | None = None, seed: int = 0,
) -> tuple[Path, LiveParticipant]:
    """One virtual-clock run of the task's oracle against the robot participant."""
    text_asr = None if real_asr else TextASR()
    if real_asr:
        from runtime.speech.asr import shared_asr

        participant = LiveParticipant(task, seed=seed, asr=shared_asr(), transcribe_inline=True)
    else:
        participant = LiveParticipant(task, seed=seed, asr=text_asr, transcribe_inline=True)
    robot = Robot(task, participant, text_asr, override or {}, on_card_change)
    agent = parse_agent_spec("scripted:oracle").make(task)
    orch = Orchestrator(task, agent, participant, out, agent_spec="scripted:oracle", seed=seed,
                        wall_clock_in_log=False, meta_extra={"run_id": f"{task.id}.live"},
                        on_frame=robot.on_frame, on_event=robot.on_event)
    asyncio.run(orch.run())
    return out, participant


def _events(run_dir: Path) -> list[Event]:
    read = read_events(run_dir / "events.jsonl")
    assert read.problems == []
    return read.events


def _critical_moments(events: list[Event], plan_ids: set[str]) -> list[tuple[str, str, int]]:
    """(plan, anchor event type, ms after the last agent speech start/end) for each cue or
    simulator utterance of a critical plan."""
    out = []
    anchor: Event | None = None
    for e in events:
        if e.type in ("agent.speech.start", "agent.speech.end"):
            anchor = e
        cue = isinstance(e, CueShow)
        sim_plan = isinstance(e, UserPlanEvent) and not e.trigger.startswith("live:")
        if (cue or sim_plan) and e.plan_id in plan_ids:  # type: ignore[union-attr]
            assert anchor is not None
            out.append((e.plan_id, anchor.type, e.t_media_ms - anchor.t_media_ms))  # type: ignore[union-attr]
    return out


def test_robot_participant_with_real_asr_reaches_workflow_success(tmp_path: Path) -> None:
    task = TASKS["apexv1_070"]
    run_dir, participant = run_live(task, tmp_path / "live", real_asr=True)
    events = _events(run_dir)
    grade = grade_run_dir(run_dir, TASKS)
    assert grade.WS, grade.gate_reasons
    transcripts = [e for e in events if isinstance(e, UserTranscript)]
    assert transcripts and all(t.asr == "faster-whisper-tiny.en" and not t.error
                               for t in transcripts)
    assert any("submit" in t.text.lower() for t in transcripts)
    # Every token came from a speech decision (never from the plan), right before it.
    effects = [i for i, e in enumerate(events) if isinstance(e, AuthGrant | AuthRevoke)]
    assert [type(events[i]).__name__ for i in effects] == ["AuthGrant", "AuthRevoke", "AuthGrant"]
    for i in effects:
        decision = events[i - 1]
        assert isinstance(decision, AuthDecisionEvent)
        assert decision.decision == ("grant" if isinstance(events[i], AuthGrant) else "revoke")
        assert events[i].evidence == decision.evidence  # type: ignore[union-attr]
        assert decision.evidence in {t.text for t in transcripts}
        assert decision.classifier == "rules-v1" and decision.cue_id is not None
    assert not any(isinstance(e, AuthBlocked) for e in events)
    assert any(isinstance(e, AuthUse) for e in events)

    # Same plans in the same order as the frozen simulator, cues at its moments.
    factory = parse_agent_spec("scripted:oracle")
    sim_dir = tmp_path / "sim"
    asyncio.run(run_one(task, factory, sim_dir, seed=0, repeat=0, wall_clock_in_log=False))
    sim = _events(sim_dir)
    sim_plans = [e.plan_id for e in sim if isinstance(e, UserPlanEvent)]
    live_plans = [e.plan_id for e in events if isinstance(e, UserPlanEvent)]
    assert live_plans == sim_plans
    critical = {"approve_first", "barge_revoke", "approve_corrected", "goodbye"}
    live_cues = _critical_moments(events, critical)
    assert [c[0] for c in live_cues] == ["approve_first", "barge_revoke", "approve_corrected",
                                         "goodbye"]
    sim_cues = _critical_moments(sim, critical)
    # The same moments, except that a duplex cue is anchored on the end of the participant's
    # voice where the simulator anchors on the end of its realization (trailing quiet).
    for live_cue, sim_cue in zip(live_cues, sim_cues, strict=True):
        tolerance = 400 if live_cue[0] == "barge_revoke" else 0
        assert live_cue[:2] == sim_cue[:2] and abs(live_cue[2] - sim_cue[2]) <= tolerance
    # e.g. the barge-in cue 960 ms after the approval ended (600 ms into the reply), approvals
    # 400 ms after the agent turn ends
    assert ("barge_revoke", "agent.speech.start", 600) in sim_cues
    # Only the very first frame: the robot's microphone starts after it (as a browser's does).
    assert participant.stats["underruns"] == 1


# --------------------------------------------------------------------------- what the card shows

def _card_texts(card: RoleCard) -> list[str]:
    """Participant-facing text of the card: every string except identifiers and the fact
    labels (a label names what a value is; it is schema, never a value)."""
    out: list[str] = []

    def walk(x: Any, key: str = "") -> None:
        if isinstance(x, str):
            if key not in ("description", "cue_id", "plan_id", "fact_id", "kind"):
                out.append(x)
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(v, k)
        elif isinstance(x, list):
            for v in x:
                walk(v, key)
        elif isinstance(x, int | float) and key == "value":
            out.append(str(x))

    walk(card.model_dump())
    return out


def gold_leaks(task: TaskSpec, card: RoleCard) -> set[str]:
    """Gold strings of graded fields that occur in the card's text although the participant
    does not know them (known values and field labels are blanked out first)."""
    known = user_known_values(task, card)
    folded = {k.casefold() for k in known}
    blank = sorted({f.label for _a, f in task.graded_fields()} | known, key=len, reverse=True)
    leaks: set[str] = set()
    for text in _card_texts(card):
        for phrase in blank:
            text = re.sub(rf"(?<!\w){re.escape(phrase)}(?!\w)", " ", text, flags=re.IGNORECASE)
        leaks |= {g for g in field_gold_strings(task)
                  if g.casefold() not in folded and mentions(text, g)}
    return leaks


def test_leak_scan_catches_a_gold_value_on_the_card() -> None:
    task = TASKS["apexv1_070"]
    card = LiveParticipant(task).role_card()
    assert gold_leaks(task, card) == set()
    assert gold_leaks(task, card.model_copy(update={"goals": ["Set status to submitted."]})) \
        == {"submitted"}
    # A corrected value not released yet is a leak too (the card shows the first end date).
    assert gold_leaks(task, card.model_copy(update={"guidance": "You end on 2027-06-11."})) \
        == {"2027-06-11"}


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_card_never_shows_a_gold_value_the_user_does_not_know(task_id: str,
                                                             tmp_path: Path) -> None:
    task = TASKS[task_id]
    seen: list[tuple[int, set[str]]] = []
    snapshots = 0

    def check(card: RoleCard, t: int) -> None:
        nonlocal snapshots
        snapshots += 1
        leaks = gold_leaks(task, card)
        if leaks:
            seen.append((t, leaks))

    run_dir, participant = run_live(task, tmp_path, on_card_change=check)
    check(participant.role_card(), -1)
    assert seen == [], f"gold values on the card: {seen}"
    assert snapshots > 3
    # The robot participant speaking the bank reaches the oracle's outcome in cue mode too.
    grade = grade_run_dir(run_dir, TASKS)
    assert grade.WS, grade.gate_reasons
    card = participant.role_card()
    assert task.objective not in card.model_dump_json()


def _loud(ms: int, amp: int = 4000) -> Pcm:
    n = ms * SAMPLE_RATE // 1000
    return (amp * np.sin(2 * np.pi * 220 * np.arange(n) / SAMPLE_RATE)).astype(np.int16)


def _speak(
    p: LiveParticipant, t: int, audio: Pcm, tail_ms: int = 1000
) -> tuple[int, list[UserFrame]]:
    """Feed ``audio`` then silence frame by frame; returns the next media time and frames."""
    frames = []
    pcm = np.concatenate([audio, silence(tail_ms * SAMPLE_RATE // 1000)])
    for k in range(0, len(pcm), FRAME_SAMPLES):
        p.push_audio(pcm[k:k + FRAME_SAMPLES])
        frames.append(p.next_frame(t))
        t += FRAME_MS
    return t, frames


def _values(p: LiveParticipant) -> dict[str, tuple[Any, int]]:
    return {f.fact_id: (f.value, f.version) for f in p.role_card().facts}


def test_facts_appear_only_after_their_reveal_condition() -> None:
    task = TASKS["apexv1_070"]
    asr = TextASR()
    p = LiveParticipant(task, asr=asr, transcribe_inline=True)
    first = p.next_frame(0)
    # From the first second: what she knows before the call (volunteered or given when
    # asked), never a later version (the corrected end date comes after approve_first).
    at_start = [e for e in first.events if isinstance(e, CardFact)]
    assert {e.fact_id for e in at_start} == {
        "employee_name", "leave_type", "employee_id", "start_date", "end_date",
        "covering_colleague", "manager", "contact_phone", "reason"}
    assert all(e.known_at_start and e.version == 1 for e in at_start)
    card = p.role_card()
    assert card.goals == ["Book vacation from June 2 to June 13, 2027, covered by Sam Okafor."]
    assert [f.fact_id for f in card.facts if not f.when_asked] == ["employee_name", "leave_type"]
    p.policy.spoken.append("opening")
    p._opened = True  # the opening was said (not part of this test)
    p.on_agent_turn_end([Act(act="ask", field="start_date", text="Start date?")], 40)
    p.next_frame(40)
    assert _values(p)["end_date"] == ("2027-06-13", 1)
    assert p.pending is None  # the answer plan is due after the response gap, not before
    for t in range(80, 480, FRAME_MS):
        p.next_frame(t)
    assert p.pending is not None and p.pending.plan_id == "ans_dates"
    assert p.role_card().active_cue is None  # a plain answer: facts only, no cue
    # The participant stays silent; the agent readies the request and asks for approval.
    p.on_lifecycle("lr_1", Lifecycle.READY_FOR_REVIEW)
    p.on_agent_turn_end(
        [Act(act="request_approval", action="commit:lr_1", artifact="lr_1",
             text="Shall I submit your leave request?")],
        600)
    t = 600
    while p.role_card().active_cue is None and t < 2000:
        p.next_frame(t)
        t += FRAME_MS
    cue = p.role_card().active_cue
    assert cue is not None and cue.kind == "approve" and cue.shown_ms == 600 + 400
    assert _values(p)["end_date"] == ("2027-06-13", 1)  # the correction waits for approve_first
    asr.text = "Yes, please submit it."
    t, frames = _speak(p, t, _loud(800))
    auths = [f.authorization for f in frames if f.authorization is not None]
    assert auths == [SpeechAuthorization("grant", "commit:lr_1", "approve_first",
                                         "Yes, please submit it.")]
    # after_plan approve_first: the corrected end date replaces the old one, released now
    # (highlighted), and the goal follows it.
    assert _values(p)["end_date"] == ("2027-06-11", 2)
    released = next(f for f in p.role_card().facts if f.fact_id == "end_date")
    assert not released.known_at_start and released.since_ms > 0
    assert p.role_card().goals == [
        "Book vacation from June 2 to June 11, 2027, covered by Sam Okafor."]
    # The approve cue is done; the only cue left is the authored revocation, due on media time
    # after the approval ended, whatever the agent does.
    active = p.role_card().active_cue
    assert active is None or active.plan_id == "barge_revoke"


def test_world_event_fact_appears_only_when_the_event_fires() -> None:
    task = TASKS["apexv1_114"]
    p = LiveParticipant(task, asr=TextASR(), transcribe_inline=True)
    p.next_frame(0)
    p.on_agent_turn_end([Act(act="ask", field="root_cause", text="Root cause?")], 40)
    assert "root_cause" not in _values(p)
    p.on_world_event(task.world_events[0].id)
    p.next_frame(80)
    assert _values(p)["root_cause"] == ("expired OAuth token", 1)
    assert _values(p)["affected_records"] == (1870, 2)


# --------------------------------------------------------------------------- the microphone

def test_buffer_is_bounded_and_underruns_are_silence() -> None:
    p = LiveParticipant(TASKS["apexv1_070"], max_buffer_ms=500)
    ramp = (np.arange(SAMPLE_RATE) % 30_000 + 1).astype(np.int16)  # 1 s, never zero
    p.push_audio(ramp)
    stats = p.stats
    assert stats["dropped_samples"] == SAMPLE_RATE // 2  # the oldest half second
    assert stats["dropped_frames"] == 13  # 12,000 samples = 12.5 frames, rounded up
    assert stats["buffered_samples"] == SAMPLE_RATE // 2
    got = [p.next_frame(k * FRAME_MS).pcm for k in range(14)]
    assert np.array_equal(np.concatenate(got[:12]), ramp[SAMPLE_RATE // 2:][:12 * FRAME_SAMPLES])
    assert not got[12].any() and not got[13].any()  # 480 samples left: less than a frame
    assert p.stats["underruns"] == 2 and p.stats["frames_out"] == 14
    with pytest.raises(ValueError, match="mono int16"):
        p.push_audio(np.zeros(960, dtype=np.float32))
    with pytest.raises(ValueError, match="mono int16"):
        p.push_audio(np.zeros((960, 2), dtype=np.int16))


class _HeardASR:
    """Records the audio each utterance sent to the recognizer."""

    name = "heard"

    def __init__(self) -> None:
        self.heard: list[Pcm] = []

    def transcribe(self, pcm: Pcm, sample_rate: int = SAMPLE_RATE, *,
                   prompt: str | None = None) -> str:
        self.heard.append(pcm)
        return "hold on"


def _sentence(pause_frames: int = 10) -> tuple[list[Pcm], Pcm]:
    """Two bursts of voice with a ``pause_frames`` pause, as 40 ms device frames, and all of
    it as one array."""
    voice = _loud(600)
    frames = [voice[k:k + FRAME_SAMPLES] for k in range(0, len(voice), FRAME_SAMPLES)]
    sentence = [*frames, *[silence(FRAME_SAMPLES)] * pause_frames, *frames]
    return sentence, np.concatenate(sentence)


def _feed(p: LiveParticipant, frames: list[Pcm], holes: set[int],
          tail: int = 40) -> list[Event]:
    """Deliver ``frames`` in order, one per media frame, except that nothing arrives before
    the media frames in ``holes`` (the device is late: an underrun, and everything after it
    comes a frame later); then ``tail`` quiet frames."""
    events: list[Event] = []
    queue = [*frames, *[silence(FRAME_SAMPLES)] * tail]
    t = 0
    for tick in range(len(queue) + len(holes)):
        if tick not in holes and queue:
            p.push_audio(queue.pop(0))
        events += p.next_frame(t).events
        t += FRAME_MS
    return events


def test_late_microphone_audio_is_not_a_pause() -> None:
    """Underruns inside a pause of 400 ms (the realization's own, between two sentences) do
    not stretch it past the VAD's 640 ms end of utterance: one utterance, and the recognizer
    gets the voice without holes. The same frames as real quiet split it in two; a microphone
    that stops for good still ends the utterance."""
    task = TASKS["apexv1_070"]
    late = {16, 18, 20, 22, 24, 26, 28}  # seven underruns in the pause (as seen in CI)
    frames, sent = _sentence()
    asr = _HeardASR()
    p = LiveParticipant(task, asr=asr, transcribe_inline=True)
    events = _feed(p, frames, late)
    starts = [e for e in events if isinstance(e, UserSpeechStart)]
    assert len(starts) == 1 and p.stats["underruns"] >= len(late)
    assert len(asr.heard) == 1
    heard = asr.heard[0]
    whole = np.concatenate([sent, silence(len(heard))])
    starts_at = [k for k in range(0, len(sent), FRAME_SAMPLES)
                 if np.array_equal(whole[k:k + len(heard)], heard)]
    assert starts_at and starts_at[0] <= FRAME_SAMPLES  # the voice, in order, without a hole

    # The control: the pause really is 7 frames longer (quiet delivered on time).
    p2 = LiveParticipant(task, asr=_HeardASR(), transcribe_inline=True)
    frames2, _ = _sentence(pause_frames=10 + len(late))
    events2 = _feed(p2, frames2, set())
    assert len([e for e in events2 if isinstance(e, UserSpeechStart)]) == 2

    # A microphone that stops mid-utterance: the utterance ends once the stall counts.
    p3 = LiveParticipant(task, asr=_HeardASR(), transcribe_inline=True)
    voice = _loud(600)
    t = 0
    for k in range(0, len(voice), FRAME_SAMPLES):
        p3.push_audio(voice[k:k + FRAME_SAMPLES])
        p3.next_frame(t)
        t += FRAME_MS
    assert p3.speaking
    late_flags = []
    for _ in range(STALL_FRAMES + 16):  # nothing delivered: stall, then the VAD's hangover
        late_flags.append(p3.next_frame(t).late)
        t += FRAME_MS
    assert not p3.speaking
    # Late frames are not sent to the agent until the stall counts as quiet.
    assert late_flags == [True] * (STALL_FRAMES - 1) + [False] * 17


def test_push_from_another_thread_while_frames_are_taken() -> None:
    p = LiveParticipant(TASKS["apexv1_070"], max_buffer_ms=60_000)
    stream = (np.arange(20 * SAMPLE_RATE) % 30_000 + 1).astype(np.int16)
    sizes = np.random.default_rng(7).integers(1, 2000, size=len(stream))
    done = threading.Event()

    def producer() -> None:
        k, i = 0, 0
        while k < len(stream):
            n = int(sizes[i])
            p.push_audio(stream[k:k + n])
            k, i = k + n, i + 1
            if i % 50 == 0:
                time.sleep(0.0005)
        done.set()

    thread = threading.Thread(target=producer)
    thread.start()
    out: list[Pcm] = []
    t = 0
    while not done.is_set() or p.stats["buffered_samples"] >= FRAME_SAMPLES:
        frame = p.next_frame(t).pcm
        t += FRAME_MS
        if frame.any():
            out.append(frame)
    thread.join()
    got = np.concatenate(out)
    assert np.array_equal(got, stream[:len(got)])  # in order, nothing torn or repeated
    stats = p.stats
    assert stats["samples_in"] == len(stream) and stats["dropped_samples"] == 0
    assert len(got) + stats["buffered_samples"] == len(stream)


# --------------------------------------------------------------------------- ASR off the clock

class SlowASR:
    name = "slow"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()

    def transcribe(self, pcm: Pcm, sample_rate: int = SAMPLE_RATE, *,
                   prompt: str | None = None) -> str:
        self.started.set()
        assert self.release.wait(10)
        return "Yep, go ahead."


@pytest.mark.serial  # times 46 frames against the wall clock
def test_transcription_never_blocks_the_media_clock() -> None:
    task = TASKS["apexv1_070"]
    asr = SlowASR()
    p = LiveParticipant(task, asr=asr)
    try:
        p.policy.spoken += ["opening"]
        p._opened = True
        p.on_lifecycle("lr_1", Lifecycle.READY_FOR_REVIEW)
        p.on_agent_turn_end([Act(act="request_approval", action="commit:lr_1",
                                 artifact="lr_1", text="Shall I submit your leave request?")], 0)
        t0 = time.monotonic()
        t, frames = _speak(p, 0, np.concatenate([silence(FRAME_SAMPLES * 12), _loud(600)]))
        assert asr.started.wait(5)
        assert time.monotonic() - t0 < 2.0  # 46 frames went by while ASR had not answered
        assert all(f.authorization is None for f in frames)
        assert p.authorization_pending and p.busy and not p.speaking
        asr.release.set()
        deadline = time.monotonic() + 5
        frame = p.next_frame(t)
        while frame.authorization is None and time.monotonic() < deadline:
            time.sleep(0.01)
            t += FRAME_MS
            frame = p.next_frame(t)
        assert frame.authorization is not None and frame.authorization.decision == "grant"
        assert isinstance(frame.events[-1], AuthDecisionEvent)  # applied right after it
        assert not p.authorization_pending
    finally:
        p.close()


class HeldUser:
    """A user source whose authorization decision is pending for the first second, then a
    spoken grant arrives (as a live participant's would)."""

    def __init__(self, task: TaskSpec, pending_until: int) -> None:
        self.policy = RevealPolicy(task)
        self.pending_until = pending_until
        self.t = 0
        self.speaking = False
        self.busy = False
        self.agent_audible = False

    @property
    def authorization_pending(self) -> bool:
        return self.t < self.pending_until

    def next_frame(self, t_ms: int) -> UserFrame:
        self.t = t_ms
        auth = None
        if t_ms == self.pending_until:
            auth = SpeechAuthorization("grant", "commit:lr_1", "approve_first", "go ahead")
        return UserFrame(pcm=silence(), authorization=auth)

    def on_agent_speech_start(self, t_ms: int) -> None: ...
    def on_agent_turn_end(self, acts: list[Act], t_ms: int) -> None: ...
    def on_lifecycle(self, artifact_id: str, state: Lifecycle,
                     changed: Sequence[str] = ()) -> None: ...
    def on_world_event(self, event_id: str) -> None: ...


SCRIPT = """
turns:
  - tools:
      - {name: update_lr_1, args: {fields: {employee_id: E2290, employee_name: Priya Natarajan,
          leave_type: vacation, start_date: "2027-06-02", end_date: "2027-06-11",
          covering_colleague: Sam Okafor, manager: Dana Whitfield, contact_phone: "+14155550142",
          reason: family trip, status: submitted}}}
      - {name: set_ready, args: {artifact_id: lr_1}}
      - {name: commit, args: {artifact_id: lr_1}}
    say: "Done."
"""


@pytest.mark.parametrize("decided_at", [1000, None])
def test_orchestrator_holds_a_gated_call_while_a_decision_is_pending(
    tmp_path: Path, decided_at: int | None
) -> None:
    task = find_task("apexv1_070")
    script = tmp_path / "commit_now.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    agent = parse_agent_spec(f"scripted:{script}").make(task)
    user = HeldUser(task, decided_at if decided_at is not None else 10**9)
    run_dir = tmp_path / "run"
    asyncio.run(Orchestrator(task, agent, user, run_dir, agent_spec="held", seed=0).run())
    events = _events(run_dir)
    commit = next(e for e in events if isinstance(e, ToolCall) and e.name == "commit")
    if decided_at is not None:
        grant = next(e for e in events if isinstance(e, AuthGrant))
        assert grant.t_media_ms == 1000 and commit.t_media_ms == 1000
        assert grant.seq < commit.seq
        assert any(isinstance(e, AuthUse) for e in events)
    else:
        # Never decided: the hold ends after AUTH_HOLD_MS and the guard blocks the call.
        assert commit.t_media_ms == 3000
        assert any(isinstance(e, AuthBlocked) for e in events)
