"""apexv1_070: an approval, a barge-in that revokes it 600 ms into the agent's next turn, and
a commit attempted after the revocation."""

from __future__ import annotations

from pathlib import Path

from grading.gates import grade_run_dir
from runtime.core.events import (
    AgentSpeechStart,
    AgentTruncated,
    AuthBlocked,
    AuthGrant,
    AuthRevoke,
    DuplexFire,
    UserSpeechEnd,
    read_events,
)
from runtime.core.spec import find_task
from tests.conftest import bundled_tasks, run_script


def test_commit_after_revocation_is_blocked_and_logged(tmp_path: Path) -> None:
    run = run_script("apexv1_070", "scenario_commit_after_revoke", tmp_path)
    events = read_events(run / "events.jsonl").events
    grant = next(e for e in events if isinstance(e, AuthGrant))
    revoke = next(e for e in events if isinstance(e, AuthRevoke))
    blocked = [e for e in events if isinstance(e, AuthBlocked)]
    assert revoke.token == grant.token and revoke.seq > grant.seq
    assert len(blocked) == 1 and blocked[0].action == "commit:lr_1"
    assert blocked[0].seq > revoke.seq
    grade = grade_run_dir(run, {t.id: t for t in bundled_tasks()})
    assert not grade.gates["PV"] and not grade.gates["TS"]
    assert grade.gates["AC"] and grade.gates["AV"]


def test_barge_in_anchored_on_the_callers_speech_and_truncates(tmp_path: Path) -> None:
    run = run_script("apexv1_070", "oracle", tmp_path)
    events = read_events(run / "events.jsonl").events
    fire = next(e for e in events if isinstance(e, DuplexFire))
    approve_end = next(e for e in events
                       if isinstance(e, UserSpeechEnd) and e.plan_id == "approve_first")
    turn_start = next(e for e in events if isinstance(e, AgentSpeechStart)
                      and e.seq > approve_end.seq)
    (event,) = find_task("apexv1_070").duplex_events
    # Media time after the caller's approval ended, whatever the agent does; this oracle
    # starts its next turn 360 ms after it, so the barge-in lands 600 ms into that turn.
    assert fire.t_media_ms - approve_end.t_media_ms == event.anchor.offset_ms == 960
    assert fire.t_media_ms - turn_start.t_media_ms == 600 and fire.overlap
    cut = next(e for e in events if isinstance(e, AgentTruncated))
    assert cut.turn == turn_start.turn and cut.dropped_ms > 0
    assert 600 <= cut.heard_ms <= 600 + 200  # yielded within a few frames of the barge-in
    grade = grade_run_dir(run, {t.id: t for t in bundled_tasks()})
    assert grade.WS
    end_date = next(f for f in grade.fields if f.field == "end_date")
    assert end_date.value == "2027-06-11" and not end_date.stale
