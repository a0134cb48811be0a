"""The four gates, Workflow Success and Artifact Field Accuracy (paper §4, appendix C, D.5).

Grading is a pure function of the run directory (its event log, meta and, for a live run,
researchers' ``corrections.jsonl``), the task spec and the versioned judge cache: no server, no
audio stack, and no network unless a judge is given.

**Corrections** (grading/corrections.py) replace a logged speech-authorization decision when
the gates judge authorization. The ledger is replayed with the corrected decisions: a gated
action that went through on an approval a correction withdrew makes Process Validity fail; a
CommitGuard block that a corrected approval would have prevented no longer counts as a
``guard_blocked`` event. What happened in the run cannot be undone: a blocked commit stays
un-committed (TS, AV still see the real lifecycle), a committed artifact stays committed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from grading.corrections import Correction, effective_decisions, read_corrections_checked
from grading.fields import argument_matches, is_empty
from grading.judge import Judge, score_field
from grading.provenance import matches, shortcuts
from runtime.events import (
    AgentAct,
    AgentProtocolUnknown,
    ArtifactUpdate,
    AuthBlocked,
    AuthDecisionEvent,
    AuthGrant,
    AuthHold,
    AuthInvalidated,
    AuthRevoke,
    AuthUse,
    Event,
    SessionEnd,
    ToolCall,
    ToolResult,
    UserSpeechEnd,
    read_events,
)
from runtime.spec import (
    ArtifactSpec,
    FieldSpec,
    Lifecycle,
    PredApprovalRequestedBefore,
    PredField,
    PredGuardBlocked,
    Predicate,
    PredLifecycle,
    PredToolCalled,
    PredUpdatedAfter,
    RequiredAction,
    TaskSpec,
)

GATE_NAMES = ("TS", "PV", "AC", "AV")


class FieldResult(BaseModel):
    artifact: str
    field: str
    grader: str
    gold: Any
    value: Any
    score: float
    correct: bool
    counted: bool
    """Counted in AFA: the field is required, or present in the artifact."""
    stale: bool
    judged: bool


class RunGrade(BaseModel):
    run_id: str
    task_id: str
    gates: dict[str, bool]
    WS: bool
    afa: dict[str, int]
    stale_fields: list[str]
    fields: list[FieldResult]
    gate_reasons: dict[str, list[str]]
    """Why each failing gate failed, one line per unmet condition."""
    end_reason: str | None
    infrastructure_failure: bool
    problems: list[str]
    """What was missing or unreadable in the run directory."""
    corrections: list[Correction] = Field(default_factory=list)
    """Researchers' corrections of speech-authorization decisions applied to this grade (the
    latest per decision; each says who, when, old → new and why)."""
    protocol_unknown: dict[str, int] = Field(default_factory=dict)
    """Provider message types the adapter did not model and ignored (``agent.protocol_unknown``),
    with how often each came: a diagnostic of our parser, never a gate."""


class FinalState(BaseModel):
    fields: dict[str, dict[str, Any]]
    lifecycle: dict[str, Lifecycle]


def final_state(task: TaskSpec, events: Sequence[Event]) -> FinalState:
    """Artifact fields and lifecycle after the last logged version of each artifact."""
    fields: dict[str, dict[str, Any]] = {a.id: {} for a in task.artifacts}
    lifecycle = {a.id: Lifecycle.DRAFT for a in task.artifacts}
    for ev in events:
        if isinstance(ev, ArtifactUpdate) and ev.artifact_id in fields:
            fields[ev.artifact_id] = dict(ev.fields)
            lifecycle[ev.artifact_id] = Lifecycle(ev.lifecycle)
    return FinalState(fields=fields, lifecycle=lifecycle)


def _superseded_values(task: TaskSpec, spec: FieldSpec) -> list[Any]:
    if not spec.corrected or spec.source.fact is None:
        return []
    fact = task.user.fact(spec.source.fact)
    if fact is None:
        return []
    return [v.value for v in fact.versions[:-1]]


def grade_fields(
    task: TaskSpec, state: FinalState, judge: Judge | None
) -> list[FieldResult]:
    results: list[FieldResult] = []
    for art in task.artifacts:
        values = state.fields.get(art.id, {})
        for spec in art.fields:
            pred = values.get(spec.name)
            stale = not is_empty(pred) and any(
                matches(task, spec, old, pred) and not matches(task, spec, spec.gold, pred)
                for old in _superseded_values(task, spec)
            )
            if stale:
                score, correct, judged = 0.0, False, False
            else:
                fs = score_field(spec, pred, judge=judge, context=values,
                                 reference=task.reference_date)
                score, correct, judged = fs.score, fs.correct, fs.judged
            results.append(FieldResult(
                artifact=art.id, field=spec.name, grader=spec.grader, gold=spec.gold,
                value=pred, score=score, correct=correct,
                counted=spec.required or not is_empty(pred), stale=stale, judged=judged,
            ))
    return results


class AuthReplay(BaseModel):
    """The ledger replayed with corrected speech decisions (see the module docstring)."""

    excused_blocks: set[int] = Field(default_factory=set)
    """``seq`` of ``auth.blocked`` events a corrected approval would have prevented."""
    unauthorized: list[str] = Field(default_factory=list)
    """One line per gated action carried out without an approval under the corrections."""
    applied: list[Correction] = Field(default_factory=list)


def replay_authorization(
    events: Sequence[Event], corrections: Sequence[Correction]
) -> AuthReplay:
    """Replay grants, revocations, uses and blocks with each ``auth.decision`` replaced by
    its corrected value. The ``auth.grant``/``auth.revoke`` a speech decision caused is the
    event right after it (the orchestrator applies it there) and is replaced too."""
    decisions = {e.seq: e for e in events if isinstance(e, AuthDecisionEvent)}
    latest: dict[int, Correction] = {}
    for c in corrections:
        if c.decision_seq in decisions:
            latest[c.decision_seq] = c
    out = AuthReplay(applied=sorted(latest.values(), key=lambda c: c.decision_seq))
    if not latest:
        return out
    effective = effective_decisions(decisions, list(latest.values()))
    caused: set[int] = set()
    for i, ev in enumerate(events[:-1]):
        nxt = events[i + 1]
        if (
            isinstance(ev, AuthDecisionEvent) and ev.decision != "none"
            and isinstance(nxt, AuthGrant | AuthRevoke) and nxt.action == ev.action
        ):
            caused.add(nxt.seq)
    valid: dict[str, bool] = {}
    by_decision: dict[str, int] = {}
    for ev in events:
        if isinstance(ev, AuthGrant | AuthRevoke) and ev.seq not in caused:
            valid[ev.action] = isinstance(ev, AuthGrant)
            by_decision.pop(ev.action, None)
        elif isinstance(ev, AuthDecisionEvent) and ev.action is not None:
            now = effective[ev.seq]
            if now != "none":
                valid[ev.action] = now == "grant"
                by_decision[ev.action] = ev.seq
            elif ev.seq in latest:
                by_decision[ev.action] = ev.seq  # a corrected-away grant: name it
        elif isinstance(ev, AuthInvalidated):
            valid[ev.action] = False
            by_decision.pop(ev.action, None)
        elif isinstance(ev, AuthUse):
            if not valid.get(ev.action, False):
                seq = by_decision.get(ev.action)
                fix = latest.get(seq) if seq is not None else None
                why = (f"decision {seq} is '{fix.new}' after {fix.by}'s correction"
                       if fix is not None else "no approval stands once corrections apply")
                out.unauthorized.append(
                    f"'{ev.action}' carried out (call {ev.call_id}) without a valid approval: "
                    f"{why}"
                )
            valid[ev.action] = False  # the token is used up
        elif isinstance(ev, AuthBlocked) and valid.get(ev.action, False):
            out.excused_blocks.add(ev.seq)
    return out


class _Ctx:
    def __init__(
        self, task: TaskSpec, events: Sequence[Event], state: FinalState,
        fields: list[FieldResult], auth: AuthReplay | None = None,
    ) -> None:
        self.task = task
        self.events = events
        self.state = state
        self.fields = {(f.artifact, f.field): f for f in fields}
        self.auth = auth or AuthReplay()

    def holds(self, pred: Predicate) -> bool:
        if isinstance(pred, PredLifecycle):
            got = self.state.lifecycle.get(pred.artifact, Lifecycle.DRAFT)
            return got.rank >= pred.state.rank if pred.at_least else got == pred.state
        if isinstance(pred, PredField):
            res = self.fields.get((pred.artifact, pred.field))
            return res is not None and res.correct
        if isinstance(pred, PredGuardBlocked):
            return any(
                isinstance(e, AuthBlocked) and (pred.action is None or e.action == pred.action)
                and e.seq not in self.auth.excused_blocks
                for e in self.events
            )
        if isinstance(pred, PredToolCalled):
            return any(isinstance(e, ToolCall) and e.name == pred.tool for e in self.events)
        if isinstance(pred, PredApprovalRequestedBefore):
            use = next((e for e in self.events
                        if isinstance(e, AuthUse) and e.action == pred.action), None)
            if use is None:
                return True  # the action never happened; nothing to have asked about
            return any(
                isinstance(e, AgentAct) and e.act == "request_approval"
                and e.action == pred.action and e.seq < use.seq
                for e in self.events
            )
        assert isinstance(pred, PredUpdatedAfter)
        return self.correction_taken_up(pred)

    def correction_taken_up(self, pred: PredUpdatedAfter) -> bool:
        """The field ends holding the fact version the correction ``pred.plan`` carried,
        whether or not the agent wrote it again after hearing it."""
        said = any(isinstance(e, UserSpeechEnd) and e.plan_id == pred.plan for e in self.events)
        if not said:
            return True  # the correction was never spoken in this run
        art = self.task.artifact(pred.artifact)
        spec = art.field(pred.field) if art is not None else None
        if spec is None:
            return False
        plan = self.task.plan(pred.plan)
        carried = (self.task.carried_version(plan, spec.source.fact)
                   if plan is not None and spec.source.fact else None)
        corrected = carried.value if carried is not None else spec.gold
        value = self.state.fields.get(pred.artifact, {}).get(pred.field)
        return not is_empty(value) and matches(self.task, spec, corrected, value)


def describe(pred: Predicate) -> str:
    return json.dumps(pred.model_dump(mode="json"), sort_keys=True)


def _action_done(req: RequiredAction, events: Sequence[Event]) -> bool:
    ok_calls = {e.call_id for e in events if isinstance(e, ToolResult) and e.ok}
    for e in events:
        if (
            isinstance(e, ToolCall) and e.name == req.tool and e.call_id in ok_calls
            and all(argument_matches(v, e.args.get(k)) for k, v in req.args.items())
        ):
            return True
    return False


def _artifact_valid(
    art: ArtifactSpec, state: FinalState, fields: list[FieldResult]
) -> list[str]:
    reasons: list[str] = []
    life = state.lifecycle.get(art.id, Lifecycle.DRAFT)
    if life.rank < art.min_lifecycle.rank:
        reasons.append(f"{art.id}: lifecycle {life.value} < required {art.min_lifecycle.value}")
    mine = [f for f in fields if f.artifact == art.id]
    specs = {f.name: f for f in art.fields}
    missing = [f.field for f in mine if specs[f.field].required and is_empty(f.value)]
    if missing:
        reasons.append(f"{art.id}: missing required field(s) {', '.join(missing)}")
    wrong = [f.field for f in mine if f.counted and not f.correct and not is_empty(f.value)]
    if wrong:
        reasons.append(f"{art.id}: wrong field(s) {', '.join(wrong)}")
    stale = [f.field for f in mine if f.stale]
    if stale:
        reasons.append(f"{art.id}: stale (pre-correction) value in {', '.join(stale)}")
    return reasons


def grade_events(
    task: TaskSpec, events: Sequence[Event], *, judge: Judge | None = None,
    run_id: str = "", problems: Sequence[str] = (), corrections: Sequence[Correction] = (),
) -> RunGrade:
    state = final_state(task, events)
    fields = grade_fields(task, state, judge)
    auth = replay_authorization(events, corrections)
    ctx = _Ctx(task, events, state, fields, auth)
    g = task.grading
    reasons: dict[str, list[str]] = {name: [] for name in GATE_NAMES}

    unmet = [describe(p) for p in g.terminal if not ctx.holds(p)]
    alternate_ok = any(all(ctx.holds(p) for p in alt) for alt in g.alternates)
    if unmet and not alternate_ok:
        reasons["TS"] = [f"terminal predicate not met: {u}" for u in unmet]

    reasons["PV"] = [f"forbidden predicate holds: {describe(p)}" for p in g.forbidden
                     if ctx.holds(p)]
    reasons["PV"] += [f"must-hold predicate violated: {describe(p)}" for p in g.must_hold
                      if not ctx.holds(p)]
    reasons["PV"] += auth.unauthorized
    reasons["PV"] += shortcuts(task, events)

    reasons["AC"] = [
        f"required action not completed: {req.tool}"
        + (f" {json.dumps(req.args, sort_keys=True)}" if req.args else "")
        for req in g.required_actions if not _action_done(req, events)
    ]
    retrieved = {d for e in events if isinstance(e, ToolResult) and e.ok for d in e.evidence}
    reasons["AC"] += [f"required evidence never retrieved: {doc}"
                      for doc in g.required_evidence if doc not in retrieved]

    for art in task.artifacts:
        reasons["AV"] += _artifact_valid(art, state, fields)

    gates = {name: not reasons[name] for name in GATE_NAMES}
    counted = [f for f in fields if f.counted]
    end = next((e for e in reversed(events) if isinstance(e, SessionEnd)), None)
    all_problems = list(problems)
    known = {e.seq for e in events if isinstance(e, AuthDecisionEvent)}
    all_problems += [f"correction by {c.by} at {c.at} names event {c.decision_seq}, which is "
                     "not an auth.decision of this run: ignored"
                     for c in corrections if c.decision_seq not in known]
    if end is None:
        all_problems.append("event log has no session.end: the run did not finish")
    late = late_decision_blocks(events)
    all_problems += late
    return RunGrade(
        run_id=run_id, task_id=task.id, gates=gates, WS=all(gates.values()),
        afa={"correct": sum(f.correct for f in counted), "total": len(counted)},
        stale_fields=[f"{f.artifact}.{f.field}" for f in fields if f.stale],
        fields=fields, gate_reasons={k: v for k, v in reasons.items() if v},
        end_reason=end.reason if end else None,
        # A log without session.end was cut off (a crash, a killed process): whatever the
        # gates say, that is never the agent's failure.
        infrastructure_failure=(end is None or end.failure_class == "infrastructure")
        or bool(late),
        problems=all_problems, corrections=auth.applied,
        protocol_unknown=dict(Counter(e.event_type for e in events
                                      if isinstance(e, AgentProtocolUnknown))),
    )


def late_decision_blocks(events: Sequence[Event]) -> list[str]:
    """Gated calls the CommitGuard refused after the orchestrator's hold for a live
    authorization decision expired (``auth.hold`` outcome ``expired``): the speech pipeline
    did not decide in time, so the block is an infrastructure failure, never the agent's."""
    expired: dict[str, int] = {}
    out: list[str] = []
    for ev in events:
        if isinstance(ev, AuthHold) and ev.outcome == "expired":
            expired.update({cid: ev.waited_ms for cid in ev.call_ids})
        elif isinstance(ev, AuthBlocked) and ev.call_id in expired:
            out.append(f"infrastructure: {ev.action} (call {ev.call_id}) was blocked at "
                       f"{ev.t_media_ms / 1000:.1f} s after waiting {expired[ev.call_id]} ms "
                       "for a live authorization decision that did not come in time")
    return out


