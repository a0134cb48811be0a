"""Run directories under the data directory: listing, safe lookup, peaks and grades."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from app.security import public_text
from grading.gates import RunGrade, grade_run_dir
from runtime.core.rundir import RECORD_FILES, RunDir, RunDirError, scan_runs
from runtime.core.spec import TaskSpec

PEAKS_PER_SECOND = 50


class RunFileError(ValueError):
    """A file of a run folder cannot be served; the message says why and what to do."""


def run_file(run_dir: Path, name: str) -> Path | None:
    """``run_dir/name`` when it is a regular file inside the run folder; None when there is
    none; :class:`RunFileError` when it is a link leading out of the folder (never followed,
    whether to read or to write) or not a file."""
    path = run_dir / name
    if RunDir(run_dir).leaves(name):
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
           RunDir(run_dir).meta_path.stat().st_mtime, _mtime_ns(run_dir / "corrections.jsonl"))
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


# --------------------------------------------------------------------------- the run list

SORT_KEYS = ("date", "duration", "task", "agent", "outcome", "run")
"""What the run list sorts by (``?sort=``); ``date`` (newest first) unless told."""
OUTCOMES = ("pass", "fail", "infrastructure", "ungraded")
HEAD_BYTES = 64 * 1024
"""How much of an event log is read for the run's start time (its first line)."""


@dataclass(frozen=True)
class RunRow:
    """What the run list shows of one run: read once per change of its files (meta.json,
    events.jsonl, corrections.jsonl), never on every request."""

    path: str
    task_id: str = ""
    agent: str = ""
    seed: str = ""
    study: str = ""
    started: float | None = None
    """Unix seconds: the ``t_wall`` of the log's ``session.start``, else meta.json's mtime."""
    duration_s: float | None = None
    """Media seconds (``media_ms`` in meta.json)."""
    status: str = ""
    """meta.json's ``status``: ``complete``, ``running``, ``incomplete``."""
    grade: RunGrade | None = None
    problem: str | None = None
    campaign: str | None = None
    """The campaign folder (holding campaign.json) the run is in, relative to the runs dir."""

    @property
    def outcome(self) -> str:
        return outcome_of(self.grade)

    @property
    def date_iso(self) -> str:
        if self.started is None:
            return ""
        return datetime.fromtimestamp(self.started, UTC).isoformat(timespec="seconds")

    @property
    def date_text(self) -> str:
        """``YYYY-MM-DD HH:MM`` in UTC, or empty."""
        return self.date_iso[:16].replace("T", " ")

    @property
    def duration_text(self) -> str:
        """``m:ss`` of media, or empty."""
        if self.duration_s is None:
            return ""
        seconds = round(self.duration_s)
        return f"{seconds // 60}:{seconds % 60:02d}"

    def text(self) -> str:
        """What a search matches (lower case)."""
        end = self.grade.end_reason if self.grade else ""
        return " ".join([self.path, self.task_id, self.agent, self.study, self.outcome,
                         self.status, end or "", self.campaign or ""]).lower()


@dataclass(frozen=True)
class CampaignState:
    """Whether a campaign folder holds every run its campaign.json asks for."""

    path: str
    expected: int | None
    """Tasks × repeats in campaign.json, or None when it lists no tasks."""
    complete: int
    aside: int
    """Runs kept aside under ``.incomplete/`` (cut off, then run again or not)."""

    @property
    def incomplete(self) -> bool:
        return self.aside > 0 or (self.expected is not None and self.complete < self.expected)

    def why(self) -> str:
        parts = []
        if self.expected is not None:
            parts.append(f"{self.complete} of {self.expected} runs complete")
        else:
            parts.append(f"{self.complete} runs complete")
        if self.aside:
            parts.append(f"{self.aside} cut-off run{'s' if self.aside != 1 else ''} kept aside "
                         "in .incomplete/")
        return "; ".join(parts)


_row_cache: dict[str, tuple[tuple[int, ...], RunRow]] = {}
_campaign_cache: dict[str, tuple[int, dict[str, Any]]] = {}


def _stamp(run_dir: Path) -> tuple[int, ...]:
    return tuple(_mtime_ns(run_dir / name) for name in RECORD_FILES)


