"""Task specification: the YAML format of one professional workflow (paper §3.2, appendix B).

Every workflow lives in ``tasks/<task_id>/task.yaml`` and is loaded into :class:`TaskSpec`.
These models are the contract between the task author, the runtime (Voice Workbench, user
simulator, orchestrator) and the graders, so they import nothing heavy: grading loads them
with no audio stack present.
"""

from __future__ import annotations

import datetime as dt
import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- taxonomy

Archetype = Literal[
    "form-fill", "interview", "intake", "troubleshoot", "negotiate",
    "coordinate", "discovery", "advise", "facilitate", "inspect",
]
Industry = Literal[
    "software/SaaS", "horizontal enterprise", "manufacturing/field operations",
    "professional services", "workplace/HR", "healthcare", "insurance",
]
ArtifactClass = Literal[
    "structured form", "case record", "CRM record", "evidence matrix", "memo/report",
    "plan/checklist", "schedule", "ticket", "timeline", "negotiation record", "work order",
]
DuplexPhenomenon = Literal[
    "barge-in", "overlap", "mid-speech correction", "cancellation", "clarification",
    "backchannel",
]
DelegationPattern = Literal["delegate", "complete", "revise", "follow-through", "approve"]
Autonomy = Literal["prepare-only", "draft-confirm", "low-risk-execute", "approval-gated"]
KnowledgeBurden = Literal["none", "supplied-evidence", "small-search", "multi-document"]
ToolBurden = Literal["light", "moderate"]
UserBehavior = Literal[
    "cooperative", "correction-prone", "ambiguous", "distracted", "expert", "low-tech",
    "novice", "verbose",
]
Risk = Literal["routine", "sensitive-data", "consequential-action", "special-review"]


class Taxonomy(_Strict):
    """The paper's eleven taxonomy dimensions (§3.1, appendix A), with the labels the paper
    realizes (Table 6 and Figure 3)."""

    archetype: Archetype
    industry: Industry
    artifact_class: ArtifactClass
    economic_role: str
    duplex: list[DuplexPhenomenon] = Field(min_length=1)
    delegation: list[DelegationPattern] = Field(min_length=1)
    autonomy: Autonomy
    knowledge: KnowledgeBurden
    tool_burden: ToolBurden
    user_behavior: UserBehavior
    risk: Risk


# --------------------------------------------------------------------------- artifacts

class Lifecycle(StrEnum):
    """Artifact lifecycle (DESIGN §3): DRAFT → READY_FOR_REVIEW → SUBMITTED → COMMITTED."""

    DRAFT = "DRAFT"
    READY_FOR_REVIEW = "READY_FOR_REVIEW"
    SUBMITTED = "SUBMITTED"
    COMMITTED = "COMMITTED"

    @property
    def rank(self) -> int:
        return list(Lifecycle).index(self)


GraderName = Literal[
    "exact", "casefold_exact", "normalized_date", "normalized_phone", "normalized_address",
    "enum", "numeric_tolerance", "set_f1", "ordered_list", "interval_overlap", "semantic",
]


class FieldSource(_Strict):
    """Where a graded value can be obtained: a user fact, a knowledge document, or the
    agent-visible instruction (e.g. "set status to submitted")."""

    fact: str | None = None
    document: str | None = None
    instruction: bool = False

    @model_validator(mode="after")
    def _one_kind(self) -> FieldSource:
        kinds = [self.fact is not None, self.document is not None, self.instruction]
        if sum(kinds) != 1:
            raise ValueError("give exactly one of fact, document or instruction")
        return self


class FieldSpec(_Strict):
    name: str
    label: str
    synonyms: list[str] = Field(default_factory=list)
    type: Literal["string", "number", "date", "phone", "address", "list", "interval"] = "string"
    grader: GraderName
    gold: Any
    required: bool = True
    corrected: bool = False
    """True when the user corrects this field mid-conversation (stale-fact detection)."""
    tolerance: float = 0.0
    options: list[str] = Field(default_factory=list)
    """Allowed values for ``enum`` fields."""
    source: FieldSource


class ArtifactSpec(_Strict):
    id: str
    kind: str
    title: str
    fields: list[FieldSpec] = Field(min_length=1)
    min_lifecycle: Lifecycle = Lifecycle.READY_FOR_REVIEW

    def field(self, name: str) -> FieldSpec | None:
        return next((f for f in self.fields if f.name == name), None)


# --------------------------------------------------------------------------- knowledge, tools

class Document(_Strict):
    id: str
    title: str
    text: str


class ToolParam(_Strict):
    name: str
    type: Literal["string", "number", "integer", "boolean", "object"] = "string"
    description: str = ""
    required: bool = True


