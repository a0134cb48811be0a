"""Study B Table 10: human vs frozen-simulator Pass@1, the paired bootstrap and the anchors.

Expected numbers are worked out by hand in the comments (exact bootstrap distributions where an
interval is checked), never taken from the code under test.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from runtime.core.spec import default_tasks_dir, load_tasks
from study_protocols.study_b import (
    SessionOutcome,
    format_table10,
    synthetic_from_campaign,
    table10,
    table10_csv,
)
from tests.conftest import run_script

pytestmark = pytest.mark.filterwarnings("error")

T, F = True, False


def _o(task: str, system: str, who: str, ws: bool | None, anchor: bool = False) -> SessionOutcome:
    return SessionOutcome(task_id=task, system=system, participant=who, anchor=anchor, ws=ws)


# System A: four tasks, t4's human session incomplete.  System B: one task.  System C: its only
# session incomplete.  Anchors: A on t1 and t2, B on t1 (second session ungradable).
HUMAN = [
    _o("t1", "A", "P01", T), _o("t2", "A", "P02", F), _o("t3", "A", "P03", T),
    _o("t4", "A", "P04", None),
    _o("t1", "B", "P05", F),
    _o("t1", "C", "P02", None),
    _o("t1", "A", "P06", T, anchor=True), _o("t2", "A", "P07", T, anchor=True),
    _o("t1", "B", "P01", None, anchor=True),
]
SYNTHETIC = {
    "A": {"t1": [T, T, F], "t2": [F, F, T], "t3": [T, T, F], "t4": [F, F, F],
          "t5": [T, T, T]},  # t5 had no human session: not part of the comparison
    "B": {"t1": [T, F]},
    "C": {"t1": [T, T, T]},
}


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return table10(HUMAN, SYNTHETIC, seed=3, n_resamples=2000)


def test_hand_computed_system_a(result: dict[str, Any]) -> None:
    a = result["systems"]["A"]
    # Completed human tasks: t1 (1), t2 (0), t3 (1); t4 is incomplete -> excluded, counted.
    # human = (100 + 0 + 100) / 3 = 66.667
    # synthetic on the same tasks = (2/3 + 1/3 + 2/3) / 3 * 100 = 55.556
    # diff = 11.111 = mean of per-task d = (+33.33, -33.33, +33.33)
    assert a["n_tasks"] == 3 and a["n_incomplete"] == 1 and a["incomplete_tasks"] == ["t4"]
    assert a["tasks"] == ["t1", "t2", "t3"] and a["synthetic_runs"] == 9
    assert a["human_pass_at_1"] == pytest.approx(200 / 3)
    assert a["synthetic_pass_at_1"] == pytest.approx(500 / 9)
    assert a["diff"] == pytest.approx(100 / 9)
    # Paired bootstrap of d: the mean of 3 draws is (3 - 2k)/9 * 100 where k ~ Bin(3, 1/3)
    # draws hit t2: P(k=3) = 1/27 = 3.7% > 2.5% -> lower limit -33.33 (all three draws t2);
    # P(k=0) = 8/27 = 29.6% > 2.5% -> upper limit +33.33.
    assert a["diff_ci"] == pytest.approx([-100 / 3, 100 / 3])
    assert any("1 incomplete/ungradable human session(s)" in n and "t4" in n
               for n in a["notes"])


def test_one_task_and_no_task_are_undefined_with_reasons(result: dict[str, Any]) -> None:
    b = result["systems"]["B"]
    # One task: human 0, synthetic 1/2 -> diff -50; a bootstrap over one task is undefined.
    assert (b["human_pass_at_1"], b["synthetic_pass_at_1"], b["diff"]) == (0.0, 50.0, -50.0)
    assert b["diff_ci"] is None and any("one task" in n for n in b["notes"])
    c = result["systems"]["C"]
    assert c["n_tasks"] == 0 and c["n_incomplete"] == 1
    assert c["human_pass_at_1"] is None and c["synthetic_pass_at_1"] is None
    assert c["diff"] is None and c["diff_ci"] is None
    assert any(n.startswith("undefined") for n in c["notes"])
    # Mean diff over systems with a defined diff: (11.111 + (-50)) / 2 = -19.444.
    md = result["mean_diff"]
    assert md["value"] == pytest.approx((100 / 9 - 50) / 2) and md["n_systems"] == 2
    assert "C" in md["note"]


def test_anchor_agreement(result: dict[str, Any]) -> None:
    a = result["anchor"]["systems"]["A"]
    # t1: P01 pass, P06 pass (same); t2: P02 fail, P07 pass (differ).
    assert a["n_pairs"] == 2 and a["pct_same"] == 50.0
    assert a["pass_at_1_primary"] == 50.0 and a["pass_at_1_second"] == 100.0
    assert a["diff"] == -50.0
    assert [(p["task_id"], p["primary_ws"], p["second_ws"], p["same"]) for p in a["pairs"]] == [
        ("t1", True, True, True), ("t2", False, True, False)]
    b = result["anchor"]["systems"]["B"]
    assert b["n_pairs"] == 0 and b["n_incomplete_pairs"] == 1 and b["pct_same"] is None
    overall = result["anchor"]["overall"]
    assert overall == {"n_pairs": 2, "pct_same": 50.0, "mean_diff": -50.0, "note": None}


def test_result_is_json_and_deterministic(result: dict[str, Any]) -> None:
    assert json.loads(json.dumps(result)) == result
    assert table10(HUMAN, SYNTHETIC, seed=3, n_resamples=2000) == result


def test_incomplete_sessions_are_excluded_from_both_conditions() -> None:
    # t4 is incomplete for the humans: its synthetic runs must not move any number.
    all_pass = {**SYNTHETIC, "A": {**SYNTHETIC["A"], "t4": [T, T, T]}}
    one = table10(HUMAN, SYNTHETIC, seed=1, n_resamples=500)["systems"]["A"]
    two = table10(HUMAN, all_pass, seed=1, n_resamples=500)["systems"]["A"]
    assert one == two and one["n_incomplete"] == 1


def test_completed_task_without_synthetic_runs_is_excluded_and_named() -> None:
    synth = {"A": {"t1": [T], "t2": []}}
    row = table10([_o("t1", "A", "P1", T), _o("t2", "A", "P2", F)], synth,
                  n_resamples=100)["systems"]["A"]
    assert row["n_tasks"] == 1 and row["tasks"] == ["t1"]
    assert any("without synthetic runs" in n and "t2" in n for n in row["notes"])


# Twelve tasks where humans and simulator agree except on one: the per-task difference d is 0
# on eleven tasks and -66.67 on t11 (human fails, simulator passes 2 of 3).
PAIRED_TASKS = [f"t{i:02d}" for i in range(12)]
PAIRED_HUMAN = [_o(t, "S", f"P{i}", i < 6) for i, t in enumerate(PAIRED_TASKS)]
PAIRED_SYNTH = {"S": {t: ([T, T, T] if i < 6 else [F, F, F] if i < 11 else [T, T, F])
                      for i, t in enumerate(PAIRED_TASKS)}}


def test_paired_bootstrap_matches_hand_computed_interval() -> None:
    row = table10(PAIRED_HUMAN, PAIRED_SYNTH, seed=0, n_resamples=2000)["systems"]["S"]
    # human = 6/12 = 50; synthetic = (6*100 + 5*0 + 66.67) / 12 = 55.556; diff = -5.556.
    assert row["human_pass_at_1"] == 50.0
    assert row["synthetic_pass_at_1"] == pytest.approx(5000 / 90)
    assert row["diff"] == pytest.approx(-200 / 36)
    # Resampled mean of d = -66.67 * k / 12, k ~ Bin(12, 1/12) draws of t11.
    # P(k=0) = (11/12)^12 = 0.352 -> upper limit 0.
    # P(k>=4) = 0.0138 < 0.025 <= P(k>=3) = 0.0720 -> lower limit at k = 3: -16.667.
    assert row["diff_ci"] == pytest.approx([-200 / 12, 0.0])


def test_pairing_matters_independent_resampling_is_wider() -> None:
    row = table10(PAIRED_HUMAN, PAIRED_SYNTH, seed=0, n_resamples=2000)["systems"]["S"]
    paired = row["diff_ci"][1] - row["diff_ci"][0]
    # Independent resampling: draw the human tasks and the simulator tasks separately.
    h = np.array([100.0 if i < 6 else 0.0 for i in range(12)])
    y = np.array([100.0] * 6 + [0.0] * 5 + [200 / 3])
    rng = np.random.default_rng(0)
    diffs = (h[rng.integers(0, 12, size=(2000, 12))].mean(axis=1)
             - y[rng.integers(0, 12, size=(2000, 12))].mean(axis=1))
    lo, hi = np.quantile(diffs, [0.025, 0.975])
    independent = float(hi - lo)
    # Human and simulator results move together across tasks, so the paired interval
    # (about 17 points) is far narrower than the independent one (about 80 points).
    assert paired < independent / 3, (paired, independent)


def test_bootstrap_seed_determinism() -> None:
    rng = np.random.default_rng(42)
    tasks = [f"t{i}" for i in range(20)]
    human = [_o(t, "S", f"P{i}", bool(rng.random() < 0.5)) for i, t in enumerate(tasks)]
    synth = {"S": {t: [bool(x) for x in rng.random(3) < 0.6] for t in tasks}}
    first = table10(human, synth, seed=7, n_resamples=1000)["systems"]["S"]["diff_ci"]
    assert table10(human, synth, seed=7, n_resamples=1000)["systems"]["S"]["diff_ci"] == first
    other = table10(human, synth, seed=8, n_resamples=1000)["systems"]["S"]["diff_ci"]
    assert other != first
    assert first[0] < table10(human, synth, seed=7)["systems"]["S"]["diff"] < first[1]


def test_bad_inputs_are_named() -> None:
    with pytest.raises(ValueError, match="two primary sessions for task 't1' on system 'A' "
                                         r"\(participants P01 and P09\)"):
        table10([_o("t1", "A", "P01", T), _o("t1", "A", "P09", F)], {})
    with pytest.raises(ValueError, match=r"synthetic\['A'\]\['t1'\]\[1\]: expected a WS"):
        table10([_o("t1", "A", "P01", T)], {"A": {"t1": [True, "yes"]}})  # type: ignore[list-item]
    with pytest.raises(ValueError, match="ws must be true, false or None"):
        table10([_o("t1", "A", "P01", 1)], {})  # type: ignore[arg-type]


def test_csv_and_text_rendering(result: dict[str, Any]) -> None:
    buf = io.StringIO()
    table10_csv(result, buf)
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert [r["system"] for r in rows] == ["A", "B", "C", "(mean)"]
    a, b, c, mean = rows
    assert (a["n_tasks"], a["n_incomplete"], a["diff"]) == ("3", "1", "11.1111")
    assert (a["diff_ci_low"], a["diff_ci_high"]) == ("-33.3333", "33.3333")
    assert (a["anchor_pairs"], a["anchor_pct_same"]) == ("2", "50.0000")
    assert b["diff_ci_low"] == "" and "one task" in b["notes"]
    assert c["human_pass_at_1"] == "" and "undefined" in c["notes"]
    assert mean["diff"] == "-19.4444"
    text = format_table10(result)
    assert "11.1" in text and "[-33.3, 33.3]" in text and "n/a" in text
    assert "mean over systems" in text and "-19.4" in text and "notes:" in text


# --------------------------------------------------------------------------- from a campaign


def test_synthetic_from_campaign_grades_each_repeat(tmp_path: Path) -> None:
    camp = tmp_path / "camp"
    # The oracle passes apexv1_070; the unfinalized script on apexv1_001 leaves the artifact
    # uncommitted, so its runs fail the gates.
    for rep in (0, 1):
        run_script("apexv1_070", "oracle", camp, repeat=rep)
    run_script("apexv1_001", "negative_unfinalized", camp, repeat=0)
    tasks = {t.id: t for t in load_tasks([default_tasks_dir()])}
    synth = synthetic_from_campaign(camp, tasks)
    assert synth == {"apexv1_001": [False], "apexv1_070": [True, True]}

    human = [_o("apexv1_070", "oracle", "P01", False), _o("apexv1_001", "oracle", "P02", False)]
    row = table10(human, {"oracle": synth}, n_resamples=200)["systems"]["oracle"]
    # human (0 + 0) / 2 = 0; synthetic (100 + 0) / 2 = 50.
    assert (row["human_pass_at_1"], row["synthetic_pass_at_1"], row["diff"]) == (0, 50, -50)

    unfinished = tmp_path / "unfinished"
    shutil.copytree(camp, unfinished)
    meta = unfinished / "apexv1_070" / "r1" / "meta.json"
    data = json.loads(meta.read_text(encoding="utf-8"))
    data["status"] = "running"
    meta.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=r"r1: run status is 'running', not 'complete'"):
        synthetic_from_campaign(unfinished, tasks)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no run directories"):
        synthetic_from_campaign(empty, tasks)
