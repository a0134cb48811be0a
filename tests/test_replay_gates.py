"""Gate failures for the replay (issue #17): each line of ``gate_reasons`` also comes as a
``gate_failures`` entry with a readable sentence and the events behind it (seq, media time),
and the replay page links each one to its moment. ``gate_reasons`` is unchanged."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grading.gates import RunGrade, grade_events
from runtime.core.events import (
    AgentAct,
    ArtifactLifecycle,
    ArtifactUpdate,
    AuthBlocked,
    AuthGrant,
    AuthUse,
    Event,
    EventLog,
    SessionEnd,
    SessionStart,
    ToolCall,
    ToolResult,
)
from runtime.core.spec import find_task
from tests.webclient import WebClient

TASK = "apexv1_070"


def _events() -> list[Event]:
    """An agent that writes one field, tries the availability check with the wrong dates, is
    blocked once, then commits without having asked for approval."""
    out: list[Event] = []
    timeline: list[tuple[int, Event]] = [
        (0, SessionStart(task_id=TASK, task_version="1", agent="scripted:x", seed=0,
                         clock="virtual", sample_rate=24000, frame_ms=40)),
        (4000, ToolCall(call_id="c1", name="check_availability",
                        args={"start_date": "2027-01-01", "end_date": "2027-01-02"})),
        (4100, ToolResult(call_id="c1", name="check_availability", ok=True)),
        (9000, ArtifactUpdate(artifact_id="lr_1", version=1, lifecycle="DRAFT",
                              changed=["end_date"], fields={"end_date": "2027-06-30"})),
        (12000, AuthBlocked(action="commit:lr_1", call_id="c2", reason="no token")),
        (15000, AgentAct(turn=3, act="inform", text="done")),
        (16000, AuthGrant(token="t1", action="commit:lr_1")),
        (17000, AuthUse(token="t1", action="commit:lr_1", call_id="c3")),
        (17100, ArtifactLifecycle(artifact_id="lr_1", version=1, from_state="DRAFT",
                                  to_state="COMMITTED")),
        (18000, SessionEnd(reason="agent_hangup")),
    ]
    for seq, (t, ev) in enumerate(timeline, start=1):
        ev.seq, ev.t_media_ms = seq, t
        out.append(ev)
    return out


@pytest.fixture(scope="module")
def grade() -> RunGrade:
    return grade_events(find_task(TASK), _events())


def test_gate_failures_mirror_gate_reasons(grade: RunGrade) -> None:
    assert grade.gate_reasons, "the run is meant to fail gates"
    assert set(grade.gate_failures) == set(grade.gate_reasons)
    for gate, reasons in grade.gate_reasons.items():
        assert [f.reason for f in grade.gate_failures[gate]] == reasons


def test_each_failure_is_a_sentence_with_the_events_behind_it(grade: RunGrade) -> None:
    by_reason = {f.reason: f for fs in grade.gate_failures.values() for f in fs}
    for f in by_reason.values():
        assert '{"' not in f.text and '"kind"' not in f.text, f.text
    # forbidden guard_blocked: the block itself, at 12 s
    blocked = next(f for r, f in by_reason.items() if r.startswith("forbidden predicate"))
    assert blocked.seqs == [5] and blocked.t_media_ms == 12000
    assert blocked.text.startswith("Forbidden, but it happened: the CommitGuard blocked")
    # approval never requested before the commit: the auth.use
    approval = next(f for r, f in by_reason.items() if "approval_requested_before" in r)
    assert approval.seqs == [8] and approval.t_media_ms == 17000
    # the wrong end date: the update that wrote it (TS field predicate and AV)
    field = next(f for r, f in by_reason.items() if r.startswith("terminal") and "end_date" in r)
    assert field.seqs == [4] and field.t_media_ms == 9000 and "'2027-06-30'" in field.text
    # the availability check with the wrong dates: the attempt, and the dates in words
    action = grade.gate_failures["AC"][0]
    assert action.seqs == [2] and action.t_media_ms == 4000
    assert "end_date 2027-06-11" in action.text and "1 attempt" in action.text


def test_a_failure_nothing_in_the_log_shows_has_no_moment() -> None:
    events = [e for e in _events() if not isinstance(e, ToolCall | ToolResult)]
    grade = grade_events(find_task(TASK), events)
    action = grade.gate_failures["AC"][0]
    assert action.seqs == [] and action.t_media_ms is None


def test_grade_json_keeps_its_keys_and_adds_gate_failures(grade: RunGrade) -> None:
    dumped = grade.model_dump(mode="json")
    for key in ("run_id", "task_id", "gates", "WS", "afa", "stale_fields", "fields",
                "gate_reasons", "end_reason", "infrastructure_failure", "problems"):
        assert key in dumped
    assert all(isinstance(r, str) for rs in dumped["gate_reasons"].values() for r in rs)
    # a grade stored before the new key still loads
    old = {k: v for k, v in dumped.items() if k != "gate_failures"}
    assert RunGrade.model_validate(old).gate_failures == {}


@pytest.mark.database
def test_replay_page_links_each_gate_failure(tmp_path: Path, web_client: WebClient) -> None:
    run_dir = tmp_path / "runs" / "hand" / TASK / "r0"
    run_dir.mkdir(parents=True)
    log = EventLog(run_dir / "events.jsonl", wall_clock=False)
    for ev in _events():
        log.emit(ev, ev.t_media_ms)
    log.close()
    (run_dir / "meta.json").write_text(json.dumps({"task_id": TASK, "agent": "scripted:x",
                                                   "seed": 0, "run_id": "hand"}))
    page = web_client(tmp_path / "runs").get(f"/runs/hand/{TASK}/r0/replay").text
    listing = page.split('id="gate-failures"', 1)[1].split("</ul>", 1)[0]
    assert 'class="gate-link" href="#t=12.0" data-seek="12.0" data-seqs="5"' in listing
    assert 'href="#t=17.0" data-seek="17.0" data-seqs="8"' in listing
    # the raw predicate stays in the title attribute only, never in the text shown
    assert "&#34;kind&#34;" in listing
    assert "&#34;kind&#34;" not in re.sub(r'title="[^"]*"', "", listing)
    assert "Forbidden, but it happened: the CommitGuard blocked a gated action" in listing
    assert 'aria-pressed="false"' in page and 'id="zoom-in"' in page