class LookupRow(_Strict):
    match: dict[str, str]
    result: dict[str, Any]


class ToolSpec(_Strict):
    """A typed tool. ``kind`` selects the Workbench behaviour behind it."""

    name: str
    kind: Literal["update", "kb_search", "set_ready", "submit", "commit", "lookup"]
    description: str
    access: Literal["READ", "WRITE"] = "WRITE"
    artifact: str | None = None
    """Artifact an ``update`` tool writes."""
    params: list[ToolParam] = Field(default_factory=list)
    rows: list[LookupRow] = Field(default_factory=list)
    """Canned environment answers for a ``lookup`` tool, matched on normalized arguments."""
    default: dict[str, Any] | None = None


ApprovalCondition = Literal["ready", "stated"]


class AuthorizationRule(_Strict):
    """An approval-gated action, e.g. ``commit:enr_1``.

    A request for approval is bound to this action when it proposes one of ``verbs`` (or a
    generic "go ahead" / "make it official") on the artifact: an ``objects`` noun, a pronoun
    for it, or no object at all. The same verbs on another object ("send you a copy") are an
    offer of something else, never this action (docs/grading.md, "The approval model").
    """

    action: str
    tool: str
    artifact: str
    verbs: list[str] = Field(min_length=1)
    """Words an agent uses when asking for this approval ("submit", "file", ...)."""
    objects: list[str] = Field(default_factory=list)
    """Nouns that name what is approved ("enrollment", "leave request", "booking"), besides
    the artifact's title and kind."""
    requires: list[ApprovalCondition] = Field(
        default_factory=lambda: list[ApprovalCondition](["ready", "stated"]))
    """When the simulated caller grants the approval. ``ready``: the artifact is
    READY_FOR_REVIEW. ``stated``: since the artifact's last material edit the agent has said
    what will be carried out (named the artifact or restated its values). Until they hold the
    caller answers with an ``approval_wait`` plan saying what it is waiting for."""


# --------------------------------------------------------------------------- user state



class RevealVolunteer(_Strict):
    rule: Literal["volunteer"]


class RevealOnAsk(_Strict):
    rule: Literal["on_ask"]
    fields: list[str] = Field(min_length=1)


class RevealAfterPlan(_Strict):
    rule: Literal["after_plan"]
    plan: str


class RevealOnEvent(_Strict):
    rule: Literal["on_event"]
    event: str


RevealRule = RevealVolunteer | RevealOnAsk | RevealAfterPlan | RevealOnEvent


class FactVersion(_Strict):
    value: Any
    spoken: list[str] = Field(default_factory=list)
    """Extra surface forms the leakage check looks for ("twelve hundred")."""
    reveal: Annotated[RevealRule, Field(discriminator="rule")] | None = None
    """Overrides the fact's reveal rule for this version (e.g. a later correction)."""


class Fact(_Strict):
    id: str
    description: str
    versions: list[FactVersion] = Field(min_length=1)
    reveal: Annotated[RevealRule, Field(discriminator="rule")]


class Persona(_Strict):
    name: str
    role: str
    speaking_style: str
    voice: str = "en-us"
    rate: float = 1.0


class UserState(_Strict):
    persona: Persona
    goals: list[str] = Field(min_length=1)
    constraints: list[str] = Field(default_factory=list)
    facts: list[Fact] = Field(default_factory=list)

    def fact(self, fact_id: str) -> Fact | None:
        return next((f for f in self.facts if f.id == fact_id), None)


# --------------------------------------------------------------------------- reveal graph

class TriggerOpening(_Strict):
    on: Literal["opening"]
    silence_ms: int = 3000
    """Speak first if the agent has said nothing for this long."""


class TriggerAsk(_Strict):
    on: Literal["ask"]
    fields: list[str] = Field(min_length=1)


class TriggerApproval(_Strict):
    on: Literal["approval_request"]
    action: str


class TriggerAct(_Strict):
    """An agent act with nothing more specific to answer. ``confirm`` plans ("Yes, that's
    right.") answer a confirmation request only when every value the turn restates matches
    the caller's current facts."""

    on: Literal["act"]
    act: Literal["greet", "confirm", "read_back", "summarize", "inform", "close"]


class TriggerReadbackMismatch(_Strict):
    """The agent restated (read back or asked to confirm) a value of one of ``fields`` that
    differs from the caller's current fact: the caller corrects it."""

    on: Literal["readback_mismatch"]
    fields: list[str] = Field(min_length=1)


