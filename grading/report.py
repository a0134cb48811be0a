"""Campaign reports: grade every run of a campaign directory and aggregate (paper §4, C.4)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from grading.gates import RunGrade, grade_run_dir
from grading.judge import Judge
from grading.metrics import CampaignReport, RunOutcome, campaign_report
from runtime.core.rundir import RunDir, find_run_dirs
from runtime.core.spec import TaskSpec


def outcome_of(grade: RunGrade, task: TaskSpec, repeat: int) -> RunOutcome:
    corrected = {(a.id, f.name) for a, f in task.graded_fields() if f.corrected}
    mine = [f for f in grade.fields if (f.artifact, f.field) in corrected]
    return RunOutcome(
        run_id=grade.run_id, task_id=grade.task_id, repeat=repeat, ws=grade.WS,
        gates=grade.gates, afa_correct=grade.afa["correct"], afa_total=grade.afa["total"],
        corrected_correct=sum(f.correct for f in mine), corrected_total=len(mine),
        taxonomy={k: v for k, v in task.taxonomy.model_dump().items()},
        infrastructure_failure=grade.infrastructure_failure,
        protocol_unknown=grade.protocol_unknown,
    )


def campaign_outcomes(
    campaign_dir: Path, tasks: Mapping[str, TaskSpec], *, judge: Judge | None = None,
    on_run: Callable[[int, int], None] | None = None,
) -> list[RunOutcome]:
    """``on_run(done, total)`` is called after each run directory is loaded and graded."""

    outcomes: list[RunOutcome] = []
    run_dirs = find_run_dirs([campaign_dir])
    for run_dir in run_dirs:
        meta = RunDir(run_dir).read_meta()
        grade = grade_run_dir(run_dir, tasks, judge=judge)
        outcomes.append(outcome_of(grade, tasks[grade.task_id], meta.repeat or 0))
        if on_run is not None:
            on_run(len(outcomes), len(run_dirs))
    return outcomes


def build_report(
    campaign_dir: Path, tasks: Mapping[str, TaskSpec], *, judge: Judge | None = None,
    seed: int = 0, n_resamples: int = 10_000, on_run: Callable[[int, int], None] | None = None,
) -> CampaignReport:
    outcomes = campaign_outcomes(campaign_dir, tasks, judge=judge, on_run=on_run)
    if not outcomes:
        raise ValueError(f"{campaign_dir}: no run directories (folders with meta.json) found")
    return campaign_report(outcomes, n_resamples=n_resamples, seed=seed)
