"""WebRTC plumbing shared by the live demo (``app/demo.py``) and Study B's live calls
(``app/live.py``): the runtime's 40 ms, 24 kHz frames on their way out to a browser, a browser
microphone's Opus frames on their way in, and the cross-thread wake-up a page stream waits on.

Facts this module relies on (notes/webrtc-testing.md): aiortc's encoder needs s16 frames of at
most 20 ms; an incoming browser track arrives as s16 stereo 48 kHz (960 samples per frame,
interleaved) and must be drained continuously because its queue is unbounded.

aiortc and PyAV are imported only when a track is built or a frame converted: the rest of the
app works without them.
"""

from __future__ import annotations

import asyncio
import contextlib
import fractions
import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import soxr

from runtime.core.audio import SAMPLE_RATE, Pcm

if TYPE_CHECKING:
    from aiortc import MediaStreamTrack

log = logging.getLogger(__name__)

WEBRTC_RATE = 48_000
WEBRTC_FRAME = WEBRTC_RATE // 50
"""20 ms: aiortc's encoder needs s16 frames of at most 20 ms (notes/webrtc-testing.md)."""
FEED_MAX_FRAMES = 25
"""At most 500 ms of audio waits per channel; older frames are dropped."""
MAX_SDP_CHARS = 20_000

LatencyProbe = Callable[[float], None]
"""Called with the seconds a frame spent inside the server (benchmarks only)."""


# --------------------------------------------------------------------------- resampling


def _halfband_taps() -> np.ndarray:
    from scipy.signal import firwin

    taps: np.ndarray = firwin(HALFBAND_TAPS, 11_000, fs=WEBRTC_RATE, window=("kaiser", 8.0))
    return taps


HALFBAND_TAPS = 95
"""Low-pass FIR at 48 kHz (pass to 11 kHz, Kaiser β 8): group delay 47 samples, about 1 ms."""


class Ratio2:
    """Streaming 2:1 resampling between the runtime's 24 kHz and WebRTC's 48 kHz: one FIR whose
    state spans the chunks, so every chunk comes out at once with the filter's 1 ms delay.
    (soxr's high-quality streams release their output in blocks: a 20 ms chunk could wait for
    the next one, adding 20 ms to each direction of a live call.)"""

    def __init__(self, direction: Literal["up", "down"]) -> None:
        from scipy.signal import lfilter

        self._lfilter = lfilter
        self.direction = direction
        self._taps = _halfband_taps() * (2.0 if direction == "up" else 1.0)
        self._state = np.zeros(len(self._taps) - 1)
        self._phase = 0
        """Down: index of the next input sample to keep (the stream's sample count parity)."""

    def process(self, pcm: Pcm) -> Pcm:
        if not len(pcm):
            return np.zeros(0, dtype=np.int16)
        x = pcm.astype(np.float64)
        if self.direction == "up":
            stuffed = np.zeros(2 * len(x))
            stuffed[::2] = x
            x = stuffed
        y, self._state = self._lfilter(self._taps, 1.0, x, zi=self._state)
        if self.direction == "down":
            y = y[self._phase::2]
            self._phase = (self._phase + len(x)) % 2
        out: Pcm = np.clip(np.round(y), -32768, 32767).astype(np.int16)
        return out


# --------------------------------------------------------------------------- outgoing audio