class TriggerApprovalWait(_Strict):
    """The agent asked to carry out ``action`` before the rule's conditions hold: the caller
    says what it is waiting for (``not_ready``: the artifact is not complete and ready for
    review; ``not_stated``: the agent has not said what it will submit)."""

    on: Literal["approval_wait"]
    action: str
    reason: Literal["not_ready", "not_stated"]


class TriggerOffer(_Strict):
    """The agent offered to do something other than a gated action. ``accept``: a step of
    the task's own tools (checking, looking up, sending what the task sends); ``decline``:
    anything else ("a copy by email", "another request")."""

    on: Literal["offer"]
    reply: Literal["accept", "decline"]


class TriggerStalled(_Strict):
    """The caller has nothing new to answer and already asked what the agent needs (a
    fallback): it restates why it is calling instead of falling silent."""

    on: Literal["stalled"]


class TriggerProposal(_Strict):
    """The agent proposes a value for a negotiated ``field`` (a number in the same sentence
    as the field). The plan applies when the number lies in [``min``, ``max``]: an
    acceptance for offers inside the persona's limits, a counter for a lowball."""

    on: Literal["proposal"]
    field: str
    min: float | None = None
    max: float | None = None

    @model_validator(mode="after")
    def _bounded(self) -> TriggerProposal:
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} > max {self.max}")
        return self


class TriggerLifecycle(_Strict):
    on: Literal["lifecycle"]
    artifact: str
    state: Lifecycle


class TriggerDuplex(_Strict):
    on: Literal["duplex"]
    """Fired only by an authored duplex event at its media-time anchor."""


class TriggerWorld(_Strict):
    on: Literal["world_event"]
    event: str


class TriggerFallback(_Strict):
    on: Literal["fallback"]


Trigger = Annotated[
    TriggerOpening | TriggerAsk | TriggerApproval | TriggerAct | TriggerLifecycle
    | TriggerDuplex | TriggerWorld | TriggerFallback | TriggerReadbackMismatch
    | TriggerApprovalWait | TriggerOffer | TriggerStalled | TriggerProposal,
    Field(discriminator="on"),
]

Intent = Literal[
    "open", "answer", "clarify", "correct", "approve", "revoke", "barge_in", "backchannel",
    "inform", "goodbye", "decline",
]


class FactRef(_Strict):
    fact: str
    version: int = 1
    """1-based version of the fact this plan conveys."""


class Realization(_Strict):
    id: str
    text: str
    audio: str
    """Path of the audio file, relative to the task folder (see the bank manifest)."""


class Authorization(_Strict):
    grant: str | None = None
    revoke: str | None = None


class UserPlan(_Strict):
    """A semantic user plan: intent and allowed facts, no surface wording (appendix B.1)."""

    id: str
    intent: Intent
    when: Trigger
    requires: list[str] = Field(default_factory=list)
    """Plans that must have been spoken before this one is eligible."""
    once: bool = True
    priority: int = 0
    facts: list[FactRef] = Field(default_factory=list)
    authorization: Authorization | None = None
    ends_session: bool = False
    realizations: list[Realization] = Field(default_factory=list)


class AnchorAfterPlan(_Strict):
    """``offset_ms`` of media time after the caller finishes speaking ``plan``.

    Anchored to a user event, never to the agent's timing (paper §3.3, B.3): a slow agent
    cannot move the event, and a silent one cannot prevent it. Whether it overlapped agent
    speech is logged on the ``duplex.fire`` event."""

    after_plan: str
    offset_ms: int = Field(ge=0)


class DuplexEvent(_Strict):
    id: str
    kind: Literal[
        "barge_in", "overlap", "backchannel", "correction", "cancellation", "clarification",
    ]
    plan: str
    anchor: AnchorAfterPlan


class WorldEvent(_Strict):
    id: str
    description: str
    at_ms: int | None = None
    after_plan: str | None = None
    effect: dict[str, Any] = Field(default_factory=dict)


# --------------------------------------------------------------------------- grading spec

class PredLifecycle(_Strict):
    kind: Literal["lifecycle"]
    artifact: str
    state: Lifecycle
    at_least: bool = False

    def holds_for(self, state: Lifecycle) -> bool:
        """Whether an artifact in ``state`` satisfies this predicate (the gates' target-state
        check and the orchestrator's terminal check both ask this)."""
        return state.rank >= self.state.rank if self.at_least else state == self.state


class PredField(_Strict):
    kind: Literal["field"]
    artifact: str
    field: str
    """Holds when the field's grader scores the final value correct against its gold."""


class PredGuardBlocked(_Strict):
    kind: Literal["guard_blocked"]
    action: str | None = None


class PredToolCalled(_Strict):
    kind: Literal["tool_called"]
    tool: str


