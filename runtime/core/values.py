"""Canonical values: how a dictated value is read, wherever it is read (paper appendix C.3).

Numbers said as words, spoken dates against a reference date, phones (E.164), addresses (USPS
form), identifiers spelled letter by letter, and whether a value was said in a turn. The Voice
Workbench matches lookup arguments with them, the simulated caller and the observer hear values
with them, and the field graders (:mod:`grading.fields`) compare gold and written values through
them: one reading of a value for the whole benchmark.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import dateparser
import phonenumbers
import usaddress
from rapidfuzz.fuzz import ratio
from rapidfuzz.process import extractOne
from scourgify import normalize_address_record
from scourgify.exceptions import AddressNormalizationError
from text_to_num import alpha2digit

from runtime.core.spec import GraderName

_EPS = 1e-9

def is_empty(value: Any) -> bool:
    """None, "", whitespace, and lists/tuples/sets/dicts holding only empty values are empty.

    An empty value is never judged and scores 0.
    """
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, dict):
        return all(is_empty(v) for v in value.values())
    if isinstance(value, list | tuple | set | frozenset):
        return all(is_empty(v) for v in value)
    return False


def _as_text(value: Any) -> str:
    """Render a recorded value as text: lists joined with ", ", integral floats without ".0"."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return ", ".join(_as_text(v) for v in value)
    if isinstance(value, set | frozenset):
        return ", ".join(sorted(_as_text(v) for v in value))
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


_APOSTROPHES = re.compile(r"['\u2018\u2019\u02bc`]")


def canonical_text(value: Any) -> str:
    """Casefold, drop apostrophes, turn other punctuation/symbols into spaces, squeeze spaces.

    ``"Dr. Alvarez"`` → ``"dr alvarez"``; ``"O'Brien"`` → ``"obrien"``.
    """
    return _canonical_str(_as_text(value))


# The text transforms below are pure functions of a string. The simulated caller and the
# provenance check apply them to the same turn once per fact value, so each keeps the results
# for the most recent texts (bounded; results are immutable).
_TEXT_CACHE = 4096


@lru_cache(maxsize=_TEXT_CACHE)
def _canonical_str(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _APOSTROPHES.sub("", text)
    text = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in text)
    return " ".join(text.split())


_NUMBER_WORDS = (
    "zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    "fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|"
    "eighty|ninety|hundred|thousand|million")
_NUMBER_UNIT = re.compile(
    rf"\b({_NUMBER_WORDS})-(?!(?:{_NUMBER_WORDS})\b)(?=[a-z])", re.IGNORECASE)


@lru_cache(maxsize=_TEXT_CACHE)
def _words_to_digits(text: str) -> str:
    """Spoken numbers to digits: ``alpha2digit`` (threshold 0), then the forms it does not
    know: "oh" next to a digit is 0, "double 5" / "triple 5" repeat the digit."""
    text = unicodedata.normalize("NFKC", text)
    # a number joined to its unit ("a three-year term", "a five-person crew") is the number
    text = _NUMBER_UNIT.sub(r"\1 ", text)
    text = alpha2digit(text, "en", threshold=0)
    # "oh" is a digit only next to a digit group ("five oh one", "oh seven", "oh oh seven").
    previous = None
    while previous != text:
        previous = text
        text = re.sub(r"(?<=\d)(\s*)\boh\b", r"\g<1>0", text, flags=re.IGNORECASE)
        text = re.sub(r"\boh\b(?=[\s,-]*\d)", "0", text, flags=re.IGNORECASE)
    text = re.sub(r"\bdouble\s*(\d)", r"\1\1", text, flags=re.IGNORECASE)
    text = re.sub(r"\btriple\s*(\d)", r"\1\1\1", text, flags=re.IGNORECASE)
    return text


def canonical_identifier(value: Any) -> str:
    """Upper-cased alphanumerics after spoken numbers become digits.

    ``"E forty-four seventy-one"`` → ``"E4471"``. Leading zeros are kept (significant).
    """
    return _canonical_identifier_str(_as_text(value))


@lru_cache(maxsize=_TEXT_CACHE)
def _canonical_identifier_str(value: str) -> str:
    text = _words_to_digits(value).upper()
    return "".join(ch for ch in text if ch.isalnum())


def split_items(value: Any) -> list[str]:
    """A list as given, or a string split on commas, semicolons and " and " / "&".

    Items are not split further when the value is already a list. A name containing "and"
    ("Johnson and Johnson") is split when it arrives as a string.
    """
    if isinstance(value, list | tuple):
        items = [_as_text(v) for v in value]
    elif isinstance(value, set | frozenset):
        items = sorted(_as_text(v) for v in value)
    else:
        items = re.split(
            r"\s*[,;]\s*(?:and\s+)?|\s+and\s+|\s*&\s*",
            _as_text(value).strip(),
            flags=re.IGNORECASE,
        )
    return [item for item in items if item.strip()]


# --------------------------------------------------------------------------- exact family

def _compact(value: Any) -> str:
    return canonical_text(value).replace(" ", "")


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")
_MULTIPLIERS = {"1000": 1e3, "1000000": 1e6, "1000000000": 1e9}


