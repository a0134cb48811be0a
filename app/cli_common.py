"""What every ``apex-voice`` command module shares: the error exit and the ``--tasks`` value."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click


def fail(message: str, code: int = 2) -> NoReturn:
    """``error: message`` on standard error, exit ``code`` (2: bad input)."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def task_folders_arg(value: Path | None, default_subset: str | None = None) -> list[Path]:
    """A ``--tasks`` value (a folder, or a subset of the bundled tasks by name) as task
    folders; None: ``default_subset``, else every bundled task (runtime/suite/subsets.py)."""
    from runtime.suite.subsets import SubsetError, task_folders

    try:
        return task_folders(value, default_subset)
    except SubsetError as exc:
        fail(f"--tasks: {exc}")
