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

from grading.gates import grade_run_dir
from runtime.agents.scripted import load_script
from runtime.core.events import UserPlanEvent, read_events
from tests.conftest import bundled_tasks, run_script
from tests.probe_expect import probe_problems

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
    assert probe_problems(expect, grade, events) == []


def test_a_run_that_departs_from_its_expectation_is_reported(tmp_path: Path) -> None:
    probe = PROBES[0]
    run_dir = run_script(load_script(probe).task or "", probe, tmp_path)
    grade = grade_run_dir(run_dir, {t.id: t for t in bundled_tasks()})
    events = read_events(run_dir / "events.jsonl").events
    spoken = next(e.plan_id for e in events if isinstance(e, UserPlanEvent))
    wrong = {"WS": not grade.WS, "plans_include": ["no_such_plan"], "no_plans": [spoken]}
    problems = probe_problems(wrong, grade, events)
    assert len(problems) == 3, problems
    assert probe_problems({"WS": grade.WS, "plans_include": [spoken]}, grade, events) == []
