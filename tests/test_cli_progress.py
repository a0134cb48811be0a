"""Issue #17: progress on standard error only (never in `--json` output), and `scripted:NAME`
campaigns that skip the tasks without that script instead of aborting."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from app.cli import main
from app.cli_progress import PROGRESS_ENV
from runtime.core.spec import default_tasks_dir


def _cli(*args: str, progress: str = "0") -> Result:
    return CliRunner(env={PROGRESS_ENV: progress}).invoke(main, list(args))


def test_tasks_without_the_script_are_skipped_and_the_others_run(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    for tid in ("apexv1_010", "apexv1_038", "apexv1_070"):  # only 070 has negative_unfinalized
        shutil.copytree(default_tasks_dir() / tid, tasks / tid)
    out = tmp_path / "camp"
    result = _cli("run", "--tasks", str(tasks), "--agent", "scripted:negative_unfinalized",
                  "--out", str(out))
    assert result.exit_code == 1, result.output
    err = result.stderr.splitlines()
    skipped = [line for line in err if line.startswith("skipped ")]
    assert skipped == [
        f"skipped {tid}: no script {tasks / tid / 'scripts' / 'negative_unfinalized.yaml'}"
        for tid in ("apexv1_010", "apexv1_038")
    ]
    assert err[-1] == "2 tasks skipped: no scripts/negative_unfinalized.yaml"
    meta = json.loads((out / "apexv1_070" / "r0" / "meta.json").read_text())
    assert meta["status"] == "complete"
    assert "1 run(s) done" in result.stdout
    assert not (out / "apexv1_010").exists() and not (out / "apexv1_038").exists()


def test_no_task_with_the_script_exits_2_at_once(tmp_path: Path) -> None:
    out = tmp_path / "camp"
    result = _cli("run", "--task", "apexv1_010", "--agent", "scripted:negative_unfinalized",
                  "--out", str(out))
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: no task has scripts/negative_unfinalized.yaml")
    assert not out.exists()


def test_progress_goes_to_stderr_and_json_stays_identical(tmp_path: Path) -> None:
    out = tmp_path / "camp"
    run = _cli("run", "--task", "apexv1_070", "--agent", "scripted:oracle", "--repeats", "2",
               "--out", str(out), progress="1")
    assert run.exit_code == 0, run.output
    assert "2/2" in run.stderr and "runs" in run.stderr  # forced on: drawn on stderr
    # (Which run is in progress shows only between refreshes; a fast run may finish before
    # the bar redraws, so the test does not depend on seeing it.)
    assert "\x1b" not in run.stdout and "2 run(s) done" in run.stdout
    for args, unit in (
        (("grade", str(out), "--json"), "run dirs"),
        (("report", str(out), "--json"), "runs loaded"),
    ):
        shown = _cli(*args, progress="1")
        hidden = _cli(*args, "--no-progress", progress="1")
        default = _cli(*args)  # not a terminal and not forced: off
        assert shown.exit_code == hidden.exit_code == default.exit_code == 0, shown.output
        assert shown.stdout == hidden.stdout == default.stdout
        json.loads(shown.stdout)
        assert unit in shown.stderr and "2/2" in shown.stderr
        assert hidden.stderr == "" and default.stderr == ""


def test_a_bank_build_without_a_bar_prints_each_realization_as_it_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With --no-progress a long Kokoro build used to print nothing until its end, so waiting
    for the lock and building looked alike, and a failure hid how far it got."""
    from runtime.speechbank import bank as bank_module

    def half_build(task: object, engine: object, *, force: bool, log: list[str]) -> None:
        log.append("apexv1_070: synthesized opening_r1 (2.1 s)")
        raise bank_module.TTSError("espeak-ng failed on opening_r2")

    monkeypatch.setattr(bank_module, "build_bank", half_build)
    result = _cli("bank", "build", "--tasks", "apexv1_070", "--tts", "espeak", "--no-progress")
    assert result.exit_code != 0
    assert result.stdout.splitlines() == [
        "apexv1_070: building with espeak-ng",
        "apexv1_070: synthesized opening_r1 (2.1 s)",
    ]
    assert "espeak-ng failed on opening_r2" in result.stderr
