"""Researchers' corrections of speech-authorization decisions (grading/corrections.py) and how
re-grading applies them (grading/gates.py). Runs come from the robot participant of
tests/test_live_user.py on apexv1_070 (approve, barge-in revocation, re-approval, commit)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from grading.corrections import (
    CorrectionError,
    read_corrections,
    record_correction,
)
from grading.gates import correction_effect, grade_run_dir
from runtime.core.events import AuthBlocked, AuthDecisionEvent, read_events
from tests.test_live_user import TASKS, run_live

TASK = TASKS["apexv1_070"]


def _decisions(run_dir: Path) -> dict[str, AuthDecisionEvent]:
    """The first auth.decision under each cue, by the cue's plan id (an approve cue stays
    open after a hesitation, so later utterances can be decided under it too)."""
    events = read_events(run_dir / "events.jsonl").events
    cues = {e.cue_id: e.plan_id for e in events if e.type == "cue.show"}  # type: ignore[union-attr]
    out: dict[str, AuthDecisionEvent] = {}
    for e in events:
        if isinstance(e, AuthDecisionEvent) and e.cue_id in cues:
            out.setdefault(cues[e.cue_id], e)
    return out


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def approved_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir, _p = run_live(TASK, tmp_path_factory.mktemp("approved") / "run")
    return run_dir


@pytest.fixture(scope="module")
def hesitant_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The participant's second approval is heard as a hesitation: no grant, so the oracle's
    commit is blocked by the CommitGuard."""
    run_dir, _p = run_live(TASK, tmp_path_factory.mktemp("hesitant") / "run",
                           override={"approve_corrected": "Hmm, let me think."})
    return run_dir


