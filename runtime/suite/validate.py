"""Deterministic construction checks for task specifications (paper appendix B.5).

``apex-voice tasks validate`` runs these before a task is packaged: every graded value must be
obtainable, plans must respect the reveal policy (B.1), every reachable plan needs 2–5 frozen
realizations that leak no graded value the plan does not carry (B.2), ids must be unique and
references must resolve, and the speech bank must match the YAML byte for byte.

Each defect becomes one :class:`Problem`: the file, the path inside the YAML
(``plans[3].realizations[1].text``) and what is wrong, with the fix where it is obvious.
"""

from __future__ import annotations

import calendar
import difflib
import re
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict
from text_to_num import alpha2digit

from runtime.core.spec import (
    ArtifactSpec,
    Fact,
    FactVersion,
    FieldSpec,
    PredApprovalRequestedBefore,
    PredField,
    PredGuardBlocked,
    Predicate,
    PredLifecycle,
    PredToolCalled,
    PredUpdatedAfter,
    Realization,
    RevealAfterPlan,
    RevealOnAsk,
    RevealOnEvent,
    RevealRule,
    RevealVolunteer,
    TaskLoadError,
    TaskSpec,
    TriggerAct,
    TriggerApproval,
    TriggerApprovalWait,
    TriggerAsk,
    TriggerDuplex,
    TriggerLifecycle,
    TriggerProposal,
    TriggerReadbackMismatch,
    TriggerWorld,
    UserPlan,
    find_task_files,
    load_task,
)
from runtime.core.values import dates_in_text, parse_spoken_date
from runtime.speechbank.bank_manifest import (
    MANIFEST_NAME,
    load_manifest,
    manifest_path,
    sha256_file,
)
from runtime.suite.catalogue import (
    CatalogueEntry,
    CatalogueError,
    catalogue_path,
    load_catalogue,
    task_mismatches,
)

MIN_REALIZATIONS = 2
MAX_REALIZATIONS = 5
GATED_TOOL_KINDS = ("submit", "commit")


class Problem(BaseModel):
    """One construction defect: ``file: path-inside-the-YAML: what is wrong``."""

    model_config = ConfigDict(frozen=True)

    file: Path
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.path}: {self.message}"


# --------------------------------------------------------------------------- values

_NUMERIC = re.compile(r"[+-]?(?:0|[1-9]\d{0,2}(?:,\d{3})+|[1-9]\d*)(?:\.\d+)?")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_COMPACT_DROP = re.compile(r"[\s\-,.]")
_MEANINGLESS = frozenset({"yes", "no", "true", "false", "none", "n/a"})
"""Values that are acts rather than specific facts; matching them would flag every "yes"."""


def _canonical(value: Any) -> Hashable:
    """Comparison key: numbers numerically, strings casefolded with whitespace collapsed,
    dates in ISO form, lists and mappings element-wise."""
    if value is None or isinstance(value, bool):
        return ("const", value)
    if isinstance(value, int | float):
        return ("num", float(value))
    if isinstance(value, date):  # datetime too
        return ("str", value.isoformat())
    if isinstance(value, str):
        text = " ".join(value.casefold().split())
        if _NUMERIC.fullmatch(text):
            return ("num", float(text.replace(",", "")))
        return ("str", text)
    if isinstance(value, list | tuple):
        return ("list", tuple(_canonical(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), _canonical(v)) for k, v in value.items())))
    return ("other", repr(value))


def _same_value(a: Any, b: Any, *, tolerance: float = 0.0, ordered: bool = True) -> bool:
    ca, cb = _canonical(a), _canonical(b)
    if isinstance(ca, tuple) and isinstance(cb, tuple) and ca[0] == cb[0] == "num":
        return bool(abs(ca[1] - cb[1]) <= tolerance + 1e-9)
    if not ordered and isinstance(a, list) and isinstance(b, list):
        return sorted(map(repr, (_canonical(v) for v in a))) == sorted(
            map(repr, (_canonical(v) for v in b))
        )
    return ca == cb


def _show(value: Any) -> str:
    if isinstance(value, date):
        return repr(value.isoformat())
    return repr(value)


def _normalize_text(text: str) -> str:
    """Lower-case, number words to digits (ordinals too), no thousands separators."""
    lowered = " ".join(text.lower().split())
    converted: str = alpha2digit(lowered, "en", threshold=0)
    return _THOUSANDS.sub("", converted)


@dataclass(frozen=True)
class _Form:
    """One surface form of a value and how to look for it."""

    text: str
    pattern: re.Pattern[str]
    compact: bool
    """Searched in the text without spaces, hyphens, commas and periods (identifiers and digit
    strings spelled out: "E, 4, 4, 7, 1")."""


def _number_form(text: str) -> _Form:
    pattern = re.compile(rf"(?<![\w.,/]){re.escape(text)}(?![\w/]|[.,]\d)")
    return _Form(text, pattern, compact=False)


def _phrase_form(text: str) -> _Form:
    return _Form(text, re.compile(rf"(?<!\w){re.escape(text)}(?!\w)"), compact=False)


def _compact_form(text: str) -> _Form:
    before = r"(?<!\d)" if text[0].isdigit() else ""
    after = r"(?!\d)" if text[-1].isdigit() else ""
    return _Form(text, re.compile(before + re.escape(text) + after), compact=True)


def _ordinal(day: int) -> str:
    if 11 <= day % 100 <= 13:
        return f"{day}th"
    return f"{day}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th')}"


