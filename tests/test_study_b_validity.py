"""Study B's verdicts belong to the human, never to the pipeline (issue "Study B gives valid
results with real people"). The two failures seen with a live participant, as tests:

1. **Overlap lost the reveal.** A participant who starts answering over the last words of the
   agent's question (normal human timing) made the agent yield; the cut turn's acts were
   dropped, so the question's fact never reached the card, the approval request never
   reached the reveal policy, and "yes, please submit it" was decided without context:
   ``guard_blocked`` on apexv1_010. A turn cut in its last moments now counts as heard, the
   participant answers it when they finish (as the simulator does), and the utterance that
   overlapped it is attributed to the reply (an approval with the request as context).
2. **The approval was decided too late.** On a loaded server the participant's "yes" waited
   behind other calls' transcriptions and was decided 5.3 s after it ended, past the hold.
   Authorization utterances now go first on the transcription queue, on a lane of their own,
   and are transcribed speculatively while the VAD waits out its end-of-utterance quiet; a
   hold that still expires is logged and graded as an infrastructure failure.

Plus the human-like robot participant (runtime/user/robot.py) with the real recognizer on a sample
of tasks (all 24 in ``bench/bench_robot_participant.py``), and negatives failing the same
gate as with the simulator. Assertions are on content and order, never on timing.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from grading.gates import GATE_NAMES, grade_run_dir
from runtime.agents.scripted import load_script
from runtime.core.audio import FRAME_SAMPLES, Pcm, rms, silence
from runtime.core.events import (
    AuthBlocked,
    AuthDecisionEvent,
    AuthGrant,
    AuthHold,
    CardFact,
    CueShow,
    Event,
    UserPlanEvent,
    UserSpeechEnd,
    read_events,
)
from runtime.core.spec import default_tasks_dir
from runtime.session.observer import Act
from runtime.speech.asr_queue import AUTHORIZATION, ROUTINE, TranscriptionQueue
from runtime.speechbank.bank import BankPlayer
from runtime.user.live_user import LiveParticipant
from runtime.user.robot import HumanTiming, run_with_robot
from runtime.user.simulator import select_realization
from tests.conftest import bundled_tasks

TASKS = {t.id: t for t in bundled_tasks()}
ALWAYS_OVERLAP = HumanTiming(overlap_share=1.0)


def _events(run_dir: Path) -> list[Event]:
    read = read_events(run_dir / "events.jsonl")
    assert read.problems == []
    return read.events


# --------------------------------------------------------------------------- failure 1: overlap

def test_an_answer_spoken_over_the_end_of_a_question_is_heard(tmp_path: Path) -> None:
    task = TASKS["apexv1_010"]
    _result, robot, _p = run_with_robot(task, tmp_path / "run", timing=ALWAYS_OVERLAP)
    events = _events(tmp_path / "run")
    grade = grade_run_dir(tmp_path / "run", TASKS)
    assert grade.WS, grade.gate_reasons
    assert not any(isinstance(e, AuthBlocked) for e in events)
    overlapped = [s for s in robot.spoken if s.how == "overlap"]
    assert len(overlapped) >= 5, robot.spoken
    # Each reply spoken over the question's end is attributed to that reply …
    attributed = [e for e in events
                  if isinstance(e, UserPlanEvent) and e.trigger.startswith("live:overlap:")]
    assert len(attributed) >= 3 and "ans_building" in {e.plan_id for e in attributed}
    # … and the fact the question asked for is on the card.
    assert any(isinstance(e, CardFact) and e.fact_id == "building" for e in events)
    # The approval said over "Shall I submit it?" is decided with that request as context.
    grants = [i for i, e in enumerate(events) if isinstance(e, AuthGrant)]
    assert len(grants) == 1
    decision = events[grants[0] - 1]
    assert isinstance(decision, AuthDecisionEvent) and decision.decision == "grant"
    cue = next(e for e in events if isinstance(e, CueShow) and e.cue_id == decision.cue_id)
    assert cue.kind == "approve"
    assert any(e.trigger.startswith("live:overlap:approval_request") for e in attributed)


def test_a_turn_cut_early_is_not_heard(tmp_path: Path) -> None:
    """Only the last moments count: the barge-in a second into apexv1_070's reply still
    discards the cut turn (the simulator's and the participant's reply to it is the barge-in
    itself), so the run matches the frozen simulator's plan order."""
    task = TASKS["apexv1_070"]
    run_with_robot(task, tmp_path / "run", timing=HumanTiming(overlap_share=0.0))
    events = _events(tmp_path / "run")
    plans = [e.plan_id for e in events if isinstance(e, UserPlanEvent)]
    assert plans.count("barge_revoke") == 1
    assert grade_run_dir(tmp_path / "run", TASKS).WS


