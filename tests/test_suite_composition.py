"""The bundled suite's composition on every taxonomy dimension, against the paper's.

Run with ``pytest -s`` to see the table. The checks are the coverage the task-suite issue asks
for: at least two workflows per archetype, every realized label of the paper on each dimension,
10–20 graded fields and at least one authored duplex event per task, and proportions close to
the paper's Figure 3 on its six dimensions.
"""

from __future__ import annotations

import typing

from runtime.core.spec import (
    ArtifactClass,
    DelegationPattern,
    DuplexPhenomenon,
    Industry,
    KnowledgeBurden,
    Risk,
    ToolBurden,
    UserBehavior,
)
from runtime.suite.composition import PAPER_COMPOSITION, composition, format_composition
from runtime.suite.validate import leaked_values
from tests.conftest import bundled_tasks

TASKS = bundled_tasks()
FULL_SUITE = len(TASKS) >= 24


def test_print_composition() -> None:
    print("\n" + format_composition(TASKS))
    assert composition(TASKS)["archetype"].total() == len(TASKS)


def test_every_task_has_10_to_20_graded_fields_and_a_duplex_event() -> None:
    for task in TASKS:
        n = len(task.graded_fields())
        assert 10 <= n <= 20, f"{task.id} has {n} graded fields"
        assert task.duplex_events, f"{task.id} has no authored duplex event"


def test_no_realization_leaks_a_value_its_plan_does_not_carry() -> None:
    leaks = [
        f"{task.id}/{plan.id}/{real.id}: {leak}"
        for task in TASKS for plan in task.plans for real in plan.realizations
        for leak in leaked_values(task, plan, real)
    ]
    assert leaks == []


def test_coverage_of_every_dimension() -> None:
    if not FULL_SUITE:
        return  # the coverage targets apply to the full audit subset
    comp = composition(TASKS)
    assert all(comp["archetype"][a] >= 2 for a in PAPER_COMPOSITION["archetype"])
    for dim, literal in [
        ("industry", Industry), ("artifact_class", ArtifactClass),
        ("knowledge", KnowledgeBurden), ("tool_burden", ToolBurden),
        ("user_behavior", UserBehavior), ("risk", Risk), ("duplex", DuplexPhenomenon),
        ("delegation", DelegationPattern),
    ]:
        missing = set(typing.get_args(literal)) - set(comp[dim])
        assert not missing, f"{dim}: no task with {sorted(missing)}"
    assert set(comp["autonomy"]) == set(PAPER_COMPOSITION["autonomy"])


def test_proportions_close_to_the_paper() -> None:
    if not FULL_SUITE:
        return
    comp = composition(TASKS)
    n = len(TASKS)
    for dim, paper in PAPER_COMPOSITION.items():
        total = sum(paper.values())
        for label, count in paper.items():
            gap = abs(comp[dim][label] / n - count / total)
            assert gap <= 0.05, (
                f"{dim}={label}: suite {comp[dim][label]}/{n} vs paper {count}/{total}"
            )
