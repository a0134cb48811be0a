"""Speech benchmarks on this machine's CPU. Prints figures; asserts nothing.

Sections (each a function ``bench_<name>(args) -> list[str]`` registered in ``SECTIONS``; add new
ones the same way):

1. ``tts``: Kokoro-82M real-time factor (synthesis seconds per audio second) on 2 threads over
   realization texts of the bundled tasks, after a warm-up utterance; model load time apart.
2. ``asr``: ASR real-time factor (to be added with the ASR interface).
3. ``baseline``: the baseline agent's median response latency, user end of speech → agent audio
   start, in realtime mode (to be added with the baseline agent).

Needs the Kokoro assets (``make speech-assets``).
Usage: .venv/bin/python bench/bench_speech.py [--sections tts] [--utterances N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from runtime.audio import SAMPLE_RATE
from runtime.bank import utterance_seed
from runtime.spec import default_tasks_dir, load_tasks
from runtime.tts_kokoro import KokoroEngine


def bench_tts(args: argparse.Namespace) -> list[str]:
    engine = KokoroEngine(threads=args.threads)
    t0 = time.perf_counter()
    engine.load()
    load_s = time.perf_counter() - t0
    tasks = load_tasks([default_tasks_dir()])
    items = [(t, r) for t in tasks for p in t.plans for r in p.realizations][: args.utterances]
    first = items[0]
    engine.synthesize(first[1].text, voice=first[0].user.persona.voice, rate=1.0, seed=0)
    rtfs: list[float] = []
    audio_s = synth_s = 0.0
    for task, real in items:
        t0 = time.perf_counter()
        pcm = engine.synthesize(real.text, voice=task.user.persona.voice,
                                rate=task.user.persona.rate, seed=utterance_seed(task.id, real.id))
        elapsed = time.perf_counter() - t0
        seconds = len(pcm) / SAMPLE_RATE
        rtfs.append(elapsed / seconds)
        audio_s += seconds
        synth_s += elapsed
    return [
        f"Kokoro-82M, torch CPU, {args.threads} threads: model load {load_s:.1f} s",
        f"  {len(items)} utterances, {audio_s:.1f} s of audio in {synth_s:.1f} s: "
        f"RTF {synth_s / audio_s:.2f} overall, median {statistics.median(rtfs):.2f}, "
        f"worst {max(rtfs):.2f}",
    ]


SECTIONS: dict[str, Callable[[argparse.Namespace], list[str]]] = {
    "tts": bench_tts,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="+", choices=sorted(SECTIONS),
                        default=list(SECTIONS))
    parser.add_argument("--utterances", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    for name in args.sections:
        print(f"== {name}")
        for line in SECTIONS[name](args):
            print(line)


if __name__ == "__main__":
    main()
