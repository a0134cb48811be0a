"""Reading typed values out of what the caller said, for the baseline's rule policy.

Pure functions over transcript text (and, for knowledge-base reads, over returned document
text): no audio, no model, no task gold. The canonicalizers are the graders' own pure helpers
(:mod:`grading.fields`), so a value written here is in the form a grader reads.

Corrections: the later value wins. A transcript is cut at correction markers ("actually",
"sorry, no", "I mean", "wait") and the last piece that yields a value is used; "…, not X" and
"instead of X" clauses are dropped first, so "June 11th, not the 13th" reads June 11th.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from text_to_num import alpha2digit

from runtime.core.values import canonical_phone, extract_number, parse_spoken_date

FieldKind = Literal["date", "time", "phone", "number", "identifier", "enum", "text"]

YearRule = int | Callable[[int, int], int]
"""The year of a date said without one: a fixed year, or a function of (month, day)."""

# --------------------------------------------------------------------------- intents

_APPROVE = re.compile(
    r"\b(yes|yeah|yep|yup|sure|go ahead|go for it|please do|please (submit|send|file|commit)"
    r"|(submit|send|file|commit|book) it|do it|sounds (good|right|great)|that'?s (right|correct|"
    r"fine|perfect)|correct|perfect|ok(ay)?|absolutely|of course|approved?|confirm(ed)?)\b",
    re.IGNORECASE,
)
_REVOKE = re.compile(
    r"\b(no|nope|don'?t|do not|wait|hold on|hold off|stop|cancel|not yet|never ?mind|"
    r"scratch that|withdraw)\b",
    re.IGNORECASE,
)
_DONT_KNOW = re.compile(
    r"\b(don'?t know|do not know|no idea|not sure|have(n'?t| not) (read|seen|checked)|"
    r"never (read|seen|checked|looked)|can you (look|check|find)|could you (look|check|find)|"
    r"look (it|that|them) up|isn'?t (that|it) in|you tell me|hoping you (could|would|can) tell|"
    r"no clue|what does (it|the \w+) say|that'?s (your|in the) \w+|not mine|"
    r"you('d| would) know|you have (that|it))\b",
    re.IGNORECASE,
)
_CLARIFY = re.compile(
    r"\b(what was that|what did you say|repeat( that| the question)?|say (that|it) again|"
    r"didn'?t (catch|hear|get) (that|it|you)|come again|pardon|what was the question|"
    r"what do you need)\b",
    re.IGNORECASE,
)
_GOODBYE = re.compile(r"\b(bye|goodbye|good-bye|bye-bye|talk (to you )?later)\b", re.IGNORECASE)


def is_revocation(text: str) -> bool:
    """The caller withholds or withdraws an approval ("wait, don't submit it")."""
    return bool(_REVOKE.search(text))


def is_approval(text: str) -> bool:
    """The caller approves ("yes, go ahead") and does not withhold it in the same breath."""
    return bool(_APPROVE.search(text)) and not is_revocation(text)


def is_dont_know(text: str) -> bool:
    return bool(_DONT_KNOW.search(text))


def is_clarification(text: str) -> bool:
    """The caller asks what was said instead of answering."""
    return bool(_CLARIFY.search(text))


def is_question_reply(text: str) -> bool:
    """The caller answers with a question ("What does it say?"): not a value."""
    last = [p for p in re.split(r"(?<=[.!?])\s+", text.strip()) if p.strip()]
    return bool(last) and last[-1].rstrip().endswith("?") and len(last) <= 2


def is_goodbye(text: str) -> bool:
    return bool(_GOODBYE.search(text))


# --------------------------------------------------------------------------- corrections

_CORRECTION_MARKER = re.compile(
    r"\b(?:actually|sorry,? no|oh,? no|no,? sorry|no,? wait|wait,? no|i mean|i meant|"
    r"rather|correction|scratch that|let me correct|make (?:it|that)|wait|sorry)\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(
    r"(?:,\s*|\s+)(?:not|instead of|rather than)\s+(?:the\s+|a\s+|an\s+)?[^,.;!?]*", re.IGNORECASE
)


def drop_negated(text: str) -> str:
    """Remove "…, not X" / "instead of X" / "rather than X" clauses."""
    return _NEGATED.sub("", text)


def correction_segments(text: str) -> list[str]:
    """Pieces to try for a value, latest first: the text after each correction marker (the
    last marker first), then the whole text."""
    clean = drop_negated(text)
    cuts = [m.end() for m in _CORRECTION_MARKER.finditer(clean)]
    pieces = [clean[c:] for c in reversed(cuts) if clean[c:].strip(" ,.!?")]
    return [*pieces, clean]


# --------------------------------------------------------------------------- numbers, digits

def spoken_to_digits(text: str) -> str:
    """Number words to digits with text2num ("twenty twenty-seven" → "20 27"), and years an
    ASR wrote in two halves back together ("2020-27" → "2027", "1980-8" → "1988")."""
    text = re.sub(r"\b(19|20)20-(\d{2})\b", r"\1\2", text)
    text = re.sub(r"\b(19|20)([1-9])0-([1-9])\b", r"\1\2\3", text)
    text = re.sub(  # "a three-year term" → "a three year term"
        r"(?<=[a-z])-(?=(?:year|month|week|day|hour|minute|night|person|people|seat|percent|"
        r"dollar|mile|page|user)s?\b)", " ", text, flags=re.IGNORECASE,
    )
    return str(alpha2digit(text, "en", threshold=0))


def _fmt_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


_NUM_TOKEN = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")


def read_number(text: str) -> str | None:
    """The one number a piece of speech states ("twelve hundred" → "1200"); when several
    are stated, the first; None when none."""
    digits = re.sub(r"\b\d+(?:st|nd|rd|th)\b", " ", spoken_to_digits(text))  # not ordinals
    for sentence in [digits, *reversed(split_prose(digits))]:  # whole, then latest sentence
        single = extract_number(sentence)
        if single is not None:
            return _fmt_number(single)
    found = _NUM_TOKEN.findall(digits.replace("%", " "))
    for token in found:
        try:
            return _fmt_number(float(token.replace(",", "")))
        except ValueError:
            continue
    return None


def read_identifier(text: str) -> str | None:
    """An identifier dictated as letters and digits ("E, 4, 4, 7, 1", "E-4471"): the longest
    run of letter/digit groups holding a digit, upper-cased, separators dropped."""
    digits = spoken_to_digits(text)
    best = ""
    for m in re.finditer(
        r"(?<![\w'’])(?:[A-Z]{1,3}\b[\s,.\-]+)?(?<![\w'’])(?:[A-Za-z]*\d[A-Za-z\d]*[\s,.\-]*)+",
        digits,
    ):
        run = re.sub(r"[^A-Za-z\d]", "", m.group(0)).upper()
        if any(ch.isdigit() for ch in run) and len(run) > len(best):
            best = run
    return best if len(best) >= 2 else None


def read_phone(text: str) -> str | None:
    """A dictated phone number in E.164 form ("four one five, five five five, …")."""
    digits = spoken_to_digits(text)
    digits = re.sub(r"\b(?:oh|o)\b", "0", digits, flags=re.IGNORECASE)
    best: str | None = None
    for m in re.finditer(r"\+?\d[\d\s,.\-()]*\d", digits):
        phone = canonical_phone(m.group(0))
        if phone is not None and (best is None or len(phone) > len(best)):
            best = phone
    return best


# --------------------------------------------------------------------------- dates

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11,
    "nov": 11, "december": 12, "dec": 12,
}
_MONTH_RX = "|".join(sorted(_MONTHS, key=len, reverse=True))
_YEAR_RX = r"(?:\d{4}|\d{2}\s\d{2}|\d{2}\s0\s?\d)"
_DATE_PATTERNS = [
    re.compile(r"\b(?P<iso>\d{4}-\d{2}-\d{2})\b"),
    re.compile(r"(?<![\d/])(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4}|\d{2})(?![\d/])"),
    re.compile(
        rf"\b(?P<month>{_MONTH_RX})\.?\s+(?:the\s+)?(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\b"
        rf"(?:,?\s+(?:of\s+)?(?P<year>{_YEAR_RX})\b)?",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\b(?:the\s+)?(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?:of\s+)?(?P<month>{_MONTH_RX})\b"
        rf"(?:,?\s+(?P<year>{_YEAR_RX})\b)?",
        re.IGNORECASE,
    ),
]
_LONE_YEAR = re.compile(r"\b(?:19|20)\d{2}\b|\b(?:19|20)\s\d{2}\b")


@dataclass(frozen=True)
class SpokenDate:
    start: int
    month: int
    day: int
    year: int | None


def _year(text: str | None) -> int | None:
    if not text:
        return None
    digits = re.sub(r"\s+", "", text)
    if len(digits) == 2:
        return 2000 + int(digits)
    if len(digits) == 3:  # "20 0 5" said as "twenty oh five"
        digits = digits[:2] + "0" + digits[2]
    return int(digits) if len(digits) == 4 else None


def spoken_dates(text: str) -> list[SpokenDate]:
    """Every date mention, in order, with its year when one was said."""
    t = spoken_to_digits(text)
    found: list[SpokenDate] = []
    taken: list[tuple[int, int]] = []
    for rx in _DATE_PATTERNS:
        for m in rx.finditer(t):
            if any(m.start() < e and m.end() > s for s, e in taken):
                continue
            g = m.groupdict()
            try:
                if g.get("iso"):
                    d = dt.date.fromisoformat(g["iso"])
                    item = SpokenDate(m.start(), d.month, d.day, d.year)
                elif g.get("month") and not g["month"].isdigit():
                    item = SpokenDate(m.start(), _MONTHS[g["month"].lower()], int(g["day"]),
                                      _year(g.get("year")))
                else:
                    y = _year(g["y"]) if g.get("y") else None
                    item = SpokenDate(m.start(), int(g["m"]), int(g["d"]), y)
            except (KeyError, ValueError):
                continue
            taken.append((m.start(), m.end()))
            found.append(item)
    found.sort(key=lambda d: d.start)
    # A year said once for a range ("June 2nd to June 13th, 2027") applies to both ends.
    if found and any(d.year is None for d in found):
        years = [d.year for d in found if d.year is not None]
        if not years:
            lone = _LONE_YEAR.findall(t)
            years = [y for y in (_year(x) for x in lone) if y is not None]
        if years:
            found = [
                d if d.year is not None else SpokenDate(d.start, d.month, d.day, years[-1])
                for d in found
            ]
    return found


def resolve_dates(text: str, base_year: YearRule) -> list[dt.date]:
    """:func:`spoken_dates` as calendar dates; a missing year comes from ``base_year``."""
    out: list[dt.date] = []
    for d in spoken_dates(text):
        year = d.year
        if year is None:
            year = base_year(d.month, d.day) if callable(base_year) else base_year
        try:
            out.append(dt.date(year, d.month, d.day))
        except ValueError:
            continue
    return out


def read_date(text: str, base_year: YearRule, *, context: str = "") -> str | None:
    """The last date stated, ISO; None when none. A piece that states only a year ("no, it was
    2022") corrects the year of the last date in ``context`` (the whole utterance)."""
    dates = resolve_dates(text, base_year)
    if dates:
        return dates[-1].isoformat()
    years = _LONE_YEAR.findall(spoken_to_digits(text))
    earlier = resolve_dates(context, base_year) if context and years else []
    year = _year(years[-1]) if years else None
    if earlier and year is not None:
        with contextlib.suppress(ValueError):
            return earlier[-1].replace(year=year).isoformat()
    parsed = parse_spoken_date(text)
    return parsed.isoformat() if parsed is not None else None


# --------------------------------------------------------------------------- times

_TIME = re.compile(
    r"\b(?P<h>\d{1,2})(?:(?:[:.]|\s)?\s*(?P<m1>\d)\s?(?P<m2>\d))?\s*(?P<ap>[ap])\.?\s?m\b\.?",
    re.IGNORECASE,
)
_CLOCK = re.compile(r"\b(?P<h>\d{1,2}):(?P<m>\d{2})\b")


def read_time(text: str) -> str | None:
    """The last clock time stated, written as people write it ("two oh five PM" → "2:05 PM",
    "14:30" → "14:30"); None when none."""
    t = re.sub(r"\b(?:oh|o)\b", "0", spoken_to_digits(text), flags=re.IGNORECASE)
    found = list(_TIME.finditer(t))
    if found:
        m = found[-1]
        hour = int(m.group("h"))
        minutes = f"{m.group('m1')}{m.group('m2')}" if m.group("m1") else "00"
        if 1 <= hour <= 12 and int(minutes) < 60:
            return f"{hour}:{minutes} {m.group('ap').upper()}M"
    clocks = list(_CLOCK.finditer(t))
    if clocks:
        m = clocks[-1]
        if int(m.group("h")) < 24 and int(m.group("m")) < 60:
            return f"{int(m.group('h'))}:{m.group('m')}"
    return None


# --------------------------------------------------------------------------- names and text

def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


COMMON_WORDS = _wordset("""
a about actually after again all also am an and any anything are as at be because been
before but by can could did do does don't done either else even every for from get go going
good got great had has have he he'd hello her here hey hi him his how i i'd i'll i'm i've
if in is isn't it it's its just let let's like look make maybe me mine my myself no nope
not now of oh ok okay on one only or our out please perfect pretty probably right said same
say see she should so some sorry still sure that that's the their them then there these
they this those though thanks thank to today too uh um us very want was we we'd we'll we're
well were what what's when where which who will with would yeah yes yep you you'd you're
your yours honestly wait hold hmm just great fine cool alright actually also first second
last next monday tuesday wednesday thursday friday saturday sunday january february march
april may june july august september october november december zero two three four five six
seven eight nine ten eleven twelve hundred thousand spelled spell with without hang
wrong first
""")
"""Sentence-initial words that are not names ("Sure", "That's", "Two")."""

_HONORIFICS = frozenset({"dr", "mr", "mrs", "ms", "mx", "prof"})
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’\-]*\.?|\d+|[,.;:!?]")


