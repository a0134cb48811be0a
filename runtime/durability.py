"""Durability off the hot path: one background thread fsyncs the files writers mark.

A run's event log and trace are written to the operating system as they go (a ``write`` per
event, one per second of media for the trace), so a killed process loses nothing the writer
handed over. An ``fsync`` (what survives a power cut or an OS crash) cost 334 µs inside the
media loop, once per media-second for the trace and once per wall-second for the log (issue
20). Writers now :func:`mark` their descriptor instead; :class:`Syncer` fsyncs every marked
descriptor at most :data:`INTERVAL_S` after it was marked, on its own thread, so at most that
much of written data is at risk on a power cut, and nothing on a kill -9. Closing a writer
still fsyncs synchronously (once per run).
"""

from __future__ import annotations

import contextlib
import os
import threading

INTERVAL_S = 1.0


class Syncer:
    """fsyncs marked file descriptors, at most :data:`INTERVAL_S` after marking."""

    def __init__(self, interval_s: float = INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._marked: set[int] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.synced = 0
        """fsyncs done (for tests and benches)."""

    def mark(self, fd: int) -> None:
        with self._lock:
            self._marked.add(fd)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="apex-fsync",
                                                daemon=True)
                self._thread.start()

    def forget(self, fd: int) -> None:
        """The writer is closing ``fd`` (and fsyncs it itself): never touch it again."""
        with self._lock:
            self._marked.discard(fd)

    def _run(self) -> None:
        while True:
            self._wake.wait(self.interval_s)
            self._wake.clear()
            with self._lock:
                fds, self._marked = self._marked, set()
                # Sync under the lock: a writer closing its descriptor waits in forget(), so
                # a number is never synced after it was closed (and perhaps reused).
                for fd in fds:
                    with contextlib.suppress(OSError):
                        os.fsync(fd)
                        self.synced += 1


SYNCER = Syncer()
"""The process's syncer."""
