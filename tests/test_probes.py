"""Adversarial probes (tests/probes/*.yaml): scripted agents written the way an agent we did not
build would act — natural phrasings, shortcuts, edge cases — each with the verdict the paper
implies. Every probe runs on the real task, the frozen simulator and the real graders.

A probe's ``expect`` may hold:

* ``WS``: the Workflow Success verdict; ``fails``: exactly these gates fail;
  ``fails_include``: at least these gates fail; ``reasons``: substrings that must appear in
  the gate reasons;
* ``plans_include`` / ``plans_include_any`` / ``no_plans``: user plans the caller speaks (or
  must not); ``plans_in_order``: a subsequence of the plans spoken; ``first_reply_not``: the
  plan the caller speaks right after the agent's second turn must not be this one;
* ``events`` / ``no_events``: event types that must (not) be in the log;
* ``repeat_differs``: a plan spoken twice with two different realizations;
* ``end_reason_not``: how the session must not end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grading.gates import GATE_NAMES, grade_run_dir
from runtime.agents.scripted import load_script
from runtime.core.events import (
    AgentSpeechStart,
    SessionEnd,
    UserPlanEvent,
    UserSpeechStart,
    read_events,
)
from tests.conftest import bundled_tasks, run_script

PROBES = sorted((Path(__file__).parent / "probes").glob("*.yaml"))


def test_there_are_probes() -> None:
    assert len(PROBES) >= 15


@pytest.mark.parametrize("probe", PROBES, ids=[p.stem for p in PROBES])
def test_probe_verdict(probe: Path, tmp_path: Path) -> None:
    script = load_script(probe)
    assert script.task, f"{probe.name}: a probe names its task"
    expect: dict[str, Any] = script.expect
    run_dir = run_script(script.task, probe, tmp_path)
    grade = grade_run_dir(run_dir, {t.id: t for t in bundled_tasks()})
    events = read_events(run_dir / "events.jsonl").events
    assert not grade.infrastructure_failure, grade.end_reason
    failed = sorted(g for g in GATE_NAMES if not grade.gates[g])
    reasons = "\n".join(r for rs in grade.gate_reasons.values() for r in rs)
    plans = [e.plan_id for e in events if isinstance(e, UserPlanEvent)]
    types = {e.type for e in events}
    if "WS" in expect:
        assert grade.WS is expect["WS"], grade.gate_reasons
    if "fails" in expect:
        assert failed == sorted(expect["fails"]), grade.gate_reasons
    for gate in expect.get("fails_include", []):
        assert gate in failed, grade.gate_reasons
    for text in expect.get("reasons", []):
        assert text in reasons, reasons
    for plan in expect.get("plans_include", []):
        assert plan in plans, plans
    if "plans_include_any" in expect:
        assert set(expect["plans_include_any"]) & set(plans), plans
    for plan in expect.get("no_plans", []):
        assert plan not in plans, plans
    if "plans_in_order" in expect:
        it = iter(plans)
        assert all(p in it for p in expect["plans_in_order"]), plans
    for kind in expect.get("events", []):
        assert kind in types, sorted(types)
    for kind in expect.get("no_events", []):
        assert kind not in types, sorted(types)
    if "first_reply_not" in expect:
        second_turn = [e for e in events if isinstance(e, AgentSpeechStart)][1]
        reply = next(e for e in events if isinstance(e, UserPlanEvent) and e.seq > second_turn.seq)
        assert reply.plan_id != expect["first_reply_not"], plans
    if "repeat_differs" in expect:
        said = [e.realization_id for e in events
                if isinstance(e, UserSpeechStart) and e.plan_id == expect["repeat_differs"]]
        assert len(said) >= 2 and said[0] != said[1], said
    if "end_reason_not" in expect:
        end = next(e for e in events if isinstance(e, SessionEnd))
        assert end.reason != expect["end_reason_not"]
