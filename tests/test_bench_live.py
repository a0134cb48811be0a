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


# ------------------------------------------------------------------ --server-only (issue 18)


def test_cpu_per_call_from_two_proc_samples() -> None:
    bench = _bench()
    tck = __import__("os").sysconf("SC_CLK_TCK")
    # /proc/<pid>/stat: the command may hold spaces and parentheses.
    before = f"4242 (python (bench) x) S 1 2 3 4 5 6 7 8 9 10 {2 * tck} {1 * tck} 0 0 20 0"
    after = f"4242 (python (bench) x) S 1 2 3 4 5 6 7 8 9 10 {8 * tck} {3 * tck} 0 0 20 0"
    a, b = bench.proc_cpu_s(4242, before), bench.proc_cpu_s(4242, after)
    assert (a, b) == (pytest.approx(3.0), pytest.approx(11.0))
    # 8 CPU seconds over 10 s of wall time for 4 calls: 20 % of a core per call.
    assert bench.cpu_per_call(a, b, 10.0, 4) == pytest.approx(0.20)
    with pytest.raises(ValueError):
        bench.cpu_per_call(a, b, 0.0, 4)


def test_capacity_is_the_last_step_under_one_percent_before_the_first_failure() -> None:
    bench = _bench()

    def step(n: int, late: float) -> dict[str, object]:
        return {"calls": n, "late_median": late}

    steps = [step(8, 0.004), step(1, 0.0), step(4, 0.0), step(2, 0.0), step(12, 0.01),
             step(16, 0.002)]  # 16 passed by luck after 12 failed: not counted
    assert bench.capacity(steps) == 8
    assert bench.capacity([step(1, 0.02)]) == 0
    assert bench.capacity([step(1, 0.0), step(2, float("nan"))]) == 1
    assert bench.capacity([]) == 0


def test_late_fraction_pools_calls_after_their_set_up() -> None:
    bench = _bench()
    on_time = [(i * 40, 1.0 + i * 0.04 + 0.01, 1.0 + i * 0.04) for i in range(125)]
    late = [(t, due + (0.05 if i % 10 == 0 else 0.0), due)
            for i, (t, _, due) in enumerate(on_time)]
    pooled, worst = bench.late_fraction([on_time, late])
    assert worst == pytest.approx(10 / 100)  # frames 25..124: ten late (i % 10 == 0)
    assert pooled == pytest.approx(10 / 200)


def test_breakdown_attributes_a_synthetic_profile_to_components() -> None:
    bench = _bench()
    sp = ".venv/lib/python3.11/site-packages"
    raw = "\n".join([
        # py-spy --format raw: outermost first, sample count last.
        f"thread (0x7f01);_run (asyncio/events.py:80);decoder_worker "
        f"({sp}/aiortc/rtcrtpreceiver.py:90);decode ({sp}/aiortc/codecs/opus.py:50) 30",
        "thread (0x7f02);run (/work/main/runtime/session/orchestrator.py:10);push_audio "
        "(/work/main/runtime/user/live_user.py:700);push "
        "(/work/main/runtime/agents/scripted.py:40) 10",
        "thread (0x7f03);_work (/work/main/runtime/speech/asr_queue.py:70);transcribe "
        "(/work/main/runtime/speech/asr.py:120);resample (/work/main/runtime/core/audio.py:40) 5",
        f"thread (0x7f03);_work (/work/main/runtime/speech/asr_queue.py:70);transcribe "
        f"(/work/main/runtime/speech/asr.py:120);generate ({sp}/faster_whisper/transcribe.py:9) 25",
        "thread (0x7f02);_frame (/work/main/runtime/session/orchestrator.py:200);emit "
        f"(/work/main/runtime/core/events.py:390);model_dump_json ({sp}/pydantic/main.py:300) 10",
        "thread (0x7f02);_frame (/work/main/runtime/session/orchestrator.py:200);tick "
        "(/work/main/runtime/session/orchestrator.py:90) 15",
        "thread (0x7f04);_worker (concurrent/futures/thread.py:80) 5",
    ])
    samples = bench.parse_pyspy_raw(raw)
    assert len(samples) == 7
    assert samples[0][0][0] == (f"{sp}/aiortc/codecs/opus.py", "decode")  # innermost first
    counts = bench.attribute(samples)
    assert counts["Opus decode/encode"] == 30
    assert counts["VAD"] == 10
    assert counts["resampling"] == 5  # the ASR's resampler counts as resampling
    assert counts["ASR"] == 25
    assert counts["event log"] == 10  # pydantic called by the event log
    assert counts["orchestrator & participant"] == 15
    assert counts["event loops & thread hand-offs"] == 5
    # 100 samples of the Python threads that used 5 CPU seconds, 3 more seconds on native
    # threads, over 10 s with 2 calls.
    table = bench.breakdown(samples, 5.0, 3.0, 10.0, 2)
    rows = table["components"]
    assert rows["Opus decode/encode"]["cpu_s"] == pytest.approx(1.5)
    assert rows["ASR (CTranslate2's own threads)"]["cpu_s"] == pytest.approx(3.0)
    assert rows["ASR"]["core_per_call"] == pytest.approx(1.25 / 10 / 2)
    assert table["core_per_call"] == pytest.approx(8.0 / 10 / 2)
    assert sum(r["share"] for r in rows.values()) == pytest.approx(1.0, abs=1e-3)
