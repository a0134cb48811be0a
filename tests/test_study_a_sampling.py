"""Study A sampler (paper appendix F.2): strata, roles, determinism, shortfalls, the CLI.

Expectations about the shipped suite are computed here from the raw task YAML, independently of
the sampler's own role predicates.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from app.cli_study_a import sample_a_command
from runtime.core.spec import TaskSpec, default_tasks_dir, load_tasks, read_yaml
from runtime.suite.subsets import AUDIT, subset_ids, task_folders
from study_protocols.study_a import SamplingError, annotator_order, sample_study_a

CRITICAL = {"correct", "approve", "revoke"}


@pytest.fixture(scope="module")
def tasks() -> list[TaskSpec]:
    """The audit subset, Study A's default pool."""
    return load_tasks(task_folders(None, AUDIT))


@pytest.fixture(scope="module")
def raw() -> dict[str, dict[str, Any]]:
    """task id -> the task.yaml mapping of the audit subset, read without the pydantic
    models."""
    out = {}
    for task_id in subset_ids(AUDIT):
        data = read_yaml(default_tasks_dir() / task_id / "task.yaml")
        out[data["id"]] = data
    return out


def _raw_critical(plan: dict[str, Any]) -> bool:
    versions = [ref.get("version", 1) for ref in plan.get("facts", [])]
    return plan["intent"] in CRITICAL or (plan["intent"] == "barge_in" and max(versions or [1]) > 1)


def _relabel(task: TaskSpec, suffix: str = "", **taxonomy: str) -> TaskSpec:
    return task.model_copy(update={"id": task.id + suffix,
                                   "taxonomy": task.taxonomy.model_copy(update=taxonomy)})


def test_default_draw_meets_every_stratum(tasks: list[TaskSpec], raw: dict[str, Any]) -> None:
    sample = sample_study_a(tasks)
    assert sample.task_ids == tuple(sorted(raw))  # the audit subset is exactly 24 tasks
    tax = [raw[t]["taxonomy"] for t in sample.task_ids]
    assert len({x["archetype"] for x in tax}) >= 8
    assert {"prepare-only", "approval-gated"} <= {x["autonomy"] for x in tax}
    assert {"light", "moderate"} <= {x["tool_burden"] for x in tax}
    assert len({x["user_behavior"] for x in tax}) >= 3
    assert all(c.ok for c in sample.checks), sample.unsatisfied()
    assert {c.name for c in sample.checks} >= {
        "tasks", "archetypes", "autonomy", "tool burden", "user behaviours", "plans per task"}
    # Every shipped task has a correction, approval or revocation plan (read-back corrections
    # at least), so the draw meets every constraint and has nothing to note.
    lacking = sorted(t for t, d in raw.items() if not any(_raw_critical(p) for p in d["plans"]))
    assert lacking == []
    assert sample.unsatisfied() == list(sample.notes) == []


def test_default_items_roles_and_realizations(tasks: list[TaskSpec], raw: dict[str, Any]) -> None:
    sample = sample_study_a(tasks)
    assert len(sample.items) == 72
    by_task: dict[str, list[Any]] = defaultdict(list)
    for item in sample.items:
        by_task[item.task_id].append(item)
    for task_id, items in by_task.items():
        plans = {p["id"]: p for p in raw[task_id]["plans"]}
        assert len(items) == 3 and len({i.plan_id for i in items}) == 3
        has_critical = any(_raw_critical(p) for p in plans.values())
        roles = [i.role for i in items]
        if has_critical:
            assert roles == ["opening", "information", "critical"]
            crit = plans[items[2].plan_id]
            assert _raw_critical(crit) and items[2].intent == crit["intent"]
        else:
            assert roles == ["opening", "information", "information"]
            assert any(n.startswith(task_id) and f"'{items[2].plan_id}'" in n
                       for n in sample.notes)
        assert plans[items[0].plan_id]["when"]["on"] == "opening"
        for item in items[1:]:
            plan = plans[item.plan_id]
            assert plan["when"]["on"] != "opening"
            if item.role == "information":
                assert plan.get("facts") and not _raw_critical(plan)
        for item in items:
            real = {r["id"]: r for r in plans[item.plan_id]["realizations"]}[item.realization_id]
            assert (item.text, item.audio) == (real["text"], real["audio"])
            assert item.key == f"{task_id}:{item.plan_id}:{item.realization_id}"


