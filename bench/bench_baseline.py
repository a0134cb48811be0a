"""Benchmarks for the cascaded baseline on this machine's CPU. Prints figures; asserts nothing.

1. ``asr``: faster-whisper tiny.en real-time factor (transcription seconds per audio second)
   over frozen bank utterances of the bundled tasks, model load time apart.
2. ``vad``: silero-vad (ONNX) real-time factor, streaming 40 ms frames.
3. ``latency``: the baseline's response latency in ``realtime`` clock mode on shipped tasks
   (``--tasks``), with ``--busy`` CPU-bound processes running beside them (another job on the
   CPU; default 1): for every user utterance the agent answered, user end of speech
   (``user.speech.end``) → agent audio start (``agent.speech.start``), in media time (= wall
   time in realtime mode); median, spread and p95 against the 1.5 s target, beside its anchor,
   the VAD's 800 ms end-of-utterance wait. The recognizer starts on the utterance at the VAD's
   300 ms pause, so its time overlaps the rest of that wait; policy and TTS run in a worker
   thread while the clock runs. A virtual-clock warm-up run per task first fills the
   agent-speech cache, as repeated campaigns do; ``--cold`` skips it.

Every run ends with the machine's load (``bench/benchlib.py``).
Each section is a function ``bench_<name>(args) -> list[str]`` (see ``bench/bench_speech.py``).
Usage: .venv/bin/python bench/bench_baseline.py [--sections asr,vad,latency] [--tasks A,B]
       [--busy N]
       [--utterances N] [--tts kokoro|espeak] [--cold]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from benchlib import load_line, load_now, spread

from runtime.agents.baseline import END_OF_UTTERANCE_MS
from runtime.core.audio import SAMPLE_RATE, Pcm, frames, read_mono
from runtime.core.events import AgentSpeechStart, UserSpeechEnd, UserSpeechStart, read_events
from runtime.core.spec import default_tasks_dir, find_task, load_tasks
from runtime.session.campaign import parse_agent_spec, run_one
from runtime.speech.asr import WhisperASR
from runtime.speech.vad import SileroVAD


def _bank_audio(limit: int) -> list[tuple[str, Pcm]]:
    items: list[tuple[str, Pcm]] = []
    for task in load_tasks([default_tasks_dir()]):
        for plan in task.plans:
            for real in plan.realizations:
                path = task.folder / real.audio
                if path.is_file():
                    items.append((real.text, read_mono(path)))
                if len(items) >= limit:
                    return items
    return items


def bench_asr(args: argparse.Namespace) -> list[str]:
    t0 = time.perf_counter()
    asr = WhisperASR(threads=args.threads)
    asr.load()
    load_s = time.perf_counter() - t0
    items = _bank_audio(args.utterances)
    asr.transcribe(items[0][1])  # warm-up
    audio_s = busy = 0.0
    per_call: list[float] = []
    for _text, pcm in items:
        t = time.perf_counter()
        asr.transcribe(pcm)
        dt = time.perf_counter() - t
        per_call.append(dt)
        busy += dt
        audio_s += len(pcm) / SAMPLE_RATE
    return [
        f"ASR  faster-whisper tiny.en int8, {args.threads} threads: load {load_s:.2f} s",
        f"ASR  {len(items)} bank utterances, {audio_s:.1f} s of audio: RTF {busy / audio_s:.3f}; "
        f"per utterance {spread([x * 1000 for x in per_call], '.0f', ' ms')}",
    ]


def bench_vad(args: argparse.Namespace) -> list[str]:
    items = _bank_audio(args.utterances)
    vad = SileroVAD()
    audio_s = 0.0
    t = time.perf_counter()
    for _text, pcm in items:
        for frame in frames(pcm):
            vad.push(frame)
        audio_s += len(pcm) / SAMPLE_RATE
    busy = time.perf_counter() - t
    return [f"VAD  silero ONNX, 40 ms frames over {audio_s:.1f} s of speech: "
            f"RTF {busy / audio_s:.4f}"]


def _latencies(run_dir: Path) -> list[int]:
    events = read_events(run_dir / "events.jsonl").events
    out: list[int] = []
    pending: int | None = None
    for ev in events:
        if isinstance(ev, UserSpeechEnd):
            pending = ev.t_media_ms
        elif isinstance(ev, UserSpeechStart):
            pending = None  # the user spoke again before the agent answered
        elif isinstance(ev, AgentSpeechStart) and pending is not None:
            out.append(ev.t_media_ms - pending)
            pending = None
    return out


def _burn(stop: Any) -> None:
    """Another job on the CPU: a pure-Python busy loop until told to stop."""
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x ^= i


def bench_latency(args: argparse.Namespace) -> list[str]:
    if args.tts:
        os.environ["APEX_BASELINE_TTS"] = args.tts
    factory = parse_agent_spec("baseline")
    lines: list[str] = []
    lat: list[int] = []
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    burners = [ctx.Process(target=_burn, args=(stop,), daemon=True) for _ in range(args.busy)]
    with tempfile.TemporaryDirectory() as tmp:
        for task_id in args.tasks.split(","):
            task = find_task(task_id.strip())
            if not args.cold:
                t = time.perf_counter()
                asyncio.run(run_one(task, factory, Path(tmp) / f"warm-{task.id}", seed=0,
                                    repeat=0))
                lines.append(f"warm-up virtual run of {task.id}: "
                             f"{time.perf_counter() - t:.1f} s wall")
        for b in burners:
            b.start()
        try:
            for task_id in args.tasks.split(","):
                task = find_task(task_id.strip())
                t = time.perf_counter()
                result = asyncio.run(run_one(task, factory, Path(tmp) / f"rt-{task.id}",
                                             seed=0, repeat=0, clock="realtime"))
                wall = time.perf_counter() - t
                got = _latencies(result.run_dir)
                lat += got
                lines.append(
                    f"realtime run of {task.id}: {result.end_reason}, "
                    f"{result.media_ms / 1000:.1f} s media in {wall:.1f} s wall, "
                    f"{len(got)} answers")
        finally:
            stop.set()
            for b in burners:
                b.join(timeout=5)
    lines.append(f"another job on the CPU during the realtime runs: {args.busy} busy "
                 "process(es)")
    if lat:
        p95 = float(np.percentile(lat, 95))
        lines.append(
            f"response latency (user end of speech -> agent audio) over the answers: "
            f"{spread(lat, '.0f', ' ms')}, p95 {p95:.0f} ms (target p95 <= 1500 ms); "
            f"anchor: the VAD's {END_OF_UTTERANCE_MS} ms end-of-utterance wait, ratio "
            f"median / wait {statistics.median(lat) / END_OF_UTTERANCE_MS:.2f}"
        )
    else:
        lines.append("response latency: the agent answered no user utterance")
    return lines


SECTIONS: dict[str, Callable[[argparse.Namespace], list[str]]] = {
    "asr": bench_asr,
    "vad": bench_vad,
    "latency": bench_latency,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default="asr,vad,latency")
    parser.add_argument("--tasks", default="apexv1_070,apexv1_001",
                        help="comma-separated tasks for the realtime latency runs")
    parser.add_argument("--busy", type=int, default=1,
                        help="CPU-bound processes running beside the realtime runs")
    parser.add_argument("--utterances", type=int, default=40)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tts", choices=["kokoro", "espeak"], default=None,
                        help="the agent's voice (default: Kokoro when its assets are set up)")
    parser.add_argument("--cold", action="store_true", help="no warm-up run (cold TTS cache)")
    args = parser.parse_args()
    start = load_now()
    for name in args.sections.split(","):
        for line in SECTIONS[name.strip()](args):
            print(line, flush=True)
    print(load_line(start, args.threads))


if __name__ == "__main__":
    main()