class AudioFeed:
    """One channel on its way to the browser: the runtime's 40 ms, 24 kHz frames (pushed from
    the orchestrator's thread) resampled (:class:`Ratio2`) into 20 ms, 48 kHz s16 frames,
    taken on the server's event loop by a :func:`channel_track_class` track that sends each
    as soon as it is there. Bounded: at most ``max_frames`` wait; older ones are dropped.

    ``probe``, when set, is called with how long each real frame waited between :meth:`push`
    and :meth:`take` (the server-side latency of this direction; ``bench/bench_live.py``)."""

    def __init__(self, max_frames: int = FEED_MAX_FRAMES, probe: LatencyProbe | None = None,
                 ) -> None:
        self.frames: deque[Pcm] = deque(maxlen=max_frames)
        self._stamps: deque[float] = deque(maxlen=max_frames)
        self._resampler = Ratio2("up")
        self._pending: Pcm = np.zeros(0, dtype=np.int16)
        self._lock = threading.Lock()
        self._waiter: Callable[[], None] | None = None
        self.probe = probe
        self.pushed = 0
        self.dropped = 0
        self.underruns = 0

    def push(self, pcm: Pcm) -> None:
        now = time.monotonic()
        out = self._resampler.process(pcm)
        buf = np.concatenate([self._pending, out]) if len(self._pending) else out
        whole = len(buf) // WEBRTC_FRAME
        with self._lock:
            for i in range(whole):
                if len(self.frames) == self.frames.maxlen:
                    self.dropped += 1
                self.frames.append(buf[i * WEBRTC_FRAME:(i + 1) * WEBRTC_FRAME].copy())
                self._stamps.append(now)
            wake = self._waiter if whole else None
        self._pending = buf[whole * WEBRTC_FRAME:].copy()
        self.pushed += whole
        if wake is not None:
            wake()

    def ready(self) -> bool:
        with self._lock:
            return bool(self.frames)

    def set_waiter(self, wake: Callable[[], None] | None) -> None:
        """``wake`` is called (from the pushing thread) when frames arrive; None clears."""
        with self._lock:
            self._waiter = wake

    def take(self) -> Pcm:
        """The next 20 ms frame, or silence when none waits (an underrun)."""
        with self._lock:
            if not self.frames:
                self.underruns += 1
                return SILENCE_20MS
            frame = self.frames.popleft()
            stamp = self._stamps.popleft() if self._stamps else None
        if self.probe is not None and stamp is not None:
            self.probe(time.monotonic() - stamp)
        return frame

    def clear(self) -> None:
        """Forget what waits (a new listener starts from now, not from stale audio)."""
        with self._lock:
            self.frames.clear()
            self._stamps.clear()


SILENCE_20MS: Pcm = np.zeros(WEBRTC_FRAME, dtype=np.int16)
EARLY_S = 0.040
"""A track may send a frame up to this long before its slot (the orchestrator hands over
40 ms, two frames, at once: the second goes out with the first)."""
LATE_S = 0.020
"""A track waits this long past a frame's slot before it sends silence instead."""


@functools.cache
def channel_track_class() -> Callable[[AudioFeed], MediaStreamTrack]:
    """aiortc's track class for an :class:`AudioFeed` (built on first use: lazy import)."""
    import av
    from aiortc import MediaStreamTrack
    from aiortc.mediastreams import MediaStreamError

    class ChannelTrack(MediaStreamTrack):
        """Sends one feed in real time, 20 ms per frame. Each frame has a slot on the track's
        own schedule; it goes out as soon as the feed has it (up to :data:`EARLY_S` before its
        slot), and a frame still missing :data:`LATE_S` after its slot is sent as silence. So
        the agent's audio leaves as soon as the media clock has played it, and the browser's
        jitter buffer, not a second one here, absorbs the 40 ms rhythm of the runtime."""

        kind = "audio"

        def __init__(self, feed: AudioFeed) -> None:
            super().__init__()
            self._feed = feed
            self._start: float | None = None
            self._pts = 0

        async def _wait_for_frame(self, until: float) -> None:
            if self._feed.ready():
                return
            loop = asyncio.get_running_loop()
            arrived = asyncio.Event()

            def wake() -> None:
                loop.call_soon_threadsafe(arrived.set)

            self._feed.set_waiter(wake)
            try:
                timeout = until - time.monotonic()
                if not self._feed.ready() and timeout > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(arrived.wait(), timeout)
            finally:
                self._feed.set_waiter(None)

        async def recv(self) -> av.AudioFrame:
            if self.readyState != "live":
                raise MediaStreamError
            if self._start is None:
                self._start = time.monotonic()
            else:
                self._pts += WEBRTC_FRAME
                slot = self._start + self._pts / WEBRTC_RATE
                early = slot - EARLY_S - time.monotonic()
                if early > 0:
                    await asyncio.sleep(early)
                await self._wait_for_frame(slot + LATE_S)
                if not self._feed.ready() and time.monotonic() - slot > 1.0:
                    # Long silence: the schedule restarts with the next frame (no catch-up burst).
                    self._start = time.monotonic() - self._pts / WEBRTC_RATE
            pcm = self._feed.take()
            frame = av.AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
            frame.sample_rate = WEBRTC_RATE
            frame.pts = self._pts
            frame.time_base = fractions.Fraction(1, WEBRTC_RATE)
            return frame

    return ChannelTrack


