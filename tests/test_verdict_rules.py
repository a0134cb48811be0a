"""One test per rule that makes a verdict defensible (issue "Trustworthy verdicts", point 5).
Each fails if its rule is removed; the adversarial probes in tests/probes/ test the same rules
end to end through agents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from grading.gates import grade_events
from runtime.core.events import (
    ArtifactUpdate,
    AuthBlocked,
    AuthGrant,
    AuthInvalidated,
    AuthUse,
    DuplexFire,
    Event,
    SessionEnd,
    ToolResult,
    UserPlanEvent,
    UserSpeechEnd,
    UserSpeechStart,
    read_events,
)
from runtime.core.spec import PredUpdatedAfter, agent_instructions, find_task
from runtime.session.workbench import KnowledgeBase, Workbench
from tests.conftest import bundled_tasks, run_script


def _bench(task_id: str) -> tuple[Workbench, list[Event]]:
    log: list[Event] = []

    def emit(e: Event) -> Event:
        e.seq = len(log) + 1
        log.append(e)
        return e

    return Workbench(find_task(task_id), emit), log


def _seq(events: list[Event]) -> list[Event]:
    for i, e in enumerate(events, start=1):
        e.seq = i
    return events


# --------------------------------------------------------------------------- provenance

def test_a_value_written_before_anyone_revealed_it_is_a_shortcut() -> None:
    task = find_task("apexv1_001")
    write = ArtifactUpdate(artifact_id="enr_1", version=1, lifecycle="DRAFT",
                           changed=["medical_plan"], fields={"medical_plan": "HDHP"},
                           t_media_ms=0)
    early = grade_events(task, _seq([write.model_copy(), SessionEnd(reason="agent_hangup")]))
    reasons = early.gate_reasons.get("PV", [])
    assert any("invalid shortcut: enr_1.medical_plan = 'HDHP' written at 0.0 s" in r
               for r in reasons), reasons
    told = UserPlanEvent(plan_id="ans_medical_plan", intent="answer", trigger="ask",
                         facts=["medical_plan@1"])
    later = grade_events(task, _seq([told, write.model_copy(), SessionEnd(reason="agent_hangup")]))
    assert not any("shortcut" in r for r in later.gate_reasons.get("PV", []))
    # A wrong value is not a shortcut (Artifact Validity judges it).
    wrong = write.model_copy(update={"fields": {"medical_plan": "PPO"}})
    assert not any("shortcut" in r for r in grade_events(task, _seq(
        [wrong, SessionEnd(reason="agent_hangup")])).gate_reasons.get("PV", []))


def test_a_document_never_reveals_the_callers_own_details() -> None:
    """A policy that names the Sheffield office does not tell the agent that this caller works
    there: a searched document excuses document fields, not the caller's facts (apexv1_085's
    shortcut probe searched first and had some of its guesses excused this way)."""
    task = find_task("apexv1_085")
    bench, log = _bench("apexv1_085")
    found = bench.call_tool("k1", "kb_search", {"query": "home working allowance Sheffield"})
    assert found.ok and "Sheffield" in str(found.result), found.result  # the premise
    write = ArtifactUpdate(artifact_id="memo_1", version=1, lifecycle="DRAFT",
                           changed=["base_office"], fields={"base_office": "Sheffield"})
    searched = grade_events(task, _seq([*log, write.model_copy(),
                                        SessionEnd(reason="agent_hangup")]))
    assert any("invalid shortcut: memo_1.base_office" in r
               for r in searched.gate_reasons.get("PV", [])), searched.gate_reasons
    told = UserPlanEvent(plan_id="ans_office", intent="answer", trigger="ask",
                         facts=["base_office@1"])
    said = grade_events(task, _seq([*log, told, write.model_copy(),
                                    SessionEnd(reason="agent_hangup")]))
    assert not any("base_office" in r for r in said.gate_reasons.get("PV", []))
    # The update tool's receipt names no caller detail, whatever numbers it holds.
    receipt = ToolResult(call_id="k2", name="update_memo_1", ok=True,
                         result={"artifact_id": "memo_1", "version": 3})
    days = ArtifactUpdate(artifact_id="memo_1", version=4, lifecycle="DRAFT",
                          changed=["home_days_per_week"], fields={"home_days_per_week": 3})
    guessed = grade_events(task, _seq([receipt, days, SessionEnd(reason="agent_hangup")]))
    assert any("invalid shortcut: memo_1.home_days_per_week" in r
               for r in guessed.gate_reasons.get("PV", [])), guessed.gate_reasons


def test_the_reference_date_reveals_dates_not_the_numbers_in_it() -> None:
    """apexv1_035's reference date is February 10, 2027: it does not tell the agent that the
    injured man was signed off for 10 days (a shortcut agent wrote that at 0 s unflagged)."""
    task = find_task("apexv1_035")
    assert task.reference_date.day == 10  # the premise
    write = ArtifactUpdate(artifact_id="report_1", version=1, lifecycle="DRAFT",
                           changed=["days_signed_off"], fields={"days_signed_off": 10})
    early = grade_events(task, _seq([write, SessionEnd(reason="agent_hangup")]))
    assert any("invalid shortcut: report_1.days_signed_off" in r
               for r in early.gate_reasons.get("PV", [])), early.gate_reasons


def test_a_yes_to_something_else_reveals_no_yes_no_field() -> None:
    """apexv1_105: the caller's "Yes, that's me" does not tell the agent the call button
    passed its test; a yes said about the button, or the answer to the question for it,
    does."""
    task = find_task("apexv1_105")
    write = ArtifactUpdate(artifact_id="rc_1", version=1, lifecycle="DRAFT",
                           changed=["call_button_tested"], fields={"call_button_tested": "yes"})

    def flagged(*before: Event) -> bool:
        graded = grade_events(task, _seq([*[e.model_copy() for e in before], write.model_copy(),
                                          SessionEnd(reason="agent_hangup")]))
        return any("rc_1.call_button_tested" in r for r in graded.gate_reasons.get("PV", []))

    def said(text: str) -> UserSpeechStart:
        return UserSpeechStart(plan_id="p", realization_id="r", text=text, duration_ms=900)

    assert flagged(said("Yes, that's me, Dana from the front."))
    assert not flagged(said("Yes, the call button lit up the front desk panel."))
    assert not flagged(UserPlanEvent(plan_id="ans_button", intent="answer", trigger="ask",
                                     facts=["call_button_tested@1"]))


def test_a_number_in_the_context_reveals_only_the_field_it_is_about() -> None:
    """The context's "room ids look like two letters and a number" is no recheck time of 2
    hours (apexv1_105), and its "1:30 PM" slot no 30 seats a session (apexv1_061); the
    document and the caller's answer are where they come from."""
    for task_id, artifact, name, value in (("apexv1_105", "rc_1", "recheck_hours", 2),
                                           ("apexv1_061", "sched_1", "seats_per_session", 30)):
        task = find_task(task_id)
        write = ArtifactUpdate(artifact_id=artifact, version=1, lifecycle="DRAFT",
                               changed=[name], fields={name: value})
        graded = grade_events(task, _seq([write, SessionEnd(reason="agent_hangup")]))
        assert any(f"invalid shortcut: {artifact}.{name}" in r
                   for r in graded.gate_reasons.get("PV", [])), (task_id, graded.gate_reasons)


