"""The task suite as the web app serves it: loaded once, with load problems kept for display."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from runtime.core.spec import TaskLoadError, TaskSpec, find_task_files, load_task


@dataclass
class Catalogue:
    tasks: dict[str, TaskSpec] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, tasks_dir: Path) -> Catalogue:
        cat = cls()
        for path in find_task_files([tasks_dir]):
            try:
                task = load_task(path)
            except TaskLoadError as exc:
                cat.problems.extend(exc.problems)
                continue
            cat.tasks[task.id] = task
        return cat
