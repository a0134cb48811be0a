"""Run directories under the data directory: listing, safe lookup, peaks and grades."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from grading.gates import RunDirError, RunGrade, grade_run_dir, read_meta
from runtime.campaign import find_run_dirs
from runtime.spec import TaskSpec

PEAKS_PER_SECOND = 50


@dataclass
class RunInfo:
    path: str
    """Relative to the runs directory; the run's address in URLs."""
    meta: dict[str, Any]
    grade: RunGrade | None
    problem: str | None


def resolve_run(runs_dir: Path, rel: str) -> Path | None:
    """The run directory at ``rel`` inside ``runs_dir``, or None (never outside it)."""
    root = runs_dir.resolve()
    target = (root / rel).resolve()
    if target != root and root not in target.parents:
        return None
    return target if (target / "meta.json").is_file() else None


_grade_cache: dict[tuple[str, float, float, int], RunGrade] = {}


def _mtime_ns(path: Path) -> int:
    return path.stat().st_mtime_ns if path.exists() else 0


def grade_cached(run_dir: Path, tasks: dict[str, TaskSpec]) -> RunGrade:
    """The run's grade, recomputed whenever its event log, meta or corrections change (a
    researcher's authorization correction re-grades the run, from any process)."""
    log = run_dir / "events.jsonl"
    key = (str(run_dir), log.stat().st_mtime if log.exists() else 0.0,
           (run_dir / "meta.json").stat().st_mtime, _mtime_ns(run_dir / "corrections.jsonl"))
    if key not in _grade_cache:
        _grade_cache[key] = grade_run_dir(run_dir, tasks)
    return _grade_cache[key]


def outcome_of(grade: RunGrade | None) -> str:
    """``pass``, ``fail``, ``infrastructure`` or ``ungraded``."""
    if grade is None:
        return "ungraded"
    if grade.infrastructure_failure:
        return "infrastructure"
    return "pass" if grade.WS else "fail"


def list_runs(runs_dir: Path, tasks: dict[str, TaskSpec]) -> list[RunInfo]:
    out: list[RunInfo] = []
    if not runs_dir.is_dir():
        return out
    for run_dir in find_run_dirs([runs_dir]):
        rel = str(run_dir.relative_to(runs_dir))
        try:
            meta = read_meta(run_dir)
            grade = grade_cached(run_dir, tasks)
            out.append(RunInfo(rel, meta, grade, None))
        except RunDirError as exc:
            out.append(RunInfo(rel, {}, None, str(exc)))
    return out


def peaks(run_dir: Path) -> dict[str, Any]:
    """Min/max envelope per channel, ``PEAKS_PER_SECOND`` points a second, cached on disk
    next to the trace so long traces open without decoding the audio in the browser."""
    trace = run_dir / "trace.wav"
    cache = run_dir / "peaks.json"
    if cache.is_file() and cache.stat().st_mtime >= trace.stat().st_mtime:
        cached: dict[str, Any] = json.loads(cache.read_text())
        return cached
    info = sf.info(str(trace))
    hop = max(1, info.samplerate // PEAKS_PER_SECOND)
    channels: list[list[float]] = [[] for _ in range(info.channels)]
    with sf.SoundFile(str(trace)) as fh:
        for block in fh.blocks(blocksize=hop * 1000, dtype="int16", always_2d=True):
            n = (len(block) // hop) * hop
            if n == 0:
                continue
            frames = block[:n].reshape(-1, hop, info.channels)
            amp = np.abs(frames.astype(np.int32)).max(axis=1) / 32768.0
            for c in range(info.channels):
                channels[c].extend(np.round(amp[:, c], 3).tolist())
    data = {"duration": info.frames / info.samplerate, "peaks": channels}
    with contextlib.suppress(OSError):  # a read-only run directory still replays
        cache.write_text(json.dumps(data))
    return data
