"""Suite composition against the paper's (Figure 3: 120 workflows over six dimensions)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel

from runtime.core.spec import Taxonomy


class Labelled(Protocol):
    """A task or a catalogue row: anything with taxonomy labels."""

    @property
    def taxonomy(self) -> Taxonomy: ...

PAPER_N = 120
PAPER_COMPOSITION: dict[str, dict[str, int]] = {
    "archetype": {
        "form-fill": 10, "interview": 10, "intake": 10, "troubleshoot": 10, "negotiate": 20,
        "coordinate": 20, "discovery": 10, "advise": 10, "facilitate": 10, "inspect": 10,
    },
    "autonomy": {
        "prepare-only": 51, "draft-confirm": 29, "low-risk-execute": 16, "approval-gated": 24,
    },
    "knowledge": {"none": 44, "supplied-evidence": 6, "small-search": 51, "multi-document": 19},
    "tool_burden": {"light": 44, "moderate": 76},
    "user_behavior": {
        "cooperative": 24, "correction-prone": 24, "ambiguous": 12, "distracted": 12,
        "expert": 12, "low-tech": 12, "novice": 12, "verbose": 12,
    },
    "risk": {"routine": 63, "sensitive-data": 25, "consequential-action": 22, "special-review": 10},
}
"""Counts read off the paper's Figure 3 (the review in shared/seeds/002 transcribes them);
supplied-evidence is the remainder of the knowledge column (120 − 44 − 51 − 19)."""

LIST_DIMENSIONS = ("duplex", "delegation")
SCALAR_DIMENSIONS = (
    "archetype", "industry", "artifact_class", "autonomy", "knowledge", "tool_burden",
    "user_behavior", "risk",
)


class CompositionRow(BaseModel):
    dimension: str
    label: str
    count: int
    share: float
    paper_count: int | None
    paper_share: float | None


def composition(tasks: Sequence[Labelled]) -> dict[str, Counter[str]]:
    """Label counts per taxonomy dimension (list-valued dimensions count every label)."""
    out: dict[str, Counter[str]] = {}
    for dim in SCALAR_DIMENSIONS:
        out[dim] = Counter(str(getattr(t.taxonomy, dim)) for t in tasks)
    for dim in LIST_DIMENSIONS:
        out[dim] = Counter(label for t in tasks for label in getattr(t.taxonomy, dim))
    return out


def composition_table(tasks: Sequence[Labelled]) -> list[CompositionRow]:
    counts = composition(tasks)
    n = max(1, len(tasks))
    rows: list[CompositionRow] = []
    for dim in (*SCALAR_DIMENSIONS, *LIST_DIMENSIONS):
        paper = PAPER_COMPOSITION.get(dim, {})
        for label in sorted(set(counts[dim]) | set(paper)):
            pc = paper.get(label) if paper else None
            rows.append(CompositionRow(
                dimension=dim, label=label, count=counts[dim][label],
                share=counts[dim][label] / n,
                paper_count=pc, paper_share=(pc / PAPER_N) if pc is not None else None,
            ))
    return rows


def format_composition(tasks: Sequence[Labelled]) -> str:
    lines = [f"Suite composition ({len(tasks)} tasks) against the paper ({PAPER_N} workflows)",
             f"{'dimension':<14} {'label':<32} {'suite':>11} {'paper':>11}"]
    for r in composition_table(tasks):
        paper = (f"{r.paper_count:>3} {r.paper_share:>6.1%}" if r.paper_count is not None
                 else f"{'-':>11}")
        lines.append(f"{r.dimension:<14} {r.label:<32} {r.count:>3} {r.share:>6.1%} {paper}")
    return "\n".join(lines)


def paper_deviations(tasks: Sequence[Labelled]) -> list[str]:
    """Every label of the paper's six dimensions whose count differs from Figure 3's, and every
    label the paper does not have on them: empty when ``tasks`` match the 120 exactly."""
    counts = composition(tasks)
    out: list[str] = []
    for dim, paper in PAPER_COMPOSITION.items():
        for label in sorted(set(paper) | set(counts[dim])):
            if counts[dim][label] != paper.get(label, 0):
                out.append(f"{dim}={label}: {counts[dim][label]}, paper {paper.get(label, 0)}")
    return out
