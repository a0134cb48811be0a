"""Crash recovery for run directories: whatever wrote a run (a campaign, a live demo, a Study B
live call) may be killed mid-run, leaving ``meta.json`` at ``running``, a WAV header that says
0 bytes of audio and an event log without ``session.end``. Such a run is repaired so it reads
and grades as what it is, an infrastructure failure, never the agent's:

* the trace's WAV header is set from the audio actually on disk (:func:`repair_wav_header`);
* a ``session.end`` with reason ``infrastructure_error`` (failure class ``infrastructure``)
  and a detail saying what happened is appended to the event log, after every line that was
  there (a line cut by the crash stays, unreadable, on its own line);
* ``meta.json`` says ``status: incomplete``, ``end_reason: infrastructure_error`` and, in
  ``recovered``, why.

A run whose writer is still alive is never touched: the writer holds an exclusive ``flock`` on
its ``events.jsonl`` for as long as it writes (``runtime.events.EventLog``), which the kernel
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
from typing import Any

import soundfile as sf

from runtime.events import EVENT_ADAPTER, SessionEnd, read_events

log = logging.getLogger(__name__)

RECOVERED_RUN = "the process writing this run stopped before it finished (recovered at start-up)"


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


def _read_meta(meta_path: Path) -> dict[str, Any]:
    with contextlib.suppress(OSError, json.JSONDecodeError, UnicodeDecodeError):
        loaded = json.loads(meta_path.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            return loaded
    return {}


def _write_meta(meta_path: Path, meta: dict[str, Any]) -> None:
    tmp = meta_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(meta_path)


def repair_run_dir(run_dir: Path, detail: str, *, status: str = "incomplete") -> bool:
    """Leave an interrupted run directory readable and gradable: the trace's WAV header
    repaired, a ``session.end`` (``infrastructure_error`` with ``detail``) appended to an event
    log that has none, and ``meta.json`` marked ``status`` with its end reason. Everything
    received before the interruption stays as it was. False if there is no run here."""
    events_path = run_dir / "events.jsonl"
    meta_path = run_dir / "meta.json"
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
    meta = _read_meta(meta_path) if meta_path.is_file() else {}
    if meta_path.is_file() or meta:
        meta.update({"status": status, "end_reason": "infrastructure_error",
                     "failure_class": "infrastructure", "media_ms": media_ms,
                     "recovered": detail})
        _write_meta(meta_path, meta)
    return True


def finished_run(run_dir: Path) -> bool:
    """The run's ``meta.json`` says it completed."""
    return _read_meta(run_dir / "meta.json").get("status") == "complete"


@contextlib.contextmanager
def unless_being_written(run_dir: Path) -> Iterator[bool]:
    """Yields False while another process (or another writer in this one) holds the run's
    event log open for writing; otherwise True, holding the writer's lock until the block
    ends so no writer can start on it meanwhile. A run with no event log yields True."""
    path = run_dir / "events.jsonl"
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
    events_path = run_dir / "events.jsonl"
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
    meta = _read_meta(run_dir / "meta.json")
    meta.update({"status": "complete", "end_reason": end.reason,
                 "failure_class": end.failure_class,
                 "media_ms": max((e.t_media_ms for e in events), default=0),
                 "recovered": f"{detail}; the run had ended, only meta.json was behind"})
    _write_meta(run_dir / "meta.json", meta)
    return True


def recover_run(run_dir: Path, detail: str = RECOVERED_RUN) -> str | None:
    """Repair one half-written run (``meta.json`` still says ``running``, as the orchestrator
    leaves it until the end) unless a live writer holds it. Returns the status it now has
    (``incomplete``, or ``complete`` when its log had ended), or None when nothing was done
    (finished already, being written, or not a run)."""
    meta_path = run_dir / "meta.json"
    if not meta_path.is_file() or _read_meta(meta_path).get("status") != "running":
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
    for meta_path in sorted(runs_dir.rglob("meta.json")):
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
