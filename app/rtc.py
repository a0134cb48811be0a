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
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import soxr

from runtime.audio import SAMPLE_RATE, Pcm

if TYPE_CHECKING:
    from aiortc import MediaStreamTrack

log = logging.getLogger(__name__)

WEBRTC_RATE = 48_000
WEBRTC_FRAME = WEBRTC_RATE // 50
"""20 ms: aiortc's encoder needs s16 frames of at most 20 ms (notes/webrtc-testing.md)."""
PRIME_FRAMES = 3
"""Frames a track waits for before it starts (and after it ran dry): 60 ms of jitter slack."""
FEED_MAX_FRAMES = 25
"""At most 500 ms of audio waits per channel; older frames are dropped."""
MAX_SDP_CHARS = 20_000

LatencyProbe = Callable[[float], None]
"""Called with the seconds a frame spent inside the server (benchmarks only)."""


# --------------------------------------------------------------------------- outgoing audio


class AudioFeed:
    """One channel on its way to the browser: the runtime's 40 ms, 24 kHz frames (pushed from
    the orchestrator's thread) resampled with soxr into 20 ms, 48 kHz s16 frames (taken on the
    server's event loop). Bounded: at most ``max_frames`` wait; older ones are dropped.

    ``probe``, when set, is called with how long each real frame waited between :meth:`push`
    and :meth:`take` (the server-side latency of this direction; ``bench/bench_live.py``)."""

    def __init__(self, max_frames: int = FEED_MAX_FRAMES, probe: LatencyProbe | None = None,
                 ) -> None:
        self.frames: deque[Pcm] = deque(maxlen=max_frames)
        self._stamps: deque[float] = deque(maxlen=max_frames)
        self._stream = soxr.ResampleStream(SAMPLE_RATE, WEBRTC_RATE, 1, dtype="int16",
                                           quality="HQ")
        self._pending: Pcm = np.zeros(0, dtype=np.int16)
        self._flowing = False
        self.probe = probe
        self.pushed = 0
        self.dropped = 0
        self.underruns = 0

    def push(self, pcm: Pcm) -> None:
        now = time.monotonic()
        out = np.asarray(self._stream.resample_chunk(pcm), dtype=np.int16).reshape(-1)
        buf = np.concatenate([self._pending, out]) if len(self._pending) else out
        whole = len(buf) // WEBRTC_FRAME
        for i in range(whole):
            if len(self.frames) == self.frames.maxlen:
                self.dropped += 1
            self.frames.append(buf[i * WEBRTC_FRAME:(i + 1) * WEBRTC_FRAME].copy())
            self._stamps.append(now)
        self._pending = buf[whole * WEBRTC_FRAME:].copy()
        self.pushed += whole

    def take(self) -> Pcm:
        """The next 20 ms frame, or silence while priming or when the feed ran dry."""
        if not self._flowing:
            if len(self.frames) < PRIME_FRAMES:
                return SILENCE_20MS
            self._flowing = True
        try:
            frame = self.frames.popleft()
        except IndexError:
            self._flowing = False
            self.underruns += 1
            return SILENCE_20MS
        stamp = self._stamps.popleft() if self._stamps else None
        if self.probe is not None and stamp is not None:
            self.probe(time.monotonic() - stamp)
        return frame

    def clear(self) -> None:
        """Forget what waits (a new listener starts from now, not from stale audio)."""
        self.frames.clear()
        self._stamps.clear()
        self._flowing = False


SILENCE_20MS: Pcm = np.zeros(WEBRTC_FRAME, dtype=np.int16)


@functools.cache
def channel_track_class() -> Callable[[AudioFeed], MediaStreamTrack]:
    """aiortc's track class for an :class:`AudioFeed` (built on first use: lazy import)."""
    import av
    from aiortc import MediaStreamTrack
    from aiortc.mediastreams import MediaStreamError

    class ChannelTrack(MediaStreamTrack):
        """Paces one feed out in real time, 20 ms per frame; silence when nothing waits."""

        kind = "audio"

        def __init__(self, feed: AudioFeed) -> None:
            super().__init__()
            self._feed = feed
            self._start: float | None = None
            self._pts = 0

        async def recv(self) -> av.AudioFrame:
            if self.readyState != "live":
                raise MediaStreamError
            if self._start is None:
                self._start = time.monotonic()
            else:
                self._pts += WEBRTC_FRAME
                wait = self._start + self._pts / WEBRTC_RATE - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
            pcm = self._feed.take()
            frame = av.AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
            frame.sample_rate = WEBRTC_RATE
            frame.pts = self._pts
            frame.time_base = fractions.Fraction(1, WEBRTC_RATE)
            return frame

    return ChannelTrack


# --------------------------------------------------------------------------- incoming audio


class MicSink:
    """A browser microphone on its way into the runtime: each decoded aiortc frame (usually s16
    stereo 48 kHz, interleaved; any rate, packed or planar, is accepted) is downmixed to mono,
    resampled with one soxr stream to the runtime's 24 kHz and handed to ``push``.

    ``on_frame``, when set, is called with the arrival time (``time.monotonic()``) and the
    24 kHz samples of each frame before ``push`` (benchmarks only)."""

    def __init__(self, push: Callable[[Pcm], None],
                 on_frame: Callable[[float, Pcm], None] | None = None) -> None:
        self.push = push
        self.on_frame = on_frame
        self._stream: Any = None
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


# --------------------------------------------------------------------------- threads


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
