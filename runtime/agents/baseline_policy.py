"""The baseline's dialogue policies: what to say and which tools to call, turn by turn.

A policy sees only what every evaluated agent gets (:class:`AgentSessionConfig`): the shared
instruction with the task's agent-visible context, and the tool schemas. :class:`TaskView`
reads from those the artifacts, their fields (name and label from the update tool's schema,
options and instructed values from the context), the knowledge-base, ready, approval-gated
and lookup tools. Gold values, user facts, plans and the grading spec are never available.

A turn is a generator of :data:`Step` s. The adapter (:mod:`runtime.agents.baseline`) drives
it: a :class:`CallTool` step is resumed with the tool's result, :class:`AwaitPlayout` with
whether the speech so far was heard to the end (False when the caller cut in), the others
with None.

:class:`RulePolicy` is the default, deterministic policy: greet; ask for missing fields one at
a time by label; read typed values from the transcript (:mod:`.baseline_extract`); apply
corrections, also when the caller names a field out of turn ("the end date should be June
11th"); search the knowledge base for fields the caller cannot answer; run lookups when their
arguments are known; set instructed values; mark the artifact ready; ask for approval before
an approval-gated tool and commit only after a yes, announcing the commit first so that the
caller can still stop it; respect a revocation; say goodbye and hang up.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from runtime.agents.base import AgentSessionConfig
from runtime.agents.baseline_extract import (
    FieldKind,
    YearRule,
    is_approval,
    is_clarification,
    is_dont_know,
    is_goodbye,
    is_revocation,
    proper_noun_span,
    read_from_documents,
    read_option,
    read_value,
    resolve_dates,
    stem,
    stems,
)

# --------------------------------------------------------------------------- steps


@dataclass(frozen=True)
class Say:
    """Speak ``text`` (synthesized, with a transcript)."""

    text: str


@dataclass(frozen=True)
class CallTool:
    """Call a Workbench tool; the turn resumes with its result (``{"error": …}`` on failure)."""

    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class AwaitPlayout:
    """Wait until what was said so far has played out; resumes with False if the caller cut
    in first (barge-in), True otherwise."""


@dataclass(frozen=True)
class HangUp:
    pass


Step = Say | CallTool | AwaitPlayout | HangUp
Turn = Generator[Step, Any, None]


class DialoguePolicy(Protocol):
    """Decides each agent turn. Every method returns quickly except where it calls a model."""

    def opening(self) -> Turn:
        """The agent's first turn, when the call connects."""
        ...

    def on_user(self, transcript: str) -> Turn:
        """The caller finished an utterance (``transcript`` may be empty)."""
        ...

    def on_silence(self, silent_ms: int) -> Turn | None:
        """Nobody has spoken for ``silent_ms``; None to keep waiting."""
        ...

    def on_interrupted(self, heard_ms: int) -> None:
        """The caller barged in: only ``heard_ms`` of the last speech was heard."""
        ...


def _nothing() -> Turn:
    return
    yield  # a generator that yields nothing


# --------------------------------------------------------------------------- the task view

FieldKey = tuple[str, str]

_GENERIC = frozenset({"date", "number", "name", "id", "the", "of", "your", "my", "a", "an",
                      "type", "and", "or", "for", "in", "to", "s", "field"})
_NUMBER_WORDS = frozenset({
    "count", "pct", "percent", "percentage", "years", "weeks", "days", "months", "hours",
    "minutes", "amount", "contribution", "premium", "cost", "price", "fee", "total", "salary",
    "rate", "quantity", "age", "budget", "score", "tenure", "balance", "deductible",
})
_DATE_WORDS = frozenset({"date", "dob", "birthday", "born"})
_PHONE_WORDS = frozenset({"phone", "telephone", "mobile", "cell", "fax"})
_ID_WORDS = frozenset({"id", "code", "reference", "ref"})
_CORRECTION_CUE = re.compile(
    r"\b(actually|sorry|wait|hold on|i mean|i meant|instead|rather|not|no|wrong|correction|"
    r"change|make (it|that)|should be|moved|old one|update)\b", re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(?:not|instead of|rather than)\s+((?:the\s+|a\s+|an\s+)?[^,.;!?]+)",
                       re.IGNORECASE)


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


