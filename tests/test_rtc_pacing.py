"""The low-latency audio path of live calls: the 2:1 FIR resampler between 24 and 48 kHz and
the media clock paced by a live microphone (``FramePacer``)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import numpy as np

from app.rtc import HALFBAND_TAPS, Ratio2
from runtime.session.orchestrator import MediaClock

DELAY_48K = (HALFBAND_TAPS - 1) // 2  # a linear-phase FIR delays by half its length


def _tone(freq: float, rate: int, seconds: float, shift: int = 0) -> np.ndarray:
    t = (np.arange(int(rate * seconds)) - shift) / rate
    return 0.5 * np.sin(2 * np.pi * freq * t) * 32767


def test_downsampling_is_exact_and_immediate() -> None:
    x = np.round(_tone(1000, 48_000, 1.0)).astype(np.int16)
    down = Ratio2("down")
    chunks = [down.process(x[i:i + 960]) for i in range(0, len(x), 960)]
    assert all(len(c) == 480 for c in chunks)  # every 20 ms chunk comes out at once
    y = np.concatenate(chunks).astype(float)
    expected = 0.5 * np.sin(2 * np.pi * 1000 * (np.arange(24_000) / 24_000
                                                 - DELAY_48K / 48_000)) * 32767
    assert np.max(np.abs(y[100:] - expected[100:])) <= 2.0  # within rounding


def test_downsampling_rejects_what_would_alias() -> None:
    x = np.round(_tone(20_000, 48_000, 0.5)).astype(np.int16)  # above 24 kHz's Nyquist
    y = Ratio2("down").process(x).astype(float)
    assert np.sqrt(np.mean(y[200:] ** 2)) < 5.0  # of a 16,000-amplitude tone


def test_upsampling_is_exact_and_immediate() -> None:
    x = np.round(_tone(1000, 24_000, 1.0)).astype(np.int16)
    up = Ratio2("up")
    chunks = [up.process(x[i:i + 960]) for i in range(0, len(x), 960)]  # 40 ms runtime frames
    assert all(len(c) == 1920 for c in chunks)
    y = np.concatenate(chunks).astype(float)
    expected = _tone(1000, 48_000, 1.0, shift=DELAY_48K)
    assert np.max(np.abs(y[300:] - expected[300:])) <= 2.0


class FakeMic:
    """A FramePacer whose frames another thread delivers."""

    def __init__(self) -> None:
        self.ready = False
        self.waiters: list[Callable[[], None] | None] = []
        self._lock = threading.Lock()

    def frame_ready(self) -> bool:
        with self._lock:
            return self.ready

    def set_frame_waiter(self, wake: Callable[[], None] | None) -> None:
        with self._lock:
            self.waiters.append(wake)

    def deliver(self) -> None:
        with self._lock:
            self.ready = True
            wake = self.waiters[-1] if self.waiters else None
        if wake is not None:
            wake()


def test_paced_clock_takes_a_frame_when_the_microphone_delivers_it() -> None:
    mic = FakeMic()

    async def scenario() -> None:
        clock = MediaClock("realtime", pacer=mic)
        clock.anchor()
        await asyncio.sleep(0.045)  # now past the earliest moment frame 1 may be taken
        timer = threading.Timer(0.005, mic.deliver)
        timer.start()
        await clock.tick()
        timer.join()

    asyncio.run(scenario())
    # The clock waited on the microphone (a waiter was set, then cleared) and was woken by it.
    assert mic.waiters and mic.waiters[-1] is None
    assert any(w is not None for w in mic.waiters)


def test_paced_clock_never_runs_more_than_a_frame_ahead() -> None:
    mic = FakeMic()
    mic.ready = True  # a microphone that always has audio waiting

    async def scenario() -> list[float]:
        clock = MediaClock("realtime", pacer=mic)
        clock.anchor()
        leads = []
        for _ in range(10):
            await clock.tick()
            leads.append(clock._start + clock.t_ms / 1000 - time.monotonic())
        return leads

    leads = asyncio.run(scenario())
    assert max(leads) <= 0.040 + 1e-3  # at most one 40 ms frame before its deadline


def test_paced_clock_gives_up_on_a_silent_microphone() -> None:
    mic = FakeMic()  # never delivers

    async def scenario() -> float:
        clock = MediaClock("realtime", pacer=mic)
        clock.anchor()
        await clock.tick()
        return time.monotonic() - (clock._start + clock.t_ms / 1000)

    behind = asyncio.run(scenario())
    assert behind >= 0.020 - 1e-3  # it waited half a frame past the deadline, then went on
    assert mic.waiters[-1] is None
