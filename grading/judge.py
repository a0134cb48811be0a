"""Two-tier semantic escalation (paper appendix C.3, D.5, E.2).

A field is first graded deterministically (:mod:`grading.fields`). A correct value
short-circuits to 1.0 with no judge call; an empty value scores 0 and is never judged; a
failure on a judge-eligible grader (exact, casefold_exact, enum, semantic, and
numeric_tolerance when no number could be read) goes to a temperature-0 LLM judge whose
verdicts are cached on disk, keyed by (judge version, field, pred, gold). With no judge
configured only the deterministic tier runs.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from grading.fields import extract_number, grade_spec, is_empty
from runtime.core.spec import FieldSpec

if TYPE_CHECKING:
    from openai import OpenAI

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL",
    "JUDGE_PROMPT",
    "JUDGE_VERSION",
    "FieldScore",
    "Judge",
    "JudgeCache",
    "JudgeConfigError",
    "JudgeError",
    "JudgeVerdict",
    "OpenAIJudge",
    "build_prompt",
    "cache_key",
    "default_cache_path",
    "judge_from_env",
    "numeric_hint",
    "parse_verdict",
    "score_field",
]

JUDGE_VERSION = "artifact-aware-3"

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o"

# Appendix E.2, word for word. The paper's typeset text turns ' into ’ and loses its line
# breaks; the straight quotes and the line breaks (where sentences ran together, e.g.
# "differ).PASS") are restored here. Literal braces are doubled for str.format.
JUDGE_PROMPT = (
    "You grade ONE field of a professional work artifact a voice agent produced (from a "
    "SPOKEN conversation), against a reference (gold) value. Decide whether the agent's value "
    "denotes the SAME thing as the reference, the way a reasonable professional reviewer "
    "would. Reward substance; forgive surface form (values were dictated aloud, so "
    "separators/case/formatting differ).\n"
    "PASS if they refer to the same fact/decision/answer/entity -- even if TERSER, omitting "
    "secondary detail, adding consistent detail, different wording, abbreviations/expansions"
    "('VP Eng'=='VP of Engineering', 'acct'=='act'=='account'), approximations of the same "
    "number ('~20'=='about 20'=='20'), affirmative/status phrasing ('Yes'=='filed',"
    "'done'=='completed'), or the same action (gold 'cleared cache and retried' vs 'cleared "
    "browser cache and cookies').\n"
    "IDENTIFIERS especially: ignore case, separators (- _ space .), leading zeros, and "
    "omitted/added type-prefixes -- these PASS: 'CC4419'=='CC-4419', 'act88'=='acct_88',"
    "'INV 771'=='INV-771', 'ref 3391'=='REF-3391', 'HVAC-007'=='HVAC-7', "
    "'2201'=='JOB-2201'.\n"
    "FAIL only if the agent's value: (1) is a DIFFERENT specific value/number/name/date/"
    "amount/decision or a DIFFERENT identifier; or (2) misses the reference's core meaning "
    "entirely; or (3) is empty.\n"
    "Use the other-fields context only to disambiguate; grade THIS field. When plausibly "
    "equivalent, PASS.\n"
    "Field: {field}\n"
    "Context: {ctx}\n"
    "Reference (gold): {gold!r}\n"
    "Agent wrote: {pred!r}\n"
    "{numeric}"
    'Return strict JSON: {{"pass": true|false, "why": "<short>"}}'
)
"""The E.2 prompt; ``{numeric}`` is empty or the numeric_tolerance line plus a newline."""


class JudgeError(RuntimeError):
    """The judge could not give a verdict (request failed, reply not strict JSON)."""


class JudgeConfigError(ValueError):
    """The judge is not configured (e.g. no API key in the environment)."""


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    """A judge decision; ``cached`` is True when it came from the on-disk cache."""

    passed: bool
    why: str
    cached: bool


@dataclass(frozen=True, slots=True)
class FieldScore:
    """Final score of one field; ``judged`` is True when the judge decided it."""

    score: float
    correct: bool
    judged: bool


class Judge(Protocol):
    """Anything that can decide whether ``pred`` denotes the same thing as ``gold``."""

    def judge(
        self,
        field: str,
        context: Mapping[str, Any],
        gold: Any,
        pred: Any,
        numeric_hint: str | None = None,
    ) -> JudgeVerdict: ...


# --------------------------------------------------------------------------- prompt, reply

def _context_text(context: Mapping[str, Any]) -> str:
    return json.dumps(dict(context), ensure_ascii=False, default=str)


def build_prompt(
    field: str,
    context: Mapping[str, Any],
    gold: Any,
    pred: Any,
    numeric_hint: str | None = None,
) -> str:
    """The E.2 prompt with the field, the artifact context (JSON), gold and pred filled in;
    ``numeric_hint`` adds one line before the JSON instruction."""
    numeric = f"{numeric_hint.strip()}\n" if numeric_hint else ""
    return JUDGE_PROMPT.format(
        field=field, ctx=_context_text(context), gold=gold, pred=pred, numeric=numeric
    )


def numeric_hint(gold: Any, tolerance: float) -> str:
    """The numeric_tolerance line: target and tolerance, so that spelled-out or hedged
    forms of a number within tolerance pass and a different number fails."""
    target = extract_number(gold)
    shown = gold if target is None else (int(target) if target.is_integer() else target)
    tol = int(tolerance) if float(tolerance).is_integer() else tolerance
    return (
        f"Numeric target: {shown} (tolerance +/-{tol}); PASS only if the agent's value "
        f"states a number within {tol} of {shown}."
    )


_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


def parse_verdict(field: str, reply: str | None) -> tuple[bool, str]:
    """Parse strict JSON ``{"pass": bool, "why": str}`` (code fences tolerated).

    Raises JudgeError naming the field and quoting the raw reply otherwise.
    """
    raw = reply or ""
    fenced = _FENCE.match(raw)
    body = fenced.group(1) if fenced else raw
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        raise JudgeError(f"judge reply for field {field!r} is not valid JSON: {raw!r}") from None
    if not isinstance(data, dict) or not isinstance(data.get("pass"), bool):
        raise JudgeError(
            f'judge reply for field {field!r} lacks a boolean "pass": {raw!r}'
        )
    why = data.get("why", "")
    return data["pass"], why if isinstance(why, str) else json.dumps(why)


def cache_key(value: Any) -> str:
    """Canonical text of a gold/pred value for the cache key (JSON, so 2 and "2" differ)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


