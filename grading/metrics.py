"""Campaign metrics: Pass@k, Reliable@k, AFA, gate rates, slices, task-level bootstrap CIs.

Paper references: §4 "Repeated-run Reliability" and appendix C.4 (Pass@1, Pass@3, Reliable@3),
§4 / appendix C.2 (AFA, micro-averaged over graded fields) and appendix H (10,000 task-level
bootstrap resamples, the repeated runs of a sampled task stay grouped).

Everything here is a pure function of the graded runs; nothing reads files or the clock.

Estimators
----------
For a task with ``n`` graded runs of which ``c`` succeeded (WS = 1):

* ``pass@k     = 1 - C(n - c, k) / C(n, k)``  (probability that at least one of ``k`` runs
  drawn without replacement from the ``n`` succeeds),
* ``reliable@k = C(c, k) / C(n, k)``          (probability that all ``k`` drawn runs succeed).

For ``n == k`` these are exactly the paper's indicators ``1[sum >= 1]`` and ``1[sum == k]``;
for ``k == 1`` pass@1 is ``c / n``. Campaign values are means over tasks, so with three runs per
task Pass@1 equals the paper's ``1/(3N) ΣΣ WS``. A task with ``n < k`` leaves the estimator
undefined, and the metric is reported as ``None`` with the reason rather than a guessed number.

Runs flagged ``infrastructure_failure`` are not agent failures: they are excluded from every
metric and counted separately (``CampaignReport.n_infrastructure_failures``).

Bootstrap
---------
Every metric is written as a ratio of per-task sums, ``Σ_i num_i / Σ_i den_i``: a mean over tasks
has ``den_i = 1``; AFA has ``num_i = Σ correct`` and ``den_i = Σ fields`` over the task's runs.
One helper, :func:`task_bootstrap_ci`, resamples TASKS with replacement (all runs of a task stay
together, as appendix H requires), recomputes the ratio of sums on each resample and takes the
percentile interval. A ratio statistic is therefore bootstrapped as a ratio, never as a mean of
per-task ratios.

The resampling is a direct numpy index draw rather than ``scipy.stats.bootstrap`` because:
(1) scipy has no cluster resampling, so it would need the same per-task reduction anyway plus a
paired, vectorised ratio statistic; (2) its defaults (BCa, 9,999 resamples) must be overridden and
BCa yields ``nan`` on degenerate data (e.g. every task passes); (3) a ten-line index draw from a
seeded ``numpy.random.Generator`` is transparent, serves every metric identically, and is checked
in the tests against an exact enumeration of all ``n**n`` resamples. The percentile is taken with
``numpy.quantile``'s default (linear) interpolation, the same rule scipy's ``percentile`` uses.
Each metric starts a fresh ``default_rng(seed)``, so a report is reproducible for a fixed seed.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "GATES",
    "CampaignReport",
    "Metric",
    "RunOutcome",
    "SliceRow",
    "artifact_field_accuracy",
    "campaign_report",
    "correction_uptake",
    "format_scorecard",
    "gate_pass_rates",
    "pass_at_k",
    "reliable_at_k",
    "task_bootstrap_ci",
    "unbiased_pass_at_k",
    "unbiased_reliable_at_k",
]

#: The four workflow-success gates of §4 / appendix C.1, in the paper's order.
GATES: tuple[str, ...] = ("TS", "PV", "AC", "AV")

_FloatArray = npt.NDArray[np.float64]

# Upper bound on the number of resampled task indices held in memory at once.
_MAX_DRAW_CELLS = 1 << 22


# --------------------------------------------------------------------------- models


class RunOutcome(BaseModel):
    """One graded run of one task (one of the repeated runs of appendix C.4)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    task_id: str
    repeat: int
    ws: bool
    gates: dict[str, bool]
    afa_correct: int = Field(ge=0)
    afa_total: int = Field(ge=0)
    corrected_correct: int = Field(default=0, ge=0)
    corrected_total: int = Field(default=0, ge=0)
    taxonomy: dict[str, str | list[str]] = Field(default_factory=dict)
    infrastructure_failure: bool = False
    protocol_unknown: dict[str, int] = Field(default_factory=dict)
    """Provider message types the adapter ignored in this run, with counts."""

    @model_validator(mode="after")
    def _counts_consistent(self) -> RunOutcome:
        if self.afa_correct > self.afa_total:
            raise ValueError(
                f"afa_correct ({self.afa_correct}) exceeds afa_total ({self.afa_total})"
            )
        if self.corrected_correct > self.corrected_total:
            raise ValueError(
                f"corrected_correct ({self.corrected_correct}) exceeds corrected_total "
                f"({self.corrected_total})"
            )
        return self