def _started(run_dir: Path) -> float | None:
    """The wall-clock start of the run: the first event's ``t_wall`` (only the log's first
    line is read), else meta.json's modification time."""
    log = run_dir / "events.jsonl"
    try:
        with log.open("rb") as fh:
            first = json.loads(fh.readline(HEAD_BYTES) or b"{}")
        t = float(first.get("t_wall") or 0.0) if isinstance(first, dict) else 0.0
        if t > 0:
            return t
    except (OSError, ValueError, TypeError):
        pass
    try:
        return RunDir(run_dir).meta_path.stat().st_mtime
    except OSError:
        return None


def _read_row(runs_dir: Path, run_dir: Path, rel: str, tasks: dict[str, TaskSpec],
              campaign: str | None) -> RunRow:
    linked = RunDir(run_dir).linked_record_files()
    if linked:
        return RunRow(rel, problem=f"{', '.join(linked)}: a link to a file outside the run "
                      "folder; not read (replace the link with the file)", campaign=campaign)
    stamp = _stamp(run_dir)
    key = str(run_dir)
    cached = _row_cache.get(key)
    if cached is not None and cached[0] == stamp and cached[1].campaign == campaign:
        return cached[1]
    try:
        meta = RunDir(run_dir).read_meta()
        grade = grade_cached(run_dir, tasks)
    except RunDirError as exc:
        row = RunRow(rel, problem=public_text(str(exc), runs_dir), campaign=campaign,
                     started=_started(run_dir))
    else:
        row = RunRow(
            rel, task_id=meta.task_id, agent=meta.agent, seed=str(meta.seed),
            study=meta.study or "", started=_started(run_dir),
            duration_s=meta.media_ms / 1000 if meta.media_ms is not None else None,
            status=meta.status, grade=grade, campaign=campaign)
    _row_cache[key] = (stamp, row)
    return row


def _campaign_json(folder: Path) -> dict[str, Any]:
    path = folder / "campaign.json"
    stamp = _mtime_ns(path)
    cached = _campaign_cache.get(str(path))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    data = data if isinstance(data, dict) else {}
    _campaign_cache[str(path)] = (stamp, data)
    return data


def _expected_runs(spec: dict[str, Any]) -> int | None:
    tasks, repeats = spec.get("tasks"), spec.get("repeats", 1)
    if not isinstance(tasks, list) or not isinstance(repeats, int) or repeats < 1:
        return None
    return len(set(map(str, tasks))) * repeats


def run_index(runs_dir: Path, tasks: dict[str, TaskSpec]
              ) -> tuple[list[RunRow], dict[str, CampaignState]]:
    """Every run under ``runs_dir`` as a :class:`RunRow` (re-read only when its files changed)
    and every campaign folder's completeness, by relative path."""
    if not runs_dir.is_dir():
        return [], {}
    run_dirs, campaign_dirs = scan_runs(runs_dir)
    by_dir = {c: str(c.relative_to(runs_dir)) for c in campaign_dirs}
    rows = []
    for run_dir in run_dirs:
        campaign = next((by_dir[p] for p in run_dir.parents if p in by_dir), None)
        rows.append(_read_row(runs_dir, run_dir, str(run_dir.relative_to(runs_dir)), tasks,
                              campaign))
    states = {}
    for folder, rel in by_dir.items():
        aside_dir = folder / ".incomplete"
        try:
            aside = sum(1 for _ in aside_dir.iterdir()) if aside_dir.is_dir() else 0
        except OSError:
            aside = 0
        complete = sum(1 for r in rows if r.campaign == rel and r.status == "complete")
        states[rel] = CampaignState(rel, _expected_runs(_campaign_json(folder)), complete,
                                    aside)
    return rows, states


def sort_rows(rows: list[RunRow], key: str, descending: bool) -> list[RunRow]:
    """Rows sorted on ``key`` (one of :data:`SORT_KEYS`); runs without a value (no date, no
    duration) come last either way; ties in run path order."""
    def value(r: RunRow) -> Any:
        return {"date": r.started, "duration": r.duration_s, "task": r.task_id or None,
                "agent": r.agent or None, "outcome": r.outcome, "run": r.path}[key]

    known = sorted((r for r in rows if value(r) is not None), key=lambda r: r.path)
    known.sort(key=value, reverse=descending)
    return known + sorted((r for r in rows if value(r) is None), key=lambda r: r.path)


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