@pytest.mark.parametrize("task_id", ["apexv1_001", "apexv1_010", "apexv1_022", "apexv1_070",
                                     "apexv1_100", "apexv1_114"])
def test_robot_participant_with_the_real_recognizer_reaches_workflow_success(
        task_id: str, tmp_path: Path) -> None:
    from runtime.speech.asr import shared_asr

    result, robot, _p = run_with_robot(TASKS[task_id], tmp_path / "run", asr=shared_asr())
    grade = grade_run_dir(tmp_path / "run", TASKS)
    assert grade.WS, (grade.gate_reasons, [(s.plan_id, s.how) for s in robot.spoken])
    events = _events(tmp_path / "run")
    assert not any(isinstance(e, AuthBlocked) for e in events)
    assert result.end_reason == "agent_hangup"


NEGATIVES = [
    ("apexv1_010", "negative_submit_without_confirmation"),
    ("apexv1_010", "negative_misheard_id"),
    ("apexv1_070", "scenario_commit_after_revoke"),
    ("apexv1_001", "negative_commit_without_approval"),
    ("apexv1_001", "negative_stale_correction"),
]


@pytest.mark.parametrize(("task_id", "script"), NEGATIVES)
def test_negatives_fail_the_same_gates_with_the_robot(task_id: str, script: str,
                                                      tmp_path: Path) -> None:
    path = default_tasks_dir() / task_id / "scripts" / f"{script}.yaml"
    if not path.exists():
        pytest.fail(f"{path} is gone: pick another negative of {task_id}")
    expect = load_script(path).expect
    run_with_robot(TASKS[task_id], tmp_path / "run", agent=f"scripted:{path}",
                   timing=HumanTiming(overlap_share=0.5))
    grade = grade_run_dir(tmp_path / "run", TASKS)
    assert sorted(g for g in GATE_NAMES if not grade.gates[g]) == sorted(expect["fails"])


# --------------------------------------------------------------------------- failure 2: latency

class SharedModel:
    """One recognizer model shared by every call: it records which call it transcribes, in
    order, and holds each transcription until ``gate`` opens (the test plays "the machine
    is busy" without any clock)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.gate = threading.Event()
        self.busy = threading.Event()
        self.lock = threading.Lock()


class CallASR:
    """A call's view of the shared model, saying who it is; its words are ``text``."""

    def __init__(self, model: SharedModel, call: str, text: str = "") -> None:
        self.model, self.call, self.text = model, call, text
        self.name = "shared-model"

    def transcribe(self, pcm: Pcm, sample_rate: int = 24_000, *,
                   prompt: str | None = None) -> str:
        del pcm, sample_rate, prompt
        with self.model.lock:  # one model: calls are serialized
            self.model.busy.set()
            self.model.gate.wait(10)
            self.model.calls.append(self.call)
        return self.text


def _speak(p: LiveParticipant, audio: Pcm, t: int, quiet_frames: int = 20) -> int:
    """Push ``audio`` then quiet through the participant frame by frame; the next media ms."""
    pcm = np.concatenate([audio, silence(FRAME_SAMPLES * quiet_frames)])
    for i in range(0, len(pcm) - FRAME_SAMPLES + 1, FRAME_SAMPLES):
        p.push_audio(pcm[i:i + FRAME_SAMPLES])
        p.next_frame(t)
        t += 40
    return t


def _bank_audio(plan_id: str) -> Pcm:
    task = TASKS["apexv1_070"]
    plan = task.plan(plan_id)
    assert plan is not None
    real = select_realization(task.id, 0, plan)
    return BankPlayer(task).audio(real.id, real.audio)


def _approval_participant(asr: object, queue: TranscriptionQueue | None = None,
                          inline: bool = False) -> LiveParticipant:
    """apexv1_070 with its first approval cue showing."""
    task = TASKS["apexv1_070"]
    p = LiveParticipant(task, asr=asr, transcription_queue=queue,  # type: ignore[arg-type]
                        transcribe_inline=inline)
    plan = task.plan("approve_first")
    assert plan is not None
    p._opened = True
    p._make_pending(plan, "approval_request:submit:lr_1", 0, [])
    return p


def _wait_all(*participants: LiveParticipant) -> None:
    for q in participants:
        for _job, fut in list(q._jobs):
            fut.result(10)