class Metric(BaseModel):
    """A campaign-level value with its task-level bootstrap interval.

    ``value`` and ``ci`` are ``None`` when the metric is undefined; ``note`` then says why.
    ``n_tasks`` is the number of tasks that entered the computation.
    """

    model_config = ConfigDict(frozen=True)

    value: float | None
    ci: tuple[float, float] | None
    n_tasks: int
    note: str | None = None


class SliceRow(BaseModel):
    """Pass@1 and AFA restricted to the runs carrying one taxonomy label."""

    model_config = ConfigDict(frozen=True)

    n_tasks: int
    n_runs: int
    pass_at_1: Metric
    afa: Metric


class CampaignReport(BaseModel):
    """Everything a scorecard shows for one agent's campaign."""

    model_config = ConfigDict(frozen=True)

    n_runs: int  # graded runs, infrastructure failures excluded
    n_tasks: int  # distinct task ids among all runs, infrastructure failures included
    n_infrastructure_failures: int
    pass_at_1: Metric
    pass_at_3: Metric
    reliable_at_3: Metric
    afa: Metric
    gate_pass_rates: dict[str, float]
    correction_uptake: Metric
    slices: dict[str, dict[str, SliceRow]]
    protocol_unknown: dict[str, int] = Field(default_factory=dict)
    """Provider message types the adapters ignored, summed over every run (infrastructure
    failures included): a non-empty table means our wire models lag the provider."""
    confidence: float = 0.95  # level of every CI in the report
    n_resamples: int = 10_000  # task-level bootstrap resamples behind every CI


# --------------------------------------------------------------------------- estimators


def unbiased_pass_at_k(n: int, c: int, k: int) -> float | None:
    """``1 - C(n-c, k) / C(n, k)``; ``None`` when ``n < k`` (undefined)."""
    _check_counts(n, c, k)
    if n < k:
        return None
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def unbiased_reliable_at_k(n: int, c: int, k: int) -> float | None:
    """``C(c, k) / C(n, k)``; ``None`` when ``n < k`` (undefined)."""
    _check_counts(n, c, k)
    if n < k:
        return None
    return math.comb(c, k) / math.comb(n, k)


