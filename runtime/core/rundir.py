"""The run record: one home for run directories (issue 16).

A run directory holds ``events.jsonl`` (the canonical event log), ``trace.wav`` or
``trace.flac`` (the stereo trace), ``meta.json`` (:class:`RunMeta`) and, once a researcher
corrects a decision, ``corrections.jsonl`` (docs/run-directory.md). This module is the only
reader and writer of ``meta.json`` and the only place that finds, resolves, lists and repairs
run directories; campaigns, the orchestrator, the graders, the run index, the demo and Study B
live calls go through it.

``meta.json`` is versioned (``format``, :data:`RUN_META_FORMAT`). A file written before the
format existed is format 1 and is migrated when read (:func:`migrate_meta`), so runs recorded
by older versions still list, replay and grade; a file from a newer version than this one is
refused with a message saying so.

Crash recovery: whatever wrote a run (a campaign, a live demo, a Study B live call) may be
killed mid-run, leaving ``meta.json`` at ``running``, a WAV header that says 0 bytes of audio
and an event log without ``session.end``. Such a run is repaired so it reads and grades as what
it is, an infrastructure failure, never the agent's:

* the trace's WAV header is set from the audio actually on disk (:func:`repair_wav_header`);
* a ``session.end`` with reason ``infrastructure_error`` (failure class ``infrastructure``)
  and a detail saying what happened is appended to the event log, after every line that was
  there (a line cut by the crash stays, unreadable, on its own line);
* ``meta.json`` says ``status: incomplete``, ``end_reason: infrastructure_error`` and, in
  ``recovered``, why.

A run whose writer is still alive is never touched: the writer holds an exclusive ``flock`` on
its ``events.jsonl`` for as long as it writes (``runtime.core.events.EventLog``), which the kernel
releases when the process dies, however it dies. :func:`recover_runs` sweeps a runs directory
(the web app does it at start-up; ``apex-voice run`` repairs a half-written run when it moves
it aside).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import soundfile as sf
from pydantic import BaseModel, ConfigDict, ValidationError

from runtime.core.events import (
    EVENT_ADAPTER,
    ClockMode,
    EndReason,
    FailureClass,
    SessionEnd,
    read_events,
)

log = logging.getLogger(__name__)

RECOVERED_RUN = "the process writing this run stopped before it finished (recovered at start-up)"

META = "meta.json"
EVENTS = "events.jsonl"
CORRECTIONS = "corrections.jsonl"
TRACES = ("trace.wav", "trace.flac")
RECORD_FILES = (META, EVENTS, CORRECTIONS)
"""A run's record: a run folder where one of these is a link leaving it is not opened."""

RUN_META_FORMAT = 2
"""The version of ``meta.json`` this code writes. 1: no ``format`` key (every run written
before 2026-12-04); 2: ``format`` and ``study`` (the study a run belongs to, for the run
list's filter)."""

RunStatus = Literal["running", "complete", "incomplete", "failed"]
"""``running`` until the end, then ``complete``; ``incomplete`` after crash recovery or an
exception; ``failed`` when a Study B call's harness failed (app/live.py)."""


class RunDirError(Exception):
    """A run directory cannot be read or graded; the message names the file and what is
    wrong."""


class RunMeta(BaseModel):
    """``meta.json``: what a run is (task, agent, seed, clock), how it ended, and where it
    came from (a campaign repeat, a live demo, a Study B call, a robot dry run).
    docs/run-directory.md lists the fields. Keys this version does not know are kept as they
    are (``extra``), so a run annotated by a newer tool loses nothing when rewritten."""

    model_config = ConfigDict(extra="allow", frozen=True)

    format: int = RUN_META_FORMAT
    run_id: str = ""
    task_id: str
    task_version: str = ""
    agent: str = ""
    seed: int = 0
    clock: ClockMode = "virtual"
    sample_rate: int = 24_000
    frame_ms: int = 40
    status: RunStatus = "running"
    repeat: int | None = None
    """A campaign run's repeat index (``OUT/<task>/r<repeat>``)."""
    end_reason: EndReason | None = None
    failure_class: FailureClass | None = None
    media_ms: int | None = None
    wall_s: float | None = None
    recovered: str | None = None
    """Why crash recovery finished this run, when it did."""
    study: str | None = None
    """The study the run belongs to (``Study B #<id>``), for the run list's filter."""
    # A live demo.
    demo: bool = False
    demo_mode: str | None = None
    started_by: str | None = None
    # A live participant: a Study B call or the robot in one's place.
    live: bool = False
    robot: bool = False
    study_b: bool = False
    study_b_id: int | None = None
    participant: str | None = None
    position: int | None = None
    anchor: bool | None = None
    captions: bool | None = None
    on_disconnect: str | None = None

    def ended(self, reason: EndReason, failure: FailureClass, media_ms: int,
              **changes: Any) -> RunMeta:
        """This record, finished: ``complete`` (unless ``changes`` say otherwise) with how
        and when it ended. Validated: a value of the wrong kind is an error here, never a
        record that cannot be read back."""
        return self.changed(**{"status": "complete", "end_reason": reason,
                               "failure_class": failure, "media_ms": media_ms, **changes})

    def changed(self, **changes: Any) -> RunMeta:
        """This record with ``changes``, validated."""
        return RunMeta.model_validate({**self.model_dump(exclude_unset=True), **changes})