_PERSON_WORDS = frozenset({
    "manager", "colleague", "beneficiary", "provider", "doctor", "physician", "sponsor",
    "supervisor", "approver", "owner", "assignee", "contact", "representative", "witness",
    "referrer", "guarantor", "landlord", "tenant", "attorney", "agent", "pcp",
})
_PAST_WORDS = frozenset({"birth", "born", "dob", "birthday", "employment", "hire", "hired",
                         "joined", "incident", "occurred", "purchase", "purchased"})


@dataclass
class FieldInfo:
    artifact: str
    name: str
    label: str
    kind: FieldKind
    options: list[str] = field(default_factory=list)
    instructed: str | None = None
    """A value the context tells the agent to set ("set status to submitted")."""
    gloss: str = ""
    """The context's parenthetical about the field ("completed years of service")."""

    @property
    def key(self) -> FieldKey:
        return (self.artifact, self.name)

    @property
    def words(self) -> set[str]:
        """Distinctive words of the name and label."""
        raw = re.findall(r"[a-z0-9]+", f"{self.name.replace('_', ' ')} {self.label}".lower())
        return {w for w in raw if w not in _GENERIC}

    @property
    def role(self) -> Literal["start", "end", ""]:
        w = set(re.findall(r"[a-z]+", f"{self.name.replace('_', ' ')} {self.label}".lower()))
        if w & {"start", "from", "begin", "first"}:
            return "start"
        if w & {"end", "until", "last", "finish", "through"}:
            return "end"
        return ""


@dataclass
class ArtifactInfo:
    id: str
    update_tool: str
    noun: str
    fields: list[FieldInfo]


@dataclass
class LookupInfo:
    name: str
    params: list[tuple[str, bool]]
    """(name, required)."""


def _kind(name: str, label: str, gloss: str, options: list[str]) -> FieldKind:
    words = set(re.findall(r"[a-z]+", f"{name.replace('_', ' ')} {label} {gloss}".lower()))
    label_low = label.lower()
    if words & _PHONE_WORDS:
        return "phone"
    if words & _DATE_WORDS:
        return "date"
    if words & {"time", "clock"} and not words & _NUMBER_WORDS:
        return "time"
    if options:
        return "enum"
    if label_low.startswith(("number of", "how many")) or words & _NUMBER_WORDS:
        return "number"
    if name.endswith("_id") or words & _ID_WORDS or re.search(r"\bnumber\b", label_low):
        return "identifier"
    return "text"


def _options(inner: str) -> list[str]:
    """Allowed values listed in the context ("leave_type (vacation, sick or parental)",
    "(one of: a, b, c)"); a parenthetical without "or"/"one of" is a description."""
    listed = re.match(r"^\s*(?:one of|either)\b", inner, flags=re.IGNORECASE) is not None
    text = re.sub(r"^\s*(?:one of|either)\s*:?\s*", "", inner.strip(), flags=re.IGNORECASE)
    if not (listed or re.search(r"\bor\b", text)):
        return []
    items = [i.strip(" .") for i in re.split(r",\s*(?:or\s+)?|\s+or\s+", text) if i.strip(" .")]
    if not 2 <= len(items) <= 8 or any(len(i.split()) > 4 for i in items):
        return []
    return items


