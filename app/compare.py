"""Two runs of one task side by side, aligned on the user simulator's plans and the observer's
semantic acts, so a researcher sees where one run diverged from the other.

The alignment is in two passes. First the two runs' ``user.plan`` sequences are aligned on
their plan ids (a longest common subsequence): a plan both runs reached is one row, whenever and
after however many other events it happened in each run. Then, between two consecutive shared
plans, the agent acts, tool calls and authorization events of both runs are aligned on their
labels the same way. A step only one run took is a row with a gap on the other side."""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

from runtime.core.events import (
    AgentAct,
    AuthBlocked,
    AuthGrant,
    AuthInvalidated,
    AuthRevoke,
    DuplexFire,
    Event,
    ToolCall,
    UserPlanEvent,
    read_events,
)

MAX_DP_CELLS = 400_000
"""Above this many cells (steps of A × steps of B between two shared plans) the exact
alignment would be slow in Python; :class:`difflib.SequenceMatcher` (greedy, near-exact) is
used for that stretch instead."""


@dataclass(frozen=True)
class Step:
    label: str
    """What is compared: ``user:<plan>``, ``agent:<act>(<field or action>)``, ``tool:<name>``,
    ``auth:<grant|revoke|blocked|invalidated>(<action>)``, ``duplex:<kind>(<plan>)``."""
    t_ms: int
    detail: str
    plan_id: str | None = None
    """The user simulator's plan id for a ``user.plan`` step: the alignment's anchors."""


@dataclass(frozen=True)
class Row:
    kind: str
    """``same`` (both runs took the step), ``only_a`` or ``only_b`` (a gap on the other side)."""
    a: Step | None
    b: Step | None

    @property
    def is_plan(self) -> bool:
        step = self.a or self.b
        return step is not None and step.plan_id is not None

    @property
    def dt_ms(self) -> int | None:
        """How much later (positive) or earlier run B took a shared step."""
        return self.b.t_ms - self.a.t_ms if self.a and self.b else None


def steps(events: list[Event]) -> list[Step]:
    out: list[Step] = []
    for e in events:
        if isinstance(e, UserPlanEvent):
            out.append(Step(f"user:{e.plan_id}", e.t_media_ms, f"{e.intent} ({e.trigger})",
                            plan_id=e.plan_id))
        elif isinstance(e, AgentAct):
            target = e.field or e.action or ""
            out.append(Step(f"agent:{e.act}({target})" if target else f"agent:{e.act}",
                            e.t_media_ms, e.text))
        elif isinstance(e, ToolCall):
            out.append(Step(f"tool:{e.name}", e.t_media_ms, str(e.args)))
        elif isinstance(e, AuthGrant | AuthRevoke):
            kind = "grant" if isinstance(e, AuthGrant) else "revoke"
            out.append(Step(f"auth:{kind}({e.action})", e.t_media_ms,
                            f"plan {e.plan_id}" if e.plan_id else ""))
        elif isinstance(e, AuthBlocked):
            out.append(Step(f"auth:blocked({e.action})", e.t_media_ms, e.reason))
        elif isinstance(e, AuthInvalidated):
            out.append(Step(f"auth:invalidated({e.action})", e.t_media_ms,
                            f"changed {', '.join(e.changed)}"))
        elif isinstance(e, DuplexFire):
            out.append(Step(f"duplex:{e.kind}({e.plan_id})", e.t_media_ms,
                            "while the agent was speaking" if e.overlap else ""))
    return out


def common_subsequence(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of ``a`` and ``b`` (exact dynamic
    programming; greedy matching blocks when the table would exceed ``MAX_DP_CELLS``)."""
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return []
    if n * m > MAX_DP_CELLS:
        matcher = SequenceMatcher(a=a, b=b, autojunk=False)
        return [(i + k, j + k) for i, j, size in matcher.get_matching_blocks()
                for k in range(size)]
    # lengths[i][j]: LCS length of a[i:] and b[j:]
    lengths = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = lengths[i], lengths[i + 1]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if a[i] == b[j] else max(below[j], row[j + 1])
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif lengths[i + 1][j] >= lengths[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _rows_between(a: list[Step], b: list[Step]) -> list[Row]:
    """Rows for two stretches that share no plan: matched labels on one row, the rest gaps."""
    rows: list[Row] = []
    i = j = 0
    for pi, pj in [*common_subsequence([s.label for s in a], [s.label for s in b]),
                   (len(a), len(b))]:
        rows.extend(Row("only_a", s, None) for s in a[i:pi])
        rows.extend(Row("only_b", None, s) for s in b[j:pj])
        if pi < len(a) and pj < len(b):
            rows.append(Row("same", a[pi], b[pj]))
        i, j = pi + 1, pj + 1
    return rows


def align(a: list[Step], b: list[Step]) -> tuple[list[Row], int | None]:
    """Rows of the alignment and the index of the first row where the runs differ. Plans
    both runs reached are anchors (each on one row); the steps between two anchors are
    aligned on their labels."""
    plans_a = [i for i, s in enumerate(a) if s.plan_id is not None]
    plans_b = [j for j, s in enumerate(b) if s.plan_id is not None]
    anchors = [(plans_a[x], plans_b[y]) for x, y in common_subsequence(
        [str(a[i].plan_id) for i in plans_a], [str(b[j].plan_id) for j in plans_b])]
    rows: list[Row] = []
    i = j = 0
    for ai, bj in [*anchors, (len(a), len(b))]:
        rows.extend(_rows_between(a[i:ai], b[j:bj]))
        if ai < len(a) and bj < len(b):
            rows.append(Row("same", a[ai], b[bj]))
        i, j = ai + 1, bj + 1
    first = next((k for k, r in enumerate(rows) if r.kind != "same"), None)
    return rows, first


def compare_runs(run_a: Path, run_b: Path) -> tuple[list[Row], int | None]:
    ea = read_events(run_a / "events.jsonl").events if (run_a / "events.jsonl").is_file() else []
    eb = read_events(run_b / "events.jsonl").events if (run_b / "events.jsonl").is_file() else []
    return align(steps(ea), steps(eb))