def _date_forms(day: date) -> list[_Form]:
    month = calendar.month_name[day.month].lower()
    abbr = calendar.month_abbr[day.month].lower()
    d, nth = str(day.day), _ordinal(day.day)
    phrases = [
        day.isoformat(),
        f"{month} {d}", f"{month} {nth}", f"{month} the {nth}",
        f"{d} {month}", f"{nth} {month}", f"{nth} of {month}",
        f"{day.month:02d}/{day.day:02d}", f"{day.month}/{day.day}",
    ]
    if abbr != month:
        phrases += [f"{abbr} {d}", f"{abbr} {nth}"]
    return [_phrase_form(p) for p in phrases]


def _number_forms(number: float) -> list[_Form]:
    text = str(int(number)) if float(number).is_integer() else f"{number:.10g}"
    forms = [_number_form(text)]
    if len(text) == 4 and text.isdigit() and 10 <= int(text[:2]) <= 20 and int(text[2:]) >= 10:
        forms.append(_number_form(f"{text[:2]} {text[2:]}"))  # "nineteen eighty-eight" → "19 88"
    return forms


def _string_forms(value: str) -> list[_Form]:
    raw = value.strip()
    if _ISO_DATE.fullmatch(raw):
        try:
            return _date_forms(date.fromisoformat(raw))
        except ValueError:
            pass
    norm = _normalize_text(raw)
    if not norm:
        return []
    if _NUMERIC.fullmatch(norm):
        return _number_forms(float(norm.replace(",", "")))
    compact = _COMPACT_DROP.sub("", norm)
    tokens = norm.split()
    has_digit = any(c.isdigit() for c in compact)
    has_alpha = any(c.isalpha() for c in compact)
    if compact.isdigit() and len(compact) >= 3:
        return [_compact_form(compact)]  # phone-like digit strings, ids with leading zeros
    if (
        compact.isalnum() and has_digit and has_alpha
        and (len(tokens) <= 2 or all(len(t) <= 2 for t in tokens))
    ):
        return [_compact_form(compact)]  # identifiers: "E4471", "INV-771", "e 4 4 7 1"
    if len(norm) < 2 or norm in _MEANINGLESS:
        return []
    return [_phrase_form(norm)]


def _forms(value: Any, spoken: Sequence[str] = ()) -> list[_Form]:
    forms: list[_Form] = []
    if isinstance(value, bool) or value is None:
        pass
    elif isinstance(value, int | float):
        forms += _number_forms(float(value))
    elif isinstance(value, datetime):
        forms += _date_forms(value.date())
    elif isinstance(value, date):
        forms += _date_forms(value)
    elif isinstance(value, str):
        forms += _string_forms(value)
    elif isinstance(value, list | tuple):
        for item in value:
            forms += _forms(item)
    elif isinstance(value, dict):
        for item in value.values():
            forms += _forms(item)
    for alt in spoken:
        forms += _string_forms(alt)
    unique: dict[tuple[str, bool], _Form] = {}
    for form in forms:
        unique.setdefault((form.text, form.compact), form)
    return list(unique.values())


def value_surface_forms(value: Any, spoken: Sequence[str] = ()) -> list[str]:
    """The normalized surface forms the leakage and obtainability checks look for: digits for
    numbers ("1200", "19 88" for a spoken year), "july 9" / "9th of july" / "07/09" for ISO
    dates, a compact "e4471" for identifiers, the lower-cased phrase otherwise, plus each
    ``spoken`` form (normalized the same way)."""
    return [form.text for form in _forms(value, spoken)]


class _Text:
    """A text normalized for matching, with a compact copy mapped back onto it."""

    def __init__(self, text: str) -> None:
        self.norm = _normalize_text(text)
        kept = [(i, c) for i, c in enumerate(self.norm) if not _COMPACT_DROP.fullmatch(c)]
        self.compact = "".join(c for _, c in kept)
        self._index = [i for i, _ in kept]

    def spans(self, forms: Iterable[_Form]) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        for form in forms:
            if form.compact:
                found += [
                    (self._index[m.start()], self._index[m.end() - 1] + 1)
                    for m in form.pattern.finditer(self.compact)
                ]
            else:
                found += [m.span() for m in form.pattern.finditer(self.norm)]
        return found

    def mentions(self, value: Any) -> bool | None:
        """Whether every part of ``value`` (each item of a list) is mentioned; None when the
        value has no surface form to look for (booleans, "yes")."""
        parts = value if isinstance(value, list | tuple) else [value]
        forms = [_forms(part) for part in parts]
        if not all(forms):
            return None
        return all(self.spans(part_forms) for part_forms in forms)


# --------------------------------------------------------------------------- leakage

@dataclass(frozen=True)
class _GradedValue:
    key: Hashable
    value: Any
    labels: list[str]
    forms: list[_Form]


def _graded_values(task: TaskSpec) -> list[_GradedValue]:
    """Every field gold and every fact version, merged by canonical value."""
    merged: dict[Hashable, tuple[Any, list[str], list[str]]] = {}

    def add(value: Any, label: str, spoken: Sequence[str] = ()) -> None:
        _, labels, all_spoken = merged.setdefault(_canonical(value), (value, [], []))
        labels.append(label)
        all_spoken.extend(spoken)

    for artifact, field in task.graded_fields():
        add(field.gold, f"gold of {artifact.id}.{field.name}")
    for fact in task.user.facts:
        for number, version in enumerate(fact.versions, start=1):
            add(version.value, f"fact '{fact.id}' version {number}", version.spoken)
    return [
        _GradedValue(key, value, labels, _forms(value, spoken))
        for key, (value, labels, spoken) in merged.items()
    ]


