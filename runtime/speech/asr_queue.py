"""One process-wide queue for speech recognition, authorization first, with a lane of its own.

A study server runs several live calls at once, and a recognizer model serializes its calls
(:class:`~runtime.speech.asr.WhisperASR`). If every call transcribes in its own thread, a
participant's "yes, please submit it" waits behind whatever the other calls said, in no
particular order, and the approval is decided seconds late (a 5.3 s decision was seen on a
loaded machine, past the orchestrator's hold). Here every transcription goes through one
queue with two priorities:

* ``AUTHORIZATION`` (0): an utterance whose words can grant or revoke an approval (spoken under
  an approve/revoke cue, or over the end of an approval request);
* ``ROUTINE`` (1): everything else (its transcript is logged for replay; nothing waits on it).

and two lanes (worker threads): lane 0 serves every job, authorization first; lane 1 serves
authorization jobs only, on a recognizer of its own (:func:`~runtime.speech.asr.lane_asr`),
so an approval never waits for a routine transcription to finish. Within a priority, jobs run
in the order they were submitted. A job not yet started can be cancelled
(``Future.cancel()``): that is how a speculative transcription is dropped when the participant
starts talking again. A job is a function of the lane that runs it.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

AUTHORIZATION = 0
ROUTINE = 1

Job = Callable[[int], T]
"""``job(lane)``: the lane (0 or 1) picks the recognizer instance to use."""


class TranscriptionQueue:
    """Priority queue of transcription jobs served by one thread per lane. ``lanes`` lists,
    for each lane, the worst priority it serves (default: lane 0 everything, lane 1
    authorization only)."""

    def __init__(self, lanes: tuple[int, ...] = (ROUTINE, AUTHORIZATION),
                 name: str = "asr-queue") -> None:
        if not lanes:
            raise ValueError("a transcription queue needs at least one lane")
        self._heap: list[tuple[int, int, Job[Any], Future[Any]]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._lanes = lanes
        self.served: list[int] = [0] * len(lanes)
        """Jobs each lane has run (for benchmarks and tests)."""
        for lane, worst in enumerate(lanes):
            threading.Thread(target=self._work, args=(lane, worst), name=f"{name}-{lane}",
                             daemon=True).start()

    def submit(self, fn: Job[T], priority: int = ROUTINE) -> Future[T]:
        fut: Future[T] = Future()
        with self._cv:
            heapq.heappush(self._heap, (priority, next(self._seq), fn, fut))
            self._cv.notify_all()
        return fut

    def waiting(self) -> int:
        """Jobs queued and not yet started (cancelled ones included until skipped)."""
        with self._cv:
            return len(self._heap)

    def _work(self, lane: int, worst: int) -> None:
        while True:
            with self._cv:
                while not self._heap or self._heap[0][0] > worst:
                    self._cv.wait()
                _prio, _seq, fn, fut = heapq.heappop(self._heap)
            if not fut.set_running_or_notify_cancel():
                continue  # cancelled before it started
            self.served[lane] += 1
            try:
                fut.set_result(fn(lane))
            except BaseException as exc:  # the caller's Future carries it
                fut.set_exception(exc)


_shared: TranscriptionQueue | None = None
_shared_lock = threading.Lock()


def shared_queue() -> TranscriptionQueue:
    """The process-wide queue (lane 0 on the shared recognizer, lane 1 on its own)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = TranscriptionQueue()
        return _shared