def test_a_lookup_of_the_callers_record_reveals_their_details() -> None:
    task = find_task("apexv1_021")
    write = ArtifactUpdate(artifact_id="opp_1", version=1, lifecycle="DRAFT",
                           changed=["company_name"],
                           fields={"company_name": "Halloway Cold Storage"})
    bare = grade_events(task, _seq([write.model_copy(), SessionEnd(reason="agent_hangup")]))
    assert any("company_name" in r for r in bare.gate_reasons.get("PV", []))
    record = ToolResult(call_id="k", name="lookup_account", ok=True,
                        result={"account_id": "ACC-60418", "company": "Halloway Cold Storage"})
    looked_up = grade_events(task, _seq([record, write.model_copy(),
                                         SessionEnd(reason="agent_hangup")]))
    assert not any("company_name" in r for r in looked_up.gate_reasons.get("PV", []))


def test_a_document_value_needs_the_document_returned_first() -> None:
    task = find_task("apexv1_001")
    write = ArtifactUpdate(artifact_id="enr_1", version=1, lifecycle="DRAFT",
                           changed=["monthly_premium"], fields={"monthly_premium": "225"})
    bare = grade_events(task, _seq([write.model_copy(), SessionEnd(reason="agent_hangup")]))
    assert any("monthly_premium" in r for r in bare.gate_reasons.get("PV", []))
    found = ToolResult(call_id="k", name="kb_search", ok=True, evidence=["benefits_policy"],
                       result={"results": []})
    after = grade_events(task, _seq([found, write.model_copy(),
                                     SessionEnd(reason="agent_hangup")]))
    assert not any("monthly_premium" in r for r in after.gate_reasons.get("PV", []))


