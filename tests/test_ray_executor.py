"""Campaigns on Ray (issue #18, point 1; runtime/session/ray_executor.py, docs/scale.md).

One local Ray cluster on loopback (2 CPUs, no dashboard, no usage stats, its files in a temporary
folder) is shared by the tests of this module. The 24 oracles run with ``--executor ray`` and
grade exactly as with the local executor, with the same files apart from wall-clock fields; a
worker killed mid-campaign is retried by Ray, never recorded as an agent failure, and every run
is written exactly once; a driver killed mid-campaign leaves only complete runs in OUT, and the
next invocation finishes the rest.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main
from runtime.core.rundir import RunDir
from runtime.core.spec import default_tasks_dir, find_task
from runtime.session.ray_executor import (
    DEFAULT_PROVIDER_CAP,
    cpus_per_unit,
    forwarded_env,
    in_flight_limit,
    run_campaign_ray,
)
from runtime.suite.subsets import AUDIT

ROOT = Path(__file__).resolve().parent.parent
RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    # The node's address is the loopback one (Ray otherwise picks the machine's outward IP).
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    # A private test cluster: no token written into the home folder.
    "RAY_AUTH_MODE": "disabled",
}
SOME_TASKS = ["apexv1_001", "apexv1_045", "apexv1_070", "apexv1_106"]


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """A local Ray cluster on 127.0.0.1 for this module; yields its GCS address."""
    old = {k: os.environ.get(k) for k in RAY_ENV}
    os.environ.update(RAY_ENV)
    import ray

    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             _temp_dir=temp, object_store_memory=150 * 1024 * 1024, log_to_driver=False)
    try:
        nodes = ray.nodes()
        assert [n["NodeManagerAddress"] for n in nodes] == ["127.0.0.1"]
        address = ray.get_runtime_context().gcs_address
        assert address.startswith("127.0.0.1:")
        yield address
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _without_wall_clock(path: Path) -> bytes | str:
    """A run file's content with the wall-clock fields (``t_wall``, ``wall_s``) left out."""
    if path.name == "meta.json":
        meta = json.loads(path.read_text(encoding="utf-8"))
        meta.pop("wall_s")
        return json.dumps(meta, sort_keys=True)
    if path.name == "events.jsonl":
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            row.pop("t_wall")
            rows.append(json.dumps(row))
        return "\n".join(rows)
    return path.read_bytes()


def _files(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())


def _grades(out: Path) -> dict[str, dict[str, object]]:
    result = CliRunner().invoke(main, ["grade", str(out), "--json", "--no-progress"])
    assert result.exit_code == 0, result.output
    return {row["run_id"]: row for row in json.loads(result.stdout)}


def _run_dirs(out: Path) -> list[Path]:
    """Run directories in OUT (not the staging or kept-aside ones under ``.incomplete``)."""
    return sorted(m.parent for m in out.rglob("meta.json") if ".incomplete" not in m.parts)


def test_the_24_audit_oracles_on_ray_grade_and_write_as_with_the_local_executor(
    ray_address: str, tmp_path: Path,
) -> None:
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    runner = CliRunner()
    common = ["run", "--tasks", AUDIT, "--agent", "scripted:oracle", "--no-progress"]
    t0 = time.monotonic()
    done_local = runner.invoke(main, [*common, "--out", str(local)])
    t1 = time.monotonic()
    done_ray = runner.invoke(main, [*common, "--executor", "ray", "--out", str(on_ray)])
    t2 = time.monotonic()
    assert done_local.exit_code == 0, done_local.output
    assert done_ray.exit_code == 0, done_ray.output
    assert "24 run(s) done, 0 already complete" in done_ray.stdout
    # Progress as runs finish: one line per run, as the local executor prints them.
    finished = [ln for ln in done_ray.stdout.splitlines() if " r0: " in ln]
    assert len(finished) == 24
    print(f"local {t1 - t0:.1f} s, ray {t2 - t1:.1f} s")

    grades_local, grades_ray = _grades(local), _grades(on_ray)
    assert len(grades_ray) == 24
    assert grades_ray == grades_local
    assert all(all(g["gates"].values()) for g in grades_ray.values())  # type: ignore[attr-defined]

    # The same files, byte for byte apart from the wall-clock fields; nothing else in OUT.
    assert _files(on_ray) == _files(local)
    for rel in _files(local):
        assert _without_wall_clock(on_ray / rel) == _without_wall_clock(local / rel), rel
    assert (on_ray / "campaign.json").read_bytes() == (local / "campaign.json").read_bytes()
    assert not (on_ray / ".incomplete").exists()

    # Resume: nothing left to run.
    again = runner.invoke(main, [*common, "--executor", "ray", "--out", str(on_ray)])
    assert again.exit_code == 0, again.output
    assert "0 run(s) done, 24 already complete" in again.stdout


