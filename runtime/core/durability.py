"""Durability off the hot path: one background thread fsyncs the files writers mark.

A run's event log and trace are written to the operating system as they go (a ``write`` per
event, one per second of media for the trace), so a killed process loses nothing the writer
handed over. An ``fsync`` (what survives a power cut or an OS crash) cost 334 µs inside the
media loop, once per media-second for the trace and once per wall-second for the log (issue
20). Writers now :func:`mark` their descriptor instead; :class:`Syncer` fsyncs every marked
descriptor at most :data:`INTERVAL_S` after it was marked, on its own thread, so at most that
much of written data is at risk on a power cut, and nothing on a kill -9. A writer that closes
hands its descriptor over (:meth:`Syncer.close_later`): the last fsync and the close happen
on the same thread within the same second (an fsync at close cost 3-9 ms per file, on the
media loop, once per run), and at interpreter exit for whatever is still pending.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading

INTERVAL_S = 1.0


class Syncer:
    """fsyncs marked file descriptors, at most :data:`INTERVAL_S` after marking."""

    def __init__(self, interval_s: float = INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._marked: set[int] = set()
        self._closing: list[int] = []
        self._in_flight = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.synced = 0
        """fsyncs done (for tests and benches)."""

    def mark(self, fd: int) -> None:
        with self._lock:
            self._marked.add(fd)
            self._start()

    def close_later(self, fd: int) -> None:
        """The writer is done with ``fd`` and never touches it again: fsync it and close it
        on the syncer's thread, at most ``interval_s`` from now."""
        with self._lock:
            self._marked.discard(fd)
            self._closing.append(fd)
            self._start()

    def forget(self, fd: int) -> None:
        """The writer is about to close ``fd``: do not sync it (for nothing) later."""
        with self._lock:
            self._marked.discard(fd)

    @property
    def pending(self) -> int:
        """Descriptors marked or handed over and not yet synced."""
        with self._lock:
            return len(self._marked) + len(self._closing) + self._in_flight

    def drain(self) -> None:
        """Sync (and close what was handed over) now, on the calling thread."""
        self._sync()

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            if self._thread is None:
                atexit.register(self.drain)
            self._thread = threading.Thread(target=self._run, name="apex-fsync", daemon=True)
            self._thread.start()

    def _sync(self) -> None:
        with self._lock:
            fds, self._marked = self._marked, set()
            closing, self._closing = self._closing, []
            self._in_flight += len(fds) + len(closing)
        # fsync outside the lock: a writer marking its descriptor never waits for a disk. A
        # marked number its writer closed meanwhile may now be another file (or none): one
        # extra fsync of an open file, or EBADF, both harmless.
        for fd in fds:
            with contextlib.suppress(OSError):
                os.fsync(fd)
                self.synced += 1
        for fd in closing:  # the syncer's own now: nobody else closes or reuses them
            with contextlib.suppress(OSError):
                os.fsync(fd)
                self.synced += 1
            with contextlib.suppress(OSError):
                os.close(fd)
        with self._lock:
            self._in_flight -= len(fds) + len(closing)

    def _run(self) -> None:
        while True:
            self._wake.wait(self.interval_s)
            self._wake.clear()
            self._sync()


SYNCER = Syncer()
"""The process's syncer."""