def extract_number(value: Any) -> float | None:
    """The single number a value states, or None when it states none or several.

    Number words become digits ("twelve hundred" → 1200, "around eight" → 8, "three
    sixty" → 360); "$", ",", "%" and unit words are ignored; "and a half" adds 0.5;
    "1.5 million" / "12k" scale. "two three" or "five to ten" state no single number.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, list | tuple):
        items = [v for v in value if not is_empty(v)]
        return extract_number(items[0]) if len(items) == 1 else None
    if not isinstance(value, str):
        return None
    text = _spoken_digits(value)
    text = re.sub(r"\b(?:minus|negative)\s+(?=\d)", "-", text, flags=re.IGNORECASE)
    text = _thousands_k(_scaled(text))
    # Numbers said in pairs: "three sixty" → "3 60" → 360, "twelve fifty" → 1250.
    text = re.sub(
        r"(?<![\d.,]\s)(?<![\d.,])\b(\d{1,2})\s(\d{2})\b(?![.,]?\s?\d)", r"\1\2", text
    )
    found = _NUMBER.findall(text)
    if len(found) != 1:
        return None
    number = float(found[0])
    return number if math.isfinite(number) else None


def _spoken_digits(text: str) -> str:
    """Number words as digits, thousands separators dropped, "and a half" as ".5"."""
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", _words_to_digits(text))
    return re.sub(r"(\d+)\s+and\s+a\s+half\b", lambda m: f"{int(m.group(1))}.5", text,
                  flags=re.IGNORECASE)


def _scaled(text: str) -> str:
    """A number before its scale as one number: "7.4 1000000" (seven point four million) as
    7400000."""
    return re.sub(r"(\d+(?:\.\d+)?)\s+(1000000000|1000000|1000)\b",
                  lambda m: _fmt(float(m.group(1)) * _MULTIPLIERS[m.group(2)]), text)


def _thousands_k(text: str) -> str:
    """"12k" as 12000."""
    return re.sub(r"(\d+(?:\.\d+)?)\s?[kK]\b", lambda m: _fmt(float(m.group(1)) * 1e3),
                  text)


def _fmt(x: float) -> str:
    return str(int(x)) if x.is_integer() else repr(x)


_MONTHS = {
    "january", "jan", "february", "feb", "march", "mar", "april", "apr", "may", "june", "jun",
    "july", "jul", "august", "aug", "september", "sep", "sept", "october", "oct",
    "november", "nov", "december", "dec",
}
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_NUMERIC_DATE = re.compile(r"(?<![\d/.-])\d{1,2}[/.-]\d{1,2}[/.-](?:\d{4}|\d{2})(?![\d/.-])")
_DATE_TOKEN = re.compile(r"[A-Za-z]+\.?|'\d{2}\b|\d+(?:st|nd|rd|th)?\b", re.IGNORECASE)
_RELATIVE_BASE = dt.datetime(2000, 1, 1)


def _spoken_date_text(text: str) -> str:
    """Number words to digits, then rejoin years said in two halves ("19 88" → "1988")."""
    text = alpha2digit(unicodedata.normalize("NFKC", text), "en", threshold=0)
    text = re.sub(r"\b(\d{2})\s+o(?:h)?\s+(\d)\b", r"\g<1>0\2", text, flags=re.IGNORECASE)
    # Only the last pair of two-digit groups is a year: "July 12 19 88" → "July 12 1988".
    text = re.sub(r"\b(1\d|20)\s+(\d{2})\b(?!\s*\d)", r"\1\2", text)
    # A year said by its last two digits after a month and day, closing the phrase:
    # "July ninth, eighty-eight." → "July 9th, 1988" (the nearest century below 2040).
    return re.sub(
        rf"(\b{_MONTH_RX}\s+(?:the\s+)?{_DAY_RX}),\s+'?(\d{{2}})(?=\s*(?:[.;!?]|,\s|$))",
        lambda m: f"{m.group(1)}, {_two_digit_year(int(m.group(2)))}", text, flags=re.IGNORECASE)


def _two_digit_year(yy: int) -> int:
    """'88 → 1988, '27 → 2027: the century that puts the year before 2040."""
    return 1900 + yy if yy >= 40 else 2000 + yy


def _date_candidate(text: str, require_year: bool) -> str | None:
    """The date-like part of a normalized value, or None if it does not look like a date.

    Guards dateparser, which reads "8", "may" or "1988" alone as dates.
    """
    numeric = _NUMERIC_DATE.findall(text)
    if numeric:
        return numeric[0] if len(numeric) == 1 else None
    months: list[str] = []
    numbers: list[str] = []
    for token in _DATE_TOKEN.findall(text):
        word = token.rstrip(".").casefold()
        if word in _MONTHS:
            months.append(word)
        elif token[0].isdigit() or token.startswith("'"):
            numbers.append(token)
    if len(months) != 1:
        return None
    wanted = (2,) if require_year else (1, 2)
    if len(numbers) not in wanted:
        return None
    return " ".join([months[0], *numbers])


def parse_spoken_date(
    value: Any, *, require_year: bool = True, base_year: int | None = None
) -> dt.date | None:
    """Read a dictated date ("July ninth, nineteen eighty-eight", "07/09/1988", ISO).

    Numeric dates are month first (MDY). With ``require_year=False`` a missing year is
    taken from ``base_year`` (used for date intervals such as "June 2 to June 11").
    """
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str):
        return None
    return _parse_date_str(value, require_year, base_year)


@lru_cache(maxsize=_TEXT_CACHE)
def _parse_date_str(value: str, require_year: bool, base_year: int | None) -> dt.date | None:
    text = unicodedata.normalize("NFKC", value).strip()
    if _ISO_DATE.fullmatch(text):
        try:
            return dt.date.fromisoformat(text)
        except ValueError:
            return None
    candidate = _date_candidate(_spoken_date_text(text), require_year)
    if candidate is None:
        return None
    base = _RELATIVE_BASE if base_year is None else dt.datetime(base_year, 1, 1)
    parsed = dateparser.parse(
        candidate,
        languages=["en"],
        settings={
            "RELATIVE_BASE": base,
            "DATE_ORDER": "MDY",
            "PREFER_DATES_FROM": "current_period",
            "REQUIRE_PARTS": ["day", "month", "year"] if require_year else ["day", "month"],
        },
    )
    return parsed.date() if parsed is not None else None


def resolve_date(value: Any, reference: dt.date | None = None) -> dt.date | None:
    """A dictated date, its year taken from ``reference`` when it was not said: of the three
    candidates (the reference year and the years either side) the one nearest the reference
    date, the later one on a tie. "June 2nd" said on 2027-05-14 is 2027-06-02; said on
    2027-12-20, "January 5th" is 2028-01-05."""
    full = parse_spoken_date(value)
    if full is not None or reference is None:
        return full
    partial = parse_spoken_date(value, require_year=False, base_year=reference.year)
    if partial is None:
        return None
    candidates: list[dt.date] = []
    for year in (reference.year - 1, reference.year, reference.year + 1):
        try:
            candidates.append(partial.replace(year=year))
        except ValueError:  # February 29th in a common year
            continue
    if not candidates:
        return None
    return min(candidates, key=lambda d: (abs((d - reference).days), -d.toordinal()))


def canonical_phone(value: Any, region: str = "US") -> str | None:
    """E.164 form (plus ";ext=N" when an extension is given), or None if the value is not
    just a spoken/written phone number. Letters left after normalization (vanity numbers,
    free text) are rejected rather than handed to ``phonenumbers.parse``."""
    if isinstance(value, list | tuple):
        items = [v for v in value if not is_empty(v)]
        return canonical_phone(items[0], region) if len(items) == 1 else None
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return _canonical_phone_str(_as_text(value), region)


@lru_cache(maxsize=_TEXT_CACHE)
def _canonical_phone_str(value: str, region: str) -> str | None:
    text = _words_to_digits(value).casefold()
    text = re.sub(r"\bplus\s*(?=\d)", "+", text)
    text = re.sub(r"(?<=\d)(\s*)\bo\b", r"\g<1>0", text)
    text = re.sub(r"\bo\b(?=\s*\d)", "0", text)
    extension = ""
    ext = re.search(r"\s*(?:\bext\b|\bextension\b|\bx\b)\.?\s*(\d+)\s*$", text)
    if ext:
        extension, text = ext.group(1), text[: ext.start()]
    if re.search(r"[^\d\s+().,/-]", text) or "+" in text.lstrip()[1:]:
        return None
    digits = re.sub(r"[^\d+]", "", text)
    if sum(ch.isdigit() for ch in digits) < 3:
        return None
    try:
        number = phonenumbers.parse(digits, region)
    except phonenumbers.NumberParseException:
        return None
    e164 = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    return f"{e164};ext={extension}" if extension else e164


_ADDRESS_PARTS = ("address_line_1", "address_line_2", "city", "state", "postal_code")


def _spoken_address_text(value: Any) -> str:
    """Number words to digits, then glue digit runs said one group at a time:
    "1 23 Main" → "123 Main", ZIP "6 2 7 0 1" → "62701"."""
    text = _words_to_digits(_as_text(value))
    return re.sub(r"\b\d+(?:[ \t]+\d+)+\b", lambda m: re.sub(r"\s+", "", m.group(0)), text)


def _address_fallback(text: str) -> str:
    return re.sub(r"\bp\s*o\s+box\b", "po box", canonical_text(text))


def canonical_address(value: Any) -> tuple[str, bool]:
    """USPS canonical form via scourgify, and whether scourgify could parse the value.

    scourgify (built on usaddress) cannot parse PO boxes (unsupported), fragments or free
    text; for those the form returned is the case-folded, punctuation-squeezed text with
    "P.O. Box" written "po box", and the flag is False.
    """
    text = _spoken_address_text(value)
    try:
        record = normalize_address_record(text)
    except (AddressNormalizationError, usaddress.RepeatedLabelError):
        return _address_fallback(text), False
    parts = [str(record[key]) for key in _ADDRESS_PARTS if record.get(key)]
    return ", ".join(parts), True


_RANGE_WORDS = re.compile(
    r"\s+(?:to|through|thru|until|till|and)\s+|\s*[\u2013\u2014]\s*|\s+-\s+", re.IGNORECASE
)


def _interval_parts(value: Any) -> list[Any] | None:
    """The two ends of an interval value: a 2-item list, or a string such as
    "June 2 to June 11", "from 5 to 10", "5-10", "2024-06-02/2024-06-11"."""
    if isinstance(value, list | tuple):
        return list(value) if len(value) == 2 else None
    if not isinstance(value, str):
        return None
    text = re.sub(r"^\s*(?:from|between)\s+", "", value.strip(), flags=re.IGNORECASE)
    parts = _RANGE_WORDS.split(text)
    if len(parts) != 2:
        iso = re.fullmatch(r"(\d{4}-\d{2}-\d{2})\s*/\s*(\d{4}-\d{2}-\d{2})", text)
        num = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)", text)
        days = re.fullmatch(r"([A-Za-z].*?\d{1,2})\s*-\s*(\d{1,2})", text)  # "June 2-11"
        match = iso or num or days
        if match is None:
            return None
        parts = [match.group(1), match.group(2)]
    return [part.strip() for part in parts]


def _is_date_like(value: Any) -> bool:
    return isinstance(value, dt.date) or (
        isinstance(value, str) and _ISO_DATE.fullmatch(value.strip()) is not None
    )


ValueFound = Literal["match", "mismatch", "absent"]
"""Whether a text states a value: ``match`` (it says this value), ``mismatch`` (it states a
value of the kind but not this one), ``absent`` (it states none)."""

_MONTH_RX = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|"
             r"aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_DAY_RX = r"\d{1,2}(?:st|nd|rd|th)?"
_YEAR_RX = r"(?:,?\s+(?:of\s+)?\d{4})?"
_DATES_IN_TEXT = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b"
    rf"|(?<![\d/.-])\d{{1,2}}[/.-]\d{{1,2}}[/.-](?:\d{{4}}|\d{{2}})(?![\d/.-])"
    rf"|\b{_MONTH_RX}\s+(?:the\s+)?{_DAY_RX}\b{_YEAR_RX}"
    rf"|\b(?:the\s+)?{_DAY_RX}\s+(?:of\s+)?{_MONTH_RX}{_YEAR_RX}",
    re.IGNORECASE,
)


def dates_in_text(text: str, reference: dt.date | None = None) -> list[dt.date]:
    """Every date a free text states ("July ninth, nineteen eighty-eight", "the 2nd of June",
    "06/02/2027"), year-less ones resolved against ``reference``."""
    return list(_dates_in_text(text, reference))


@lru_cache(maxsize=_TEXT_CACHE)
def _dates_in_text(text: str, reference: dt.date | None) -> tuple[dt.date, ...]:
    normalized = _spoken_date_text(text)
    out: list[dt.date] = []
    for m in _DATES_IN_TEXT.finditer(normalized):
        day = resolve_date(re.sub(r"\b(?:the|of)\b", " ", m.group(0)), reference)
        if day is not None and day not in out:
            out.append(day)
        # "June 2nd through the 13th": the range's end in the same month
        end = _RANGE_END.match(normalized, m.end())
        if day is not None and end is not None:
            later = _day_in_month(day, int(end.group(1)))
            if later is not None and later not in out:
                out.append(later)
    if reference is not None:
        # "Tuesday the 13th": the date near the reference that falls on that weekday
        for m in _WEEKDAY_DAY.finditer(normalized):
            near = _weekday_date(_WEEKDAYS.index(m.group(1).lower()[:3]), int(m.group(2)),
                                 reference)
            if near is not None and near not in out:
                out.append(near)
    return tuple(out)


_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_WEEKDAY_DAY = re.compile(
    rf"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday),?\s+(?:the\s+)?"
    rf"(\d{{1,2}})(?:st|nd|rd|th)?\b(?!\s*(?:of\s+)?{_MONTH_RX})", re.IGNORECASE)
_RANGE_END = re.compile(
    rf"\s*(?:through|thru|to|until|till|-)\s+(?:the\s+)?(\d{{1,2}})(?:st|nd|rd|th)?\b"
    rf"(?!\s*(?:of\s+)?{_MONTH_RX})(?!\s*[:.]?\d)", re.IGNORECASE)


def _day_in_month(start: dt.date, day: int) -> dt.date | None:
    """Day ``day`` of ``start``'s month, or of the next month when it is before ``start``."""
    try:
        later = start.replace(day=day)
        if later < start:
            later = (start.replace(day=1) + dt.timedelta(days=32)).replace(day=day)
    except ValueError:
        return None
    return later


