"""Deterministic field graders (paper appendix C.3, D.4, D.5).

Every grader is a pure function of the gold reference and the value an agent wrote into an
artifact. Values were dictated aloud, so both sides are canonicalized before comparison:
number words become digits (``text2num``), dates go through ``dateparser``, phones through
``phonenumbers`` (E.164), addresses through ``usaddress-scourgify`` (USPS form).

Each grader returns a :class:`FieldGrade`: a score in [0, 1], whether the field counts as
correct, and whether a failure may be escalated to the semantic judge (D.5: only exact,
casefold_exact, enum, semantic, and numeric_tolerance when no number could be read).

Decisions worth knowing:

* ``exact`` compares upper-cased alphanumerics after number words become digits, so
  ``"e 4471"``, ``"E-4471"`` and ``"E forty-four seventy-one"`` all equal ``"E4471"``.
  Leading zeros stay significant (``"HVAC-007" != "HVAC-7"``) and type prefixes are not
  dropped (``"2201" != "JOB-2201"``); both are left to the judge, whose prompt accepts them.
* A gold value the grader cannot read (a malformed date, phone, number or interval in the
  task file) raises :class:`ValueError`: that is an authoring bug, not an agent miss.
* A field counts as correct only at score 1.0 (D.4): ``set_f1`` and ``interval_overlap``
  keep their partial score for the field table, but a list missing one item is not correct.
* A spoken date without a year ("June 2nd") is read against the task's reference date: the
  occurrence of that day nearest to it (``resolve_date``). Without a reference date a value
  must state its year.
* Floating-point comparisons (tolerance, score 1.0) allow an absolute slack of ``1e-9``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rapidfuzz.distance import Levenshtein

from runtime.core.spec import FieldSpec, GraderName
from runtime.core.values import (
    _EPS,
    _address_fallback,
    _compact,
    _interval_parts,
    _is_date_like,
    _option_words_said,
    _spoken_address_text,
    argument_matches,
    canonical_address,
    canonical_identifier,
    canonical_phone,
    canonical_text,
    clock_minutes,
    dates_in_text,
    extract_number,
    is_empty,
    numbers_in_text,
    parse_spoken_date,
    resolve_date,
    split_items,
    value_in_text,
)

__all__ = [
    "ESCALATABLE_GRADERS",
    "FieldGrade",
    "GraderName",
    "argument_matches",
    "canonical_address",
    "canonical_identifier",
    "canonical_phone",
    "canonical_text",
    "dates_in_text",
    "extract_number",
    "grade_spec",
    "grade_value",
    "is_empty",
    "numbers_in_text",
    "parse_spoken_date",
    "resolve_date",
    "set_precision_recall_f1",
    "split_items",
    "value_in_text",
]


ESCALATABLE_GRADERS: frozenset[str] = frozenset(
    {"exact", "casefold_exact", "enum", "semantic", "numeric_tolerance"}
)
"""Graders whose deterministic failures may go to the judge (D.5). numeric_tolerance only
when no single number could be read from the value."""


@dataclass(frozen=True, slots=True)
class FieldGrade:
    """Outcome of one deterministic grader.

    ``escalate`` is True when the deterministic tier failed and the grader/value is
    judge-eligible per D.5; it is always False for a correct or empty value.
    """

    score: float
    correct: bool
    escalate: bool

    def __post_init__(self) -> None:
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"score {self.score} outside [0, 1]")


_FAIL = FieldGrade(0.0, False, False)
_PASS = FieldGrade(1.0, True, False)


# --------------------------------------------------------------------------- text helpers

def _grade_exact(gold: Any, pred: Any) -> FieldGrade:
    ok = canonical_identifier(gold) == canonical_identifier(pred)
    return _PASS if ok else FieldGrade(0.0, False, True)


def _grade_casefold(gold: Any, pred: Any) -> FieldGrade:
    ok = canonical_text(gold) == canonical_text(pred)
    return _PASS if ok else FieldGrade(0.0, False, True)


def _grade_enum(gold: Any, pred: Any, options: Sequence[str]) -> FieldGrade:
    """Case-folded match with gold; else the value names (ignoring case, separators and
    spaces) exactly one option, and that option is the gold one. A value that is no option
    names the one option at its time of day ("8 AM", "8 a.m." or "08:00" for "8:00 AM") or
    the one option whose words it shortens ("Standard" or "the standard" for "standard class"
    beside "first class"; "class" names neither)."""
    if canonical_text(gold) == canonical_text(pred):
        return _PASS
    matches = [opt for opt in options if _compact(opt) == _compact(pred)]
    at = clock_minutes(pred)
    if not matches and at is not None:  # "8 AM" or "08:00" for "8:00 AM"
        matches = [opt for opt in options if clock_minutes(opt) == at]
    if not matches and isinstance(pred, str) and clock_minutes(gold) is None:
        matches = [opt for opt in options if _option_words_said(pred, opt)]
    if len(matches) == 1 and _compact(matches[0]) == _compact(gold):
        return _PASS
    return FieldGrade(0.0, False, True)


# --------------------------------------------------------------------------- numbers

def _gold_number(gold: Any) -> float:
    number = extract_number(gold)
    if number is None:
        raise ValueError(f"gold value {gold!r} is not a single number")
    return number


def _grade_numeric(gold: Any, pred: Any, tolerance: float) -> FieldGrade:
    target = _gold_number(gold)
    number = extract_number(pred)
    if number is None:
        return FieldGrade(0.0, False, True)  # no single number: the judge may read it
    return _PASS if abs(number - target) <= tolerance + _EPS else _FAIL


# --------------------------------------------------------------------------- dates

def _grade_date(gold: Any, pred: Any, reference: dt.date | None) -> FieldGrade:
    target = parse_spoken_date(gold)
    if target is None:
        raise ValueError(f"gold value {gold!r} is not a date (expected ISO YYYY-MM-DD)")
    return _PASS if resolve_date(pred, reference) == target else _FAIL


# --------------------------------------------------------------------------- phones

def _grade_phone(gold: Any, pred: Any) -> FieldGrade:
    target = canonical_phone(gold)
    if target is None:
        raise ValueError(f"gold value {gold!r} is not a phone number")
    return _PASS if canonical_phone(pred) == target else _FAIL


# --------------------------------------------------------------------------- addresses

def _grade_address(gold: Any, pred: Any) -> FieldGrade:
    gold_form, gold_ok = canonical_address(gold)
    pred_form, pred_ok = canonical_address(pred)
    if not (gold_ok and pred_ok):
        # A USPS form and a fallback text never compare equal, so when either side could
        # not be parsed, compare the fallback (normalized text) of both sides instead.
        gold_form = _address_fallback(_spoken_address_text(gold))
        pred_form = _address_fallback(_spoken_address_text(pred))
    return _PASS if gold_form == pred_form else _FAIL


# --------------------------------------------------------------------------- sets, lists

def set_precision_recall_f1(gold: Any, pred: Any) -> tuple[float, float, float]:
    """Precision, recall and F1 of the case-folded item sets of ``pred`` against ``gold``."""
    gold_set = {canonical_text(item) for item in split_items(gold)} - {""}
    pred_set = {canonical_text(item) for item in split_items(pred)} - {""}
    hits = len(gold_set & pred_set)
    if hits == 0:
        return 0.0, 0.0, 0.0
    precision = hits / len(pred_set)
    recall = hits / len(gold_set)
    return precision, recall, 2 * precision * recall / (precision + recall)


def _grade_set(gold: Any, pred: Any) -> FieldGrade:
    f1 = set_precision_recall_f1(gold, pred)[2]
    return FieldGrade(f1, f1 >= 1.0 - _EPS, False)


def _grade_ordered(gold: Any, pred: Any) -> FieldGrade:
    """Score 1 - normalized Levenshtein distance over item sequences; correct only when
    the items and their order match exactly."""
    gold_items = [canonical_text(item) for item in split_items(gold)]
    pred_items = [canonical_text(item) for item in split_items(pred)]
    if gold_items == pred_items:
        return _PASS
    score = Levenshtein.normalized_similarity(gold_items, pred_items)
    return FieldGrade(min(max(score, 0.0), 1.0), False, False)


# --------------------------------------------------------------------------- intervals

def _pred_dates(
    parts: list[Any], base_year: int, reference: dt.date | None
) -> tuple[dt.date, dt.date] | None:
    """Both ends as dates. A missing year comes from the other end, else from the reference
    date (the nearest occurrence), else from the gold start; a bare day on one end ("June 2
    to 11") takes the other end's month."""
    full = [parse_spoken_date(p) for p in parts]
    if full[0] is not None and full[1] is not None:
        return full[0], full[1]
    years = [d.year for d in full if d is not None]
    if not years and reference is not None:
        start = resolve_date(parts[0], reference)
        years = [start.year] if start is not None else []
    year = years[0] if years else base_year
    ends = [
        d if d is not None else parse_spoken_date(p, require_year=False, base_year=year)
        for d, p in zip(full, parts, strict=True)
    ]
    for i in (0, 1):
        if ends[i] is None and ends[1 - i] is not None:
            day = extract_number(parts[i]) if isinstance(parts[i], str) else None
            other = ends[1 - i]
            assert other is not None
            if day is not None and day.is_integer():
                try:
                    ends[i] = other.replace(day=int(day))
                except ValueError:
                    return None
    start, end = ends
    return (start, end) if start is not None and end is not None else None


def _iou(gold: tuple[float, float], pred: tuple[float, float], inclusive: float) -> float:
    g0, g1 = sorted(gold)
    p0, p1 = sorted(pred)
    overlap = max(0.0, min(g1, p1) - max(g0, p0) + inclusive)
    union = max(g1, p1) - min(g0, p0) + inclusive
    if union <= 0:  # two identical points on a continuous scale
        return 1.0 if (g0, g1) == (p0, p1) else 0.0
    return overlap / union


def _grade_interval(gold: Any, pred: Any, reference: dt.date | None) -> FieldGrade:
    """IoU of gold [start, end] and the predicted interval, correct only at 1.0. Date
    intervals count whole days, both ends included (June 1-10 is 10 days); numeric intervals
    are continuous."""
    gold_parts = _interval_parts(gold)
    if gold_parts is None:
        raise ValueError(f"gold value {gold!r} is not a [start, end] interval")
    pred_parts = _interval_parts(pred)
    if pred_parts is None:
        return _FAIL
    if all(_is_date_like(p) for p in gold_parts):
        g0, g1 = (parse_spoken_date(p) for p in gold_parts)
        if g0 is None or g1 is None:
            raise ValueError(f"gold value {gold!r} holds an invalid date")
        ends = _pred_dates(pred_parts, min(g0, g1).year, reference)
        if ends is None:
            return _FAIL
        score = _iou(
            (g0.toordinal(), g1.toordinal()),
            (ends[0].toordinal(), ends[1].toordinal()),
            inclusive=1.0,
        )
    else:
        n0, n1 = (_gold_number(p) for p in gold_parts)
        p0, p1 = (extract_number(p) for p in pred_parts)
        if p0 is None or p1 is None:
            return _FAIL
        score = _iou((n0, n1), (p0, p1), inclusive=0.0)
    return FieldGrade(score, score >= 1.0 - _EPS, False)


# --------------------------------------------------------------------------- semantic

def _grade_semantic(gold: Any, pred: Any) -> FieldGrade:
    """Deterministic tier only: case-folded, punctuation/whitespace-normalized equality."""
    ok = canonical_text(gold) == canonical_text(pred)
    return _PASS if ok else FieldGrade(0.0, False, True)


# --------------------------------------------------------------------------- dispatch

def grade_value(
    grader: GraderName,
    gold: Any,
    pred: Any,
    *,
    tolerance: float = 0.0,
    options: Sequence[str] = (),
    reference: dt.date | None = None,
) -> FieldGrade:
    """Grade ``pred`` against ``gold`` with the named deterministic grader. ``reference``
    is the task's reference date (year-less spoken dates resolve against it).

    An empty ``pred`` scores 0 and is never escalated. Raises ValueError for an unknown
    grader or a gold value the grader cannot read.
    """
    if is_empty(pred):
        return _FAIL
    graders: dict[str, Callable[[], FieldGrade]] = {
        "exact": lambda: _grade_exact(gold, pred),
        "casefold_exact": lambda: _grade_casefold(gold, pred),
        "normalized_date": lambda: _grade_date(gold, pred, reference),
        "normalized_phone": lambda: _grade_phone(gold, pred),
        "normalized_address": lambda: _grade_address(gold, pred),
        "enum": lambda: _grade_enum(gold, pred, options),
        "numeric_tolerance": lambda: _grade_numeric(gold, pred, tolerance),
        "set_f1": lambda: _grade_set(gold, pred),
        "ordered_list": lambda: _grade_ordered(gold, pred),
        "interval_overlap": lambda: _grade_interval(gold, pred, reference),
        "semantic": lambda: _grade_semantic(gold, pred),
    }
    run = graders.get(grader)
    if run is None:
        raise ValueError(f"unknown grader {grader!r}")
    return run()


def grade_spec(field: FieldSpec, pred: Any, reference: dt.date | None = None) -> FieldGrade:
    """:func:`grade_value` with the field's grader, gold, tolerance and options."""
    return grade_value(
        field.grader,
        field.gold,
        pred,
        tolerance=field.tolerance,
        options=field.options,
        reference=reference,
    )


# --------------------------------------------------------------------------- values in text