@functools.cache
def _paced_mic_class() -> Callable[[Callable[[], Pcm]], MediaStreamTrack]:
    import av
    from aiortc import MediaStreamTrack

    class PacedMic(MediaStreamTrack):
        """A browser's microphone: 20 ms stereo s16 frames at 48 kHz, paced in real time,
        each from ``next_chunk()`` (mono, ``WEBRTC_FRAME`` samples)."""

        kind = "audio"

        def __init__(self, next_chunk: Callable[[], Pcm]) -> None:
            super().__init__()
            self.next_chunk = next_chunk
            self.pos = 0
            self.start: float | None = None

        async def recv(self) -> av.AudioFrame:
            if self.start is None:
                self.start = time.monotonic()
            else:
                wait = self.start + self.pos / WEBRTC_RATE - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
            chunk = self.next_chunk()
            frame = av.AudioFrame.from_ndarray(np.repeat(chunk, 2).reshape(1, -1),
                                               format="s16", layout="stereo")
            frame.sample_rate = WEBRTC_RATE
            frame.pts = self.pos
            frame.time_base = fractions.Fraction(1, WEBRTC_RATE)
            self.pos += WEBRTC_FRAME
            return frame

    return PacedMic


def paced_mic_track(next_chunk: Callable[[], Pcm]) -> MediaStreamTrack:
    """An aiortc track sending ``next_chunk()`` (20 ms of 48 kHz mono per call) as a browser
    sends its microphone. For tests and benchmarks that play the participant's browser."""
    return _paced_mic_class()(next_chunk)


def recorded_mic_track_class() -> Callable[[Pcm, bool], MediaStreamTrack]:
    """A factory of recorded-microphone tracks: 48 kHz PCM sent as a browser sends its
    microphone (:func:`paced_mic_track`), then silence, or from the start again when
    ``loop``. For tests and benchmarks that play the participant's browser."""

    def make(pcm48: Pcm, loop: bool = False) -> MediaStreamTrack:
        pos = 0

        def next_chunk() -> Pcm:
            nonlocal pos
            at = pos % len(pcm48) if loop and len(pcm48) else pos
            chunk = pcm48[at:at + WEBRTC_FRAME]
            pos += WEBRTC_FRAME
            if len(chunk) < WEBRTC_FRAME:
                chunk = np.concatenate([chunk, np.zeros(WEBRTC_FRAME - len(chunk), np.int16)])
            return chunk

        return paced_mic_track(next_chunk)

    return make


# --------------------------------------------------------------------------- incoming audio