def _weekday_date(weekday: int, day: int, reference: dt.date) -> dt.date | None:
    """The date within four months of ``reference`` that is day ``day`` of its month and
    falls on ``weekday``; the nearest one, the later on a tie."""
    found: list[dt.date] = []
    for offset in range(-4, 5):
        month = (reference.month - 1 + offset) % 12 + 1
        year = reference.year + (reference.month - 1 + offset) // 12
        try:
            candidate = dt.date(year, month, day)
        except ValueError:
            continue
        if candidate.weekday() == weekday:
            found.append(candidate)
    if not found:
        return None
    return min(found, key=lambda d: (abs((d - reference).days), -d.toordinal()))


def numbers_in_text(text: str) -> list[float]:
    """Every number a free text states, number words included ("twelve hundred" → 1200,
    "$1,200" → 1200, "12k" → 12000). Digits read out one by one count one by one."""
    return list(_numbers_in_text(text))


_DATED_YEAR = re.compile(
    rf"(\b(?:{'|'.join(sorted(_MONTHS, key=len, reverse=True))})\.?"
    r"(?:\s+\d{1,2}(?:st|nd|rd|th)?)?,?\s+)(19|20)\s(\d{2})\b(?![.,]?\s?\d)",
    re.IGNORECASE,
)
"""A year said in pairs after a month ("March third, twenty twenty-six"): the year only,
never the pair's parts (20 and 26)."""


