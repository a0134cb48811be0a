"""Campaigns on a Ray cluster: ``apex-voice run … --executor ray`` (issue #18, docs/scale.md).

Each (task, agent, repeat) unit is one Ray task. The worker runs it exactly as the local executor
does (``runtime.session.campaign.run_one``), but into a directory of its own temporary folder, and
returns
the run's files as bytes; the driver writes them into ``OUT/<task>/r<k>/`` atomically (a staging
folder under ``OUT/.incomplete/.ray-staging/``, every file fsync'ed, ``meta.json`` last, then one
rename), so workers need no shared file system and a run directory in OUT is either absent or
complete. The task's folder (task.yaml, speech bank, scripts) travels to the workers through Ray's
object store, once per task.

Failures: a worker or node that dies is Ray's business: the task is retried (``max_retries``,
system failures only; ``retry_exceptions`` stays off), so a lost worker never becomes a run, let
alone an agent failure. A unit still lost after its retries leaves nothing in OUT and is listed in
``CampaignSummary.lost``: the next invocation runs it (resume). What the agent does wrong inside a
run is a normal, complete run with its grade. An exception raised by our own code in the worker
(a bad configuration) stops the campaign with that exception, as with the local executor.

Scheduling: ``num_cpus`` per unit from the agent kind and the clock (a run on the virtual clock
and the baseline's speech models use a core; a realtime session with a provider mostly waits on
the network), and at most ``cap`` units of one provider in flight (``--provider-cap KIND=N``;
the API providers default to ``DEFAULT_PROVIDER_CAP``): the driver keeps that many Ray tasks
submitted and submits the next as one finishes (``ray.wait``), Ray places them on the cluster.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import socket
import tempfile
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from runtime.agents.registry import PROVIDER_MODULES
from runtime.agents.scripted import load_script
from runtime.core.events import ClockMode, EndReason
from runtime.core.rundir import META, RunDir
from runtime.core.spec import TaskSpec, load_task
from runtime.session.campaign import (
    AgentFactory,
    CampaignSummary,
    move_aside,
    parse_agent_spec,
    plan_campaign,
    run_one,
)
from runtime.session.orchestrator import RunResult

EXECUTORS = ("local", "ray")
API_PROVIDERS = tuple(sorted(PROVIDER_MODULES))
AGENT_KINDS = ("scripted", "baseline", *API_PROVIDERS)
DEFAULT_PROVIDER_CAP = 4
"""Sessions of one API provider in flight at once unless ``--provider-cap`` says otherwise (the
local executor's default concurrency): a cluster of a hundred cores must not open a hundred
sessions against one API key."""
CPU_HEAVY = 1.0
IO_BOUND = 0.25
STAGING = Path(".incomplete") / ".ray-staging"
"""Under OUT: where the driver assembles a run before renaming it into place. Under
``.incomplete`` so that nothing that lists run directories (grade, report, the web app) sees a
run being written; emptied at the start of each ``--executor ray`` invocation."""
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


class ExecutorConfigError(Exception):
    """A bad ``--executor``/``--ray-address``/``--provider-cap`` value; the message names the flag
    and the value."""


# --------------------------------------------------------------------------- options

def parse_provider_caps(values: list[str] | tuple[str, ...]) -> dict[str, int]:
    """``["openai-realtime=8", …]`` → ``{"openai-realtime": 8}``."""
    caps: dict[str, int] = {}
    for raw in values:
        kind, eq, num = raw.partition("=")
        kind = kind.strip()
        if not eq or not kind:
            raise ExecutorConfigError(f"--provider-cap {raw!r}: expected KIND=N, e.g. "
                                      "openai-realtime=8")
        if kind not in AGENT_KINDS:
            raise ExecutorConfigError(f"--provider-cap {raw!r}: unknown agent kind {kind!r} "
                                      f"(known: {', '.join(AGENT_KINDS)})")
        try:
            n = int(num)
        except ValueError:
            n = 0
        if n < 1:
            raise ExecutorConfigError(f"--provider-cap {raw!r}: N must be a whole number ≥ 1")
        caps[kind] = n
    return caps


_HOST_PORT = re.compile(r"^(?:ray://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)"
                        r":(\d{1,5})$")


def check_ray_address(address: str) -> tuple[str, int] | None:
    """``HOST:PORT`` (the head's GCS port, ``ray start --head --port``) or ``ray://HOST:PORT``
    (Ray Client) → (host, port); ``auto`` → None (the cluster this machine belongs to)."""
    if address == "auto":
        return None
    m = _HOST_PORT.match(address.strip())
    if m is None or not 0 < int(m.group(2)) < 65536:
        raise ExecutorConfigError(
            f"--ray-address {address!r}: expected HOST:PORT (the head node's GCS address, e.g. "
            "10.0.0.5:6379), ray://HOST:PORT or auto")
    return m.group(1).strip("[]"), int(m.group(2))


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """ray.init keeps retrying an address nobody answers on for minutes: fail at once. (Ray
    Client addresses, ``ray://``, and ``auto`` are left to ray.init.)"""
    host_port = check_ray_address(address)
    if host_port is None or address.startswith("ray://"):
        return
    try:
        with socket.create_connection(host_port, timeout=timeout_s):
            pass
    except OSError as exc:
        raise ExecutorConfigError(
            f"--ray-address {address!r}: cannot reach a Ray head there ({exc.strerror or exc}); "
            "is `ray start --head` running?") from None


def agent_kind(agent_spec: str) -> str:
    return agent_spec.partition(":")[0]


def cpus_per_unit(agent_spec: str, clock: ClockMode) -> float:
    """The ``num_cpus`` hint of one unit: the baseline runs VAD, ASR and TTS; any run on the
    virtual clock runs flat out; a scripted or provider session on the realtime clock mostly
    waits (the media clock, the network)."""
    if agent_kind(agent_spec) == "baseline" or clock == "virtual":
        return CPU_HEAVY
    return IO_BOUND


def in_flight_limit(agent_spec: str, caps: Mapping[str, int],
                    concurrency: int | None) -> int | None:
    """Units submitted at once: the agent kind's cap (API providers default to
    DEFAULT_PROVIDER_CAP), then ``--concurrency`` if given; None = as many as Ray will place."""
    kind = agent_kind(agent_spec)
    limits = [n for n in (caps.get(kind), concurrency) if n is not None]
    if kind in API_PROVIDERS and kind not in caps:
        limits.append(DEFAULT_PROVIDER_CAP)
    return min(limits) if limits else None


def forwarded_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The ``APEX_*`` settings a worker runs with (strict protocol, baseline settings, cache
    folder…); keys and tokens are not sent through the cluster: a worker reads them from its
    own environment (docs/scale.md)."""
    return {k: v for k, v in environ.items()
            if k.startswith("APEX_") and not any(w in k for w in SECRET_WORDS)}


# --------------------------------------------------------------------------- the worker side

@dataclass(frozen=True)
class TaskBundle:
    """A task folder's files, shipped to workers through the object store."""

    task_id: str
    digest: str
    files: dict[str, bytes]


@dataclass(frozen=True)
class UnitResult:
    files: dict[str, bytes]
    end_reason: str
    failure_class: str
    media_ms: int
    wall_s: float
    pid: int
    node_id: str


def bundle_task(task: TaskSpec) -> TaskBundle:
    files: dict[str, bytes] = {}
    for path in sorted(task.folder.rglob("*")):
        parts = path.relative_to(task.folder).parts
        if path.is_file() and "__pycache__" not in parts:
            files["/".join(parts)] = path.read_bytes()
    digest = hashlib.sha256()
    for name, data in files.items():
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return TaskBundle(task.id, digest.hexdigest()[:16], files)


def bundle_script(agent_spec: str) -> tuple[str, bytes] | None:
    """For ``scripted:PATH.yaml``: the script file (name, bytes), which lives on the driver."""
    kind, _, arg = agent_spec.partition(":")
    if kind == "scripted" and arg.endswith((".yaml", ".yml")):
        load_script(Path(arg))  # the local executor's error for a missing or broken script
        return Path(arg).name, Path(arg).read_bytes()
    return None


def _worker_root() -> Path:
    return Path(tempfile.gettempdir()) / f"apex-voice-ray-{os.getuid()}"


def _materialize(root: Path, name: str, files: Mapping[str, bytes]) -> Path:
    """``root/name`` holding ``files``, written once (content-addressed names) and atomically."""
    target = root / name
    if target.is_dir():
        return target
    tmp = root / f".{name}.{uuid.uuid4().hex}"
    for rel, data in files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp.rename(target)
    except OSError:  # another worker of this node got there first
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _worker_factory(agent_spec: str, script: tuple[str, bytes] | None) -> AgentFactory:
    if script is None:
        return parse_agent_spec(agent_spec)
    name, data = script
    digest = hashlib.sha256(data).hexdigest()[:16]
    folder = _materialize(_worker_root() / "scripts", digest, {name: data})
    local = parse_agent_spec(f"scripted:{folder / name}")
    return AgentFactory(agent_spec, local.make)  # meta.json names the driver's spec


def run_unit(bundle: TaskBundle, agent_spec: str, script: tuple[str, bytes] | None,
             env: Mapping[str, str], seed: int, repeat: int, clock: ClockMode) -> UnitResult:
    """One (task, repeat) on a worker: the run directory is built in a temporary folder and
    returned as bytes (the worker's copy is removed)."""
    import asyncio

    import ray

    os.environ.update(env)
    root = _worker_root()
    folder = _materialize(root / "tasks" / bundle.digest, bundle.task_id, bundle.files)
    task = load_task(folder)
    factory = _worker_factory(agent_spec, script)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="run-", dir=root) as tmp:
        run_dir = Path(tmp) / task.id / f"r{repeat}"
        result = asyncio.run(run_one(task, factory, run_dir, seed=seed, repeat=repeat,
                                     clock=clock))
        files = {p.relative_to(run_dir).as_posix(): p.read_bytes()
                 for p in sorted(run_dir.rglob("*")) if p.is_file()}
    return UnitResult(files, result.end_reason, result.failure_class, result.media_ms,
                      result.wall_s, os.getpid(), ray.get_runtime_context().get_node_id())


# --------------------------------------------------------------------------- the driver side

def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_run_atomically(out: Path, run_dir: Path, files: Mapping[str, bytes]) -> bool:
    """Write a finished run into ``run_dir`` (under OUT) all at once: staged, fsync'ed,
    ``meta.json`` last, renamed. False (nothing written) if a complete run is already there."""
    staging = out / STAGING / f"{run_dir.parent.name}.{run_dir.name}.{uuid.uuid4().hex[:12]}"
    staging.mkdir(parents=True)
    try:
        for rel in sorted(files, key=lambda r: r == META):  # meta.json last
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("wb") as fh:
                fh.write(files[rel])
                fh.flush()
                os.fsync(fh.fileno())
        _fsync_dir(staging)
        if RunDir(run_dir).is_complete():
            return False
        if run_dir.exists():  # a half-written local run appeared meanwhile: kept aside
            move_aside(out, run_dir, run_dir.parent.name, int(run_dir.name[1:]))
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(run_dir)
        _fsync_dir(run_dir.parent)
        return True
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def connect(address: str | None) -> bool:
    """Connect to the cluster at ``address`` (or RAY_ADDRESS), or start a private one on this
    machine. True if this call initialized Ray (so the caller shuts it down)."""
    import ray

    if ray.is_initialized():
        return False
    if address:
        check_reachable(address)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    private: dict[str, object] = {}
    if not address and not os.environ.get("RAY_ADDRESS"):
        # A private cluster on this machine listens on loopback only, without a dashboard.
        private = {"_node_ip_address": "127.0.0.1", "include_dashboard": False}
    try:
        ray.init(address=address or None, log_to_driver=False, logging_level=logging.WARNING,
                 **private)  # type: ignore[arg-type]
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ExecutorConfigError(
            f"--ray-address {address or os.environ.get('RAY_ADDRESS') or '(local)'!r}: "
            f"{first}") from None
    return True


def run_campaign_ray(
    tasks: list[TaskSpec], agent_spec: str, out: Path, *, repeats: int = 1, seed: int = 0,
    clock: ClockMode = "virtual", concurrency: int | None = None,
    progress: Callable[[str], None] | None = None,
    on_start: Callable[[str], None] | None = None,
    address: str | None = None, provider_caps: Mapping[str, int] | None = None,
    max_retries: int = 3, num_cpus: float | None = None,
) -> CampaignSummary:
    """``run_campaign`` on Ray: same OUT layout, same files, same ``progress`` lines (one per
    finished run, starting ``ID rK:``); ``on_start`` gets ``ID rK`` when the unit is
    submitted. Units lost to infrastructure after ``max_retries`` are in ``summary.lost``."""
    parse_agent_spec(agent_spec)  # a bad spec fails here, before any cluster is touched
    caps = dict(provider_caps or {})
    script = bundle_script(agent_spec)
    import ray

    shutil.rmtree(out / STAGING, ignore_errors=True)  # leftovers of a driver that was killed
    summary, todo = plan_campaign(tasks, agent_spec, out, repeats=repeats, seed=seed,
                                  clock=clock)
    if not todo:
        return summary
    started_here = connect(address)
    try:
        remote = ray.remote(run_unit).options(
            num_cpus=num_cpus if num_cpus is not None else cpus_per_unit(agent_spec, clock),
            max_retries=max_retries, retry_exceptions=False,
        )
        launch = _launcher(remote, agent_spec, script, forwarded_env(os.environ), seed, clock)
        pending = deque(todo)
        in_flight: dict[Any, tuple[TaskSpec, int, Path]] = {}
        limit = in_flight_limit(agent_spec, caps, concurrency)
        while pending or in_flight:
            _submit_pending(pending, in_flight, limit, launch, on_start)
            ready, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in ready:
                _collect_unit(ref, in_flight, out, summary, progress, max_retries)
    finally:
        if started_here:
            ray.shutdown()
        for empty in (out / STAGING, out / STAGING.parent):  # leave no empty folders behind
            with contextlib.suppress(OSError):
                empty.rmdir()
    return summary


def _launcher(remote: Any, agent_spec: str, script: tuple[str, bytes] | None,
              env: dict[str, str], seed: int, clock: ClockMode,
              ) -> Callable[[TaskSpec, int], Any]:
    """Submit one unit as a Ray task; each task's bundle goes to the object store once."""
    import ray

    bundles: dict[str, Any] = {}

    def launch(task: TaskSpec, rep: int) -> Any:
        if task.id not in bundles:
            bundles[task.id] = ray.put(bundle_task(task))
        return remote.remote(bundles[task.id], agent_spec, script, env, seed, rep, clock)

    return launch


def _submit_pending(pending: deque[tuple[TaskSpec, int, Path]],
                    in_flight: dict[Any, tuple[TaskSpec, int, Path]], limit: int | None,
                    launch: Callable[[TaskSpec, int], Any],
                    on_start: Callable[[str], None] | None) -> None:
    """Submit pending units until ``limit`` are in flight (all of them without a limit)."""
    while pending and (limit is None or len(in_flight) < limit):
        task, rep, rd = pending.popleft()
        ref = launch(task, rep)
        in_flight[ref] = (task, rep, rd)
        if on_start is not None:
            on_start(f"{task.id} r{rep}")


def _collect_unit(ref: Any, in_flight: dict[Any, tuple[TaskSpec, int, Path]], out: Path,
                  summary: CampaignSummary, progress: Callable[[str], None] | None,
                  max_retries: int) -> None:
    """Take a finished unit out of flight: write its run into OUT, or record it as lost or
    already complete; our own code's exception in the worker stops the campaign."""
    import ray

    task, rep, rd = in_flight.pop(ref)
    label = f"{task.id} r{rep}"
    try:
        unit: UnitResult = ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        # Our own code raised in the worker (a bad configuration…): stop, as the
        # local executor does, with the original exception.
        for other in in_flight:
            with contextlib.suppress(Exception):
                ray.cancel(other, force=True)
        cause = getattr(exc, "cause", None)
        if isinstance(cause, Exception):
            raise cause from None
        raise
    except ray.exceptions.RayError as exc:
        summary.lost.append(label)
        if progress is not None:
            progress(f"{label}: lost to infrastructure ({type(exc).__name__}) "
                     f"after {max_retries} retries; not written, runs again on "
                     "the next invocation")
        return
    if not write_run_atomically(out, rd, unit.files):
        summary.skipped.append(rd)
        if progress is not None:
            progress(f"{label}: already complete in OUT (written by another "
                     "invocation meanwhile); kept, this result dropped")
        return
    summary.ran.append(RunResult(rd, cast(EndReason, unit.end_reason),
                                 unit.failure_class, unit.media_ms, unit.wall_s))
    if progress is not None:
        progress(
            f"{label}: {unit.end_reason} after {unit.media_ms / 1000:.1f} s of "
            f"media ({unit.wall_s:.2f} s wall)"
        )