@dataclass
class TaskView:
    """What the baseline knows about the task, read from the agent-visible session config."""

    context: str
    role: str | None
    artifacts: list[ArtifactInfo]
    kb_tool: str | None
    ready_tool: str | None
    gated_tools: list[str]
    lookups: list[LookupInfo]
    today: dt.date | None = None
    """The date the instructions state ("Today's date: Tuesday, June 1, 2027.")."""

    @classmethod
    def from_config(cls, config: AgentSessionConfig) -> TaskView:
        _, sep, tail = config.instructions.partition("TASK CONTEXT:")
        context = " ".join((tail if sep else "").split())
        role_m = re.search(r"\bYou are (the [^.]+?)\.", context)
        artifacts: list[ArtifactInfo] = []
        kb_tool = ready_tool = None
        gated: list[str] = []
        lookups: list[LookupInfo] = []
        for schema in config.tools:
            fn = schema.get("function", schema)
            name = str(fn.get("name", ""))
            desc = str(fn.get("description", ""))
            params = fn.get("parameters", {}) or {}
            props: dict[str, Any] = params.get("properties", {}) or {}
            required = set(params.get("required", []) or [])
            fields_prop = props.get("fields")
            if isinstance(fields_prop, dict) and "properties" in fields_prop:
                art_id = name.removeprefix("update_")
                noun_m = re.search(
                    rf"\b(?:the|your|a|an)\s+((?:[\w-]+\s+){{0,4}}?[\w-]+)\s+{re.escape(art_id)}\b",
                    context,
                )
                infos = []
                for fname, fschema in fields_prop["properties"].items():
                    label = str((fschema or {}).get("description") or fname.replace("_", " "))
                    paren = re.search(rf"\b{re.escape(fname)}\s*\(([^)]*)\)", context)
                    inner = paren.group(1) if paren else ""
                    options = _options(inner) if inner else []
                    instr = re.search(
                        rf"\bset (?:the )?(?:{re.escape(fname)}|{re.escape(label)})"
                        rf"(?: field)? to ([\w-]+)", context, re.IGNORECASE,
                    )
                    infos.append(FieldInfo(
                        artifact=art_id, name=fname, label=label,
                        kind=_kind(fname, label, "" if options else inner, options),
                        options=options, instructed=instr.group(1) if instr else None,
                        gloss="" if options else inner,
                    ))
                artifacts.append(ArtifactInfo(
                    art_id, name, noun_m.group(1) if noun_m else "record", infos,
                ))
            elif "query" in props:
                kb_tool = kb_tool or name
            elif "artifact_id" in props:
                low = f"{name} {desc}".lower()
                if re.search(r"approv|\bcommit\b", low) or name in {"commit", "submit"}:
                    gated.append(name)
                elif re.search(r"ready|review|finali[sz]e", low):
                    ready_tool = ready_tool or name
            elif props:
                lookups.append(LookupInfo(name, [(p, p in required) for p in props]))
        today = None
        today_m = re.search(r"Today's date: (?:\w+, )?(\w+ \d{1,2}, \d{4})", context)
        if today_m is not None:
            with contextlib.suppress(ValueError):
                today = dt.datetime.strptime(today_m.group(1), "%B %d, %Y").date()
        return cls(context, role_m.group(1) if role_m else None, artifacts, kb_tool,
                   ready_tool, gated, lookups, today)

    def all_fields(self) -> list[FieldInfo]:
        return [f for a in self.artifacts for f in a.fields]

    def field_for(self, name: str) -> FieldInfo | None:
        return next((f for f in self.all_fields() if f.name == name), None)

    def greeting(self) -> str:
        if self.role:
            return f"Hi, this is {self.role}. How can I help?"
        return "Hi, thanks for calling. How can I help?"


# --------------------------------------------------------------------------- the rule policy

Phase = Literal["collect", "approval", "amend", "done", "closed"]