@lru_cache(maxsize=_TEXT_CACHE)
def _numbers_in_text(text: str) -> tuple[float, ...]:
    t = _DATED_YEAR.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}",
                        _thousands_k(_scaled(_spoken_digits(text))))
    out = [float(n) for n in _NUMBER.findall(t) if math.isfinite(float(n))]
    # Numbers said in pairs also read as one: "two forty-five" → 2, 45 and 245.
    for m in re.finditer(r"(?<![\d.,])\b(\d{1,2})\s(\d{2})\b(?![.,]?\s?\d)", t):
        out.append(float(m.group(1) + m.group(2)))
    return tuple(out)


def spelled_out(text: str) -> str:
    """A text with spoken numbers as digits and characters said one at a time joined up,
    for finding identifiers in it."""
    return _spelled_runs(text)


def unit_numbers(text: str, unit: Literal["percent", "money"]) -> list[float]:
    """Numbers a text states with that unit: "fifteen percent" / "15%" / "half the fee"
    (percent), "$150" / "one hundred fifty dollars" / "760 pounds" (money)."""
    t = _spoken_digits(text)
    if unit == "percent":
        found = re.findall(r"(\d+(?:\.\d+)?)\s*(?:%|percent\b|per cent\b)", t, re.IGNORECASE)
        found += ["50"] * len(_HALF_OF.findall(t))
    else:
        found = [a or b for a, b in re.findall(
            r"[$£€]\s*(\d+(?:\.\d+)?)|(\d+(?:\.\d+)?)\s*(?:dollars?|bucks|pounds?|quid|euros?)\b",
            t, re.IGNORECASE)]
    return [float(n) for n in found]


_HALF_OF = re.compile(r"\bhalf(?: of)? (?:the|your|that|this|its|it)\b", re.IGNORECASE)
"""A share said as "half the fee" / "half of your premium": fifty percent."""


_ORDINAL = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    r"\w+teenth|\w+ieth|\d+(?:st|nd|rd|th))\b", re.IGNORECASE)
"""An ordinal ("the first monthly payment") names a place in a row, not a count."""


def cardinal_numbers(text: str) -> list[float]:
    """:func:`numbers_in_text` leaving out ordinals ("the first payment" states no 1)."""
    return numbers_in_text(_ORDINAL.sub(" ", text))


def counted_numbers(text: str, nouns: Sequence[str]) -> list[float]:
    """Numbers a text states as a count of one of ``nouns``, said in the three words before
    the noun ("four monthly payments", "over 3 months"): a noun matches by its first five
    letters, so "month" finds "monthly" and "months". A figure with a money or percent unit
    is not a count, nor is an ordinal ("the first monthly payment")."""
    stems = {n.lower()[:5] for n in nouns if len(n) > 2}
    words = list(re.finditer(r"[\w$%'-]+", text))
    out: list[float] = []
    for k, w in enumerate(words):
        if w.group().lower()[:5] not in stems or k == 0:
            continue
        before = _ORDINAL.sub(" ", text[words[max(0, k - 3)].start():w.start()])
        priced = set(unit_numbers(before + w.group(), "money")) | set(
            unit_numbers(before + w.group(), "percent"))
        found = [n for n in numbers_in_text(before) if n not in priced]
        if found:
            out.append(found[-1])
    return out


def unit_numbers_near(text: str, unit: Literal["percent", "money"],
                      cues: Sequence[str]) -> list[float]:
    """:func:`unit_numbers` of the clauses of ``text`` (split at punctuation) that hold one of
    ``cues``, by its first five letters ("discount" finds "discounted"; a short cue such as
    "off" whole): "eighteen percent off compute, ten percent rollover" → [18] for "off"."""
    stems = {c.lower()[:5] for c in cues if c}
    out: list[float] = []
    for clause in re.split(r"[,;:.!?](?:\s+|$)", text):
        words = {w.lower()[:5] for w in re.findall(r"[A-Za-z]+", clause)}
        if words & stems:
            out += unit_numbers(clause, unit)
    return out


_AS_IN = re.compile(r"\b([A-Z])\s+(?:as|like) in\s+[A-Za-z]+\b")
"""A letter said with its spelling word: "F as in Frank"."""


