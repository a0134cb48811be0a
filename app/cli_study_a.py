"""``apex-voice study sample-a``: draw the Study A items (paper appendix F.2) and show them.

The command is attached to the ``study`` group by :mod:`app.cli`; it is not registered here.
Unsatisfied constraints are reported (✗ lines and notes) with exit code 0; a request that cannot
be sampled at all (bad task files, ``--n-tasks`` larger than the pool) exits with code 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from app.cli_common import fail as _fail
from app.cli_common import task_folders_arg
from runtime.core.spec import TaskLoadError, load_tasks
from study_protocols.study_a import SamplingError, StudyASample, sample_study_a


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip()
            for r in rows]


def format_sample(sample: StudyASample, archetypes: dict[str, str]) -> str:
    """The items table, the constraint checks with ✓/✗ and the notes, as plain text."""
    rows: list[tuple[str, ...]] = [("task", "archetype", "role", "plan", "intent", "text")]
    rows += [(i.task_id, archetypes.get(i.task_id, "?"), i.role, i.plan_id, i.intent, i.text)
             for i in sample.items]
    lines = _table(rows)
    summary = f"{len(sample.items)} items from {len(sample.task_ids)} tasks (seed {sample.seed})"
    lines += ["", summary, "", "constraints:"]
    lines += [f"  {'✓' if c.ok else '✗'} {c.name}: wanted {c.wanted}, got {c.got}"
              for c in sample.checks]
    if sample.notes:
        lines += ["", "notes:", *(f"  - {n}" for n in sample.notes)]
    return "\n".join(lines)


@click.command("sample-a")
@click.option("--tasks", "tasks_dir", type=click.Path(path_type=Path, file_okay=False),
              help="A folder of tasks or a subset's name (default: the audit subset, audit24).")
@click.option("--n-tasks", type=int, default=24, show_default=True, help="Tasks to draw.")
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the sample as JSON.")
def sample_a_command(tasks_dir: Path | None, n_tasks: int, seed: int, as_json: bool) -> None:
    """Draw the Study A tasks and user plans (three per task) and check the strata."""
    from runtime.suite.subsets import AUDIT

    folders = task_folders_arg(tasks_dir, AUDIT)
    try:
        tasks = load_tasks(folders)
    except TaskLoadError as exc:
        _fail("\n".join(exc.problems) + "\n(run `apex-voice tasks validate` for every problem)")
    if not tasks:
        _fail(f"no task.yaml found under {', '.join(map(str, folders))}")
    try:
        sample = sample_study_a(tasks, n_tasks=n_tasks, seed=seed)
    except SamplingError as exc:
        _fail(str(exc))
    if as_json:
        click.echo(json.dumps(sample.to_json(), indent=2, ensure_ascii=False))
    else:
        click.echo(format_sample(sample, {t.id: t.taxonomy.archetype for t in tasks}))