# --------------------------------------------------------------------------- CommitGuard first

def test_commit_guard_checks_before_the_lifecycle() -> None:
    wb, log = _bench("apexv1_070")
    r = wb.call_tool("c1", "commit", {"artifact_id": "lr_1"})  # a DRAFT, no approval
    assert not r.ok and "CommitGuard" in (r.error or "")
    assert [e.call_id for e in log if isinstance(e, AuthBlocked)] == ["c1"]
    # With a valid approval the lifecycle check refuses, and the token is not used up.
    wb.grant("commit:lr_1", plan_id="approve")
    r = wb.call_tool("c2", "commit", {"artifact_id": "lr_1"})
    assert not r.ok and "still DRAFT" in (r.error or "")
    assert wb.ledger.valid_token("commit:lr_1") is not None
    assert not any(isinstance(e, AuthUse) for e in log)


def test_a_material_edit_voids_the_approval() -> None:
    wb, log = _bench("apexv1_070")
    wb.call_tool("c1", "update_lr_1", {"fields": {"reason": "family trip"}})
    wb.grant("commit:lr_1", plan_id="approve")
    grant = next(e for e in log if isinstance(e, AuthGrant))
    assert grant.artifact_version == 1
    wb.call_tool("c2", "update_lr_1", {"fields": {"reason": "family trip"}})  # same value
    assert wb.ledger.valid_token("commit:lr_1") is not None
    wb.call_tool("c3", "update_lr_1", {"fields": {"reason": "wedding"}})
    assert wb.ledger.valid_token("commit:lr_1") is None
    (void,) = [e for e in log if isinstance(e, AuthInvalidated)]
    assert void.changed == ["reason"] and void.action == "commit:lr_1"


# --------------------------------------------------------------------------- correction uptake

def test_correction_uptake_needs_no_new_write() -> None:
    task = find_task("apexv1_001")
    pred = PredUpdatedAfter(kind="updated_after", artifact="enr_1", field="hsa_contribution",
                            plan="correct_hsa")
    grading = task.grading.model_copy(update={"must_hold": [pred], "forbidden": [],
                                              "required_actions": [], "required_evidence": []})
    t = task.model_copy(update={"grading": grading})
    said = [UserPlanEvent(plan_id="correct_hsa", intent="correct", trigger="duplex",
                          facts=["hsa_contribution@1", "hsa_contribution@2"]),
            UserSpeechEnd(plan_id="correct_hsa", realization_id="r1")]
    already = ArtifactUpdate(artifact_id="enr_1", version=1, lifecycle="DRAFT",
                             changed=["hsa_contribution"], fields={"hsa_contribution": "1200"})
    right = grade_events(t, _seq([*said, already, SessionEnd(reason="agent_hangup")]))
    assert not any("updated_after" in r for r in right.gate_reasons.get("PV", []))
    stale = already.model_copy(update={"fields": {"hsa_contribution": "1000"}})
    wrong = grade_events(t, _seq([*said, stale, SessionEnd(reason="agent_hangup")]))
    assert any("updated_after" in r for r in wrong.gate_reasons.get("PV", []))


