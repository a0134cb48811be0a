"""Study B planning commands: ``plan-b`` (make the counterbalanced plan) and ``check-b``
(validate an edited plan CSV). See ``docs/study_b_plan.md``.

The commands are defined here and attached to the ``study`` group by ``app.cli``:
``plan_b_command`` and ``check_b_command``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from app.cli_common import fail as _fail
from app.cli_common import task_folders_arg
from runtime.core.spec import TaskLoadError, load_tasks
from study_protocols.study_b import (
    PlanError,
    StudyBPlan,
    check_plan,
    format_balance,
    format_plan,
    make_plan,
    select_anchor_tasks,
    validate_systems,
)

__all__ = ["check_b_command", "plan_b_command"]




def _split(value: str | None, option: str) -> list[str] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",")]
    if any(not v for v in items):
        _fail(f"{option} {value!r} has an empty entry; separate the values with single commas")
    return items


def _task_ids(tasks_dir: Path | None) -> list[str]:
    from runtime.suite.subsets import AUDIT

    folders = task_folders_arg(tasks_dir, AUDIT)
    try:
        tasks = load_tasks(folders)
    except TaskLoadError as exc:
        _fail("\n".join(exc.problems) + "\n(run `apex-voice tasks validate` for every problem)")
    if not tasks:
        _fail(f"no task.yaml found under {', '.join(map(str, folders))}")
    return [t.id for t in tasks]


_systems_option = click.option(
    "--systems", required=True,
    help="Comma-separated agent specs, e.g. scripted:oracle,baseline,openai-realtime.",
)
_tasks_option = click.option(
    "--tasks", "tasks_dir", type=click.Path(path_type=Path, file_okay=False),
    default=None, help="Folder of task specifications or a subset's name (default: the audit "
    "subset, audit24).",
)
_anchors_option = click.option(
    "--anchors", default=6, show_default=True, type=click.IntRange(min=0),
    help="Number of anchor tasks, drawn with the seed.",
)
_anchor_tasks_option = click.option(
    "--anchor-tasks", default=None,
    help="Comma-separated anchor task ids (instead of drawing --anchors of them).",
)


@click.command("plan-b")
@_systems_option
@_tasks_option
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0))
@_anchors_option
@_anchor_tasks_option
@click.option("--sessions-per-participant", "per", type=int, default=None,
              help="Sessions per participant, a multiple of the number of systems "
                   "(default: one per system).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.option("--csv", "csv_file", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="Also write the plan as CSV (edit it, then run check-b).")
def plan_b_command(systems: str, tasks_dir: Path | None, seed: int, anchors: int,
                   anchor_tasks: str | None, per: int | None, as_json: bool,
                   csv_file: Path | None) -> None:
    """Make the counterbalanced Study B plan (appendix F.3): every (task, system) cell once,
    every anchor cell a second time by another participant, Williams-square session order."""
    if as_json and csv_file is not None:
        _fail("use either --json or --csv FILE, not both")
    try:
        plan = make_plan(
            _task_ids(tasks_dir), _split(systems, "--systems") or [], seed=seed,
            n_anchor=anchors, anchor_task_ids=_split(anchor_tasks, "--anchor-tasks"),
            sessions_per_participant=per,
        )
    except PlanError as exc:
        _fail(str(exc))
    if as_json:
        click.echo(json.dumps(plan.to_json(), indent=2))
        return
    if csv_file is not None:
        with csv_file.open("w", encoding="utf-8", newline="") as fh:
            plan.to_csv(fh)
    click.echo(format_plan(plan))
    click.echo("")
    click.echo(format_balance(plan))
    if csv_file is not None:
        click.echo(f"wrote {csv_file}")


@click.command("check-b")
@click.option("--plan", "plan_file", required=True,
              type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="The plan CSV written by plan-b (possibly edited).")
@_systems_option
@_tasks_option
@click.option("--seed", required=True, type=click.IntRange(min=0),
              help="The seed the plan was made with (it chose the anchor tasks).")
@_anchors_option
@_anchor_tasks_option
def check_b_command(plan_file: Path, systems: str, tasks_dir: Path | None, seed: int,
                    anchors: int, anchor_tasks: str | None) -> None:
    """Check an edited Study B plan CSV; print each violated constraint, exit 1 if any."""
    task_ids = _task_ids(tasks_dir)
    try:
        specs = validate_systems(_split(systems, "--systems") or [])
        anchor_ids = _split(anchor_tasks, "--anchor-tasks")
        if anchor_ids is None:
            anchor_ids = list(select_anchor_tasks(task_ids, seed=seed, n_anchor=anchors))
        else:
            unknown = [t for t in anchor_ids if t not in task_ids]
            if unknown:
                raise PlanError(f"anchor task {unknown[0]!r} is not among the audit tasks")
        with plan_file.open(encoding="utf-8", newline="") as fh:
            plan = StudyBPlan.from_csv(fh, seed=seed, task_ids=task_ids, systems=specs,
                                       anchor_task_ids=anchor_ids)
    except PlanError as exc:
        _fail(f"{plan_file}: {exc}")
    problems = check_plan(plan)
    for problem in problems:
        click.echo(f"{plan_file}: {problem}")
    if problems:
        click.echo(f"{len(problems)} problem(s) found", err=True)
        sys.exit(1)
    click.echo(f"{plan_file}: plan OK ({len(plan.participants())} participants, "
               f"{len(plan.sessions)} sessions)")
    click.echo(format_balance(plan))