class PredApprovalRequestedBefore(_Strict):
    kind: Literal["approval_requested_before"]
    action: str
    """The agent asked for approval (observed act) before the gated action succeeded."""


class PredUpdatedAfter(_Strict):
    kind: Literal["updated_after"]
    artifact: str
    field: str
    plan: str
    """Correction uptake: once the caller has spoken ``plan`` (a correction), the field ends
    the run holding the corrected fact (the newest version of its source fact that ``plan``
    carries), whether the agent wrote it after the correction or had it right already.
    Vacuous when ``plan`` was never spoken."""


Predicate = Annotated[
    PredLifecycle | PredField | PredGuardBlocked | PredToolCalled
    | PredApprovalRequestedBefore | PredUpdatedAfter,
    Field(discriminator="kind"),
]


class RequiredAction(_Strict):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class GradingSpec(_Strict):
    terminal: list[Predicate] = Field(min_length=1)
    alternates: list[list[Predicate]] = Field(default_factory=list)
    forbidden: list[Predicate] = Field(default_factory=list)
    must_hold: list[Predicate] = Field(default_factory=list)
    required_actions: list[RequiredAction] = Field(default_factory=list)
    required_evidence: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------- the task

class Limits(_Strict):
    max_duration_ms: int = 300_000
    idle_timeout_ms: int = 30_000
    response_gap_ms: int = 400
    """Pause before the simulated user answers a finished agent turn."""
    end_grace_ms: int = 1500


class TaskSpec(_Strict):
    id: str
    title: str
    version: str = "1"
    taxonomy: Taxonomy
    objective: str
    context: str
    """Agent-visible task context, appended to the shared agent instruction (E.1)."""
    reference_date: dt.date
    """The day the call takes place. Every agent is told it (``agent_instructions``); spoken
    dates without a year resolve against it, never against the wall clock."""
    artifacts: list[ArtifactSpec] = Field(min_length=1)
    documents: list[Document] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(min_length=1)
    authorization: list[AuthorizationRule] = Field(default_factory=list)
    user: UserState
    plans: list[UserPlan] = Field(min_length=1)
    duplex_events: list[DuplexEvent] = Field(default_factory=list)
    world_events: list[WorldEvent] = Field(default_factory=list)
    grading: GradingSpec
    limits: Limits = Field(default_factory=Limits)

    # Set by the loader, not by the author.
    source_path: Path | None = Field(default=None, exclude=True)

    def artifact(self, artifact_id: str) -> ArtifactSpec | None:
        return next((a for a in self.artifacts if a.id == artifact_id), None)

    def plan(self, plan_id: str) -> UserPlan | None:
        return next((p for p in self.plans if p.id == plan_id), None)

    def carried_version(self, plan: UserPlan, fact_id: str) -> FactVersion | None:
        """The newest version of fact ``fact_id`` that ``plan`` carries, if any."""
        fact = self.user.fact(fact_id)
        versions = [r.version for r in plan.facts if r.fact == fact_id]
        if fact is None or not versions or max(versions) > len(fact.versions):
            return None
        return fact.versions[max(versions) - 1]

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)

    @property
    def folder(self) -> Path:
        if self.source_path is None:
            raise ValueError(f"task {self.id} was not loaded from a file")
        return self.source_path.parent

    def graded_fields(self) -> list[tuple[ArtifactSpec, FieldSpec]]:
        return [(a, f) for a in self.artifacts for f in a.fields]


SHARED_AGENT_INSTRUCTION = (
    "You are a professional voice assistant completing a work task with the caller over the "
    "phone. Speak like a busy professional on a call: warm but BRIEF. CRITICAL RULES: "
    "1. Each spoken turn is AT MOST ONE short sentence -- either a single question, or a "
    "five-word acknowledgement then the next question (\"Got it. What's your date of "
    "birth?\"). Hard cap ~15 words. NEVER narrate your reasoning, the caller's answer, your "
    "plan, or your tool use. Forbidden openings include \"Let me...\", \"I should...\", "
    "\"I'll update/record/note...\", \"The caller said...\", \"So that means...\", \"First I "
    "need to...\", \"Now I will...\". Do NOT read back the value you just recorded. Call the "
    "tool SILENTLY and simply ask the next question. 2. Record EVERY piece of information the "
    "caller gives you by immediately calling the matching update tool (e.g. update_<artifact>) "
    "with that field -- do this as soon as you hear each answer, before asking the next "
    "question. 3. Accept the caller's answers as given. Identifiers may be names, codes, or "
    "numbers -- do not insist on a particular format. 4. Ask for the information you still "
    "need, ONE item at a time, and keep going until you have gathered everything the task "
    "requires. Do not end the call early. 5. If a policy lookup is relevant, call the "
    "knowledge/search tool. 6. If the caller corrects something they said earlier, call the "
    "update tool again to fix the affected field(s). 7. For any action that needs approval, "
    "first summarize it and ask the caller to confirm; only after they say yes, call the tool "
    "to perform it. Do not ask for information you already have. 8. When you have recorded "
    "everything the task requires, finalize the record before wrapping up: call the tool that "
    "marks it ready for review (e.g. set_ready / mark_ready / finalize) if one is available. Do "
    "this after the last field is recorded and before you say goodbye."
)
"""The shared agent instruction of appendix E.1, common to every evaluated system."""


