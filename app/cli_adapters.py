"""``apex-voice adapters …``: tools for the provider adapters (docs/adapters.md).

``adapters record`` runs one real session of a task (the frozen simulator against a provider,
as one repeat of ``apex-voice run``) through a loopback recording proxy and writes its wire,
both directions, to a fixture (:mod:`runtime.agents.wire_record`; format in
:mod:`runtime.agents.wire_format`). Bad input exits with code 2 and one line, never a traceback.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

import click

from app.cli_common import fail as _fail


@click.group()
def adapters() -> None:
    """Provider adapters: record real sessions as replayable wire fixtures."""


@adapters.command("record")
@click.option("--agent", "agent_spec", required=True,
              help="A provider spec: openai-realtime[:MODEL], grok[:MODEL], stepfun[:MODEL], "
                   "gpt-live[:MODEL] or gemini-live[:MODEL]. Its key comes from the "
                   "environment, as for `apex-voice run`.")
@click.option("--task", "task_id", required=True, help="The shipped task to run once.")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Fixture file to write (default ./<kind>-<task>.jsonl). Copy it into "
                   "tests/fixtures/wire/ to have the test suite replay it.")
@click.option("--seed", default=0, show_default=True, type=int, help="Simulator seed.")
@click.option("--run-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Keep the recorded run (events.jsonl, trace, meta.json) here (default: a "
                   "temporary folder, deleted).")
def record(agent_spec: str, task_id: str, out: Path | None, seed: int,
           run_dir: Path | None) -> None:
    """Record one real session of TASK against a provider to a wire fixture.

    The session runs in real time through a proxy on 127.0.0.1 that relays every frame to the
    provider unchanged and logs it with a timestamp. Audio payloads are stored as sha256 and
    byte length only; API keys, auth headers and query strings are never written.
    """
    from runtime.agents.errors import ProviderConfigError
    from runtime.agents.wire_record import RecordError, provider_wire, record_session
    from runtime.core.spec import TaskLoadError, find_task

    try:
        wire = provider_wire(agent_spec, os.environ)
    except ProviderConfigError as exc:
        _fail(str(exc))
    try:
        task = find_task(task_id)
    except TaskLoadError as exc:
        _fail("\n".join(exc.problems))
    target = out or Path(f"{wire.kind}-{task.id}.jsonl")
    click.echo(f"Recording {task.id} against {wire.kind}:{wire.model} at "
               f"{wire.upstream_display} in real time…")
    with tempfile.TemporaryDirectory(prefix="apex-record-") as scratch:
        where = run_dir or Path(scratch) / "run"
        try:
            recording = asyncio.run(record_session(
                task, agent_spec, target, run_dir=where, env=os.environ, seed=seed,
                clock="realtime",
            ))
        except (ProviderConfigError, RecordError) as exc:
            _fail(str(exc))
    header = recording.header
    expect = header.expect
    click.echo(
        f"wrote {target}: {header.frames['client']} client and {header.frames['server']} "
        f"server frames, {len(expect.tool_calls)} tool call(s); the run ended with "
        f"{expect.end_reason}"
    )
    problems = []
    if expect.failure_class != "none":
        problems.append(f"the run ended with {expect.end_reason} ({expect.failure_class})")
    if expect.protocol_unknown:
        problems.append("message types the adapter does not model: "
                        + ", ".join(sorted(set(expect.protocol_unknown))))
    if problems:
        click.echo("warning: " + "; ".join(problems) + ". The fixture records it, but the "
                   "replay test would fail on it until the adapter handles it.", err=True)
        sys.exit(1)
