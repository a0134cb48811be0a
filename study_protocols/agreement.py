"""Study A agreement statistics: the numbers of the paper's Table 9 (appendix F.2).

Annotators rate frozen user utterances ("items") for semantic fidelity (1–5), naturalness (1–5)
and leakage (0/1). This module reads those ratings from the Study A ratings CSV (DESIGN §4) and
computes, per dimension, the mean (or leakage rate) with a task-level bootstrap interval and the
agreement across annotators. Everything here is a pure function of the ratings; only
:func:`read_ratings_csv` touches a file. ``docs/study_a_agreement.md`` is the user guide.

Statistics
----------
* **Mean / rate.** The mean of every non-missing rating (for leakage: flagged judgments over all
  judgments). Written as a ratio of per-task sums, ``Σ_t sum_t / Σ_t count_t``.
* **95% CI: task-level bootstrap.** Tasks are drawn with replacement; every item of a drawn task
  and every annotator's rating of those items come along together (appendix F.2: "keeping
  utterances and annotator judgments originating from the same task grouped"). The ratio of sums
  is recomputed on each resample and the percentile interval taken. This is
  :func:`grading.metrics.task_bootstrap_ci`, the same resampler the campaign metrics use, driven by
  ``numpy.random.default_rng(seed)``. With fewer than two tasks there is nothing to resample and
  the interval is undefined.
* **Krippendorff's alpha** from the ``krippendorff`` package (pinned 0.9.0): ordinal level on the
  1–5 scales (interval alongside), nominal level on leakage. Its input is coders × units
  (annotators × items) with ``nan`` for a missing rating; :func:`reliability_data` builds exactly
  that orientation. Only items rated by at least two annotators are pairable.
* **Fleiss' kappa** (Fleiss 1971) on leakage, computed here with numpy from a subjects ×
  categories count matrix (:func:`fleiss_kappa`). It needs the same number of raters for every
  subject, so only items judged by the modal number of annotators enter; the others are counted
  as dropped.

Undefined statistics
--------------------
A statistic that does not exist for the data (alpha when every pairable rating is the same value,
so the expected disagreement is 0; kappa when every judgment falls in one category, so chance
agreement is 1; a CI from one task; a mean of no ratings) is reported as ``None`` with an entry in
the report's ``undefined`` mapping saying why. No number is ever invented for it.

Calibration rows (optional ``calibration`` column = 1) are summarized apart, per annotator, and
never enter any agreement figure, mean or interval.
"""

from __future__ import annotations

import csv
import math
import re
import textwrap
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, TextIO

import krippendorff
import numpy as np
import numpy.typing as npt

from grading.metrics import task_bootstrap_ci
from runtime.core import csv_safe

__all__ = [
    "INFORMATIONAL_COLUMNS",
    "OPTIONAL_COLUMNS",
    "RATING_COLUMNS",
    "Rating",
    "RatingsError",
    "UndefinedStatisticError",
    "agreement_report",
    "fleiss_kappa",
    "format_report",
    "krippendorff_alpha",
    "parse_ratings",
    "read_ratings_csv",
    "reliability_data",
    "report_csv",
    "write_ratings_csv",
]

#: The columns every ratings CSV has (DESIGN §4), in the order :func:`write_ratings_csv` writes.
RATING_COLUMNS: tuple[str, ...] = (
    "item_id", "task_id", "annotator_id", "fidelity", "naturalness", "leakage",
)
#: Columns a ratings CSV may have in addition.
OPTIONAL_COLUMNS: tuple[str, ...] = ("calibration",)
#: Columns a ratings CSV may have that no statistic uses: ``seconds`` (the web app's time per
#: item, from first opening the item to completing its ratings) is accepted and ignored.
INFORMATIONAL_COLUMNS: tuple[str, ...] = ("seconds",)

Dimension = Literal["fidelity", "naturalness", "leakage"]
AlphaLevel = Literal["nominal", "ordinal", "interval"]

SCALE: tuple[int, ...] = (1, 2, 3, 4, 5)
LEAKAGE_VALUES: tuple[int, ...] = (0, 1)
CONFIDENCE = 0.95
#: In ``most_disagreed``, a leakage split weighs as much as a full-scale (1 vs 5) disagreement.
LEAKAGE_SPLIT_WEIGHT = 4

_FloatArray = npt.NDArray[np.float64]
_MAX_PROBLEMS_SHOWN = 25
# A whole number, optionally written with a zero fraction ("4.0", as pandas writes an integer
# column that has gaps).
_INTEGER = re.compile(r"^([+-]?\d+)(?:\.0*)?$")


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Rating:
    """One annotator's judgment of one frozen utterance (one row of the ratings CSV).

    ``None`` is a missing rating (an empty cell). Calibration rows are kept apart from every
    agreement figure.
    """

    item_id: str
    task_id: str
    annotator_id: str
    fidelity: int | None
    naturalness: int | None
    leakage: int | None
    calibration: bool = False

    def value(self, dimension: Dimension) -> int | None:
        """The rating on one dimension."""
        if dimension == "fidelity":
            return self.fidelity
        if dimension == "naturalness":
            return self.naturalness
        return self.leakage


