"""Study B (appendix F.3): the live-human transfer audit's assignment plan and Table 10.

Two pure parts, no web and no audio: the counterbalanced *assignment plan* (who runs which task
on which system, in which order) and the *Table 10* computation (human versus frozen-simulator
Pass@1 on the same audit subset). ``docs/study_b_plan.md`` is the user guide.

Assignment plan
---------------
Inputs: the audit task ids (by default the 24 bundled tasks), the ``S`` evaluated systems (agent
spec strings, each checked with :func:`runtime.session.campaign.parse_agent_spec`), the anchor
subset
(``A`` tasks, default 6, drawn with the seed unless named), ``K`` sessions per participant (a
multiple of ``S``; default ``S``) and a seed.

* Every (task, system) cell is run once by a *primary* participant; every (anchor task, system)
  cell is run a second time by a *different* participant (``anchor=True``). That is
  ``S·(T + A)`` sessions: 24 tasks × 5 systems + 6 × 5 = 150.
* A *unit* is one copy of a task: the ``T`` primary copies and the ``A`` anchor copies,
  ``U = T + A`` units. The units are laid on a cycle in a seeded order, the two copies of an
  anchor task half the cycle apart (``D = ⌊U/2⌋`` slots). With ``m = K/S``, participant ``b``
  (``b = 0 … U/m − 1``) takes the ``K`` consecutive units starting at slot ``b·m`` and runs its
  ``k``-th unit on system ``⌊k/m⌋``. Every unit is then run on every system exactly once (the
  participants holding a unit see it at offsets ``r, r+m, …, r+(S−1)m``), a participant never
  holds the same task twice (``K ≤ D``) and meets each system exactly ``m`` times.
  ``U/m = S·U/K`` participants are needed, so ``K`` must divide the session count, and this
  design needs ``K ≤ ⌊U/2⌋`` when there are anchors (an error says which values work).
* Order: a participant's sessions form ``m`` blocks of ``S``, one session per system in each
  block, ordered by a row of a Williams design: for even ``S`` one Latin square in which each
  system immediately follows each other system exactly once; for odd ``S`` that square paired
  with its mirror image (rows reversed), so each ordered pair occurs exactly twice in ``2S``
  rows. Participant ``b``'s block ``j`` uses row ``(b + j·S) mod R`` (``R`` = ``S`` or ``2S``).
  Each position's rows therefore run through whole Latin squares: every system appears equally
  often in each position **exactly** when the participant count is a multiple of ``S``, and
  otherwise the counts at a position differ by **at most one** (each is ``⌊N/S⌋`` or
  ``⌈N/S⌉``). First-order carry-over is balanced exactly when the participant count is a
  multiple of ``R``; the default 30 participants × 5 systems is (``R = 10``).
* Seeded: one ``numpy.random.Generator(PCG64(seed))`` permutes, in this order, the (sorted)
  task ids (the first ``A`` of that order are the anchors unless named), the systems' places in
  the square, and the participant labels ``P01 … PNN``. The same inputs and seed give the
  identical plan; the plan depends on the set of task ids, not their order.

:func:`check_plan` lists every violated constraint of a plan, e.g. after a researcher edited the
CSV; :func:`swap_sessions` is the one edit offered here and refuses a swap that breaks the plan.

Table 10
--------
Per system, on the tasks whose primary human session was completed and graded (``ws`` not
``None``; the others are counted in ``n_incomplete`` and excluded from both conditions):
``human_pass_at_1`` is the mean over tasks of the human WS, ``synthetic_pass_at_1`` the mean over
the same tasks of the mean WS over simulator repeats, ``diff`` = human − synthetic, all in percent
(points). ``diff_ci`` is a 95% task-level *paired* bootstrap: tasks are resampled with replacement
and the per-task difference ``human_i − synthetic_i`` is averaged, so both conditions are drawn on
the same resample (:func:`grading.metrics.task_bootstrap_ci` on the per-task differences). The
anchor section compares, per system, the two participants' WS on the anchor tasks. A value that
does not exist (no tasks; a CI from one task) is ``None`` with a note saying why.
"""

from __future__ import annotations

import csv
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from grading.metrics import task_bootstrap_ci
from runtime.core import csv_safe

if TYPE_CHECKING:
    from runtime.core.spec import TaskSpec

__all__ = [
    "CSV_COLUMNS",
    "PlanError",
    "PlannedSession",
    "SessionOutcome",
    "StudyBPlan",
    "balance_table",
    "check_plan",
    "format_balance",
    "format_plan",
    "format_table10",
    "label_problem",
    "make_plan",
    "select_anchor_tasks",
    "swap_sessions",
    "synthetic_from_campaign",
    "table10",
    "table10_csv",
    "validate_systems",
    "williams_rows",
]

#: Columns of a plan CSV, in the order :meth:`StudyBPlan.to_csv` writes them.
CSV_COLUMNS: tuple[str, ...] = ("participant", "position", "task_id", "system", "anchor")

_TRUE = {"1", "true", "yes"}
_FALSE = {"0", "false", "no"}
LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,15}")
"""A participant label: 1–16 letters, digits, ``_``, ``-`` or ``.``, starting with a letter or a
digit (``P01``). Labels name participants on every page and export; they never become folder
names as they are (app/study_b.py derives those)."""
LABEL_RULE = ("use 1–16 letters, digits, '_', '-' or '.', starting with a letter or digit "
              "(e.g. P01)")


class PlanError(ValueError):
    """A plan cannot be made, read or edited; the message names what is wrong and what to do."""


def label_problem(label: str) -> str | None:
    """Why ``label`` is not a valid participant label, or None when it is."""
    if LABEL_PATTERN.fullmatch(label):
        return None
    return f"participant label {label!r} is not allowed: {LABEL_RULE}"


