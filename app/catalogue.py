"""The task suite as the web app serves it: loaded once, with load problems kept for display."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from runtime.core.spec import TaskLoadError, TaskSpec, find_task_files, load_task
from runtime.suite.subsets import AUDIT, SubsetError, subset_ids, subsets_dir


@dataclass
class Catalogue:
    tasks: dict[str, TaskSpec] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    audit: list[str] = field(default_factory=list)
    """The audit subset's task ids (``subsets/audit24.txt`` of the tasks folder; every task
    when the folder has none): what Study A and Study B draw from by default."""

    def audit_tasks(self) -> dict[str, TaskSpec]:
        """The audit subset's tasks that loaded."""
        return {i: self.tasks[i] for i in self.audit if i in self.tasks}

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
        cat.audit = sorted(cat.tasks)
        if (subsets_dir(tasks_dir) / f"{AUDIT}.txt").is_file():
            try:
                cat.audit = subset_ids(AUDIT, tasks_dir)
            except SubsetError as exc:
                cat.problems.append(f"{exc} (the studies draw from every task meanwhile)")
        return cat