@lru_cache(maxsize=_TEXT_CACHE)
def _spelled_runs(text: str) -> str:
    """Spoken numbers to digits and letters/digits said one at a time joined up:
    "E, 4, 4, 7, 1" → "E4471", "H O 5 5 2" → "HO552", "E as in echo, four, ..." → "E4..."."""
    t = _words_to_digits(_AS_IN.sub(r"\1", text))
    # "S, S, O, dash, two one two": a dash said between characters is the identifier's dash
    t = re.sub(r"(?<=[A-Za-z0-9])[\s,]+(?:dash|hyphen)[\s,]+(?=[A-Za-z0-9])", "-", t,
               flags=re.IGNORECASE)
    return re.sub(
        r"\b[A-Za-z0-9](?:[\s,.-]+[A-Za-z0-9]\b)+",
        lambda m: re.sub(r"[\s,.-]+", "", m.group(0)), t,
    )


@lru_cache(maxsize=_TEXT_CACHE)
def _identifiers_said(text: str) -> tuple[str, frozenset[str]]:
    """A text's alphanumerics run together (spoken numbers and spelled characters joined),
    and its tokens that look like identifiers (two digits or more), canonical."""
    spelled = _spelled_runs(text)
    compact = "".join(ch for ch in spelled.upper() if ch.isalnum())
    tokens = re.findall(r"[A-Za-z0-9][A-Za-z0-9/-]*", spelled)
    candidates = frozenset(c for c in (canonical_identifier(t) for t in tokens)
                           if sum(ch.isdigit() for ch in c) >= 2)
    return compact, candidates


def _identifier_in_text(value: Any, text: str, restatement: bool = False) -> ValueFound:
    target = canonical_identifier(value)
    if not target:
        return "absent"
    compact, candidates = _identifiers_said(text)
    digits = "".join(ch for ch in target if ch.isdigit())
    lettered = target[0].isalpha() and target.endswith(digits)
    # A letter O and the digit zero sound alike ("H O five…" for HO-552…): they are one.
    target = target.replace("O", "0")
    if target in compact.replace("O", "0"):
        return "match"
    if restatement and len(digits) >= 4 and lettered and digits in re.findall(
            r"\d+", re.sub(r"(?<=\d) (?=\d)", "", _spelled_runs(text))) and not any(
            c != digits and c.endswith(digits) for c in candidates):
        # the number said alone: a listener hears "two oh four one nine" as INV-20419 (but
        # "M two zero four one seven" is not N20417)
        return "match"
    if {c.replace("O", "0") for c in candidates} - {target}:
        return "mismatch"
    return "absent"


def _near(word: str, words: _Words, proper: bool = False) -> bool:
    """``word`` is said among ``words``: as is, near (a sound or a letter off), or in the
    plural; for a name (``proper``) not with an ``s`` added or dropped, which a listener hears
    ("Elena Parks" is not Elena Park, "Morland" is Moreland)."""
    if word in words.all:
        return True
    if not proper and (f"{word}s" in words.all or (word.endswith("s") and word[:-1] in words.all)):
        return True
    if len(word) < 4:
        return False
    hit = extractOne(word, words.long, scorer=ratio, score_cutoff=85)
    return hit is not None and not (proper and hit[0] in (f"{word}s", word[:-1]))


@dataclass(frozen=True)
class _Words:
    all: frozenset[str]
    long: tuple[str, ...]
    """The words of four letters or more (the ones a near match is looked for in)."""


_NAME_STOP = frozenset({
    "the", "a", "an", "of", "and", "or", "for", "to", "in", "on", "at", "with", "by", "dr",
    "mr", "mrs", "ms", "is", "it", "its", "my", "your",
})


@lru_cache(maxsize=_TEXT_CACHE)
def _text_words(text: str) -> _Words:
    """The words of a text, as said and with spoken numbers as digits."""
    words = frozenset(canonical_text(_words_to_digits(text)).split()) | frozenset(
        canonical_text(text).split())
    return _Words(words, tuple(sorted(w for w in words if len(w) >= 4)))


def _tokens_in_text(value: Any, text: str, restatement: bool = False) -> ValueFound:
    """Free text and names: every content word of the value is said (fuzzily, a plural for
    a singular) → match; some but not all → mismatch ("Jamie Rhodes" for Jamie Reyes); none
    → absent. In a ``restatement``, some words said with nothing in place of the rest (no
    other word right beside them before a pause) is a shortened form → match."""
    wanted = [w for w in canonical_text(value).split() if w not in _NAME_STOP]
    if not wanted:
        return "absent"
    proper = all(w[:1].isupper() for w in re.findall(r"[^\W_]+", _as_text(value))
                 if w.casefold() not in _NAME_STOP)
    # a name's "'s" ("Sam Okafor's covering") is the name
    have = _text_words(re.sub(r"['’]s\b", "", text) if proper else text)
    found = [w for w in wanted if _near(w, have, proper)]
    if len(found) == len(wanted):
        return "match"
    if found and restatement and not _said_in_place(found, text, proper):
        return "match"
    return "mismatch" if found else "absent"


_JOINERS = _NAME_STOP | frozenset({
    "as", "was", "were", "be", "been", "then", "too", "also", "so", "now", "got", "noted",
    "it", "that", "this", "here", "there", "yes", "right", "okay", "ok", "thanks", "please",
    "i", "we", "you", "have", "has", "had", "put", "down", "it's", "that's", "is", "s",
})
"""Words that may stand beside a shortened value without taking the place of its rest."""


def _said_in_place(found: list[str], text: str, proper: bool) -> bool:
    """Whether a word right beside the said part of a value, in the same phrase, may stand
    for its unsaid part ("Jamie Rhodes": "Rhodes" where "Reyes" belongs). For a name
    (``proper``), only a capitalized word may ("Ray owns the item" shortens Ray Ortiz)."""
    for phrase in re.split(r"[,.;:!?]|\s-\s", _words_to_digits(text)):
        said = re.findall(r"[^\W_]+", phrase)
        words = [w.casefold() for w in said]
        # Which words of the phrase are (near) a said word of the value.
        ours = [any(_near(f, _Words(frozenset([w]), (w,) if len(w) >= 4 else ())) for f in found)
                for w in words]
        at = [i for i, mine in enumerate(ours) if mine]
        for i in (range(min(at) - 1, max(at) + 2) if at else ()):
            if not 0 <= i < len(words) or words[i] in _JOINERS or ours[i]:
                continue
            if not proper or said[i][:1].isupper():
                return True
    return False