def study_b_label(study_id: int) -> str:
    """The ``study`` of a Study B run."""
    return f"Study B #{study_id}"


def migrate_meta(raw: dict[str, Any], run_name: str) -> dict[str, Any]:
    """A ``meta.json`` object of any earlier format, as the current format. Format 1 (no
    ``format`` key) had no ``study``: a Study B call's is derived from ``study_b_id``; a run
    without ``run_id`` is named by its folder."""
    version = raw.get("format", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"format {version!r} is not a meta.json format number")
    if version > RUN_META_FORMAT:
        raise ValueError(f"format {version} is newer than this version reads "
                         f"({RUN_META_FORMAT}); update APEX-Voice Studio to read this run")
    out = dict(raw)
    if version == 1:
        study_id = out.get("study_b_id")
        if out.get("study") is None and isinstance(study_id, int):
            out["study"] = study_b_label(study_id)
        out.setdefault("run_id", run_name)
        out["format"] = 2
    return out


def _field_errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['msg']}"
                     for e in exc.errors())


class RunDir:
    """One run directory: its files, and its ``meta.json`` read and written atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    @property
    def meta_path(self) -> Path:
        return self.path / META

    def trace_path(self) -> Path | None:
        """The stereo trace (WAV as recorded, or FLAC as archived), or None."""
        return next((self.path / n for n in TRACES if (self.path / n).is_file()), None)

    def exists(self) -> bool:
        """A run is here: its ``meta.json`` is a file."""
        return self.meta_path.is_file()

    def read_meta(self) -> RunMeta:
        """The run's record, migrated to the current format. :class:`RunDirError` names the
        file and the field when it is missing, not JSON, or not a run record."""
        path = self.meta_path
        if not path.is_file():
            raise RunDirError(f"{self.path}: no {META}; is this a run directory?")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RunDirError(f"{path}: not valid JSON ({exc})") from None
        except OSError as exc:
            raise RunDirError(f"{path}: cannot be read ({exc.strerror})") from None
        if not isinstance(raw, dict):
            raise RunDirError(f"{path}: not a JSON object")
        try:
            return RunMeta.model_validate(migrate_meta(raw, self.path.name))
        except ValueError as exc:
            detail = _field_errors(exc) if isinstance(exc, ValidationError) else str(exc)
            raise RunDirError(f"{path}: {detail}") from None

    def read_meta_or_none(self) -> RunMeta | None:
        """The record, or None when there is none or it cannot be read (crash recovery)."""
        try:
            return self.read_meta()
        except RunDirError:
            return None

    def write_meta(self, meta: RunMeta) -> None:
        """Replace ``meta.json`` atomically (a reader sees the old record or the new one)."""
        # What was set, not every default: a campaign run's record names no demo or study.
        data = {"format": meta.format, **meta.model_dump(mode="json", exclude_unset=True)}
        tmp = self.path / f"{META}.tmp"
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(self.meta_path)

    def update_meta(self, **changes: Any) -> RunMeta:
        """Read, change and write back the record; the new record."""
        meta = self.read_meta().changed(**changes)
        self.write_meta(meta)
        return meta

    def is_complete(self) -> bool:
        """The run's record says it completed (an unreadable record: it did not)."""
        meta = self.read_meta_or_none()
        return meta is not None and meta.status == "complete"

    def leaves(self, name: str) -> bool:
        """Whether ``name`` is (or is under) a link that leads out of the run folder."""
        path = self.path / name
        if not (path.is_symlink() or path.exists()):
            return False
        root, target = self.path.resolve(), path.resolve()
        return target != root and root not in target.parents

    def linked_record_files(self) -> list[str]:
        """The record files that are links leaving the folder (never opened)."""
        return [name for name in RECORD_FILES if self.leaves(name)]