class MicSink:
    """A browser microphone on its way into the runtime: each decoded aiortc frame (usually s16
    stereo 48 kHz, interleaved; any rate, packed or planar, is accepted) is downmixed to mono,
    resampled to the runtime's 24 kHz (:class:`Ratio2` for 48 kHz, a soxr stream for any
    other rate) and handed to ``push``.

    ``on_frame``, when set, is called with the arrival time (``time.monotonic()``) and the
    24 kHz samples of each frame before ``push`` (benchmarks only)."""

    def __init__(self, push: Callable[[Pcm], None],
                 on_frame: Callable[[float, Pcm], None] | None = None) -> None:
        self.push = push
        self.on_frame = on_frame
        self._stream: Any = None
        self._down: Ratio2 | None = None
        self._rate = 0
        self.frames = 0
        self.samples = 0

    def convert(self, frame: Any) -> Pcm:
        """One ``av.AudioFrame`` as mono PCM16 at 24 kHz (possibly empty while the resampler
        fills)."""
        data = np.asarray(frame.to_ndarray())
        channels = max(1, len(frame.layout.channels))
        if frame.format.is_planar:
            rows = data.reshape(channels, -1)
        else:
            rows = data.reshape(-1, channels).T
        if rows.dtype.kind == "f":
            mono = np.clip(rows.mean(axis=0), -1.0, 1.0) * 32767.0
        else:
            mono = rows.astype(np.float32).mean(axis=0)
            if rows.dtype.itemsize == 4:  # s32
                mono = mono / 65536.0
        pcm: Pcm = np.round(mono).astype(np.int16)
        rate = int(frame.sample_rate)
        if rate == SAMPLE_RATE:
            return pcm
        if rate == WEBRTC_RATE:  # the usual case: Opus decodes to 48 kHz
            if self._down is None:
                self._down = Ratio2("down")
            return self._down.process(pcm)
        if self._stream is None or rate != self._rate:
            self._stream = soxr.ResampleStream(rate, SAMPLE_RATE, 1, dtype="int16",
                                               quality="HQ")
            self._rate = rate
        return np.asarray(self._stream.resample_chunk(pcm), dtype=np.int16).reshape(-1)

    def feed(self, frame: Any) -> None:
        arrived = time.monotonic()
        pcm = self.convert(frame)
        self.frames += 1
        if not len(pcm):
            return
        self.samples += len(pcm)
        if self.on_frame is not None:
            self.on_frame(arrived, pcm)
        self.push(pcm)


async def drain_track(track: Any, sink: MicSink) -> None:
    """Read ``track`` until it ends, feeding every frame to ``sink`` (an incoming aiortc queue
    is unbounded: it must be drained even when nobody listens). A failing sink ends the drain
    with a log line; it never raises into the event loop."""
    from aiortc.mediastreams import MediaStreamError

    while True:
        try:
            frame = await track.recv()
        except (MediaStreamError, asyncio.CancelledError):
            return
        try:
            sink.feed(frame)
        except Exception:  # one broken frame or sink ends this drain only
            log.exception("microphone drain stopped")
            return


async def discard_track(track: Any) -> None:
    """Read ``track`` until it ends and drop every frame (a listener that only needs the audio
    to flow: benchmarks, tests)."""
    while True:
        try:
            await track.recv()
        except Exception:  # the track ended (MediaStreamError) or its connection closed
            return


# --------------------------------------------------------------------------- threads


class Janitor:
    """Calls ``reap`` every ``every_s`` seconds on the server's event loop (started on first
    use, stopped at shutdown). A failing reap is logged and the next one still runs: the
    janitor outlives one bad session."""

    def __init__(self, reap: Callable[[], Awaitable[None]], every_s: float, name: str) -> None:
        self._reap = reap
        self.every_s = every_s
        self.name = name
        self._task: asyncio.Task[None] | None = None

    def ensure(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            try:
                await self._reap()
            except Exception:
                log.exception("%s janitor", self.name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class ChangeSignal:
    """A wake-up for page streams on the server's event loop, set from any thread.

    A stream takes :meth:`changed` *before* reading the state it sends, then waits on it; a
    :meth:`notify` (from a run's own thread) or :meth:`wake` (on the loop) after that read sets
    it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._event = asyncio.Event()

    def changed(self) -> asyncio.Event:
        return self._event

    def wake(self) -> None:
        """Set the current event (call on the loop)."""
        event, self._event = self._event, asyncio.Event()
        event.set()

    def notify(self) -> None:
        """Set the current event from any thread."""
        with contextlib.suppress(RuntimeError):  # the server's loop is already closed
            self.loop.call_soon_threadsafe(self.wake)


async def close_peer(pc: Any) -> None:
    """Close a peer connection, ignoring errors (it may be half set up or already closed)."""
    if pc is not None:
        with contextlib.suppress(Exception):
            await pc.close()
