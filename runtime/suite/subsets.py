"""Named subsets of the task suite: ``tasks/subsets/<name>.txt``, one task id a line (``#``
starts a comment).

``audit24`` is the paper's 24-task audit subset: Study A and Study B draw from it unless told
otherwise. Wherever a command takes ``--tasks``, a subset's name stands for its task folders
(``apex-voice run --tasks audit24 …``); a folder is still a folder.
"""

from __future__ import annotations

from pathlib import Path

from runtime.core.spec import default_tasks_dir

SUBSETS = "subsets"
AUDIT = "audit24"
"""The audit subset's name: the default of both human studies."""


class SubsetError(ValueError):
    """A subset name or file that cannot be used; the message names the file, line or name
    and what is accepted."""


def subsets_dir(tasks_dir: Path | None = None) -> Path:
    return (tasks_dir or default_tasks_dir()) / SUBSETS


def subset_names(tasks_dir: Path | None = None) -> list[str]:
    """The subsets of the suite at ``tasks_dir`` (default: the bundled one)."""
    folder = subsets_dir(tasks_dir)
    return sorted(p.stem for p in folder.glob("*.txt")) if folder.is_dir() else []


def subset_ids(name: str, tasks_dir: Path | None = None) -> list[str]:
    """The task ids of subset ``name``, in file order. :class:`SubsetError` for an unknown
    name, a repeated id, or an id with no task folder (file and line named)."""
    root = tasks_dir or default_tasks_dir()
    path = subsets_dir(root) / f"{name}.txt"
    if not path.is_file():
        known = ", ".join(subset_names(root)) or "none"
        raise SubsetError(f"no task folder or subset named '{name}' (subsets in "
                          f"{subsets_dir(root)}: {known})")
    ids: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        task_id = line.split("#", 1)[0].strip()
        if not task_id:
            continue
        where = f"{path}:{number}"
        if task_id in ids:
            raise SubsetError(f"{where}: '{task_id}' is listed twice")
        if not (root / task_id / "task.yaml").is_file():
            raise SubsetError(f"{where}: no task '{task_id}' ({root / task_id}/task.yaml "
                              "does not exist); remove the line or add the task")
        ids.append(task_id)
    if not ids:
        raise SubsetError(f"{path}: lists no task")
    return ids


def task_folders(value: Path | str | None, default_subset: str | None = None) -> list[Path]:
    """What a ``--tasks`` value names: a folder or ``task.yaml`` as it is; otherwise a subset
    of the bundled suite by name, as its task folders. None: ``default_subset`` (or the whole
    bundled suite)."""
    if value is None:
        if default_subset is None:
            return [default_tasks_dir()]
        value = default_subset
    path = Path(value)
    if path.exists() or len(path.parts) != 1:
        return [path]
    root = default_tasks_dir()
    return [root / task_id for task_id in subset_ids(str(value), root)]
