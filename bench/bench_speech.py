"""Speech benchmarks on this machine's CPU. Prints figures; asserts nothing.

Sections (each a function ``bench_<name>(args) -> list[str]`` registered in ``SECTIONS``; add new
ones the same way):

Every figure is printed beside its anchor measured in the same run, with the machine's load
(``bench/benchlib.py``); each pass over the utterances is repeated ``--repeats`` times (median and
spread), wrapper and anchor alternating.

1. ``tts``: Kokoro-82M real-time factor (synthesis seconds per audio second) on 2 threads over
   realization texts of the bundled tasks, through
   :class:`runtime.speechbank.tts_kokoro.KokoroEngine`,
   after a warm-up utterance per voice; model load time apart. Anchor: ``kokoro.KPipeline``
   called directly on the same texts, voices, speeds and seeds with the same loaded model and
   voice files (the same work without our wrapper's locking, checks and pause tightening).
2. ``asr``: faster-whisper tiny.en real-time factor over frozen bank utterances through
   :class:`runtime.speech.asr.WhisperASR`. Anchor: ``faster_whisper.WhisperModel.transcribe``
   on the same weights, threads and decoding settings, given audio already resampled to 16 kHz.
3. ``baseline``: see ``bench/bench_baseline.py``.

Needs the Kokoro assets (``make speech-assets``) and the Whisper weights (``make setup``).
Usage: .venv/bin/python bench/bench_speech.py [--sections tts asr] [--utterances N] [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from bench_baseline import _bank_audio
from benchlib import load_line, load_now, ratio_line, spread

from runtime.core.audio import SAMPLE_RATE
from runtime.core.spec import default_tasks_dir, load_tasks
from runtime.speechbank.bank import utterance_seed
from runtime.speechbank.tts_kokoro import KokoroEngine


def _passes(args: argparse.Namespace, ours: Callable[[], tuple[float, float]],
            anchor: Callable[[], tuple[float, float]]) -> list[list[tuple[float, float]]]:
    """``--repeats`` timed passes of each (seconds, audio seconds), alternating which goes
    first so that a drift in load falls on both."""
    out: list[list[tuple[float, float]]] = [[], []]
    for r in range(args.repeats):
        order = [(0, ours), (1, anchor)] if r % 2 == 0 else [(1, anchor), (0, ours)]
        for i, run in order:
            out[i].append(run())
    return out


def _report(label: str, anchor_label: str, ours: list[tuple[float, float]],
            anchor: list[tuple[float, float]]) -> list[str]:
    our_s, anchor_s = [s for s, _ in ours], [s for s, _ in anchor]
    our_rtf, anchor_rtf = [s / a for s, a in ours], [s / a for s, a in anchor]
    return [
        f"  {label}: RTF {spread(our_rtf, '.3f')}; seconds per pass {spread(our_s)}",
        f"  anchor, {anchor_label}: RTF {spread(anchor_rtf, '.3f')}; seconds per pass "
        f"{spread(anchor_s)}",
        "  " + ratio_line("wrapper seconds", "anchor seconds (same utterances)",
                          statistics.median(our_s), statistics.median(anchor_s)),
    ]


def bench_tts(args: argparse.Namespace) -> list[str]:
    import torch

    from runtime.speechbank.kokoro_assets import KOKORO_REPO_ID, import_kokoro
    from runtime.speechbank.tts_kokoro import _load

    engine = KokoroEngine(threads=args.threads)
    t0 = time.perf_counter()
    engine.load()
    load_s = time.perf_counter() - t0
    loaded = _load(engine.paths, args.threads)  # the very model object the wrapper uses
    tasks = load_tasks([default_tasks_dir()])
    items = [(real.text, t.user.persona.voice, t.user.persona.rate, utterance_seed(t.id, real.id))
             for t in tasks for p in t.plans for real in p.realizations][: args.utterances]
    kokoro = import_kokoro()
    pipelines: dict[str, Any] = {}
    packs: dict[str, Any] = {}
    for _text, voice, _rate, _seed in items:
        if voice[0] not in pipelines:
            pipelines[voice[0]] = kokoro.KPipeline(lang_code=voice[0], repo_id=KOKORO_REPO_ID,
                                                   model=loaded.kmodel)
        if voice not in packs:
            packs[voice] = torch.load(loaded.voice_files[voice], map_location="cpu",
                                      weights_only=True).float()

    def raw(text: str, voice: str, rate: float, seed: int) -> int:
        torch.manual_seed(seed)
        chunks = [r.audio for r in pipelines[voice[0]](text, voice=packs[voice], speed=rate)
                  if r.audio is not None]
        return sum(len(c) for c in chunks)

    def ours() -> tuple[float, float]:
        t = time.perf_counter()
        samples = sum(len(engine.synthesize(x, voice=v, rate=r, seed=s)) for x, v, r, s in items)
        return time.perf_counter() - t, samples / SAMPLE_RATE

    def anchor() -> tuple[float, float]:
        t = time.perf_counter()
        samples = sum(raw(*item) for item in items)
        return time.perf_counter() - t, samples / SAMPLE_RATE

    for voice in packs:  # warm-up: one utterance per voice, both paths
        text = next(x for x, v, _r, _s in items if v == voice)
        engine.synthesize(text, voice=voice, rate=1.0, seed=0)
        raw(text, voice, 1.0, 0)
    mine, theirs = _passes(args, ours, anchor)
    return [
        f"Kokoro-82M, torch CPU, {args.threads} threads: model load {load_s:.1f} s; "
        f"{len(items)} utterances ({mine[0][1]:.1f} s of audio after pause tightening, "
        f"{theirs[0][1]:.1f} s raw) x {args.repeats} passes each",
        *_report("KokoroEngine.synthesize", "kokoro.KPipeline direct", mine, theirs),
    ]


def bench_asr(args: argparse.Namespace) -> list[str]:
    from faster_whisper import WhisperModel  # type: ignore[import-untyped]

    from runtime.core.audio import resample
    from runtime.speech.asr import WHISPER_RATE, WhisperASR, collapse_repeats, whisper_model_dir

    folder = whisper_model_dir()
    t0 = time.perf_counter()
    asr = WhisperASR(folder, threads=args.threads)
    asr.load()
    load_s = time.perf_counter() - t0
    model = WhisperModel(str(folder), device="cpu", compute_type="int8",
                         cpu_threads=args.threads, num_workers=1, local_files_only=True)
    items = [pcm for _text, pcm in _bank_audio(args.utterances)]
    audio_s = sum(len(pcm) for pcm in items) / SAMPLE_RATE
    inputs = [resample(pcm, SAMPLE_RATE, WHISPER_RATE).astype(np.float32) / 32768.0
              for pcm in items]

    def raw(samples: np.ndarray[Any, Any]) -> str:
        segments, _info = model.transcribe(
            samples, language="en", beam_size=1, temperature=0.0,
            condition_on_previous_text=False, without_timestamps=True, vad_filter=False,
            no_speech_threshold=None, log_prob_threshold=None, compression_ratio_threshold=None,
            max_new_tokens=min(220, 16 + int(8 * len(samples) / WHISPER_RATE)))
        return " ".join(seg.text.strip() for seg in segments)

    def ours() -> tuple[float, float]:
        t = time.perf_counter()
        for pcm in items:
            asr.transcribe(pcm)
        return time.perf_counter() - t, audio_s

    def anchor() -> tuple[float, float]:
        t = time.perf_counter()
        for samples in inputs:
            raw(samples)
        return time.perf_counter() - t, audio_s

    asr.transcribe(items[0])  # warm-up, both paths
    raw(inputs[0])
    same = sum(asr.transcribe(pcm) == collapse_repeats(" ".join(raw(x).split()))
               for pcm, x in zip(items, inputs, strict=True))
    mine, theirs = _passes(args, ours, anchor)
    return [
        f"ASR faster-whisper tiny.en int8, {args.threads} threads: load {load_s:.2f} s; "
        f"{len(items)} bank utterances, {audio_s:.1f} s of audio, x {args.repeats} passes each; "
        f"same transcript from both paths for {same}/{len(items)}",
        *_report("WhisperASR.transcribe", "WhisperModel.transcribe direct", mine, theirs),
    ]


SECTIONS: dict[str, Callable[[argparse.Namespace], list[str]]] = {
    "tts": bench_tts,
    "asr": bench_asr,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="+", choices=sorted(SECTIONS),
                        default=list(SECTIONS))
    parser.add_argument("--utterances", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    start = load_now()  # before any section: later sections' own start includes earlier ones
    for name in args.sections:
        print(f"== {name}", flush=True)
        lines = SECTIONS[name](args)
        print(load_line(start, args.threads))
        for line in lines:
            print(line, flush=True)


if __name__ == "__main__":
    main()
