"""Streaming voice-activity detection: one :class:`VAD` seam, silero-vad (ONNX) behind it.

The model is ``silero_vad/data/silero_vad.onnx`` from the PyPI package ``silero-vad==6.2.3``
(MIT), run with onnxruntime directly: the package's own wrapper needs torch, this one needs
only numpy. ``APEX_SILERO_VAD_ONNX`` points at another copy of the file.

One ONNX session is loaded per process on first use and shared (onnxruntime sessions are
safe to call from several threads); each :class:`SileroVAD` stream keeps its own recurrent
state, so every conversation has its own detector. Frames arrive as the runtime's 40 ms of
PCM16 at 24 kHz; they are resampled to 16 kHz with a streaming soxr resampler and cut into
the 512-sample (32 ms) chunks the model takes.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt
import soxr

from runtime.core.audio import SAMPLE_RATE, Pcm

VAD_RATE = 16_000
CHUNK = 512
"""Samples per model call at 16 kHz (32 ms)."""
CONTEXT = 64
"""Samples of the previous chunk the model sees in front of each chunk."""
CHUNK_MS = CHUNK * 1000 // VAD_RATE

VadEvent = Literal["onset", "pause", "end"]

VAD_PACKAGE = "silero-vad==6.2.3"


class VADError(Exception):
    """The detector cannot run; the message names what is missing and how to fix it."""


class VAD(Protocol):
    """Frame-by-frame end-of-utterance detection on the user channel."""

    in_speech: bool

    def push(self, frame: Pcm) -> VadEvent | None:
        """One frame of PCM16 at :data:`~runtime.core.audio.SAMPLE_RATE`: ``"onset"`` when speech
        starts, ``"end"`` when an utterance has ended, ``"pause"`` (only from a detector
        built to report pauses) when the silence that may end it has lasted the pause time,
        else None."""
        ...

    def reset(self) -> None: ...


def silero_onnx_path() -> Path:
    """The silero-vad ONNX file (``APEX_SILERO_VAD_ONNX`` or the installed package's)."""
    override = os.environ.get("APEX_SILERO_VAD_ONNX")
    if override:
        path = Path(override)
        if not path.is_file():
            raise VADError(f"APEX_SILERO_VAD_ONNX={override}: no such file")
        return path
    # find_spec on a top-level package locates it without importing it (which needs torch).
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        raise VADError(
            f"silero-vad is not installed: pip install {VAD_PACKAGE} (its ONNX model is used), "
            "or set APEX_SILERO_VAD_ONNX to silero_vad.onnx"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "silero_vad.onnx"
    if not path.is_file():
        raise VADError(f"{path}: missing from the installed {VAD_PACKAGE}; reinstall it")
    return path


_session: Any = None
_session_lock = threading.Lock()


def shared_silero_session() -> Any:
    """The process-wide onnxruntime session for silero-vad, created on the first call."""
    global _session
    with _session_lock:
        if _session is None:
            try:
                # No type information ships with onnxruntime.
                import onnxruntime  # type: ignore[import-untyped]
            except ImportError as exc:
                raise VADError(
                    f"onnxruntime is not installed ({exc}); pip install onnxruntime==1.31.1"
                ) from None
            path = silero_onnx_path()
            opts = onnxruntime.SessionOptions()
            opts.inter_op_num_threads = 1
            opts.intra_op_num_threads = 1
            try:
                _session = onnxruntime.InferenceSession(
                    str(path), sess_options=opts, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # onnxruntime raises its own untyped errors
                raise VADError(f"cannot load the silero-vad model {path}: {exc}") from None
        return _session


class SileroVAD:
    """Hysteresis on silero's speech probability: onset after ``min_speech_ms`` of chunks
    above ``threshold``; end after ``min_silence_ms`` of chunks below ``threshold - 0.15``.

    Digital silence (an all-zero chunk) is not sent to the model: it scores 0 and resets the
    recurrent state, which keeps long silent stretches cheap and runs deterministic.
    """

    def __init__(
        self, *, threshold: float = 0.5, min_speech_ms: int = 96, min_silence_ms: int = 800,
        pause_ms: int | None = None, session: Any = None,
    ) -> None:
        self.threshold = threshold
        self.neg_threshold = max(0.01, threshold - 0.15)
        self.min_speech_chunks = max(1, -(-min_speech_ms // CHUNK_MS))
        self.min_silence_chunks = max(1, -(-min_silence_ms // CHUNK_MS))
        self.pause_chunks = (
            None if pause_ms is None else max(1, -(-pause_ms // CHUNK_MS))
        )
        """With ``pause_ms``: ``"pause"`` once a silence inside an utterance has lasted that
        long (the utterance's words are all in; ``"end"`` follows unless speech resumes)."""
        self._session = session if session is not None else shared_silero_session()
        self.in_speech = False
        self.last_probability = 0.0
        self.reset()

    def reset(self) -> None:
        self.in_speech = False
        self._above = 0
        self._below = 0
        self._pending = np.zeros(0, dtype=np.float32)
        self._resampler = soxr.ResampleStream(SAMPLE_RATE, VAD_RATE, 1, dtype="float32",
                                              quality="HQ")
        self._reset_model()

    def _reset_model(self) -> None:
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        self._context = np.zeros((1, CONTEXT), dtype=np.float32)

    def probability(self, chunk: npt.NDArray[np.float32]) -> float:
        """Speech probability of one 512-sample chunk at 16 kHz (advances the state)."""
        if not np.any(np.abs(chunk) > 1e-4):
            self._reset_model()
            return 0.0
        x = np.concatenate([self._context, chunk.reshape(1, CHUNK)], axis=1)
        out, state = self._session.run(
            None, {"input": x, "state": self._state, "sr": np.array(VAD_RATE, dtype=np.int64)}
        )
        self._state = state
        self._context = x[:, -CONTEXT:]
        return float(out[0][0])

    def push(self, frame: Pcm) -> VadEvent | None:
        samples = frame.astype(np.float32) / 32768.0
        resampled = self._resampler.resample_chunk(samples)
        self._pending = np.concatenate([self._pending, np.asarray(resampled, dtype=np.float32)])
        event: VadEvent | None = None
        while len(self._pending) >= CHUNK:
            chunk, self._pending = self._pending[:CHUNK], self._pending[CHUNK:]
            p = self.probability(chunk)
            self.last_probability = p
            if not self.in_speech:
                self._above = self._above + 1 if p >= self.threshold else 0
                if self._above >= self.min_speech_chunks:
                    self.in_speech, self._below = True, 0
                    event = "onset"
            else:
                self._below = self._below + 1 if p < self.neg_threshold else 0
                if self._below == self.pause_chunks and self._below < self.min_silence_chunks:
                    event = "pause" if event is None else event
                if self._below >= self.min_silence_chunks:
                    self.in_speech, self._above = False, 0
                    event = "end" if event in (None, "pause") else event
        return event
