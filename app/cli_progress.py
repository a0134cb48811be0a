"""Progress display for the long CLI commands (run, grade, report, bank build): issue #17.

Drawn with ``rich`` on standard error only, so what a command prints on standard output (its
``--json`` in particular) is the same with or without it. Shown when standard error is a
terminal; ``--no-progress`` or ``APEX_VOICE_PROGRESS=0`` turns it off, ``APEX_VOICE_PROGRESS=1``
forces it on (a log file, a test).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PROGRESS_ENV = "APEX_VOICE_PROGRESS"


def progress_enabled(no_progress: bool = False) -> bool:
    if no_progress:
        return False
    forced = os.environ.get(PROGRESS_ENV, "").strip()
    if forced in {"0", "1"}:
        return forced == "1"
    return sys.stderr.isatty()


class Bar:
    """One progress bar; without a display every method does nothing."""

    def __init__(self, progress: Any = None, task: Any = None) -> None:
        self._progress = progress
        self._task = task

    def advance(self, steps: int = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, steps)

    def update(self, *, completed: int | None = None, total: int | None = None,
               current: str | None = None) -> None:
        if self._progress is None:
            return
        fields: dict[str, Any] = {}
        if completed is not None:
            fields["completed"] = completed
        if total is not None:
            fields["total"] = total
        if current is not None:
            fields["current"] = current
        self._progress.update(self._task, **fields)


@contextmanager
def progress_bar(description: str, unit: str, total: int | None,
                 enabled: bool) -> Iterator[Bar]:
    """A bar ``description  ━━━━  done/total unit  elapsed  ETA  current`` on standard error."""
    if not enabled:
        yield Bar()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(file=sys.stderr, force_terminal=True)
    progress = Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit, markup=False),
        TimeElapsedColumn(),
        TextColumn("ETA", markup=False),
        TimeRemainingColumn(),
        TextColumn("{task.fields[current]}", markup=False),
        console=console,
        refresh_per_second=4,
        # Lines a command prints to standard output go above the bar only when standard output
        # is the terminal too; redirected, they stay on standard output untouched.
        redirect_stdout=sys.stdout.isatty(),
        redirect_stderr=False,
    )
    with progress:
        yield Bar(progress, progress.add_task(description, total=total, current=""))