def resolve_run(runs_dir: Path, rel: str) -> Path | None:
    """The run directory at ``rel`` inside ``runs_dir``, or None (never outside it, and never
    one whose record files are links leaving it)."""
    root = runs_dir.resolve()
    target = (root / rel).resolve()
    if target != root and root not in target.parents:
        return None
    run = RunDir(target)
    if run.linked_record_files():
        return None
    return target if run.exists() else None


def find_run_dirs(paths: list[Path]) -> list[Path]:
    """Run directories (folders holding ``meta.json``) at or under the given paths; nothing
    kept aside under ``.incomplete`` counts."""
    found: set[Path] = set()
    for p in paths:
        if (p / META).is_file():
            found.add(p)
        elif p.is_dir():
            found.update(m.parent for m in p.rglob(META) if ".incomplete" not in m.parts)
    return sorted(found)


def scan_runs(runs_dir: Path) -> tuple[list[Path], list[Path]]:
    """Run folders (holding ``meta.json``) and campaign folders (holding ``campaign.json``)
    under ``runs_dir``, one walk of the tree; nothing under ``.incomplete/`` counts as a run."""
    run_dirs: list[Path] = []
    campaigns: list[Path] = []
    for root, dirs, files in os.walk(runs_dir):
        dirs[:] = sorted(d for d in dirs if d != ".incomplete")
        here = Path(root)
        if META in files:
            run_dirs.append(here)
        if "campaign.json" in files:
            campaigns.append(here)
    return sorted(run_dirs), campaigns


def repair_wav_header(path: Path) -> bool:
    """Make a PCM WAV whose writer was killed readable by every reader: set the RIFF and
    ``data`` chunk sizes from the file's length (libsndfile writes them at close; after a
    crash they may say 0) and drop a partial last sample frame. True if anything changed."""
    with path.open("r+b") as fh:
        head = fh.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return False
        size = fh.seek(0, os.SEEK_END)
        pos, block = 12, 0
        while pos + 8 <= size:
            fh.seek(pos)
            chunk_id, chunk_len = struct.unpack("<4sI", fh.read(8))
            if chunk_id == b"fmt ":
                fmt = fh.read(min(chunk_len, 16))
                if len(fmt) >= 14:
                    block = struct.unpack("<H", fmt[12:14])[0]
            if chunk_id == b"data":
                data_start = pos + 8
                avail = size - data_start
                if block > 1:
                    avail -= avail % block
                changed = False
                if data_start + avail < size:
                    fh.truncate(data_start + avail)
                    size, changed = data_start + avail, True
                if chunk_len != avail:
                    fh.seek(pos + 4)
                    fh.write(struct.pack("<I", avail))
                    changed = True
                fh.seek(4)
                riff = struct.unpack("<I", fh.read(4))[0]
                if riff != size - 8:
                    fh.seek(4)
                    fh.write(struct.pack("<I", size - 8))
                    changed = True
                return changed
            pos += 8 + chunk_len + (chunk_len & 1)
    return False