def test_determinism_and_seed_sensitivity(tasks: list[TaskSpec]) -> None:
    a, b = sample_study_a(tasks, seed=0), sample_study_a(list(reversed(tasks)), seed=0)
    assert a == b and a.to_json() == b.to_json()
    other = sample_study_a(tasks, seed=1)
    assert [i.key for i in other.items] != [i.key for i in a.items]
    json.dumps(a.to_json())  # serializable


@pytest.mark.parametrize("n", [8, 10, 16])
def test_subsample_covers_archetypes(tasks: list[TaskSpec], n: int) -> None:
    drawn = set()
    for seed in range(6):
        sample = sample_study_a(tasks, n_tasks=n, seed=seed)
        tax = {t.id: t.taxonomy for t in tasks}
        chosen = [tax[t] for t in sample.task_ids]
        assert len(sample.task_ids) == len(set(sample.task_ids)) == n
        assert len({x.archetype for x in chosen}) >= min(n, 10)
        assert {"prepare-only", "approval-gated"} <= {x.autonomy for x in chosen}
        assert {"light", "moderate"} <= {x.tool_burden for x in chosen}
        assert len(sample.items) == 3 * n
        assert {i.task_id for i in sample.items} == set(sample.task_ids)
        assert all(c.ok for c in sample.checks), sample.unsatisfied()
        drawn.add(sample.task_ids)
    assert len(drawn) > 1  # the seed changes which tasks are drawn


def test_subsample_reaches_rare_strata(tasks: list[TaskSpec]) -> None:
    # One approval-gated task (a coordinate task, 1 of 4) and one light one (an inspect task):
    # drawing one task per archetype is not enough, the rare strata must be sought out.
    def rare(t: TaskSpec) -> TaskSpec:
        auto = "approval-gated" if t.id == "apexv1_070" else "draft-confirm"
        auto = "prepare-only" if t.id == "apexv1_011" else auto
        return _relabel(t, autonomy=auto, tool_burden="light" if t.id == "apexv1_102" else
                        "moderate")
    pool = [rare(t) for t in tasks]
    for seed in range(6):
        sample = sample_study_a(pool, n_tasks=10, seed=seed)
        assert {"apexv1_070", "apexv1_011", "apexv1_102"} <= set(sample.task_ids)
        assert all(c.ok for c in sample.checks), sample.unsatisfied()


def test_larger_pool(tasks: list[TaskSpec]) -> None:
    pool = tasks + [_relabel(t, "_copy") for t in tasks]
    sample = sample_study_a(pool, n_tasks=24, seed=3)
    assert len(set(sample.task_ids)) == 24 and len(sample.items) == 72
    assert all(c.ok for c in sample.checks), sample.unsatisfied()


def test_unmeetable_strata_are_reported_by_name(tasks: list[TaskSpec]) -> None:
    pool = [_relabel(t, autonomy="draft-confirm") for t in tasks]
    sample = sample_study_a(pool)
    failed = {c.name: c for c in sample.checks if not c.ok}
    assert set(failed) == {"autonomy"}
    assert failed["autonomy"].got == "prepare-only 0, approval-gated 0"
    assert sample.unsatisfied()[0].startswith("autonomy: wanted prepare-only and approval-gated")

    pool = [_relabel(t, archetype="intake", tool_burden="light", user_behavior="expert")
            for t in tasks]
    failed = {c.name for c in sample_study_a(pool, n_tasks=12).checks if not c.ok}
    assert failed == {"archetypes", "tool burden", "user behaviours"}


