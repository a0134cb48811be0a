"""Campaigns: run (task × repeat) pairs concurrently, resumably, into a campaign directory.

Layout: ``OUT/<task_id>/r<k>/`` holds one run (``events.jsonl``, ``trace.wav``, ``meta.json``).
A pair whose ``meta.json`` says ``complete`` is skipped on the next invocation; a half-written
one (a crash) is moved aside to ``OUT/.incomplete/``, repaired there (closed event log, readable
WAV, ``incomplete`` with an infrastructure reason; runtime/core/rundir.py) and run again, never
deleted. ``run_campaign`` runs the pairs in this process (the local executor, the default);
runtime/session/ray_executor.py runs them on a Ray cluster into the same layout.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from runtime.agents.base import AgentAdapter
from runtime.agents.registry import AGENT_SPEC_HELP, PROVIDER_MODULES, available
from runtime.agents.scripted import ScriptedAgent, load_script
from runtime.core.events import ClockMode
from runtime.core.rundir import RunDir, recover_run
from runtime.core.spec import TaskSpec
from runtime.session.orchestrator import Orchestrator, RunResult
from runtime.speechbank.bank import BankPlayer, EspeakEngine, SpeechCache
from runtime.user.simulator import FrozenSimulator

INTERRUPTED = ("the campaign was interrupted before this run finished (kept aside when the "
               "campaign ran again)")


class AgentSpecError(Exception):
    """An agent spec could not be understood; the message lists what is accepted."""


def cache_dir() -> Path:
    return Path(os.environ.get("APEX_VOICE_CACHE_DIR", Path.home() / ".cache" / "apex-voice"))


@dataclass(frozen=True)
class AgentFactory:
    spec: str
    make: Callable[[TaskSpec], AgentAdapter]


def task_script_path(task: TaskSpec, name: str) -> Path:
    """Where ``scripted:NAME`` looks for the task's script."""
    return task.folder / "scripts" / f"{name}.yaml"


def per_task_script_name(spec: str) -> str | None:
    """NAME for a ``scripted:NAME`` spec (a script per task), else None (a path or no script)."""
    kind, _, arg = spec.partition(":")
    if kind != "scripted" or not arg or arg.endswith((".yaml", ".yml")):
        return None
    return arg


def missing_scripts(tasks: list[TaskSpec], spec: str) -> list[tuple[TaskSpec, Path]]:
    """Tasks without the script a ``scripted:NAME`` spec needs, each with the path looked for."""
    name = per_task_script_name(spec)
    if name is None:
        return []
    return [(t, task_script_path(t, name)) for t in tasks
            if not task_script_path(t, name).is_file()]


def parse_agent_spec(spec: str) -> AgentFactory:
    kind, _, arg = spec.partition(":")
    if kind == "scripted":
        if not arg:
            raise AgentSpecError(f"agent spec '{spec}' needs a script: {AGENT_SPEC_HELP}")
        speech = SpeechCache(EspeakEngine(), cache_dir() / "agent-speech")

        def make(task: TaskSpec) -> AgentAdapter:
            path = Path(arg) if arg.endswith((".yaml", ".yml")) else task_script_path(task, arg)
            return ScriptedAgent(load_script(path), speech, label=f"scripted:{path.stem}")

        return AgentFactory(spec, make)
    if kind == "baseline":
        # Imported here: the baseline pulls in the speech stack (VAD, ASR, TTS selection).
        from runtime.agents.baseline import BaselineConfigError, make_factory

        try:
            return AgentFactory(spec, make_factory(arg or None, os.environ, cache_dir()))
        except BaselineConfigError as exc:
            raise AgentSpecError(f"agent spec '{spec}': {exc}") from None
    if available(kind):
        module = importlib.import_module(PROVIDER_MODULES[kind])
        model = arg or None

        def make_provider(task: TaskSpec) -> AgentAdapter:
            adapter: AgentAdapter = module.make_adapter(model, os.environ)
            return adapter

        return AgentFactory(spec, make_provider)
    if kind in PROVIDER_MODULES:
        raise AgentSpecError(
            f"agent '{kind}' is not available in this version yet; use {AGENT_SPEC_HELP}"
        )
    raise AgentSpecError(f"unknown agent spec '{spec}'; accepted: {AGENT_SPEC_HELP}")