def proper_noun_spans(text: str) -> list[str]:
    """Every run of capitalized words in ``text`` (see :func:`proper_noun_span`)."""
    tokens = _TOKEN.findall(text)
    spans: list[list[str]] = []
    current: list[str] = []
    sentence_start = True
    pending_and = False
    for tok in tokens:
        if tok in {",", ";", ":"}:
            if current and not pending_and:
                spans.append(current)
                current = []
            sentence_start = False
            continue
        if tok in {".", "!", "?"}:
            if current:
                spans.append(current)
                current = []
            sentence_start, pending_and = True, False
            continue
        bare = tok.rstrip(".").replace("’", "'")
        low = bare.lower()
        capital = bare[:1].isupper()
        is_name = (
            capital and len(bare) > 1 and not bare.isdigit()
            and (low in _HONORIFICS or not (low in COMMON_WORDS and (sentence_start
                                                                       or low in {"i", "i'm"})))
            and low not in {"i", "i'm", "i'd", "i'll", "i've"}
        )
        if is_name:
            if pending_and and current:
                current.append("and")
            current.append(tok if low in _HONORIFICS else bare)
            pending_and = False
            if tok.endswith(".") and low not in _HONORIFICS:  # "… Brooks. Brooks with …"
                spans.append(current)
                current = []
        elif low == "and" and current:
            pending_and = True
        else:
            if current:
                spans.append(current)
                current = []
            pending_and = False
        sentence_start = tok.endswith(".") and low not in _HONORIFICS
    if current:
        spans.append(current)
    return [" ".join(span) for span in spans]


