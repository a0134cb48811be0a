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
from grading.provenance import matches, shortcut_writes
from runtime.core.events import (
    AgentAct,
    AgentProtocolUnknown,
    ArtifactLifecycle,
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
from runtime.core.rundir import RunDir, RunDirError
from runtime.core.spec import (
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


class GateFailure(BaseModel):
    """One unmet condition of a failing gate, for people reading a replay: the same line as in
    ``gate_reasons``, a readable sentence, and the events behind it (their ``seq``) with the
    media time of the first of them (where the replay seeks). ``seqs`` is empty when nothing
    in the log shows the failure (an action never taken, a document never retrieved)."""

    reason: str
    text: str
    seqs: list[int] = Field(default_factory=list)
    t_media_ms: int | None = None


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
    gate_failures: dict[str, list[GateFailure]] = Field(default_factory=dict)
    """``gate_reasons`` again, one entry per line in the same order, each with a readable
    sentence and the events behind it (added for the replay's gate links; ``gate_reasons``
    is unchanged)."""


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
    unauthorized_seqs: list[int] = Field(default_factory=list)
    """The ``auth.use`` behind each line of ``unauthorized``."""
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
                out.unauthorized_seqs.append(ev.seq)
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
            return pred.holds_for(got)
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


def statement(pred: Predicate) -> str:
    """The predicate as a sentence (``describe`` is its JSON)."""
    if isinstance(pred, PredLifecycle):
        return f"{pred.artifact} is {'at least ' if pred.at_least else ''}{pred.state.value}"
    if isinstance(pred, PredField):
        return f"{pred.artifact}.{pred.field} holds the right value"
    if isinstance(pred, PredGuardBlocked):
        return f"the CommitGuard blocked {pred.action or 'a gated action'}"
    if isinstance(pred, PredToolCalled):
        return f"{pred.tool} was called"
    if isinstance(pred, PredApprovalRequestedBefore):
        return f"approval for {pred.action} was requested before it was carried out"
    return (f"{pred.artifact}.{pred.field} ends holding the correction the caller gave "
            f"(plan {pred.plan})")


def _last_update(events: Sequence[Event], artifact: str, field: str | None = None
                 ) -> list[int]:
    """The last ``artifact.update`` of ``artifact`` (that changed ``field``, if given)."""
    for e in reversed(events):
        if isinstance(e, ArtifactUpdate) and e.artifact_id == artifact and (
                field is None or field in e.changed):
            return [e.seq]
    return []


def _last_lifecycle(events: Sequence[Event], artifact: str) -> list[int]:
    for e in reversed(events):
        if isinstance(e, ArtifactLifecycle) and e.artifact_id == artifact:
            return [e.seq]
    return _last_update(events, artifact)


def _behind(ctx: _Ctx, pred: Predicate) -> tuple[str, list[int]]:
    """What the log shows about ``pred`` (a short clause, or "") and the events behind it."""
    ev = ctx.events
    if isinstance(pred, PredLifecycle):
        got = ctx.state.lifecycle.get(pred.artifact, Lifecycle.DRAFT)
        reached = [e.seq for e in ev if isinstance(e, ArtifactLifecycle)
                   and e.artifact_id == pred.artifact and e.to_state == pred.state.value]
        return f"it ended {got.value}", reached[:1] or _last_lifecycle(ev, pred.artifact)
    if isinstance(pred, PredField):
        value = ctx.state.fields.get(pred.artifact, {}).get(pred.field)
        clause = "it ended empty" if is_empty(value) else f"it ended {value!r}"
        return clause, _last_update(ev, pred.artifact, pred.field)
    if isinstance(pred, PredGuardBlocked):
        blocks = [e.seq for e in ev if isinstance(e, AuthBlocked)
                  and (pred.action is None or e.action == pred.action)
                  and e.seq not in ctx.auth.excused_blocks]
        if blocks:
            return f"{len(blocks)} block(s)", blocks
        uses = [e.seq for e in ev if isinstance(e, AuthUse)
                and (pred.action is None or e.action == pred.action)]
        return ("the action went through" if uses else ""), uses
    if isinstance(pred, PredToolCalled):
        calls = [e.seq for e in ev if isinstance(e, ToolCall) and e.name == pred.tool]
        return (f"called {len(calls)} time(s)" if calls else ""), calls
    if isinstance(pred, PredApprovalRequestedBefore):
        use = [e.seq for e in ev if isinstance(e, AuthUse) and e.action == pred.action]
        return ("carried out without asking first" if use else ""), use[:1]
    said = [e.seq for e in ev if isinstance(e, UserSpeechEnd) and e.plan_id == pred.plan]
    value = ctx.state.fields.get(pred.artifact, {}).get(pred.field)
    return (f"it ended {value!r}" if not is_empty(value) else "it ended empty"), \
        said[:1] + _last_update(ev, pred.artifact, pred.field)


def _failure(ctx: _Ctx, reason: str, text: str, seqs: Sequence[int]) -> GateFailure:
    times = {e.seq: e.t_media_ms for e in ctx.events}
    kept = sorted({s for s in seqs if s in times})
    return GateFailure(reason=reason, text=text, seqs=kept,
                       t_media_ms=min((times[s] for s in kept), default=None))


def _pred_failure(ctx: _Ctx, reason: str, lead: str, pred: Predicate) -> GateFailure:
    clause, seqs = _behind(ctx, pred)
    return _failure(ctx, reason, f"{lead}: {statement(pred)}" + (f" ({clause})" if clause
                                                                 else ""), seqs)


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
    art: ArtifactSpec, state: FinalState, fields: list[FieldResult], ctx: _Ctx,
) -> list[GateFailure]:
    out: list[GateFailure] = []
    ev = ctx.events
    life = state.lifecycle.get(art.id, Lifecycle.DRAFT)
    if life.rank < art.min_lifecycle.rank:
        out.append(_failure(
            ctx, f"{art.id}: lifecycle {life.value} < required {art.min_lifecycle.value}",
            f"{art.id} ended {life.value}; it must reach at least {art.min_lifecycle.value}",
            _last_lifecycle(ev, art.id)))
    mine = [f for f in fields if f.artifact == art.id]
    specs = {f.name: f for f in art.fields}
    missing = [f.field for f in mine if specs[f.field].required and is_empty(f.value)]
    if missing:
        out.append(_failure(
            ctx, f"{art.id}: missing required field(s) {', '.join(missing)}",
            f"{art.id} ended without {', '.join(missing)} (required)",
            _last_update(ev, art.id)))
    wrong = [f.field for f in mine if f.counted and not f.correct and not is_empty(f.value)]
    if wrong:
        out.append(_failure(
            ctx, f"{art.id}: wrong field(s) {', '.join(wrong)}",
            f"{art.id} ended with a wrong value in {', '.join(wrong)}",
            [s for name in wrong for s in _last_update(ev, art.id, name)]))
    stale = [f.field for f in mine if f.stale]
    if stale:
        out.append(_failure(
            ctx, f"{art.id}: stale (pre-correction) value in {', '.join(stale)}",
            f"{art.id} kept the value from before the caller's correction in "
            f"{', '.join(stale)}",
            [s for name in stale for s in _last_update(ev, art.id, name)]))
    return out


def grade_events(
    task: TaskSpec, events: Sequence[Event], *, judge: Judge | None = None,
    run_id: str = "", problems: Sequence[str] = (), corrections: Sequence[Correction] = (),
) -> RunGrade:
    state = final_state(task, events)
    fields = grade_fields(task, state, judge)
    auth = replay_authorization(events, corrections)
    ctx = _Ctx(task, events, state, fields, auth)
    g = task.grading
    failures: dict[str, list[GateFailure]] = {name: [] for name in GATE_NAMES}

    unmet = [p for p in g.terminal if not ctx.holds(p)]
    alternate_ok = any(all(ctx.holds(p) for p in alt) for alt in g.alternates)
    if unmet and not alternate_ok:
        failures["TS"] = [_pred_failure(ctx, f"terminal predicate not met: {describe(p)}",
                                        "Not reached", p) for p in unmet]

    failures["PV"] = [_pred_failure(ctx, f"forbidden predicate holds: {describe(p)}",
                                    "Forbidden, but it happened", p)
                      for p in g.forbidden if ctx.holds(p)]
    failures["PV"] += [_pred_failure(ctx, f"must-hold predicate violated: {describe(p)}",
                                     "Must hold, but did not", p)
                       for p in g.must_hold if not ctx.holds(p)]
    failures["PV"] += [_failure(ctx, line, line[:1].upper() + line[1:], [seq])
                       for line, seq in zip(auth.unauthorized, auth.unauthorized_seqs,
                                            strict=True)]
    failures["PV"] += [_failure(ctx, line, "Invalid shortcut: " + line.split(": ", 1)[1],
                                [write.seq]) for line, write in shortcut_writes(task, events)]

    for req in g.required_actions:
        if _action_done(req, events):
            continue
        args = f" {json.dumps(req.args, sort_keys=True)}" if req.args else ""
        tries = [e.seq for e in events if isinstance(e, ToolCall) and e.name == req.tool]
        failures["AC"].append(_failure(
            ctx, f"required action not completed: {req.tool}{args}",
            f"{req.tool} was never completed" + (
                " with " + ", ".join(f"{k} {v}" for k, v in sorted(req.args.items()))
                if req.args else "")
            + (f" ({len(tries)} attempt(s) did not succeed)" if tries else ""), tries))
    retrieved = {d for e in events if isinstance(e, ToolResult) and e.ok for d in e.evidence}
    failures["AC"] += [_failure(ctx, f"required evidence never retrieved: {doc}",
                                f"The agent never retrieved {doc}", [])
                       for doc in g.required_evidence if doc not in retrieved]

    for art in task.artifacts:
        failures["AV"] += _artifact_valid(art, state, fields, ctx)

    reasons = {name: [f.reason for f in failures[name]] for name in GATE_NAMES}
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
        gate_failures={k: v for k, v in failures.items() if v},
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


def grade_run_dir(
    run_dir: Path, tasks: Mapping[str, TaskSpec], *, judge: Judge | None = None,
    apply_corrections: bool = True,
) -> RunGrade:
    """The run's grade from its directory; ``apply_corrections=False``: as logged, before any
    researcher's correction (the replay page shows both)."""
    meta = RunDir(run_dir).read_meta()
    task = tasks.get(meta.task_id)
    if task is None:
        raise RunDirError(f"{run_dir}/meta.json: unknown task_id '{meta.task_id}'")
    log = run_dir / "events.jsonl"
    if not log.is_file():
        raise RunDirError(f"{run_dir}: no events.jsonl")
    read = read_events(log)
    problems = list(read.problems)
    if RunDir(run_dir).trace_path() is None:
        problems.append(f"{run_dir}: no stereo trace (trace.wav or trace.flac)")
    corrections, unreadable = read_corrections_checked(run_dir)
    problems += unreadable
    if not apply_corrections:
        corrections = []
    return grade_events(
        task, read.events, judge=judge, run_id=meta.run_id or run_dir.name,
        problems=problems, corrections=corrections,
    )
