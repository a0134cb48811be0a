"""Two runs of one task side by side, aligned on their semantic acts (user plans, agent acts,
tool calls), so a researcher sees where one run diverged from the other."""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

from runtime.events import AgentAct, Event, ToolCall, UserPlanEvent, read_events


@dataclass(frozen=True)
class Step:
    label: str
    """What is compared: ``user:<plan>``, ``agent:<act>(<field or action>)``, ``tool:<name>``."""
    t_ms: int
    detail: str


@dataclass(frozen=True)
class Row:
    kind: str
    """``same``, ``changed``, ``only_a`` or ``only_b``."""
    a: Step | None
    b: Step | None


def steps(events: list[Event]) -> list[Step]:
    out: list[Step] = []
    for e in events:
        if isinstance(e, UserPlanEvent):
            out.append(Step(f"user:{e.plan_id}", e.t_media_ms, f"{e.intent} ({e.trigger})"))
        elif isinstance(e, AgentAct):
            target = e.field or e.action or ""
            out.append(Step(f"agent:{e.act}({target})" if target else f"agent:{e.act}",
                            e.t_media_ms, e.text))
        elif isinstance(e, ToolCall):
            out.append(Step(f"tool:{e.name}", e.t_media_ms, str(e.args)))
    return out


def align(a: list[Step], b: list[Step]) -> tuple[list[Row], int | None]:
    """Rows of the alignment and the index of the first row where the runs differ."""
    matcher = SequenceMatcher(a=[s.label for s in a], b=[s.label for s in b], autojunk=False)
    rows: list[Row] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows.extend(Row("same", a[i], b[j]) for i, j in zip(range(i1, i2), range(j1, j2),
                                                                strict=True))
            continue
        left, right = a[i1:i2], b[j1:j2]
        for k in range(max(len(left), len(right))):
            sa = left[k] if k < len(left) else None
            sb = right[k] if k < len(right) else None
            kind = "changed" if sa and sb else ("only_a" if sa else "only_b")
            rows.append(Row(kind, sa, sb))
    first = next((i for i, r in enumerate(rows) if r.kind != "same"), None)
    return rows, first


def compare_runs(run_a: Path, run_b: Path) -> tuple[list[Row], int | None]:
    ea = read_events(run_a / "events.jsonl").events if (run_a / "events.jsonl").is_file() else []
    eb = read_events(run_b / "events.jsonl").events if (run_b / "events.jsonl").is_file() else []
    return align(steps(ea), steps(eb))
