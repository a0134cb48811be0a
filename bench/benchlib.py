"""Shared printing for the benches (issue 20): the machine's load beside every run, repeated
measurements as median and spread, and each figure as a ratio to its anchor measured in the
same run. Benches import it as ``benchlib`` (``bench/`` is the script's own directory)."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence


def load_now() -> tuple[float, float, float]:
    """The 1/5/15-minute load averages now; pass the one taken at the start to
    :func:`load_line`."""
    return os.getloadavg()


def load_line(start: tuple[float, float, float], own_threads: int = 1) -> str:
    """``machine: N cores, load average a at start, b at end``, flagged BUSY when other work
    shared the CPU: the 1-minute figure at the start exceeded half the cores, or the one at the
    end exceeded the bench's own ``own_threads`` by more than half the cores."""
    end = os.getloadavg()
    cores = os.cpu_count() or 1
    busy = start[0] > 0.5 * cores or end[0] > own_threads + 0.5 * cores
    return (f"machine: {cores} cores, load average {start[0]:.2f} at start, {end[0]:.2f} at end"
            f" (bench's own threads: {own_threads})"
            + ("  (BUSY: figures are pessimistic)" if busy else ""))


def spread(values: Sequence[float], fmt: str = ".2f", unit: str = "") -> str:
    """``median M (min a, max b, n=N)`` of repeated measurements."""
    med, lo, hi = statistics.median(values), min(values), max(values)
    return (f"median {med:{fmt}}{unit} (min {lo:{fmt}}{unit}, max {hi:{fmt}}{unit}, "
            f"n={len(values)})")


def ratio_line(figure: str, anchor: str, value: float, anchor_value: float) -> str:
    """``ratio: figure / anchor = x`` (medians of the same run)."""
    return f"ratio: {figure} / {anchor} = {value / anchor_value:.2f}"
