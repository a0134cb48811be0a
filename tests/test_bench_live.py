"""``bench/bench_live.py`` counts late frames against the media clock's deadlines (issue 20).

A synthetic series with known lateness: most frames taken up to 35 ms early (the microphone
pacer may take a frame a whole frame early), some a little late, and a known number more than
one frame (40 ms) late. The bench's figure must equal the count made here independently; an
origin fitted to the earliest frame (the old method) would have counted on-time frames.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_live", ROOT / "bench" / "bench_live.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_live"] = module
    spec.loader.exec_module(module)
    return module


def test_slip_fraction_counts_lateness_against_the_clock_deadlines() -> None:
    bench = _bench()
    rng = random.Random(7)
    start = 1000.0
    frames, lateness = [], []
    for i in range(400):
        t_ms = i * 40
        due = start + t_ms / 1000
        late_s = rng.uniform(-0.035, 0.030)
        if i % 37 == 5:
            late_s = rng.uniform(0.041, 0.200)
        lateness.append(late_s)
        frames.append((t_ms, due + late_s, due))
    counted = lateness[25:]  # the bench drops the first second (set-up)
    expected = sum(1 for x in counted if x > 0.040) / len(counted)
    assert expected > 0
    assert bench.slip_fraction(frames) == pytest.approx(expected)
    # The old method: the clock's start fitted to the earliest frame. Early frames move it,
    # and frames on time by the clock are counted as slipped.
    origin = min(w - t / 1000 for t, w, _ in frames[25:])
    old = sum(1 for t, w, _ in frames[25:] if w - (origin + t / 1000) > 0.040) / len(counted)
    assert old > 2 * expected


def test_every_frame_on_time_is_no_slip() -> None:
    bench = _bench()
    frames = [(i * 40, 5.0 + i * 0.04 - 0.039, 5.0 + i * 0.04) for i in range(100)]
    assert bench.slip_fraction(frames) == 0.0