def _check_counts(n: int, c: int, k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if n < 0 or c < 0 or c > n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")


# --------------------------------------------------------------------------- bootstrap


def task_bootstrap_ci(
    numerators: Sequence[float] | _FloatArray,
    denominators: Sequence[float] | _FloatArray,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, tuple[float, float]]:
    """Point value and percentile CI of ``Σ num / Σ den`` under task-level resampling.

    Entry ``i`` of each array is task ``i``'s summary (for a mean over tasks pass per-task values
    and ones). Tasks are drawn with replacement, ``n_resamples`` times, from
    ``numpy.random.default_rng(seed)``. Every denominator must be positive, so no resample can
    divide by zero. When all tasks share the same ratio (including a single task) every resample
    equals the point value, and the interval is returned as ``(point, point)`` exactly.
    """
    _check_bootstrap_args(n_resamples, confidence)
    num = np.asarray(numerators, dtype=np.float64)
    den = np.asarray(denominators, dtype=np.float64)
    if num.ndim != 1 or num.shape != den.shape:
        raise ValueError("numerators and denominators must be 1-D arrays of equal length")
    n_tasks = int(num.shape[0])
    if n_tasks == 0:
        raise ValueError("at least one task is needed")
    if not bool(np.all(den > 0)):
        raise ValueError("every task denominator must be positive")
    if not (bool(np.all(np.isfinite(num))) and bool(np.all(np.isfinite(den)))):
        raise ValueError("task summaries must be finite")

    point = float(num.sum() / den.sum())
    ratios = num / den
    lo_task, hi_task = float(ratios.min()), float(ratios.max())
    if lo_task == hi_task:
        return point, (point, point)

    rng = np.random.default_rng(seed)
    stats = np.empty(n_resamples, dtype=np.float64)
    chunk = max(1, _MAX_DRAW_CELLS // n_tasks)
    for start in range(0, n_resamples, chunk):
        stop = min(start + chunk, n_resamples)
        idx = rng.integers(0, n_tasks, size=(stop - start, n_tasks))
        stats[start:stop] = num[idx].sum(axis=1) / den[idx].sum(axis=1)

    alpha = 1.0 - confidence
    lo, hi = np.quantile(stats, [alpha / 2.0, 1.0 - alpha / 2.0])
    # A ratio of sums lies between the smallest and largest task ratio; clipping only removes
    # floating-point rounding beyond those bounds.
    return point, (_clip(float(lo), lo_task, hi_task), _clip(float(hi), lo_task, hi_task))


def _clip(x: float, lo: float, hi: float) -> float:
    return min(max(x, lo), hi)


def _check_bootstrap_args(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")


# --------------------------------------------------------------------------- grouping


@dataclass(frozen=True)
class _TaskRuns:
    task_id: str
    n: int  # graded (non-infrastructure) runs
    successes: int
    afa_correct: int
    afa_total: int
    corrected_correct: int
    corrected_total: int


def _group_by_task(outcomes: Iterable[RunOutcome]) -> list[_TaskRuns]:
    """Per-task totals over graded runs, sorted by task id.

    Tasks whose runs were all infrastructure failures are kept with ``n == 0`` so that metrics
    can say they are missing instead of silently shrinking the task set.
    """
    seen_ids: set[str] = set()
    acc: dict[str, list[int]] = {}
    for run in outcomes:
        if run.run_id in seen_ids:
            raise ValueError(f"duplicate run_id {run.run_id!r}")
        seen_ids.add(run.run_id)
        row = acc.setdefault(run.task_id, [0, 0, 0, 0, 0, 0])
        if run.infrastructure_failure:
            continue
        row[0] += 1
        row[1] += int(run.ws)
        row[2] += run.afa_correct
        row[3] += run.afa_total
        row[4] += run.corrected_correct
        row[5] += run.corrected_total
    return [_TaskRuns(task_id, *acc[task_id]) for task_id in sorted(acc)]


def _describe(task_ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(task_ids[:limit])
    more = len(task_ids) - limit
    return shown + (f" (+{more} more)" if more > 0 else "")


def _ratio_metric(
    numerators: list[float],
    denominators: list[float],
    *,
    n_resamples: int,
    seed: int,
    confidence: float,
    notes: list[str],
) -> Metric:
    n_tasks = len(numerators)
    if n_tasks == 0:
        return Metric(value=None, ci=None, n_tasks=0, note="; ".join(notes) or "no tasks")
    point, ci = task_bootstrap_ci(
        numerators, denominators, n_resamples=n_resamples, seed=seed, confidence=confidence
    )
    if len({n / d for n, d in zip(numerators, denominators, strict=True)}) == 1:
        why = "a single task" if n_tasks == 1 else "every task has the same value"
        notes = [*notes, f"degenerate interval: {why}"]
    return Metric(value=point, ci=ci, n_tasks=n_tasks, note="; ".join(notes) or None)


# --------------------------------------------------------------------------- metrics


def _at_k_metric(
    outcomes: Iterable[RunOutcome],
    k: int,
    *,
    reliable: bool,
    n_resamples: int,
    seed: int,
    confidence: float,
) -> Metric:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    _check_bootstrap_args(n_resamples, confidence)
    tasks = _group_by_task(outcomes)
    name = f"Reliable@{k}" if reliable else f"Pass@{k}"
    if not tasks:
        return Metric(value=None, ci=None, n_tasks=0, note=f"{name} undefined: no runs")
    short = [t.task_id for t in tasks if t.n < k]
    if short:
        return Metric(
            value=None,
            ci=None,
            n_tasks=len(tasks) - len(short),
            note=(
                f"{name} undefined: {len(short)} task(s) have fewer than {k} graded runs "
                f"(infrastructure failures excluded): {_describe(short)}"
            ),
        )
    estimator = unbiased_reliable_at_k if reliable else unbiased_pass_at_k
    values: list[float] = []
    for t in tasks:
        v = estimator(t.n, t.successes, k)
        assert v is not None  # n >= k was checked above
        values.append(v)
    return _ratio_metric(
        values,
        [1.0] * len(values),
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        notes=[],
    )


def pass_at_k(
    outcomes: Iterable[RunOutcome],
    k: int,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Metric:
    """Mean over tasks of ``1 - C(n-c,k)/C(n,k)`` with a task-level bootstrap CI.

    ``pass_at_k(outcomes, 1)`` is Pass@1 (mean over tasks of ``c/n``). ``None`` with a note when
    any task has fewer than ``k`` graded runs.
    """
    return _at_k_metric(
        outcomes, k, reliable=False, n_resamples=n_resamples, seed=seed, confidence=confidence
    )


def reliable_at_k(
    outcomes: Iterable[RunOutcome],
    k: int,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Metric:
    """Mean over tasks of ``C(c,k)/C(n,k)`` with a task-level bootstrap CI.

    ``None`` with a note when any task has fewer than ``k`` graded runs.
    """
    return _at_k_metric(
        outcomes, k, reliable=True, n_resamples=n_resamples, seed=seed, confidence=confidence
    )


def _field_ratio_metric(
    tasks: list[_TaskRuns],
    *,
    corrected: bool,
    n_resamples: int,
    seed: int,
    confidence: float,
) -> Metric:
    _check_bootstrap_args(n_resamples, confidence)
    nums: list[float] = []
    dens: list[float] = []
    no_runs: list[str] = []
    no_fields: list[str] = []
    for t in tasks:
        correct, total = (
            (t.corrected_correct, t.corrected_total) if corrected else (t.afa_correct, t.afa_total)
        )
        if t.n == 0:
            no_runs.append(t.task_id)
        elif total == 0:
            no_fields.append(t.task_id)
        else:
            nums.append(float(correct))
            dens.append(float(total))
    what = "corrected fields" if corrected else "graded fields"
    notes: list[str] = []
    if no_runs:
        notes.append(
            f"{len(no_runs)} task(s) without graded runs (all infrastructure failures) "
            f"excluded: {_describe(no_runs)}"
        )
    if no_fields:
        notes.append(f"{len(no_fields)} task(s) without {what} excluded")
    if not nums:
        notes.insert(0, f"undefined: no {what}")
    return _ratio_metric(
        nums, dens, n_resamples=n_resamples, seed=seed, confidence=confidence, notes=notes
    )


def artifact_field_accuracy(
    outcomes: Iterable[RunOutcome],
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Metric:
    """AFA = Σ correct / Σ graded fields over all graded runs (micro-average, eq. 1/4).

    The CI resamples tasks and recomputes the ratio of sums. Tasks without graded fields do not
    enter (they contribute nothing to either sum) and are named in the note.
    """
    return _field_ratio_metric(
        _group_by_task(outcomes),
        corrected=False,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
    )


def correction_uptake(
    outcomes: Iterable[RunOutcome],
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Metric:
    """AFA restricted to fields the user corrected mid-conversation (``corrected_*`` counts)."""
    return _field_ratio_metric(
        _group_by_task(outcomes),
        corrected=True,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
    )


def gate_pass_rates(outcomes: Iterable[RunOutcome]) -> dict[str, float]:
    """Fraction of graded runs passing each gate.

    A gate's denominator is the graded runs that report it; the paper's gates come first in
    ``GATES`` order, any other reported gate follows alphabetically.
    """
    passed: dict[str, int] = defaultdict(int)
    reported: dict[str, int] = defaultdict(int)
    for run in outcomes:
        if run.infrastructure_failure:
            continue
        for gate, ok in run.gates.items():
            reported[gate] += 1
            passed[gate] += int(ok)
    order = [g for g in GATES if g in reported] + sorted(set(reported) - set(GATES))
    return {g: passed[g] / reported[g] for g in order}


# --------------------------------------------------------------------------- report


def _labels(value: str | list[str]) -> list[str]:
    if isinstance(value, str):
        return [value]
    return list(dict.fromkeys(value))  # a label listed twice still counts the run once


def _slices(
    outcomes: Sequence[RunOutcome], *, n_resamples: int, seed: int, confidence: float
) -> dict[str, dict[str, SliceRow]]:
    groups: dict[str, dict[str, list[RunOutcome]]] = defaultdict(lambda: defaultdict(list))
    for run in outcomes:
        for dim, value in run.taxonomy.items():
            for label in _labels(value):
                groups[dim][label].append(run)
    result: dict[str, dict[str, SliceRow]] = {}
    for dim in sorted(groups):
        rows: dict[str, SliceRow] = {}
        for label in sorted(groups[dim]):
            runs = groups[dim][label]
            tasks = _group_by_task(runs)
            rows[label] = SliceRow(
                n_tasks=sum(1 for t in tasks if t.n > 0),
                n_runs=sum(t.n for t in tasks),
                pass_at_1=pass_at_k(
                    runs, 1, n_resamples=n_resamples, seed=seed, confidence=confidence
                ),
                afa=_field_ratio_metric(
                    tasks,
                    corrected=False,
                    n_resamples=n_resamples,
                    seed=seed,
                    confidence=confidence,
                ),
            )
        result[dim] = rows
    return result


def campaign_report(
    outcomes: Sequence[RunOutcome],
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> CampaignReport:
    """All campaign metrics with task-level bootstrap CIs (infrastructure failures excluded)."""
    _check_bootstrap_args(n_resamples, confidence)
    runs = list(outcomes)
    tasks = _group_by_task(runs)  # also rejects duplicate run ids
    b = n_resamples
    return CampaignReport(
        n_runs=sum(t.n for t in tasks),
        n_tasks=len(tasks),
        n_infrastructure_failures=sum(1 for r in runs if r.infrastructure_failure),
        protocol_unknown=dict(sum((Counter(r.protocol_unknown) for r in runs), Counter())),
        pass_at_1=pass_at_k(runs, 1, n_resamples=b, seed=seed, confidence=confidence),
        pass_at_3=pass_at_k(runs, 3, n_resamples=b, seed=seed, confidence=confidence),
        reliable_at_3=reliable_at_k(runs, 3, n_resamples=b, seed=seed, confidence=confidence),
        afa=_field_ratio_metric(
            tasks, corrected=False, n_resamples=b, seed=seed, confidence=confidence
        ),
        gate_pass_rates=gate_pass_rates(runs),
        correction_uptake=_field_ratio_metric(
            tasks, corrected=True, n_resamples=b, seed=seed, confidence=confidence
        ),
        slices=_slices(runs, n_resamples=b, seed=seed, confidence=confidence),
        confidence=confidence,
        n_resamples=b,
    )


# --------------------------------------------------------------------------- scorecard


def _pct(x: float) -> str:
    return f"{100.0 * x:5.1f}%"


def _metric_cell(m: Metric) -> str:
    if m.value is None:
        return "n/a"
    cell = _pct(m.value)
    if m.ci is not None:
        cell += f"  [{_pct(m.ci[0]).strip()}, {_pct(m.ci[1]).strip()}]"
    return cell


def format_scorecard(report: CampaignReport) -> str:
    """A compact text scorecard: headline metrics with CIs, AFA, gate pass rates, run counts."""
    rows: list[tuple[str, str]] = [
        ("Pass@1", _metric_cell(report.pass_at_1)),
        ("Pass@3", _metric_cell(report.pass_at_3)),
        ("Reliable@3", _metric_cell(report.reliable_at_3)),
        ("AFA", _metric_cell(report.afa)),
        ("Correction uptake", _metric_cell(report.correction_uptake)),
    ]
    for gate, rate in report.gate_pass_rates.items():
        rows.append((f"Gate {gate}", _pct(rate)))
    rows += [
        ("Runs (graded)", str(report.n_runs)),
        ("Tasks", str(report.n_tasks)),
        ("Infrastructure failures", str(report.n_infrastructure_failures)),
    ]
    if report.protocol_unknown:
        rows.append(("Ignored provider messages", ", ".join(
            f"{t} ×{n}" for t, n in sorted(report.protocol_unknown.items()))))
    width = max(len(name) for name, _ in rows)
    lines = [
        f"APEX-Voice scorecard ({100.0 * report.confidence:g}% CIs: task-level bootstrap, "
        f"{report.n_resamples} resamples, percentile)"
    ]
    lines += [f"  {name:<{width}}  {value}" for name, value in rows]
    named = [
        ("Pass@1", report.pass_at_1),
        ("Pass@3", report.pass_at_3),
        ("Reliable@3", report.reliable_at_3),
        ("AFA", report.afa),
        ("Correction uptake", report.correction_uptake),
    ]
    notes = [f"  note {name}: {m.note}" for name, m in named if m.note]
    return "\n".join(lines + notes)