def _trace_ms(path: Path) -> int:
    """Media length of a (repaired) trace; 0 when it cannot be read."""
    try:
        info = sf.info(str(path))
    except (sf.LibsndfileError, RuntimeError, OSError):
        return 0
    return int(info.frames * 1000 // max(1, info.samplerate))


def repair_run_dir(run_dir: Path, detail: str, *, status: str = "incomplete") -> bool:
    """Leave an interrupted run directory readable and gradable: the trace's WAV header
    repaired, a ``session.end`` (``infrastructure_error`` with ``detail``) appended to an event
    log that has none, and ``meta.json`` marked ``status`` with its end reason. Everything
    received before the interruption stays as it was. False if there is no run here."""
    events_path = run_dir / EVENTS
    meta_path = run_dir / META
    if not events_path.is_file() and not meta_path.is_file():
        return False
    trace = run_dir / "trace.wav"
    if trace.is_file():
        try:
            repair_wav_header(trace)
        except OSError:
            log.exception("could not repair %s", trace)
    media_ms = _trace_ms(trace) if trace.is_file() else 0
    if events_path.is_file():
        read = read_events(events_path)
        last_seq = max((e.seq for e in read.events), default=0)
        media_ms = max([media_ms, *(e.t_media_ms for e in read.events)])
        if not any(e.type == "session.end" for e in read.events):
            end = SessionEnd(reason="infrastructure_error", failure_class="infrastructure",
                             detail=detail, seq=last_seq + 1, t_media_ms=media_ms,
                             t_wall=round(time.time(), 6))
            raw = events_path.read_bytes()
            with events_path.open("a", encoding="utf-8") as fh:
                if raw and not raw.endswith(b"\n"):
                    fh.write("\n")  # a line cut by the crash stays on its own (unreadable) line
                fh.write(EVENT_ADAPTER.dump_json(end).decode() + "\n")
                fh.flush()
                os.fsync(fh.fileno())
    run = RunDir(run_dir)
    meta = run.read_meta_or_none()
    if meta is not None:  # an unreadable record stays as it is: the run list names it
        run.write_meta(meta.ended("infrastructure_error", "infrastructure", media_ms,
                                  status=status, recovered=detail))
    return True


def finished_run(run_dir: Path) -> bool:
    """The run's ``meta.json`` says it completed."""
    return RunDir(run_dir).is_complete()


@contextlib.contextmanager
def unless_being_written(run_dir: Path) -> Iterator[bool]:
    """Yields False while another process (or another writer in this one) holds the run's
    event log open for writing; otherwise True, holding the writer's lock until the block
    ends so no writer can start on it meanwhile. A run with no event log yields True."""
    path = run_dir / EVENTS
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # releases the lock


def _finish_from_log(run_dir: Path, detail: str) -> bool:
    """A run whose log ends with ``session.end`` but whose ``meta.json`` was not updated (the
    writer died between the two): record the end the log holds. False if it has none."""
    events_path = run_dir / EVENTS
    if not events_path.is_file():
        return False
    events = read_events(events_path).events
    end = next((e for e in reversed(events) if isinstance(e, SessionEnd)), None)
    if end is None:
        return False
    trace = run_dir / "trace.wav"
    if trace.is_file():
        with contextlib.suppress(OSError):
            repair_wav_header(trace)
    run = RunDir(run_dir)
    meta = run.read_meta_or_none()
    if meta is None:
        return False
    run.write_meta(meta.ended(
        end.reason, end.failure_class, max((e.t_media_ms for e in events), default=0),
        recovered=f"{detail}; the run had ended, only meta.json was behind"))
    return True


def recover_run(run_dir: Path, detail: str = RECOVERED_RUN) -> str | None:
    """Repair one half-written run (``meta.json`` still says ``running``, as the orchestrator
    leaves it until the end) unless a live writer holds it. Returns the status it now has
    (``incomplete``, or ``complete`` when its log had ended), or None when nothing was done
    (finished already, being written, or not a run)."""
    meta = RunDir(run_dir).read_meta_or_none()
    if meta is None or meta.status != "running":
        return None
    with unless_being_written(run_dir) as free:
        if not free:
            return None
        if _finish_from_log(run_dir, detail):
            return "complete"
        if repair_run_dir(run_dir, detail):
            return "incomplete"
    return None


def recover_runs(runs_dir: Path, detail: str = RECOVERED_RUN) -> list[Path]:
    """Every half-written run under ``runs_dir`` (campaigns, live demos, Study B calls, and
    runs kept aside under ``.incomplete``) repaired by :func:`recover_run`; runs still being
    written are left alone. Returns the run directories repaired."""
    if not runs_dir.is_dir():
        return []
    repaired: list[Path] = []
    for meta_path in sorted(runs_dir.rglob(META)):
        run_dir = meta_path.parent
        try:
            status = recover_run(run_dir, detail)
        except OSError as exc:
            log.error("could not repair the interrupted run %s: %s", run_dir, exc)
            continue
        if status is not None:
            log.warning("run %s was cut off before it finished: marked %s", run_dir, status)
            repaired.append(run_dir)
    return repaired