class RatingsError(ValueError):
    """A ratings CSV (or rows) that cannot be used. ``problems`` holds one line per defect, each
    naming the file, the row (1-based line number, header = row 1), the column and value, and
    what to do."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        shown = self.problems[:_MAX_PROBLEMS_SHOWN]
        more = len(self.problems) - len(shown)
        text = "\n".join(shown) + (f"\n… and {more} more problem(s)" if more > 0 else "")
        super().__init__(text)


class UndefinedStatisticError(ValueError):
    """A statistic that does not exist for the given data; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --------------------------------------------------------------------------- reading


_EXPECTED = (
    "the ratings CSV has the columns item_id, task_id, annotator_id, fidelity, naturalness, "
    "leakage (any order), optionally calibration (and seconds, which is ignored)"
)


def _check_columns(columns: Sequence[str], source: str) -> None:
    problems: list[str] = []
    seen = Counter(columns)
    doubled = sorted(c for c, k in seen.items() if k > 1)
    if doubled:
        problems.append(
            f"{source}: row 1 (header): column(s) {', '.join(map(repr, doubled))} appear more "
            "than once; keep one of each"
        )
    known = RATING_COLUMNS + OPTIONAL_COLUMNS + INFORMATIONAL_COLUMNS
    unknown = [c for c in dict.fromkeys(columns) if c not in known]
    if unknown:
        problems.append(
            f"{source}: row 1 (header): unknown column(s) {', '.join(map(repr, unknown))}; "
            f"{_EXPECTED}: rename or remove them"
        )
    missing = [c for c in RATING_COLUMNS if c not in seen]
    if missing:
        problems.append(
            f"{source}: row 1 (header): missing column(s) {', '.join(map(repr, missing))}; "
            f"{_EXPECTED}: add them (an empty cell is a missing rating)"
        )
    if problems:
        raise RatingsError(problems)


def _parse_int(text: str) -> int | None:
    m = _INTEGER.match(text)
    return int(m.group(1)) if m else None


def _scale_value(
    raw: str, column: str, row: int, source: str, problems: list[str]
) -> int | None:
    if raw == "":
        return None
    value = _parse_int(raw)
    if value is None:
        problems.append(
            f"{source}: row {row}: {column} {raw!r} is not a whole number; write 1–5, "
            "or leave the cell empty for a missing rating"
        )
    elif value not in SCALE:
        problems.append(
            f"{source}: row {row}: {column} {raw!r} is outside 1–5; write a whole number "
            "from 1 to 5, or leave the cell empty for a missing rating"
        )
    else:
        return value
    return None


def _flag_value(
    raw: str, column: str, row: int, source: str, problems: list[str], *, empty_means: str
) -> int | None:
    if raw == "":
        return None
    value = _parse_int(raw)
    if value is None or value not in LEAKAGE_VALUES:
        what = "is not a whole number" if value is None else "is neither 0 nor 1"
        meaning = "0 (no leak) or 1 (leak)" if column == "leakage" else "0 (no) or 1 (yes)"
        problems.append(
            f"{source}: row {row}: {column} {raw!r} {what}; write {meaning}, "
            f"or leave the cell empty {empty_means}"
        )
        return None
    return value