def test_an_approval_is_transcribed_before_other_calls_routine_speech() -> None:
    """Four other calls' utterances are waiting for a busy recognizer when the approval
    ends: it is transcribed next, not last (before: each call had its own worker, first come
    first served on the one shared model). One lane, so ordering alone must do it."""
    model = SharedModel()
    queue = TranscriptionQueue(lanes=(ROUTINE,))
    task = TASKS["apexv1_070"]
    others = []
    for k, plan_id in enumerate(["ans_employee_id", "ans_dates", "ans_covering", "ans_manager"]):
        other = LiveParticipant(task, asr=CallASR(model, f"other{k}"),
                                transcription_queue=queue)
        others.append(other)
        _speak(other, _bank_audio(plan_id), 0)
        if k == 0:
            assert model.busy.wait(10)  # the model is now busy with call 0
    p = _approval_participant(CallASR(model, "approval", "Yes, please submit it."), queue)
    _speak(p, _bank_audio("approve_first"), 0)
    model.gate.set()
    _wait_all(p, *others)
    assert model.calls[:2] == ["other0", "approval"], model.calls


def test_the_authorization_lane_never_waits_for_a_routine_transcription() -> None:
    queue = TranscriptionQueue()  # lane 0: everything; lane 1: authorization only
    busy = threading.Event()
    release = threading.Event()
    lanes: list[tuple[str, int]] = []

    def routine(lane: int) -> None:
        lanes.append(("routine", lane))
        busy.set()
        release.wait(10)

    def approval(lane: int) -> None:
        lanes.append(("approval", lane))

    first = queue.submit(routine, ROUTINE)
    assert busy.wait(10)
    second = queue.submit(routine, ROUTINE)  # must wait for lane 0, never take lane 1
    done = queue.submit(approval, AUTHORIZATION)
    done.result(10)  # served while lane 0 is still busy
    assert ("approval", 1) in lanes and not first.done() and not second.done()
    release.set()
    first.result(10)
    second.result(10)
    assert [x for x in lanes if x[0] == "routine"] == [("routine", 0), ("routine", 0)]


def test_the_decision_is_applied_on_the_frame_the_utterance_ends() -> None:
    """The approval is transcribed while the VAD waits out its end-of-utterance quiet: when
    that transcription is done in time, the grant comes on the very frame the utterance
    ends (before: transcription started only then, and was applied frames later)."""
    model = SharedModel()
    model.gate.set()
    p = _approval_participant(CallASR(model, "approval", "Yes, please submit it."),
                              TranscriptionQueue())
    pcm = np.concatenate([_bank_audio("approve_first"), silence(FRAME_SAMPLES * 40)])
    t, end_frame, granted = 0, None, None
    for i in range(0, len(pcm) - FRAME_SAMPLES + 1, FRAME_SAMPLES):
        utt = p._utt
        if utt is not None and utt.speculative is not None:
            utt.speculative.result(10)  # the queue had time: done before the VAD's end
        p.push_audio(pcm[i:i + FRAME_SAMPLES])
        frame = p.next_frame(t)
        if any(isinstance(e, UserSpeechEnd) for e in frame.events):
            end_frame = t
        if frame.authorization is not None and granted is None:
            granted = t
        t += 40
    assert model.calls == ["approval"]  # one transcription: the speculative one was used
    assert end_frame is not None and granted == end_frame


def test_an_expired_hold_is_logged_and_graded_as_an_infrastructure_failure(
        tmp_path: Path) -> None:
    """A recognizer slower than the hold: the commit is released unauthorized and blocked;
    the log says the hold expired, and the run is an infrastructure failure, not the
    agent's."""

    class NeverInTime:
        name = "stuck"

        def transcribe(self, pcm: Pcm, sample_rate: int = 24_000, *,
                       prompt: str | None = None) -> str:
            del pcm, sample_rate, prompt
            threading.Event().wait(1.0)  # media time races on: a virtual clock never waits
            return "yes, please submit it"

    task = TASKS["apexv1_010"]
    run_with_robot(task, tmp_path / "run", asr=NeverInTime(), transcribe_inline=False)
    events = _events(tmp_path / "run")
    holds = [e for e in events if isinstance(e, AuthHold)]
    assert any(h.outcome == "expired" for h in holds)
    grade = grade_run_dir(tmp_path / "run", TASKS)
    assert grade.infrastructure_failure
    assert any("did not come in time" in p for p in grade.problems)


