"""Study A agreement (Table 9): published worked examples, hand-computed cases, the task-level
bootstrap, undefined statistics, calibration rows and bad input, through the API and the
`apex-voice study agreement` command."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from app.cli import main
from study_protocols.agreement import (
    REPORT_CSV_COLUMNS,
    Rating,
    RatingsError,
    UndefinedStatisticError,
    agreement_report,
    fleiss_kappa,
    format_report,
    krippendorff_alpha,
    parse_ratings,
    read_ratings_csv,
    reliability_data,
    report_csv,
    write_ratings_csv,
)

FIXTURES = Path(__file__).parent / "fixtures" / "ratings"
REPO = Path(__file__).resolve().parent.parent
HEADER = "item_id,task_id,annotator_id,fidelity,naturalness,leakage"


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["study", "agreement", *args])


def _json(*args: str) -> dict[str, Any]:
    result = _invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _write(path: Path, ratings: Sequence[Rating]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        write_ratings_csv(ratings, fh)
    return path


# --------------------------------------------------------------------------- Krippendorff

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", p. 8: four coders (rows)
# by twelve units (columns), values 1–5, nan = the coder did not code the unit. Published
# results: nominal 0.743, ordinal 0.815, interval 0.849.
NAN = np.nan
KRIPPENDORFF_2011 = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
])


def test_krippendorff_2011_through_the_cli() -> None:
    report = _json("--ratings", str(FIXTURES / "krippendorff_2011.csv"))
    fid = report["dimensions"]["fidelity"]
    assert round(fid["alpha_nominal"], 3) == 0.743
    assert round(fid["alpha_ordinal"], 3) == 0.815
    assert round(fid["alpha_interval"], 3) == 0.849
    assert fid["n"] == 41  # 48 coder-unit cells, 7 missing
    assert (report["n_items"], report["n_annotators"], report["n_tasks"]) == (12, 4, 4)
    # The fixture leaves naturalness and leakage empty: undefined, not zero.
    assert report["dimensions"]["naturalness"]["alpha_ordinal"] is None
    assert report["undefined"]["naturalness.mean"] == "no naturalness ratings"


def test_krippendorff_2011_nominal_and_interval_and_orientation() -> None:
    ratings = read_ratings_csv(FIXTURES / "krippendorff_2011.csv")
    annotators, items, data = reliability_data(ratings, "fidelity")
    assert annotators == ["A", "B", "C", "D"] and items[0] == "u01" and items[-1] == "u12"
    # coders × units, exactly the published table
    np.testing.assert_array_equal(data, KRIPPENDORFF_2011)
    assert round(krippendorff_alpha(data, "nominal"), 3) == 0.743
    assert round(krippendorff_alpha(data, "ordinal"), 3) == 0.815
    assert round(krippendorff_alpha(data, "interval"), 3) == 0.849
    assert round(krippendorff_alpha(data, "ordinal", value_domain=[1, 2, 3, 4, 5]), 3) == 0.815
    # Units × coders (the transposed table) is silently a different number: orientation matters.
    assert abs(krippendorff_alpha(data.T, "ordinal") - 0.815) > 0.5


# --------------------------------------------------------------------------- hand-computed

# tests/fixtures/ratings/hand_missing.csv, annotators A, B, C (- = missing cell, blank = no row):
#
#   item task  fidelity A B C   leakage A B C
#   u1   tA             1 1 2           0 0 0
#   u2   tA             2 2 -           0 0 1
#   u3   tA             3 - 3           1 1 1
#   u4   tA             3 1 -           0 0 0
#   u5   tB             2 2 2           1 1 0
#   u6   tB             1   1           1   0
#   u7   tB             - 5             0 0
#
# Fidelity. Pairable values: u1 (m=3), u2..u4 and u6 (m=2), u5 (m=3); u7 has one value (B=5),
# which is not pairable and must not count. Coincidences o_ck = Σ_u pairs(c,k) / (m_u − 1):
#   u1 {1,1,2}: o11 += 2/2, o12 += 2/2, o21 += 2/2     u2 {2,2}: o22 += 2
#   u3 {3,3}:   o33 += 2                               u4 {3,1}: o13 += 1, o31 += 1
#   u5 {2,2,2}: o22 += 6/2                             u6 {1,1}: o11 += 2
#   o = [[3, 1, 1], [1, 5, 0], [1, 0, 2]],  n_1 = 5, n_2 = 6, n_3 = 3, n = 14.
# Nominal: D_o = 4/14; D_e = (14² − 25 − 36 − 9) / (14·13) = 126/182; alpha = 1 − 52/126 = 37/63.
# Interval (δ² = (c − k)²): D_o = (1 + 1 + 4 + 4)/14 = 10/14;
#   D_e = (2·30·1 + 2·18·1 + 2·15·4)/182 = 216/182; alpha = 1 − 1820/3024 = 43/108.
# Ordinal (δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)²): δ²_12 = 5.5² = 30.25,
#   δ²_23 = 4.5² = 20.25, δ²_13 = (14 − 4)² = 100;
#   D_o = (2·30.25 + 2·100)/14 = 260.5/14; D_e = (2·30·30.25 + 2·18·20.25 + 2·15·100)/182
#   = 5544/182; alpha = 1 − (260.5·182)/(14·5544) = 1 − 47411/77616 = 30205/77616.
# Leakage, nominal: every item has ≥ 2 judgments; o00 = 3+1+3+2 = 9, o01 = o10 = 1+1+1 = 3,
#   o11 = 3+1 = 4; n_0 = 12, n_1 = 7, n = 19; D_o = 6/19, D_e = 2·12·7/(19·18) = 168/342;
#   alpha = 1 − (6·342)/(19·168) = 5/14.
# Fleiss on leakage: judgments per item 3,3,3,3,3,2,2 → modal 3, items u1..u5 used, u6, u7
#   dropped. Counts [no, yes]: [3,0], [2,1], [0,3], [3,0], [1,2]; p_yes = 6/15, P_e = 0.52;
#   P_i = (Σ n_ij² − 3)/6 = 1, 1/3, 1, 1, 1/3 → P̄ = 11/15; kappa = (11/15 − 0.52)/0.48 = 4/9.
# Leakage rate 7/19 (7 flags in 19 judgments); mean fidelity 31/15.


def test_hand_computed_alpha_with_missing_ratings() -> None:
    ratings = read_ratings_csv(FIXTURES / "hand_missing.csv")
    _, _, fid = reliability_data(ratings, "fidelity")
    assert krippendorff_alpha(fid, "nominal") == pytest.approx(37 / 63, abs=1e-12)
    assert krippendorff_alpha(fid, "interval") == pytest.approx(43 / 108, abs=1e-12)
    assert krippendorff_alpha(fid, "ordinal") == pytest.approx(30205 / 77616, abs=1e-12)
    _, _, leak = reliability_data(ratings, "leakage")
    assert krippendorff_alpha(leak, "nominal") == pytest.approx(5 / 14, abs=1e-12)


def test_hand_computed_report_through_the_cli() -> None:
    report = _json("--ratings", str(FIXTURES / "hand_missing.csv"))
    fid, leak = report["dimensions"]["fidelity"], report["dimensions"]["leakage"]
    assert fid["mean"] == pytest.approx(31 / 15) and fid["n"] == 15
    assert fid["alpha_ordinal"] == pytest.approx(30205 / 77616, abs=1e-12)
    assert fid["alpha_interval"] == pytest.approx(43 / 108, abs=1e-12)
    assert fid["alpha_nominal"] == pytest.approx(37 / 63, abs=1e-12)
    assert leak["rate"] == pytest.approx(7 / 19) and (leak["n"], leak["flagged"]) == (19, 7)
    assert leak["alpha_nominal"] == pytest.approx(5 / 14, abs=1e-12)
    assert leak["fleiss_kappa"] == pytest.approx(4 / 9, abs=1e-12)
    assert (leak["fleiss_items_used"], leak["fleiss_items_dropped"]) == (5, 2)
    assert leak["fleiss_raters_per_item"] == 3
    assert leak["items_flagged_by_majority_ids"] == ["u3", "u5"]
    assert report["dimensions"]["naturalness"]["mean"] is None
    assert set(report["undefined"]) == {
        "naturalness.mean", "naturalness.ci", "naturalness.alpha_ordinal",
        "naturalness.alpha_interval", "naturalness.alpha_nominal", "naturalness.fleiss_kappa",
    }
    # A leakage split weighs 4; ties break on item id.
    top = [(d["item_id"], d["score"]) for d in report["most_disagreed"]]
    assert top == [("u2", 4), ("u5", 4), ("u6", 4), ("u4", 2), ("u1", 1)]
    assert report["most_disagreed"][0]["ratings"]["C"] == {
        "fidelity": None, "naturalness": None, "leakage": 1,
    }


# --------------------------------------------------------------------------- Fleiss

# The widely reproduced worked example (10 subjects, 14 raters, 5 categories): kappa 0.210.
FLEISS_EXAMPLE = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]

# Fleiss (1971)'s own data: 30 patients, 6 psychiatrists, 5 diagnoses (one row per patient,
# one diagnosis per psychiatrist); R irr::kappam.fleiss gives 0.4302445.
FLEISS_1971_DIAGNOSES = [
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
]


def test_fleiss_worked_examples() -> None:
    assert round(fleiss_kappa(FLEISS_EXAMPLE), 4) == 0.2099
    counts = [np.bincount(row, minlength=6)[1:] for row in FLEISS_1971_DIAGNOSES]
    assert fleiss_kappa(counts) == pytest.approx(0.4302445, abs=5e-8)


def test_pooled_ordinal_alpha_by_hand(tmp_path: Path) -> None:
    # Two annotators, two items, values 1 and 2 only (then the ordinal distance is the same for
    # every disagreeing pair, so ordinal alpha equals nominal alpha). Units (item, scale):
    # fidelity (1,1), (2,2); naturalness (1,2), (2,2). Coincidences o11 = 2, o12 = o21 = 1,
    # o22 = 4; n1 = 3, n2 = 5, n = 8. alpha = 1 − (n − 1)·(o12 + o21) / (2·n1·n2)
    # = 1 − 7·2/30 = 8/15. Alone: fidelity 1 (no disagreement), naturalness
    # 1 − 3·2/(2·1·3) = 0.
    def r(item: str, a: str, f: int, n: int) -> Rating:
        return Rating(item_id=item, task_id=f"t{item}", annotator_id=a, fidelity=f,
                      naturalness=n, leakage=0)

    rows = [r("1", "A", 1, 1), r("1", "B", 1, 2), r("2", "A", 2, 2), r("2", "B", 2, 2)]
    report = _json("--ratings", str(_write(tmp_path / "pooled.csv", rows)))
    assert report["pooled_scales"]["alpha_ordinal"] == pytest.approx(8 / 15, abs=1e-12)
    assert report["pooled_scales"]["units"] == 4
    assert report["dimensions"]["fidelity"]["alpha_ordinal"] == pytest.approx(1.0)
    assert report["dimensions"]["naturalness"]["alpha_ordinal"] == pytest.approx(0.0, abs=1e-12)


def test_fleiss_worked_example_through_the_cli(tmp_path: Path) -> None:
    # The 10 × 14 example as ratings: subject i → item, its counts per category 1–5 spread over
    # annotators R01…R14 as fidelity ratings (Fleiss treats the five points as categories).
    rows = []
    for i, counts in enumerate(FLEISS_EXAMPLE):
        values = [category + 1 for category, n in enumerate(counts) for _ in range(n)]
        for a, value in enumerate(values):
            rows.append(Rating(item_id=f"s{i:02d}", task_id=f"t{i % 5}",
                               annotator_id=f"R{a + 1:02d}", fidelity=value,
                               naturalness=None, leakage=None))
    report = _json("--ratings", str(_write(tmp_path / "fleiss.csv", rows)))
    assert round(report["dimensions"]["fidelity"]["fleiss_kappa"], 3) == 0.210


def test_fleiss_undefined_and_malformed() -> None:
    with pytest.raises(UndefinedStatisticError, match="chance agreement is 1"):
        fleiss_kappa([[3, 0], [3, 0]])
    with pytest.raises(UndefinedStatisticError, match="at least two raters"):
        fleiss_kappa([[1, 0], [0, 1]])
    with pytest.raises(UndefinedStatisticError, match="no subjects"):
        fleiss_kappa(np.zeros((0, 2)))
    with pytest.raises(ValueError, match="same number of ratings"):
        fleiss_kappa([[3, 0], [1, 1]])
    with pytest.raises(ValueError, match="whole numbers"):
        fleiss_kappa([[1.5, 1.5]])
    # perfect agreement across two categories is 1; systematic disagreement is negative
    assert fleiss_kappa([[2, 0], [0, 2]]) == pytest.approx(1.0)
    assert fleiss_kappa([[1, 1], [1, 1]]) == pytest.approx(-1.0)


# --------------------------------------------------------------------------- degenerate


def test_all_identical_ratings_are_undefined_not_a_crash() -> None:
    result = _invoke("--ratings", str(FIXTURES / "all_identical.csv"))
    assert result.exit_code == 0, result.output
    assert "alpha ordinal undefined" in result.stdout
    assert "Fleiss kappa undefined" in result.stdout
    assert "leakage.fleiss_kappa: undefined (every judgment is the same category" in result.stdout
    report = _json("--ratings", str(FIXTURES / "all_identical.csv"))
    dims, why = report["dimensions"], report["undefined"]
    assert dims["fidelity"]["mean"] == 5.0 and dims["naturalness"]["mean"] == 4.0
    assert dims["fidelity"]["alpha_ordinal"] is None and dims["leakage"]["fleiss_kappa"] is None
    assert dims["leakage"]["alpha_nominal"] is None and dims["leakage"]["rate"] == 0.0
    assert why["leakage.fleiss_kappa"] == (
        "every judgment is the same category, chance agreement is 1"
    )
    assert "expected disagreement D_e is 0" in why["fidelity.alpha_ordinal"]
    assert "expected disagreement D_e is 0" in why["leakage.alpha_nominal"]


def test_single_rater_per_item_and_no_ratings_at_all() -> None:
    lone = [Rating(f"i{k}", f"t{k}", "A", 3 + k % 2, 4, k % 2) for k in range(4)]
    report = agreement_report(lone)
    assert report["dimensions"]["fidelity"]["alpha_ordinal"] is None
    assert "no item has ratings from two or more annotators" in (
        report["undefined"]["fidelity.alpha_ordinal"]
    )
    assert "at least two raters" in report["undefined"]["leakage.fleiss_kappa"]
    # Every row a calibration row: nothing is left for the study figures, and nothing crashes.
    only_calibration = [Rating("c1", "t1", a, 5, 5, 0, calibration=True) for a in "AB"]
    empty = agreement_report(only_calibration)
    assert empty["n_ratings"] == 0 and empty["dimensions"]["leakage"]["rate"] is None
    assert empty["undefined"]["fidelity.mean"] == "no fidelity ratings"
    assert "undefined" in format_report(empty)


# --------------------------------------------------------------------------- bootstrap


def _clustered() -> list[Rating]:
    """Four tasks of three items rated by three annotators; tasks t0 and t1 get 5 everywhere,
    t2 and t3 get 1 everywhere. Ratings within a task are perfectly correlated."""
    out = []
    for t in range(4):
        value = 5 if t < 2 else 1
        for i in range(3):
            for a in "ABC":
                out.append(Rating(f"t{t}_i{i}", f"t{t}", a, value, value, int(value == 1)))
    return out


def test_bootstrap_resamples_whole_tasks(tmp_path: Path) -> None:
    path = _write(tmp_path / "clustered.csv", _clustered())
    report = _json("--ratings", str(path), "--seed", "7")
    fid = report["dimensions"]["fidelity"]
    assert fid["mean"] == 3.0
    # Resampling 4 tasks: the resampled mean is 1 + 4·(number of "5" tasks drawn)/4, i.e.
    # 1, 2, 3, 4 or 5 with probabilities 1/16, 4/16, 6/16, 4/16, 1/16. Since 1/16 > 2.5%, the
    # exact percentile interval is [1, 5].
    assert fid["ci"] == [1.0, 5.0]
    assert report["dimensions"]["leakage"]["ci"] == [0.0, 1.0]
    # A rating-level bootstrap treats the 36 ratings as independent: far too narrow.
    values = np.array([r.fidelity for r in _clustered()], dtype=float)
    rng = np.random.default_rng(7)
    means = values[rng.integers(0, values.size, size=(2000, values.size))].mean(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    assert hi - lo < 1.6 < (fid["ci"][1] - fid["ci"][0]) / 2


def _varied() -> list[Rating]:
    rng = np.random.default_rng(123)
    out = []
    for t in range(10):
        for i in range(3):
            for a in "ABC":
                out.append(Rating(f"t{t}_i{i}", f"t{t}", a, int(rng.integers(1, 6)),
                                  int(rng.integers(1, 6)), int(rng.integers(0, 2))))
    return out


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    ratings = _varied()
    a = agreement_report(ratings, seed=3)
    assert a == agreement_report(ratings, seed=3)
    b = agreement_report(ratings, seed=4)
    assert a["dimensions"]["fidelity"]["ci"] != b["dimensions"]["fidelity"]["ci"]
    assert a["dimensions"]["fidelity"]["mean"] == b["dimensions"]["fidelity"]["mean"]
    assert a["method"]["seed"] == 3 and a["method"]["n_resamples"] == 2000
    lo, hi = a["dimensions"]["fidelity"]["ci"]
    assert lo < a["dimensions"]["fidelity"]["mean"] < hi


def test_single_task_interval_is_undefined() -> None:
    ratings = [r for r in _varied() if r.task_id == "t0"]
    report = agreement_report(ratings)
    for dim in ("fidelity", "naturalness", "leakage"):
        assert report["dimensions"][dim]["ci"] is None
        assert "at least two tasks" in report["undefined"][f"{dim}.ci"]
    assert report["dimensions"]["fidelity"]["mean"] is not None


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("bad_unknown_column.csv", ["row 1 (header)", "unknown column(s) 'comment'"]),
        ("bad_missing_column.csv", ["row 1 (header)", "missing column(s) 'naturalness'"]),
        ("bad_rating_6.csv", ["row 3: naturalness '6' is outside 1–5"]),
        ("bad_leakage_2.csv", ["row 4: leakage '2' is neither 0 nor 1"]),
        ("bad_non_integer.csv", ["row 3: fidelity '4.5' is not a whole number"]),
        ("bad_duplicate.csv", ["rows 2 and 5 both rate item 'u1' by annotator 'A'"]),
        ("bad_two_tasks.csv", ["row 3: item 'u1' has task_id 't2' but row 2 gives it"]),
        ("empty.csv", ["the file is empty"]),
    ],
)
def test_bad_input_names_file_and_row(fixture: str, expected: list[str]) -> None:
    path = FIXTURES / fixture
    result = _invoke("--ratings", str(path))
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # a clean exit, not a crash
    assert result.stdout == ""
    assert f"error: {path}: " in result.output
    for text in expected:
        assert text in result.output
    assert "Traceback" not in result.output


def test_bad_input_in_a_real_process_has_no_traceback() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "from app.cli import main; main()", "study", "agreement",
         "--ratings", str(FIXTURES / "bad_rating_6.csv")],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
    )
    assert proc.returncode == 2
    assert "row 3: naturalness '6'" in proc.stderr and "Traceback" not in proc.stderr


def test_every_problem_is_listed_and_parse_ratings_names_the_source() -> None:
    text = (
        f"{HEADER}\n"
        "u1,t1,A,0,5,1\n"     # row 2: fidelity 0
        "u1,t1,B,four,5,\n"   # row 3: not a number
        ",t1,C,3,3,0\n"       # row 4: empty item_id
        "u2,t1,A,3,3,yes\n"   # row 5: leakage yes
        "u2,t1,B,3,3\n"       # row 6: short row
        "u2,t1,C,3,3,0,x\n"   # row 7: extra cell
    )
    with pytest.raises(RatingsError) as err:
        parse_ratings(csv.DictReader(io.StringIO(text)), source="upload.csv")
    problems = err.value.problems
    assert [p.split(":")[1].strip() for p in problems] == [
        "row 2", "row 3", "row 4", "row 5", "row 6", "row 7",
    ]
    assert all(p.startswith("upload.csv: ") for p in problems)
    assert "'four' is not a whole number" in problems[1]
    assert "leakage 'yes' is not a whole number; write 0 (no leak) or 1 (leak)" in problems[3]
    assert "fewer cells" in problems[4] and "more cells" in problems[5]


def test_reader_counts_lines_and_accepts_bom_whitespace_and_zero_fractions(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.csv"
    path.write_bytes(
        (
            "\ufeff fidelity , leakage,item_id,task_id,annotator_id,naturalness\n"
            "4.0,1,u1,t1,A,5\n"
            "\n"              # a blank line is skipped but still counted
            ",,,,,\n"         # an all-empty row is skipped too
            "7,0,u1,t1,B,5\n"
        ).encode("utf-8")
    )
    with pytest.raises(RatingsError, match=r"r\.csv: row 5: fidelity '7' is outside 1–5"):
        read_ratings_csv(path)
    path.write_text(f"{HEADER}\nu1,t1,A,4.0,, 1 \n", encoding="utf-8")
    assert read_ratings_csv(path) == [Rating("u1", "t1", "A", 4, None, 1)]
    path.write_text(f"{HEADER}\n", encoding="utf-8")
    with pytest.raises(RatingsError, match="no rating rows"):
        read_ratings_csv(path)
    path.write_text(f"{HEADER},calibration\nc1,t1,A,4,4,0,1\nc1,t1,B,4,4,0,0\n",
                    encoding="utf-8")
    with pytest.raises(RatingsError, match="row 3: item 'c1' has calibration 0 but row 2"):
        read_ratings_csv(path)


def test_write_then_read_round_trips(tmp_path: Path) -> None:
    ratings = [
        Rating("u1", "t1", "A", 5, None, 0),
        Rating("u1", "t1", "B", None, 3, None),
        Rating("c,1", "t2", "A", 2, 2, 1, calibration=True),  # a comma in an id is quoted
    ]
    path = _write(tmp_path / "out.csv", ratings)
    assert read_ratings_csv(path) == ratings
    path = _write(tmp_path / "plain.csv", ratings[:2])
    assert path.read_text(encoding="utf-8").splitlines()[0] == HEADER
    assert read_ratings_csv(path) == ratings[:2]


# --------------------------------------------------------------------------- calibration


def test_calibration_rows_never_change_agreement_figures(tmp_path: Path) -> None:
    study = read_ratings_csv(FIXTURES / "hand_missing.csv")
    calibration = [
        Rating("cal1", "tA", "A", 1, 1, 1, calibration=True),
        Rating("cal1", "tA", "B", 5, 5, 0, calibration=True),
        Rating("cal1", "tA", "C", 3, 2, 1, calibration=True),
        Rating("cal2", "tC", "A", 5, 4, 0, calibration=True),
        Rating("cal2", "tC", "D", 1, None, 1, calibration=True),
    ]
    plain = agreement_report(study)
    mixed = agreement_report(calibration[:2] + study + calibration[2:])
    for key in ("n_items", "n_tasks", "n_annotators", "n_ratings", "dimensions",
                "most_disagreed", "undefined"):
        assert mixed[key] == plain[key], key
    assert plain["calibration"] is None and mixed["n_calibration_ratings"] == 5
    cal = mixed["calibration"]
    assert (cal["n_items"], cal["n_ratings"]) == (2, 5)
    assert cal["annotators"]["A"] == {
        "n_items": 2, "fidelity_mean": 3.0, "naturalness_mean": 2.5,
        "leakage_flags": 1, "leakage_judgments": 2,
    }
    assert cal["annotators"]["D"]["naturalness_mean"] is None
    # and the same through the CLI, with a calibration column in the file
    path = _write(tmp_path / "with_calibration.csv", calibration + study)
    result = _invoke("--ratings", str(path))
    assert result.exit_code == 0, result.output
    assert "5 calibration ratings reported apart" in result.stdout
    assert "Calibration items (2), not in any figure above:" in result.stdout
    cli = _json("--ratings", str(path))
    assert cli["dimensions"] == _json("--ratings", str(FIXTURES / "hand_missing.csv"))[
        "dimensions"
    ]


# --------------------------------------------------------------------------- archetypes, CSV


def test_per_archetype_from_the_bundled_tasks(tmp_path: Path) -> None:
    ratings = [
        Rating("a1", "apexv1_001", "A", 5, 4, 0), Rating("a1", "apexv1_001", "B", 4, 4, 1),
        Rating("b1", "apexv1_011", "A", 2, 3, 0), Rating("b1", "apexv1_011", "B", 2, 5, 0),
    ]
    report = _json("--ratings", str(_write(tmp_path / "r.csv", ratings)))
    assert report["per_archetype"] == {
        "form-fill": {"n_tasks": 1, "n_items": 1, "n_ratings": 2, "fidelity_mean": 4.5,
                      "naturalness_mean": 4.0, "leakage_rate": 0.5},
        "interview": {"n_tasks": 1, "n_items": 1, "n_ratings": 2, "fidelity_mean": 2.0,
                      "naturalness_mean": 4.0, "leakage_rate": 0.0},
    }
    text = _invoke("--ratings", str(tmp_path / "r.csv")).stdout
    assert "Per archetype:" in text and "form-fill" in text
    # Task ids that are not bundled: the table is skipped silently.
    assert _json("--ratings", str(FIXTURES / "hand_missing.csv"))["per_archetype"] is None
    # An explicit --tasks folder: unknown task ids are grouped and named on stderr.
    result = _invoke("--ratings", str(FIXTURES / "hand_missing.csv"),
                     "--tasks", str(REPO / "tests" / "fixtures" / "tasks"), "--json")
    assert result.exit_code == 0, result.output
    assert "2 rated task(s) not found" in result.stderr
    assert list(json.loads(result.stdout)["per_archetype"]) == ["(unmapped)"]
    result = _invoke("--ratings", str(FIXTURES / "hand_missing.csv"),
                     "--tasks", str(tmp_path / "nowhere"))
    assert result.exit_code == 2 and "no such folder" in result.output


def test_csv_out_writes_the_table_9_summary(tmp_path: Path) -> None:
    out = tmp_path / "table9.csv"
    result = _invoke("--ratings", str(FIXTURES / "hand_missing.csv"), "--csv-out", str(out))
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert tuple(rows[0]) == REPORT_CSV_COLUMNS
    by_dim = {r["dimension"]: r for r in rows}
    assert list(by_dim) == ["fidelity", "naturalness", "leakage"]
    assert float(by_dim["fidelity"]["alpha_ordinal"]) == pytest.approx(30205 / 77616)
    assert float(by_dim["leakage"]["fleiss_kappa"]) == pytest.approx(4 / 9)
    assert by_dim["leakage"]["fleiss_items_dropped"] == "2"
    assert by_dim["naturalness"]["mean"] == "" and by_dim["naturalness"]["n"] == "0"
    assert "mean: no naturalness ratings" in by_dim["naturalness"]["undefined"]
    assert by_dim["fidelity"]["undefined"] == "" and by_dim["fidelity"]["rate"] == ""
    # report_csv is the same through the API
    buf = io.StringIO()
    report_csv(agreement_report(read_ratings_csv(FIXTURES / "hand_missing.csv")), buf)
    assert buf.getvalue() == out.read_text(encoding="utf-8")


def test_report_is_json_ready_and_names_its_methods() -> None:
    report = agreement_report(_varied(), archetypes={"t0": "form-fill"}, n_resamples=200)
    assert json.loads(json.dumps(report)) == report
    method = report["method"]
    assert "Krippendorff's alpha (ordinal)" in method["agreement"]
    assert "Fleiss' kappa" in method["agreement"] and "task-level bootstrap" in method["ci"]
    assert method["krippendorff"].startswith("krippendorff 0.9.0")
    assert set(report["per_archetype"]) == {"form-fill", "(unmapped)"}
    assert report["per_archetype"]["(unmapped)"]["n_tasks"] == 9
    assert len(report["most_disagreed"]) == 10
    with pytest.raises(ValueError, match="n_resamples"):
        agreement_report(_varied(), n_resamples=0)


def test_the_web_apps_seconds_column_is_accepted_and_ignored(tmp_path: Path) -> None:
    """The web app's ratings.csv ends with ``seconds`` (time per item, issue #17)."""
    path = tmp_path / "ratings.csv"
    path.write_text("item_id,task_id,annotator_id,fidelity,naturalness,leakage,calibration,"
                    "seconds\nt1:p:r,t1,A1,4,5,0,0,12.5\nt1:p:r,t1,A2,3,4,1,0,\n")
    ratings = read_ratings_csv(path)
    assert [(r.annotator_id, r.fidelity, r.leakage) for r in ratings] == [("A1", 4, 0),
                                                                         ("A2", 3, 1)]
