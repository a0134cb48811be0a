"""The frozen user simulator (paper §3.3, appendix B.1–B.2).

:class:`RevealPolicy` reads observed agent acts, artifact lifecycle changes, approval requests
and world events and emits the next semantic :class:`~runtime.spec.UserPlan` (intent and allowed
facts, no wording). :func:`select_realization` maps (task id, seed, plan id) to one frozen
realization, whose audio the :class:`FrozenSimulator` streams on the user channel in 40 ms frames.
There is no user LLM or TTS at run time.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from runtime.audio import FRAME_SAMPLES, SAMPLE_RATE, Pcm, silence
from runtime.bank import BankPlayer
from runtime.events import DuplexFire, Event, UserPlanEvent, UserSpeechEnd, UserSpeechStart
from runtime.observer import Act
from runtime.spec import (
    DuplexEvent,
    Lifecycle,
    Realization,
    TaskSpec,
    TriggerAct,
    TriggerApproval,
    TriggerAsk,
    TriggerFallback,
    TriggerLifecycle,
    TriggerWorld,
    UserPlan,
)


def select_realization(task_id: str, seed: int, plan: UserPlan) -> Realization:
    """Deterministic selection: the same (task, seed, plan) always gives the same realization."""
    if not plan.realizations:
        raise ValueError(f"{task_id}: plan '{plan.id}' has no realizations")
    digest = hashlib.sha256(f"{task_id}|{seed}|{plan.id}".encode()).digest()
    return plan.realizations[int.from_bytes(digest[:8], "big") % len(plan.realizations)]


class RevealPolicy:
    """Chooses the next user plan from what has been observed. Pure bookkeeping, no audio."""

    def __init__(self, task: TaskSpec) -> None:
        self.task = task
        self.spoken: list[str] = []
        self.lifecycles: dict[str, Lifecycle] = {a.id: Lifecycle.DRAFT for a in task.artifacts}
        self.world_events: set[str] = set()
        self.last_trigger = ""
        """Trigger of the last plan chosen; a fallback never answers a fallback."""

    def _eligible(self, plan: UserPlan) -> bool:
        if plan.once and plan.id in self.spoken:
            return False
        return all(r in self.spoken for r in plan.requires)

    def _best(self, plans: list[UserPlan]) -> UserPlan | None:
        eligible = [p for p in plans if self._eligible(p)]
        if not eligible:
            return None
        return max(eligible, key=lambda p: (p.priority, -self.task.plans.index(p)))

    def opening(self) -> UserPlan | None:
        return self._best([p for p in self.task.plans if p.when.on == "opening"])

    def respond(self, acts: list[Act]) -> tuple[UserPlan, str] | None:
        """The plan answering a finished agent turn, with a description of its trigger."""
        plans = self.task.plans
        world = self._best([
            p for p in plans
            if isinstance(p.when, TriggerWorld) and p.when.event in self.world_events
        ])
        if world is not None:
            return world, f"world_event:{world.when.event}"  # type: ignore[union-attr]
        for act in acts:
            if act.act == "request_approval" and act.action:
                plan = self._best([
                    p for p in plans
                    if isinstance(p.when, TriggerApproval) and p.when.action == act.action
                ])
                if plan is not None:
                    return plan, f"approval_request:{act.action}"
        for act in acts:
            if act.act == "ask" and act.field:
                plan = self._best([
                    p for p in plans
                    if isinstance(p.when, TriggerAsk) and act.field in p.when.fields
                ])
                if plan is not None:
                    return plan, f"ask:{act.field}"
        plan = self._best([
            p for p in plans
            if isinstance(p.when, TriggerLifecycle)
            and self.lifecycles.get(p.when.artifact, Lifecycle.DRAFT).rank >= p.when.state.rank
        ])
        if plan is not None:
            return plan, "lifecycle"
        for act in acts:
            plan = self._best([
                p for p in plans if isinstance(p.when, TriggerAct) and p.when.act == act.act
            ])
            if plan is not None:
                return plan, f"act:{act.act}"
        if acts and self.last_trigger != "fallback":
            plan = self._best([p for p in plans if isinstance(p.when, TriggerFallback)])
            if plan is not None:
                return plan, "fallback"
        return None


@dataclass
class _Utterance:
    plan: UserPlan
    realization: Realization
    audio: Pcm
    pos: int = 0


@dataclass
class _Armed:
    event: DuplexEvent
    fire_at: int | None = None


@dataclass(frozen=True)
class SpeechAuthorization:
    """A grant or revocation decided from a live participant's speech (runtime/live_user.py).
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