# --------------------------------------------------------------------------- plan model


@dataclass(frozen=True)
class PlannedSession:
    """One live session: a participant runs one task with one system."""

    participant: str  # "P01"
    position: int  # 1-based order within the participant
    task_id: str
    system: str  # agent spec
    anchor: bool  # True for the second, independent run of an anchor cell


@dataclass(frozen=True)
class StudyBPlan:
    """A Study B assignment plan; sessions are sorted by participant, then position."""

    seed: int
    task_ids: tuple[str, ...]
    systems: tuple[str, ...]
    anchor_task_ids: tuple[str, ...]
    sessions: tuple[PlannedSession, ...]

    def participants(self) -> list[str]:
        """The participant labels, sorted."""
        return sorted({s.participant for s in self.sessions})

    def for_participant(self, label: str) -> list[PlannedSession]:
        """The participant's sessions in order of position; PlanError for an unknown label."""
        mine = sorted((s for s in self.sessions if s.participant == label),
                      key=lambda s: s.position)
        if not mine:
            raise PlanError(
                f"no participant {label!r} in the plan; participants are "
                f"{_describe(self.participants())}"
            )
        return mine

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; :meth:`from_json` reads it back to an equal plan."""
        return {
            "seed": self.seed,
            "task_ids": list(self.task_ids),
            "systems": list(self.systems),
            "anchor_task_ids": list(self.anchor_task_ids),
            "sessions": [
                {"participant": s.participant, "position": s.position, "task_id": s.task_id,
                 "system": s.system, "anchor": s.anchor}
                for s in self.sessions
            ],
        }

    @classmethod
    def from_json(cls, data: Any) -> StudyBPlan:
        """Read :meth:`to_json`'s dict; PlanError naming the field at fault. The plan's
        constraints are not checked here: call :func:`check_plan`."""
        if not isinstance(data, Mapping):
            raise PlanError(f"a plan must be a JSON object, got {type(data).__name__}")
        missing = [k for k in ("seed", "task_ids", "systems", "anchor_task_ids", "sessions")
                   if k not in data]
        if missing:
            raise PlanError(f"plan JSON lacks {', '.join(repr(k) for k in missing)}")
        seed = data["seed"]
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise PlanError(f"plan JSON 'seed': expected an integer, got {seed!r}")
        lists = {k: _str_list(data[k], k) for k in ("task_ids", "systems", "anchor_task_ids")}
        raw = data["sessions"]
        if not isinstance(raw, list):
            raise PlanError("plan JSON 'sessions': expected a list of session objects")
        sessions = []
        for i, item in enumerate(raw):
            where = f"plan JSON sessions[{i}]"
            if not isinstance(item, Mapping):
                raise PlanError(f"{where}: expected an object, got {item!r}")
            for key in CSV_COLUMNS:
                if key not in item:
                    raise PlanError(f"{where}: missing {key!r}")
            pos = item["position"]
            if not isinstance(pos, int) or isinstance(pos, bool) or pos < 1:
                raise PlanError(f"{where}.position: expected an integer >= 1, got {pos!r}")
            if not isinstance(item["anchor"], bool):
                raise PlanError(f"{where}.anchor: expected true or false, got {item['anchor']!r}")
            texts = {}
            for key in ("participant", "task_id", "system"):
                value = item[key]
                if not isinstance(value, str) or not value.strip():
                    raise PlanError(f"{where}.{key}: expected a non-empty string, got {value!r}")
                texts[key] = value.strip()
            sessions.append(PlannedSession(texts["participant"], pos, texts["task_id"],
                                           texts["system"], item["anchor"]))
        return cls(seed, tuple(lists["task_ids"]), tuple(lists["systems"]),
                   tuple(lists["anchor_task_ids"]), _sorted_sessions(sessions))

    def to_csv(self, fh: TextIO) -> None:
        """One row per session (``CSV_COLUMNS``; anchor as 1/0), by participant and position."""
        writer = csv_safe.writer(fh, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for s in self.sessions:
            writer.writerow([s.participant, s.position, s.task_id, s.system, int(s.anchor)])

    @classmethod
    def from_csv(
        cls, fh: TextIO, *, seed: int, task_ids: Sequence[str], systems: Sequence[str],
        anchor_task_ids: Sequence[str],
    ) -> StudyBPlan:
        """Read a (possibly edited) plan CSV. A malformed row raises PlanError naming its line
        and field; whether the sessions satisfy the design is :func:`check_plan`'s job."""
        reader = csv.DictReader(fh)
        header = [h.strip() for h in (reader.fieldnames or [])]
        absent = [c for c in CSV_COLUMNS if c not in header]
        if absent:
            raise PlanError(
                f"plan CSV lacks column(s) {', '.join(absent)}; the header must be "
                f"{','.join(CSV_COLUMNS)}"
            )
        reader.fieldnames = header
        sessions = []
        for row in reader:
            line = reader.line_num
            cells = {k: csv_safe.unquote_cell((row.get(k) or "").strip()) for k in CSV_COLUMNS}
            if not any(cells.values()):
                continue  # a blank line left by a spreadsheet
            for key in ("participant", "task_id", "system"):
                if not cells[key]:
                    raise PlanError(f"plan CSV line {line}: empty {key}; fill it in")
            if label_problem(cells["participant"]) is not None:
                raise PlanError(
                    f"plan CSV line {line}, field participant: {cells['participant']!r} is not "
                    f"a participant label; {LABEL_RULE}. Rename it in every row of that "
                    "participant and import the file again"
                )
            try:
                position = int(cells["position"])
            except ValueError:
                position = 0
            if position < 1:
                raise PlanError(
                    f"plan CSV line {line}: position {cells['position']!r} is not an integer "
                    ">= 1"
                )
            flag = cells["anchor"].lower()
            if flag not in _TRUE | _FALSE:
                raise PlanError(
                    f"plan CSV line {line}: anchor {cells['anchor']!r} must be 1 or 0 "
                    "(true/false)"
                )
            sessions.append(PlannedSession(cells["participant"], position, cells["task_id"],
                                           cells["system"], flag in _TRUE))
        return cls(seed, tuple(task_ids), tuple(systems), tuple(anchor_task_ids),
                   _sorted_sessions(sessions))


