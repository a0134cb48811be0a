"""The suite's catalogue (``tasks/catalogue.yaml``): the paper's 120 workflows, each with its
catalogue id, title and taxonomy labels, written or still to write.

The labels on the six dimensions of the paper's Figure 3 are allocated so that the 120 rows
match its composition exactly; a task folder must carry its row's title and scalar labels, and
at least the duplex phenomena and delegation patterns its row lists. So the suite reaches the
paper's composition when the last row gets its folder, and every task written on the way is held
to the plan (``apex-voice tasks validate``, ``tests/test_catalogue.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime.core.spec import TaskSpec, Taxonomy, default_tasks_dir, read_yaml, schema_problems
from runtime.suite.composition import (
    LIST_DIMENSIONS,
    PAPER_N,
    SCALAR_DIMENSIONS,
    paper_deviations,
)

CATALOGUE_FILE = "catalogue.yaml"
SCALAR_LABELS = (*SCALAR_DIMENSIONS, "economic_role")
"""The labels a task must carry exactly as its row has them."""


class CatalogueError(ValueError):
    """The catalogue file cannot be used; ``problems`` holds one ``file: row: message`` line
    per defect."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class CatalogueEntry(BaseModel):
    """One workflow of the catalogue."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^apexv1_\d{3}$")
    title: str = Field(min_length=1)
    taxonomy: Taxonomy


def catalogue_path(tasks_dir: Path | None = None) -> Path:
    return (tasks_dir or default_tasks_dir()) / CATALOGUE_FILE


def _entry(path: Path, index: int, row: Any) -> CatalogueEntry:
    where = f"workflows[{index}]"
    if not isinstance(row, dict):
        raise CatalogueError([f"{path}: {where}: expected a mapping with id, title and labels"])
    labels = {k: v for k, v in row.items() if k not in ("id", "title")}
    try:
        return CatalogueEntry(id=row.get("id"), title=row.get("title"),
                              taxonomy=Taxonomy.model_validate(labels))
    except ValidationError as exc:
        raise CatalogueError(schema_problems(path, exc, prefix=f"{where} "
                                             f"({row.get('id', 'no id')}).")) from None


def load_catalogue(tasks_dir: Path | None = None) -> list[CatalogueEntry]:
    """The catalogue of the suite at ``tasks_dir`` (default: the bundled one), in file order.
    :class:`CatalogueError` names the file and row of every defect."""
    path = catalogue_path(tasks_dir)
    if not path.is_file():
        raise CatalogueError([f"{path}: file not found (the suite's catalogue of workflows)"])
    raw = read_yaml(path)
    rows = raw.get("workflows") if isinstance(raw, dict) else None
    if not isinstance(rows, list):
        raise CatalogueError([f"{path}: (top level): expected 'workflows:' and a list of rows"])
    problems: list[str] = []
    entries: list[CatalogueEntry] = []
    for index, row in enumerate(rows):
        try:
            entries.append(_entry(path, index, row))
        except CatalogueError as exc:
            problems += exc.problems
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        if entry.id in seen:
            problems.append(f"{path}: workflows[{index}].id: '{entry.id}' is listed twice")
        seen.add(entry.id)
    if problems:
        raise CatalogueError(problems)
    return entries


def task_mismatches(task: TaskSpec, entries: Sequence[CatalogueEntry],
                    path: Path) -> list[tuple[str, str]]:
    """``(path inside task.yaml, message)`` for every way ``task`` departs from its catalogue
    row (``path`` is the catalogue file, named in the messages)."""
    entry = next((e for e in entries if e.id == task.id), None)
    if entry is None:
        return [("id", f"'{task.id}' is not in the catalogue {path}; add its row (title and "
                       "labels) or use a catalogue id")]
    out: list[tuple[str, str]] = []
    if task.title != entry.title:
        out.append(("title", f"'{task.title}' differs from the catalogue's '{entry.title}' "
                             f"({path}); use one title in both"))
    for dim in SCALAR_LABELS:
        have, planned = getattr(task.taxonomy, dim), getattr(entry.taxonomy, dim)
        if have != planned:
            out.append((f"taxonomy.{dim}", f"'{have}', but the catalogue plans '{planned}' "
                        f"({path}); the plan keeps the suite at the paper's composition, so "
                        "change both only together"))
    for dim in LIST_DIMENSIONS:
        missing = [x for x in getattr(entry.taxonomy, dim) if x not in getattr(task.taxonomy, dim)]
        if missing:
            out.append((f"taxonomy.{dim}", f"lacks {missing}, which the catalogue plans "
                                           f"({path})"))
    return out


def catalogue_status(tasks: Sequence[TaskSpec], tasks_dir: Path | None = None) -> str:
    """What ``apex-voice tasks list`` prints under the composition: how many catalogue
    workflows the suite has, whether the catalogue (and, once complete, the suite) matches the
    paper's composition, and any task that departs from its row."""
    path = catalogue_path(tasks_dir)
    try:
        entries = load_catalogue(tasks_dir)
    except CatalogueError as exc:
        return "Catalogue: cannot be read:\n  " + "\n  ".join(exc.problems)
    ids = {e.id for e in entries}
    written = [t for t in tasks if t.id in ids]
    lines = [f"Catalogue ({path}): {len(written)} of {len(entries)} workflows written."]
    planned = paper_deviations(entries)
    lines.append(
        f"The catalogue's composition matches the paper's {PAPER_N} workflows exactly."
        if not planned else "The catalogue departs from the paper: " + "; ".join(planned))
    if len(written) == len(entries):
        suite = paper_deviations(tasks)
        lines.append("The suite matches the paper's composition with zero deviation."
                     if not suite else "The suite departs from the paper: " + "; ".join(suite))
    for task in tasks:
        lines += [f"  {task.id}: {where}: {message}"
                  for where, message in task_mismatches(task, entries, path)]
    return "\n".join(lines)


__all__ = [
    "CATALOGUE_FILE",
    "CatalogueEntry",
    "CatalogueError",
    "catalogue_path",
    "catalogue_status",
    "load_catalogue",
    "task_mismatches",
]