def _carried_versions(task: TaskSpec, plan: UserPlan) -> list[FactVersion]:
    carried: list[FactVersion] = []
    for ref in plan.facts:
        fact = task.user.fact(ref.fact)
        if fact is not None and 1 <= ref.version <= len(fact.versions):
            carried.append(fact.versions[ref.version - 1])
    return carried


def _leaks(
    task: TaskSpec,
    plan: UserPlan,
    realization: Realization,
    graded: list[_GradedValue],
) -> list[str]:
    text = _Text(realization.text)
    carried = _carried_versions(task, plan)
    carried_keys = {_canonical(v.value) for v in carried}
    covered = [span for v in carried for span in text.spans(_forms(v.value, v.spoken))]
    leaks: list[str] = []
    for entry in graded:
        if entry.key in carried_keys:
            continue
        hits = [
            (start, end)
            for start, end in text.spans(entry.forms)
            if not any(cs <= start and end <= ce for cs, ce in covered)
        ]
        if hits:
            start, end = hits[0]
            leaks.append(
                f"{' / '.join(entry.labels)} = {_show(entry.value)} "
                f"(as {text.norm[start:end]!r})"
            )
    return leaks


def leaked_values(task: TaskSpec, plan: UserPlan, realization: Realization) -> list[str]:
    """Graded values (field golds, any version of any fact) that the realization's text
    mentions although ``plan`` does not carry them, described for a person.

    A value is carried when the plan's ``facts`` include that fact version or a carried
    version has the same value; a mention inside a carried value's mention ("42" inside a
    carried "42 Elm Street") is not a leak."""
    return _leaks(task, plan, realization, _graded_values(task))


# --------------------------------------------------------------------------- the checks

