"""``apex-voice study …``: Study A / Study B commands (DESIGN §4).

``study agreement`` prints Table 9 of the paper (appendix F.2) from a Study A ratings CSV; the
statistics live in :mod:`study_protocols.agreement` and ``docs/study_a_agreement.md`` explains
them. Bad input exits with code 2 and one line per problem, never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import click

from app.cli_common import fail as _fail


@click.group()
def study() -> None:
    """Study A (annotator ratings) and Study B (live-human audit) protocols."""


def _archetypes(task_ids: Iterable[str], tasks_dir: Path | None) -> dict[str, str] | None:
    """task id → archetype for the rated tasks, or ``None`` to skip the per-archetype table.

    With ``--tasks`` the given folder must load; rated tasks missing from it are reported on
    stderr (and grouped as "(unmapped)"). Without it the bundled tasks are used when every rated
    task is among them; otherwise the table is skipped silently.
    """
    from runtime.core.spec import TaskLoadError, default_tasks_dir, load_tasks

    wanted = set(task_ids)
    if tasks_dir is None:
        # Bundled tasks live in tasks/<task id>/ (as `find_task` assumes): load only those rated.
        folders = [default_tasks_dir() / t for t in sorted(wanted)]
        if not wanted or not all((f / "task.yaml").is_file() for f in folders):
            return None
        try:
            tasks = load_tasks(folders)
        except TaskLoadError:
            return None
        known = {t.id: str(t.taxonomy.archetype) for t in tasks}
        return known if wanted <= set(known) else None
    if not tasks_dir.exists():
        _fail(f"--tasks {tasks_dir}: no such folder; give a folder of task.yaml files")
    try:
        tasks = load_tasks([tasks_dir])
    except TaskLoadError as exc:
        _fail("\n".join(exc.problems) + "\n(run `apex-voice tasks validate` for every problem)")
    if not tasks:
        _fail(f"--tasks {tasks_dir}: no task.yaml found")
    known = {t.id: str(t.taxonomy.archetype) for t in tasks}
    missing = sorted(wanted - set(known))
    if missing:
        click.echo(
            f"note: {len(missing)} rated task(s) not found under {tasks_dir}, shown as "
            f"'(unmapped)' per archetype: {', '.join(missing)}",
            err=True,
        )
    return known


@study.command("agreement")
@click.option("--ratings", "ratings_path", required=True,
              type=click.Path(path_type=Path, dir_okay=True),
              help="Study A ratings CSV: item_id,task_id,annotator_id,fidelity,naturalness,"
                   "leakage (optional calibration column).")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
@click.option("--tasks", "tasks_dir", type=click.Path(path_type=Path), default=None,
              help="Task folder for the per-archetype table (default: the bundled tasks, "
                   "when every rated task is among them).")
@click.option("--seed", default=0, show_default=True, type=int, help="Bootstrap seed.")
@click.option("--resamples", "n_resamples", default=2000, show_default=True,
              type=click.IntRange(min=1), help="Task-level bootstrap resamples.")
@click.option("--csv-out", "csv_out", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="Also write the Table 9 summary (one row per dimension).")
def agreement(ratings_path: Path, as_json: bool, tasks_dir: Path | None, seed: int,
              n_resamples: int, csv_out: Path | None) -> None:
    """Table 9: mean fidelity and naturalness, leakage rate (task-level bootstrap CIs),
    Krippendorff's alpha and Fleiss' kappa across annotators."""
    from study_protocols.agreement import (
        RatingsError,
        agreement_report,
        format_report,
        read_ratings_csv,
        report_csv,
    )

    try:
        ratings = read_ratings_csv(ratings_path)
    except RatingsError as exc:
        _fail(str(exc))
    archetypes = _archetypes(
        (r.task_id for r in ratings if not r.calibration), tasks_dir
    )
    report = agreement_report(ratings, archetypes=archetypes, seed=seed,
                              n_resamples=n_resamples)
    if csv_out is not None:
        try:
            with csv_out.open("w", encoding="utf-8", newline="") as fh:
                report_csv(report, fh)
        except OSError as exc:
            _fail(f"--csv-out {csv_out}: cannot write ({exc.strerror or exc})")
        click.echo(f"wrote {csv_out}", err=True)
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        click.echo(format_report(report))


def _attach() -> None:
    """The planning commands live next to their protocols' CLI helpers."""
    from app.cli_study_a import sample_a_command
    from app.cli_study_b import check_b_command, plan_b_command

    for command in (sample_a_command, plan_b_command, check_b_command):
        study.add_command(command)


_attach()