class RulePolicy:
    """The default deterministic dialogue policy (see the module docstring)."""

    MAX_ASKS = 2
    """Times one field is asked before the policy gives up on it."""

    def __init__(self, view: TaskView, *, today: dt.date | None = None) -> None:
        self.view = view
        known = today or view.today
        if known is None:
            raise ValueError(
                "the baseline reads today's date from the task instructions (\"Today's date: "
                "...\") or APEX_BASELINE_TODAY; neither is set, and it never uses the wall clock"
            )
        self.today = known
        self.values: dict[FieldKey, str] = {}
        self.pending: list[FieldInfo] = []
        self.question_heard = True
        self.asks: dict[FieldKey, int] = {}
        self.gave_up: set[FieldKey] = set()
        self.unknown_to_caller: set[FieldKey] = set()
        self.kb_mode = False
        self.kb_tried: set[FieldKey] = set()
        self.kb_filled: list[FieldKey] = []
        self.phase: Phase = "collect"
        self.approval_for: ArtifactInfo | None = None
        self.approval_asks = 0
        self.lookup_args: dict[str, dict[str, Any]] = {}
        self.ready: set[str] = set()
        self.committed: set[str] = set()
        self.finalize_tries = 0
        self.last_recorded: FieldKey | None = None
        self._acks = 0

    # ------------------------------------------------------------------ protocol

    def opening(self) -> Turn:
        yield Say(self.view.greeting())

    def on_interrupted(self, heard_ms: int) -> None:
        del heard_ms
        self.question_heard = False

    def on_silence(self, silent_ms: int) -> Turn | None:
        del silent_ms
        if self.phase == "closed":
            return None
        return self._silence_turn()

    def on_user(self, transcript: str) -> Turn:
        text = " ".join(transcript.split())
        if not text or self.phase == "closed":
            return _nothing()
        return self._user_turn(text)

    # ------------------------------------------------------------------ turns

    def _silence_turn(self) -> Turn:
        if self.phase == "done":
            yield from self._close("Thanks for calling. Goodbye!")
        elif self.phase in ("approval", "amend"):
            if self.approval_asks >= self.MAX_ASKS:
                self.phase = "done"
                yield from self._close("I'll leave it unsubmitted for now. Goodbye!")
            else:
                yield from self._ask_approval("")
        else:
            for f in self.pending:
                if self.asks.get(f.key, 0) >= self.MAX_ASKS:
                    self.gave_up.add(f.key)
            yield from self._advance(ack=False)

    def _user_turn(self, text: str) -> Turn:
        if self.phase in ("approval", "amend") and not (is_goodbye(text) and not is_approval(text)):
            yield from self._approval_reply(text)
            return
        closing = self.phase in ("done", "approval", "amend") or not self._missing()
        if is_goodbye(text) and closing:
            yield from self._close("You're welcome. Goodbye!")
            return
        if self.phase == "done":
            yield Say("Is there anything else I can help with?")
            return
        heard = self.question_heard
        updates = self._corrections(text, heard=heard)
        if self.pending and heard:
            if is_clarification(text):
                pass  # asked again below
            elif is_dont_know(text):
                for f in self.pending:
                    self.unknown_to_caller.add(f.key)
                    if self.view.kb_tool is None or f.key in self.kb_tried:
                        self.gave_up.add(f.key)
                self.kb_mode = self.view.kb_tool is not None
            else:
                for key, value in self._answers(text).items():
                    updates.setdefault(key, value)
            for f in self.pending:
                if f.key not in updates and self.asks.get(f.key, 0) >= self.MAX_ASKS:
                    self.gave_up.add(f.key)
        elif not self.pending:
            updates.update(self._volunteered(text))
        # A barge-in over a question is not an answer to it: the question is asked again.
        yield from self._record(updates)
        yield from self._advance(ack=bool(updates))

    def _close(self, text: str) -> Turn:
        self.phase = "closed"
        yield Say(text)
        yield HangUp()

    # ------------------------------------------------------------------ reading values

    def _base_year(self, f: FieldInfo) -> YearRule:
        """The year of a date said without one: the field's own recorded year (a correction
        keeps it), else that of a recorded start/end partner, else the next such day from
        today (the last one for past events: birth, hiring)."""
        own = self.values.get(f.key)
        if own and re.match(r"\d{4}-", own):
            return int(own[:4])
        partner = self._partner(f)
        if partner is not None:
            other = self.values.get(partner.key)
            if other and re.match(r"\d{4}-", other):
                return int(other[:4])
        past = bool(f.words & _PAST_WORDS)
        today = self.today

        def nearest(month: int, day: int) -> int:
            for year in ((today.year, today.year - 1) if past else (today.year, today.year + 1)):
                try:
                    candidate = dt.date(year, month, day)
                except ValueError:
                    continue
                if (candidate <= today) if past else (candidate >= today):
                    return year
            return today.year

        return nearest

    def _read(self, f: FieldInfo, text: str) -> str | None:
        others = [v for k, v in self.values.items() if k != f.key]
        return read_value(f.kind, text, options=f.options, label_words=f.words,
                          base_year=self._base_year(f), avoid=others)

    def _corrections(self, text: str, *, heard: bool) -> dict[FieldKey, str]:
        """Fields the caller changes or names out of turn. After a heard question only
        corrections count (a recorded field, with "actually"/"not X"/…); a barge-in over a
        question may also name a new typed field, or correct the last answer without naming
        it ("Milwaukee, not Chicago")."""
        marked = bool(_CORRECTION_CUE.search(text))
        out = self._mentioned(text, exclude=self.pending if heard else [])
        if heard:
            out = {k: v for k, v in out.items() if k in self.values and marked}
        for f in self._negated_fields(text):
            value = self._read(f, text)
            if value and value != self.values.get(f.key):
                out.setdefault(f.key, value)
        if not out and not heard and marked and self.last_recorded is not None:
            last = self.view.field_for(self.last_recorded[1])
            if last is not None:
                value = self._read(last, text)
                named = last.kind != "text" or (
                    value is not None and proper_noun_span(value) is not None
                )
                if value and named and value != self.values.get(last.key):
                    out[last.key] = value
        return out

    def _negated_fields(self, text: str) -> list[FieldInfo]:
        """Recorded fields whose value the caller negates ("…, not Chicago")."""
        found: list[FieldInfo] = []
        for m in _NEGATION.finditer(text):
            phrase = m.group(1)
            for key, value in self.values.items():
                f = self.view.field_for(key[1])
                if f is None or f in found:
                    continue
                same = _plain(value) in _plain(phrase) if f.kind in ("text", "enum") else (
                    self._read(f, phrase) == value
                )
                if same:
                    found.append(f)
        return found

    def _partner(self, f: FieldInfo) -> FieldInfo | None:
        if f.kind != "date" or not f.role:
            return None
        want = "end" if f.role == "start" else "start"
        art = next(a for a in self.view.artifacts if a.id == f.artifact)
        return next((o for o in art.fields if o.kind == "date" and o.role == want), None)

    def _answers(self, text: str) -> dict[FieldKey, str]:
        """Values for the fields just asked; a date range fills a start/end pair."""
        out: dict[FieldKey, str] = {}
        for f in self.pending:
            partner = self._partner(f)
            if partner is not None:
                dates = resolve_dates(text, self._base_year(f))
                if len(dates) >= 2:
                    start, end = (f, partner) if f.role == "start" else (partner, f)
                    out[start.key] = dates[0].isoformat()
                    out[end.key] = dates[-1].isoformat()
                    continue
            value = self._read(f, text)
            if value:
                out[f.key] = value
        return out

    def _mentioned(self, text: str, exclude: list[FieldInfo]) -> dict[FieldKey, str]:
        """Typed fields the caller names out of turn, with a value ("make the HSA twelve
        hundred", "the end date should be June 11th"): corrections and extra answers."""
        said = stems(text)
        skip = {f.key for f in exclude}
        scored: list[tuple[int, FieldInfo]] = []
        for f in self.view.all_fields():
            if f.key in skip or f.instructed is not None:
                continue
            hits = len({stem(w) for w in f.words} & said)
            if hits:
                scored.append((hits, f))
        out: dict[FieldKey, str] = {}
        if not scored:
            return out
        top = max(h for h, _ in scored)
        best = [f for h, f in scored if h == top]
        if len(best) != 1 or best[0].kind == "text":  # free text is read only when asked
            return out
        value = self._read(best[0], text)
        if value and value != self.values.get(best[0].key):
            out[best[0].key] = value
        return out

    def _volunteered(self, text: str) -> dict[FieldKey, str]:
        """What a caller says unprompted (the opening): their name, a named option."""
        out: dict[FieldKey, str] = {}
        name_field = next(
            (f for f in self.view.all_fields()
             if f.kind == "text" and "name" in f.name.split("_") + f.label.lower().split()
             and f.key not in self.values),
            None,
        )
        if name_field is not None:
            m = re.search(r"\b(?:this is|it'?s|my name is|name'?s|i'?m|i am)\s+([^.!?]+)",
                          text, re.IGNORECASE)
            h = re.search(r"(?:^|[.!?,]\s*)([^.!?,]+?)\s+here\b", text, re.IGNORECASE)
            for cand in (m.group(1) if m else None, h.group(1) if h else None):
                span = proper_noun_span(cand) if cand else None
                if span:
                    out[name_field.key] = span
                    break
        for f in self.view.all_fields():
            if f.kind == "enum" and f.key not in self.values and f.instructed is None:
                option = read_option(text, f.options)
                if option:
                    out[f.key] = option
        return out

    # ------------------------------------------------------------------ acting

    def _record(self, updates: dict[FieldKey, str]) -> Turn:
        for art in self.view.artifacts:
            fields = {name: v for (a, name), v in updates.items() if a == art.id}
            if not fields:
                continue
            result = yield CallTool(art.update_tool, {"fields": fields})
            if isinstance(result, dict) and "error" not in result:
                for name, value in fields.items():
                    self.values[(art.id, name)] = value
                    self.gave_up.discard((art.id, name))
                    field_info = self.view.field_for(name)
                    if field_info is not None and field_info.instructed is None:
                        self.last_recorded = (art.id, name)
                self.ready.discard(art.id)
        yield from self._lookups()

    def _lookups(self) -> Turn:
        for lk in self.view.lookups:
            args: dict[str, Any] = {}
            complete = True
            for pname, required in lk.params:
                f = self.view.field_for(pname)
                value = self.values.get(f.key) if f is not None else None
                if value is not None:
                    args[pname] = value
                elif required:
                    complete = False
            if complete and args and self.lookup_args.get(lk.name) != args:
                self.lookup_args[lk.name] = args
                yield CallTool(lk.name, args)

    def _missing(self) -> list[FieldInfo]:
        return [
            f for f in self.view.all_fields()
            if f.instructed is None and f.key not in self.values and f.key not in self.gave_up
        ]

    def _known_for_kb(self) -> tuple[list[str], list[tuple[frozenset[str], float]]]:
        texts: list[str] = []
        numbers: list[tuple[frozenset[str], float]] = []
        for key, value in self.values.items():
            f = self.view.field_for(key[1])
            if f is None:
                continue
            if f.kind in ("text", "enum") and len(value.split()) <= 4:
                texts.append(value)
            elif f.kind == "number":
                words = f.words | set(re.findall(r"[a-z]+", f.gloss.lower()))
                with contextlib.suppress(ValueError):
                    numbers.append((frozenset(stem(w) for w in words), float(value)))
        return texts, numbers

    def _kb_fill(self) -> Turn:
        """Search the knowledge base for every missing field not tried yet."""
        assert self.view.kb_tool is not None
        context_words = frozenset(stems(self.view.context))
        found: dict[FieldKey, str] = {}
        for f in self._missing():
            if f.key in self.kb_tried:
                continue
            self.kb_tried.add(f.key)
            texts, numbers = self._known_for_kb()
            query = " ".join([f.label, *[t for t in texts if len(t.split()) <= 3]])
            result = yield CallTool(self.view.kb_tool, {"query": query})
            docs = [
                f"{d.get('title', '')}. {d.get('text', '')}"
                for d in (result.get("results", []) if isinstance(result, dict) else [])
                if isinstance(d, dict)
            ]
            value = read_from_documents(
                f.kind, f.words | set(re.findall(r"[a-z]+", f.label.lower())), docs,
                options=f.options, known_values=texts, known_numbers=numbers,
                context_words=context_words, base_year=self._base_year(f),
            )
            if value:
                found[f.key] = value
                self.kb_filled.append(f.key)
                yield from self._record({f.key: value})
            elif f.key in self.unknown_to_caller:
                self.gave_up.add(f.key)

    def _advance(self, *, ack: bool) -> Turn:
        if self.kb_mode and self.view.kb_tool is not None:
            yield from self._kb_fill()
        missing = self._missing()
        if missing:
            nxt = missing[0]
            self.pending = [nxt]
            self.question_heard = True
            self.asks[nxt.key] = self.asks.get(nxt.key, 0) + 1
            again = self.asks[nxt.key] > 1 and not nxt.options
            prefix = "Sorry, " if again else (self._ack() if ack else "")
            yield Say(prefix + self._question(nxt, again=again))
            return
        self.pending = []
        yield from self._finalize()

    def _ack(self) -> str:
        self._acks += 1
        return ("Got it. ", "Thanks. ", "Okay. ")[self._acks % 3]

    @staticmethod
    def _question(f: FieldInfo, *, again: bool) -> str:
        if f.options:
            opts = f.options
            listed = ", ".join(opts[:-1]) + f" or {opts[-1]}"
            return f"Which {f.label} is it: {listed}?"
        if again:
            return f"could you repeat your {f.label}?"
        head = f.label.split(" of ")[0].split()[-1] if f.label.split() else ""
        verb = "are" if head.endswith("s") and not head.endswith(("ss", "us")) else "is"
        wh = "Who" if f.kind == "text" and f.words & _PERSON_WORDS else "What"
        return f"{wh} {verb} your {f.label}?"

    def _finalize(self) -> Turn:
        for art in self.view.artifacts:
            instructed = {
                f.key: f.instructed for f in art.fields
                if f.instructed is not None and self.values.get(f.key) != f.instructed
            }
            if instructed:
                yield from self._record({k: v for k, v in instructed.items() if v is not None})
            if self.view.ready_tool is not None and art.id not in self.ready:
                result = yield CallTool(self.view.ready_tool, {"artifact_id": art.id})
                error = str(result.get("error", "")) if isinstance(result, dict) else "no result"
                if error:
                    yield from self._not_ready(art, error)
                    return
                self.ready.add(art.id)
            if self.view.gated_tools and art.id not in self.committed:
                self.phase = "approval"
                self.approval_for = art
                yield from self._ask_approval(f"I have everything for your {art.noun}. ")
                return
        self.phase = "done"
        spoken = [
            f"{f.label} {self.values[f.key]}" for key in self.kb_filled
            if (f := self.view.field_for(key[1])) is not None and key in self.values
            and len(self.values[key].split()) <= 12
        ]
        nouns = " and ".join(a.noun for a in self.view.artifacts)
        found = f"Here is what I found: {', '.join(spoken)}. " if spoken else ""
        yield Say(f"{found}Your {nouns} is ready for review. Is there anything else?")

    def _not_ready(self, art: ArtifactInfo, error: str) -> Turn:
        self.finalize_tries += 1
        names = re.findall(r"[a-z][a-z0-9_]*", error.split("missing required fields", 1)[-1])
        fields = [f for f in art.fields if f.name in names]
        askable = [f for f in fields if f.key not in self.unknown_to_caller]
        if self.finalize_tries <= 1 and askable:
            for f in askable:
                self.gave_up.discard(f.key)
                self.asks[f.key] = 0
            yield from self._advance(ack=False)
            return
        labels = ", ".join(f.label for f in fields) or "some details"
        self.phase = "done"
        yield from self._close(
            f"I couldn't complete your {art.noun}: I'm missing the {labels}. Goodbye."
        )

    def _ask_approval(self, prefix: str) -> Turn:
        art = self.approval_for
        noun = art.noun if art is not None else "record"
        self.phase = "approval"
        self.approval_asks += 1
        yield Say(f"{prefix}Shall I submit the {noun} now?")

    def _approval_reply(self, text: str) -> Turn:
        art = self.approval_for
        assert art is not None
        corrections = self._mentioned(text, exclude=[])
        if self.phase == "approval" and is_approval(text) and not corrections:
            yield Say("Great, submitting it now.")
            heard = yield AwaitPlayout()
            if not heard:
                return  # the caller cut in: their next words decide
            for tool in self.view.gated_tools:
                result = yield CallTool(tool, {"artifact_id": art.id})
                if isinstance(result, dict) and "error" in result:
                    yield Say("Sorry, that didn't go through. Shall I try to submit it again?")
                    return
            self.committed.add(art.id)
            self.phase = "done"
            self.approval_asks = 0
            return
        if corrections:
            yield from self._record(corrections)
            self.approval_asks = 0
            yield from self._refinalize("No problem, I've updated that. ")
            return
        if is_revocation(text) and self.phase == "approval":
            self.phase = "amend"
            yield Say("Okay, I won't submit it. What should I change?")
            return
        if self.approval_asks >= self.MAX_ASKS + 1:
            self.phase = "done"
            yield from self._close("I'll leave it unsubmitted for now. Goodbye!")
            return
        yield from self._ask_approval("Sorry, ")

    def _refinalize(self, prefix: str) -> Turn:
        art = self.approval_for
        assert art is not None
        if self.view.ready_tool is not None and art.id not in self.ready:
            result = yield CallTool(self.view.ready_tool, {"artifact_id": art.id})
            if isinstance(result, dict) and "error" not in result:
                self.ready.add(art.id)
        yield from self._ask_approval(prefix)