def value_in_text(
    grader: GraderName,
    value: Any,
    text: str,
    *,
    tolerance: float = 0.0,
    options: Sequence[str] = (),
    reference: dt.date | None = None,
    restatement: bool = False,
) -> ValueFound:
    """Whether ``text`` (an agent's read-back, a tool result, the task context) states
    ``value``, compared the way the field's grader compares: dates by day (year-less dates
    against ``reference``), numbers within ``tolerance`` (round thousands also said without
    them: "one eighty-five" for 185,000, "forty-eight two fifty" for 48,250), phones in
    E.164, identifiers as upper-cased alphanumerics (spelled out or not, a spoken "O" as
    zero), enums by option (an option's words said in order, a word shortened or in the
    plural: "built-in mic"), lists item by item, names and free text word by word. Used by
    the simulated caller to check read-backs and by the provenance check of Process
    Validity.

    ``restatement``: the text restates a value the listener already knows (the caller
    hearing a read-back), so three shortened forms a listener accepts count as said: a date
    without its year on the right day ("May thirty-first" for 2024-05-31), part of a name or
    free text with nothing said in place of the rest ("Jamie" or "Jamie as beneficiary" for
    Jamie Reyes, but not "Jamie Rhodes"), and a phone number's last four digits said alone
    ("zero one eight six, fixed")."""
    if is_empty(value) or not text.strip():
        return "absent"
    if grader == "normalized_date":
        return _date_in_text(value, text, reference, restatement)
    if grader == "numeric_tolerance":
        return _number_in_text(value, text, tolerance)
    if grader == "normalized_phone":
        return _phone_in_text(value, text, restatement)
    if grader == "enum":
        return _enum_in_text(value, text, options)
    if grader in ("set_f1", "ordered_list"):
        return _list_in_text(value, text, restatement)
    if grader == "interval_overlap":
        return _interval_in_text(value, text, reference)
    if grader in ("exact", "casefold_exact") and re.search(r"\d", _as_text(value)):
        return _identifier_in_text(value, text, restatement)
    return _free_value_in_text(value, text, restatement)


def _date_in_text(value: Any, text: str, reference: dt.date | None,
                  restatement: bool) -> ValueFound:
    """A date said on its day (a restated date also without its year), for ``value_in_text``."""
    target = parse_spoken_date(value)
    found = dates_in_text(text, reference)
    if target is None or not found:
        return "absent"
    if target in found:
        return "match"
    if restatement and (target.month, target.day) in _yearless_days(text):
        return "match"
    return "mismatch"


_SPELLED_CHAR = r"(?:[A-Za-z0-9]|zero|oh|one|two|three|four|five|six|seven|eight|nine)"
_SPELLED_RUN = re.compile(rf"(?<![\w-])(?:{_SPELLED_CHAR}[ -]){{2,}}{_SPELLED_CHAR}(?![\w-])",
                          re.IGNORECASE)
_DIGIT_NAMES = {"zero": "0", "oh": "0", "one": "1", "two": "2", "three": "3", "four": "4",
                "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9"}


def _without_spelled_codes(text: str) -> str:
    """``text`` with what is spelled a character at a time read as a listener does: a code
    with a letter in it ("assignment M V 3 0 4 1 8", "M V three oh four one eight") says no
    number, four or more digits said one by one ("six four eight two hours") are one number.
    A run of three or more single characters (a digit also as its word)."""
    def read(m: re.Match[str]) -> str:
        chars = m.group(0).replace("-", " ").split()
        digits = [ch if ch.isdigit() else _DIGIT_NAMES.get(ch.lower(), "") for ch in chars]
        if all(digits) and len(digits) >= 4:
            return f" {''.join(digits)} "
        return " " if any(digits) and not all(digits) else m.group(0)

    return _SPELLED_RUN.sub(read, _words_to_digits(_SPELLED_RUN.sub(read, text)))


def without_dates(text: str) -> str:
    """``text`` (number words as digits) without the dates it states with a month or a
    weekday: "due October eleventh" says no eleven."""
    return _WEEKDAY_DAY.sub(" ", _DATES_IN_TEXT.sub(" ", _spoken_date_text(text)))


_CLOCK_SAID = re.compile(
    r"\b\d{1,2}:\d{2}(?:\s?[ap]\.?m\b\.?)?"
    r"|(?<![\d:.,])\b\d{1,2}(?: 0 \d| \d{2})? ?(?:[ap]\.?m\b\.?|o'?clock\b)"
    r"|\b(?:half|quarter) (?:past|after|to) \d{1,2}\b",
    re.IGNORECASE)
"""A time of day said as one ("1:30 PM", "1 30 p.m.", "nine o'clock", "half past 2")."""


def without_times(text: str) -> str:
    """``text`` (number words as digits) without the times of day it states as such: "the
    1:30 PM slot" says no thirty, "at 9 AM" no nine. A bare pair ("one fifty") stays, since it
    may be an amount."""
    return _CLOCK_SAID.sub(" ", text)


def _number_in_text(value: Any, text: str, tolerance: float) -> ValueFound:
    """A number said within ``tolerance`` (round thousands also without them), for
    ``value_in_text``; the digits of a code spelled out, the day of a date and a time of day
    are not numbers said."""
    text = without_times(without_dates(_without_spelled_codes(text)))
    number = extract_number(value)
    numbers = numbers_in_text(text)
    if number is None or not numbers:
        return "absent"
    heard = (*numbers, *_thousands_dropped(text, number))
    return "match" if any(abs(n - number) <= tolerance + _EPS for n in heard) else (
        "mismatch")


def _phone_in_text(value: Any, text: str, restatement: bool) -> ValueFound:
    """A phone number said in E.164 (a restated one also by its last four digits), for
    ``value_in_text``."""
    target_phone = canonical_phone(value)
    spoken = _words_to_digits(text)
    runs = re.findall(r"\+?\d[\d\s().,-]{5,}\d", spoken)
    phones = {p for p in (canonical_phone(r) for r in runs) if p is not None}
    tail = re.sub(r"\D", "", spoken)
    if restatement and target_phone is not None and len(tail) == 4:
        # a fixed number's last four digits said alone ("Zero one eight six, fixed.")
        return "match" if target_phone.endswith(tail) else "mismatch"
    if target_phone is None or not phones:
        return "absent"
    return "match" if target_phone in phones else "mismatch"


