"""What the committed speech bank costs in the repository, and what a lower Opus bitrate would
cost in intelligibility (issue 19: the bank of 120 tasks must stay under 80 MB). Prints figures;
asserts nothing.

1. Today's bank: bytes on disk (Ogg files and manifests) and audio seconds over the bundled
   tasks, the bit rate, and the projection to the catalogue's 120 workflows at the same bytes
   per task.
2. Candidate Opus compression levels (libsndfile's 0 best … 1 smallest; the bank pins
   ``OPUS_COMPRESSION_LEVEL``): a seeded sample of bank utterances is decoded and re-encoded at
   each level (a SECOND generation: what re-encoding the committed files would give), then
   transcribed by faster-whisper tiny.en (the baseline's recognizer) and scored against the
   realization text (``grading.wer``). The anchor is the same recognizer on the committed files
   themselves, in the same run. With ``--fresh N``, N of the utterances are also synthesized
   again with the pinned Kokoro engine and encoded once at each level (a first generation, what
   rebuilding the bank would give); Kokoro costs about 0.8 s per audio second here.

Usage: .venv/bin/python bench/bench_bank_size.py [--utterances 80] [--levels 0.85 0.92 0.94]
       [--fresh 0] [--seed 0]
"""

from __future__ import annotations

import argparse
import io
import random
from pathlib import Path

import numpy as np
import soundfile as sf
from benchlib import load_line, load_now

from grading.wer import wer_counts
from runtime.core.audio import SAMPLE_RATE, read_mono
from runtime.core.spec import default_tasks_dir, load_tasks
from runtime.speech.asr import WhisperASR
from runtime.speechbank.bank_audio import OPUS_COMPRESSION_LEVEL, encode_bank_audio
from runtime.speechbank.bank_manifest import load_manifest

CATALOGUE_N = 120
LIMIT_MB = 80.0


def _bank_files(tasks_dir: Path) -> list[tuple[Path, str, float]]:
    """(file, realization text, seconds) for every bank item of the bundled tasks."""
    out = []
    for folder in sorted(p for p in tasks_dir.glob("apexv1_*") if (p / "bank").is_dir()):
        manifest = load_manifest(folder)
        if manifest is None:
            continue
        out += [(folder / item.file, item.text, item.duration_ms / 1000) for item in
                manifest.items]
    return out


def _encode(pcm: np.ndarray, rate: int, level: float) -> bytes:
    return encode_bank_audio(pcm, ".ogg", rate, opus_level=level)


def _decode(data: bytes) -> tuple[np.ndarray, int]:
    audio, rate = sf.read(io.BytesIO(data), dtype="int16")
    return audio, rate


def today(tasks_dir: Path) -> list[str]:
    folders = sorted(p for p in tasks_dir.glob("apexv1_*") if (p / "bank").is_dir())
    size = sum(f.stat().st_size for p in folders for f in (p / "bank").iterdir())
    seconds = sum(s for _f, _t, s in _bank_files(tasks_dir))
    per_task = size / max(1, len(folders))
    return [
        f"bank today: {len(folders)} tasks, {size / 1e6:.1f} MB, {seconds / 60:.1f} min of audio, "
        f"{size * 8 / seconds / 1000:.1f} kbit/s with files and manifests "
        f"(pinned level {OPUS_COMPRESSION_LEVEL})",
        f"projected to {CATALOGUE_N} tasks at {per_task / 1e6:.2f} MB a task: "
        f"{per_task * CATALOGUE_N / 1e6:.0f} MB (limit {LIMIT_MB:.0f} MB)",
    ]


def _wer(asr: WhisperASR, items: list[tuple[np.ndarray, int, str]]) -> tuple[float, int, int]:
    errors = words = 0
    for pcm, rate, text in items:
        counts = wer_counts(text, asr.transcribe(pcm, rate))
        errors += counts.errors
        words += counts.reference_words
    return errors / max(1, words), errors, words


def levels(args: argparse.Namespace, tasks_dir: Path) -> list[str]:
    files = _bank_files(tasks_dir)
    sample = random.Random(args.seed).sample(files, min(args.utterances, len(files)))
    seconds = sum(s for _f, _t, s in sample)
    all_seconds = sum(s for _f, _t, s in files)
    per_task_seconds = all_seconds / max(1, len({f.parent.parent for f, _t, _s in files}))
    asr = WhisperASR(threads=2)
    committed = [(read_mono(f), SAMPLE_RATE, t) for f, t, _s in sample]
    lines = [f"sample: {len(sample)} utterances, {seconds:.0f} s (seed {args.seed})"]
    rate_now = sum(f.stat().st_size for f, _t, _s in sample) * 8 / seconds / 1000
    wer_now, err, words = _wer(asr, committed)
    lines.append(f"anchor, the committed files: {rate_now:.1f} kbit/s, WER {wer_now:.2%} "
                 f"({err}/{words} words)")
    for level in args.levels:
        encoded = [(_encode(pcm, rate, level), text) for pcm, rate, text in committed]
        kbits = sum(len(d) for d, _t in encoded) * 8 / seconds / 1000
        mb = kbits * 1000 / 8 * per_task_seconds * CATALOGUE_N / 1e6
        wer, err, words = _wer(asr, [(*_decode(d), t) for d, t in encoded])
        lines.append(f"level {level:.2f}, re-encoded (2nd generation): {kbits:.1f} kbit/s, "
                     f"120 tasks about {mb:.0f} MB, WER {wer:.2%} ({err}/{words}); "
                     f"anchor {wer_now:.2%}")
    if args.fresh:
        lines += _fresh(args, asr, sample[:args.fresh], tasks_dir)
    return lines


def _fresh(args: argparse.Namespace, asr: WhisperASR, sample: list[tuple[Path, str, float]],
           tasks_dir: Path) -> list[str]:
    from runtime.speechbank.bank import utterance_seed
    from runtime.speechbank.tts_kokoro import KokoroEngine

    tasks = {t.id: t for t in load_tasks([tasks_dir])}
    engine = KokoroEngine()
    pcm_items = []
    for path, text, _s in sample:
        task = tasks[path.parent.parent.name]
        real = next(r for p in task.plans for r in p.realizations
                    if r.audio and Path(r.audio).name == path.name)
        persona = task.user.persona
        pcm_items.append((engine.synthesize(real.text, voice=persona.voice, rate=persona.rate,
                                            seed=utterance_seed(task.id, real.id)),
                          SAMPLE_RATE, text))
    seconds = sum(len(p) / r for p, r, _t in pcm_items)
    lines = [f"fresh Kokoro sample: {len(pcm_items)} utterances, {seconds:.0f} s"]
    for level in sorted({OPUS_COMPRESSION_LEVEL, *args.levels}):
        encoded = [(_encode(p, r, level), t) for p, r, t in pcm_items]
        kbits = sum(len(d) for d, _t in encoded) * 8 / seconds / 1000
        wer, err, words = _wer(asr, [(*_decode(d), t) for d, t in encoded])
        lines.append(f"level {level:.2f}, encoded once: {kbits:.1f} kbit/s, WER {wer:.2%} "
                     f"({err}/{words})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--utterances", type=int, default=80)
    parser.add_argument("--levels", type=float, nargs="+", default=[0.85, 0.92, 0.94])
    parser.add_argument("--fresh", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = load_now()
    tasks_dir = default_tasks_dir()
    for line in today(tasks_dir) + levels(args, tasks_dir):
        print(line, flush=True)
    print(load_line(start, own_threads=2))


if __name__ == "__main__":
    main()
