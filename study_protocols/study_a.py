"""Study A sampling: which frozen user utterances the annotators rate (paper appendix F.2).

"We sample 24 tasks stratified across at least eight work archetypes and spanning prepare-only
versus approval-gated work, light versus moderate tool burden, and multiple user-behavior
profiles. For each task, we sample three benchmark-critical user plans: the opening, one
information-bearing response, and one correction, approval, or revocation event where
available, yielding 72 frozen user utterances."

:func:`sample_study_a` is a pure, seeded function of the task pool. Tasks are drawn greedily in
a seeded order: first a task of an archetype not yet drawn, then one that covers a still
missing stratum (prepare-only / approval-gated autonomy, light / moderate tool burden, a new
user behaviour), then the least represented. Per task, the plans are seeded choices among

* **opening**: plans triggered on ``opening``;
* **critical**: intent ``correct``, ``approve`` or ``revoke``, or a ``barge_in`` that carries a
  corrected (version > 1) fact;
* **information**: any other plan that carries at least one fact (answer, inform, clarify, ...).

A task without a critical plan gets a second information-bearing plan and a note. Nothing is
dropped silently: every constraint is checked and reported (:attr:`StudyASample.checks`), and
:meth:`StudyASample.unsatisfied` lists every failed check and every shortfall in words. Each
chosen plan is realized exactly as the simulator would with the same seed
(:func:`runtime.user.simulator.select_realization`).
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from runtime.core.spec import TaskSpec, UserPlan
from runtime.user.simulator import select_realization

Role = Literal["opening", "information", "critical"]
CRITICAL_INTENTS = frozenset({"correct", "approve", "revoke"})
NON_INFORMATION_INTENTS = frozenset({"open", "goodbye", "backchannel"})
PREPARE_ONLY, APPROVAL_GATED = "prepare-only", "approval-gated"


class SamplingError(ValueError):
    """The request cannot be sampled at all (bad sizes, a task without an opening plan)."""


@dataclass(frozen=True)
class SampledItem:
    """One frozen user utterance to rate: a plan of a task and the realization chosen for it."""

    task_id: str
    plan_id: str
    realization_id: str
    role: Role
    intent: str
    text: str
    audio: str
    """Bank audio path, relative to the task folder (as in the task spec)."""

    @property
    def key(self) -> str:
        return f"{self.task_id}:{self.plan_id}:{self.realization_id}"


@dataclass(frozen=True)
class ConstraintCheck:
    name: str
    wanted: str
    got: str
    ok: bool


@dataclass(frozen=True)
class StudyASample:
    seed: int
    task_ids: tuple[str, ...]
    items: tuple[SampledItem, ...]
    checks: tuple[ConstraintCheck, ...]
    notes: tuple[str, ...]
    """Per-task shortfalls, e.g. a task with no correction/approval/revocation plan."""

    def unsatisfied(self) -> list[str]:
        """Every failed check and every note, in words (empty when the draw is as specified)."""
        failed = [f"{c.name}: wanted {c.wanted}, got {c.got}" for c in self.checks if not c.ok]
        return failed + list(self.notes)

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "task_ids": list(self.task_ids),
            "items": [{"key": i.key, **asdict(i)} for i in self.items],
            "checks": [asdict(c) for c in self.checks],
            "notes": list(self.notes),
            "unsatisfied": self.unsatisfied(),
        }


# --------------------------------------------------------------------------- plan roles

def is_critical(plan: UserPlan) -> bool:
    """A correction, approval or revocation, or a barge-in that carries a corrected fact."""
    if plan.intent in CRITICAL_INTENTS:
        return True
    return plan.intent == "barge_in" and any(ref.version > 1 for ref in plan.facts)


def is_information(plan: UserPlan) -> bool:
    """A non-opening, non-critical plan that carries at least one fact."""
    return (plan.when.on != "opening" and bool(plan.facts) and not is_critical(plan)
            and plan.intent not in NON_INFORMATION_INTENTS)


def _item(task: TaskSpec, seed: int, plan: UserPlan, role: Role) -> SampledItem:
    real = select_realization(task.id, seed, plan)
    return SampledItem(task.id, plan.id, real.id, role, plan.intent, real.text, real.audio)


def _openings(task: TaskSpec) -> list[UserPlan]:
    return [p for p in task.plans if p.when.on == "opening" and p.realizations]


def _sample_task(task: TaskSpec, seed: int, plans_per_task: int) -> tuple[list[SampledItem],
                                                                           list[str]]:
    rng = random.Random(f"study-a|{seed}|{task.id}")
    opening = rng.choice(_openings(task))
    info = [p for p in task.plans if is_information(p) and p.realizations]
    critical = [p for p in task.plans if p.when.on != "opening" and is_critical(p)
                and p.realizations]
    rng.shuffle(info)
    rng.shuffle(critical)
    wanted: list[Role] = ["opening", "information", "critical"]
    wanted += ["information"] * max(0, plans_per_task - len(wanted))
    items, notes = [_item(task, seed, opening, "opening")], []
    for role in wanted[1:plans_per_task]:
        if role == "critical" and critical:
            items.append(_item(task, seed, critical.pop(), "critical"))
        elif info:
            plan = info.pop()
            items.append(_item(task, seed, plan, "information"))
            if role == "critical":
                notes.append(f"{task.id}: no correction/approval/revocation plan; used a second "
                             f"information-bearing plan '{plan.id}' ({plan.intent})")
        else:
            what = "correction/approval/revocation" if role == "critical" else "information"
            notes.append(f"{task.id}: no {what} plan left to sample for the {role} slot; "
                         f"this task has fewer than {plans_per_task} items")
    return items, notes


# --------------------------------------------------------------------------- task strata

def _strata(task: TaskSpec) -> tuple[str, str, str, str]:
    x = task.taxonomy
    return x.archetype, x.autonomy, x.tool_burden, x.user_behavior


def _select_tasks(pool: Sequence[TaskSpec], n_tasks: int, seed: int) -> list[TaskSpec]:
    order = sorted(pool, key=lambda t: t.id)
    random.Random(f"study-a|{seed}|tasks").shuffle(order)
    chosen: list[TaskSpec] = []
    while len(chosen) < n_tasks:
        counts = [Counter[str](_strata(t)[k] for t in chosen) for k in range(4)]

        def gain(t: TaskSpec, counts: list[Counter[str]] = counts) -> tuple[bool, int, int]:
            arch, auto, tool, beh = _strata(t)
            new_auto = auto in (PREPARE_ONLY, APPROVAL_GATED) and not counts[1][auto]
            strata = new_auto + (not counts[2][tool]) + (not counts[3][beh])
            crowd = sum(c[v] for c, v in zip(counts, (arch, auto, tool, beh), strict=True))
            return not counts[0][arch], strata, -crowd

        taken = {t.id for t in chosen}
        # max() keeps the first of equal gains, so ties fall to the seeded order.
        chosen.append(max((t for t in order if t.id not in taken), key=gain))
    return sorted(chosen, key=lambda t: t.id)


def _count_text(counts: Counter[str], labels: Sequence[str]) -> str:
    return ", ".join(f"{label} {counts[label]}" for label in labels)


def _checks(tasks: Sequence[TaskSpec], items: Sequence[SampledItem], n_tasks: int,
            plans_per_task: int, min_archetypes: int, min_behaviours: int) -> list[ConstraintCheck]:
    arch = {t.taxonomy.archetype for t in tasks}
    beh = {t.taxonomy.user_behavior for t in tasks}
    auto = Counter[str](t.taxonomy.autonomy for t in tasks)
    tool = Counter[str](t.taxonomy.tool_burden for t in tasks)
    per_task = Counter(i.task_id for i in items)
    short = sorted(t.id for t in tasks if per_task[t.id] < plans_per_task)
    full = f"{plans_per_task} on every task"
    return [
        ConstraintCheck("tasks", f"{n_tasks}", f"{len(tasks)}", len(tasks) == n_tasks),
        ConstraintCheck("archetypes", f">= {min_archetypes} distinct", f"{len(arch)} distinct",
                        len(arch) >= min_archetypes),
        ConstraintCheck("autonomy", f"{PREPARE_ONLY} and {APPROVAL_GATED}",
                        _count_text(auto, (PREPARE_ONLY, APPROVAL_GATED)),
                        auto[PREPARE_ONLY] > 0 and auto[APPROVAL_GATED] > 0),
        ConstraintCheck("tool burden", "light and moderate",
                        _count_text(tool, ("light", "moderate")),
                        tool["light"] > 0 and tool["moderate"] > 0),
        ConstraintCheck("user behaviours", f">= {min_behaviours} distinct",
                        f"{len(beh)} distinct", len(beh) >= min_behaviours),
        ConstraintCheck("plans per task", full,
                        f"short on {', '.join(short)}" if short else full, not short),
        ConstraintCheck("items", f"{n_tasks * plans_per_task}", f"{len(items)}",
                        len(items) == n_tasks * plans_per_task),
    ]


def sample_study_a(tasks: Sequence[TaskSpec], *, n_tasks: int = 24, plans_per_task: int = 3,
                   seed: int = 0, min_archetypes: int = 8, min_behaviours: int = 3) -> StudyASample:
    """Draw the Study A items from ``tasks`` (see the module docstring). Raises
    :class:`SamplingError` when the request is impossible; shortfalls are reported instead."""
    if n_tasks < 1 or plans_per_task < 1:
        raise SamplingError(f"n_tasks ({n_tasks}) and plans_per_task ({plans_per_task}) must be "
                            "at least 1")
    if n_tasks > len(tasks):
        raise SamplingError(f"n_tasks={n_tasks} is larger than the pool of {len(tasks)} task(s); "
                            f"pass --n-tasks {len(tasks)} or fewer, or add tasks")
    dupes = sorted(i for i, c in Counter(t.id for t in tasks).items() if c > 1)
    if dupes:
        raise SamplingError(f"task id(s) appear more than once in the pool: {', '.join(dupes)}")
    no_opening = [t.id for t in tasks if not _openings(t)]
    if no_opening:
        raise SamplingError(f"task(s) {', '.join(no_opening)} have no plan triggered on "
                            "'opening' with realizations; Study A needs the opening utterance "
                            "(fix the task or leave it out of the pool)")
    chosen = _select_tasks(tasks, n_tasks, seed)
    items: list[SampledItem] = []
    notes: list[str] = []
    for task in chosen:
        task_items, task_notes = _sample_task(task, seed, plans_per_task)
        items += task_items
        notes += task_notes
    checks = _checks(chosen, items, n_tasks, plans_per_task, min_archetypes, min_behaviours)
    return StudyASample(seed, tuple(t.id for t in chosen), tuple(items), tuple(checks),
                        tuple(notes))


def annotator_order(item_keys: Sequence[str], *, seed: int, annotator: str) -> list[str]:
    """The order in which ``annotator`` rates the items: a permutation seeded by a hash of
    (seed, annotator), so annotators get independent orders and each order is reproducible."""
    if len(set(item_keys)) != len(item_keys):
        dupes = sorted(k for k, c in Counter(item_keys).items() if c > 1)
        raise SamplingError(f"item keys appear more than once: {', '.join(dupes)}")
    digest = hashlib.sha256(f"study-a-order|{seed}|{annotator}".encode()).digest()
    order = list(item_keys)
    random.Random(int.from_bytes(digest, "big")).shuffle(order)
    return order
