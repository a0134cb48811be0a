"""Run directories under the data directory: listing, safe lookup, peaks and grades."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from app.security import public_text
from grading.gates import RunDirError, RunGrade, grade_run_dir, read_meta
from runtime.campaign import find_run_dirs
from runtime.spec import TaskSpec

PEAKS_PER_SECOND = 50
RECORD_FILES = ("meta.json", "events.jsonl", "corrections.jsonl")
"""A run's record: a run folder where one of these is a link leaving it is not opened."""


class RunFileError(ValueError):
    """A file of a run folder cannot be served; the message says why and what to do."""


@dataclass
class RunInfo:
    path: str
    """Relative to the runs directory; the run's address in URLs."""
    meta: dict[str, Any]
    grade: RunGrade | None
    problem: str | None


def resolve_run(runs_dir: Path, rel: str) -> Path | None:
    """The run directory at ``rel`` inside ``runs_dir``, or None (never outside it, and never
    one whose record files are links leaving it)."""
    root = runs_dir.resolve()
    target = (root / rel).resolve()
    if target != root and root not in target.parents:
        return None
    if any(leaves(target, name) for name in RECORD_FILES):
        return None
    return target if (target / "meta.json").is_file() else None


def leaves(run_dir: Path, name: str) -> bool:
    """Whether ``run_dir/name`` is (or is under) a link that leads out of the run folder."""
    path = run_dir / name
    if not (path.is_symlink() or path.exists()):
        return False
    root, target = run_dir.resolve(), path.resolve()
    return target != root and root not in target.parents


def run_file(run_dir: Path, name: str) -> Path | None:
    """``run_dir/name`` when it is a regular file inside the run folder; None when there is
    none; :class:`RunFileError` when it is a link leading out of the folder (never followed,
    whether to read or to write) or not a file."""
    path = run_dir / name
    if leaves(run_dir, name):
        raise RunFileError(f"This run's {name} is a link to a file outside its run folder; "
                           "links are not followed. Replace the link with the file itself.")
    if not path.exists():
        return None
    if not path.is_file():
        raise RunFileError(f"This run's {name} is not a regular file.")
    return path


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
        linked = [name for name in RECORD_FILES if leaves(run_dir, name)]
        if linked:
            out.append(RunInfo(rel, {}, None, f"{', '.join(linked)}: a link to a file outside "
                               "the run folder; not read (replace the link with the file)"))
            continue
        try:
            meta = read_meta(run_dir)
            grade = grade_cached(run_dir, tasks)
            out.append(RunInfo(rel, meta, grade, None))
        except RunDirError as exc:
            out.append(RunInfo(rel, {}, None, public_text(str(exc), runs_dir)))
    return out


def trace_problem(exc: Exception) -> RunFileError:
    reason = getattr(exc, "error_string", "") or type(exc).__name__
    return RunFileError(f"This run's trace.wav cannot be read as audio ({reason}); the replay "
                        "shows the events without it. Replace trace.wav with the run's "
                        "recording, or remove it.")


def check_trace(trace: Path) -> None:
    """:class:`RunFileError` when ``trace`` has no readable audio header."""
    try:
        info = sf.info(str(trace))
    except (RuntimeError, ValueError, TypeError) as exc:  # soundfile's errors are RuntimeError
        raise trace_problem(exc) from None
    if info.samplerate <= 0 or info.channels <= 0:
        raise trace_problem(ValueError("no audio format"))


def peaks(run_dir: Path) -> dict[str, Any]:
    """Min/max envelope per channel, ``PEAKS_PER_SECOND`` points a second, cached on disk
    next to the trace so long traces open without decoding the audio in the browser. A
    ``peaks.json`` that is a link is neither read nor written (the envelope is then computed
    for each request); an unreadable trace raises :class:`RunFileError`."""
    trace = run_file(run_dir, "trace.wav")
    if trace is None:
        raise RunFileError("This run has no stereo trace.")
    cache = run_dir / "peaks.json"
    cacheable = not cache.is_symlink()
    if cacheable and cache.is_file() and cache.stat().st_mtime >= trace.stat().st_mtime:
        try:
            cached: dict[str, Any] = json.loads(cache.read_text())
            return cached
        except (OSError, ValueError):
            pass  # a damaged cache is computed again
    check_trace(trace)
    try:
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
    except (RuntimeError, ValueError, TypeError) as exc:
        raise trace_problem(exc) from None
    data = {"duration": info.frames / info.samplerate, "peaks": channels}
    if cacheable:
        _write_cache(run_dir, cache, json.dumps(data))
    return data


def _write_cache(run_dir: Path, cache: Path, text: str) -> None:
    """Write ``cache`` by renaming a fresh file over it: a link put in its place meanwhile is
    replaced, never written through. A read-only run folder still replays."""
    tmp = run_dir / f".{cache.name}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, cache)
    except OSError:
        tmp.unlink(missing_ok=True)