def _did_you_mean(value: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(value, list(known), n=1)
    if close:
        return f"; did you mean '{close[0]}'?"
    if not known:
        return " (none are defined)"
    listed = sorted(known)
    more = f", … {len(listed) - 8} more" if len(listed) > 8 else ""
    return f" (known: {', '.join(listed[:8])}{more})"


def _describe_rule(rule: RevealRule) -> str:
    if isinstance(rule, RevealOnAsk):
        return f"on_ask {rule.fields}: only once the agent asks for one of those fields"
    if isinstance(rule, RevealAfterPlan):
        return f"after_plan '{rule.plan}': only after that plan was spoken"
    if isinstance(rule, RevealOnEvent):
        return f"on_event '{rule.event}': only after that world event"
    return "volunteer"


def _describe_trigger(plan: UserPlan) -> str:
    when = plan.when
    if isinstance(when, TriggerAsk):
        return f"ask {when.fields}"
    if isinstance(when, TriggerApproval):
        return f"approval_request '{when.action}'"
    if isinstance(when, TriggerAct):
        return f"act '{when.act}'"
    if isinstance(when, TriggerLifecycle):
        return f"lifecycle {when.artifact} {when.state.value}"
    if isinstance(when, TriggerWorld):
        return f"world_event '{when.event}'"
    return when.on


class _TaskChecker:
    def __init__(self, task: TaskSpec) -> None:
        self.task = task
        self.file = task.source_path or Path(f"<task {task.id}>")
        self.problems: list[Problem] = []
        self.plan_ids = {p.id for p in task.plans}
        self.fact_ids = {f.id for f in task.user.facts}
        self.document_ids = {d.id for d in task.documents}
        self.tool_names = {t.name for t in task.tools}
        self.artifact_ids = {a.id for a in task.artifacts}
        self.actions = {r.action for r in task.authorization}
        self.world_event_ids = {e.id for e in task.world_events}
        self.field_names = {f.name for _, f in task.graded_fields()}
        self.bank_hint = f"run `apex-voice bank build --tasks {task.id}`"

    def add(self, path: str, message: str, file: Path | None = None) -> None:
        self.problems.append(Problem(file=file or self.file, path=path, message=message))

    def run(self) -> list[Problem]:
        self.check_unique_ids()
        self.check_references()
        self.check_fields()
        self.check_dates()
        self.check_reveal_order()
        self.check_reachability()
        self.check_leakage()
        self.check_spoken_form()
        if self.task.source_path is not None:
            self.check_audio()
            self.check_bank()
        return self.problems

    # ---------------------------------------------------------------- 5. unique ids

    def _unique(self, what: str, items: Iterable[tuple[str, str]], scope: str = "") -> None:
        first: dict[str, str] = {}
        for path, value in items:
            if value in first:
                self.add(path, f"duplicate {what} '{value}'{scope} (first at {first[value]}); "
                               "rename one of them")
            else:
                first[value] = path

    def check_unique_ids(self) -> None:
        t = self.task
        self._unique("artifact id", ((f"artifacts[{i}].id", a.id) for i, a in
                                     enumerate(t.artifacts)))
        for i, artifact in enumerate(t.artifacts):
            self._unique("field name", ((f"artifacts[{i}].fields[{k}].name", f.name)
                                        for k, f in enumerate(artifact.fields)),
                         scope=f" in artifact '{artifact.id}'")
        self._unique("document id", ((f"documents[{i}].id", d.id)
                                     for i, d in enumerate(t.documents)))
        self._unique("tool name", ((f"tools[{i}].name", x.name) for i, x in enumerate(t.tools)))
        self._unique("authorization action", ((f"authorization[{i}].action", r.action)
                                              for i, r in enumerate(t.authorization)))
        self._unique("fact id", ((f"user.facts[{i}].id", f.id)
                                 for i, f in enumerate(t.user.facts)))
        self._unique("plan id", ((f"plans[{i}].id", p.id) for i, p in enumerate(t.plans)))
        self._unique("realization id", ((f"plans[{i}].realizations[{j}].id", r.id)
                                        for i, p in enumerate(t.plans)
                                        for j, r in enumerate(p.realizations)))
        self._unique("duplex event id", ((f"duplex_events[{i}].id", e.id)
                                         for i, e in enumerate(t.duplex_events)))
        self._unique("world event id", ((f"world_events[{i}].id", e.id)
                                        for i, e in enumerate(t.world_events)))

    # ---------------------------------------------------------------- 6. references

    def _ref(
        self, path: str, value: str, known: Collection[str], what: str, scope: str = ""
    ) -> bool:
        if value in known:
            return True
        self.add(path, f"unknown {what} '{value}'{scope}{_did_you_mean(value, known)}")
        return False

    def _field_ref(self, path: str, artifact_id: str, field: str) -> None:
        if not self._ref(f"{path}.artifact", artifact_id, self.artifact_ids, "artifact"):
            return
        artifact = self.task.artifact(artifact_id)
        assert artifact is not None
        self._ref(f"{path}.field", field, {f.name for f in artifact.fields}, "field",
                  scope=f" in artifact '{artifact_id}'")

    def _predicate(self, path: str, pred: Predicate) -> None:
        if isinstance(pred, PredLifecycle):
            self._ref(f"{path}.artifact", pred.artifact, self.artifact_ids, "artifact")
        elif isinstance(pred, PredField):
            self._field_ref(path, pred.artifact, pred.field)
        elif isinstance(pred, PredGuardBlocked):
            if pred.action is not None:
                self._ref(f"{path}.action", pred.action, self.actions, "authorization action")
        elif isinstance(pred, PredToolCalled):
            self._ref(f"{path}.tool", pred.tool, self.tool_names, "tool")
        elif isinstance(pred, PredApprovalRequestedBefore):
            self._ref(f"{path}.action", pred.action, self.actions, "authorization action")
        elif isinstance(pred, PredUpdatedAfter):
            self._field_ref(path, pred.artifact, pred.field)
            self._ref(f"{path}.plan", pred.plan, self.plan_ids, "plan")

    def check_references(self) -> None:
        self._refs_of_fields_and_tools()
        self._refs_of_authorization()
        self._refs_of_plans()
        self._refs_of_reveal_rules()
        self._refs_of_events()
        self._refs_of_grading()

    def _refs_of_fields_and_tools(self) -> None:
        t = self.task
        for i, artifact in enumerate(t.artifacts):
            for k, field in enumerate(artifact.fields):
                path = f"artifacts[{i}].fields[{k}].source"
                if field.source.fact is not None:
                    self._ref(f"{path}.fact", field.source.fact, self.fact_ids, "fact")
                if field.source.document is not None:
                    self._ref(f"{path}.document", field.source.document, self.document_ids,
                              "document")
        for i, tool in enumerate(t.tools):
            if tool.artifact is not None:
                self._ref(f"tools[{i}].artifact", tool.artifact, self.artifact_ids, "artifact")
            elif tool.kind == "update":
                self.add(f"tools[{i}].artifact",
                         f"update tool '{tool.name}' names no artifact; add `artifact:` with "
                         "the id of the artifact it writes")

    def _refs_of_authorization(self) -> None:
        for i, rule in enumerate(self.task.authorization):
            path = f"authorization[{i}]"
            tool = self.task.tool(rule.tool)
            if self._ref(f"{path}.tool", rule.tool, self.tool_names, "tool") and tool and \
                    tool.kind not in GATED_TOOL_KINDS:
                self.add(f"{path}.tool",
                         f"tool '{rule.tool}' has kind '{tool.kind}'; an approval-gated action "
                         f"must use a tool of kind {' or '.join(GATED_TOOL_KINDS)}")
            self._ref(f"{path}.artifact", rule.artifact, self.artifact_ids, "artifact")
            expected = f"{rule.tool}:{rule.artifact}"
            if rule.action != expected:
                self.add(f"{path}.action",
                         f"action '{rule.action}' does not follow the <tool>:<artifact> "
                         f"convention; name it '{expected}'")

    def _refs_of_plans(self) -> None:
        t = self.task
        for i, plan in enumerate(t.plans):
            path = f"plans[{i}]"
            for j, required in enumerate(plan.requires):
                self._ref(f"{path}.requires[{j}]", required, self.plan_ids, "plan")
            for j, ref in enumerate(plan.facts):
                if not self._ref(f"{path}.facts[{j}].fact", ref.fact, self.fact_ids, "fact"):
                    continue
                fact = t.user.fact(ref.fact)
                assert fact is not None
                if not 1 <= ref.version <= len(fact.versions):
                    self.add(f"{path}.facts[{j}].version",
                             f"fact '{ref.fact}' has {len(fact.versions)} version(s); version "
                             f"{ref.version} does not exist (versions are 1-based)")
            when = plan.when
            if isinstance(when, TriggerAsk):
                for k, name in enumerate(when.fields):
                    self._ref(f"{path}.when.fields[{k}]", name, self.field_names, "graded field")
            elif isinstance(when, TriggerApproval | TriggerApprovalWait):
                self._ref(f"{path}.when.action", when.action, self.actions,
                          "authorization action")
            elif isinstance(when, TriggerReadbackMismatch):
                for k, name in enumerate(when.fields):
                    self._ref(f"{path}.when.fields[{k}]", name, self.field_names, "graded field")
            elif isinstance(when, TriggerProposal):
                self._ref(f"{path}.when.field", when.field, self.field_names, "graded field")
            elif isinstance(when, TriggerLifecycle):
                self._ref(f"{path}.when.artifact", when.artifact, self.artifact_ids, "artifact")
            elif isinstance(when, TriggerWorld):
                self._ref(f"{path}.when.event", when.event, self.world_event_ids, "world event")
            if plan.authorization is not None and plan.authorization.grant and plan.once:
                self.add(f"{path}.once",
                         f"approval plan '{plan.id}' is `once: true`, but an approval is voided "
                         "by a later edit and the agent must be able to ask again; set "
                         "`once: false`")
            if plan.authorization is not None:
                for key in ("grant", "revoke"):
                    action = getattr(plan.authorization, key)
                    if action is not None:
                        self._ref(f"{path}.authorization.{key}", action, self.actions,
                                  "authorization action")

    def _refs_of_reveal_rules(self) -> None:
        for i, fact in enumerate(self.task.user.facts):
            rules = [(f"user.facts[{i}].reveal", fact.reveal)] + [
                (f"user.facts[{i}].versions[{k}].reveal", v.reveal)
                for k, v in enumerate(fact.versions) if v.reveal is not None
            ]
            for path, rule in rules:
                if isinstance(rule, RevealOnAsk):
                    for k, name in enumerate(rule.fields):
                        self._ref(f"{path}.fields[{k}]", name, self.field_names, "graded field")
                elif isinstance(rule, RevealAfterPlan):
                    self._ref(f"{path}.plan", rule.plan, self.plan_ids, "plan")
                elif isinstance(rule, RevealOnEvent):
                    self._ref(f"{path}.event", rule.event, self.world_event_ids, "world event")

    def _refs_of_events(self) -> None:
        t = self.task
        for i, event in enumerate(t.duplex_events):
            self._ref(f"duplex_events[{i}].plan", event.plan, self.plan_ids, "plan")
            self._ref(f"duplex_events[{i}].anchor.after_plan", event.anchor.after_plan,
                      self.plan_ids, "plan")
        for i, world in enumerate(t.world_events):
            if world.after_plan is not None:
                self._ref(f"world_events[{i}].after_plan", world.after_plan, self.plan_ids,
                          "plan")

    def _refs_of_grading(self) -> None:
        g = self.task.grading
        groups: list[tuple[str, list[Predicate]]] = [
            ("grading.terminal", g.terminal), ("grading.forbidden", g.forbidden),
            ("grading.must_hold", g.must_hold),
        ] + [(f"grading.alternates[{i}]", alt) for i, alt in enumerate(g.alternates)]
        for prefix, preds in groups:
            for k, pred in enumerate(preds):
                self._predicate(f"{prefix}[{k}]", pred)
        for i, action in enumerate(g.required_actions):
            self._ref(f"grading.required_actions[{i}].tool", action.tool, self.tool_names, "tool")
        for i, doc in enumerate(g.required_evidence):
            self._ref(f"grading.required_evidence[{i}]", doc, self.document_ids, "document")

    # ---------------------------------------------------------------- 1. obtainable

    def _obtainable(self, path: str, artifact: ArtifactSpec, field: FieldSpec) -> None:
        t, source, gold = self.task, field.source, field.gold
        name = f"{artifact.id}.{field.name}"
        if source.fact is not None:
            fact = t.user.fact(source.fact)
            if fact is None:
                return  # reported as an unknown reference
            final = fact.versions[-1].value
            if not _same_value(final, gold, tolerance=field.tolerance,
                               ordered=field.grader != "set_f1"):
                self.add(f"{path}.fact",
                         f"gold {_show(gold)} of {name} is not obtainable: the final version "
                         f"(version {len(fact.versions)}) of fact '{fact.id}' is "
                         f"{_show(final)}; make the gold and the fact agree")
        elif source.document is not None:
            doc = next((d for d in t.documents if d.id == source.document), None)
            if doc is not None and _Text(doc.text).mentions(gold) is False:
                self.add(f"{path}.document",
                         f"gold {_show(gold)} of {name} is not obtainable: document "
                         f"'{doc.id}' does not mention it; put the value in the document "
                         "or point the source at the one that has it")
        elif source.instruction and _Text(t.context).mentions(gold) is False:
            self.add(f"{path}.instruction",
                     f"gold {_show(gold)} of {name} is not obtainable: the agent-visible "
                     "`context` does not mention it; state it in the context")

    def check_fields(self) -> None:
        for i, artifact in enumerate(self.task.artifacts):
            for k, field in enumerate(artifact.fields):
                path = f"artifacts[{i}].fields[{k}]"
                if field.required:
                    self._obtainable(f"{path}.source", artifact, field)
                if field.options and not any(_same_value(o, field.gold) for o in field.options):
                    self.add(f"{path}.gold",
                             f"gold {_show(field.gold)} of enum field '{field.name}' is not one "
                             f"of its options {field.options}")
                if field.corrected:
                    fact = self.task.user.fact(field.source.fact) if field.source.fact else None
                    if field.source.fact is None:
                        self.add(f"{path}.corrected",
                                 f"field '{field.name}' is marked corrected but its source is "
                                 "not a user fact; source it from a fact with a corrected "
                                 "version or drop `corrected`")
                    elif fact is not None and len(fact.versions) < 2:
                        self.add(f"{path}.corrected",
                                 f"field '{field.name}' is marked corrected but its source fact "
                                 f"'{fact.id}' has only {len(fact.versions)} version; add the "
                                 "corrected version or drop `corrected`")

    def check_dates(self) -> None:
        """Every date a caller says must resolve to the fact it carries: either it names its
        year or, read against the task's reference date, its nearest occurrence is right."""
        t = self.task
        date_facts = {
            f.source.fact for _, f in t.graded_fields()
            if f.source.fact and (f.type == "date" or f.grader == "normalized_date")
        }
        for i, plan in enumerate(t.plans):
            for ref in plan.facts:
                fact = t.user.fact(ref.fact)
                if ref.fact not in date_facts or fact is None or ref.version > len(
                        fact.versions):
                    continue
                target = parse_spoken_date(fact.versions[ref.version - 1].value)
                if target is None:
                    continue
                for j, real in enumerate(plan.realizations):
                    said = dates_in_text(real.text, t.reference_date)
                    if said and target not in said:
                        self.add(
                            f"plans[{i}].realizations[{j}].text",
                            f"realization '{real.id}' says the date of fact '{fact.id}' so "
                            f"that it resolves to {', '.join(map(str, said))} against the "
                            f"reference date {t.reference_date}, not {target}; say the year "
                            "or move the reference date")

    # ---------------------------------------------------------------- 2. reveal order

    def _before(self) -> dict[str, set[str]]:
        """Plans certainly spoken before each plan: its ``requires``, the anchor plan of a
        duplex event that fires it, the plan a world event that fires it waits for, and
        transitively their predecessors."""
        t = self.task
        edges: dict[str, set[str]] = {p.id: set(p.requires) for p in t.plans}
        for event in t.duplex_events:
            edges.setdefault(event.plan, set()).add(event.anchor.after_plan)
        worlds = {w.id: w for w in t.world_events}
        for plan in t.plans:
            if isinstance(plan.when, TriggerWorld):
                world = worlds.get(plan.when.event)
                if world is not None and world.after_plan is not None:
                    edges[plan.id].add(world.after_plan)
        closure: dict[str, set[str]] = {}
        for start in edges:
            seen: set[str] = set()
            stack = list(edges[start])
            while stack:
                node = stack.pop()
                if node not in seen:
                    seen.add(node)
                    stack.extend(edges.get(node, ()))
            closure[start] = seen
        return closure

    def check_reveal_order(self) -> None:
        t = self.task
        before = self._before()
        plans = {p.id: p for p in t.plans}
        memo: dict[tuple[str, str, int], bool] = {}

        def rule_of(fact: Fact, version: int) -> RevealRule:
            return fact.versions[version - 1].reveal or fact.reveal

        def legit(plan: UserPlan, fact: Fact, version: int, visiting: frozenset[str]) -> bool:
            key = (plan.id, fact.id, version)
            if key in memo:
                return memo[key]
            rule = rule_of(fact, version)
            when = plan.when
            earlier = before.get(plan.id, set())
            # Reading back a field brings it up as much as asking for it does.
            ok = isinstance(rule, RevealVolunteer) or (
                isinstance(rule, RevealOnAsk)
                and isinstance(when, TriggerAsk | TriggerReadbackMismatch)
                and bool(set(when.fields) & set(rule.fields))
            ) or (
                isinstance(rule, RevealAfterPlan) and rule.plan in earlier
            ) or (
                isinstance(rule, RevealOnEvent) and any(
                    isinstance(p.when, TriggerWorld) and p.when.event == rule.event
                    for p in [plan, *(plans[q] for q in earlier if q in plans)]
                )
            )
            if not ok:
                ok = any(
                    q in plans and q not in visiting and any(
                        r.fact == fact.id and r.version == version for r in plans[q].facts
                    ) and legit(plans[q], fact, version, visiting | {plan.id})
                    for q in earlier
                )
            memo[key] = ok
            return ok

        for i, plan in enumerate(t.plans):
            for j, ref in enumerate(plan.facts):
                fact = t.user.fact(ref.fact)
                if fact is None or not 1 <= ref.version <= len(fact.versions):
                    continue  # reported as a reference problem
                if legit(plan, fact, ref.version, frozenset()):
                    continue
                rule = rule_of(fact, ref.version)
                self.add(
                    f"plans[{i}].facts[{j}]",
                    f"plan '{plan.id}' carries fact '{fact.id}' version {ref.version} before "
                    f"its reveal condition ({_describe_rule(rule)}); the plan is triggered by "
                    f"{_describe_trigger(plan)} and follows no plan that carried it "
                    "legitimately: change the trigger, add a `requires`, or drop the fact",
                )

    # ---------------------------------------------------------------- 3. reachability

    def _trigger_ok(self, plan: UserPlan, reachable: set[str]) -> str | None:
        """Why the plan's trigger can never fire, or None when it can."""
        t, when = self.task, plan.when
        if isinstance(when, TriggerDuplex):
            events = [e for e in t.duplex_events if e.plan == plan.id]
            if not events:
                return (f"it is triggered by `duplex` but no duplex event targets it; add a "
                        f"duplex event with `plan: {plan.id}`")
            if not any(e.anchor.after_plan in reachable for e in events):
                anchors = sorted({e.anchor.after_plan for e in events})
                return f"every duplex event targeting it is anchored after an unreachable " \
                       f"plan {anchors}"
        elif isinstance(when, TriggerWorld):
            world = next((w for w in t.world_events if w.id == when.event), None)
            if world is None:
                return f"its world event '{when.event}' does not exist"
            if world.after_plan is not None and world.after_plan not in reachable:
                return (f"its world event '{when.event}' waits for unreachable plan "
                        f"'{world.after_plan}'")
        elif isinstance(when, TriggerAsk):
            if not set(when.fields) & self.field_names:
                return f"none of the fields it answers {when.fields} is a graded field"
        elif isinstance(when, TriggerApproval | TriggerApprovalWait):
            if when.action not in self.actions:
                return f"no authorization rule has action '{when.action}'"
        elif isinstance(when, TriggerReadbackMismatch):
            if not set(when.fields) & self.field_names:
                return f"none of the fields it corrects {when.fields} is a graded field"
        elif isinstance(when, TriggerProposal):
            if when.field not in self.field_names:
                return f"'{when.field}' is not a graded field"
        elif isinstance(when, TriggerLifecycle) and when.artifact not in self.artifact_ids:
            return f"artifact '{when.artifact}' does not exist"
        return None

    def check_reachability(self) -> None:
        plans = self.task.plans
        reachable: set[str] = set()
        changed = True
        while changed:
            changed = False
            for plan in plans:
                if plan.id in reachable:
                    continue
                if self._trigger_ok(plan, reachable) is None and all(
                    r in reachable for r in plan.requires
                ):
                    reachable.add(plan.id)
                    changed = True
        for i, plan in enumerate(plans):
            if plan.id not in reachable:
                why = self._trigger_ok(plan, reachable)
                if why is None:
                    missing = [r for r in plan.requires if r not in reachable]
                    why = f"it requires unreachable plan(s) {missing}"
                self.add(f"plans[{i}]", f"plan '{plan.id}' is unreachable: {why}")
                continue
            n = len(plan.realizations)
            if not MIN_REALIZATIONS <= n <= MAX_REALIZATIONS:
                self.add(f"plans[{i}].realizations",
                         f"reachable plan '{plan.id}' has {n} realization(s); it needs "
                         f"{MIN_REALIZATIONS}–{MAX_REALIZATIONS} (appendix B.2)")

    # ---------------------------------------------------------------- 4. leakage

    def check_leakage(self) -> None:
        graded = _graded_values(self.task)
        for i, plan in enumerate(self.task.plans):
            for j, realization in enumerate(plan.realizations):
                for leak in _leaks(self.task, plan, realization, graded):
                    self.add(f"plans[{i}].realizations[{j}].text",
                             f"realization '{realization.id}' leaks {leak}, which plan "
                             f"'{plan.id}' does not carry; reword it or carry that fact")

    def check_spoken_form(self) -> None:
        """Text the TTS would misread: identifiers and digit groups must be written the way a
        person says them ("E, 4, 4, 7, 1", "five five five, zero one nine nine")."""
        for i, plan in enumerate(self.task.plans):
            for j, realization in enumerate(plan.realizations):
                for token in misread_tokens(realization.text):
                    self.add(f"plans[{i}].realizations[{j}].text",
                             f"realization '{realization.id}' writes '{token}', which the TTS "
                             "would misread; write it the way a person says it (spell "
                             "identifiers character by character, digits in words or groups)")

    # ---------------------------------------------------------------- 7–8. speech bank

    def _audio_file(self, audio: str) -> Path | None:
        folder = self.task.folder.resolve()
        path = (folder / audio).resolve()
        return path if path.is_relative_to(folder) else None

    def check_audio(self) -> None:
        for i, plan in enumerate(self.task.plans):
            for j, realization in enumerate(plan.realizations):
                path = f"plans[{i}].realizations[{j}].audio"
                audio = self._audio_file(realization.audio)
                if audio is None:
                    self.add(path, f"audio path '{realization.audio}' leaves the task folder; "
                                   "give a path relative to it, e.g. bank/<id>.flac")
                elif not audio.is_file():
                    self.add(path, f"audio file '{realization.audio}' of realization "
                                   f"'{realization.id}' does not exist in the task folder; "
                                   f"{self.bank_hint}")

    def check_bank(self) -> None:
        t = self.task
        realizations = [(i, j, p, r) for i, p in enumerate(t.plans)
                        for j, r in enumerate(p.realizations)]
        if not realizations:
            return
        manifest_file = manifest_path(t.folder)
        rel_manifest = f"{manifest_file.parent.name}/{MANIFEST_NAME}"
        try:
            manifest = load_manifest(t.folder)
        except (OSError, ValueError) as exc:
            message = " ".join(str(exc).split())
            self.add("(top level)", f"unreadable bank manifest: {message}; {self.bank_hint}",
                     file=manifest_file)
            return
        if manifest is None:
            self.add("plans", f"no bank manifest ({rel_manifest}) for the task's "
                              f"{len(realizations)} realizations; {self.bank_hint}")
            return
        if manifest.task_id != t.id:
            self.add("task_id", f"manifest is for task '{manifest.task_id}', not '{t.id}'; "
                                f"{self.bank_hint}", file=manifest_file)
        for i, j, plan, realization in realizations:
            path = f"plans[{i}].realizations[{j}]"
            item = manifest.item(realization.id)
            if item is None:
                self.add(path, f"realization '{realization.id}' is not in {rel_manifest}; "
                               f"{self.bank_hint}")
            elif item.text != realization.text or item.plan != plan.id:
                self.add(f"{path}.text",
                         f"stale bank: {rel_manifest} holds {item.text!r} (plan '{item.plan}') "
                         f"for realization '{realization.id}'; {self.bank_hint}")
            elif PurePosixPath(item.file) != PurePosixPath(realization.audio):
                self.add(f"{path}.audio",
                         f"stale bank: {rel_manifest} gives '{item.file}' as the audio of "
                         f"realization '{realization.id}'; {self.bank_hint}")
            else:
                audio = self._audio_file(realization.audio)
                if audio is not None and audio.is_file() and sha256_file(audio) != item.sha256:
                    self.add(f"{path}.audio",
                             f"checksum mismatch: sha256 of '{realization.audio}' differs from "
                             f"{rel_manifest}; the audio changed after the bank was built, "
                             f"{self.bank_hint}")


_MISREAD_IDENTIFIER = re.compile(
    r"\b(?=[A-Za-z0-9-]*[A-Za-z])(?=(?:[A-Za-z-]*\d){3})[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\b"
)
"""A token with letters and three or more digits ("E4471", "INV-20419"): read as a number."""
_MISREAD_DIGIT_GROUPS = re.compile(r"\b\d+(?:[-/]\d+)+\b|\b\d+(?:\.\d+){2,}\b")
"""Digit groups joined by - / . ("555-0199", "07/09/1988", "2027-06-02"): misread as
arithmetic or a large number ("five hundred fifty-five one ninety-nine")."""


def misread_tokens(text: str) -> list[str]:
    """Tokens of a realization that the TTS would not read the way a person says them."""
    return [m.group() for rx in (_MISREAD_IDENTIFIER, _MISREAD_DIGIT_GROUPS)
            for m in rx.finditer(text)]


def validate_task(task: TaskSpec) -> list[Problem]:
    """All construction problems of one loaded task (empty when it is valid). File checks
    (audio, bank manifest) run only when the task was loaded from a file."""
    return _TaskChecker(task).run()


# --------------------------------------------------------------------------- a suite

_YAML_MARK = re.compile(r"line (\d+), column (\d+)")


def _load_problems(file: Path, error: TaskLoadError) -> list[Problem]:
    """Turn the loader's ``file: path: message`` lines into problems."""
    shown = file.resolve()
    problems: list[Problem] = []
    for line in error.problems:
        rest = line.removeprefix(f"{file}: ")
        if rest.startswith("not valid YAML:"):
            marks = _YAML_MARK.findall(rest)
            where = f"line {marks[-1][0]}, column {marks[-1][1]}" if marks else "(YAML)"
            body = rest.removeprefix("not valid YAML:").strip()
            said = [ln for ln in body.splitlines() if ln.strip() and not ln.startswith(" ")]
            problems.append(Problem(file=shown, path=where,
                                    message="not valid YAML: " + "; ".join(said)))
        elif ": " in rest:
            path, message = rest.split(": ", 1)
            problems.append(Problem(file=shown, path=path, message=" ".join(message.split())))
        else:
            problems.append(Problem(file=shown, path="(file)", message=rest))
    return problems


def _catalogue_problems(task: TaskSpec, shown: Path,
                        catalogues: dict[Path, list[CatalogueEntry] | None]) -> list[Problem]:
    """The task against its row of the suite's catalogue (``catalogue.yaml`` beside the task
    folders), when the suite has one; a broken catalogue is reported once."""
    path = catalogue_path(shown.parent.parent)
    if not path.is_file():
        return []
    problems: list[Problem] = []
    if path not in catalogues:
        try:
            catalogues[path] = load_catalogue(shown.parent.parent)
        except CatalogueError as exc:
            catalogues[path] = None
            problems += [Problem(file=path, path="catalogue", message=m.removeprefix(f"{path}: "))
                         for m in exc.problems]
    entries = catalogues[path]
    if entries is None:
        return problems
    return problems + [Problem(file=shown, path=where, message=message)
                       for where, message in task_mismatches(task, entries, path)]


def validate_paths(paths: Sequence[Path]) -> list[Problem]:
    """Validate every ``task.yaml`` under ``paths``: load errors, each task's own checks, task
    ids unique across the suite, and each folder named after its task id."""
    problems: list[Problem] = []
    for path in paths:
        if not find_task_files([path]):
            problems.append(Problem(file=path.resolve(), path="(file)",
                                    message="no task.yaml found here (expected a task.yaml, a "
                                            "task folder, or a folder of task folders)"))
    seen: dict[str, Path] = {}
    catalogues: dict[Path, list[CatalogueEntry] | None] = {}
    for file in find_task_files(list(paths)):
        try:
            task = load_task(file)
        except TaskLoadError as exc:
            problems += _load_problems(file, exc)
            continue
        problems += validate_task(task)
        shown = task.source_path or file
        problems += _catalogue_problems(task, shown, catalogues)
        if shown.parent.name != task.id:
            problems.append(Problem(file=shown, path="id",
                                    message=f"task id '{task.id}' does not match its folder "
                                            f"name '{shown.parent.name}'; rename one of them"))
        if task.id in seen:
            problems.append(Problem(file=shown, path="id",
                                    message=f"duplicate task id '{task.id}' (also used by "
                                            f"{seen[task.id]}); task ids must be unique across "
                                            "the suite"))
        else:
            seen[task.id] = shown
    return problems


__all__ = [
    "Problem",
    "leaked_values",
    "validate_paths",
    "validate_task",
    "value_surface_forms",
]