def _ray_unit_workers() -> list[int]:
    """Pids of this test's Ray workers busy with a unit (Ray titles them ``ray::run_unit``);
    only grandchildren of this process (the raylet it started is their parent)."""
    me = os.getpid()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            title = (proc / "cmdline").read_bytes()
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            grandparent = int((Path("/proc") / str(parent) / "stat").read_text()
                              .rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if title.startswith(b"ray::run_unit") and grandparent == me:
            found.append(int(proc.name))
    return found


def test_a_worker_killed_mid_campaign_is_retried_and_every_run_is_written_once(
    ray_address: str, tmp_path: Path,
) -> None:
    out = tmp_path / "camp"
    tasks = [find_task(t) for t in SOME_TASKS]
    killed: list[int] = []
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        if killed:
            return
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            busy = _ray_unit_workers()
            if busy:
                os.kill(busy[0], signal.SIGKILL)
                killed.append(busy[0])
                return
            time.sleep(0.01)
        raise AssertionError("no Ray worker was running a unit")

    summary = run_campaign_ray(tasks, "scripted:oracle", out, repeats=2, progress=progress)
    assert killed and len(lines) == 8
    assert not Path(f"/proc/{killed[0]}").exists() or b"run_unit" not in Path(
        f"/proc/{killed[0]}/cmdline").read_bytes()
    assert summary.lost == []
    units = sorted((r.run_dir.parent.name, r.run_dir.name) for r in summary.ran)
    assert units == sorted((t, f"r{k}") for t in SOME_TASKS for k in range(2))  # each once
    assert [d.relative_to(out) for d in _run_dirs(out)] == [
        Path(t) / f"r{k}" for t in SOME_TASKS for k in range(2)]
    assert not (out / ".incomplete").exists()  # no staging or half-written run left
    for d in _run_dirs(out):
        meta = json.loads((d / "meta.json").read_text())
        # The lost worker was an infrastructure retry, not a failed or infrastructure run.
        assert (meta["status"], meta["failure_class"]) == ("complete", "none"), d
    grades = _grades(out)
    assert len(grades) == 8 and all(all(g["gates"].values())  # type: ignore[attr-defined]
                                     for g in grades.values())

    again = run_campaign_ray(tasks, "scripted:oracle", out, repeats=2)
    assert (again.ran, len(again.skipped), again.lost) == ([], 8, [])


DRIVER = """
import sys
from app.cli import main
sys.argv = ["apex-voice", *sys.argv[1:]]
main()
"""


def test_a_driver_killed_mid_campaign_resumes_with_no_duplicate_or_lost_run(
    ray_address: str, tmp_path: Path,
) -> None:
    out = tmp_path / "camp"
    ids = ["apexv1_001", "apexv1_010", "apexv1_011", "apexv1_015", "apexv1_022", "apexv1_030",
           "apexv1_032", "apexv1_038"]
    tasks_dir = tmp_path / "tasks"
    for i in ids:
        shutil.copytree(default_tasks_dir() / i, tasks_dir / i)
    args = ["run", "--tasks", str(tasks_dir), "--agent", "scripted:oracle", "--executor", "ray",
            "--ray-address", ray_address, "--no-progress", "--out", str(out)]
    child = subprocess.Popen([sys.executable, "-c", DRIVER, *args], cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while len([d for d in _run_dirs(out) if RunDir(d).is_complete()]) < 2:
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    written = _run_dirs(out)
    assert 2 <= len(written) < len(ids)
    assert all(RunDir(d).is_complete() for d in written)  # written whole or not at all

    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert (f"{len(ids) - len(written)} run(s) done, {len(written)} already complete"
            in result.stdout)
    assert [d.relative_to(out) for d in _run_dirs(out)] == [Path(i) / "r0" for i in ids]
    assert not (out / ".incomplete").exists()
    assert all(RunDir(d).is_complete() for d in _run_dirs(out))


def test_a_script_file_on_the_driver_travels_to_the_workers(
    ray_address: str, tmp_path: Path,
) -> None:
    """``scripted:PATH.yaml``: the file exists only on the driver; the run is the local one."""
    script = tmp_path / "driver-only" / "my_oracle.yaml"
    script.parent.mkdir()
    shutil.copy(default_tasks_dir() / "apexv1_070" / "scripts" / "oracle.yaml", script)
    args = ["run", "--task", "apexv1_070", "--agent", f"scripted:{script}", "--no-progress"]
    runner = CliRunner()
    for out, extra in ((tmp_path / "local", []), (tmp_path / "ray", ["--executor", "ray"])):
        result = runner.invoke(main, [*args, *extra, "--out", str(out)])
        assert result.exit_code == 0, result.output
    run_local, run_ray = tmp_path / "local/apexv1_070/r0", tmp_path / "ray/apexv1_070/r0"
    assert json.loads((run_ray / "meta.json").read_text())["agent"] == f"scripted:{script}"
    assert _files(run_ray) == _files(run_local) == [
        Path("events.jsonl"), Path("meta.json"), Path("trace.wav")]
    for rel in _files(run_local):
        assert _without_wall_clock(run_ray / rel) == _without_wall_clock(run_local / rel), rel


def test_a_provider_cap_bounds_the_runs_in_flight(ray_address: str, tmp_path: Path) -> None:
    events: list[str] = []
    summary = run_campaign_ray(
        [find_task(t) for t in SOME_TASKS[:3]], "scripted:oracle", tmp_path / "camp",
        provider_caps={"scripted": 1},
        on_start=lambda label: events.append("+"), progress=lambda line: events.append("-"),
    )
    assert len(summary.ran) == 3
    in_flight = [events[: i + 1].count("+") - events[: i + 1].count("-")
                 for i in range(len(events))]
    assert max(in_flight) == 1, events


def test_scheduling_hints_and_caps() -> None:
    assert cpus_per_unit("baseline", "realtime") == 1.0
    assert cpus_per_unit("scripted:oracle", "virtual") == 1.0  # the virtual clock runs flat out
    assert cpus_per_unit("openai-realtime", "realtime") == 0.25
    assert in_flight_limit("openai-realtime", {}, None) == DEFAULT_PROVIDER_CAP
    assert in_flight_limit("openai-realtime:gpt-x", {"openai-realtime": 8}, None) == 8
    assert in_flight_limit("openai-realtime", {"openai-realtime": 8}, 3) == 3
    assert in_flight_limit("scripted:oracle", {}, None) is None
    assert in_flight_limit("baseline", {"grok": 2}, None) is None
    env = forwarded_env({"APEX_STRICT_PROTOCOL": "1", "APEX_BASELINE_LLM_KEY": "s",
                         "OPENAI_API_KEY": "s", "APEX_VOICE_CACHE_DIR": "/c"})
    assert env == {"APEX_STRICT_PROTOCOL": "1", "APEX_VOICE_CACHE_DIR": "/c"}


@pytest.mark.parametrize(("extra", "message"), [
    (["--executor", "dask"], "--executor 'dask': use local or ray"),
    (["--executor", "ray", "--ray-address", "head-node"],
     "--ray-address 'head-node': expected HOST:PORT"),
    (["--executor", "ray", "--ray-address", "10.0.0.5:99999"],
     "--ray-address '10.0.0.5:99999': expected HOST:PORT"),
    (["--executor", "ray", "--ray-address", "127.0.0.1:1"],
     "--ray-address '127.0.0.1:1': cannot reach a Ray head there"),
    (["--executor", "ray", "--provider-cap", "openai-realtime"],
     "--provider-cap 'openai-realtime': expected KIND=N"),
    (["--executor", "ray", "--provider-cap", "openai=8"],
     "--provider-cap 'openai=8': unknown agent kind 'openai'"),
    (["--executor", "ray", "--provider-cap", "grok=0"],
     "--provider-cap 'grok=0': N must be a whole number ≥ 1"),
    (["--provider-cap", "grok=2"], "--ray-address, --provider-cap, --ray-max-retries and "
                                   "--ray-num-cpus need --executor ray"),
    (["--ray-max-retries", "5"], "--ray-address, --provider-cap, --ray-max-retries and "
                                 "--ray-num-cpus need --executor ray"),
])
def test_bad_executor_options_get_one_clear_line(
    extra: list[str], message: str, tmp_path: Path,
) -> None:
    result = CliRunner().invoke(main, ["run", "--task", "apexv1_001", "--agent",
                                       "scripted:oracle", "--out", str(tmp_path / "o"), *extra])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), result.stderr
    assert not (tmp_path / "o").exists()