def test_short_task_is_reported_not_dropped(tasks: list[TaskSpec]) -> None:
    base = next(t for t in tasks if t.id == "apexv1_102")
    keep = {"opening", "ans_work_order", "goodbye", "fallback"}
    thin = base.model_copy(update={"plans": [p for p in base.plans if p.id in keep]})
    sample = sample_study_a([thin], n_tasks=1, min_archetypes=1, min_behaviours=1)
    assert [i.plan_id for i in sample.items] == ["opening", "ans_work_order"]
    failed = {c.name: c.got for c in sample.checks if not c.ok}
    assert failed == {"plans per task": "short on apexv1_102", "items": "2",
                      # one task cannot span both sides of these strata
                      "autonomy": "prepare-only 1, approval-gated 0",
                      "tool burden": "light 1, moderate 0"}
    assert any("apexv1_102: no correction/approval/revocation plan left" in n
               for n in sample.notes)


def test_sampling_errors(tasks: list[TaskSpec]) -> None:
    with pytest.raises(SamplingError, match="n_tasks=25 is larger than the pool of 24"):
        sample_study_a(tasks, n_tasks=25)
    with pytest.raises(SamplingError, match="at least 1"):
        sample_study_a(tasks, n_tasks=0)
    with pytest.raises(SamplingError, match=r"more than once.*apexv1_001"):
        sample_study_a([*tasks, tasks[0]], n_tasks=3)
    mute = tasks[5].model_copy(
        update={"plans": [p for p in tasks[5].plans if p.when.on != "opening"]})
    with pytest.raises(SamplingError, match=rf"{mute.id}.*opening"):
        sample_study_a([*tasks[:5], mute], n_tasks=3)


def test_annotator_order() -> None:
    keys = [f"t{i}:p:r" for i in range(72)]
    a1 = annotator_order(keys, seed=0, annotator="ann1")
    assert sorted(a1) == sorted(keys) and a1 != keys
    assert a1 == annotator_order(keys, seed=0, annotator="ann1")
    assert a1 != annotator_order(keys, seed=0, annotator="ann2")
    assert a1 != annotator_order(keys, seed=1, annotator="ann1")
    with pytest.raises(SamplingError, match="t0:p:r"):
        annotator_order([*keys, "t0:p:r"], seed=0, annotator="ann1")


@pytest.fixture
def cli() -> click.Group:
    @click.group()
    def group() -> None:
        pass

    group.add_command(sample_a_command)
    return group


def test_cli_table_and_json(cli: click.Group) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["sample-a"])
    assert res.exit_code == 0, res.output
    assert "72 items from 24 tasks (seed 0)" in res.output
    assert "✓ archetypes: wanted >= 8 distinct, got 10 distinct" in res.output
    assert "✗" not in res.output and "notes:" not in res.output
    assert "apexv1_070  coordinate" in res.output
    res = runner.invoke(cli, ["sample-a", "--json", "--seed", "2", "--n-tasks", "9"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.output)
    assert payload["seed"] == 2 and len(payload["task_ids"]) == 9 and len(payload["items"]) == 27
    assert payload == sample_study_a(load_tasks(task_folders(None, AUDIT)), n_tasks=9,
                                     seed=2).to_json()


def test_cli_reports_unmet_strata_and_errors(cli: click.Group, tmp_path: Path) -> None:
    for task_id in ("apexv1_011", "apexv1_015"):  # both interview, prepare-only, light
        (tmp_path / task_id).mkdir()
        shutil.copy(default_tasks_dir() / task_id / "task.yaml", tmp_path / task_id)
    runner = CliRunner()
    res = runner.invoke(cli, ["sample-a", "--tasks", str(tmp_path), "--n-tasks", "2"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert "  ✗ archetypes: wanted >= 8 distinct, got 1 distinct" in lines
    assert "  ✗ autonomy: wanted prepare-only and approval-gated, got prepare-only 2, " \
           "approval-gated 0" in lines
    assert Counter(line[:3] for line in lines)["  ✗"] == 4  # + tool burden, user behaviours
    res = runner.invoke(cli, ["sample-a", "--tasks", str(tmp_path)])
    assert res.exit_code == 2 and "n_tasks=24 is larger than the pool of 2" in res.output
    empty = tmp_path / "empty"
    empty.mkdir()
    res = runner.invoke(cli, ["sample-a", "--tasks", str(empty)])
    assert res.exit_code == 2 and "no task.yaml found" in res.output