def _str_list(value: Any, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PlanError(f"plan JSON {name!r}: expected a list of strings, got {value!r}")
    return list(value)


def _sort_key(s: PlannedSession) -> tuple[str, int, str, str, bool]:
    return (s.participant, s.position, s.task_id, s.system, s.anchor)


def _sorted_sessions(sessions: Iterable[PlannedSession]) -> tuple[PlannedSession, ...]:
    return tuple(sorted(sessions, key=_sort_key))


def _describe(items: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(items[:limit])
    more = len(items) - limit
    return shown + (f" (+{more} more)" if more > 0 else "")


# --------------------------------------------------------------------------- design pieces


def williams_rows(n: int) -> list[list[int]]:
    """The rows of a Williams design for ``n`` treatments, each a permutation of ``0 … n−1``.

    The first row is ``0, 1, n−1, 2, n−2, …``; row ``i`` adds ``i`` (mod ``n``), which gives a
    Latin square whose columns are permutations too. For even ``n`` each ordered pair of distinct
    treatments is adjacent exactly once; for odd ``n > 1`` the square is followed by its mirror
    image (each row reversed), ``2n`` rows in which each ordered pair is adjacent exactly twice.
    """
    if n < 1:
        raise PlanError(f"a Williams design needs at least one treatment, got {n}")
    first = [0]
    lo, hi, take_lo = 1, n - 1, True
    while len(first) < n:
        if take_lo:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
        take_lo = not take_lo
    rows = [[(x + i) % n for x in first] for i in range(n)]
    if n % 2 == 1 and n > 1:
        rows += [row[::-1] for row in rows]
    return rows


def _check_ids(kind: str, values: Sequence[str]) -> tuple[str, ...]:
    if isinstance(values, str):
        raise PlanError(f"{kind}s must be a list, got the string {values!r}")
    out: list[str] = []
    for v in values:
        if not isinstance(v, str) or not v.strip():
            raise PlanError(f"{kind} {v!r} is not a non-empty string")
        if v != v.strip() or "," in v:
            raise PlanError(f"{kind} {v!r} has surrounding spaces or a comma; remove them")
        if v in out:
            raise PlanError(f"{kind} {v!r} is listed twice; list each {kind} once")
        out.append(v)
    if not out:
        raise PlanError(f"no {kind}s given; a plan needs at least one")
    return tuple(out)


def validate_systems(systems: Sequence[str]) -> tuple[str, ...]:
    """The systems as a tuple after checking each spec with ``parse_agent_spec`` and rejecting
    duplicates; PlanError naming the spec at fault."""
    specs = _check_ids("system", systems)
    # Imported here: the campaign module pulls in the runtime's audio stack.
    from runtime.session.campaign import AgentSpecError, parse_agent_spec

    for spec in specs:
        try:
            parse_agent_spec(spec)
        except AgentSpecError as exc:
            raise PlanError(f"system {spec!r} is not a usable agent spec: {exc}") from None
    return specs


def _rng_for(seed: int) -> np.random.Generator:
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise PlanError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.default_rng(seed)


def _anchor_tasks(
    rng: np.random.Generator, tasks: tuple[str, ...], n_anchor: int,
    anchor_task_ids: Sequence[str] | None,
) -> tuple[list[str], tuple[str, ...]]:
    """(seeded task order, anchors in ``tasks`` order); draws one permutation from ``rng``."""
    canonical = sorted(tasks)
    order = [canonical[int(i)] for i in rng.permutation(len(canonical))]
    if anchor_task_ids is None:
        if isinstance(n_anchor, bool) or not isinstance(n_anchor, int) or n_anchor < 0:
            raise PlanError(f"n_anchor must be a non-negative integer, got {n_anchor!r}")
        if n_anchor > len(tasks):
            raise PlanError(
                f"n_anchor={n_anchor} exceeds the {len(tasks)} task(s); choose at most "
                f"{len(tasks)} anchor tasks"
            )
        chosen = set(order[:n_anchor])
    else:
        named = _check_ids("anchor task", anchor_task_ids) if anchor_task_ids else ()
        unknown = [t for t in named if t not in tasks]
        if unknown:
            raise PlanError(
                f"anchor task {unknown[0]!r} is not among the {len(tasks)} audit task(s); "
                f"pick anchors from: {_describe(sorted(tasks))}"
            )
        chosen = set(named)
    return order, tuple(t for t in tasks if t in chosen)


def select_anchor_tasks(task_ids: Sequence[str], *, seed: int = 0,
                        n_anchor: int = 6) -> tuple[str, ...]:
    """The anchor tasks :func:`make_plan` draws for these inputs (in ``task_ids`` order)."""
    tasks = _check_ids("task id", task_ids)
    return _anchor_tasks(_rng_for(seed), tasks, n_anchor, None)[1]


def _unit_cycle(order: list[str], anchors: tuple[str, ...]) -> list[tuple[str, bool]]:
    """The ``T + A`` units on a cycle: anchor copies ``⌊U/2⌋`` slots apart, the rest in order."""
    anchor_set = set(anchors)
    n_units = len(order) + len(anchors)
    half = n_units // 2
    slots: list[tuple[str, bool] | None] = [None] * n_units
    anchor_order = [t for t in order if t in anchor_set]
    for i, task in enumerate(anchor_order):
        x = (i * half) // len(anchor_order)  # strictly increasing, below half, as half >= A
        slots[x] = (task, False)
        slots[x + half] = (task, True)
    rest = iter(t for t in order if t not in anchor_set)
    return [slot if slot is not None else (next(rest), False) for slot in slots]


def _valid_sizes(n_systems: int, n_units: int, limit: int) -> list[int]:
    return [m * n_systems for m in range(1, n_units + 1)
            if n_units % m == 0 and m * n_systems <= limit]


def make_plan(
    task_ids: Sequence[str],
    systems: Sequence[str],
    *,
    seed: int = 0,
    n_anchor: int = 6,
    anchor_task_ids: Sequence[str] | None = None,
    sessions_per_participant: int | None = None,
) -> StudyBPlan:
    """The counterbalanced Study B plan (see the module docstring for the design).

    ``anchor_task_ids``, when given, names the anchor tasks and ``n_anchor`` is ignored.
    ``sessions_per_participant`` (default: one per system) must be a multiple of the number of
    systems that divides the session count; the participant count is derived from it.
    """
    tasks = _check_ids("task id", task_ids)
    specs = validate_systems(systems)
    rng = _rng_for(seed)
    order, anchors = _anchor_tasks(rng, tasks, n_anchor, anchor_task_ids)
    n_sys, n_units = len(specs), len(tasks) + len(anchors)
    n_sessions = n_sys * n_units
    limit = n_units // 2 if anchors else n_units
    per = n_sys if sessions_per_participant is None else sessions_per_participant
    choices = (", ".join(map(str, _valid_sizes(n_sys, n_units, limit)))
               or "none (add tasks or use fewer systems)")
    if isinstance(per, bool) or not isinstance(per, int) or per < 1 or per % n_sys:
        raise PlanError(
            f"sessions_per_participant={per!r} is not a positive multiple of the {n_sys} "
            f"systems; each participant meets every system equally often. Use one of: "
            f"{choices}"
        )
    m = per // n_sys
    if n_units % m or per > limit:
        if n_units % m:
            why = f"it does not divide the {n_sessions} sessions into whole participants"
        elif anchors:
            why = (f"a participant could then meet an anchor task twice (this design allows "
                   f"at most {limit} sessions each with {len(tasks)} tasks and "
                   f"{len(anchors)} anchors)")
        else:
            why = f"a participant would need {per} different tasks but there are {len(tasks)}"
        raise PlanError(
            f"sessions_per_participant={per} does not fit: {why}. Use one of: "
            f"{choices}"
        )
    cycle = _unit_cycle(order, anchors)
    system_of = [specs[int(i)] for i in rng.permutation(n_sys)]  # square symbol -> system
    n_participants = n_units // m
    label_of = rng.permutation(n_participants)
    width = max(2, len(str(n_participants)))
    rows = williams_rows(n_sys)
    sessions: list[PlannedSession] = []
    for b in range(n_participants):
        label = f"P{int(label_of[b]) + 1:0{width}d}"
        for j in range(m):
            row = rows[(b + j * n_sys) % len(rows)]
            for q, symbol in enumerate(row):
                task, is_anchor = cycle[(b * m + symbol * m + j) % n_units]
                sessions.append(PlannedSession(label, j * n_sys + q + 1, task,
                                               system_of[symbol], is_anchor))
    return StudyBPlan(seed, tasks, specs, anchors, _sorted_sessions(sessions))


# --------------------------------------------------------------------------- checks


def balance_table(plan: StudyBPlan) -> dict[str, list[int]]:
    """System → number of sessions at each position 1 … max position (plan systems first, then
    any unknown system found in the sessions)."""
    n_pos = max((s.position for s in plan.sessions), default=0)
    names = list(plan.systems) + sorted({s.system for s in plan.sessions} - set(plan.systems))
    table = {name: [0] * n_pos for name in names}
    for s in plan.sessions:
        table[s.system][s.position - 1] += 1
    return table


def _slot(s: PlannedSession) -> str:
    return f"{s.participant} position {s.position}"


def check_plan(plan: StudyBPlan) -> list[str]:
    """Every constraint the plan violates, one sentence each; empty when the plan is valid."""
    problems: list[str] = []
    for kind, values in (("task id", plan.task_ids), ("system", plan.systems),
                         ("anchor task", plan.anchor_task_ids)):
        for value, count in Counter(values).items():
            if count > 1:
                problems.append(f"{kind} {value!r} is listed {count} times in the plan header")
    tasks, systems, anchors = set(plan.task_ids), set(plan.systems), set(plan.anchor_task_ids)
    for t in plan.anchor_task_ids:
        if t not in tasks:
            problems.append(f"anchor task {t!r} is not one of the plan's tasks")

    for label in plan.participants():
        why = label_problem(label)
        if why is not None:
            problems.append(why)

    # sessions one by one
    for s in plan.sessions:
        if s.position < 1:
            problems.append(f"{_slot(s)}: position must be 1 or more")
        if s.task_id not in tasks:
            problems.append(f"{_slot(s)}: unknown task {s.task_id!r} (not in the audit subset)")
        if s.system not in systems:
            problems.append(f"{_slot(s)}: unknown system {s.system!r} (not one of the "
                            f"{len(systems)} planned systems)")
        if s.anchor and s.task_id in tasks and s.task_id not in anchors:
            problems.append(f"{_slot(s)}: marked anchor but task {s.task_id!r} is not an "
                            "anchor task")

    # per participant
    by_participant: dict[str, list[PlannedSession]] = defaultdict(list)
    for s in plan.sessions:
        by_participant[s.participant].append(s)
    n_sys = len(systems)
    for label in sorted(by_participant):
        mine = sorted(by_participant[label], key=lambda s: s.position)
        positions = [s.position for s in mine]
        if positions != list(range(1, len(mine) + 1)):
            problems.append(
                f"{label}: positions are {', '.join(map(str, positions))}; number the "
                f"{len(mine)} sessions 1..{len(mine)}, each once"
            )
        for task, count in Counter(s.task_id for s in mine).items():
            if count > 1:
                where = ", ".join(str(s.position) for s in mine if s.task_id == task)
                problems.append(f"{label} sees task {task!r} {count} times (positions {where}); "
                                "a participant may see each task only once")
        if n_sys:
            counts = Counter(s.system for s in mine if s.system in systems)
            lo, hi = len(mine) // n_sys, -(-len(mine) // n_sys)
            for system in plan.systems:
                c = counts.get(system, 0)
                if not lo <= c <= hi:
                    want = str(lo) if lo == hi else f"{lo} or {hi}"
                    problems.append(f"{label} meets system {system!r} {c} time(s) in "
                                    f"{len(mine)} sessions; expected {want}")

    # cells
    primary: dict[tuple[str, str], list[PlannedSession]] = defaultdict(list)
    second: dict[tuple[str, str], list[PlannedSession]] = defaultdict(list)
    for s in plan.sessions:
        (second if s.anchor else primary)[(s.task_id, s.system)].append(s)
    for t in plan.task_ids:
        for system in plan.systems:
            runs = primary.get((t, system), [])
            if len(runs) != 1:
                problems.append(
                    f"cell ({t}, {system}) has {len(runs)} primary sessions"
                    + (f" ({'; '.join(map(_slot, runs))})" if runs else "")
                    + "; it needs exactly one"
                )
    for t in plan.anchor_task_ids:
        for system in plan.systems:
            runs = second.get((t, system), [])
            if len(runs) != 1:
                problems.append(
                    f"anchor cell ({t}, {system}) has {len(runs)} second sessions"
                    + (f" ({'; '.join(map(_slot, runs))})" if runs else "")
                    + "; it needs exactly one, by a different participant"
                )
                continue
            firsts = primary.get((t, system), [])
            if len(firsts) == 1 and firsts[0].participant == runs[0].participant:
                problems.append(
                    f"anchor cell ({t}, {system}) is run twice by {runs[0].participant}; the "
                    "second run must be by a different participant"
                )

    # order balance
    table = balance_table(plan)
    known = {k: v for k, v in table.items() if k in systems}
    for p in range(max((len(v) for v in known.values()), default=0)):
        at_p = {k: v[p] for k, v in known.items()}
        if max(at_p.values()) - min(at_p.values()) > 1:
            shown = ", ".join(f"{k} {c}" for k, c in at_p.items())
            problems.append(f"position {p + 1} is unbalanced ({shown}); each system's count "
                            "may differ from another's by at most one")
    return problems


def swap_sessions(plan: StudyBPlan, a: tuple[str, int], b: tuple[str, int]) -> StudyBPlan:
    """Swap the sessions at slots ``a`` and ``b`` (each ``(participant, position)``): each slot
    takes the other's task, system and anchor flag. PlanError when a slot does not exist or the
    result violates a constraint the plan did not already violate."""
    index = {(s.participant, s.position): i for i, s in enumerate(plan.sessions)}
    for slot in (a, b):
        if slot not in index:
            raise PlanError(
                f"no session at participant {slot[0]!r} position {slot[1]!r}; participants "
                f"are {_describe(plan.participants())}"
            )
    if a == b:
        raise PlanError(f"swap needs two different sessions, got {a} twice")
    sessions = list(plan.sessions)
    sa, sb = sessions[index[a]], sessions[index[b]]
    sessions[index[a]] = PlannedSession(sa.participant, sa.position, sb.task_id, sb.system,
                                        sb.anchor)
    sessions[index[b]] = PlannedSession(sb.participant, sb.position, sa.task_id, sa.system,
                                        sa.anchor)
    swapped = StudyBPlan(plan.seed, plan.task_ids, plan.systems, plan.anchor_task_ids,
                         _sorted_sessions(sessions))
    before = set(check_plan(plan))
    new = [p for p in check_plan(swapped) if p not in before]
    if new:
        raise PlanError(
            f"swapping ({a[0]}, {a[1]}) and ({b[0]}, {b[1]}) would break the plan: "
            + "; ".join(new)
        )
    return swapped


# --------------------------------------------------------------------------- text output


def _system_codes(plan: StudyBPlan) -> dict[str, str]:
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    names = list(plan.systems) + sorted({s.system for s in plan.sessions} - set(plan.systems))
    return {n: (letters[i] if i < len(letters) else f"S{i + 1}") for i, n in enumerate(names)}


def format_plan(plan: StudyBPlan) -> str:
    """Participants × positions, each cell ``TASK CODE`` (``*`` marks an anchor's second run)."""
    codes = _system_codes(plan)
    people = plan.participants()
    n_pos = max((s.position for s in plan.sessions), default=0)
    grid = {(s.participant, s.position): f"{s.task_id} {codes[s.system]}"
            + ("*" if s.anchor else "") for s in plan.sessions}
    width = max([len(c) for c in grid.values()] + [3])
    lead = max([len(p) for p in people] + [len("participant")])
    lines = [
        f"Study B plan: {len(plan.task_ids)} tasks x {len(plan.systems)} systems + "
        f"{len(plan.anchor_task_ids)} anchor tasks, {len(plan.sessions)} sessions, "
        f"{len(people)} participants, seed {plan.seed}",
        "systems: " + ", ".join(f"{c} = {n}" for n, c in codes.items()),
        "anchor tasks (* = second, independent run): "
        + (", ".join(plan.anchor_task_ids) or "none"),
        "",
        (f"{'participant':<{lead}}  "
         + "  ".join(f"{p:<{width}}" for p in range(1, n_pos + 1))).rstrip(),
    ]
    for person in people:
        cells = [grid.get((person, p), "-") for p in range(1, n_pos + 1)]
        lines.append(f"{person:<{lead}}  " + "  ".join(f"{c:<{width}}" for c in cells).rstrip())
    return "\n".join(lines)


def format_balance(plan: StudyBPlan) -> str:
    """The balance table (sessions per system and position) with a one-line verdict."""
    table = balance_table(plan)
    codes = _system_codes(plan)
    n_pos = max((len(v) for v in table.values()), default=0)
    lead = max([len(f"{codes[n]} {n}") for n in table] + [len("position")])
    lines = [f"{'position':<{lead}}  " + " ".join(f"{p:>4}" for p in range(1, n_pos + 1))]
    for name, counts in table.items():
        lines.append(f"{codes[name] + ' ' + name:<{lead}}  "
                     + " ".join(f"{c:>4}" for c in counts))
    known = [v for k, v in table.items() if k in set(plan.systems)]
    spreads = [max(col) - min(col) for col in zip(*known, strict=True)] if known else []
    if spreads and max(spreads) == 0:
        lines.append("balanced: every system appears equally often at every position")
    elif spreads and max(spreads) <= 1:
        lines.append("balanced within one: at each position the systems' counts differ by at "
                     "most one (the participant count is not a multiple of the systems)")
    elif spreads:
        lines.append("NOT balanced: some position has systems whose counts differ by more "
                     "than one")
    return "\n".join(lines)


# --------------------------------------------------------------------------- Table 10


@dataclass(frozen=True)
class SessionOutcome:
    """The graded result of one live session (``ws`` None = incomplete or ungradable)."""

    task_id: str
    system: str
    participant: str
    anchor: bool
    ws: bool | None


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _pct(ok: bool) -> float:
    return 100.0 if ok else 0.0


def _index_sessions(
    human: Sequence[SessionOutcome],
) -> tuple[dict[tuple[str, str], SessionOutcome], dict[tuple[str, str], SessionOutcome],
           list[str]]:
    primary: dict[tuple[str, str], SessionOutcome] = {}
    second: dict[tuple[str, str], SessionOutcome] = {}
    order: list[str] = []
    for i, o in enumerate(human):
        if not isinstance(o, SessionOutcome):
            raise ValueError(f"human[{i}]: expected a SessionOutcome, got {type(o).__name__}")
        if o.ws is not None and not isinstance(o.ws, bool | np.bool_):
            raise ValueError(f"human[{i}] ({o.participant}, {o.task_id}, {o.system}): ws must "
                             f"be true, false or None, got {o.ws!r}")
        if o.system not in order:
            order.append(o.system)
        target = second if o.anchor else primary
        key = (o.system, o.task_id)
        if key in target:
            kind = "anchor" if o.anchor else "primary"
            raise ValueError(
                f"two {kind} sessions for task {o.task_id!r} on system {o.system!r} "
                f"(participants {target[key].participant} and {o.participant}); keep one"
            )
        target[key] = o
    return primary, second, order


def _check_synthetic(
    synthetic: Mapping[str, Mapping[str, Sequence[bool]]],
) -> None:
    for system, per_task in synthetic.items():
        for task, runs in per_task.items():
            for k, ws in enumerate(runs):
                if not isinstance(ws, bool | np.bool_):
                    raise ValueError(f"synthetic[{system!r}][{task!r}][{k}]: expected a WS "
                                     f"boolean, got {ws!r}")


def _system_row(
    system: str, primary: Mapping[tuple[str, str], SessionOutcome],
    synthetic: Mapping[str, Sequence[bool]], *, seed: int, n_resamples: int,
) -> dict[str, Any]:
    mine = {t: o for (s, t), o in primary.items() if s == system}
    incomplete = sorted(t for t, o in mine.items() if o.ws is None)
    completed = sorted(t for t, o in mine.items() if o.ws is not None)
    paired = [t for t in completed if len(synthetic.get(t, ())) > 0]
    no_synth = [t for t in completed if t not in paired]
    notes: list[str] = []
    if not mine:
        notes.append("no primary human session for this system")
    if incomplete:
        notes.append(f"{len(incomplete)} incomplete/ungradable human session(s) excluded from "
                     f"both conditions: {_describe(incomplete)}")
    if no_synth:
        notes.append(f"{len(no_synth)} completed task(s) without synthetic runs excluded from "
                     f"both conditions: {_describe(no_synth)}")
    human = [_pct(bool(mine[t].ws)) for t in paired]
    synth = [100.0 * _mean([float(bool(w)) for w in synthetic[t]]) for t in paired]
    row: dict[str, Any] = {
        "human_pass_at_1": None, "synthetic_pass_at_1": None, "diff": None, "diff_ci": None,
        "n_tasks": len(paired), "n_incomplete": len(incomplete), "incomplete_tasks": incomplete,
        "tasks": paired, "synthetic_runs": sum(len(synthetic[t]) for t in paired),
    }
    if not paired:
        notes.append("undefined: no task has both a completed human session and synthetic "
                     "runs")
    else:
        diffs = [h - y for h, y in zip(human, synth, strict=True)]
        row["human_pass_at_1"] = _mean(human)
        row["synthetic_pass_at_1"] = _mean(synth)
        row["diff"] = _mean(diffs)
        if len(paired) == 1:
            notes.append("diff_ci undefined: one task (a task-level bootstrap needs at least "
                         "two tasks)")
        else:
            _, ci = task_bootstrap_ci(diffs, [1.0] * len(diffs), n_resamples=n_resamples,
                                      seed=seed, confidence=0.95)
            row["diff_ci"] = [ci[0], ci[1]]
            if len(set(diffs)) == 1:
                notes.append("degenerate diff_ci: every task has the same human − synthetic "
                             "difference")
    row["notes"] = notes
    return row


def _anchor_row(
    system: str, primary: Mapping[tuple[str, str], SessionOutcome],
    second: Mapping[tuple[str, str], SessionOutcome],
) -> dict[str, Any]:
    pairs: list[dict[str, Any]] = []
    notes: list[str] = []
    for (s, t), o in sorted(second.items()):
        if s != system:
            continue
        first = primary.get((s, t))
        if first is None:
            notes.append(f"anchor task {t!r} has no primary session")
        elif first.participant == o.participant:
            notes.append(f"anchor task {t!r}: both sessions are by {o.participant}, so they "
                         "are not independent")
        a = None if first is None else first.ws
        same = None if a is None or o.ws is None else bool(a) == bool(o.ws)
        pairs.append({
            "task_id": t, "primary_participant": None if first is None else first.participant,
            "primary_ws": None if a is None else bool(a), "second_participant": o.participant,
            "second_ws": None if o.ws is None else bool(o.ws), "same": same,
        })
    complete = [p for p in pairs if p["same"] is not None]
    row: dict[str, Any] = {
        "pairs": pairs, "n_pairs": len(complete), "n_incomplete_pairs": len(pairs) - len(complete),
        "pct_same": None, "pass_at_1_primary": None, "pass_at_1_second": None, "diff": None,
    }
    if row["n_incomplete_pairs"]:
        notes.append(f"{row['n_incomplete_pairs']} anchor pair(s) without two graded sessions "
                     "excluded")
    if complete:
        row["pct_same"] = 100.0 * _mean([float(p["same"]) for p in complete])
        row["pass_at_1_primary"] = _mean([_pct(p["primary_ws"]) for p in complete])
        row["pass_at_1_second"] = _mean([_pct(p["second_ws"]) for p in complete])
        row["diff"] = row["pass_at_1_primary"] - row["pass_at_1_second"]
    else:
        notes.append("undefined: no anchor task with two graded sessions")
    row["notes"] = notes
    return row


def table10(
    human: Sequence[SessionOutcome],
    synthetic: Mapping[str, Mapping[str, Sequence[bool]]],
    *,
    seed: int = 0,
    n_resamples: int = 2000,
) -> dict[str, Any]:
    """The numbers of the paper's Table 10 (JSON-ready; percentages and points).

    ``synthetic[system][task_id]`` holds the WS of each simulator repeat on that task. Returns::

        {"unit": "percent", "confidence": 0.95, "n_resamples": …, "seed": …,
         "systems": {system: {human_pass_at_1, synthetic_pass_at_1, diff, diff_ci, n_tasks,
                              n_incomplete, incomplete_tasks, tasks, synthetic_runs, notes}},
         "mean_diff": {"value", "n_systems", "note"},
         "anchor": {"systems": {system: {pairs, n_pairs, n_incomplete_pairs, pct_same,
                                         pass_at_1_primary, pass_at_1_second, diff, notes}},
                    "overall": {n_pairs, pct_same, mean_diff, note}}}

    ``mean_diff`` is the mean over systems of ``diff`` (systems whose diff is undefined are
    left out and named). In the anchor section ``diff`` is first participant − second
    participant, and ``overall`` pools the graded pairs of every system.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    primary, second, order = _index_sessions(human)
    _check_synthetic(synthetic)
    for system in synthetic:
        if system not in order:
            order.append(system)
    systems = {
        s: _system_row(s, primary, synthetic.get(s, {}), seed=seed, n_resamples=n_resamples)
        for s in order
    }
    defined = {s: r["diff"] for s, r in systems.items() if r["diff"] is not None}
    left_out = [s for s in order if s not in defined]
    mean_diff: dict[str, Any] = {
        "value": _mean(list(defined.values())) if defined else None,
        "n_systems": len(defined),
        "note": (f"systems without a defined diff left out: {', '.join(left_out)}"
                 if left_out and defined else None if defined else "undefined: no system has "
                 "a defined diff"),
    }
    anchor_rows = {s: _anchor_row(s, primary, second) for s in order}
    pooled = [p for r in anchor_rows.values() for p in r["pairs"] if p["same"] is not None]
    overall: dict[str, Any] = {"n_pairs": len(pooled), "pct_same": None, "mean_diff": None,
                               "note": None}
    if pooled:
        overall["pct_same"] = 100.0 * _mean([float(p["same"]) for p in pooled])
        overall["mean_diff"] = _mean([_pct(p["primary_ws"]) - _pct(p["second_ws"])
                                      for p in pooled])
    else:
        overall["note"] = "undefined: no anchor task with two graded sessions"
    return {
        "unit": "percent", "confidence": 0.95, "n_resamples": n_resamples, "seed": seed,
        "systems": systems, "mean_diff": mean_diff,
        "anchor": {"systems": anchor_rows, "overall": overall},
    }


TABLE10_CSV_COLUMNS: tuple[str, ...] = (
    "system", "n_tasks", "n_incomplete", "human_pass_at_1", "synthetic_pass_at_1", "diff",
    "diff_ci_low", "diff_ci_high", "anchor_pairs", "anchor_pct_same",
    "anchor_pass_at_1_primary", "anchor_pass_at_1_second", "notes",
)


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.4f}"


def table10_csv(result: Mapping[str, Any], fh: TextIO) -> None:
    """Write :func:`table10`'s result as CSV: one row per system, then a ``(mean)`` row holding
    the mean diff over systems and the pooled anchor agreement. An empty cell is undefined."""
    writer = csv_safe.writer(fh, lineterminator="\n")
    writer.writerow(TABLE10_CSV_COLUMNS)
    anchors = result["anchor"]["systems"]
    for system, r in result["systems"].items():
        a = anchors.get(system, {})
        ci = r["diff_ci"] or [None, None]
        writer.writerow([
            system, r["n_tasks"], r["n_incomplete"], _num(r["human_pass_at_1"]),
            _num(r["synthetic_pass_at_1"]), _num(r["diff"]), _num(ci[0]), _num(ci[1]),
            a.get("n_pairs", 0), _num(a.get("pct_same")), _num(a.get("pass_at_1_primary")),
            _num(a.get("pass_at_1_second")), " | ".join(r["notes"] + a.get("notes", [])),
        ])
    overall = result["anchor"]["overall"]
    md = result["mean_diff"]
    writer.writerow([
        "(mean)", "", "", "", "", _num(md["value"]), "", "", overall["n_pairs"],
        _num(overall["pct_same"]), "", "",
        " | ".join(n for n in (md["note"], overall["note"]) if n),
    ])


def _cell(x: float | None, width: int = 6) -> str:
    return f"{'n/a':>{width}}" if x is None else f"{x:>{width}.1f}"


def format_table10(result: Mapping[str, Any]) -> str:
    """A text rendering of :func:`table10`'s result with its notes."""
    rows = result["systems"]
    anchors = result["anchor"]["systems"]
    lead = max([len(s) for s in rows] + [len("mean over systems")])
    lines = [
        f"Table 10: live-human transfer audit (Pass@1 in %, diff = human - synthetic in "
        f"points, {100 * result['confidence']:g}% paired task-level bootstrap CI, "
        f"{result['n_resamples']} resamples, seed {result['seed']})",
        f"{'system':<{lead}}  tasks  incompl.   human  synth.    diff  {'95% CI':<16}  "
        "anchor agreement",
    ]
    for system, r in rows.items():
        ci = r["diff_ci"]
        ci_text = "n/a" if ci is None else f"[{ci[0]:.1f}, {ci[1]:.1f}]"
        a = anchors.get(system, {})
        agree = ("n/a" if a.get("pct_same") is None
                 else f"{a['pct_same']:.1f}% of {a['n_pairs']} pair(s)")
        lines.append(
            f"{system:<{lead}}  {r['n_tasks']:>5}  {r['n_incomplete']:>8}  "
            f"{_cell(r['human_pass_at_1'])}  {_cell(r['synthetic_pass_at_1'])}  "
            f"{_cell(r['diff'])}  {ci_text:<16}  {agree}"
        )
    md = result["mean_diff"]
    overall = result["anchor"]["overall"]
    pooled = ("n/a" if overall["pct_same"] is None
              else f"{overall['pct_same']:.1f}% of {overall['n_pairs']} pair(s)")
    lines.append(f"{'mean over systems':<{lead}}  {'':>5}  {'':>8}  {'':>6}  {'':>6}  "
                 f"{_cell(md['value'])}  {'':<16}  {pooled}")
    notes = [f"  {s}: {n}" for s, r in rows.items() for n in r["notes"]]
    notes += [f"  {s} (anchor): {n}" for s, a in anchors.items() for n in a["notes"]]
    notes += [f"  {n}" for n in (md["note"], overall["note"]) if n]
    if notes:
        lines += ["notes:", *notes]
    return "\n".join(lines)


_REPEAT_DIR = re.compile(r"^r(\d+)$")


def synthetic_from_campaign(
    campaign_dir: Path, tasks: Mapping[str, TaskSpec]
) -> dict[str, list[bool]]:
    """Task id → WS of each repeat (in repeat order) for one system's campaign directory
    (``<campaign>/<task>/r<k>/``), grading every run with :func:`grading.gates.grade_run_dir`.

    Runs that ended in an infrastructure failure are not agent failures and are left out, as in
    the campaign metrics. A run whose ``meta.json`` is not ``complete`` raises ValueError: finish
    the campaign (``apex-voice run`` resumes it) before computing Table 10.
    """
    from grading.gates import grade_run_dir
    from runtime.core.rundir import RunDir, find_run_dirs

    if not campaign_dir.is_dir():
        raise ValueError(f"{campaign_dir}: not a campaign directory")
    found: dict[str, list[tuple[int, str, bool]]] = defaultdict(list)
    dirs = find_run_dirs([campaign_dir])
    if not dirs:
        raise ValueError(f"{campaign_dir}: no run directories (folders with meta.json) found")
    for run_dir in dirs:
        meta = RunDir(run_dir).read_meta()
        status = meta.status
        if status != "complete":
            raise ValueError(
                f"{run_dir}: run status is {status!r}, not 'complete'; finish the campaign "
                "(apex-voice run resumes it) or move the run aside"
            )
        grade = grade_run_dir(run_dir, tasks)
        if grade.infrastructure_failure:
            continue
        match = _REPEAT_DIR.match(run_dir.name)
        repeat = meta.repeat
        if repeat is None:
            repeat = int(match.group(1)) if match else 0
        found[grade.task_id].append((repeat, run_dir.name, grade.WS))
    return {t: [ws for _, _, ws in sorted(found[t])] for t in sorted(found)}