class UserSource(Protocol):
    """What the orchestrator needs from the user side: the frozen simulator or a live
    participant in cue mode (runtime/live_user.py)."""

    policy: RevealPolicy

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

    def on_lifecycle(self, artifact_id: str, state: Lifecycle) -> None: ...

    def on_world_event(self, event_id: str) -> None: ...


class FrozenSimulator:
    """Streams frozen realizations on the user channel, reacting on the media clock."""

    def __init__(self, task: TaskSpec, seed: int, bank: BankPlayer) -> None:
        self.task = task
        self.seed = seed
        self.policy = RevealPolicy(task)
        self._bank = bank
        self._current: _Utterance | None = None
        self._queue: list[tuple[int, UserPlan, str]] = []
        self._armed: list[_Armed] = []
        self._armed_ids: set[str] = set()
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
        self.agent_has_spoken = True
        for armed in self._armed:
            if armed.fire_at is None:
                armed.fire_at = t_ms + armed.event.anchor.offset_ms

    def on_agent_turn_end(self, acts: list[Act], t_ms: int) -> None:
        if self.busy:
            return
        if not self._opened:
            plan = self.policy.opening()
            if plan is not None:
                self.schedule(plan, t_ms + self.task.limits.response_gap_ms, "opening")
            return
        chosen = self.policy.respond(acts)
        if chosen is not None:
            plan, trigger = chosen
            self.schedule(plan, t_ms + self.task.limits.response_gap_ms, trigger)

    def on_lifecycle(self, artifact_id: str, state: Lifecycle) -> None:
        self.policy.lifecycles[artifact_id] = state

    def on_world_event(self, event_id: str) -> None:
        self.policy.world_events.add(event_id)

    # -------------------------------------------------------------------------- frames

    def next_frame(self, t_ms: int) -> UserFrame:
        """The user's 40 ms frame starting at ``t_ms``, with the user events it caused."""
        out = UserFrame(pcm=silence())
        if not self._opened and not self.agent_has_spoken:
            opening = self.policy.opening()
            if (
                opening is not None and opening.when.on == "opening"
                and t_ms >= opening.when.silence_ms
            ):
                self.schedule(opening, t_ms, "opening:silence")
        for armed in list(self._armed):
            if armed.fire_at is not None and t_ms >= armed.fire_at:
                self._armed.remove(armed)
                plan = self.task.plan(armed.event.plan)
                if plan is not None:
                    out.events.append(DuplexFire(
                        event_id=armed.event.id, kind=armed.event.kind, plan_id=plan.id,
                        anchor_ms=armed.fire_at,
                    ))
                    # A duplex event preempts anything queued: it is anchored to media time.
                    self._queue.insert(0, (t_ms, plan, f"duplex:{armed.event.id}"))
        if self._current is None and self._queue and self._queue[0][0] <= t_ms:
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
                out.events.append(
                    UserSpeechEnd(plan_id=utt.plan.id, realization_id=utt.realization.id)
                )
                out.finished = utt.plan
                self._current = None
                self._arm_after(utt.plan.id)
        return out

    def _start(self, plan: UserPlan, trigger: str, out: UserFrame) -> None:
        real = select_realization(self.task.id, self.seed, plan)
        audio = self._bank.audio(real.id, real.audio)
        self.policy.spoken.append(plan.id)
        self.policy.last_trigger = trigger
        out.events.append(UserPlanEvent(
            plan_id=plan.id, intent=plan.intent, trigger=trigger,
            facts=[f"{f.fact}@{f.version}" for f in plan.facts],
        ))
        out.events.append(UserSpeechStart(
            plan_id=plan.id, realization_id=real.id, text=real.text,
            duration_ms=len(audio) * 1000 // SAMPLE_RATE,
        ))
        self._current = _Utterance(plan=plan, realization=real, audio=audio)

    def _arm_after(self, plan_id: str) -> None:
        """Arm the duplex events anchored on ``plan_id``; each fires at most once per run."""
        for event in self.task.duplex_events:
            if event.anchor.after_plan == plan_id and event.id not in self._armed_ids:
                self._armed_ids.add(event.id)
                self._armed.append(_Armed(event=event))