def proper_noun_span(text: str, avoid: Iterable[str] = ()) -> str | None:
    """The longest run of capitalized words (joined across "and"), e.g. "Jamie Reyes and
    Casey Reyes", "Dr. Alvarez", "HDHP"; sentence-initial common words ("That's", "Sure")
    and single letters ("R, E, Y, E, S") are not names. Spans in ``avoid`` (values already
    given for other fields) are passed over. None when there is none."""
    taken = {_norm(a) for a in avoid}
    spans = [sp for sp in proper_noun_spans(text) if _norm(sp) not in taken]
    if not spans:
        return None
    return max(spans, key=lambda sp: len(sp.split()))  # max keeps the first of equal length


_LEADING_FILLER = re.compile(
    r"^(?:(?:um+|uh+|so|well|oh|okay|ok|yes|yeah|yep|sure|just|and|i think|i guess|honestly|"
    r"it'?s|it is|it was|that'?s|that is|that would be|it would be|they are|they'?re|"
    r"i'?d like|i would like|i'?ll go with|i'?ll take|let'?s do|let'?s go with|we'?re|we are|"
    r"i'?m|i am|going on|going to|my|our|the|a|an|for|to|please)\b[\s,]*)+",
    re.IGNORECASE,
)
_TRAILING_FILLER = re.compile(
    r"(?:[\s,]+(?:please|thanks|thank you|i think|now|then|for me|is fine|is good))+$",
    re.IGNORECASE,
)