def _enum_in_text(value: Any, text: str, options: Sequence[str]) -> ValueFound:
    """An enum value said by its option (or another option said instead), for
    ``value_in_text``."""
    compact_text = _compact(text)
    times = _times_in_text(text) if any(
        _CLOCK_VALUE.fullmatch(str(o).strip()) for o in (*options, value)) else set()

    def says(option: str) -> bool:
        clock = _CLOCK_VALUE.fullmatch(option.strip())
        if clock is not None:  # a time of day as an option: "two thirty" says "2:30 PM"
            return (int(clock.group(1)) % 12, int(clock.group(2) or 0)) in times
        # a short option ("no", "yes") is said as a word, not inside one ("north")
        c = _compact(option)
        return bool(c) and ((len(c) >= 5 and c in compact_text)
                            or _option_words_said(option, text))

    said = [o for o in options if says(o)]
    if any(_compact(o) == _compact(value) for o in said) or says(str(value)):
        return "match"
    return "mismatch" if said or _other_option_word(value, options, text) else "absent"


def _list_in_text(value: Any, text: str, restatement: bool) -> ValueFound:
    """A list said item by item (a match only if every item is), for ``value_in_text``."""
    # identifiers in a list are said by their numbers ("lots 7731 and 7732")
    results = [_identifier_in_text(item, text, True) if re.search(r"\d", item)
               else _tokens_in_text(item, text, restatement) for item in split_items(value)]
    if results and all(r == "match" for r in results):
        return "match"
    return "mismatch" if any(r != "absent" for r in results) else "absent"


def _interval_in_text(value: Any, text: str, reference: dt.date | None) -> ValueFound:
    """An interval said by both its ends (dates or numbers), for ``value_in_text``."""
    parts = _interval_parts(value)
    if parts is None:
        return "absent"
    ends = [value_in_text("normalized_date" if _is_date_like(p) else "numeric_tolerance",
                          p, text, reference=reference) for p in parts]
    if all(e == "match" for e in ends):
        return "match"
    return "mismatch" if any(e != "absent" for e in ends) else "absent"


def _free_value_in_text(value: Any, text: str, restatement: bool) -> ValueFound:
    """Any other value: an e-mail address, a time of day, else its words, for
    ``value_in_text``."""
    if "@" in _as_text(value):
        email = _email_in_text(value, text)
        if email != "absent":
            return email
    clock = _CLOCK_VALUE.fullmatch(_as_text(value).strip())
    if clock is not None:
        times = _times_in_text(text)
        if not times:
            return "absent"
        hour, minute = int(clock.group(1)) % 12, int(clock.group(2) or 0)
        return "match" if (hour, minute) in times else "mismatch"
    return _tokens_in_text(value, text, restatement)

_CLOCK_VALUE = re.compile(r"(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)", re.IGNORECASE)
"""A time of day as a value ("1:50 PM", "9 AM")."""


def clock_minutes(value: Any) -> int | None:
    """A value that is a time of day as minutes after midnight: "8 AM", "8:00 a.m.", "2:30
    PM", or a 24-hour "08:00" / "14:30"; None for anything else, "8:00" included (morning or
    evening?)."""
    text = str(value).strip() if isinstance(value, str) else ""
    m = _CLOCK_VALUE.fullmatch(text)
    if m:
        hour, minute = int(m.group(1)), int(m.group(2) or 0)
        if 1 <= hour <= 12 and minute < 60:
            return (hour % 12 + (12 if m.group(3)[0].lower() == "p" else 0)) * 60 + minute
        return None
    m = re.fullmatch(r"(\d{2}):(\d{2})", text)
    if m and int(m.group(1)) < 24 and int(m.group(2)) < 60:
        return int(m.group(1)) * 60 + int(m.group(2))
    return None


def _times_in_text(text: str) -> set[tuple[int, int]]:
    """Times of day said in ``text`` as (hour on a 12-hour clock, minute): "1:50", "one
    fifty", "two oh five PM", "three o'clock", "nine am". A listener who knows the time of day
    hears "one fifty" as 1:50 PM, so morning and afternoon are not told apart."""
    said = _words_to_digits(text)
    out: set[tuple[int, int]] = set()
    for m in re.finditer(r"\b(\d{1,2}):(\d{2})\b", said):
        out.add((int(m.group(1)) % 12, int(m.group(2))))
    for m in re.finditer(r"(?<![\d:])\b(\d{1,2}) (?:0 (\d)|(\d{2}))\b(?! ?\d)", said):
        hour = int(m.group(1))
        minute = int(m.group(2) or m.group(3))
        if 1 <= hour <= 12 and minute < 60:
            out.add((hour % 12, minute))
    for m in re.finditer(r"(?<!\d\s)(?<![\d:])\b(\d{1,2}) ?(?:o'?clock|[ap]\.?m\b\.?|in the "
                         r"(?:morning|afternoon|evening))", said, re.IGNORECASE):
        hour = int(m.group(1))
        if 1 <= hour <= 12:
            out.add((hour % 12, 0))
    for m in re.finditer(r"\b(half|quarter) (past|after|to) (\d{1,2})\b", said, re.IGNORECASE):
        hour, minute = int(m.group(3)), 30 if m.group(1).lower() == "half" else 15
        if m.group(2).lower() == "to":
            hour, minute = hour - 1, 60 - minute
        if 0 <= hour <= 12:
            out.add((hour % 12, minute))
    if re.search(r"\b(noon|midday)\b", said, re.IGNORECASE):
        out.add((0, 0))
    return out


EMAIL_SAID = re.compile(
    r"\S+@\S+"
    r"|\b[a-z0-9]+(?:(?:[\s,]*(?:\bdot\b|\bunderscore\b)[\s,]*|\.)[a-z0-9]+)*[\s,]+at[\s,]+"
    r"[a-z0-9]+(?:[\s,]+(?!dot\b)[a-z0-9]+){0,4}?[\s,]+dot\s+(?:com|org|net|co|io|edu|gov)\b",
    re.IGNORECASE)
"""An email address, written or said ("laura dot chen at fenwick foods dot com", "gloria, at
pine ridge dental, all one word, dot com")."""


