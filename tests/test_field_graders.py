"""Deterministic field graders (grading.fields) against hand-computed values.

Includes the paper's worked grading example (appendix J.5, Table 21): without a judge,
exactly 9 of its 14 rows are correct ("Vision Basic" vs "Basic" needs the judge).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import dateparser
import phonenumbers
import pytest

from grading.fields import (
    FieldGrade,
    canonical_address,
    canonical_identifier,
    canonical_phone,
    canonical_text,
    dates_in_text,
    extract_number,
    grade_spec,
    grade_value,
    is_empty,
    parse_spoken_date,
    resolve_date,
    set_precision_recall_f1,
    split_items,
    value_in_text,
)
from runtime.core import values
from runtime.core.spec import FieldSource, FieldSpec, GraderName

# (field, grader, gold, agent wrote, paper score) -- appendix J.5, Table 21, verbatim.
J5_ROWS: list[tuple[str, GraderName, Any, str, int]] = [
    ("employee_id", "exact", "E4471", "E4471", 1),
    ("legal_name", "semantic", "Morgan Reyes", "Morgan Ray", 0),
    ("date_of_birth", "normalized_date", "1988-07-09", "July 9, 1988", 1),
    ("medical_plan", "semantic", "HDHP", "HDHP", 1),
    ("dental_plan", "semantic", "Standard", "Standard", 1),
    ("vision_plan", "semantic", "Vision Basic", "Basic", 1),
    ("dependent_count", "numeric_tolerance", 2, "2", 1),
    ("dependent_names", "semantic", "Jamie Reyes and Casey Reyes", "Jamie Ray", 0),
    ("hsa_contribution", "numeric_tolerance", 1200, "1200", 1),
    ("beneficiary", "semantic", "Jamie Reyes", "Jamie Ray", 0),
    ("beneficiary_pct", "numeric_tolerance", 100, "100", 1),
    ("pcp", "semantic", "Dr. Alvarez", "Dr. Alvarez", 1),
    ("monthly_premium", "numeric_tolerance", 225, "360", 0),
    ("status", "enum", "submitted", "submitted", 1),
]

J5_ARTIFACT: dict[str, Any] = {name: pred for name, _, _, pred, _ in J5_ROWS}


def j5_field(name: str, grader: GraderName, gold: Any) -> FieldSpec:
    options = ["draft", "submitted", "committed"] if grader == "enum" else []
    return FieldSpec(
        name=name,
        label=name.replace("_", " "),
        grader=grader,
        gold=gold,
        options=options,
        source=FieldSource(fact=name),
    )


def ok(grade: FieldGrade) -> bool:
    return grade.correct and grade.score == 1.0 and not grade.escalate


# --------------------------------------------------------------------------- empties

@pytest.mark.parametrize("value", [None, "", "   ", "\n\t", [], (), ["", "  "], {}])
def test_is_empty_true(value: Any) -> None:
    assert is_empty(value)


@pytest.mark.parametrize("value", ["0", 0, 0.0, False, ["a"], "x"])
def test_is_empty_false(value: Any) -> None:
    assert not is_empty(value)


@pytest.mark.parametrize(
    "grader",
    [
        "exact", "casefold_exact", "normalized_date", "normalized_phone", "normalized_address",
        "enum", "numeric_tolerance", "set_f1", "ordered_list", "interval_overlap", "semantic",
    ],
)
@pytest.mark.parametrize("pred", [None, "", "  ", []])
def test_empty_pred_scores_zero_and_never_escalates(grader: GraderName, pred: Any) -> None:
    assert grade_value(grader, "anything", pred) == FieldGrade(0.0, False, False)


def test_unknown_grader_raises() -> None:
    with pytest.raises(ValueError, match="unknown grader"):
        grade_value("fuzzy", "a", "a")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- exact

@pytest.mark.parametrize(
    ("gold", "pred"),
    [
        ("E4471", "E4471"),
        ("E4471", "e 4471"),
        ("E4471", "E-4471"),
        ("E4471", "e.44_71"),
        ("E4471", "E forty-four seventy-one"),
        ("E4471", "E four four seven one"),
        ("E4470", "E four four seven oh"),
        ("E0471", "E zero four seven one"),
        ("E0471", "E oh four seven one"),
        ("CC4419", "cc double four one nine"),
        (4471, "four thousand four hundred seventy-one"),
        (4471, 4471.0),
    ],
)
def test_exact_canonical_match(gold: Any, pred: Any) -> None:
    assert ok(grade_value("exact", gold, pred))


@pytest.mark.parametrize(
    ("gold", "pred"),
    [
        ("E4471", "E4417"),
        ("HVAC-007", "HVAC-7"),  # leading zeros are significant deterministically
        ("JOB-2201", "2201"),  # type prefixes are not dropped deterministically
        ("Morgan Reyes", "Morgan Ray"),
    ],
)
def test_exact_mismatch_is_escalation_eligible(gold: Any, pred: Any) -> None:
    assert grade_value("exact", gold, pred) == FieldGrade(0.0, False, True)


def test_canonical_identifier() -> None:
    assert canonical_identifier("E forty-four seventy-one") == "E4471"
    assert canonical_identifier("inv 007") == "INV007"


# --------------------------------------------------------------------------- casefold

@pytest.mark.parametrize(
    ("gold", "pred"),
    [
        ("Morgan Reyes", "morgan  reyes"),
        ("Dr. Alvarez", "dr alvarez"),
        ("O'Brien", "OBrien"),
        ("VP, Engineering", "vp engineering"),
        ("Straße", "STRASSE"),
    ],
)
def test_casefold_exact_match(gold: str, pred: str) -> None:
    assert ok(grade_value("casefold_exact", gold, pred))


def test_casefold_exact_mismatch_escalates() -> None:
    assert grade_value("casefold_exact", "Morgan Reyes", "Morgan Ray") == FieldGrade(
        0.0, False, True
    )


def test_canonical_text() -> None:
    assert canonical_text("  Dr.  Alvarez!! ") == "dr alvarez"
    assert canonical_text("ready_for_review") == "ready for review"
    assert canonical_text(["a", "b"]) == "a b"


# --------------------------------------------------------------------------- dates

@pytest.mark.parametrize(
    "pred",
    [
        "1988-07-09",
        "July 9, 1988",
        "9 July 1988",
        "07/09/1988",
        "7/9/88",
        "July 9th, 1988",
        "july ninth nineteen eighty-eight",
        "July ninth, nineteen eighty-eight",
        "the ninth of July, nineteen eighty eight",
        "nine July nineteen eighty-eight",
        "born on July 9, 1988",
        "Jul. 9 '88",
    ],
)
def test_normalized_date_match(pred: str) -> None:
    assert ok(grade_value("normalized_date", "1988-07-09", pred))


@pytest.mark.parametrize(
    ("gold", "pred"),
    [
        ("1905-07-12", "July twelfth, nineteen oh five"),
        ("1988-07-12", "July twelve nineteen eighty-eight"),
        ("1990-07-19", "July nineteen nineteen ninety"),
        ("2024-06-02", "June second twenty twenty-four"),
        ("2024-06-02", "June 2, two thousand twenty-four"),
    ],
)
def test_normalized_date_spoken_years(gold: str, pred: str) -> None:
    assert ok(grade_value("normalized_date", gold, pred))


@pytest.mark.parametrize(
    "pred",
    ["July 10, 1988", "09/07/1988", "eight", "may", "1988", "July 1988", "July 9", "soon"],
)
def test_normalized_date_mismatch_is_strict(pred: str) -> None:
    # 09/07/1988 is September 7 (month first); partial dates are not dates.
    assert grade_value("normalized_date", "1988-07-09", pred) == FieldGrade(0.0, False, False)


def test_dateparser_never_sees_a_non_date(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = dateparser.parse

    def spy(text: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(dateparser, "parse", spy)
    values._parse_date_str.cache_clear()  # parsed dates are kept: start from none
    for pred in ["eight", "may", "1988", "twelve hundred", "the usual", "9"]:
        assert not grade_value("normalized_date", "1988-07-09", pred).correct
    assert calls == []
    assert parse_spoken_date("July ninth, nineteen eighty-eight") is not None
    assert calls == ["july 9th 1988"]


def test_normalized_date_bad_gold_raises() -> None:
    with pytest.raises(ValueError, match="not a date"):
        grade_value("normalized_date", "someday", "July 9, 1988")


# --------------------------------------------------------------------------- phones

@pytest.mark.parametrize(
    "pred",
    [
        "(415) 555-0199",
        "415.555.0199",
        "+1 415 555 0199",
        "1-415-555-0199",
        "four one five, five five five, oh one nine nine",
        "four one five five five five zero one nine nine",
        "four one five, double five five, oh one nine nine",
        "four fifteen, five fifty-five, oh one ninety-nine",
        "plus one, four one five, five five five, o one nine nine",
        4155550199,
    ],
)
def test_normalized_phone_match(pred: Any) -> None:
    assert ok(grade_value("normalized_phone", "+14155550199", pred))


@pytest.mark.parametrize(
    "pred",
    [
        "four one five, five five five, oh one nine eight",
        "five five five, oh one nine nine",  # no area code
        "call me at four one five five five five oh one nine nine",  # free text
        "1-800-FLOWERS",
    ],
)
def test_normalized_phone_mismatch_is_strict(pred: str) -> None:
    assert grade_value("normalized_phone", "+14155550199", pred) == FieldGrade(0.0, False, False)


def test_phonenumbers_never_gets_letters(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = phonenumbers.parse

    def spy(number: str, region: str | None = None, *args: Any, **kw: Any) -> Any:
        seen.append(number)
        return real(number, region, *args, **kw)

    monkeypatch.setattr(phonenumbers, "parse", spy)
    values._canonical_phone_str.cache_clear()  # parsed numbers are kept: start from none
    assert canonical_phone("1-800-FLOWERS") is None
    assert canonical_phone("my number is four one five") is None
    assert canonical_phone("four one five, five five five, oh one nine nine") == "+14155550199"
    assert seen == ["4155550199"]


def test_phone_extension_is_compared() -> None:
    gold = "415-555-0199 ext. 12"
    assert ok(grade_value("normalized_phone", gold, "415 555 0199 extension twelve"))
    assert not grade_value("normalized_phone", gold, "415 555 0199").correct


# --------------------------------------------------------------------------- addresses

ADDRESS = "123 Main Street, Apt 4B, Springfield, IL 62701"


@pytest.mark.parametrize(
    "pred",
    [
        "123 Main St., Apt. 4B, Springfield, Illinois 62701",
        "123 main street apartment 4B springfield il 62701",
        "one twenty-three Main Street, apartment 4B, Springfield, Illinois, six two seven oh one",
    ],
)
def test_normalized_address_match(pred: str) -> None:
    assert ok(grade_value("normalized_address", ADDRESS, pred))


@pytest.mark.parametrize(
    "pred",
    [
        "125 Main Street, Apt 4B, Springfield, IL 62701",
        "123 Main Street, Apt 4C, Springfield, IL 62701",
        "123 Main Street, Springfield, IL 62701",
    ],
)
def test_normalized_address_mismatch_is_strict(pred: str) -> None:
    assert grade_value("normalized_address", ADDRESS, pred) == FieldGrade(0.0, False, False)


def test_canonical_address_forms() -> None:
    assert canonical_address(ADDRESS) == ("123 MAIN ST, APT 4B, SPRINGFIELD, IL, 62701", True)
    # scourgify does not support PO boxes: normalized-text fallback.
    assert canonical_address("P.O. Box 12, Springfield, IL 62701") == (
        "po box 12 springfield il 62701",
        False,
    )


def test_po_box_fallback_compares_normalized_text() -> None:
    gold = "PO Box 12, Springfield, IL 62701"
    assert ok(grade_value("normalized_address", gold, "p.o. box twelve, springfield, il 62701"))
    assert not grade_value("normalized_address", gold, "PO Box 13, Springfield, IL 62701").correct


# --------------------------------------------------------------------------- enum

OPTIONS = ["draft", "ready_for_review", "submitted"]


@pytest.mark.parametrize(
    ("gold", "pred"),
    [
        ("submitted", "submitted"),
        ("submitted", "SUBMITTED"),
        ("submitted", " Submitted. "),
        ("ready_for_review", "Ready for review"),
        ("ready_for_review", "ready-for-review"),
        ("ready_for_review", "ReadyForReview"),  # resolves to the option, which is gold
    ],
)
def test_enum_match(gold: str, pred: str) -> None:
    assert ok(grade_value("enum", gold, pred, options=OPTIONS))


@pytest.mark.parametrize(("gold", "pred", "passes"), [
    ("standard class", "Standard", True),
    ("standard class", "the standard", True),
    ("first class", "First", True),
    ("standard class", "class", False),  # in both options
    ("standard class", "First", False),
    ("standard class", "sleeper", False),
    ("standard class", "standard plus", False),
])
def test_enum_value_shortened_to_one_option(gold: str, pred: str, passes: bool) -> None:
    grade = grade_value("enum", gold, pred, options=["standard class", "first class"])
    assert grade.correct is passes


@pytest.mark.parametrize(("pred", "passes"), [
    ("8 AM", True), ("8 a.m.", True), ("08:00", True), ("8:00am", True),
    ("8 PM", False), ("20:00", False), ("8:00", False), ("9 AM", False), ("8:30 AM", False),
])
def test_enum_time_option_written_another_way(pred: str, passes: bool) -> None:
    grade = grade_value("enum", "8:00 AM", pred, options=["8:00 AM", "1:00 PM", "3:30 PM"])
    assert grade.correct is passes


def test_enum_mismatch_escalates() -> None:
    assert grade_value("enum", "submitted", "draft", options=OPTIONS) == FieldGrade(
        0.0, False, True
    )
    assert grade_value("enum", "submitted", "filed", options=OPTIONS).escalate


# --------------------------------------------------------------------------- numbers

@pytest.mark.parametrize(
    ("gold", "pred"),
    [
        (1200, "twelve hundred"),
        (1200, "1200"),
        (1200, "$1,200.00"),
        (1200, "one thousand two hundred dollars"),
        (8, "around eight"),
        (8, "around eight years"),
        (2, 2),
        (2, 2.0),
        (2, ["2"]),
        ("225", "two hundred twenty-five"),
        (100, "100%"),
        (100, "one hundred percent"),
        (3.5, "three and a half"),
        (1_500_000, "one point five million"),
        (12_000, "12k"),
        (-5, "minus five"),
    ],
)
def test_numeric_within_zero_tolerance(gold: Any, pred: Any) -> None:
    assert ok(grade_value("numeric_tolerance", gold, pred))


def test_numeric_tolerance_band() -> None:
    assert ok(grade_value("numeric_tolerance", 100, "ninety-eight", tolerance=2))
    assert ok(grade_value("numeric_tolerance", 0.3, "0.1", tolerance=0.2))  # float slack
    assert grade_value("numeric_tolerance", 100, "ninety-eight", tolerance=1) == FieldGrade(
        0.0, False, False
    )


def test_numeric_out_of_tolerance_is_not_escalation_eligible() -> None:
    assert grade_value("numeric_tolerance", 225, "360") == FieldGrade(0.0, False, False)
    assert grade_value("numeric_tolerance", 225, "three sixty") == FieldGrade(0.0, False, False)
    assert ok(grade_value("numeric_tolerance", 225, "two twenty-five"))


@pytest.mark.parametrize(
    "pred", ["a couple", "not sure", "five to ten", "2 or 3", ["1", "2"], True]
)
def test_numeric_without_single_number_is_escalation_eligible(pred: Any) -> None:
    assert grade_value("numeric_tolerance", 2, pred) == FieldGrade(0.0, False, True)


def test_extract_number() -> None:
    assert extract_number("twelve hundred") == 1200
    assert extract_number("around eight years") == 8
    assert extract_number("$1,200") == 1200
    assert extract_number("nineteen eighty-eight") == 1988  # text2num says "19 88"
    assert extract_number("three sixty") == 360
    assert extract_number("two three") is None
    assert extract_number("E-4471") == 4471
    assert extract_number(float("nan")) is None


def test_numeric_bad_gold_raises() -> None:
    with pytest.raises(ValueError, match="not a single number"):
        grade_value("numeric_tolerance", "a few", "3")


# --------------------------------------------------------------------------- sets

def test_set_f1_hand_computed() -> None:
    # gold {a,b,c}, pred {a,b,d}: P = 2/3, R = 2/3, F1 = 2/3.
    p, r, f1 = set_precision_recall_f1(["a", "b", "c"], ["a", "b", "d"])
    assert (p, r) == pytest.approx((2 / 3, 2 / 3))
    assert f1 == pytest.approx(2 / 3)
    grade = grade_value("set_f1", ["a", "b", "c"], "a, b and d")
    assert grade.score == pytest.approx(2 / 3)
    assert not grade.correct and not grade.escalate
    assert grade_value("set_f1", ["a", "b", "c"], "c, b and a").correct


def test_partial_credit_is_never_correct() -> None:
    """D.4: a field counts as correct only at 1.0. A PPE list missing one of seven items
    scores 12/13 = 0.923 (P = 1, R = 6/7) and stays visible, but is not correct."""
    gold = ["hard hat", "glasses", "gloves", "boots", "vest", "ear plugs", "harness"]
    grade = grade_value("set_f1", gold, gold[:6])
    assert grade.score == pytest.approx(2 * 1 * (6 / 7) / (1 + 6 / 7))
    assert not grade.correct
    interval = grade_value("interval_overlap", ["2024-06-01", "2024-06-10"],
                           "June 1 to June 9, 2024")
    assert interval.score == pytest.approx(9 / 10) and not interval.correct


def test_set_f1_superset_and_disjoint() -> None:
    # pred {a,b,c,d}: P = 3/4, R = 1, F1 = 2*(3/4)*1/(3/4+1) = 6/7.
    assert set_precision_recall_f1(["a", "b", "c"], ["a", "b", "c", "d"])[2] == pytest.approx(
        6 / 7
    )
    assert set_precision_recall_f1(["a"], ["b"]) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    "pred",
    [
        "Casey Reyes and Jamie Reyes",
        "jamie reyes, casey reyes",
        "Jamie Reyes, and Casey Reyes",
        ["CASEY REYES", "Jamie Reyes."],
    ],
)
def test_set_f1_order_and_case_free(pred: Any) -> None:
    assert ok(grade_value("set_f1", ["Jamie Reyes", "Casey Reyes"], pred))


def test_split_items() -> None:
    assert split_items("a, b and c") == ["a", "b", "c"]
    assert split_items("a; b & c") == ["a", "b", "c"]
    assert split_items(["x, y", "z"]) == ["x, y", "z"]  # lists are not split further


# --------------------------------------------------------------------------- ordered lists

def test_ordered_list_hand_computed() -> None:
    gold = ["intake", "triage", "schedule"]
    assert ok(grade_value("ordered_list", gold, "Intake, triage, schedule"))
    # swap of the last two: 2 substitutions over 3 items → 1 - 2/3 = 1/3
    swapped = grade_value("ordered_list", gold, ["intake", "schedule", "triage"])
    assert swapped.score == pytest.approx(1 / 3)
    assert not swapped.correct and not swapped.escalate
    # one item missing: 1 deletion over 3 → 2/3
    assert grade_value("ordered_list", gold, ["intake", "triage"]).score == pytest.approx(2 / 3)
    assert grade_value("ordered_list", gold, ["x", "y", "z"]).score == 0.0


# --------------------------------------------------------------------------- intervals

def test_interval_dates_hand_computed() -> None:
    gold = ["2024-06-01", "2024-06-10"]  # 10 days, both ends included
    # June 6-15: overlap June 6-10 = 5 days, union June 1-15 = 15 days → 1/3.
    grade = grade_value("interval_overlap", gold, "June 6 to June 15")
    assert grade.score == pytest.approx(1 / 3)
    assert not grade.correct and not grade.escalate
    # June 1-5: overlap 5 days, union 10 days → 1/2.
    assert grade_value("interval_overlap", gold, ["2024-06-01", "2024-06-05"]).score == 0.5
    assert grade_value("interval_overlap", gold, "July 1 to July 3").score == 0.0


@pytest.mark.parametrize(
    "pred",
    [
        "June 2 to June 11",
        "from June second to the eleventh",
        "June 2-11",
        "June 2 through June 11, 2024",
        "2024-06-02/2024-06-11",
        ["June 2, 2024", "June 11, 2024"],
    ],
)
def test_interval_dates_spoken(pred: Any) -> None:
    assert ok(grade_value("interval_overlap", ["2024-06-02", "2024-06-11"], pred))


def test_interval_numbers_hand_computed() -> None:
    # [0,10] vs [5,15]: overlap 5, union 15 → 1/3.
    assert grade_value("interval_overlap", [0, 10], "5 to 15").score == pytest.approx(1 / 3)
    assert ok(grade_value("interval_overlap", [5, 10], "between five and ten"))
    assert ok(grade_value("interval_overlap", [5, 10], "5-10"))
    assert grade_value("interval_overlap", [0, 10], [20, 30]).score == 0.0
    assert grade_value("interval_overlap", [0, 10], "sometime") == FieldGrade(0.0, False, False)


# --------------------------------------------------------------------------- semantic

def test_semantic_deterministic_tier() -> None:
    assert ok(grade_value("semantic", "Dr. Alvarez", "dr alvarez"))
    assert grade_value("semantic", "Vision Basic", "Basic") == FieldGrade(0.0, False, True)


# --------------------------------------------------------------------------- FieldSpec

def test_grade_spec_uses_field_settings() -> None:
    numeric = FieldSpec(
        name="n", label="n", grader="numeric_tolerance", gold=100, tolerance=2,
        source=FieldSource(fact="n"),
    )
    assert grade_spec(numeric, "ninety-eight").correct
    sets = FieldSpec(
        name="s", label="s", type="list", grader="set_f1", gold=["a", "b", "c"],
        source=FieldSource(fact="s"),
    )
    assert not grade_spec(sets, "a, b, d").correct
    assert grade_spec(sets, "b, a and c").correct
    enum = FieldSpec(
        name="e", label="e", grader="enum", gold="ready_for_review", options=OPTIONS,
        source=FieldSource(instruction=True),
    )
    assert grade_spec(enum, "ReadyForReview").correct


# --------------------------------------------------------------------------- J.5

def test_j5_worked_example_without_judge() -> None:
    grades = {
        name: grade_spec(j5_field(name, grader, gold), pred)
        for name, grader, gold, pred, _ in J5_ROWS
    }
    correct = {name for name, g in grades.items() if g.correct}
    assert len(correct) == 9
    assert {name for name, *_, score in J5_ROWS if score == 1} - correct == {"vision_plan"}
    escalate = {name for name, g in grades.items() if g.escalate}
    assert escalate == {"legal_name", "vision_plan", "dependent_names", "beneficiary"}
    assert grades["monthly_premium"] == FieldGrade(0.0, False, False)


# --------------------------------------------------------------------------- reference date

@pytest.mark.parametrize(("said", "reference", "expected"), [
    ("June 2nd", dt.date(2027, 5, 14), dt.date(2027, 6, 2)),
    ("January 5th", dt.date(2027, 12, 20), dt.date(2028, 1, 5)),
    ("December 28th", dt.date(2027, 1, 3), dt.date(2026, 12, 28)),
    ("June 2nd, 2025", dt.date(2027, 5, 14), dt.date(2025, 6, 2)),
])
def test_year_less_dates_resolve_to_the_nearest_occurrence(
    said: str, reference: dt.date, expected: dt.date,
) -> None:
    assert resolve_date(said, reference) == expected
    assert grade_value("normalized_date", expected.isoformat(), said,
                       reference=reference).correct


def test_year_less_date_without_reference_is_not_a_date() -> None:
    assert resolve_date("June 2nd") is None
    assert not grade_value("normalized_date", "2027-06-02", "June 2nd").correct


@pytest.mark.parametrize(("grader", "value", "text", "found"), [
    ("exact", "E4471", "So your ID is E, 4, 4, 7, 1?", "match"),
    ("exact", "E4471", "Your ID is E four four one seven, right?", "mismatch"),
    ("exact", "E4471", "Got it, thanks.", "absent"),
    ("numeric_tolerance", 1200, "Twelve hundred a year into the HSA.", "match"),
    ("numeric_tolerance", 1200, "A thousand a year into the HSA.", "mismatch"),
    ("normalized_date", "1988-07-09", "born July ninth, nineteen eighty-eight", "match"),
    ("normalized_date", "1988-07-09", "born July eighth, nineteen eighty-eight", "mismatch"),
    ("normalized_phone", "+14155550142", "four one five, five five five, zero one four two",
     "match"),
    ("semantic", "Jamie Reyes", "the beneficiary is Jamie Rhodes", "mismatch"),
    ("semantic", "Jamie Reyes", "the beneficiary is Jamie Reyes", "match"),
])
def test_value_in_text(grader: str, value: object, text: str, found: str) -> None:
    assert value_in_text(grader, value, text,  # type: ignore[arg-type]
                         reference=dt.date(2027, 5, 14)) == found


MIC_OPTIONS = ["built-in microphone", "USB headset", "Bluetooth headset"]


@pytest.mark.parametrize(("grader", "value", "text", "options", "found"), [
    # round thousands said without them, and the wrong number still heard as wrong
    ("numeric_tolerance", 185000, "Got it, one eighty-five base.", [], "match"),
    ("numeric_tolerance", 185000, "Got it, one eighty base.", [], "mismatch"),
    ("numeric_tolerance", 150000, "budget one fifty K.", [], "match"),
    ("numeric_tolerance", 150000, "budget one forty K.", [], "mismatch"),
    ("numeric_tolerance", 240000000, "Two forty million revenue.", [], "match"),
    ("numeric_tolerance", 48250, "forty-eight two fifty on the odometer", [], "match"),
    ("numeric_tolerance", 48250, "forty-eight five twenty on the odometer", [], "mismatch"),
    ("numeric_tolerance", 40000, "Forty requests per second.", [], "mismatch"),
    # a year said by its last two digits
    ("normalized_date", "1988-07-09", "born July ninth, eighty-eight.", [], "match"),
    ("normalized_date", "1988-07-09", "born July ninth, eighty-nine.", [], "mismatch"),
    # a spoken O is a zero
    ("exact", "HO-552907", "H O five five two nine zero seven, thanks.", [], "match"),
    ("exact", "HO-552907", "H O five five two nine zero one, thanks.", [], "mismatch"),
    # a name with an "s" added is another name; its possessive is the name
    ("semantic", "Elena Park", "And the name is Elena Parks?", [], "mismatch"),
    ("semantic", "Sam Okafor", "Sam Okafor's covering, noted.", [], "match"),
    ("semantic", "pay stub", "bring your pay stubs", [], "match"),
    # a letter said with its spelling word
    ("exact", "F61204", "That's F as in Frank, six one two zero four?", [], "match"),
    ("exact", "F61204", "That's S as in Sam, six one two zero four?", [], "mismatch"),
    # a dash said between the characters of an identifier
    ("exact", "SSO-212", "S, S, O, dash, two one two. Thank you.", [], "match"),
    ("exact", "SSO-212", "S, S, O, dash, two, one, five?", [], "mismatch"),
    ("exact", "WO-55102", "W O dash five five one zero two", [], "match"),
    # an email said aloud, its domain in two words, with pauses and "all one word"
    ("exact", "laura.chen@fenwickfoods.com", "so that's laura dot chen at fenwick foods dot "
     "com", [], "match"),
    ("exact", "laura.chen@fenwickfoods.com", "laura dot chan at fenwickfoods dot com", [],
     "mismatch"),
    ("exact", "laura.chen@fenwickfoods.com", "Laura dot chen, at fenwick foods, all one word, "
     "dot com.", [], "match"),
    ("casefold_exact", "gloria@pineridgedental.com", "It's gloria, at pine ridge dental, dot "
     "com. All one word.", [], "match"),
    # an identifier read back by its number alone (a listener accepts it), but not with
    # another letter in front; identifiers in a list by their numbers
    ("exact", "INV-20419", "Two oh four one nine, got it.", [], "restated"),
    ("exact", "CL-30817", "Three zero eight one seven, got it.", [], "restated"),
    ("exact", "N20417", "M, two, zero, four, one, seven.", [], "mismatch"),
    ("exact", "INV-20419", "two zero four one eight", [], "mismatch"),
    ("set_f1", "LOT-7731, LOT-7732", "both seventy-seven thirty-one and seventy-seven "
     "thirty-two, twenty-eight hundred pieces", [], "match"),
    ("set_f1", "LOT-7731, LOT-7732", "just lot seven seven three one, 2800 pieces", [],
     "mismatch"),
    # a figure in millions with a decimal point
    ("numeric_tolerance", 7400000, "Got it, contents at seven point four million now.", [],
     "match"),
    ("numeric_tolerance", 7400000, "Got it, contents at seven point two million now.", [],
     "mismatch"),
    # a year said in pairs after a month is the year, not its two halves (and a whole date
    # says no number at all)
    ("numeric_tolerance", 26, "It started March third, twenty twenty-six.", [], "absent"),
    ("numeric_tolerance", 26, "Four of them, since March third, twenty twenty-six.", [],
     "mismatch"),
    # the day of a date is no count; a code spelled a character at a time is no number, a
    # number read digit by digit is that number
    ("numeric_tolerance", 11, "Four attended, due October eleventh.", [], "mismatch"),
    ("numeric_tolerance", 4, "Assignment M V 3 0 4 1 8, three people.", [], "mismatch"),
    ("numeric_tolerance", 6482, "So the hour meter reads six four eight two.", [], "match"),
    ("numeric_tolerance", 6482, "So the hour meter reads six four two eight.", [], "mismatch"),
    ("numeric_tolerance", 20, "since June twenty twenty-five", [], "mismatch"),
    ("numeric_tolerance", 26, "twenty-six days since June twenty twenty-five", [], "match"),
    # a time of day is no count: a wrong seat count read back beside the 1:30 PM slot is
    # wrong (it was heard as thirty, apexv1_061); a bare pair may be an amount
    ("numeric_tolerance", 30, "Twenty seats, starting at 1:30 PM.", [], "mismatch"),
    ("numeric_tolerance", 30, "Twenty seats, starting at one thirty p.m.", [], "mismatch"),
    ("numeric_tolerance", 30, "Thirty seats at the 10:00 AM slot.", [], "match"),
    ("numeric_tolerance", 9, "Twelve people, nine o'clock start.", [], "mismatch"),
    ("numeric_tolerance", 2, "Half past two, three rooms.", [], "mismatch"),
    ("numeric_tolerance", 150, "one fifty for the deposit", [], "match"),
    # a number joined to its unit
    ("numeric_tolerance", 3, "on a three-year term", [], "match"),
    ("numeric_tolerance", 25, "twenty-five seats", [], "match"),
    # enum options shortened, in the plural, with an article
    ("enum", "built-in microphone", "a MacBook with the built-in mic", MIC_OPTIONS, "match"),
    ("enum", "built-in microphone", "a MacBook with the USB headset", MIC_OPTIONS, "mismatch"),
    ("enum", "built-in microphone", "a MacBook with the headset", MIC_OPTIONS, "mismatch"),
    ("enum", "built-in microphone", "the whole office is affected", MIC_OPTIONS, "absent"),
    ("enum", "needs sponsorship", "you'll need sponsorship",
     ["authorized without sponsorship", "needs sponsorship"], "match"),
    ("enum", "renew with improvement plan", "renew with an improvement plan then",
     ["renew", "renew with improvement plan", "terminate"], "match"),
    ("enum", "yes", "muster at the north gate", ["yes", "no"], "absent"),
    # an option that is a time of day, said as a time
    ("enum", "2:30 PM", "Wednesday at two thirty with Dr. Osei", ["9:00 AM", "2:30 PM"], "match"),
    ("enum", "2:30 PM", "Tuesday at nine in the morning", ["9:00 AM", "2:30 PM"], "mismatch"),
    ("enum", "2:30 PM", "Tuesday the thirteenth with Dr. Hale", ["9:00 AM", "2:30 PM"], "absent"),
    # list items in the plural
    ("set_f1", "LOT-7731, LOT-7732", "lots 7731 and 7732 off press line three", [], "match"),
    ("set_f1", "LOT-7731, LOT-7732", "lots 7731 and 7733 off press line three", [], "mismatch"),
])
def test_value_in_text_spoken_forms(grader: str, value: object, text: str,
                                    options: list[str], found: str) -> None:
    def said(restatement: bool = False) -> str:
        return value_in_text(grader, value, text, options=options,  # type: ignore[arg-type]
                             reference=dt.date(2026, 6, 1), restatement=restatement)

    if found == "restated":  # said in a form a listener accepts as a read-back only
        assert said(restatement=True) == "match"
        assert said() == "mismatch"
        return
    assert said() == found


@pytest.mark.parametrize(("grader", "value", "text", "plain", "restated"), [
    # a year-less date on the right day restates a date of another year; a wrong day does not
    ("normalized_date", "2024-05-31", "Oh, May thirty-first, not March.", "mismatch", "match"),
    ("normalized_date", "2024-05-31", "Oh, May thirtieth, got it.", "mismatch", "mismatch"),
    ("normalized_date", "2024-05-31", "May thirty-first, twenty twenty-five.", "mismatch",
     "mismatch"),
    # part of a name or free text with nothing in place of the rest
    ("semantic", "Jamie Reyes", "Jamie as beneficiary at a hundred percent", "mismatch",
     "match"),
    ("semantic", "Jamie Reyes", "Jamie Rhodes as beneficiary", "mismatch", "mismatch"),
    ("semantic", "Ray Ortiz", "Ray owns the action item, noted.", "mismatch", "match"),
    ("semantic", "Sam Okafor", "Sam's covering for you, noted.", "mismatch", "match"),
    ("semantic", "Sam Okafor", "Sam Oliver is covering for you.", "mismatch", "mismatch"),
    ("semantic", "Pine Ridge Dental", "Pine Grove Dental, is that right?", "mismatch",
     "mismatch"),
    ("semantic", "cyber insurance renewal", "Got it, the insurance renewal. So when",
     "mismatch", "match"),
    ("semantic", "delegating tasks", "Delegating, got it.", "mismatch", "match"),
    ("semantic", "delegating tasks", "Delegating meetings, got it.", "mismatch", "mismatch"),
])
def test_value_in_text_restatement(grader: str, value: object, text: str, plain: str,
                                   restated: str) -> None:
    """The shortened forms a listener who knows the value accepts count only in a
    restatement (the caller's read-back check), never for provenance."""
    kwargs = {"reference": dt.date(2026, 6, 1)}
    assert value_in_text(grader, value, text, **kwargs) == plain  # type: ignore[arg-type]
    assert value_in_text(grader, value, text, restatement=True,  # type: ignore[arg-type]
                         **kwargs) == restated


@pytest.mark.parametrize(("text", "reference", "expected"), [
    # a weekday and a day of the month: the date near the reference on that weekday
    ("Tuesday the thirteenth at nine, or Wednesday the fourteenth at two thirty",
     dt.date(2027, 4, 6), [dt.date(2027, 4, 13), dt.date(2027, 4, 14)]),
    ("Friday the eleventh instead", dt.date(2027, 5, 14), [dt.date(2027, 6, 11)]),
    # the end of a range said by its day only is in the start's month
    ("June second through the thirteenth", dt.date(2027, 5, 14),
     [dt.date(2027, 6, 2), dt.date(2027, 6, 13)]),
    ("from the twenty-eighth of May to the third", dt.date(2027, 5, 14),
     [dt.date(2027, 5, 28), dt.date(2027, 6, 3)]),
    # a day of the month alone, or a weekday alone, is no date
    ("at two thirty on the fourteenth", dt.date(2027, 4, 6), []),
    ("see you on Tuesday", dt.date(2027, 4, 6), []),
])
def test_dates_said_by_weekday_or_range(text: str, reference: dt.date,
                                        expected: list[dt.date]) -> None:
    assert dates_in_text(text, reference) == expected


def test_every_email_the_callers_say_is_their_email() -> None:
    """Each bundled realization in which a caller says an email address states that caller's
    address (the read-back check and Process Validity's provenance compare with it): said with
    pauses, "all one word", or a word spelled out after it."""
    from runtime.core.spec import default_tasks_dir, load_tasks

    checked = 0
    for task in load_tasks([default_tasks_dir()]):
        emails = [v.value for f in task.user.facts for v in f.versions
                  if isinstance(v.value, str) and "@" in v.value]
        for plan in task.plans:
            for r in plan.realizations:
                if " dot com" not in r.text.casefold():
                    continue
                checked += 1
                assert any(value_in_text("exact", e, r.text) == "match" for e in emails), (
                    task.id, r.id, r.text)
    assert checked >= 8


@pytest.mark.parametrize(("value", "text", "found"), [
    # a time of day said as a listener who knows the time of day hears it
    ("1:50 PM", "So first failure at one fifty.", "match"),
    ("1:50 PM", "first failure at one fifty, and the customer called at three fifteen",
     "match"),
    ("3:15 PM", "first failure at one fifty, and the customer called at three fifty",
     "mismatch"),
    ("2:05 PM", "two oh five pm", "match"),
    ("2:05 PM", "at 2:05 PM", "match"),
    ("2:05 PM", "the first one was five", "absent"),  # no time said
    ("9:00 AM", "the eleventh at nine in the morning", "match"),
    ("1:45 PM", "quarter to two", "match"),
    ("1:30 PM", "half past one", "match"),
    ("1:50 PM", "twelve hundred records", "absent"),
    ("1:58 PM", "one fifty", "mismatch"),
])
def test_times_of_day(value: str, text: str, found: str) -> None:
    assert value_in_text("semantic", value, text, restatement=True) == found


@pytest.mark.parametrize(("text", "found"), [
    ("Zero one eight six, fixed.", "match"),
    ("Got it, 0 1 8 6 at the end.", "match"),
    ("Zero one six eight, fixed.", "mismatch"),  # two digits swapped: the caller corrects
    ("Six one seven, five five five, zero one eight six.", "match"),
])
def test_a_phone_restated_by_its_last_four_digits(text: str, found: str) -> None:
    """The caller hearing a fixed number read back by its last four digits compares them with
    its number's end (grading/fields.py, ``restatement``)."""
    assert value_in_text("normalized_phone", "+16175550186", text, restatement=True) == found