# --------------------------------------------------------------------------- cache

class JudgeCache:
    """On-disk SQLite cache of judge verdicts keyed by (version, field, pred, gold).

    Safe for several processes: WAL journal, a busy timeout, one short transaction per
    operation. The first verdict stored for a key wins (later ones are ignored), so a
    replay reads back exactly what was first decided. Nothing touches the disk until the
    first lookup or store.
    """

    def __init__(self, path: Path, *, timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self._timeout_s = timeout_s
        self._ready = False
        self._lock = threading.Lock()

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if not self._ready:
                self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(self.path, timeout=self._timeout_s)) as conn:
            if not self._ready:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS verdicts ("
                    " version TEXT NOT NULL, field TEXT NOT NULL, pred TEXT NOT NULL,"
                    " gold TEXT NOT NULL, pass INTEGER NOT NULL, why TEXT NOT NULL,"
                    " created REAL NOT NULL,"
                    " PRIMARY KEY (version, field, pred, gold))"
                )
                conn.commit()
                self._ready = True
            with conn:  # one transaction, committed on exit
                yield conn

    def get(self, version: str, field: str, pred: str, gold: str) -> tuple[bool, str] | None:
        """The stored (pass, why), or None on a miss."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT pass, why FROM verdicts"
                " WHERE version = ? AND field = ? AND pred = ? AND gold = ?",
                (version, field, pred, gold),
            ).fetchone()
        return None if row is None else (bool(row[0]), str(row[1]))

    def put(
        self, version: str, field: str, pred: str, gold: str, passed: bool, why: str
    ) -> None:
        """Store a verdict unless one is already stored for this key."""
        with self._connect() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO verdicts (version, field, pred, gold, pass, why, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (version, field, pred, gold, int(passed), why, time.time()),
            )

    def __len__(self) -> int:
        with self._connect() as conn:
            (count,) = conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()
        return int(count)


# --------------------------------------------------------------------------- OpenAI judge

class OpenAIJudge:
    """The E.2 judge on an OpenAI-compatible chat completions endpoint, temperature 0.

    The cache is consulted first; on a miss the verdict is requested and stored. The
    constructor does no I/O: the HTTP client and the cache file are opened on first use.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        cache: JudgeCache | None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        version: str = JUDGE_VERSION,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.cache = cache
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.version = version
        self._api_key = api_key
        self._client: OpenAI | None = None

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIJudge(base_url={self.base_url!r}, model={self.model!r})"

    def _openai(self) -> OpenAI:
        if self._client is None:
            from openai import OpenAI

            self._client = OpenAI(
                base_url=self.base_url,
                api_key=self._api_key,
                timeout=self.timeout_s,
                max_retries=self.max_retries,
            )
        return self._client

    def judge(
        self,
        field: str,
        context: Mapping[str, Any],
        gold: Any,
        pred: Any,
        numeric_hint: str | None = None,
    ) -> JudgeVerdict:
        """Decide one field. An empty ``pred`` fails without a request (never judged)."""
        if is_empty(pred):
            return JudgeVerdict(False, "empty value", cached=False)
        key = (self.version, field, cache_key(pred), cache_key(gold))
        if self.cache is not None:
            hit = self.cache.get(*key)
            if hit is not None:
                return JudgeVerdict(hit[0], hit[1], cached=True)
        prompt = build_prompt(field, context, gold, pred, numeric_hint)
        from openai import OpenAIError

        try:
            response = self._openai().chat.completions.create(
                model=self.model,
                messages=[{"role": "user", "content": prompt}],
                temperature=0,
            )
        except OpenAIError as exc:
            raise JudgeError(f"judge request for field {field!r} failed: {exc}") from exc
        if not response.choices:
            raise JudgeError(f"judge reply for field {field!r} has no choices")
        passed, why = parse_verdict(field, response.choices[0].message.content)
        if self.cache is not None:
            self.cache.put(*key, passed, why)
        return JudgeVerdict(passed, why, cached=False)