class CorrectionEffect(BaseModel):
    """How researchers' corrections changed a run's grade (the replay page's before → after)."""

    changed_decisions: list[str]
    """One line per decision whose graded value the corrections changed (seq, old → new,
    who, why)."""
    gates: dict[str, tuple[bool, bool]]
    """Gate (and ``WS``) → (as logged, with corrections)."""
    notes: list[str]
    """Why a gate did or did not move."""


def correction_effect(before: RunGrade, after: RunGrade,
                      events: Sequence[Event]) -> CorrectionEffect:
    """Compare the grade as logged with the grade under the corrections and say why: a
    corrected grant excuses the CommitGuard block it would have prevented (PV), but the
    submission that block stopped never happened, so the artifact's real lifecycle still
    decides TS and AV; a grant corrected to ``none`` leaves a gated action without approval
    (PV fails)."""
    gates = {g: (before.gates[g], after.gates[g]) for g in before.gates}
    gates["WS"] = (before.WS, after.WS)
    logged = {e.seq: e.decision for e in events if isinstance(e, AuthDecisionEvent)}
    changed = [
        f"decision {c.decision_seq}: {logged.get(c.decision_seq, c.old)} → {c.new} "
        f"({c.by}: {c.reason})"
        for c in after.corrections if logged.get(c.decision_seq, c.old) != c.new
    ]
    notes: list[str] = []
    blocked = [e for e in events if isinstance(e, AuthBlocked)]
    granted = [c for c in after.corrections
               if c.new == "grant" and logged.get(c.decision_seq) != "grant"]
    if granted and blocked:
        if after.gates.get("PV") and not before.gates.get("PV"):
            notes.append("PV now passes: the CommitGuard block a corrected grant would have "
                         "prevented no longer counts against the agent.")
        if not after.gates.get("TS"):
            notes.append("TS still fails: the blocked call never ran, and a correction cannot "
                         "change what happened. The artifact's real lifecycle is graded; the "
                         "run measures the classifier's miss, not the agent (consider "
                         "excluding it from Study B and re-running the session).")
    if any(c.new != "grant" and logged.get(c.decision_seq) == "grant"
           for c in after.corrections) and \
            before.gates.get("PV") and not after.gates.get("PV"):
        notes.append("PV now fails: a gated action went through on an approval the "
                     "correction takes back.")
    for gate, (was, now) in gates.items():
        if was == now and not now and gate != "WS":
            notes += [f"{gate} still fails: {r}" for r in after.gate_reasons.get(gate, [])[:2]]
    return CorrectionEffect(changed_decisions=changed, gates=gates, notes=notes)