def _parse_numbered(
    numbered: Sequence[tuple[int, Mapping[str | None, Any]]], source: str
) -> list[Rating]:
    """Ratings from ``(row number, {column: cell})`` pairs whose columns were checked."""
    problems: list[str] = []
    ratings: list[Rating] = []
    first_row: dict[tuple[str, str], int] = {}
    task_of: dict[str, tuple[str, int]] = {}
    calibration_of: dict[str, tuple[bool, int]] = {}
    for row, cells in numbered:
        extra = cells.get(None)
        if extra and any(str(x).strip() for x in extra):
            problems.append(
                f"{source}: row {row}: more cells than the header has columns; "
                "remove the extra cells or add their column to the header"
            )
            continue
        values: dict[str, str] = {}
        short = False
        absent = [c for c in RATING_COLUMNS if c not in cells]
        if absent:  # possible only for hand-made rows given to parse_ratings
            problems.append(
                f"{source}: row {row}: no {', '.join(absent)} column(s); every row needs "
                f"the same columns: {_EXPECTED}"
            )
            continue
        for column in RATING_COLUMNS + OPTIONAL_COLUMNS:
            if column not in cells:
                continue  # the optional calibration column
            cell = cells[column]
            if cell is None:
                short = True
                break
            values[column] = str(cell).strip()
        if short:
            problems.append(
                f"{source}: row {row}: fewer cells than the header has columns; "
                "write an empty cell (two commas) for a missing rating"
            )
            continue
        ids_ok = True
        for column in ("item_id", "task_id", "annotator_id"):
            if values[column] == "":
                problems.append(
                    f"{source}: row {row}: {column} is empty; every row needs an item_id, "
                    "a task_id and an annotator_id"
                )
                ids_ok = False
        n_before = len(problems)
        fidelity = _scale_value(values["fidelity"], "fidelity", row, source, problems)
        naturalness = _scale_value(values["naturalness"], "naturalness", row, source, problems)
        leakage = _flag_value(
            values["leakage"], "leakage", row, source, problems,
            empty_means="for a missing judgment",
        )
        calibration = _flag_value(
            values.get("calibration", ""), "calibration", row, source, problems,
            empty_means="for a study item",
        )
        if not ids_ok or len(problems) > n_before:
            continue
        item, task, annotator = values["item_id"], values["task_id"], values["annotator_id"]
        is_calibration = calibration == 1
        key = (item, annotator)
        if key in first_row:
            problems.append(
                f"{source}: rows {first_row[key]} and {row} both rate item {item!r} by "
                f"annotator {annotator!r}; keep one of them"
            )
            continue
        first_row[key] = row
        if item in task_of and task_of[item][0] != task:
            problems.append(
                f"{source}: row {row}: item {item!r} has task_id {task!r} but row "
                f"{task_of[item][1]} gives it task_id {task_of[item][0]!r}; an item belongs to "
                "exactly one task: correct one of the two rows"
            )
            continue
        task_of.setdefault(item, (task, row))
        if item in calibration_of and calibration_of[item][0] != is_calibration:
            problems.append(
                f"{source}: row {row}: item {item!r} has calibration "
                f"{int(is_calibration)} but row {calibration_of[item][1]} has "
                f"{int(calibration_of[item][0])}; an item is a calibration item for every "
                "annotator or for none"
            )
            continue
        calibration_of.setdefault(item, (is_calibration, row))
        ratings.append(
            Rating(item, task, annotator, fidelity, naturalness, leakage, is_calibration)
        )
    if problems:
        raise RatingsError(problems)
    if not ratings:
        raise RatingsError([
            f"{source}: no rating rows after the header; add one row per annotator and item"
        ])
    return ratings


def _strip_keys(row: Mapping[Any, Any]) -> dict[str | None, Any]:
    # DictReader rows may hold a None key (cells beyond the header); keys are str otherwise.
    return {(k.strip() if isinstance(k, str) else k): v for k, v in row.items()}


def parse_ratings(rows: Iterable[Mapping[str, str]], *, source: str) -> list[Rating]:
    """Ratings from rows as :class:`csv.DictReader` yields them.

    Row ``i`` (0-based) is reported as line ``i + 2`` of ``source`` (the header is line 1), which
    is exact for a file without blank or multi-line records; :func:`read_ratings_csv` reports
    the true line numbers. Raises :class:`RatingsError` listing every problem.
    """
    numbered: list[tuple[int, Mapping[str | None, Any]]] = [
        (i, _strip_keys(row)) for i, row in enumerate(rows, start=2)
    ]
    if not numbered:
        raise RatingsError([
            f"{source}: no rating rows; add one row per annotator and item"
        ])
    _check_columns([k for k in numbered[0][1] if k is not None], source)
    return _parse_numbered(numbered, source)


def read_ratings_csv(path: Path) -> list[Rating]:
    """Read a Study A ratings CSV (UTF-8, a byte-order mark is allowed).

    Rows whose cells are all empty are skipped. Raises :class:`RatingsError` naming the file, the
    row (its line number, header = 1), the column and the value of every problem.
    """
    source = str(path)
    numbered: list[tuple[int, Mapping[str | None, Any]]] = []
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            header: list[str] | None = None
            for raw in reader:
                cells = [csv_safe.unquote_cell(c) for c in raw]  # as exported by us
                if not any(c.strip() for c in cells):
                    continue
                if header is None:
                    header = [c.strip() for c in cells]
                    _check_columns(header, source)
                    continue
                row: dict[str | None, Any] = dict(zip(header, cells, strict=False))
                if len(cells) < len(header):
                    row.update(dict.fromkeys(header[len(cells):]))
                elif len(cells) > len(header):
                    row[None] = cells[len(header):]
                numbered.append((reader.line_num, row))
    except FileNotFoundError:
        raise RatingsError([
            f"{source}: file not found; give the path of the ratings CSV"
        ]) from None
    except IsADirectoryError:
        raise RatingsError([f"{source}: is a folder; give the path of the ratings CSV"]) from None
    except UnicodeDecodeError as exc:
        raise RatingsError([
            f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start}); save the file as "
            "UTF-8 CSV"
        ]) from None
    except csv.Error as exc:
        raise RatingsError([f"{source}: not valid CSV: {exc}"]) from None
    if header is None:
        raise RatingsError([
            f"{source}: the file is empty; {_EXPECTED}, one row per annotator and item"
        ])
    return _parse_numbered(numbered, source)