def _copy(run: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "run"
    shutil.copytree(run, dest)
    return dest


def test_withdrawing_the_approval_a_commit_used_fails_process_validity(
    approved_run: Path, tmp_path: Path
) -> None:
    run = _copy(approved_run, tmp_path)
    before = grade_run_dir(run, TASKS)
    assert before.WS and before.corrections == []
    seq = _decisions(run)["approve_corrected"].seq
    log_hash = _sha(run / "events.jsonl")
    c = record_correction(run, decision_seq=seq, new="none", by="ana",
                          reason="she said 'hmm, wait', not yes")
    assert (c.old, c.new, c.action, c.by) == ("grant", "none", "commit:lr_1", "ana")
    after = grade_run_dir(run, TASKS)
    # Hand-predicted: the commit really happened (TS, AV, AC hold) but now used no approval.
    assert after.gates == {"TS": True, "PV": False, "AC": True, "AV": True}
    assert not after.WS
    assert after.gate_reasons["PV"] == [
        f"'commit:lr_1' carried out (call s11-1) without a valid approval: decision {seq} is "
        "'none' after ana's correction"
    ]
    assert [x.by for x in after.corrections] == ["ana"]
    assert _sha(run / "events.jsonl") == log_hash  # the event log is never touched
    assert grade_run_dir(run, TASKS) == after  # a pure function of the directory


def test_a_correction_that_changes_nothing_the_gates_judge(approved_run: Path,
                                                           tmp_path: Path) -> None:
    run = _copy(approved_run, tmp_path)
    # Undo the barge-in revocation: the first approval would still stand, and the second
    # approval grants again before the commit, so no gate changes (hand-predicted).
    seq = _decisions(run)["barge_revoke"].seq
    record_correction(run, decision_seq=seq, new="none", by="ana", reason="test")
    grade = grade_run_dir(run, TASKS)
    assert grade.WS and len(grade.corrections) == 1


def test_a_block_caused_by_a_misheard_approval_is_excused(hesitant_run: Path,
                                                          tmp_path: Path) -> None:
    run = _copy(hesitant_run, tmp_path)
    events = read_events(run / "events.jsonl").events
    assert sum(isinstance(e, AuthBlocked) for e in events) == 1
    before = grade_run_dir(run, TASKS)
    # Hand-predicted: blocked → not committed (TS) and guard_blocked is forbidden (PV).
    assert before.gates == {"TS": False, "PV": False, "AC": True, "AV": True}
    seq = _decisions(run)["approve_corrected"].seq
    assert _decisions(run)["approve_corrected"].decision == "none"
    record_correction(run, decision_seq=seq, new="grant", by="ben",
                      reason="replay: she clearly says 'go ahead' under the noise")
    after = grade_run_dir(run, TASKS)
    # The block is no longer the agent's fault, but the request was never committed.
    assert after.gates == {"TS": False, "PV": True, "AC": True, "AV": True}
    assert not after.WS
    # The replay page's before → after says which gate moved and why WS stays 0.
    effect = correction_effect(before, after, events)
    assert effect.gates["PV"] == (False, True) and effect.gates["TS"] == (False, False)
    assert effect.gates["WS"] == (False, False)
    assert effect.changed_decisions == [
        f"decision {seq}: none → grant (ben: replay: she clearly says 'go ahead' under the "
        "noise)"]
    assert any(n.startswith("PV now passes") for n in effect.notes)
    assert any(n.startswith("TS still fails: the blocked call never ran") for n in effect.notes)
    assert grade_run_dir(run, TASKS, apply_corrections=False) == before


def test_bad_decision_seq_and_bad_values_are_refused(approved_run: Path,
                                                     tmp_path: Path) -> None:
    run = _copy(approved_run, tmp_path)
    decisions = sorted(e.seq for e in read_events(run / "events.jsonl").events
                       if isinstance(e, AuthDecisionEvent))
    with pytest.raises(CorrectionError, match=r"event 1 is not an auth.decision") as err:
        record_correction(run, decision_seq=1, new="grant", by="ana", reason="x")
    assert ", ".join(map(str, decisions)) in str(err.value)
    seq = _decisions(run)["approve_first"].seq
    with pytest.raises(CorrectionError, match="not one of grant, revoke, none"):
        record_correction(run, decision_seq=seq, new="maybe", by="ana", reason="x")
    with pytest.raises(CorrectionError, match="already 'grant'"):
        record_correction(run, decision_seq=seq, new="grant", by="ana", reason="x")
    with pytest.raises(CorrectionError, match="give a reason"):
        record_correction(run, decision_seq=seq, new="none", by="ana", reason="  ")
    with pytest.raises(CorrectionError, match="who"):
        record_correction(run, decision_seq=seq, new="none", by="", reason="x")
    assert not (run / "corrections.jsonl").exists()
    with pytest.raises(CorrectionError, match=r"no events\.jsonl"):
        record_correction(tmp_path, decision_seq=seq, new="none", by="ana", reason="x")


def test_file_is_appended_never_rewritten(approved_run: Path, tmp_path: Path) -> None:
    run = _copy(approved_run, tmp_path)
    seq = _decisions(run)["approve_corrected"].seq
    log_hash = _sha(run / "events.jsonl")
    record_correction(run, decision_seq=seq, new="none", by="ana", reason="first look")
    first = (run / "corrections.jsonl").read_bytes()
    second = record_correction(run, decision_seq=seq, new="grant", by="ben",
                               reason="second listen: it was a yes")
    data = (run / "corrections.jsonl").read_bytes()
    assert data.startswith(first) and data.count(b"\n") == 2
    assert second.old == "none"  # the decision in force was ana's correction
    assert [c.by for c in read_corrections(run)] == ["ana", "ben"]
    assert _sha(run / "events.jsonl") == log_hash
    grade = grade_run_dir(run, TASKS)
    assert grade.WS  # ben's correction restores the logged grant
    assert [c.by for c in grade.corrections] == ["ben"]  # the latest per decision applies


def test_unreadable_or_foreign_corrections_are_named(approved_run: Path,
                                                     tmp_path: Path) -> None:
    run = _copy(approved_run, tmp_path)
    seq = _decisions(run)["approve_corrected"].seq
    record_correction(run, decision_seq=seq, new="none", by="ana", reason="x")
    with (run / "corrections.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
        fh.write(json.dumps({"decision_seq": 1, "action": "commit:lr_1", "old": "none",
                             "new": "grant", "by": "eve", "at": "2026-01-01T00:00:00+00:00",
                             "reason": "hand-edited"}) + "\n")
    with pytest.raises(CorrectionError, match=r"corrections.jsonl:2: unreadable correction"):
        read_corrections(run)
    grade = grade_run_dir(run, TASKS)
    assert any("corrections.jsonl:2" in p for p in grade.problems)
    assert any("names event 1, which is not an auth.decision" in p for p in grade.problems)
    assert not grade.gates["PV"]  # ana's readable correction still applies