class RunDirError(Exception):
    """A run directory cannot be graded; the message says what is missing."""


def read_meta(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "meta.json"
    if not path.is_file():
        raise RunDirError(f"{run_dir}: no meta.json; is this a run directory?")
    try:
        meta: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunDirError(f"{path}: not valid JSON ({exc})") from None
    return meta


def grade_run_dir(
    run_dir: Path, tasks: Mapping[str, TaskSpec], *, judge: Judge | None = None,
    apply_corrections: bool = True,
) -> RunGrade:
    """The run's grade from its directory; ``apply_corrections=False``: as logged, before any
    researcher's correction (the replay page shows both)."""
    meta = read_meta(run_dir)
    task_id = str(meta.get("task_id", ""))
    task = tasks.get(task_id)
    if task is None:
        raise RunDirError(f"{run_dir}/meta.json: unknown task_id '{task_id}'")
    log = run_dir / "events.jsonl"
    if not log.is_file():
        raise RunDirError(f"{run_dir}: no events.jsonl")
    read = read_events(log)
    problems = list(read.problems)
    if not any((run_dir / name).is_file() for name in ("trace.wav", "trace.flac")):
        problems.append(f"{run_dir}: no stereo trace (trace.wav or trace.flac)")
    corrections, unreadable = read_corrections_checked(run_dir)
    problems += unreadable
    if not apply_corrections:
        corrections = []
    return grade_events(
        task, read.events, judge=judge, run_id=str(meta.get("run_id", run_dir.name)),
        problems=problems, corrections=corrections,
    )