def write_ratings_csv(ratings: Iterable[Rating], fh: TextIO) -> None:
    """Write ratings as a ratings CSV that :func:`read_ratings_csv` reads back unchanged.

    The ``calibration`` column is written only when some rating is a calibration rating.
    """
    rows = list(ratings)
    with_calibration = any(r.calibration for r in rows)
    writer = csv_safe.writer(fh, lineterminator="\n")
    writer.writerow(RATING_COLUMNS + (OPTIONAL_COLUMNS if with_calibration else ()))

    def cell(v: int | None) -> str:
        return "" if v is None else str(v)

    for r in rows:
        line = [r.item_id, r.task_id, r.annotator_id,
                cell(r.fidelity), cell(r.naturalness), cell(r.leakage)]
        if with_calibration:
            line.append("1" if r.calibration else "0")
        writer.writerow(line)


# --------------------------------------------------------------------------- statistics


def reliability_data(
    ratings: Sequence[Rating], dimension: Dimension
) -> tuple[list[str], list[str], _FloatArray]:
    """The coders × units matrix Krippendorff's alpha expects.

    Returns ``(annotator_ids, item_ids, data)`` with ``data[a, i]`` annotator ``a``'s rating of
    item ``i`` on ``dimension`` and ``nan`` where it is missing. Rows and columns are sorted by id.
    """
    annotators = sorted({r.annotator_id for r in ratings})
    items = sorted({r.item_id for r in ratings})
    row_of = {a: k for k, a in enumerate(annotators)}
    col_of = {i: k for k, i in enumerate(items)}
    data = np.full((len(annotators), len(items)), np.nan, dtype=np.float64)
    for r in ratings:
        v = r.value(dimension)
        if v is not None:
            data[row_of[r.annotator_id], col_of[r.item_id]] = float(v)
    return annotators, items, data


def krippendorff_alpha(
    data: npt.ArrayLike,
    level: AlphaLevel,
    *,
    value_domain: Sequence[int] | None = None,
) -> float:
    """Krippendorff's alpha of coders × units ``data`` (``nan`` = missing) at ``level``.

    Uses the ``krippendorff`` package. Raises :class:`UndefinedStatisticError` when alpha does not
    exist: no unit has two or more values (nothing is pairable), or every pairable value is the
    same (the expected disagreement D_e is 0, so alpha is 0/0).
    """
    matrix = np.asarray(data, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"reliability data must be coders × units (2-D), got shape {matrix.shape}")
    present = ~np.isnan(matrix)
    pairable_units = present.sum(axis=0) >= 2
    if not bool(pairable_units.any()):
        raise UndefinedStatisticError(
            "no item has ratings from two or more annotators, so no value is pairable"
        )
    pairable = matrix[:, pairable_units]
    distinct = np.unique(pairable[~np.isnan(pairable)])
    if distinct.size < 2:
        raise UndefinedStatisticError(
            f"every pairable rating is {distinct[0]:g}: the expected disagreement D_e is 0, so "
            "alpha is 0/0"
        )
    try:
        value = float(krippendorff.alpha(
            reliability_data=matrix,
            value_domain=None if value_domain is None else list(value_domain),
            level_of_measurement=level,
        ))
    except ValueError as exc:
        raise UndefinedStatisticError(f"krippendorff: {exc}") from None
    if not math.isfinite(value):
        raise UndefinedStatisticError("alpha is not a finite number for these ratings")
    return value


def fleiss_kappa(counts: npt.ArrayLike) -> float:
    """Fleiss' (1971) kappa of a subjects × categories matrix of rating counts.

    ``counts[i, j]`` is the number of raters who put subject ``i`` in category ``j``; every row
    must have the same total ``n`` (raters per subject). With ``p_j`` the share of all ratings in
    category ``j``, ``P_i = (Σ_j n_ij² − n) / (n (n − 1))``, ``P̄`` their mean and
    ``P_e = Σ_j p_j²``, kappa is ``(P̄ − P_e) / (1 − P_e)``.

    Raises :class:`ValueError` for a malformed matrix and :class:`UndefinedStatisticError` when
    kappa does not exist (no subjects, fewer than two raters per subject, or every rating in one
    category so that ``P_e = 1``).
    """
    raw = np.asarray(counts, dtype=np.float64)
    if raw.ndim != 2 or raw.shape[1] < 1:
        raise ValueError(f"counts must be a subjects × categories matrix, got shape {raw.shape}")
    if bool(np.any(raw < 0)) or not bool(np.all(raw == np.round(raw))):
        raise ValueError("counts must be non-negative whole numbers")
    table = raw.astype(np.int64)
    n_subjects = int(table.shape[0])
    if n_subjects == 0:
        raise UndefinedStatisticError("no subjects")
    per_subject = table.sum(axis=1)
    if bool(np.any(per_subject != per_subject[0])):
        sums = sorted({int(x) for x in per_subject})
        raise ValueError(
            f"every subject needs the same number of ratings for Fleiss' kappa; row totals are "
            f"{sums}"
        )
    n = int(per_subject[0])
    if n < 2:
        raise UndefinedStatisticError(
            f"each item has {n} judgment(s); Fleiss' kappa needs at least two raters per item"
        )
    totals = table.sum(axis=0)
    if int(np.count_nonzero(totals)) < 2:
        raise UndefinedStatisticError(
            "every judgment is the same category, chance agreement is 1"
        )
    p = totals / float(n_subjects * n)
    p_i = ((table.astype(np.float64) ** 2).sum(axis=1) - n) / float(n * (n - 1))
    p_bar = float(p_i.mean())
    p_e = float((p**2).sum())
    return (p_bar - p_e) / (1.0 - p_e)


