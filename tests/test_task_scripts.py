"""Every shipped task: its oracle reaches Workflow Success, every ``negative_*`` script fails
exactly one gate (the one it names), and every ``scenario_*`` script (a multi-gate failure such
as the paper's worked example) fails exactly the gates it names. One parametrized test over the
whole suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from grading.gates import GATE_NAMES, grade_run_dir
from runtime.agents.scripted import load_script
from runtime.core.spec import default_tasks_dir
from tests.conftest import bundled_tasks, run_script

CASES = [
    pytest.param(task.id, script, id=f"{task.id}-{script.stem}")
    for task in bundled_tasks()
    for script in sorted((default_tasks_dir() / task.id / "scripts").glob("*.yaml"))
]


def test_every_task_has_an_oracle_and_negatives() -> None:
    for task in bundled_tasks():
        names = {p.stem for p in (default_tasks_dir() / task.id / "scripts").glob("*.yaml")}
        assert "oracle" in names, f"{task.id} has no oracle script"
        assert any(n.startswith("negative_") for n in names), f"{task.id} has no negative script"


@pytest.mark.parametrize(("task_id", "script"), CASES)
def test_script_outcome(task_id: str, script: Path, tmp_path: Path) -> None:
    expect = load_script(script).expect
    run_dir = run_script(task_id, script, tmp_path)
    grade = grade_run_dir(run_dir, {t.id: t for t in bundled_tasks()})
    failed = sorted(g for g in GATE_NAMES if not grade.gates[g])
    assert grade.problems == []
    if script.stem == "oracle":
        assert expect == {"WS": True}
        assert grade.WS, grade.gate_reasons
        assert grade.afa["correct"] == grade.afa["total"]
    else:
        assert failed == sorted(expect["fails"]), grade.gate_reasons
        assert not grade.WS
        if script.stem.startswith("negative_"):
            assert len(failed) == 1, f"a negative script fails exactly one gate, not {failed}"
        else:
            assert script.stem.startswith("scenario_"), (
                "scripts are oracle, negative_* or scenario_*"
            )
