"""Durability without an fsync in the media loop (issue 20).

The event log and the trace hand their data to the OS as they go and leave the fsync to the
background syncer (runtime/core/durability.py). These tests check that the writers never fsync on
the calling thread while writing, that the syncer does fsync what was marked (and never what
was forgotten), and that a campaign killed with SIGKILL keeps a trace within one second of
media of its event log.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from runtime.core import durability
from runtime.core.audio import FRAME_SAMPLES, TraceWriter
from runtime.core.events import EventLog, SessionEnd, read_events

ROOT = Path(__file__).resolve().parent.parent


def test_the_syncer_fsyncs_marked_descriptors_and_never_forgotten_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    synced: list[int] = []
    monkeypatch.setattr(durability.os, "fsync", synced.append)
    syncer = durability.Syncer(interval_s=0.05)
    a = os.open(tmp_path / "a", os.O_CREAT | os.O_WRONLY)
    b = os.open(tmp_path / "b", os.O_CREAT | os.O_WRONLY)
    try:
        syncer.mark(a)
        syncer.mark(b)
        syncer.forget(b)
        deadline = time.monotonic() + 5
        while a not in synced and time.monotonic() < deadline:
            time.sleep(0.01)
        assert a in synced and b not in synced
        synced.clear()
        time.sleep(0.2)
        # nothing marked since: neither is synced again (os.fsync is patched process-wide, so
        # other syncers' descriptors from earlier tests may show up here; a and b stay open, so
        # their numbers cannot be reused meanwhile)
        assert a not in synced and b not in synced
    finally:
        os.close(a)
        os.close(b)


def test_writers_do_not_fsync_on_the_media_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = threading.get_ident()
    on_loop: list[int] = []
    off_loop: list[tuple[int, int]] = []  # (inode, size) of each file synced off the loop
    real = os.fsync

    def fsync(fd: int) -> None:
        if threading.get_ident() == loop:
            on_loop.append(fd)
        else:
            st = os.fstat(fd)
            off_loop.append((st.st_ino, st.st_size))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    trace = TraceWriter(tmp_path / "trace.wav")
    log = EventLog(tmp_path / "events.jsonl")
    frame = np.ones(FRAME_SAMPLES, np.int16)
    for i in range(510):  # 20.4 s of media, as many log events
        trace.write(frame, frame)
        log.emit(SessionEnd(reason="user_goodbye"), i * 40)
    assert on_loop == []
    trace.close()  # writes the last 10 frames (its buffer holds 25) and the header's sizes
    log.close()
    # Closing hands each file to the syncer: its last fsync (after the last byte) happens on
    # the syncer's thread within a second, never on the loop.
    files = {(p.stat().st_ino, p.stat().st_size)
             for p in (tmp_path / "trace.wav", tmp_path / "events.jsonl")}
    deadline = time.monotonic() + 2 * durability.INTERVAL_S + 3
    while durability.SYNCER.pending and time.monotonic() < deadline:
        time.sleep(0.01)
    assert durability.SYNCER.pending == 0
    assert files <= set(off_loop) and on_loop == []
    assert sf.info(str(tmp_path / "trace.wav")).frames == 510 * FRAME_SAMPLES


CAMPAIGN = """
import sys
from app.cli import main
sys.argv = ["apex-voice", *sys.argv[1:]]
main()
"""


def _trace_ms(path: Path) -> int:
    data = max(0, path.stat().st_size - 44)
    return data // 4 * 1000 // 24_000


def test_a_campaign_killed_mid_run_keeps_all_but_at_most_a_second(tmp_path: Path) -> None:
    out = tmp_path / "camp"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "APEX_DATA_DIR": str(tmp_path / "data")}
    child = subprocess.Popen(
        [sys.executable, "-c", CAMPAIGN, "run", "--task", "apexv1_001", "--agent",
         "scripted:oracle", "--clock", "realtime", "--out", str(out)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    run_dir = out / "apexv1_001" / "r0"
    try:
        deadline = time.monotonic() + 120
        while not ((run_dir / "trace.wav").is_file() and _trace_ms(run_dir / "trace.wav") >= 4000):
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.53)  # somewhere inside a media second
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    events = read_events(run_dir / "events.jsonl").events
    assert events and not [e for e in events if e.type == "session.end"]
    last_event_ms = max(e.t_media_ms for e in events)
    trace_ms = _trace_ms(run_dir / "trace.wav")
    # The realtime clock writes one frame per 40 ms: the log is written per event, the trace
    # once per second of media, so the trace trails the log by less than a second.
    assert last_event_ms - trace_ms <= 1000 + 40, (last_event_ms, trace_ms)