def run_dir_for(out: Path, task_id: str, repeat: int) -> Path:
    return out / task_id / f"r{repeat}"


async def run_one(
    task: TaskSpec, factory: AgentFactory, run_dir: Path, *, seed: int, repeat: int,
    clock: ClockMode = "virtual", wall_clock_in_log: bool = True,
) -> RunResult:
    agent = factory.make(task)
    user = FrozenSimulator(task, seed, BankPlayer(task))
    orch = Orchestrator(
        task, agent, user, run_dir, agent_spec=factory.spec, seed=seed, clock=clock,
        wall_clock_in_log=wall_clock_in_log,
        meta_extra={"run_id": f"{task.id}.r{repeat}", "repeat": repeat},
    )
    return await orch.run()


@dataclass
class CampaignSummary:
    ran: list[RunResult]
    skipped: list[Path]
    moved_aside: list[Path]
    lost: list[str] = field(default_factory=list)
    """``ID rK`` of runs the Ray executor lost to infrastructure (a worker or node gone) after
    its retries: nothing of them is in OUT, so the next invocation runs them (resume)."""


def plan_campaign(
    tasks: list[TaskSpec], agent_spec: str, out: Path, *, repeats: int, seed: int,
    clock: ClockMode,
) -> tuple[CampaignSummary, list[tuple[TaskSpec, int, Path]]]:
    """Write ``campaign.json``, skip the complete (task, repeat) pairs, move half-written ones
    aside (repaired in ``OUT/.incomplete/``) and return what is left to run. Shared by the
    local and the Ray executor (runtime/session/ray_executor.py)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "campaign.json").write_text(json.dumps({
        "agent": agent_spec, "seed": seed, "repeats": repeats, "clock": clock,
        "tasks": [t.id for t in tasks],
    }, indent=2) + "\n", encoding="utf-8")
    summary = CampaignSummary([], [], [])
    todo: list[tuple[TaskSpec, int, Path]] = []
    for task in tasks:
        for rep in range(repeats):
            rd = run_dir_for(out, task.id, rep)
            if RunDir(rd).is_complete():
                summary.skipped.append(rd)
                continue
            if rd.exists():
                summary.moved_aside.append(move_aside(out, rd, task.id, rep))
            todo.append((task, rep, rd))
    return summary, todo


def move_aside(out: Path, rd: Path, task_id: str, rep: int) -> Path:
    """Move a run directory that is not complete to ``OUT/.incomplete/`` and repair it there."""
    aside = out / ".incomplete" / f"{task_id}.r{rep}.{int(time.time() * 1000)}"
    aside.parent.mkdir(parents=True, exist_ok=True)
    rd.rename(aside)
    # Kept readable: closed log, repaired WAV, ``incomplete`` (runtime/core/rundir.py).
    with contextlib.suppress(OSError):
        recover_run(aside, INTERRUPTED)
    return aside


async def run_campaign(
    tasks: list[TaskSpec], agent_spec: str, out: Path, *, repeats: int = 1, seed: int = 0,
    clock: ClockMode = "virtual", concurrency: int = 4,
    progress: Callable[[str], None] | None = None,
    on_start: Callable[[str], None] | None = None,
) -> CampaignSummary:
    """``progress`` gets one line per finished run, starting ``ID rK:``; ``on_start`` gets
    ``ID rK`` as that run starts."""
    factory = parse_agent_spec(agent_spec)
    summary, todo = plan_campaign(tasks, agent_spec, out, repeats=repeats, seed=seed,
                                  clock=clock)
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(task: TaskSpec, rep: int, rd: Path) -> None:
        async with gate:
            if on_start is not None:
                on_start(f"{task.id} r{rep}")
            result = await run_one(task, factory, rd, seed=seed, repeat=rep, clock=clock)
            summary.ran.append(result)
            if progress is not None:
                progress(
                    f"{task.id} r{rep}: {result.end_reason} after "
                    f"{result.media_ms / 1000:.1f} s of media ({result.wall_s:.2f} s wall)"
                )

    await asyncio.gather(*(one(t, r, d) for t, r, d in todo))
    return summary