def default_cache_path(env: Mapping[str, str]) -> Path:
    """``$APEX_JUDGE_CACHE``, else ``~/.cache/apex-voice/judge-cache.sqlite``."""
    if env.get("APEX_JUDGE_CACHE"):
        return Path(env["APEX_JUDGE_CACHE"]).expanduser()
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".cache" / "apex-voice" / "judge-cache.sqlite"


def judge_from_env(env: Mapping[str, str], cache_path: Path | None = None) -> OpenAIJudge:
    """Build the judge from ``APEX_JUDGE_BASE_URL``, ``APEX_JUDGE_MODEL`` and
    ``APEX_JUDGE_API_KEY`` (or ``OPENAI_API_KEY``). Raises JudgeConfigError without a key."""
    api_key = env.get("APEX_JUDGE_API_KEY") or env.get("OPENAI_API_KEY")
    if not api_key:
        raise JudgeConfigError(
            "no judge API key: set APEX_JUDGE_API_KEY (or OPENAI_API_KEY), or grade without "
            "a judge (deterministic tier only)"
        )
    return OpenAIJudge(
        base_url=env.get("APEX_JUDGE_BASE_URL") or DEFAULT_BASE_URL,
        api_key=api_key,
        model=env.get("APEX_JUDGE_MODEL") or DEFAULT_MODEL,
        cache=JudgeCache(cache_path if cache_path is not None else default_cache_path(env)),
    )


# --------------------------------------------------------------------------- scoring

def score_field(
    field: FieldSpec, pred: Any, *, judge: Judge | None, context: Mapping[str, Any],
    reference: dt.date | None = None,
) -> FieldScore:
    """Two-tier score of one field (D.5).

    Empty → 0, not judged. Deterministically correct → its score, no judge call. A failure
    the grader marks escalation-eligible goes to ``judge`` when there is one (1.0 or 0.0,
    judged). Otherwise the deterministic result stands; with no judge, semantic is just
    case-folded equality. ``reference`` is the task's reference date for year-less dates.
    """
    if is_empty(pred):
        return FieldScore(0.0, False, False)
    grade = grade_spec(field, pred, reference)
    if grade.correct or not grade.escalate or judge is None:
        return FieldScore(grade.score, grade.correct, False)
    hint = None
    if field.grader == "numeric_tolerance":
        hint = numeric_hint(field.gold, field.tolerance)
    verdict = judge.judge(field.name, context, field.gold, pred, numeric_hint=hint)
    return FieldScore(1.0 if verdict.passed else 0.0, verdict.passed, True)