# --------------------------------------------------------------------------- report


def _mean(values: Sequence[int]) -> float | None:
    return sum(values) / len(values) if values else None


def _task_ci(
    ratings: Sequence[Rating], dimension: Dimension, *, seed: int, n_resamples: int
) -> tuple[list[float] | None, str | None]:
    """Percentile CI of the pooled mean (rate) with tasks resampled as clusters."""
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for r in ratings:
        v = r.value(dimension)
        if v is not None:
            sums[r.task_id] += v
            counts[r.task_id] += 1
    tasks = sorted(counts)
    if len(tasks) < 2:
        have = "no task has" if not tasks else f"only one task ({tasks[0]}) has"
        return None, (
            f"a task-level bootstrap needs ratings from at least two tasks; {have} {dimension} "
            "ratings"
        )
    _, (lo, hi) = task_bootstrap_ci(
        [sums[t] for t in tasks],
        [float(counts[t]) for t in tasks],
        n_resamples=n_resamples,
        seed=seed,
        confidence=CONFIDENCE,
    )
    return [lo, hi], None


def _alpha(
    ratings: Sequence[Rating],
    dimension: Dimension,
    level: AlphaLevel,
    key: str,
    undefined: dict[str, str],
) -> float | None:
    _, _, data = reliability_data(ratings, dimension)
    domain = LEAKAGE_VALUES if dimension == "leakage" else SCALE
    try:
        return krippendorff_alpha(data, level, value_domain=domain)
    except UndefinedStatisticError as exc:
        undefined[key] = exc.reason
        return None


def _pooled_scales(ratings: Sequence[Rating], undefined: dict[str, str]) -> dict[str, Any]:
    """Ordinal alpha over both 1–5 scales at once, each (item, scale) a unit: the single
    "alpha on the ordinal ratings" figure of the paper's Table 9."""
    _, items, fid = reliability_data(ratings, "fidelity")
    _, _, nat = reliability_data(ratings, "naturalness")
    data = np.hstack([fid, nat])
    alpha: float | None
    try:
        alpha = krippendorff_alpha(data, "ordinal", value_domain=SCALE)
    except UndefinedStatisticError as exc:
        undefined["pooled_scales.alpha_ordinal"] = exc.reason
        alpha = None
    return {"alpha_ordinal": alpha, "units": 2 * len(items)}


def _scale_dimension(
    ratings: Sequence[Rating],
    dimension: Literal["fidelity", "naturalness"],
    *,
    seed: int,
    n_resamples: int,
    undefined: dict[str, str],
) -> dict[str, Any]:
    values = [v for r in ratings if (v := r.value(dimension)) is not None]
    mean = _mean(values)
    if mean is None:
        undefined[f"{dimension}.mean"] = f"no {dimension} ratings"
    ci, why = _task_ci(ratings, dimension, seed=seed, n_resamples=n_resamples)
    if why is not None:
        undefined[f"{dimension}.ci"] = why
    return {
        "mean": mean,
        "ci": ci,
        "n": len(values),
        "alpha_ordinal": _alpha(ratings, dimension, "ordinal",
                                f"{dimension}.alpha_ordinal", undefined),
        "alpha_interval": _alpha(ratings, dimension, "interval",
                                 f"{dimension}.alpha_interval", undefined),
        "alpha_nominal": _alpha(ratings, dimension, "nominal",
                                f"{dimension}.alpha_nominal", undefined),
        "fleiss_kappa": _fleiss(ratings, dimension, 5, undefined)[1],
    }


def _fleiss(
    ratings: Sequence[Rating], dimension: Dimension, n_categories: int,
    undefined: dict[str, str],
) -> tuple[dict[str, list[int]], float | None, int | None, list[str]]:
    """Fleiss' kappa of ``dimension`` (categories 0/1 for leakage, 1–5 for the scales, taken
    as nominal): per-item category counts, kappa (None when undefined, with the reason in
    ``undefined``), the raters per item used and the items used (those judged by the modal
    number of raters: Fleiss needs the same number for every item)."""
    offset = 0 if dimension == "leakage" else 1
    per_item: dict[str, list[int]] = {r.item_id: [0] * n_categories for r in ratings}
    for r in ratings:
        value = r.value(dimension)
        if value is not None:
            per_item[r.item_id][value - offset] += 1
    judgments = {item: sum(c) for item, c in per_item.items()}
    rated_counts = Counter(n for n in judgments.values() if n > 0)
    kappa: float | None = None
    raters: int | None = None
    used: list[str] = []
    key = f"{dimension}.fleiss_kappa"
    if rated_counts:
        top = max(rated_counts.values())
        raters = max(n for n, k in rated_counts.items() if k == top)  # ties: keep more raters
        used = sorted(i for i, n in judgments.items() if n == raters)
        try:
            kappa = fleiss_kappa([per_item[i] for i in used])
        except UndefinedStatisticError as exc:
            undefined[key] = exc.reason
    else:
        undefined[key] = f"no {dimension} {'judgments' if offset == 0 else 'ratings'}"
    return per_item, kappa, raters, used