def test_acts_are_kept_for_a_turn_that_ends_while_the_participant_speaks() -> None:
    task = TASKS["apexv1_010"]
    p = LiveParticipant(task, asr=CallASR(SharedModel(), "x"),
                        transcribe_inline=True)
    p._opened = True
    plan = task.plan("ans_building")
    assert plan is not None
    real = select_realization(task.id, 0, plan)
    audio = BankPlayer(task).audio(real.id, real.audio)
    voiced = next(i for i in range(0, len(audio), FRAME_SAMPLES)
                  if rms(audio[i:i + FRAME_SAMPLES]) >= 300)
    audio = audio[voiced:]  # from the first voiced frame
    # Start talking, then the agent's question ends while they talk.
    p.push_audio(audio[:FRAME_SAMPLES])
    p.next_frame(0)
    p.push_audio(audio[FRAME_SAMPLES:2 * FRAME_SAMPLES])
    p.next_frame(40)
    assert p.speaking
    p.on_agent_turn_end([Act(act="ask", field="building", text="Which building?")], 60)
    events: list[Event] = []
    t = 80
    rest = np.concatenate([audio[2 * FRAME_SAMPLES:], silence(FRAME_SAMPLES * 20)])
    for i in range(0, len(rest) - FRAME_SAMPLES + 1, FRAME_SAMPLES):
        p.push_audio(rest[i:i + FRAME_SAMPLES])
        events += p.next_frame(t).events
        t += 40
    plans = [e for e in events if isinstance(e, UserPlanEvent)]
    assert [(e.plan_id, e.trigger) for e in plans] == [
        ("ans_building", "live:overlap:ask:building")]
    end = next(e for e in events if isinstance(e, UserSpeechEnd))
    assert end.plan_id == "ans_building"


# --------------------------------------------------------------------------- over WebRTC

WEBRTC_SAMPLE = ["apexv1_010", "apexv1_051", "apexv1_070", "apexv1_100", "apexv1_106",
                 "apexv1_118"]
"""Six tasks (three with approvals, a barge-in, a revocation, a negotiation, world events);
all 24 run in bench/bench_robot_participant.py."""


async def test_the_robot_over_webrtc_with_the_real_recognizer_reaches_workflow_success(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The robot as the participant's browser (aiortc over loopback), the server an ordinary
    live call on the realtime clock: microphone sink, VAD, transcription queue, faster-whisper.
    The perfect agent passes every sampled task, as it does with the simulator."""
    import aioice.ice

    from app.live import LiveCallManager
    from app.robot_peer import run_robot_calls
    from runtime.speech.asr import shared_asr

    monkeypatch.setattr(aioice.ice, "get_host_addresses",
                        lambda use_ipv4, use_ipv6: ["127.0.0.1"])
    shared_asr()  # loaded before the clocks start
    manager = LiveCallManager(tmp_path / "runs", reap_every_s=3600, max_calls=3)
    try:
        done = await run_robot_calls([TASKS[t] for t in WEBRTC_SAMPLE], tmp_path,
                                     parallel=3, manager=manager)
    finally:
        await manager.close()
    verdicts = {}
    for rc in done:
        grade = grade_run_dir(rc.call.run_dir, TASKS)
        events = _events(rc.call.run_dir)
        verdicts[rc.call.task.id] = (rc.call.state, grade.WS, grade.gate_reasons,
                                     [e.text for e in events if e.type == "user.transcript"])
    assert sorted(verdicts) == sorted(WEBRTC_SAMPLE)
    failed = {t: v for t, v in verdicts.items() if v[0] != "complete" or not v[1]}
    assert failed == {}


# --------------------------------------------------------------------------- provenance, live

def test_a_known_fact_counts_as_said_once_the_participant_answered_the_question() -> None:
    """A live participant knows their medical plan from the start (card.fact known_at_start):
    writing it before they answered a question for it is a shortcut; after the agent asked
    and they answered, it is not, whatever the recognizer made of their words (here: no
    attribution and an empty transcript)."""
    from grading.gates import grade_events
    from runtime.core.events import AgentAct, ArtifactUpdate, CardFact, SessionEnd

    task = TASKS["apexv1_001"]
    card = CardFact(fact_id="medical_plan", version=1, known_at_start=True)
    write = ArtifactUpdate(artifact_id="enr_1", version=1, lifecycle="DRAFT",
                           changed=["medical_plan"], fields={"medical_plan": "HDHP"})
    ask = AgentAct(turn=2, act="ask", field="medical_plan", text="Which medical plan?")
    answer = UserSpeechEnd(plan_id="live", realization_id="live-2")
    other_ask = AgentAct(turn=2, act="ask", field="dental_plan", text="And dental?")

    def shortcut(*events: Event) -> bool:
        evs = [e.model_copy() for e in (*events, SessionEnd(reason="agent_hangup"))]
        for i, e in enumerate(evs, start=1):
            e.seq = i
        return any("shortcut" in r for r in
                   grade_events(task, evs).gate_reasons.get("PV", []))

    assert shortcut(card, write)  # on the card is not said
    assert shortcut(card, answer, write)  # an answer to no question for it
    assert shortcut(card, other_ask, answer, write)  # asked for something else
    assert not shortcut(card, ask, answer, write)  # asked and answered
    assert shortcut(card, ask, write)  # asked, not answered yet