def clean_answer(text: str, label_words: Iterable[str] = ()) -> str:
    """A free-text answer without leading fillers ("It's a family trip." → "family trip"),
    the field's own label words, or trailing politeness."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip(" .!?,")]
    if not sentences:
        return ""
    best = sentences[0]
    out = best.strip().rstrip(".!?").strip()
    for _ in range(3):
        out = _LEADING_FILLER.sub("", out).strip(" ,")
        out = _TRAILING_FILLER.sub("", out).strip(" ,")
    label = {w.lower() for w in label_words}
    words = out.split()
    while words and words[-1].lower().strip(",") in label:  # "standard dental plan"
        words.pop()
    return " ".join(words).strip(" ,")


# --------------------------------------------------------------------------- enum options

def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def read_option(text: str, options: Sequence[str]) -> str | None:
    """The option named in ``text`` (the last one named, longest names matched first so
    "non-birth parent" is not read as "birth parent"); None when none is named."""
    hay = f" {_norm(text)} "
    hits: list[tuple[int, str]] = []
    for opt in sorted(options, key=lambda o: -len(_norm(o))):
        needle = f" {_norm(opt)} "
        start = hay.find(needle)
        while start >= 0:
            hits.append((start, opt))
            hay = hay[:start + 1] + "#" * (len(needle) - 2) + hay[start + len(needle) - 1:]
            start = hay.find(needle)
    if not hits:
        compact = hay.replace(" ", "")  # "sales force connector" ~ "Salesforce connector"
        hits = [(compact.find(_norm(o).replace(" ", "")), o) for o in options
                if _norm(o) and _norm(o).replace(" ", "") in compact]
    if not hits:
        return None
    return max(hits)[1]


# --------------------------------------------------------------------------- one field

def read_value(
    kind: FieldKind, text: str, *, options: Sequence[str] = (), label_words: Iterable[str] = (),
    base_year: YearRule = 2000, avoid: Iterable[str] = (),
) -> str | None:
    """The value of a field of ``kind`` in one caller utterance, the latest correction
    winning; None when the utterance states none. ``avoid``: values of other fields, never
    taken as this field's free-text answer."""
    label = {w.lower() for w in label_words}
    avoid = list(avoid)
    if kind == "text" and is_question_reply(text):
        return None
    for piece in correction_segments(text):
        value: str | None
        if kind == "date":
            value = read_date(piece, base_year, context=text)
        elif kind == "phone":
            value = read_phone(piece)
        elif kind == "time":
            value = read_time(piece)
        elif kind == "number":
            value = read_number(piece)
        elif kind == "identifier":
            value = read_identifier(piece)
        elif kind == "enum":
            value = read_option(piece, options)
        else:
            value = proper_noun_span(piece, avoid)
            if value is None:
                cleaned = clean_answer(piece, label)
                value = cleaned if cleaned and _norm(cleaned) not in {_norm(a) for a in avoid} \
                    else None
        if value:
            return value
    return None