def _leakage_dimension(
    ratings: Sequence[Rating], *, seed: int, n_resamples: int, undefined: dict[str, str]
) -> dict[str, Any]:
    judged = [r for r in ratings if r.leakage is not None]
    flagged = sum(1 for r in judged if r.leakage == 1)
    rate = flagged / len(judged) if judged else None
    if rate is None:
        undefined["leakage.rate"] = "no leakage judgments"
    ci, why = _task_ci(ratings, "leakage", seed=seed, n_resamples=n_resamples)
    if why is not None:
        undefined["leakage.ci"] = why

    per_item, kappa, raters, used = _fleiss(ratings, "leakage", 2, undefined)
    majority = sorted(i for i, (no, yes) in per_item.items() if yes > no)
    return {
        "rate": rate,
        "ci": ci,
        "n": len(judged),
        "flagged": flagged,
        "alpha_nominal": _alpha(ratings, "leakage", "nominal", "leakage.alpha_nominal",
                                undefined),
        "fleiss_kappa": kappa,
        "fleiss_raters_per_item": raters,
        "fleiss_items_used": len(used),
        "fleiss_items_dropped": len(per_item) - len(used),
        "items_judged": sum(1 for counts in per_item.values() if sum(counts) > 0),
        "items_flagged_by_majority": len(majority),
        "items_flagged_by_majority_ids": majority,
    }


def _per_archetype(
    ratings: Sequence[Rating], archetypes: Mapping[str, str], undefined: dict[str, str]
) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Rating]] = defaultdict(list)
    for r in ratings:
        groups[archetypes.get(r.task_id, "(unmapped)")].append(r)
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(groups):
        rows = groups[name]
        fid = [v for r in rows if (v := r.fidelity) is not None]
        nat = [v for r in rows if (v := r.naturalness) is not None]
        leak = [v for r in rows if (v := r.leakage) is not None]
        entry: dict[str, Any] = {
            "n_tasks": len({r.task_id for r in rows}),
            "n_items": len({r.item_id for r in rows}),
            "n_ratings": len(rows),
            "fidelity_mean": _mean(fid),
            "naturalness_mean": _mean(nat),
            "leakage_rate": _mean(leak),
        }
        for field, values in (("fidelity_mean", fid), ("naturalness_mean", nat),
                              ("leakage_rate", leak)):
            if not values:
                undefined[f"per_archetype.{name}.{field}"] = "no ratings on this dimension"
        out[name] = entry
    return out


def _range(values: Sequence[int]) -> int | None:
    return max(values) - min(values) if len(values) >= 2 else None


def _most_disagreed(ratings: Sequence[Rating], top: int) -> list[dict[str, Any]]:
    by_item: dict[str, list[Rating]] = defaultdict(list)
    for r in ratings:
        by_item[r.item_id].append(r)
    scored: list[tuple[int, str, dict[str, Any]]] = []
    for item, rows in by_item.items():
        fid = _range([v for r in rows if (v := r.fidelity) is not None])
        nat = _range([v for r in rows if (v := r.naturalness) is not None])
        leak = {r.leakage for r in rows if r.leakage is not None}
        split = leak == {0, 1}
        score = (fid or 0) + (nat or 0) + (LEAKAGE_SPLIT_WEIGHT if split else 0)
        if score == 0:
            continue
        scored.append((score, item, {
            "item_id": item,
            "task_id": rows[0].task_id,
            "score": score,
            "fidelity_range": fid,
            "naturalness_range": nat,
            "leakage_split": split,
            "ratings": {
                r.annotator_id: {"fidelity": r.fidelity, "naturalness": r.naturalness,
                                 "leakage": r.leakage}
                for r in sorted(rows, key=lambda x: x.annotator_id)
            },
        }))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [entry for _, _, entry in scored[:top]]


def _calibration(ratings: Sequence[Rating]) -> dict[str, Any] | None:
    calib = [r for r in ratings if r.calibration]
    if not calib:
        return None
    per: dict[str, list[Rating]] = defaultdict(list)
    for r in calib:
        per[r.annotator_id].append(r)
    annotators: dict[str, dict[str, Any]] = {}
    for annotator in sorted(per):
        rows = per[annotator]
        leak = [v for r in rows if (v := r.leakage) is not None]
        annotators[annotator] = {
            "n_items": len({r.item_id for r in rows}),
            "fidelity_mean": _mean([v for r in rows if (v := r.fidelity) is not None]),
            "naturalness_mean": _mean([v for r in rows if (v := r.naturalness) is not None]),
            "leakage_flags": sum(leak),
            "leakage_judgments": len(leak),
        }
    return {
        "n_items": len({r.item_id for r in calib}),
        "n_ratings": len(calib),
        "annotators": annotators,
    }


def _krippendorff_version() -> str:
    try:
        return metadata.version("krippendorff")
    except metadata.PackageNotFoundError:  # pragma: no cover - imported above, so installed
        return "unknown"


