"""The suite's catalogue (tasks/catalogue.yaml, runtime/suite/catalogue.py): 120 workflows in
the paper's archetype blocks whose labels match Figure 3 exactly, every task folder held to its
row, and zero deviation for the suite once every row has its folder.

The expected counts are the issue's (the paper's Figure 3), written out here and counted from
the raw YAML, not through the composition code under test.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from app.cli import main
from runtime.core.spec import default_tasks_dir
from runtime.suite.catalogue import (
    CatalogueError,
    catalogue_path,
    load_catalogue,
    task_mismatches,
)
from runtime.suite.composition import paper_deviations
from runtime.suite.validate import validate_paths
from tests.conftest import bundled_tasks

FIGURE_3 = {
    "archetype": {"form-fill": 10, "interview": 10, "discovery": 10, "intake": 10,
                  "troubleshoot": 10, "negotiate": 20, "coordinate": 20, "advise": 10,
                  "facilitate": 10, "inspect": 10},
    "autonomy": {"prepare-only": 51, "draft-confirm": 29, "low-risk-execute": 16,
                 "approval-gated": 24},
    "knowledge": {"none": 44, "small-search": 51, "multi-document": 19, "supplied-evidence": 6},
    "tool_burden": {"light": 44, "moderate": 76},
    "user_behavior": {"cooperative": 24, "correction-prone": 24, "ambiguous": 12,
                      "distracted": 12, "expert": 12, "low-tech": 12, "novice": 12,
                      "verbose": 12},
    "risk": {"routine": 63, "sensitive-data": 25, "consequential-action": 22,
             "special-review": 10},
}
BLOCKS = {  # tasks/README.md: archetype blocks of ten catalogue ids
    "form-fill": [range(1, 11)], "interview": [range(11, 21)], "discovery": [range(21, 31)],
    "intake": [range(31, 41)], "troubleshoot": [range(41, 51)],
    "negotiate": [range(51, 61), range(71, 81)], "coordinate": [range(61, 71), range(111, 121)],
    "advise": [range(81, 91)], "facilitate": [range(91, 101)], "inspect": [range(101, 111)],
}
RAW = yaml.safe_load(catalogue_path().read_text(encoding="utf-8"))["workflows"]
TASKS = bundled_tasks()


def test_the_catalogue_is_the_paper_120_in_archetype_blocks() -> None:
    ids = [row["id"] for row in RAW]
    assert sorted(ids) == [f"apexv1_{n:03d}" for n in range(1, 121)]
    for archetype, blocks in BLOCKS.items():
        for block in blocks:
            for n in block:
                row = next(r for r in RAW if r["id"] == f"apexv1_{n:03d}")
                assert row["archetype"] == archetype, row["id"]
    assert len({row["title"] for row in RAW}) == 120, "two workflows share a title"
    assert len(load_catalogue()) == 120


def test_the_catalogue_matches_figure_3_exactly() -> None:
    for dim, expected in FIGURE_3.items():
        assert dict(Counter(row[dim] for row in RAW)) == expected, dim
    assert paper_deviations(load_catalogue()) == []


def test_every_task_folder_follows_its_catalogue_row() -> None:
    entries = load_catalogue()
    assert {t.id for t in TASKS} <= {e.id for e in entries}
    for task in TASKS:
        assert task_mismatches(task, entries, catalogue_path()) == [], task.id


def test_the_complete_suite_has_zero_deviation() -> None:
    """The issue's acceptance: once every catalogue row has its folder, the suite's
    composition equals the paper's on every dimension; until then the rows still to write are
    exactly the catalogue's remainder, so the finished suite cannot miss."""
    written = {t.id for t in TASKS}
    missing = [row for row in RAW if row["id"] not in written]
    if not missing:
        assert paper_deviations(TASKS) == []
        for dim, expected in FIGURE_3.items():
            assert dict(Counter(str(getattr(t.taxonomy, dim)) for t in TASKS)) == expected
        return
    for dim, expected in FIGURE_3.items():
        have = Counter(str(getattr(t.taxonomy, dim)) for t in TASKS)
        still = Counter(row[dim] for row in missing)
        assert dict(have + still) == expected, dim


# --------------------------------------------------------------------------- errors

def _copy_suite(tmp_path: Path, ids: list[str]) -> Path:
    root = tmp_path / "tasks"
    root.mkdir()
    shutil.copy(catalogue_path(), root / "catalogue.yaml")
    for task_id in ids:
        shutil.copytree(default_tasks_dir() / task_id, root / task_id)
    return root


def test_a_task_that_departs_from_its_row_is_a_validation_problem(tmp_path: Path) -> None:
    root = _copy_suite(tmp_path, ["apexv1_010"])
    spec = root / "apexv1_010" / "task.yaml"
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text.replace("user_behavior: cooperative", "user_behavior: expert")
                    .replace("duplex: [barge-in]", "duplex: [overlap]"), encoding="utf-8")
    problems = [str(p) for p in validate_paths([root])]
    assert any("apexv1_010/task.yaml: taxonomy.user_behavior: 'expert', but the catalogue "
               "plans 'cooperative'" in p for p in problems), problems
    assert any("taxonomy.duplex: lacks ['barge-in']" in p for p in problems), problems
    out = CliRunner().invoke(main, ["tasks", "list", str(root)]).output
    assert "1 of 120 workflows written" in out
    assert "apexv1_010: taxonomy.user_behavior" in out


def test_a_task_outside_the_catalogue_is_named(tmp_path: Path) -> None:
    root = _copy_suite(tmp_path, ["apexv1_010"])
    shutil.move(root / "apexv1_010", root / "apexv1_999")
    spec = root / "apexv1_999" / "task.yaml"
    spec.write_text(spec.read_text(encoding="utf-8").replace("id: apexv1_010", "id: apexv1_999"),
                    encoding="utf-8")
    problems = [str(p) for p in validate_paths([root])]
    assert any("'apexv1_999' is not in the catalogue" in p for p in problems), problems


def _repeat_first(rows: list[dict[str, Any]]) -> None:
    rows.append(dict(rows[0]))


def _unknown_risk(rows: list[dict[str, Any]]) -> None:
    rows[3]["risk"] = "deadly"


def _no_title(rows: list[dict[str, Any]]) -> None:
    del rows[5]["title"]


@pytest.mark.parametrize(("edit", "message"), [
    pytest.param(_repeat_first, r"workflows\[120\]\.id: 'apexv1_001' is listed twice",
                 id="repeated"),
    pytest.param(_unknown_risk, r"workflows\[3\] \(apexv1_004\)\.risk: Input should be",
                 id="label"),
    pytest.param(_no_title, r"workflows\[5\] \(apexv1_006\)\.title", id="title"),
])
def test_a_broken_catalogue_names_file_and_row(
    tmp_path: Path, edit: Callable[[list[dict[str, Any]]], None], message: str,
) -> None:
    root = _copy_suite(tmp_path, [])
    rows = [dict(r) for r in RAW]
    edit(rows)
    (root / "catalogue.yaml").write_text(yaml.safe_dump({"workflows": rows}), encoding="utf-8")
    with pytest.raises(CatalogueError, match=message) as info:
        load_catalogue(root)
    assert str(root / "catalogue.yaml") in str(info.value)