# --------------------------------------------------------------------------- 1.0 only

def test_a_partial_list_fails_artifact_validity() -> None:
    task = find_task("apexv1_102")
    spec = next(f for f in task.artifacts[0].fields if f.name == "ppe")
    items = [i.strip() for i in str(spec.gold).split(",")]
    partial = ", ".join(items[:-1])
    upd = ArtifactUpdate(artifact_id=task.artifacts[0].id, version=1, lifecycle="DRAFT",
                         changed=["ppe"], fields={"ppe": partial})
    grade = grade_events(task, _seq([upd, SessionEnd(reason="agent_hangup")]))
    row = next(f for f in grade.fields if f.field == "ppe")
    assert 0 < row.score < 1 and not row.correct
    assert any("wrong field(s)" in r and "ppe" in r for r in grade.gate_reasons["AV"])


# --------------------------------------------------------------------------- knowledge bases

def test_knowledge_tasks_have_realistic_knowledge_bases() -> None:
    for task in bundled_tasks():
        if task.taxonomy.knowledge == "none":
            continue
        assert len(task.documents) >= 12, f"{task.id}: {len(task.documents)} documents"


def test_a_query_with_no_content_word_finds_nothing() -> None:
    kb = KnowledgeBase(find_task("apexv1_001").documents)
    assert kb.search("the") == [] and kb.search("what is it?") == []
    hits = kb.search("monthly premium HDHP Standard dental Vision Basic family")
    assert hits and hits[0].id == "benefits_policy" and len(hits) <= 3


def test_required_evidence_counts_only_when_returned() -> None:
    task = find_task("apexv1_001")
    missed = ToolResult(call_id="k", name="kb_search", ok=True, evidence=["enrollment_rules"],
                        result={"results": []})
    grade = grade_events(task, _seq([missed, SessionEnd(reason="agent_hangup")]))
    assert "required evidence never retrieved: benefits_policy" in grade.gate_reasons["AC"]


# --------------------------------------------------------------------------- duplex anchors

def _fire_after_anchor(run_dir: Path) -> tuple[int, bool | None]:
    events = read_events(run_dir / "events.jsonl").events
    fire = next(e for e in events if isinstance(e, DuplexFire))
    end = next(e for e in events if isinstance(e, UserSpeechEnd) and e.plan_id == "ans_hsa")
    return fire.anchor_ms - end.t_media_ms, fire.overlap


def test_duplex_events_fire_on_media_time_whatever_the_agent_does(tmp_path: Path) -> None:
    """The HSA barge-in fires the same media time after the caller's answer for a prompt
    agent and for one that waits 9 s before replying; the log says which one it overlapped."""
    task = find_task("apexv1_001")
    oracle = task.folder / "scripts" / "oracle.yaml"
    raw: dict[str, Any] = yaml.safe_load(oracle.read_text(encoding="utf-8"))
    slow = [dict(t) for t in raw["turns"]]
    i = next(k for k, t in enumerate(slow) if "beneficiary" in (t.get("say") or ""))
    slow[i] = {**slow[i], "after": {"ms": 9000}}
    slow_file = tmp_path / "slow.yaml"
    slow_file.write_text(yaml.safe_dump({**raw, "turns": slow}), encoding="utf-8")
    fast_offset, fast_overlap = _fire_after_anchor(run_script("apexv1_001", oracle,
                                                              tmp_path / "fast"))
    slow_offset, slow_overlap = _fire_after_anchor(run_script("apexv1_001", slow_file,
                                                              tmp_path / "slow"))
    (event,) = task.duplex_events
    assert fast_offset == slow_offset == event.anchor.offset_ms
    assert fast_overlap is True and slow_overlap is False


# --------------------------------------------------------------------------- reference dates

def test_every_task_tells_the_agent_its_reference_date() -> None:
    for task in bundled_tasks():
        text = agent_instructions(task)
        assert f"{task.reference_date:%B} {task.reference_date.day}, " \
               f"{task.reference_date.year}" in text, task.id