def agreement_report(
    ratings: Sequence[Rating],
    *,
    archetypes: Mapping[str, str] | None = None,
    seed: int = 0,
    n_resamples: int = 2000,
    top_disagreements: int = 10,
) -> dict[str, Any]:
    """Table 9 of the paper as a JSON-ready dict (see the module docstring and
    ``docs/study_a_agreement.md`` for every key).

    Calibration ratings are summarized under ``calibration`` and enter nothing else.
    ``archetypes`` maps task ids to their archetype; with it the report has ``per_archetype``
    (tasks missing from the mapping are grouped as ``"(unmapped)"``), without it that key is
    ``None``. Undefined statistics are ``None`` with a reason under ``undefined``.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if top_disagreements < 0:
        raise ValueError(f"top_disagreements must be >= 0, got {top_disagreements}")
    study = [r for r in ratings if not r.calibration]
    undefined: dict[str, str] = {}
    dimensions: dict[str, dict[str, Any]] = {
        "fidelity": _scale_dimension(study, "fidelity", seed=seed, n_resamples=n_resamples,
                                     undefined=undefined),
        "naturalness": _scale_dimension(study, "naturalness", seed=seed,
                                        n_resamples=n_resamples, undefined=undefined),
        "leakage": _leakage_dimension(study, seed=seed, n_resamples=n_resamples,
                                      undefined=undefined),
    }
    pooled = _pooled_scales(study, undefined)
    per_archetype = (
        _per_archetype(study, archetypes, undefined) if archetypes is not None else None
    )
    calibration = _calibration(ratings)
    return {
        "n_items": len({r.item_id for r in study}),
        "n_tasks": len({r.task_id for r in study}),
        "n_annotators": len({r.annotator_id for r in study}),
        "n_ratings": len(study),
        "n_calibration_ratings": len(ratings) - len(study),
        "calibration": calibration,
        "dimensions": dimensions,
        "pooled_scales": pooled,
        "per_archetype": per_archetype,
        "most_disagreed": _most_disagreed(study, top_disagreements),
        "undefined": dict(sorted(undefined.items())),
        "method": {
            "agreement": (
                "Krippendorff's alpha (ordinal) on the 1–5 fidelity and naturalness scales, "
                "interval alpha alongside; Krippendorff's alpha (nominal) and Fleiss' kappa on "
                "the 0/1 leakage flag"
            ),
            "krippendorff": (
                f"krippendorff {_krippendorff_version()}: annotators × items reliability data, "
                "missing ratings left out; only items with two or more ratings are pairable"
            ),
            "fleiss": (
                "Fleiss (1971) kappa on the items judged by the modal number of annotators; "
                "items judged by another number are dropped (fleiss_items_dropped)"
            ),
            "ci": (
                f"{CONFIDENCE:.0%} percentile interval from a task-level bootstrap: tasks drawn "
                "with replacement, every item and annotator rating of a task kept together; "
                "the pooled mean (rate) is recomputed as a ratio of sums on each resample"
            ),
            "confidence": CONFIDENCE,
            "n_resamples": n_resamples,
            "seed": seed,
            "most_disagreed": (
                "score = fidelity range + naturalness range across annotators "
                f"+ {LEAKAGE_SPLIT_WEIGHT} when the leakage judgments split"
            ),
            "calibration": "calibration rows are excluded from every figure but 'calibration'",
        },
    }


# --------------------------------------------------------------------------- output


_LABELS = {
    "fidelity": "Semantic fidelity (1–5)",
    "naturalness": "Naturalness (1–5)",
    "leakage": "Leakage flagged",
}


def _num(x: float | None, fmt: str = ".2f") -> str:
    return "undefined" if x is None else format(x, fmt)


def _pct(x: float | None) -> str:
    return "undefined" if x is None else f"{100.0 * x:.1f}%"


def _ci_cell(ci: Sequence[float] | None, pct: bool) -> str:
    if ci is None:
        return "undefined"
    lo, hi = ci
    return f"[{_pct(lo)}, {_pct(hi)}]" if pct else f"[{lo:.2f}, {hi:.2f}]"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(r[k])) for r in [header, *rows]) for k in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
    return [line(header), line(["-" * w for w in widths]), *[line(r) for r in rows]]


def format_report(report: Mapping[str, Any]) -> str:
    """The report as text: the Table 9 summary first, then undefined statistics, per-archetype
    means, the most disagreed items, the calibration summary and the method."""
    dims = report["dimensions"]
    fid, nat, leak = dims["fidelity"], dims["naturalness"], dims["leakage"]
    method = report["method"]
    lines = [
        "Study A: human validation of frozen user realizations (Table 9)",
        f"{report['n_items']} items from {report['n_tasks']} tasks, "
        f"{report['n_annotators']} annotators, {report['n_ratings']} ratings"
        + (f" ({report['n_calibration_ratings']} calibration ratings reported apart)"
           if report["n_calibration_ratings"] else ""),
        "",
    ]
    ci_head = f"{method['confidence']:.0%} CI (task bootstrap)"
    rows = []
    for name, d in (("fidelity", fid), ("naturalness", nat)):
        rows.append([
            _LABELS[name], _num(d["mean"]), _ci_cell(d["ci"], pct=False), str(d["n"]),
            f"alpha ordinal {_num(d['alpha_ordinal'], '.3f')} "
            f"(interval {_num(d['alpha_interval'], '.3f')})",
        ])
    fleiss = f"Fleiss kappa {_num(leak['fleiss_kappa'], '.3f')}"
    if leak["fleiss_raters_per_item"] is not None:
        fleiss += (f" ({leak['fleiss_items_used']} items x {leak['fleiss_raters_per_item']} "
                   f"raters, {leak['fleiss_items_dropped']} dropped)")
    rows.append([
        _LABELS["leakage"], _pct(leak["rate"]), _ci_cell(leak["ci"], pct=True), str(leak["n"]),
        f"{fleiss}; alpha nominal {_num(leak['alpha_nominal'], '.3f')}",
    ])
    lines += _table(["Dimension", "Mean / rate", ci_head, "n", "Agreement"], rows)
    lines.append(
        f"Fidelity and naturalness pooled (each item and scale a unit): alpha ordinal "
        f"{_num(report['pooled_scales']['alpha_ordinal'], '.3f')}"
    )
    lines.append(
        f"Items flagged for leakage by a majority of annotators: "
        f"{leak['items_flagged_by_majority']} of {leak['items_judged']}"
    )
    undefined = report["undefined"]
    if undefined:
        lines += ["", "Undefined statistics:"]
        lines += [f"  {key}: undefined ({why})" for key, why in undefined.items()]
    per_arch = report["per_archetype"]
    if per_arch:
        lines += ["", "Per archetype:"]
        lines += ["  " + ln for ln in _table(
            ["Archetype", "Tasks", "Items", "Fidelity", "Naturalness", "Leakage"],
            [[name, str(a["n_tasks"]), str(a["n_items"]), _num(a["fidelity_mean"]),
              _num(a["naturalness_mean"]), _pct(a["leakage_rate"])]
             for name, a in per_arch.items()],
        )]
    disagreed = report["most_disagreed"]
    if disagreed:
        lines += ["", "Most disagreed items (fidelity/naturalness/leakage per annotator):"]
        for d in disagreed:
            cells = ", ".join(
                f"{a} {_cell(v['fidelity'])}/{_cell(v['naturalness'])}/{_cell(v['leakage'])}"
                for a, v in d["ratings"].items()
            )
            lines.append(f"  {d['item_id']} ({d['task_id']}), score {d['score']}: {cells}")
    calib = report["calibration"]
    if calib:
        lines += ["", f"Calibration items ({calib['n_items']}), not in any figure above:"]
        lines += ["  " + ln for ln in _table(
            ["Annotator", "Items", "Fidelity", "Naturalness", "Leakage flags"],
            [[a, str(c["n_items"]), _num(c["fidelity_mean"]), _num(c["naturalness_mean"]),
              f"{c['leakage_flags']}/{c['leakage_judgments']}"]
             for a, c in calib["annotators"].items()],
        )]
    lines += ["", *textwrap.wrap(
        f"Method: {method['agreement']}. CIs: {method['ci']} "
        f"({method['n_resamples']} resamples, seed {method['seed']}).",
        width=100,
    )]
    return "\n".join(lines)


def _cell(v: int | None) -> str:
    return "-" if v is None else str(v)


#: Columns of :func:`report_csv`, one row per dimension.
REPORT_CSV_COLUMNS: tuple[str, ...] = (
    "dimension", "n", "mean", "rate", "ci_low", "ci_high", "alpha_ordinal", "alpha_interval",
    "alpha_nominal", "fleiss_kappa", "fleiss_items_used", "fleiss_items_dropped", "undefined",
)


def report_csv(report: Mapping[str, Any], fh: TextIO) -> None:
    """The Table 9 summary as CSV: one row per dimension, an empty cell where a statistic does
    not apply or is undefined (the ``undefined`` column then says which and why)."""
    writer = csv_safe.writer(fh, lineterminator="\n")
    writer.writerow(REPORT_CSV_COLUMNS)
    undefined: Mapping[str, str] = report["undefined"]

    def cell(v: Any) -> str:
        return "" if v is None else repr(v) if isinstance(v, float) else str(v)

    for name in ("fidelity", "naturalness", "leakage"):
        d = report["dimensions"][name]
        ci = d.get("ci") or (None, None)
        why = "; ".join(f"{k.split('.', 1)[1]}: {v}" for k, v in undefined.items()
                        if k.startswith(f"{name}."))
        writer.writerow([
            name, d["n"], cell(d.get("mean")), cell(d.get("rate")), cell(ci[0]), cell(ci[1]),
            cell(d.get("alpha_ordinal")), cell(d.get("alpha_interval")),
            cell(d.get("alpha_nominal")), cell(d.get("fleiss_kappa")),
            cell(d.get("fleiss_items_used")), cell(d.get("fleiss_items_dropped")), why,
        ])