def _email_in_text(value: Any, text: str) -> ValueFound:
    """An email address said or written, compared letter for letter with the words "at",
    "dot" and "underscore" and the spaces left out ("fenwick foods" is fenwickfoods); when no
    address said matches, "absent": the caller's words are then judged one by one."""
    def compact(s: str) -> str:
        s = re.sub(r"\b(at|dot|underscore|all one word|one word|no spaces)\b", " ", s.casefold())
        return "".join(ch for ch in s if ch.isalnum())

    # a word spelled out after it is said ("laura dot chen, C, H, E, N, at ...") is said once
    text = re.sub(r"\b([A-Za-z]{3,})([\s,]+(?:[A-Za-z][\s,]+){2,}[A-Za-z]\b,?)",
                  lambda m: m.group(1) if re.sub(r"[\s,]", "", m.group(2)).casefold()
                  == m.group(1).casefold() else m.group(0), text)
    spans = [m.group(0) for m in EMAIL_SAID.finditer(text)]
    target = compact(_as_text(value))
    if any(compact(sp) == target for sp in spans) or (spans and target in compact(text)):
        return "match"
    return "absent"  # judged word by word, as any other text


def _thousands_dropped(text: str, number: float) -> list[float]:
    """The numbers a text says in the short forms people use for round thousands, those
    equal to ``number`` only: "one eighty-five" (185 for 185,000), "one fifty K" (150,000),
    "two forty million" (240,000,000), "forty-eight two fifty" (48,250)."""
    t = _spoken_digits(text)
    out: list[float] = []
    scales = {"k": 1e3, "thousand": 1e3, "grand": 1e3, "million": 1e6, "mil": 1e6}
    # a number said in pairs, then a scale: "1 50 K", "2 40 million"
    for m in re.finditer(r"(?<![\d.,])\b(\d{1,2})\s(\d{2})\s?(k|thousand|grand|million|mil)\b",
                         t, re.IGNORECASE):
        out.append(float(m.group(1) + m.group(2)) * scales[m.group(3).casefold()])
    # "2 40000000" is how "two forty million" reads once "forty million" is a number
    for m in re.finditer(r"(?<![\d.,])\b(\d)\s(\d{2})(0{3}|0{6})\b", t):
        out.append(float(m.group(1) + m.group(2) + m.group(3)))
    # thousands, then the hundreds said in pairs: "48 2 50" (forty-eight two fifty)
    for m in re.finditer(r"(?<![\d.,])\b(\d{1,3})\s(\d)\s(\d{2})\b(?![.,]?\s?\d)", t):
        out.append(float(m.group(1)) * 1e3 + float(m.group(2) + m.group(3)))
    if number >= 1e4 and number % 1e3 == 0:  # "one eighty-five" base for 185,000
        out += [n * 1e3 for n in numbers_in_text(text) if 100 <= n < 1e3]
    return [n for n in out if n == number]


_OPTION_STOP = frozenset({"a", "an", "the", "my", "your", "our", "its"})


@lru_cache(maxsize=_TEXT_CACHE)
def _option_words(text: str) -> tuple[str, ...]:
    """A text's words, articles and the like aside (:func:`_option_words_said` compares
    every option with the same text: it is split once)."""
    return tuple(w for w in canonical_text(text).split() if w not in _OPTION_STOP)


def _option_words_said(option: str, text: str) -> bool:
    """An enum option's words said in order in ``text``, each as written, in the singular
    or plural, or shortened to its first three letters or more ("mic" for microphone),
    articles aside: "built-in mic" says "built-in microphone", "renew with an improvement
    plan" says "renew with improvement plan", "you'll need sponsorship" says "needs
    sponsorship"."""
    want, have = _option_words(option), _option_words(text)
    if not want or len(want) > len(have):
        return False

    def same(said: str, option_word: str) -> bool:
        if said == option_word or said.rstrip("s") == option_word.rstrip("s"):
            return True
        return len(said) >= 3 and len(option_word) > len(said) + 2 and option_word.startswith(
            said) and said.isalpha()

    return any(all(same(have[i + j], w) for j, w in enumerate(want))
               for i in range(len(have) - len(want) + 1))


def _other_option_word(value: Any, options: Sequence[str], text: str) -> bool:
    """A text says a word that only options other than ``value`` have ("the headset" when
    the value is "built-in microphone" and the others are USB and Bluetooth headsets)."""
    mine = {w.rstrip("s") for w in canonical_text(value).split()}
    others = {w.rstrip("s") for o in options if _compact(o) != _compact(value)
              for w in canonical_text(o).split() if len(w) >= 5} - mine
    return any(w.rstrip("s") in others for w in canonical_text(text).split())


def _yearless_days(text: str) -> set[tuple[int, int]]:
    """(month, day) of every date a text says without a year ("May thirty-first")."""
    out: set[tuple[int, int]] = set()
    for m in _DATES_IN_TEXT.finditer(_spoken_date_text(text)):
        said = re.sub(r"\b(?:the|of)\b", " ", m.group(0))
        if parse_spoken_date(said) is not None:
            continue
        day = parse_spoken_date(said, require_year=False, base_year=2000)
        if day is not None:
            out.add((day.month, day.day))
    return out


_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_PLAIN_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?")
_IDENTIFIER = re.compile(r"(?=[^ ]*[A-Za-z])(?=[^ ]*\d)[A-Za-z0-9][A-Za-z0-9_./-]*")
"""One token mixing letters and digits, e.g. INV-20419 or E4471."""


def argument_matches(expected: Any, given: Any) -> bool:
    """Whether a tool argument the agent gave equals an authored one: ISO dates by calendar
    day (so "June 2, 2027" matches "2027-06-02"), everything else case-folded text. Used by
    lookup tools in the Workbench and by required-action checks in grading. An authored
    number matches the one number the argument states, in digits or words and with or without
    its unit ("6 hours", "six" and 6.0 for 6 or "6"; "6 or 7" states no single number); a
    string of digits with a leading zero is an identifier ("007"), compared as text."""
    if is_empty(given):
        return False
    if (isinstance(expected, int | float) and not isinstance(expected, bool)) or (
            isinstance(expected, str) and _PLAIN_NUMBER.fullmatch(expected.strip())):
        return extract_number(given) == float(expected)
    if isinstance(expected, str) and _ISO_DAY.fullmatch(expected):
        target = parse_spoken_date(expected)
        if target is None:
            raise ValueError(f"authored argument {expected!r} is not a date")
        return parse_spoken_date(given) == target
    if isinstance(expected, str) and _IDENTIFIER.fullmatch(expected.strip()):
        # "INV20419", "inv 20419" and "INV-20419" name the same record.
        return canonical_identifier(given) == canonical_identifier(expected)
    return canonical_text(given) == canonical_text(expected)