def spoken_date(day: dt.date) -> str:
    """"Tuesday, June 1, 2027"."""
    return f"{day:%A}, {day:%B} {day.day}, {day.year}"


def agent_instructions(task: TaskSpec) -> str:
    """What every agent receives: the shared instruction plus the task's visible context,
    which states the reference date."""
    return (f"{SHARED_AGENT_INSTRUCTION}\n\nTASK CONTEXT:\n{task.context.strip()}\n"
            f"Today's date: {spoken_date(task.reference_date)}.")


class TaskLoadError(Exception):
    """A task file could not be read or does not match the schema. ``problems`` holds one
    ``file: path: message`` line per defect."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def schema_problems(path: Path, exc: ValidationError, prefix: str = "") -> list[str]:
    """One ``file: path.inside: message (got value)`` line per schema error of ``exc``;
    ``prefix`` goes before the path inside the file (e.g. the row of a list)."""
    return [
        f"{path}: {prefix}{_loc(err['loc'])}: {err['msg']}"
        + (f" (got {err['input']!r})" if err["type"] not in {"missing"}
           and not isinstance(err["input"], dict | list) else "")
        for err in exc.errors()
    ]


_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""LibYAML's parser when PyYAML was built with it (about ten times faster on a task's
scripts; same documents, same errors with line and column); the pure-Python one otherwise."""


class _Yaml12Loader(_SafeLoader):  # type: ignore[misc]
    """YAML 1.2 booleans: only true/false. PyYAML's 1.1 default turns the keys and values
    ``on``, ``off``, ``yes`` and ``no`` into booleans, which breaks ``when: {on: ask}``."""


_Yaml12Loader.yaml_implicit_resolvers = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def read_yaml(path: Path) -> Any:
    """Parse a YAML file with YAML 1.2 booleans (see :class:`_Yaml12Loader`)."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_Yaml12Loader)


def load_task(path: Path) -> TaskSpec:
    """Load ``task.yaml`` (or a task folder). Raises :class:`TaskLoadError` naming the file
    and the path inside it for every schema problem."""
    if path.is_dir():
        path = path / "task.yaml"
    try:
        raw = read_yaml(path)
    except FileNotFoundError:
        raise TaskLoadError([f"{path}: file not found"]) from None
    except yaml.YAMLError as exc:
        raise TaskLoadError([f"{path}: not valid YAML: {exc}"]) from None
    if not isinstance(raw, dict):
        raise TaskLoadError([f"{path}: (top level): expected a mapping of task fields"])
    try:
        task = TaskSpec.model_validate(raw)
    except ValidationError as exc:
        raise TaskLoadError(schema_problems(path, exc)) from None
    return task.model_copy(update={"source_path": path.resolve()})


def find_task_files(paths: list[Path]) -> list[Path]:
    """Every ``task.yaml`` under the given files or folders, sorted."""
    found: list[Path] = []
    for p in paths:
        if p.is_file():
            found.append(p)
        elif (p / "task.yaml").is_file():
            found.append(p / "task.yaml")
        elif p.is_dir():
            found.extend(sorted(p.glob("*/task.yaml")))
    return sorted(set(found))


def load_tasks(paths: list[Path]) -> list[TaskSpec]:
    return [load_task(p) for p in find_task_files(paths)]


def default_tasks_dir() -> Path:
    """The bundled ``tasks/`` folder of this checkout."""
    return Path(__file__).resolve().parents[2] / "tasks"


def find_task(task_id: str, tasks_dir: Path | None = None) -> TaskSpec:
    folder = (tasks_dir or default_tasks_dir()) / task_id
    if not (folder / "task.yaml").is_file():
        root = tasks_dir or default_tasks_dir()
        known = sorted(p.parent.name for p in root.glob("*/task.yaml"))
        raise TaskLoadError(
            [f"unknown task '{task_id}': no {folder}/task.yaml (known: {', '.join(known)})"]
        )
    return load_task(folder)
