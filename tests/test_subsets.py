"""Named subsets of the task suite (runtime/suite/subsets.py): ``audit24`` is the bundled
audit subset, ``--tasks`` takes a subset's name, and a bad subset is an error naming the file,
line or name."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main
from runtime.core.spec import default_tasks_dir
from runtime.suite.subsets import AUDIT, SubsetError, subset_ids, subset_names, task_folders
from tests.conftest import bundled_tasks

AUDIT24_IDS = [f"apexv1_{n:03d}" for n in (
    1, 10, 11, 15, 22, 30, 32, 38, 41, 45, 51, 57, 64, 70, 76, 78, 82, 87, 97, 100, 102, 106,
    114, 118)]
"""The audit subset as it shipped (every bundled task before the suite grew to 120)."""


def test_the_audit_subset_is_the_24_audit_tasks() -> None:
    ids = subset_ids(AUDIT)
    assert len(ids) == 24 and len(set(ids)) == 24
    assert set(ids) <= {t.id for t in bundled_tasks()}
    assert ids == AUDIT24_IDS
    assert AUDIT in subset_names()
    assert task_folders(None, AUDIT) == [default_tasks_dir() / i for i in ids]
    assert task_folders(None) == [default_tasks_dir()]
    assert task_folders(default_tasks_dir()) == [default_tasks_dir()]


def _suite(tmp_path: Path, subset: str) -> Path:
    root = tmp_path / "tasks"
    for task_id in ("t1", "t2"):
        (root / task_id).mkdir(parents=True)
        (root / task_id / "task.yaml").write_text("id: x\n", encoding="utf-8")
    (root / "subsets").mkdir()
    (root / "subsets" / "mine.txt").write_text(subset, encoding="utf-8")
    return root


def test_comments_and_blank_lines(tmp_path: Path) -> None:
    root = _suite(tmp_path, "# two tasks\nt2  # second first\n\nt1\n")
    assert subset_ids("mine", root) == ["t2", "t1"]


@pytest.mark.parametrize(("text", "message"), [
    ("t1\nt1\n", r"mine\.txt:2: 't1' is listed twice"),
    ("t1\nt3\n", r"mine\.txt:2: no task 't3'"),
    ("# nothing\n", r"mine\.txt: lists no task"),
])
def test_a_bad_subset_names_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SubsetError, match=message):
        subset_ids("mine", _suite(tmp_path, text))


def test_an_unknown_name_lists_the_subsets(tmp_path: Path) -> None:
    with pytest.raises(SubsetError, match=r"no task folder or subset named 'other' .*: mine\)"):
        subset_ids("other", _suite(tmp_path, "t1\n"))


def test_run_takes_a_subset_name(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", "--tasks", "nosuch", "--agent", "scripted:oracle",
                                       "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "--tasks: no task folder or subset named 'nosuch'" in result.output
    assert "audit24" in result.output
    # A subset's name selects its tasks (a script none of them has: nothing runs).
    result = CliRunner().invoke(main, ["run", "--tasks", AUDIT, "--agent", "scripted:nosuch",
                                       "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "no task has scripts/nosuch.yaml" in result.output


def test_study_commands_default_to_the_audit_subset() -> None:
    result = CliRunner().invoke(main, ["study", "sample-a", "--json"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["study", "sample-a", "--tasks", "nosuch"])
    assert result.exit_code == 2 and "subset named 'nosuch'" in result.output


def _copied_suite(tmp_path: Path, ids: list[str], audit: str | None) -> Path:
    root = tmp_path / "suite"
    for task_id in ids:
        shutil.copytree(default_tasks_dir() / task_id, root / task_id,
                        ignore=shutil.ignore_patterns("bank"))
    if audit is not None:
        (root / "subsets").mkdir()
        (root / "subsets" / "audit24.txt").write_text(audit, encoding="utf-8")
    return root


def test_the_web_studies_draw_from_the_audit_subset(tmp_path: Path) -> None:
    from app.catalogue import Catalogue
    from app.routes.study_b import _form_defaults

    ids = ["apexv1_001", "apexv1_010", "apexv1_070"]
    cat = Catalogue.load(_copied_suite(tmp_path, ids, "apexv1_070\napexv1_001\n"))
    assert sorted(cat.tasks) == ids and cat.problems == []
    assert list(cat.audit_tasks()) == ["apexv1_070", "apexv1_001"]
    assert _form_defaults(cat.tasks, cat.audit)["task_ids"] == ["apexv1_001", "apexv1_070"]
    # No subset file: every task; a broken one: every task, and the problem is shown.
    plain = Catalogue.load(_copied_suite(tmp_path / "plain", ids, None))
    assert list(plain.audit_tasks()) == ids
    broken = Catalogue.load(_copied_suite(tmp_path / "broken", ids, "apexv1_999\n"))
    assert list(broken.audit_tasks()) == ids
    assert len(broken.problems) == 1 and "audit24.txt:1: no task 'apexv1_999'" in broken.problems[0]
