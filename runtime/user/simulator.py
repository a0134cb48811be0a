"""The frozen user simulator (paper §3.3, appendix B.1–B.2).

:class:`RevealPolicy` reads observed agent acts, artifact lifecycle changes, approval requests
and world events and emits the next semantic :class:`~runtime.core.spec.UserPlan` (intent and
allowed
facts, no wording). :func:`select_realization` maps (task id, seed, plan id) to one frozen
realization, whose audio the :class:`FrozenSimulator` streams on the user channel in 40 ms frames.
There is no user LLM or TTS at run time.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from runtime.core.audio import (
    FRAME_MS,
    FRAME_SAMPLES,
    SAMPLE_RATE,
    SILENT_FRAME,
    Pcm,
    frames_before,
    quiet_edges_ms,
    silence,
    silent_block,
)
from runtime.core.events import DuplexFire, Event, UserPlanEvent, UserSpeechEnd, UserSpeechStart
from runtime.core.spec import (
    AuthorizationRule,
    DuplexEvent,
    FieldSpec,
    Lifecycle,
    Realization,
    TaskSpec,
    TriggerAct,
    TriggerApproval,
    TriggerApprovalWait,
    TriggerAsk,
    TriggerFallback,
    TriggerLifecycle,
    TriggerOffer,
    TriggerOpening,
    TriggerProposal,
    TriggerReadbackMismatch,
    TriggerStalled,
    TriggerWorld,
    UserPlan,
)
from runtime.core.values import (
    canonical_text,
    cardinal_numbers,
    counted_numbers,
    dates_in_text,
    numbers_in_text,
    split_items,
    unit_numbers,
    unit_numbers_near,
    value_in_text,
)
from runtime.session.observer import Act, SemanticActObserver
from runtime.speechbank.bank import BankPlayer


def select_realization(task_id: str, seed: int, plan: UserPlan, occurrence: int = 0) -> Realization:
    """Deterministic selection: the same (task, seed, plan) always starts from the same
    realization, and the ``occurrence``-th time the plan is spoken in a run takes the next
    one, so a repeated question never gets the identical words twice in a row."""
    if not plan.realizations:
        raise ValueError(f"{task_id}: plan '{plan.id}' has no realizations")
    digest = hashlib.sha256(f"{task_id}|{seed}|{plan.id}".encode()).digest()
    start = int.from_bytes(digest[:8], "big")
    return plan.realizations[(start + occurrence) % len(plan.realizations)]


MAX_PLANS_PER_TURN = 3
"""The most utterances the caller queues in answer to one agent turn (a multi-ask)."""
_ARTICLES = frozenset({"a", "an", "the", "of"})
_WEIGHS_PROPOSALS = frozenset({"inform", "offer", "ask", "summarize", "read_back", "confirm"})
"""Acts whose words can carry a proposed value for a negotiated field they name."""
_CALLERS_FIGURE = re.compile(
    r"\byou(?:'re| are|'d| would)? ?(?:asked|asking|ask|wanted|want|requested|mentioned|said|"
    r"proposed|hoped|came in|were after|had in mind)\b|\byour (?:ask|request|figure|number|"
    r"proposal|budget|bid|quote)\b", re.IGNORECASE)
"""Words that give a figure to the caller ("you asked for", "your ask of")."""
MAX_STALLED = 2
"""After a fallback, how many times the caller restates what it needs before it waits."""
_DECLINED = re.compile(
    r"\b(?:decided against|turned down|declined|said no to|passed on|instead of|rather than)\b",
    re.IGNORECASE)


def _offered(text: str) -> str:
    """``text`` without its clauses about a figure turned down ("Since you've decided against
    the fifteen percent discount, here's the cancellation"): no offer is in them."""
    return " ".join(c for c in re.split(r"(?<=[,;:])\s+", text) if not _DECLINED.search(c))


@dataclass(frozen=True)
class Chosen:
    """A plan the caller will speak, and why (logged as the ``user.plan`` trigger)."""

    plan: UserPlan
    trigger: str


_NEGATIONS = frozenset({
    "no", "not", "without", "none", "never", "nor", "cancel", "cancelled", "canceled",
    "withdrawn", "withdraw", "dropped", "skip", "skipping",
})


_LEFT_OUT = re.compile(
    r"\b(no|not|without|minus|except( for)?|dropp(ed|ing)|remov(ed|ing)|cancel+(ed|ing)|"
    r"tak(en|ing) off|leav(e|ing) out|left out)\b[^,.;:!?]*", re.IGNORECASE)
"""From a word that leaves an item out to the end of its phrase: "no health checks"."""
_LEFT_OUT_AFTER = re.compile(
    r"[^,.;:!?]*\b(stopped|dropped|removed|cancel+ed|taken off|coming off|came off|"
    r"off the list)\b", re.IGNORECASE)
"""A phrase that ends by leaving its item out: "with the furosemide stopped"."""


def _yes_no_stated(spec: FieldSpec, value: Any, text: str
                   ) -> Literal["match", "mismatch", "absent"]:
    """A yes/no choice is restated by naming the field, affirmed or negated ("with a
    preservation letter" says yes, "no letter then" and "isolation not verified" say no):
    a negation within four words before the field's name or three after it."""
    if {o.casefold() for o in spec.options} != {"yes", "no"} or str(value).casefold() not in (
            "yes", "no"):
        return "absent"
    words = re.findall(r"[a-z0-9']+", text.casefold())
    for name in sorted({spec.label, *spec.synonyms}, key=len, reverse=True):
        want = re.findall(r"[a-z0-9']+", name.casefold())
        for i in range(len(words) - len(want) + 1):
            if words[i:i + len(want)] != want:
                continue
            near = words[max(0, i - 4):i] + words[i + len(want):i + len(want) + 3]
            said = "no" if any(w in _NEGATIONS or w.endswith("n't") for w in near) else "yes"
            return "match" if said == str(value).casefold() else "mismatch"
    return "absent"


_PERSON_WORDS = frozenset({
    "name", "manager", "colleague", "physician", "clinician", "doctor", "sponsor",
    "beneficiary", "technician", "owner", "lead", "contact", "person", "attendees",
    "supervisor", "covering", "approver", "witness", "witnesses", "provider", "pcp",
})
_NOT_PERSON = frozenset({"company", "account", "organization", "practice", "employer",
                         "firm", "product", "app", "file", "plan", "email", "phone", "number",
                         "team", "vendor", "supplier", "carrier", "clinic", "hospital",
                         "hotel", "project", "brand", "store", "department", "school"})
"""Words that make a field called a "name" the name of a thing ("team name", "vendor"): a
question for a person ("Who's on the hook for that?") is not about it."""
_PLACE_WORDS = frozenset({"building", "location", "site", "address", "city", "room", "venue",
                          "where", "office", "branch"})


def _answer_kinds(text: str) -> set[str]:
    """The kinds of answer a question wants, by its question words: "when" or "what/which
    day" a date (a "when" alone never binds a time field: "When is good?" names no time),
    "what time" or "morning or afternoon" a time only, "how many/much" a number, "who" a
    person, "where" a place."""
    t = " ".join(re.findall(r"[a-z]+", text.casefold()))
    kinds: set[str] = set()
    if re.search(r"\b(what|which) (date|day|days|dates)\b", t) or re.search(r"\bwhen\b", t):
        kinds.add("date")
    if re.search(r"\bwhat time\b|\bmorning or afternoon\b|\bwhat hour\b", t):
        kinds = {"time"}
    if re.search(r"\bhow (many|much)\b", t):
        kinds.add("number")
    if re.search(r"\b(who|whom|whose)\b", t):
        kinds.add("person")
    if re.search(r"\bwhere\b", t) and not re.search(
            r"\bwhere (can|could|should) (we|i)\b|\bwhere\b.*\bfrom\b", t):
        kinds.add("place")  # not "Where are you calling from?" nor "Where can we reach you?"
    return kinds


def _field_kinds(spec: FieldSpec) -> set[str]:
    """The kinds of answer a field takes (see :func:`_answer_kinds`)."""
    words = set(re.findall(r"[a-z]+", f"{spec.name} {spec.label}".casefold().replace("_", " ")))
    kinds: set[str] = set()
    if spec.type == "date" or spec.grader == "normalized_date":
        kinds.add("date")
    if "time" in words and spec.type != "date":
        kinds.add("time")
    if spec.grader == "numeric_tolerance":
        kinds.add("number")
    if words & _PERSON_WORDS and not words & _NOT_PERSON and spec.grader not in (
            "numeric_tolerance", "normalized_date", "normalized_phone"):
        kinds.add("person")
    if words & _PLACE_WORDS:
        kinds.add("place")
    return kinds


class _Answer:
    """The plans chosen so far for one agent turn, each at most once, and the fields they
    cover."""

    def __init__(self) -> None:
        self.out: list[Chosen] = []
        self.covered: set[str] = set()
        self.proposing: set[str] = set()
        """Texts of the acts that carried a figure for a negotiated field (heard as an
        offer: accepted or countered)."""

    def add(self, plan: UserPlan | None, trigger: str) -> bool:
        """Choose ``plan`` (once); True when there is a plan (new or chosen already)."""
        if plan is None or any(c.plan.id == plan.id for c in self.out):
            return plan is not None
        self.out.append(Chosen(plan, trigger))
        return True


def _bare_figures(text: str, low: float) -> list[float]:
    """The numbers ``text`` says with neither unit, read in thousands where a field's figures
    start at ``low`` of ten thousand or more ("one twenty-eight" of a salary)."""
    priced = set(unit_numbers(text, "money")) | set(unit_numbers(text, "percent"))
    return [n * 1000 if n < 1000 and low >= 10_000 else n
            for n in numbers_in_text(text) if n not in priced]


def _numeric_values(task: TaskSpec, spec: FieldSpec) -> list[float]:
    """A numeric field's gold and, for a caller's fact, every version of it."""
    values: list[Any] = [spec.gold]
    if spec.source.fact is not None:
        fact = next((f for f in task.user.facts if f.id == spec.source.fact), None)
        if fact is not None:
            values += [v.value for v in fact.versions]
    out: list[float] = []
    for v in values:
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            continue
    return out


class RevealPolicy:
    """Chooses the caller's next plans from what has been observed. Pure bookkeeping, no
    audio. Both the frozen simulator and a live participant's cue mode run it.

    What the caller does with an agent turn, in order (docs/grading.md, "The simulated
    caller"): a due world event first; otherwise it checks every value the agent restated
    against its current facts and corrects what is wrong; accepts or counters a value the
    agent proposes for a negotiated field against the persona's limits (a value it already
    agreed to, restated, needs no new answer); answers an approval request for a gated action
    (granting only when the rule's conditions hold and nothing in the same turn was corrected
    or countered, otherwise saying what it is waiting for); answers every field asked (a
    multi-ask gets one answer per field); replies to offers of other actions; then lifecycle,
    act, fallback and restatement plans.
    """

    def __init__(self, task: TaskSpec) -> None:
        self.task = task
        self.spoken: list[str] = []
        self.lifecycles: dict[str, Lifecycle] = {a.id: Lifecycle.DRAFT for a in task.artifacts}
        self.world_events: set[str] = set()
        self._observer = SemanticActObserver.for_task(task)
        self._order = {id(p): i for i, p in enumerate(task.plans)}
        """Each plan's place in the task (a tie on priority goes to the earlier one)."""
        self._clock = 0
        self._edited: dict[str, int] = {}
        """Per artifact, the logical time of its last material edit."""
        self._stated: dict[str, int] = {}
        """Per artifact, the logical time the agent last said what it holds."""
        self._idle_answers = 0
        """Consecutive fallback / stalled answers (nothing the caller could act on)."""
        self._verified = False
        """The agent's last restatement was checked and right: a bare "Is that right?"
        after it can be confirmed."""
        self._negotiated = list(dict.fromkeys(
            p.when.field for p in task.plans if isinstance(p.when, TriggerProposal)))
        """The negotiated fields (those with proposal plans), in the task's order."""
        self._limits: dict[str, tuple[float, float]] = {}
        """Per negotiated field, the span its figures can plausibly take: half to twice the
        limit at which the persona accepts (its accepting proposal plans' bound)."""
        self._known_figures: dict[str, set[float]] = {}
        """Per negotiated field, the known values of the task's other numeric fields said in
        its unit (three free months is no three percent)."""
        for name in self._negotiated:
            plans = [p for p in task.plans
                     if isinstance(p.when, TriggerProposal) and p.when.field == name]
            # the limit that parts acceptance from a counter: an accepting plan's bound
            bounds = [b for p in plans if p.intent != "decline"
                      for b in [p.when.min if p.when.min is not None else p.when.max]  # type: ignore[union-attr]
                      if b is not None] or [
                b for p in plans for b in (p.when.min, p.when.max) if b is not None]  # type: ignore[union-attr]
            self._limits[name] = (min(bounds) / 2, max(bounds) * 2)
            unit = self._unit_of(name)[0]
            self._known_figures[name] = {
                float(v) for _a, f in task.graded_fields()
                if f.name != name and f.grader == "numeric_tolerance"
                and self._unit_of(f.name)[0] == unit for v in _numeric_values(task, f)}
        self._accepting: dict[str, tuple[str, float, int]] = {}
        """Per negotiated field, the last acceptance chosen: its plan, the value it accepts
        and how often that plan had been spoken then (spoken since = agreed)."""

    # ------------------------------------------------------------------ bookkeeping

    def occurrences(self, plan_id: str) -> int:
        return self.spoken.count(plan_id)

    def on_artifact(self, artifact_id: str, state: Lifecycle, changed: Sequence[str] = ()) -> None:
        """An artifact snapshot: its lifecycle, and which field values changed."""
        self.lifecycles[artifact_id] = state
        if changed:
            self._clock += 1
            self._edited[artifact_id] = self._clock

    def _eligible(self, plan: UserPlan) -> bool:
        if plan.once and plan.id in self.spoken:
            return False
        return all(r in self.spoken for r in plan.requires)

    def _best(self, plans: Iterable[UserPlan]) -> UserPlan | None:
        eligible = [p for p in plans if self._eligible(p)]
        if not eligible:
            return None
        return max(eligible, key=lambda p: (p.priority, -self._place(p)))

    def _place(self, plan: UserPlan) -> int:
        """The plan's place in the task (a live participant's plans may be copies: found by
        equality then)."""
        place = self._order.get(id(plan))
        return place if place is not None else self.task.plans.index(plan)

    def _where(self, cls: type[Any], **match: Any) -> UserPlan | None:
        return self._best(
            p for p in self.task.plans
            if isinstance(p.when, cls) and all(getattr(p.when, k) == v for k, v in match.items())
        )

    def opening(self) -> UserPlan | None:
        return self._where(TriggerOpening)

    # ------------------------------------------------------------------ facts

    def _spec(self, field: str) -> FieldSpec | None:
        return next((f for _a, f in self.task.graded_fields() if f.name == field), None)

    def current_value(self, field: str) -> tuple[FieldSpec, Any, UserPlan] | None:
        """What the caller now believes a field holds, and the plan that would correct a
        wrong read-back of it; None when the caller cannot judge the field (a value from a
        document, or no correction plan authored)."""
        spec = self._spec(field)
        fix = self._best(p for p in self.task.plans
                         if isinstance(p.when, TriggerReadbackMismatch) and field in p.when.fields)
        if spec is None or fix is None or spec.source.fact is None:
            return None
        carried = self.task.carried_version(fix, spec.source.fact)
        return (spec, carried.value, fix) if carried is not None else None

    def check_restatement(self, act: Act) -> Literal["match", "mismatch", "unknown"]:
        """Whether a read-back or confirmation of ``act.field`` states the caller's current
        value. A read-back that does not contain the value states another one."""
        known = self.current_value(act.field) if act.field else None
        if known is None:
            return "unknown"
        spec, value, _fix = known
        text = act.text
        persona = self.task.user.persona.name
        if spec.grader == "set_f1" and any(canonical_text(v) == canonical_text(persona)
                                           for v in split_items(value)):
            # "So that's you and Victor Hale": to the caller, "you" is the caller's own name
            text = re.sub(r"\byou(rself)?\b", persona, text, flags=re.IGNORECASE)
        found = value_in_text(spec.grader, value, text, tolerance=spec.tolerance,
                              options=spec.options, reference=self.task.reference_date,
                              restatement=True)
        if found == "absent" and spec.grader == "enum":
            found = _yes_no_stated(spec, value, text)
        if found == "match" and self._names_a_dropped_item(spec, value, text):
            return "mismatch"
        if found == "match":
            return "match"
        if found == "mismatch" or (act.act == "read_back" and spec.grader != "enum"):
            return "mismatch"
        return "unknown"  # a choice said in other words ("the whole office") is not judged

    def _names_a_dropped_item(self, spec: FieldSpec, value: Any, text: str) -> bool:
        """A list read back with an item the caller has taken off it ("mental health support,
        physiotherapy and health checks" after the health checks were cancelled): every item
        said is not the list the caller now holds."""
        if spec.grader not in ("set_f1", "ordered_list") or spec.source.fact is None:
            return False
        fact = self.task.user.fact(spec.source.fact)
        if fact is None:
            return False
        now = {canonical_text(item) for item in split_items(value)}
        dropped = {item for version in fact.versions for item in split_items(version.value)
                   if canonical_text(item) not in now}
        # "..., no health checks" or "with the furosemide stopped" says it is off the list
        kept = _LEFT_OUT_AFTER.sub(" ", _LEFT_OUT.sub(" ", text))
        return any(value_in_text("semantic", item, kept) == "match" for item in dropped)

    # ------------------------------------------------------------------ approval

    def approval_block(self, rule: AuthorizationRule) -> Literal["not_ready", "not_stated"] | None:
        """Why the caller would not approve ``rule`` now, or None when it would."""
        if "ready" in rule.requires and self.lifecycles.get(
                rule.artifact, Lifecycle.DRAFT) is not Lifecycle.READY_FOR_REVIEW:
            return "not_ready"
        if "stated" in rule.requires and self._stated.get(rule.artifact, -1) <= self._edited.get(
                rule.artifact, -1):
            return "not_stated"
        return None

    def _note_statements(self, acts: Sequence[Act]) -> None:
        """A turn that restates values of an artifact, summarizes, or names it in an
        approval request has said what the artifact holds."""
        for act in acts:
            art: str | None = None
            if act.act in ("read_back", "confirm", "summarize") and act.artifact:
                art = act.artifact
            elif act.act == "summarize" and len(self.task.artifacts) == 1:
                art = self.task.artifacts[0].id
            elif act.act == "request_approval" and act.artifact and any(
                    self._observer.names_object(a.text, act.artifact) for a in acts):
                art = act.artifact  # the request's turn names what it will carry out
            if art is not None:
                self._clock += 1
                self._stated[art] = self._clock

    # ------------------------------------------------------------------ the answer

    def respond(self, acts: Sequence[Act]) -> list[Chosen]:
        """The plans answering a finished agent turn, in the order to speak them: a world
        event's plan; else corrections of restated values, the answer to a proposed value,
        the answer to an approval request, answers to questions, the reply to an offer; else,
        when none applies, a lifecycle or act plan, the fallback or the stalled caller."""
        world = self._best(
            p for p in self.task.plans
            if isinstance(p.when, TriggerWorld) and p.when.event in self.world_events
        )
        if world is not None:
            return self._done([Chosen(world, f"world_event:{world.when.event}")])  # type: ignore[union-attr]
        self._note_statements(acts)
        answer = _Answer()
        verdicts = {i: self.check_restatement(a) for i, a in enumerate(acts)
                    if a.act in ("read_back", "confirm") and a.field is not None}
        # Fields each act's words name (lexicon or the caller's values), read once.
        named = {i: [n for _a, n in self._observer.fields_in(a.text)] for i, a in enumerate(acts)}
        confirmed, mismatched = self._answer_restatements(acts, verdicts, named, answer)
        countered, accepts = self._answer_proposals(acts, named, answer)
        approval = self._answer_approval_request(acts, mismatched or countered)
        open_counter = None if approval is None or countered else self._open_counter(accepts)
        if open_counter is not None:
            # "That's the figure I have. Shall I go ahead?" after a counter: no deal yet
            answer.add(open_counter, f"proposal_open:{open_counter.when.field}")  # type: ignore[union-attr]
            approval = None
        grant = approval[0] if approval is not None and approval[1].startswith(
            "approval_request:") else None
        for field_name, (plan, trigger, offered) in accepts.items():
            # "Yes, go ahead" to terms it has just heard accepts them: one answer, not two.
            said = grant if grant is not None else plan
            if said is plan:
                answer.add(plan, trigger)
            self._accepting[field_name] = (said.id, offered, self.occurrences(said.id))
        if approval is not None:
            answer.add(*approval)
        self._answer_questions(acts, verdicts, answer)
        for act in acts:  # 5. Offers of something other than a gated action.
            # ("I can raise it to thirteen thousand. Would that work for you?" offers the
            # figure, answered above, not something more to decline)
            if act.act == "offer" and act.text not in answer.proposing:
                reply = "accept" if self._observer.offers_task_step(act.text) else "decline"
                answer.add(self._where(TriggerOffer, reply=reply), f"offer:{reply}")
                break
        if answer.out:
            return self._done(answer.out[:MAX_PLANS_PER_TURN])
        return self._answer_nothing_specific(acts, confirmed)

    def _answer_restatements(self, acts: Sequence[Act], verdicts: Mapping[int, str],
                             named: dict[int, list[str]], answer: _Answer) -> tuple[bool, bool]:
        """1. Restated values: correct what is wrong; "yes" to a checked restatement the
        agent asks about. Returns (confirmed, mismatched)."""
        confirmed = False
        for i, verdict in verdicts.items():
            field = acts[i].field
            assert field is not None
            known = self.current_value(field)
            if verdict == "mismatch" and known is not None:
                answer.add(known[2], f"readback_mismatch:{field}")
                answer.covered.add(field)
            elif verdict == "match":
                confirmed = True
                answer.covered.add(field)
        mismatched = bool(answer.out)
        if verdicts:
            self._verified = confirmed and not mismatched
        bare_confirm = any(a.act == "confirm" and a.field is None for a in acts)
        if bare_confirm and self._verified and not mismatched:
            confirmed = True  # "Is that right?" about a restatement the caller checked
        asked = any(a.act == "confirm" for a in acts)  # a read-back statement needs no "yes"
        proposes = any(self._named_proposal(a, n) is not None
                       for i, a in enumerate(acts) for n in named[i])
        if confirmed and asked and not mismatched and not proposes:
            answer.add(self._where(TriggerAct, act="confirm"), "act:confirm")
        return confirmed, mismatched

    def _answer_proposals(
        self, acts: Sequence[Act], named: dict[int, list[str]], answer: _Answer,
    ) -> tuple[bool, dict[str, tuple[UserPlan, str, float]]]:
        """2. Values the agent proposes for negotiated fields ("The best I can do is 15%."),
        judged by the persona's limits before any approval request of the same turn: the
        terms come before the go-ahead. A counter is answered here (and True returned: no
        approval now); acceptances are returned by field (plan, trigger, value) for
        :meth:`respond` to speak, or to leave to the approval that accepts them."""
        countered = False
        accepts: dict[str, tuple[UserPlan, str, float]] = {}

        def reply(act: Act, field_name: str, figures: list[float] | None = None) -> None:
            nonlocal countered
            if field_name in answer.covered:
                return
            about = act.model_copy(update={"field": field_name, "text": _offered(act.text)})
            if self._restates_agreement(about, figures):
                answer.covered.add(field_name)  # a recap of the value it agreed to
                return
            found = self._proposal(about, figures)
            if found is None:
                return
            answer.covered.add(field_name)
            answer.proposing.add(act.text)
            plan, offered = found
            if plan.intent == "decline":
                answer.add(plan, f"proposal:{field_name}")
                countered = True
            else:
                accepts[field_name] = (plan, f"proposal:{field_name}", offered)

        for act in acts:
            if act.field is not None:
                reply(act, act.field)
        for i, act in enumerate(acts):
            # A negotiated field the act's words name, whatever else the act does: "You asked
            # for three hundred; the best I can do is one fifty in goodwill credit" restates
            # the caller's ask and offers; a recap states the terms it would carry out.
            if act.act in _WEIGHS_PROPOSALS:
                for name in named[i]:
                    if name != act.field:
                        reply(act, name)
        said = {n for names in named.values() for n in names} | {
            a.field for a in acts if a.field}
        for field_name in self._negotiated:  # an offer that names no field
            if field_name not in answer.covered and field_name not in said:
                unnamed = next(((a, found) for a in acts if a.act in _WEIGHS_PROPOSALS
                                for found in [self._unnamed_offer(a, field_name)] if found), None)
                if unnamed is not None:
                    reply(unnamed[0], field_name, unnamed[1])
        for field_name in self._accepting:  # an agreed value changed where no act names it
            if field_name not in answer.covered:
                changed = next((a for a in acts if self._reopens(
                    a.model_copy(update={"field": field_name}))), None)
                if changed is not None:
                    reply(changed, field_name)
        return countered, accepts

    def _open_counter(self, accepts: Mapping[str, Any]) -> UserPlan | None:
        """The counter to a lowball that is the caller's last word on a negotiated field it has
        agreed nothing on (nor in this turn): its answer to a request for leave that brings no
        better offer. A later answer about the field (an acceptance, however authored) closes
        it, and a refusal of any figure ("No more offers, I want it cancelled") opens none."""
        for field_name in self._negotiated:
            if field_name in accepts or self.agreed(field_name) is not None:
                continue
            about = {p.id: p for p in self.task.plans if field_name in (
                [p.when.field] if isinstance(p.when, TriggerProposal)
                else getattr(p.when, "fields", []))}
            last = next((about[s] for s in reversed(self.spoken) if s in about), None)
            if (last is not None and isinstance(last.when, TriggerProposal)
                    and last.intent == "decline" and self._below_acceptance(last)):
                return last  # the caller's last word on the field is a counter
        return None

    def _below_acceptance(self, counter: UserPlan) -> bool:
        """A counter's range lies apart from an acceptance's: the caller wants a better figure."""
        c = counter.when
        assert isinstance(c, TriggerProposal)
        for p in self.task.plans:
            a = p.when
            if (isinstance(a, TriggerProposal) and a.field == c.field and p.intent != "decline"
                    and ((c.max is not None and a.min is not None and c.max < a.min)
                         or (c.min is not None and a.max is not None and c.min > a.max))):
                return True
        return False

    def agreed(self, field_name: str) -> float | None:
        """The value of a negotiated field the caller has said yes to, if any."""
        plan_id, offered, before = self._accepting.get(field_name, ("", 0.0, 0))
        return offered if plan_id and self.occurrences(plan_id) > before else None

    def _restates_agreement(self, act: Act, offered: list[float] | None = None) -> bool:
        """Once the caller has agreed to a value for ``act.field``, a turn reopens it only
        by stating another figure in the field's unit: one that states the agreed figure
        (a recap) or none with the unit (other numbers of the deal) needs no new answer."""
        agreed = self.agreed(act.field) if act.field else None
        if agreed is None:
            return False
        figures, with_unit = (offered, True) if offered else self._proposed_numbers(act)
        return not with_unit or any(abs(f - agreed) < 1e-9 for f in figures)

    def _answer_approval_request(self, acts: Sequence[Act], blocked: bool,
                                 ) -> tuple[UserPlan | None, str] | None:
        """3. The answer to an approval request for a gated action not yet submitted (plan,
        trigger): leave, or why not yet; none after a correction or a counter-offer (the agent
        must ask again)."""
        for act in acts:
            if act.act != "request_approval" or not act.action:
                continue
            rule = next((r for r in self.task.authorization if r.action == act.action), None)
            if rule is None or self.lifecycles.get(rule.artifact, Lifecycle.DRAFT).rank >= (
                    Lifecycle.SUBMITTED.rank):
                continue
            if blocked:
                return None  # the correction or counter comes first; the agent must ask again
            block = self.approval_block(rule)
            if block is None:
                return (self._where(TriggerApproval, action=rule.action),
                        f"approval_request:{rule.action}")
            return (self._where(TriggerApprovalWait, action=rule.action, reason=block),
                    f"approval_wait:{rule.action}:{block}")
        return None

    def _answer_questions(self, acts: Sequence[Act], verdicts: Mapping[int, str],
                          answer: _Answer) -> None:
        """4. Questions: one answer per field asked (a proposed value was answered in 2.);
        a question that names no field by the kind of answer it wants."""
        covered = answer.covered
        for i, act in enumerate(acts):
            if act.field is None or act.field in covered:
                continue
            if act.act == "ask" or (act.act == "confirm" and verdicts.get(i) == "unknown"):
                plan = self._best(p for p in self.task.plans
                                  if isinstance(p.when, TriggerAsk) and act.field in p.when.fields)
                if answer.add(plan, f"ask:{act.field}") and plan is not None:
                    covered.update(plan.when.fields)  # type: ignore[union-attr]
        # A question that names no field: the one the caller has not answered yet that the
        # question's kind of answer or its choices fit ("When did this start?", "A laptop or a
        # desktop?").
        for act in acts:
            if act.act == "ask" and act.field is None:
                plan = self._answer_by_kind(act.text, covered | {
                    f for c in answer.out for f in getattr(c.plan.when, "fields", ())})
                if plan is not None and isinstance(plan.when, TriggerAsk) and answer.add(
                        plan, f"ask_kind:{plan.when.fields[0]}"):
                    covered.update(plan.when.fields)

    def _answer_nothing_specific(self, acts: Sequence[Act], confirmed: bool) -> list[Chosen]:
        """6. Nothing specific: lifecycle, acts, then fallback and restatement."""
        plan = self._best(
            p for p in self.task.plans
            if isinstance(p.when, TriggerLifecycle)
            and self.lifecycles.get(p.when.artifact, Lifecycle.DRAFT).rank >= p.when.state.rank
        )
        if plan is not None:
            return self._done([Chosen(plan, "lifecycle")])
        for act in acts:
            if act.act == "confirm" and not confirmed:
                continue  # never "yes, that's right" to a value the caller has not checked
            plan = self._where(TriggerAct, act=act.act)
            if plan is not None:
                return self._done([Chosen(plan, f"act:{act.act}")])
        if not acts:
            return []
        if self._idle_answers == 0:
            plan = self._where(TriggerFallback)
            if plan is not None:
                return self._idle([Chosen(plan, "fallback")])
        if self._idle_answers <= MAX_STALLED:
            plan = self._where(TriggerStalled)
            if plan is not None:
                return self._idle([Chosen(plan, "stalled")])
        return []

    def _named_proposal(self, act: Act, name: str) -> tuple[UserPlan, float] | None:
        """The caller's answer to ``act`` read as proposing a value for field ``name``, and
        the value, when it proposes one."""
        return self._proposal(act.model_copy(update={"field": name}))

    def _answer_by_kind(self, text: str, covered: set[str]) -> UserPlan | None:
        """The answer to a question that names no field, when exactly one answer the caller
        has not given yet fits it: by the choices it offers (two options of one enum field),
        else by the kind of answer its question word wants (a date, a time, a number, a
        person, a place). None when none fits, or several do (the caller asks back)."""
        open_plans = {p.id: (p, set(p.when.fields)) for p in self.task.plans
                      if isinstance(p.when, TriggerAsk) and p.id not in self.spoken
                      and not set(p.when.fields) & covered}
        specs = {f.name: f for a in self.task.artifacts for f in a.fields}
        fields = [specs[f] for _p, names in open_plans.values() for f in names if f in specs]
        chosen = {f.name for f in fields if f.grader == "enum" and sum(
            value_in_text("enum", o, text, options=f.options) == "match" for o in f.options) >= 2}
        if not chosen:
            kinds = _answer_kinds(text)
            chosen = {f.name for f in fields if kinds & _field_kinds(f)}
        plans = [(p, names) for p, names in open_plans.values() if names & chosen]
        if len({frozenset(names) for _p, names in plans}) != 1:
            return None
        return self._best(p for p, _names in plans)  # one answer, perhaps in versions

    def _done(self, chosen: list[Chosen]) -> list[Chosen]:
        self._idle_answers = 0
        return chosen

    def _idle(self, chosen: list[Chosen]) -> list[Chosen]:
        self._idle_answers += 1
        return chosen

    def _proposal(self, act: Act, figures: list[float] | None = None,
                  ) -> tuple[UserPlan, float] | None:
        """The plan answering a value the agent proposes for a negotiated field (by the
        persona's range), and the value (``figures``: the ones already read off the act)."""
        plans = [p for p in self.task.plans
                 if isinstance(p.when, TriggerProposal) and p.when.field == act.field]
        if not plans:
            return None
        numbers = figures or self._proposed_numbers(act)[0]
        if not numbers:
            return None
        # "Three hundred is too much, but I can do one fifty": the last one is the offer; a
        # figure the caller gave itself ("against your ask of 3,600") is not an offer unless
        # it is the only one and the words do not give it back to the caller.
        own = self._own_figures()
        offered = [n for n in numbers if n not in own][-1:]
        if not offered and not _CALLERS_FIGURE.search(act.text):
            offered = numbers[-1:]  # "Fine, thirty-six hundred it is": its own figure agreed
        if not offered:
            return None  # "You asked for three hundred": its own figure, said back
        plan = self._best(
            p for p in plans
            if (p.when.min is None or offered[0] >= p.when.min - 1e-9)  # type: ignore[union-attr]
            and (p.when.max is None or offered[0] <= p.when.max + 1e-9)  # type: ignore[union-attr]
        )
        return (plan, offered[0]) if plan is not None else None

    def _proposed_numbers(self, act: Act) -> tuple[list[float], bool]:
        """The figures ``act`` states for its negotiated field, and whether they carry the
        field's unit: a percent for a discount or ``_pct`` field, dollars otherwise, or for a
        field that counts something ("number of monthly payments") the numbers said as that
        count; else (False) every number it says without the other unit within the field's
        span (none in a sentence that says a date)."""
        unit, cues = self._unit_of(act.field)
        if unit == "count":
            found = counted_numbers(act.text, cues)
            if found:
                return found, True
            priced = set(unit_numbers(act.text, "money")) | set(unit_numbers(act.text, "percent"))
            return [n for n in cardinal_numbers(act.text) if n not in priced], False
        found = unit_numbers(act.text, unit)
        if len(set(found)) > 1:
            # A recap with several figures in the unit: the ones said with the field's words
            # ("eighteen percent off compute, ten percent rollover" for a discount).
            found = unit_numbers_near(act.text, unit, cues) or found
        if found:
            return found, True
        if dates_in_text(act.text, self.task.reference_date):
            return [], False  # "your cover ends May first": a day is no figure of the deal
        lo, hi = self._limits.get(act.field or "", (0.0, float("inf")))
        # a bare number is a figure of the deal only in the field's span ("the card ending
        # 8842" offers no goodwill credit)
        return [n for n in _bare_figures(act.text, lo) if lo <= n <= hi], False

    def _unit_of(self, field_name: str | None
                 ) -> tuple[Literal["percent", "money", "count"], list[str]]:
        """How a negotiated field's figures are said, and the words said with them: a count
        for a "number of …" field (its nouns), a percent for a discount or ``_pct`` field,
        dollars otherwise (the label's words; "off" and "discount" for a percent)."""
        spec = self._spec(field_name) if field_name else None
        label = spec.label.lower() if spec else ""
        words = f"{field_name} {label}".lower()
        if label.startswith("number of "):
            return "count", [w for w in label.removeprefix("number of ").split()
                             if w not in _ARTICLES]
        cues = [w for w in label.split() if len(w) > 3]
        if "pct" in words or "percent" in words or "discount" in words:
            return "percent", [*cues, "off", "discount"]
        return "money", cues

    def _unnamed_offer(self, act: Act, field_name: str) -> list[float]:
        """The figures ``act`` offers for negotiated field ``field_name`` without naming it
        ("I can take five percent off", "so I can do thirty-three fifty a load", "the most I
        can approve is one twenty-eight"): figures in the field's unit (a percent; for an
        amount, dollars or a bare number, "one twenty-eight" read in thousands when the
        field's amounts are), from half to twice the limit the persona accepts at, that are
        no other field's known value, nor a figure of the caller's the sentence gives back to
        it ("you asked for three hundred"; "so three percent it is" agrees to it). A
        sentence that says a date states no bare amount (its day or year is none)."""
        unit, _cues = self._unit_of(field_name)
        lo, hi = self._limits[field_name]
        text = _offered(act.text)
        if unit == "count":
            return []
        figures = unit_numbers(text, unit)
        if unit == "money" and not dates_in_text(text, self.task.reference_date):
            figures += [n for n in _bare_figures(text, lo) if n not in figures]
        own = self._own_figures() if _CALLERS_FIGURE.search(text) else set()
        return [f for f in figures if lo <= f <= hi and f not in own
                and f not in self._known_figures[field_name]]

    def _reopens(self, act: Act) -> bool:
        """Whether a turn the observer did not tag with ``act.field`` states, with the
        field's own words, a figure other than the one the caller agreed to ("sixteen percent
        off" in a recap after eighteen was agreed)."""
        agreed = self.agreed(act.field) if act.field else None
        if agreed is None:
            return False
        unit, cues = self._unit_of(act.field)
        figures = (counted_numbers(act.text, cues) if unit == "count"
                   else unit_numbers_near(act.text, unit, cues))
        return bool(figures) and all(abs(f - agreed) > 1e-9 for f in figures)

    def _own_figures(self) -> set[float]:
        """The numbers the caller has said itself (the numeric facts of its spoken plans)."""
        out: set[float] = set()
        for plan in self.task.plans:
            if plan.id not in self.spoken:
                continue
            for ref in plan.facts:
                carried = self.task.carried_version(plan, ref.fact)
                value = None if carried is None or isinstance(carried.value, bool) else (
                    carried.value)
                if isinstance(value, (int, float)) or (
                        isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?", value)):
                    out.add(float(value))
        return out


@dataclass
class _Utterance:
    plan: UserPlan
    realization: Realization
    audio: Pcm
    pos: int = 0


class DuplexSchedule:
    """Authored duplex events on the media clock: an event is armed when the caller finishes
    speaking its anchor plan and fires ``offset_ms`` later, whatever the agent does (paper
    §3.3, B.3). Each event fires at most once per run."""

    def __init__(self, task: TaskSpec) -> None:
        self._task = task
        self._armed: list[tuple[int, DuplexEvent]] = []
        self._seen: set[str] = set()

    def arm_after(self, plan_id: str, end_ms: int) -> None:
        for event in self._task.duplex_events:
            if event.anchor.after_plan == plan_id and event.id not in self._seen:
                self._seen.add(event.id)
                self._armed.append((end_ms + event.anchor.offset_ms, event))

    def next_at(self) -> int | None:
        """When the earliest armed event fires (None: nothing armed)."""
        return min((at for at, _ in self._armed), default=None)

    def due(self, t_ms: int) -> list[tuple[int, DuplexEvent]]:
        """The events whose time has come, removed from the schedule."""
        if not self._armed:
            return []  # every frame asks; most of a run has nothing armed
        due = [(at, ev) for at, ev in self._armed if t_ms >= at]
        self._armed = [(at, ev) for at, ev in self._armed if t_ms < at]
        return due

    def fire(self, t_ms: int, overlap: bool, events: list[Event]
             ) -> Iterator[tuple[UserPlan, str]]:
        """The plans of the events due at ``t_ms``, each with its trigger, in order; a
        ``duplex.fire`` (``overlap``: agent audio was playing) is logged just before each.
        Both user sources take them this way (the frozen simulator queues each first, a
        live participant is cued at once)."""
        for fire_at, event in self.due(t_ms):
            plan = self._task.plan(event.plan)
            if plan is not None:
                events.append(DuplexFire(
                    event_id=event.id, kind=event.kind, plan_id=plan.id, anchor_ms=fire_at,
                    overlap=overlap,
                ))
                yield plan, f"duplex:{event.id}"


def opening_after_silence(policy: RevealPolicy, t_ms: int) -> UserPlan | None:
    """The opening plan when the task has the caller open after ``silence_ms`` of nobody
    speaking and that time has come (asked by both user sources until they have opened or
    the agent has spoken)."""
    opening = policy.opening()
    if opening is not None and opening.when.on == "opening" and t_ms >= opening.when.silence_ms:
        return opening
    return None


@dataclass(frozen=True)
class SpeechAuthorization:
    """A grant or revocation decided from a live participant's speech (runtime/user/live_user.py).
    The orchestrator applies it to the ledger right after logging the frame's events, whose
    last one is the ``auth.decision`` it came from."""

    decision: Literal["grant", "revoke"]
    action: str
    plan_id: str | None
    evidence: str
    """The transcript the decision rests on."""


@dataclass
class UserFrame:
    pcm: Pcm
    events: list[Event] = field(default_factory=list)
    finished: UserPlan | None = None
    """The plan whose utterance ended in this frame (its authorization takes effect)."""
    authorization: SpeechAuthorization | None = None
    """Live participants only: the authorization read from their speech (never from a plan)."""
    ends_session: bool = False
    """Live participants only: the utterance attributed to an ``ends_session`` plan ended."""
    late: bool = False
    """Live participants only: the microphone's audio for this frame has not arrived (an
    underrun short of a stall). ``pcm`` is silence on the media clock and in the trace, but
    it is not a pause: the agent is not sent it (the late audio follows in order, so a
    provider's VAD hears no hole), and the participant's VAD and recognizer skip it."""


class UserSource(Protocol):
    """What the orchestrator needs from the user side: the frozen simulator or a live
    participant in cue mode (runtime/user/live_user.py)."""

    policy: RevealPolicy
    agent_audible: bool
    """Set by the orchestrator before each frame: agent audio is playing (a duplex event
    logs whether it overlapped agent speech)."""

    @property
    def speaking(self) -> bool: ...

    @property
    def busy(self) -> bool:
        """The user is speaking, about to speak, or their last utterance is still being
        processed: the run must not end for quiet now."""
        ...

    @property
    def authorization_pending(self) -> bool:
        """An authorization decision on an utterance that has ended is still being computed
        (live ASR): the orchestrator holds approval-gated tool calls until it is applied."""
        ...

    def next_frame(self, t_ms: int) -> UserFrame: ...

    def on_agent_speech_start(self, t_ms: int) -> None: ...

    def on_agent_turn_end(self, acts: list[Act], t_ms: int) -> None: ...

    def on_lifecycle(self, artifact_id: str, state: Lifecycle,
                     changed: Sequence[str] = ()) -> None: ...

    def on_world_event(self, event_id: str) -> None: ...


CHAIN_SILENCE_MS = 320
"""Quiet between two utterances the caller queued for one agent turn (a multi-ask's answers),
from the last loud frame of one to the first of the next: a breath between sentences, under
the longest pause inside one realization (480 ms) and under an end-of-turn silence (the
scripted agent waits 640 ms, OpenAI's server VAD 500 ms by default), so they read as one reply.
Each file's own quiet lead-in and tail count towards it: Kokoro files keep 120 ms and 200 ms,
so the next one starts as the last ends; counting only the 240 ms between files, two answers
were 560 ms apart and an agent could take the turn between them (until 2026-12-04)."""


class FrozenSimulator:
    """Streams frozen realizations on the user channel, reacting on the media clock."""

    def __init__(self, task: TaskSpec, seed: int, bank: BankPlayer) -> None:
        self.task = task
        self.seed = seed
        self.policy = RevealPolicy(task)
        self.agent_audible = False
        self._bank = bank
        self._current: _Utterance | None = None
        self._queue: list[tuple[int, UserPlan, str]] = []
        self._duplex = DuplexSchedule(task)
        self._deferred: list[Act] = []
        """Acts of agent turns that ended while the caller was speaking: answered next."""
        self._last_end = -CHAIN_SILENCE_MS
        self._last_trail_ms = 0
        self._opened = False
        self.agent_has_spoken = False

    @property
    def speaking(self) -> bool:
        return self._current is not None

    @property
    def busy(self) -> bool:
        return self._current is not None or bool(self._queue)

    @property
    def authorization_pending(self) -> bool:
        """Never: a frozen plan's authorization is applied on the frame its utterance ends."""
        return False

    def schedule(self, plan: UserPlan, at_ms: int, trigger: str) -> None:
        self._queue.append((at_ms, plan, trigger))
        self._opened = True

    # -------------------------------------------------------- notifications from the runtime

    def on_agent_speech_start(self, t_ms: int) -> None:
        del t_ms
        self.agent_has_spoken = True

    def on_agent_turn_end(self, acts: list[Act], t_ms: int) -> None:
        if self.busy:
            self._deferred.extend(acts)  # answered once the caller has finished
            return
        self._respond(acts, t_ms)

    def _respond(self, acts: list[Act], t_ms: int) -> None:
        if not self._opened:
            plan = self.policy.opening()
            if plan is not None:
                self.schedule(plan, t_ms + self.task.limits.response_gap_ms, "opening")
            return
        for chosen in self.policy.respond(acts):
            self.schedule(chosen.plan, t_ms + self.task.limits.response_gap_ms, chosen.trigger)

    def on_lifecycle(self, artifact_id: str, state: Lifecycle,
                     changed: Sequence[str] = ()) -> None:
        self.policy.on_artifact(artifact_id, state, changed)

    def on_world_event(self, event_id: str) -> None:
        self.policy.world_events.add(event_id)

    # -------------------------------------------------------------------------- frames

    def next_frame(self, t_ms: int) -> UserFrame:
        """The user's 40 ms frame starting at ``t_ms``, with the user events it caused."""
        out = UserFrame(pcm=SILENT_FRAME)
        if not self._opened and not self.agent_has_spoken:
            opening = opening_after_silence(self.policy, t_ms)
            if opening is not None:
                self.schedule(opening, t_ms, "opening:silence")
        for plan, trigger in self._duplex.fire(t_ms, self.agent_audible, out.events):
            # A duplex event preempts anything queued: it is anchored to media time.
            self._queue.insert(0, (t_ms, plan, trigger))
        if self._current is None and self._queue and self._queue[0][0] <= t_ms and (
                t_ms >= self._next_start_ms()):
            _, plan, trigger = self._queue.pop(0)
            self._start(plan, trigger, out)
        if self._current is not None:
            utt = self._current
            chunk = utt.audio[utt.pos:utt.pos + FRAME_SAMPLES]
            utt.pos += FRAME_SAMPLES
            if len(chunk) < FRAME_SAMPLES:
                chunk = np.concatenate([chunk, silence(FRAME_SAMPLES - len(chunk))])
            out.pcm = chunk
            if utt.pos >= len(utt.audio):
                end_ms = t_ms + FRAME_MS
                out.events.append(
                    UserSpeechEnd(plan_id=utt.plan.id, realization_id=utt.realization.id)
                )
                out.finished = utt.plan
                self._current = None
                self._last_end = end_ms
                self._last_trail_ms = quiet_edges_ms(utt.audio)[1]
                self._duplex.arm_after(utt.plan.id, t_ms)  # from the logged user.speech.end
                if not self._queue and self._deferred:
                    deferred, self._deferred = self._deferred, []
                    self._respond(deferred, end_ms)
        return out

    # ------------------------------------------------------------ steady stretches

    def steady_audio(self, t_ms: int, limit: int) -> Pcm:
        """The audio of the frames from ``t_ms`` (at most ``limit``) that :meth:`next_frame`
        would stream without any event or change of state other than its place in the
        current utterance: ``len // FRAME_SAMPLES`` frames (possibly none). Nothing changes
        until :meth:`skip_frames`. Lets the virtual clock move through such a stretch in one
        step (runtime/session/orchestrator.py); the frames are the same as one by one."""
        n = limit
        if not self._opened and not self.agent_has_spoken:
            opening = self.policy.opening()
            if opening is not None and opening.when.on == "opening":
                n = min(n, frames_before(t_ms, opening.when.silence_ms))
        armed = self._duplex.next_at()
        if armed is not None:
            n = min(n, frames_before(t_ms, armed))
        utt = self._current
        if utt is not None:
            left = -(-(len(utt.audio) - utt.pos) // FRAME_SAMPLES)
            n = min(n, left - 1)  # the last frame ends the utterance (an event)
            if n <= 0:
                return SILENT_FRAME[:0]
            return utt.audio[utt.pos:utt.pos + n * FRAME_SAMPLES]
        if self._queue:
            at = max(self._queue[0][0], self._next_start_ms())
            n = min(n, frames_before(t_ms, at))
        return silent_block(max(0, n))

    def skip_frames(self, frames: int) -> None:
        """Move past ``frames`` frames that :meth:`steady_audio` returned."""
        if self._current is not None:
            self._current.pos += frames * FRAME_SAMPLES

    def _next_start_ms(self) -> int:
        """The earliest media time the first queued utterance may start after the last one
        (a duplex event: at once). The quiet at the end of the last file and at the start of
        the next count towards :data:`CHAIN_SILENCE_MS`; the files never overlap."""
        _, plan, trigger = self._queue[0]
        if trigger.startswith("duplex"):
            return self._last_end
        lead, _ = quiet_edges_ms(self._realization(plan)[1])
        return self._last_end + max(0, CHAIN_SILENCE_MS - self._last_trail_ms - lead)

    def _realization(self, plan: UserPlan) -> tuple[Realization, Pcm]:
        """The realization (and its audio) the caller says ``plan`` with next."""
        real = select_realization(self.task.id, self.seed, plan,
                                  self.policy.occurrences(plan.id))
        return real, self._bank.audio(real.id, real.audio)

    def _start(self, plan: UserPlan, trigger: str, out: UserFrame) -> None:
        real, audio = self._realization(plan)
        self.policy.spoken.append(plan.id)
        out.events.append(UserPlanEvent(
            plan_id=plan.id, intent=plan.intent, trigger=trigger,
            facts=[f"{f.fact}@{f.version}" for f in plan.facts],
        ))
        out.events.append(UserSpeechStart(
            plan_id=plan.id, realization_id=real.id, text=real.text,
            duration_ms=len(audio) * 1000 // SAMPLE_RATE,
        ))
        self._current = _Utterance(plan=plan, realization=real, audio=audio)
