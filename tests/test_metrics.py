"""Tests for grading.metrics against values worked out by hand (see the comments).

The bootstrap tests enumerate every one of the n**n equally likely task resamples of a tiny
campaign with exact fractions, so the reference interval does not come from the code under test.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from pydantic import ValidationError

from grading.metrics import (
    GATES,
    CampaignReport,
    Metric,
    RunOutcome,
    artifact_field_accuracy,
    campaign_report,
    correction_uptake,
    format_scorecard,
    gate_pass_rates,
    pass_at_k,
    reliable_at_k,
    task_bootstrap_ci,
    unbiased_pass_at_k,
    unbiased_reliable_at_k,
)

# Any warning raised inside a test (RuntimeWarning from 0/0, numpy nan warnings, ...) fails it.
pytestmark = pytest.mark.filterwarnings("error")

B = 10_000


def run(
    task: str,
    repeat: int,
    ws: bool,
    *,
    correct: int = 0,
    total: int = 0,
    corrected: tuple[int, int] = (0, 0),
    taxonomy: dict[str, str | list[str]] | None = None,
    infra: bool = False,
    gates: dict[str, bool] | None = None,
) -> RunOutcome:
    return RunOutcome(
        run_id=f"{task}-r{repeat}" + ("-infra" if infra else ""),
        task_id=task,
        repeat=repeat,
        ws=ws,
        gates=gates if gates is not None else dict.fromkeys(GATES, ws),
        afa_correct=correct,
        afa_total=total,
        corrected_correct=corrected[0],
        corrected_total=corrected[1],
        taxonomy=taxonomy or {},
        infrastructure_failure=infra,
    )


def campaign(successes: dict[str, int], runs_per_task: int = 3) -> list[RunOutcome]:
    """Each task gets `runs_per_task` runs, the first `successes[task]` of which succeed."""
    return [
        run(task, r, r < c, correct=1, total=1)
        for task, c in successes.items()
        for r in range(runs_per_task)
    ]


# --------------------------------------------------------------------------- exact helpers


def exact_quantile(dist: Counter[Fraction], total: int, q: Fraction) -> tuple[Fraction, float]:
    """inf{x : P(X <= x) >= q} and the distance of q from the nearest CDF jump (knife edge)."""
    cum = Fraction(0)
    for x in sorted(dist):
        before = cum
        cum += Fraction(dist[x], total)
        if cum >= q:
            return x, float(min(q - before, cum - q))
    raise AssertionError("unreachable")


def exact_task_bootstrap(
    num: list[Fraction], den: list[Fraction]
) -> tuple[Counter[Fraction], int]:
    """Distribution of Σnum/Σden over all n**n resamples of task indices (each 1/n**n)."""
    n = len(num)
    dist: Counter[Fraction] = Counter()
    for idx in itertools.product(range(n), repeat=n):
        dist[sum((num[i] for i in idx), Fraction(0)) / sum((den[i] for i in idx), Fraction(0))] += 1
    return dist, n**n


# --------------------------------------------------------------------------- estimators


def test_hand_built_campaign_pass_and_reliable() -> None:
    # 4 tasks x 3 runs, successes 3, 1, 0, 2:
    #   Pass@1     = (3 + 1 + 0 + 2) / 12          = 6/12 = 0.5
    #   Pass@3     = mean(1[c>=1]) = (1+1+0+1)/4   = 0.75
    #   Reliable@3 = mean(1[c==3]) = (1+0+0+0)/4   = 0.25
    outcomes = campaign({"t1": 3, "t2": 1, "t3": 0, "t4": 2})
    p1 = pass_at_k(outcomes, 1)
    p3 = pass_at_k(outcomes, 3)
    r3 = reliable_at_k(outcomes, 3)
    assert p1.value == pytest.approx(0.5)
    assert p3.value == pytest.approx(0.75)
    assert r3.value == pytest.approx(0.25)
    assert (p1.n_tasks, p3.n_tasks, r3.n_tasks) == (4, 4, 4)
    for m in (p1, p3, r3):
        assert m.ci is not None and m.ci[0] <= m.value <= m.ci[1]  # type: ignore[operator]


def test_unbiased_estimator_n5_c2_k3() -> None:
    # C(5,3) = 10, C(3,3) = 1, C(2,3) = 0:
    #   pass@3     = 1 - C(5-2,3)/C(5,3) = 1 - 1/10 = 0.9
    #   reliable@3 = C(2,3)/C(5,3)       = 0/10     = 0
    assert unbiased_pass_at_k(5, 2, 3) == pytest.approx(0.9)
    assert unbiased_reliable_at_k(5, 2, 3) == 0.0
    # n=5, c=4, k=3: pass = 1 - C(1,3)/10 = 1; reliable = C(4,3)/10 = 4/10
    assert unbiased_pass_at_k(5, 4, 3) == 1.0
    assert unbiased_reliable_at_k(5, 4, 3) == pytest.approx(0.4)
    # k = 1: pass@1 = 1 - (n-c)/n = c/n
    assert unbiased_pass_at_k(5, 2, 1) == pytest.approx(2 / 5)


@pytest.mark.parametrize("c", [0, 1, 2, 3])
def test_n_equals_k_gives_paper_indicators(c: int) -> None:
    # With n == k == 3 the estimators are exactly 1[sum >= 1] and 1[sum == 3] (eq. 2 / 5).
    assert unbiased_pass_at_k(3, c, 3) == float(c >= 1)
    assert unbiased_reliable_at_k(3, c, 3) == float(c == 3)


def test_unbiased_estimator_on_campaign_with_five_runs() -> None:
    # One task, 5 runs, 2 successes: Pass@3 = 0.9, Reliable@3 = 0 (as hand-computed above),
    # Pass@1 = 2/5.
    outcomes = campaign({"t": 2}, runs_per_task=5)
    assert pass_at_k(outcomes, 3).value == pytest.approx(0.9)
    assert reliable_at_k(outcomes, 3).value == 0.0
    assert pass_at_k(outcomes, 1).value == pytest.approx(0.4)


def test_n_below_k_is_undefined() -> None:
    assert unbiased_pass_at_k(2, 1, 3) is None
    assert unbiased_reliable_at_k(2, 2, 3) is None
    # Task "short" has only 2 runs: Pass@3/Reliable@3 undefined, Pass@1 still defined
    # (mean of 2/3 and 1/2 = 7/12).
    outcomes = campaign({"full": 2}) + campaign({"short": 1}, runs_per_task=2)
    for m in (pass_at_k(outcomes, 3), reliable_at_k(outcomes, 3)):
        assert m.value is None and m.ci is None
        assert m.note is not None and "short" in m.note and "fewer than 3" in m.note
    assert pass_at_k(outcomes, 1).value == pytest.approx(7 / 12)


def test_pass_at_1_is_mean_over_tasks_of_c_over_n() -> None:
    # Task a: 1 of 2 runs (0.5); task b: 4 of 4 runs (1.0). Mean over tasks = 0.75, which is
    # not the pooled 5/6.
    outcomes = campaign({"a": 1}, runs_per_task=2) + campaign({"b": 4}, runs_per_task=4)
    assert pass_at_k(outcomes, 1).value == pytest.approx(0.75)


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        unbiased_pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(campaign({"t": 1}), 0)
    with pytest.raises(ValueError):
        pass_at_k(campaign({"t": 1}), 1, confidence=1.0)
    with pytest.raises(ValueError):
        task_bootstrap_ci([1.0, 0.0], [1.0, 0.0])  # a task with no denominator
    with pytest.raises(ValidationError):
        run("t", 0, True, correct=3, total=2)
    with pytest.raises(ValueError, match="duplicate run_id"):
        campaign_report([run("t", 0, True), run("t", 0, False)], n_resamples=10)


# --------------------------------------------------------------------------- bootstrap


def test_task_bootstrap_matches_exact_enumeration_pass_at_1() -> None:
    # 4 tasks x 3 runs with successes 0, 1, 1, 3: per-task c/n = 0, 1/3, 1/3, 1.
    # A resample draws 4 task indices uniformly with replacement: 4**4 = 256 equally likely
    # outcomes; the statistic is (sum of the 4 drawn c) / 12. Enumerating them exactly:
    #   P(stat = 0)    = 1/256   (all four draws are the c=0 task)
    #   P(stat <= 1/12)= 9/256 = 0.0352  -> 2.5% quantile = 1/12   (CDF jump 0.0039 -> 0.0352)
    #   97.5% quantile = 5/6 = 10/12                               (CDF jump 0.9648 -> 0.9961)
    # Both quantiles sit ~0.01 (about 6 Monte-Carlo standard errors at B = 10,000) away from a
    # CDF jump, so the 10,000-resample percentile interval must hit them exactly.
    successes = [0, 1, 1, 3]
    dist, total = exact_task_bootstrap([Fraction(c, 3) for c in successes], [Fraction(1)] * 4)
    lo, lo_margin = exact_quantile(dist, total, Fraction(1, 40))
    hi, hi_margin = exact_quantile(dist, total, Fraction(39, 40))
    assert (lo, hi) == (Fraction(1, 12), Fraction(5, 6))
    assert min(lo_margin, hi_margin) > 0.008  # not a knife edge

    outcomes = campaign({f"t{i}": c for i, c in enumerate(successes)})
    m = pass_at_k(outcomes, 1, n_resamples=B, seed=0)
    assert m.value == pytest.approx(5 / 12)
    assert m.ci is not None
    assert m.ci[0] == pytest.approx(float(lo), abs=1e-12)
    assert m.ci[1] == pytest.approx(float(hi), abs=1e-12)
    for seed in (1, 2, 3):  # not an accident of one seed
        ci = pass_at_k(outcomes, 1, n_resamples=B, seed=seed).ci
        assert ci == pytest.approx((1 / 12, 5 / 6), abs=1e-12)


def test_task_bootstrap_matches_exact_enumeration_afa_ratio() -> None:
    # 4 tasks, AFA counts (correct/total): 1/1, 1/3, 3/6, 3/6. The statistic on a resample is
    # Σcorrect / Σtotal of the drawn tasks (ratio of sums, not mean of ratios).
    # Point value = 8/16 = 0.5 (the mean of per-task ratios would be 0.583).
    # Exact enumeration of the 256 resamples gives 2.5% / 97.5% quantiles 2/5 and 2/3, each
    # ~0.021 from a CDF jump.
    num = [1, 1, 3, 3]
    den = [1, 3, 6, 6]
    dist, total = exact_task_bootstrap([Fraction(x) for x in num], [Fraction(x) for x in den])
    lo, lo_margin = exact_quantile(dist, total, Fraction(1, 40))
    hi, hi_margin = exact_quantile(dist, total, Fraction(39, 40))
    assert (lo, hi) == (Fraction(2, 5), Fraction(2, 3))
    assert min(lo_margin, hi_margin) > 0.015

    # Spread each task's fields over 3 runs so the per-task totals are the sums above.
    per_run = {"a": [(1, 1), (0, 0), (0, 0)], "b": [(1, 1), (0, 1), (0, 1)],
               "c": [(1, 2), (1, 2), (1, 2)], "d": [(3, 4), (0, 1), (0, 1)]}
    outcomes = [
        run(task, r, False, correct=c, total=t)
        for task, counts in per_run.items()
        for r, (c, t) in enumerate(counts)
    ]
    m = artifact_field_accuracy(outcomes, n_resamples=B, seed=0)
    assert m.value == pytest.approx(0.5)
    assert m.ci == pytest.approx((0.4, 2 / 3), abs=1e-12)
    assert m.n_tasks == 4


def test_task_level_differs_from_run_level_resampling() -> None:
    # Task A succeeds 3/3, task B 0/3. Task level: a resample is {A,A}, {A,B}, {B,A} or {B,B},
    # each 1/4, so Pass@1 in {1, 1/2, 1/2, 0}: P(0) = P(1) = 1/4 > 2.5%, CI = [0, 1].
    outcomes = campaign({"A": 3, "B": 0})
    m = pass_at_k(outcomes, 1, n_resamples=B, seed=0)
    assert m.value == pytest.approx(0.5)
    assert m.ci == (0.0, 1.0)

    # Run level (wrong: treats the 6 runs as independent): the mean of 6 draws with
    # replacement from {1,1,1,0,0,0} is Binomial(6, 1/2)/6. P(X=0) = 1/64 = 0.016 < 0.025,
    # P(X<=1) = 7/64 = 0.109, so the exact interval is [1/6, 5/6] -- width 2/3 instead of 1.
    cdf = np.cumsum([math.comb(6, x) / 64 for x in range(7)])
    run_lo = int(np.searchsorted(cdf, 0.025)) / 6
    run_hi = int(np.searchsorted(cdf, 0.975)) / 6
    assert (run_lo, run_hi) == pytest.approx((1 / 6, 5 / 6))
    # Same thing by simulation, to show what a run-level bootstrap would report.
    rng = np.random.default_rng(0)
    runs = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    sims = runs[rng.integers(0, 6, size=(B, 6))].mean(axis=1)
    sim_lo, sim_hi = np.quantile(sims, [0.025, 0.975])
    assert (sim_lo, sim_hi) == pytest.approx((1 / 6, 5 / 6))
    assert (run_hi - run_lo) < (m.ci[1] - m.ci[0]) - 0.3


def test_reproducible_with_same_seed() -> None:
    rng = np.random.default_rng(123)
    successes = {f"t{i:02d}": int(c) for i, c in enumerate(rng.integers(0, 4, size=20))}
    outcomes = campaign(successes)
    a = campaign_report(outcomes, seed=7)
    b = campaign_report(outcomes, seed=7)
    assert a == b
    assert a.pass_at_1.ci == b.pass_at_1.ci
    c = pass_at_k(outcomes, 1, seed=8)
    assert c.value == a.pass_at_1.value
    assert c.ci != a.pass_at_1.ci  # another seed draws other resamples


# --------------------------------------------------------------------------- AFA, infra


def test_afa_is_ratio_of_sums_with_unequal_field_counts() -> None:
    # Task a: runs 9/10, 10/10, 8/10 -> 27/30. Task b: runs 0/1, 1/1, 0/1 -> 1/3.
    # AFA = (27 + 1) / (30 + 3) = 28/33 = 0.8485; the mean of per-task ratios would be
    # (0.9 + 0.3333)/2 = 0.6167 and the mean of per-run ratios (0.9+1+0.8+0+1+0)/6 = 0.6167.
    outcomes = [
        run("a", 0, False, correct=9, total=10),
        run("a", 1, True, correct=10, total=10),
        run("a", 2, False, correct=8, total=10),
        run("b", 0, False, correct=0, total=1),
        run("b", 1, False, correct=1, total=1),
        run("b", 2, False, correct=0, total=1),
    ]
    m = artifact_field_accuracy(outcomes)
    assert m.value == pytest.approx(28 / 33)
    assert m.n_tasks == 2
    # Two tasks: resamples {a,a}: 54/60 = 0.9, {a,b}/{b,a}: 28/33, {b,b}: 2/6. Each extreme has
    # probability 1/4 > 2.5%, so the CI is exactly [1/3, 0.9].
    assert m.ci == pytest.approx((1 / 3, 0.9))


def test_infrastructure_failures_are_excluded_and_counted() -> None:
    base = campaign({"t1": 3, "t2": 1, "t3": 0, "t4": 2})
    # Extra runs that failed for infrastructure reasons: they must not move any metric.
    noisy = [
        *base,
        run("t1", 3, False, correct=0, total=50, corrected=(0, 9), infra=True),
        run("t3", 3, True, correct=50, total=50, infra=True),
    ]
    clean_report = campaign_report(base, n_resamples=2000)
    noisy_report = campaign_report(noisy, n_resamples=2000)
    assert noisy_report.n_infrastructure_failures == 2
    assert clean_report.n_infrastructure_failures == 0
    assert noisy_report.n_runs == clean_report.n_runs == 12
    assert noisy_report.n_tasks == 4
    for field in ("pass_at_1", "pass_at_3", "reliable_at_3", "afa", "gate_pass_rates"):
        assert getattr(noisy_report, field) == getattr(clean_report, field)

    # An infrastructure failure that leaves a task with 2 graded runs makes Pass@3 undefined.
    dropped = [r for r in base if r.run_id != "t2-r2"] + [run("t2", 2, False, infra=True)]
    report = campaign_report(dropped, n_resamples=500)
    assert report.pass_at_3.value is None and report.reliable_at_3.value is None
    assert report.pass_at_3.note is not None and "t2" in report.pass_at_3.note
    # Pass@1 is still defined: t2 is 1/2 now -> (1 + 1/2 + 0 + 2/3) / 4 = 13/24.
    assert report.pass_at_1.value == pytest.approx(13 / 24)


def test_task_with_only_infrastructure_failures() -> None:
    outcomes = [*campaign({"ok": 2}), run("gone", 0, False, correct=1, total=1, infra=True)]
    m = pass_at_k(outcomes, 1)
    assert m.value is None and m.note is not None and "gone" in m.note
    afa = artifact_field_accuracy(outcomes)
    assert afa.value == pytest.approx(1.0) and afa.n_tasks == 1
    assert afa.note is not None and "gone" in afa.note


# --------------------------------------------------------------------------- degenerate


def test_single_task_ci_equals_point() -> None:
    outcomes = campaign({"only": 2})
    for m in (pass_at_k(outcomes, 1), pass_at_k(outcomes, 3), reliable_at_k(outcomes, 3)):
        assert m.value is not None and m.ci == (m.value, m.value)
        assert m.note is not None and "single task" in m.note
    assert pass_at_k(outcomes, 1).value == pytest.approx(2 / 3)


def test_identical_tasks_ci_equals_point() -> None:
    # Every task 2/3 -> Pass@1 = 2/3 on every resample; the interval collapses, no NaN.
    m = pass_at_k(campaign({"a": 2, "b": 2, "c": 2}), 1)
    assert m.value == pytest.approx(2 / 3)
    assert m.ci == (m.value, m.value)
    # Every task passes: BCa would give nan here; the percentile interval is [1, 1].
    allpass = campaign_report(campaign({"a": 3, "b": 3, "c": 3}))
    for metric in (allpass.pass_at_1, allpass.pass_at_3, allpass.reliable_at_3, allpass.afa):
        assert metric.value == 1.0 and metric.ci == (1.0, 1.0)
    # Same AFA ratio with different field counts (1/3 and 2/6): still degenerate.
    outcomes = [run("a", 0, True, correct=1, total=3), run("b", 0, True, correct=2, total=6)]
    afa = artifact_field_accuracy(outcomes)
    assert afa.value is not None and afa.ci == (afa.value, afa.value)
    assert not any(math.isnan(x) for x in afa.ci)


def test_empty_campaign() -> None:
    report = campaign_report([], n_resamples=100)
    assert report.n_runs == report.n_tasks == report.n_infrastructure_failures == 0
    for m in (report.pass_at_1, report.pass_at_3, report.reliable_at_3, report.afa):
        assert m.value is None and m.ci is None and m.note
    assert report.gate_pass_rates == {} and report.slices == {}
    assert "n/a" in format_scorecard(report)


# --------------------------------------------------------------------------- gates, uptake


def test_gate_pass_rates_fraction_of_runs() -> None:
    # 4 graded runs: TS passes 4/4, PV 3/4, AC 2/4, AV 1/4; the infrastructure run is ignored.
    gates = [
        {"TS": True, "PV": True, "AC": True, "AV": True},
        {"TS": True, "PV": True, "AC": True, "AV": False},
        {"TS": True, "PV": True, "AC": False, "AV": False},
        {"TS": True, "PV": False, "AC": False, "AV": False},
    ]
    outcomes = [run("t", i, all(g.values()), gates=g) for i, g in enumerate(gates)]
    outcomes.append(run("t", 9, False, gates=dict.fromkeys(GATES, False), infra=True))
    rates = gate_pass_rates(outcomes)
    assert rates == {"TS": 1.0, "PV": 0.75, "AC": 0.5, "AV": 0.25}
    assert list(rates) == list(GATES)


def test_correction_uptake_ratio_and_missing_tasks() -> None:
    # Task a: corrected fields 1/2 and 2/2 -> 3/4; task b: 0/1; task c: no corrected fields.
    # Uptake = (3 + 0) / (4 + 1) = 3/5 over 2 tasks; c is excluded and said so.
    outcomes = [
        run("a", 0, True, correct=5, total=5, corrected=(1, 2)),
        run("a", 1, True, correct=5, total=5, corrected=(2, 2)),
        run("b", 0, False, correct=3, total=5, corrected=(0, 1)),
        run("c", 0, True, correct=5, total=5),
    ]
    m = correction_uptake(outcomes)
    assert m.value == pytest.approx(3 / 5)
    assert m.n_tasks == 2
    assert m.note is not None and "without corrected fields" in m.note
    none = correction_uptake([run("c", 0, True, correct=1, total=1)])
    assert none.value is None and none.ci is None and none.note is not None


# --------------------------------------------------------------------------- slices, report


def test_slices_count_list_valued_labels_under_each_label() -> None:
    tax_a: dict[str, str | list[str]] = {
        "archetype": "form-fill", "duplex": ["barge-in", "mid-speech correction"]}
    tax_b: dict[str, str | list[str]] = {
        "archetype": "negotiate", "duplex": ["barge-in", "barge-in"]}  # duplicate counts once
    outcomes = [
        # task a: 2 of 3 runs succeed, fields 3/4 per run
        *(run("a", r, r < 2, correct=3, total=4, taxonomy=tax_a) for r in range(3)),
        # task b: 0 of 3 runs succeed, fields 1/2 per run
        *(run("b", r, False, correct=1, total=2, taxonomy=tax_b) for r in range(3)),
    ]
    report = campaign_report(outcomes, n_resamples=1000)
    assert set(report.slices) == {"archetype", "duplex"}
    assert set(report.slices["duplex"]) == {"barge-in", "mid-speech correction"}

    barge = report.slices["duplex"]["barge-in"]  # tasks a and b
    assert (barge.n_tasks, barge.n_runs) == (2, 6)
    assert barge.pass_at_1.value == pytest.approx((2 / 3 + 0) / 2)  # 1/3
    assert barge.afa.value == pytest.approx((9 + 3) / (12 + 6))  # 12/18 = 2/3

    mid = report.slices["duplex"]["mid-speech correction"]  # task a only
    assert (mid.n_tasks, mid.n_runs) == (1, 3)
    assert mid.pass_at_1.value == pytest.approx(2 / 3)
    assert mid.afa.value == pytest.approx(0.75)
    assert mid.pass_at_1.ci == (mid.pass_at_1.value, mid.pass_at_1.value)

    neg = report.slices["archetype"]["negotiate"]
    assert (neg.n_tasks, neg.n_runs, neg.pass_at_1.value) == (1, 3, 0.0)


def test_campaign_report_and_scorecard() -> None:
    outcomes = campaign({"t1": 3, "t2": 1, "t3": 0, "t4": 2})
    outcomes.append(run("t1", 3, False, infra=True))
    report = campaign_report(outcomes)
    assert isinstance(report, CampaignReport)
    assert isinstance(report.pass_at_1, Metric)
    assert report.pass_at_1.value == pytest.approx(0.5)
    assert report.pass_at_3.value == pytest.approx(0.75)
    assert report.reliable_at_3.value == pytest.approx(0.25)
    assert report.afa.value == pytest.approx(1.0)  # every run 1/1 field
    assert report.gate_pass_rates == dict.fromkeys(GATES, 0.5)  # 6 of 12 runs pass all gates
    assert (report.n_runs, report.n_tasks, report.n_infrastructure_failures) == (12, 4, 1)
    # The report round-trips through JSON.
    assert CampaignReport.model_validate_json(report.model_dump_json()) == report

    text = format_scorecard(report)
    assert "Pass@1" in text and "50.0%" in text
    assert "Pass@3" in text and "75.0%" in text
    assert "Reliable@3" in text and "25.0%" in text
    assert "Gate PV" in text and "Infrastructure failures" in text
    lo, hi = report.pass_at_1.ci  # type: ignore[misc]
    assert f"[{100 * lo:.1f}%, {100 * hi:.1f}%]" in text


def test_the_report_sums_ignored_provider_message_types_over_every_run() -> None:
    runs = [
        run("t1", 0, True).model_copy(update={"protocol_unknown": {"ping": 3}}),
        run("t1", 1, False).model_copy(update={"protocol_unknown": {"ping": 1, "x.y": 2}}),
        run("t2", 0, True, infra=True).model_copy(update={"protocol_unknown": {"x.y": 1}}),
        run("t2", 1, True),
    ]
    report = campaign_report(runs, n_resamples=50)
    assert report.protocol_unknown == {"ping": 4, "x.y": 3}
    assert "Ignored provider messages  ping ×4, x.y ×3" in format_scorecard(report)