# --------------------------------------------------------------------------- documents

_DOC_STOP = _wordset("""
a an and are as at be by for from in is it its of on or that the this to with
your their may must can will
""")


def stem(word: str) -> str:
    """A crude stem for matching labels against prose: lower case, no plural "s", no common
    suffix, first six letters ("percentage" ~ "percent", "weeks" ~ "week", "monthly" ~
    "month"; "premium" ≠ "premier")."""
    w = word.lower()
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    for suffix in ("ation", "ment", "ing", "ed", "ly", "age"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            w = w[: -len(suffix)]
            break
    return w[:6]


def stems(text: str) -> set[str]:
    return {stem(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _DOC_STOP}


def split_prose(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


@dataclass(frozen=True)
class _Band:
    lo: float
    hi: float
    unit: str
    numbers: tuple[str, ...]


_BANDS = [
    (re.compile(r"\b(?:from|between)\s+(\d+(?:\.\d+)?)\s+(?:to|and)\s+(\d+(?:\.\d+)?)\s+(\w+)",
                re.IGNORECASE), "range"),
    (re.compile(r"\b(?:under|less than|fewer than|below)\s+(\d+(?:\.\d+)?)\s+(\w+)",
                re.IGNORECASE), "below"),
    (re.compile(r"\b(?:more than|over|above)\s+(\d+(?:\.\d+)?)\s+(\w+)", re.IGNORECASE), "above"),
    (re.compile(r"\b(\d+(?:\.\d+)?)\s+or more\s+(\w+)", re.IGNORECASE), "at_least"),
]


def _bands(sentence: str) -> list[_Band]:
    out: list[_Band] = []
    for rx, kind in _BANDS:
        for m in rx.finditer(sentence):
            g = m.groups()
            if kind == "range":
                out.append(_Band(float(g[0]), float(g[1]), stem(g[2]), (g[0], g[1])))
            elif kind == "below":
                out.append(_Band(float("-inf"), float(g[0]) - 1e-9, stem(g[1]), (g[0],)))
            elif kind == "above":
                out.append(_Band(float(g[0]) + 1e-9, float("inf"), stem(g[1]), (g[0],)))
            else:
                out.append(_Band(float(g[0]), float("inf"), stem(g[1]), (g[0],)))
    return out


def _phrase_in(phrase: str, sentence: str) -> bool:
    p = re.escape(_norm(phrase))
    return bool(p) and re.search(rf"(?<![\w-]){p}(?![\w-])", sentence.lower()) is not None


def _number_in_sentence(sentence: str, label: set[str], excluded: set[str]) -> str | None:
    t = spoken_to_digits(sentence)
    found = [
        (m.group(1), stem(m.group(2) or ""))
        for m in re.finditer(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]\w)(?:\s*%|\s+([a-z]+))?", t,
                             re.IGNORECASE)
        if m.group(1) not in excluded
    ]
    if not found:
        return None
    with_unit = [n for n, unit in found if unit and unit in label]
    if with_unit:
        return with_unit[0]
    return found[0][0] if len(found) == 1 else None


def read_from_documents(
    kind: FieldKind, label_words: Iterable[str], documents: Sequence[str], *,
    options: Sequence[str] = (), known_values: Sequence[str] = (),
    known_numbers: Sequence[tuple[frozenset[str], float]] = (),
    context_words: frozenset[str] = frozenset(), base_year: YearRule = 2000,
) -> str | None:
    """A field value read from retrieved documents by a simple rule, or None.

    The sentence that names most of the field's label words wins; among those, the one naming
    most of the values already recorded (e.g. the chosen plan) or whose numeric condition a
    recorded number satisfies ("from 2 to 5 years of service"); a sentence whose condition
    contradicts a recorded number ("7 or more years") is skipped; remaining ties go to the
    sentence sharing most words with the task context, and a tie even then between different
    values gives None. The value is then read from that sentence: a number (the one followed
    by a label word, else the only one), a date, an identifier, an option, or for free text
    the phrase after a colon ("Recommendation …: take the full paid leave first …").
    Anything else — arithmetic, tables, inference across sentences — it cannot do.
    """
    label = {stem(w) for w in label_words if w.lower() not in _DOC_STOP and len(w) > 2}
    candidates: list[tuple[tuple[int, int, int], str]] = []
    for doc in documents:
        for sentence in split_prose(doc):
            toks = stems(sentence)
            hits = len(label & toks)
            if hits == 0:
                continue
            bands = _bands(spoken_to_digits(sentence))
            consistent = True
            satisfied = 0
            excluded: set[str] = set()
            for band in bands:
                values = [v for words, v in known_numbers if band.unit in words]
                if not values:
                    continue
                excluded.update(band.numbers)
                if any(band.lo <= v <= band.hi for v in values):
                    satisfied += 1
                else:
                    consistent = False
            if not consistent:
                continue
            value: str | None
            if kind == "number":
                value = _number_in_sentence(sentence, label, excluded)
            elif kind == "date":
                value = read_date(sentence, base_year)
            elif kind == "identifier":
                value = read_identifier(sentence)
            elif kind == "phone":
                value = read_phone(sentence)
            elif kind == "enum":
                value = read_option(sentence, options)
            else:
                head, colon, tail = sentence.partition(":")
                value = None
                if colon and label & stems(head):
                    value = re.split(r"[,;.]", tail, maxsplit=1)[0].strip() or None
            if value is None:
                continue
            known = sum(1 for v in known_values if _phrase_in(v, sentence))
            candidates.append(((hits, known + satisfied, len(context_words & toks)), value))
    if not candidates:
        return None
    top = max(score for score, _ in candidates)
    tied = {value for score, value in candidates if score == top}
    return tied.pop() if len(tied) == 1 else None  # a tie between values: can't tell
