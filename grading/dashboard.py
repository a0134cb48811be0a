"""The campaign dashboard's numbers: the scorecard plus per-run interaction diagnostics and
tool-call efficiency against each task's oracle script."""

from __future__ import annotations

import io
import statistics
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel

from grading.diagnostics import floor_control
from grading.gates import grade_run_dir
from grading.judge import Judge
from grading.metrics import CampaignReport, campaign_report
from grading.report import outcome_of
from runtime.core import csv_safe
from runtime.core.events import read_events
from runtime.core.rundir import RunDir, find_run_dirs
from runtime.core.spec import TaskSpec, read_yaml


class RunRow(BaseModel):
    run_id: str
    path: str
    task_id: str
    repeat: int
    WS: bool
    TS: bool
    PV: bool
    AC: bool
    AV: bool
    afa_correct: int
    afa_total: int
    end_reason: str | None
    infrastructure_failure: bool
    barge_ins: int
    yields: int
    median_stop_latency_ms: float | None
    overlap_ratio: float | None
    median_response_latency_ms: float | None
    tool_calls: int
    oracle_tool_calls: int | None
    tool_efficiency: float | None
    """Agent tool calls / the oracle's, on the same task (1.0 = as frugal as the oracle)."""


class Dashboard(BaseModel):
    campaign: str
    agent: str
    report: CampaignReport
    runs: list[RunRow]
    yield_rate: float | None
    median_stop_latency_ms: float | None
    overlap_ratio: float | None
    median_response_latency_ms: float | None
    response_latency_iqr_ms: tuple[float, float] | None = None
    """Quartiles (25th, 75th percentile) of the runs' median response latencies: the spread
    behind ``median_response_latency_ms`` (the frontier's horizontal error bar)."""
    tool_efficiency: float | None


def oracle_tool_calls(task: TaskSpec) -> int | None:
    path = task.folder / "scripts" / "oracle.yaml"
    if not path.is_file():
        return None
    script = read_yaml(path) or {}
    return sum(len(turn.get("tools") or []) for turn in script.get("turns", []))


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _quartiles(values: list[float]) -> tuple[float, float] | None:
    if len(values) < 2:
        return (values[0], values[0]) if values else None
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return (q1, q3)


def build_dashboard(
    campaign_dir: Path, tasks: Mapping[str, TaskSpec], *, judge: Judge | None = None,
    seed: int = 0, n_resamples: int = 10_000,
) -> Dashboard:

    rows: list[RunRow] = []
    outcomes = []
    agents: set[str] = set()
    for run_dir in find_run_dirs([campaign_dir]):
        meta = RunDir(run_dir).read_meta()
        task = tasks.get(meta.task_id)
        if task is None:
            continue
        grade = grade_run_dir(run_dir, tasks, judge=judge)
        repeat = meta.repeat or 0
        outcomes.append(outcome_of(grade, task, repeat))
        agents.add(meta.agent)
        fc = floor_control(read_events(run_dir / "events.jsonl").events)
        oracle = oracle_tool_calls(task)
        rows.append(RunRow(
            run_id=grade.run_id, path=str(run_dir.relative_to(campaign_dir)), task_id=task.id,
            repeat=repeat, WS=grade.WS, **grade.gates,
            afa_correct=grade.afa["correct"], afa_total=grade.afa["total"],
            end_reason=grade.end_reason, infrastructure_failure=grade.infrastructure_failure,
            barge_ins=fc.barge_ins, yields=fc.yields,
            median_stop_latency_ms=fc.median_stop_latency_ms, overlap_ratio=fc.overlap_ratio,
            median_response_latency_ms=fc.median_response_latency_ms,
            tool_calls=fc.tool_calls, oracle_tool_calls=oracle,
            tool_efficiency=(fc.tool_calls / oracle) if oracle else None,
        ))
    if not rows:
        raise ValueError(f"{campaign_dir}: no graded run directories found")
    graded = [r for r in rows if not r.infrastructure_failure]
    barge = sum(r.barge_ins for r in graded)
    latencies = [r.median_response_latency_ms for r in graded
                 if r.median_response_latency_ms is not None]
    return Dashboard(
        campaign=campaign_dir.name, agent=", ".join(sorted(agents)),
        report=campaign_report(outcomes, seed=seed, n_resamples=n_resamples), runs=rows,
        yield_rate=(sum(r.yields for r in graded) / barge) if barge else None,
        median_stop_latency_ms=_median([r.median_stop_latency_ms for r in graded
                                        if r.median_stop_latency_ms is not None]),
        overlap_ratio=_median([r.overlap_ratio for r in graded if r.overlap_ratio is not None]),
        median_response_latency_ms=_median(latencies),
        response_latency_iqr_ms=_quartiles(latencies),
        tool_efficiency=_median([r.tool_efficiency for r in graded
                                 if r.tool_efficiency is not None]),
    )


def runs_csv(dashboard: Dashboard) -> str:
    buf = io.StringIO()
    fields = list(RunRow.model_fields)
    writer = csv_safe.writer(buf)
    writer.writerow(fields)
    for row in dashboard.runs:
        cells = row.model_dump()
        writer.writerow([cells[f] for f in fields])
    return buf.getvalue()


def slices_csv(dashboard: Dashboard) -> str:
    buf = io.StringIO()
    writer = csv_safe.writer(buf)
    writer.writerow(["dimension", "label", "n_tasks", "n_runs", "pass_at_1", "pass_at_1_lo",
                     "pass_at_1_hi", "afa"])
    for dim, labels in dashboard.report.slices.items():
        for label, row in labels.items():
            ci = row.pass_at_1.ci or (None, None)
            writer.writerow([dim, label, row.n_tasks, row.n_runs, row.pass_at_1.value, ci[0],
                             ci[1], row.afa.value])
    return buf.getvalue()
