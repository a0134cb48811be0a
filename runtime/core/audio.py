"""Audio I/O for the runtime: PCM16 frames, resampling, and the stereo trace writer."""

from __future__ import annotations

import math
import os
import wave
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import soundfile as sf
import soxr

from runtime.core.durability import SYNCER
from runtime.core.memo import per_object

SAMPLE_RATE = 24_000
"""The runtime's one sample rate (user channel, agent channel and trace)."""
FRAME_MS = 40
FRAME_SAMPLES = SAMPLE_RATE * FRAME_MS // 1000

Pcm = npt.NDArray[np.int16]


class AudioFileError(Exception):
    """An audio file is missing, unreadable or empty; the message names it."""


def silence(n: int = FRAME_SAMPLES) -> Pcm:
    return np.zeros(n, dtype=np.int16)


SILENT_FRAME: Pcm = silence()
"""One read-only 40 ms frame of silence, shared by the media loop wherever a side is silent
(most frames of a run): no allocation per frame, and :func:`rms` knows it is 0."""
SILENT_FRAME.flags.writeable = False

STEADY_MAX_FRAMES = 25
"""The longest stretch of frames the virtual clock moves through in one step (1 s)."""

_SILENT_BLOCK: Pcm = silence(FRAME_SAMPLES * STEADY_MAX_FRAMES)
_SILENT_BLOCK.flags.writeable = False


def frames_before(t_ms: int, at_ms: int) -> int:
    """How many frames start at or after media time ``t_ms`` and before ``at_ms``."""
    return max(0, -(-(at_ms - t_ms) // FRAME_MS))


def silent_block(frames: int) -> Pcm:
    """``frames`` frames of silence (at most :data:`STEADY_MAX_FRAMES`), read-only and shared."""
    return _SILENT_BLOCK[:frames * FRAME_SAMPLES]


def is_silent_block(pcm: Pcm) -> bool:
    """``pcm`` came from :func:`silent_block` (known silent without looking at it)."""
    return pcm is _SILENT_BLOCK or pcm.base is _SILENT_BLOCK


def to_pcm16(samples: npt.NDArray[np.floating] | Pcm) -> Pcm:
    if samples.dtype == np.int16:
        return samples.astype(np.int16, copy=False)
    clipped = np.clip(np.asarray(samples, dtype=np.float64), -1.0, 1.0)
    return np.round(clipped * 32767.0).astype(np.int16)


def resample(samples: Pcm, from_rate: int, to_rate: int) -> Pcm:
    """High-quality resampling with soxr (never by hand)."""
    if from_rate == to_rate:
        return samples
    out = soxr.resample(samples.astype(np.float32) / 32768.0, from_rate, to_rate, quality="HQ")
    return to_pcm16(np.asarray(out))


def read_mono(path: Path, rate: int = SAMPLE_RATE) -> Pcm:
    """Read an audio file as mono PCM16 at ``rate``; a clear error names a bad file."""
    if not path.is_file():
        raise AudioFileError(f"{path}: audio file not found")
    try:
        data, file_rate = sf.read(str(path), dtype="int16", always_2d=True)
    except (sf.LibsndfileError, RuntimeError) as exc:
        raise AudioFileError(f"{path}: unreadable audio ({exc})") from None
    if data.shape[0] == 0:
        raise AudioFileError(f"{path}: audio file has no samples")
    mono = data.mean(axis=1).astype(np.int16) if data.shape[1] > 1 else data[:, 0]
    return resample(np.ascontiguousarray(mono), int(file_rate), rate)


def frames(samples: Pcm, frame: int = FRAME_SAMPLES) -> list[Pcm]:
    """Split into whole frames, zero-padding the last one."""
    pad = (-len(samples)) % frame
    if pad:
        samples = np.concatenate([samples, np.zeros(pad, dtype=np.int16)])
    return list(samples.reshape(-1, frame))


def rms(frame: Pcm) -> float:
    """Root mean square of PCM16 samples (a dot product: this runs for every frame of both
    channels, and ``np.mean`` of the squares cost a sixth of a virtual-clock run)."""
    n = len(frame)
    if not n or frame is SILENT_FRAME:
        return 0.0
    f = frame.astype(np.float64)
    return math.sqrt(float(f.dot(f)) / n)


VOICE_RMS = 300.0
"""Level (RMS of int16 samples, about -40 dBFS) at and above which a frame counts as voice and
below which it counts as quiet: the bank's pause tightening, the caller's quiet edges, the live
caller's speculative cut and the scripted agent's energy VAD all use this one threshold."""


def quiet_edges_ms(audio: Pcm, quiet_rms: float = VOICE_RMS) -> tuple[int, int]:
    """How long ``audio`` is quiet before its first and after its last frame louder than
    ``quiet_rms`` (whole 40 ms frames; a recording quiet throughout is all lead-in)."""
    levels = frame_levels(audio[:len(audio) // FRAME_SAMPLES * FRAME_SAMPLES])
    loud = [i for i, level in enumerate(levels) if level >= quiet_rms]
    if not loud:
        return len(levels) * FRAME_MS, 0
    return loud[0] * FRAME_MS, (len(levels) - 1 - loud[-1]) * FRAME_MS


def frame_levels(block: Pcm, frame: int = FRAME_SAMPLES) -> list[float]:
    """:func:`rms` of each whole frame of ``block``, equal to it bit for bit (the sum of
    squares of PCM16 samples is an exact integer either way). A frame-aligned slice of a
    read-only recording (the bank's decoded audio, shared by a process's runs) reads the
    levels of that recording, computed once."""
    if is_silent_block(block):
        return [0.0] * (len(block) // frame)
    base = block.base
    if (
        isinstance(base, np.ndarray) and not base.flags.writeable and base.ndim == 1
        and base.dtype == np.int16 and block.strides == base.strides
    ):
        offset = (block.ctypes.data - base.ctypes.data) // base.itemsize
        if offset % frame == 0 and frame == FRAME_SAMPLES:
            levels = per_object(_RECORDING_LEVELS, base,
                                lambda: _levels(base[:len(base) // frame * frame], frame), 4096)
            start = offset // frame
            return levels[start:start + len(block) // frame]
    return _levels(block, frame)


_RECORDING_LEVELS: dict[int, tuple[Any, list[float]]] = {}
"""Per read-only recording, the levels of its 40 ms frames."""


def _levels(block: Pcm, frame: int) -> list[float]:
    frames = block.reshape(-1, frame).astype(np.int64)
    sums = np.einsum("ij,ij->i", frames, frames)
    # Exact integer sums, then IEEE division and square root (correctly rounded, as in rms).
    levels: list[float] = np.sqrt(sums / frame).tolist()
    return levels


class TraceWriter:
    """Stereo PCM16 WAV (channel 0 = user, channel 1 = agent), written as the run goes.

    Frames are interleaved into one preallocated buffer and handed to the OS every
    ``flush_frames`` frames (about once a second of media time), so a killed process loses at
    most that much; the fsync that makes written audio survive a power cut happens off the
    media loop (:mod:`runtime.core.durability`), also after :meth:`close`. The file is written
    with the standard library's :mod:`wave` (a 44-byte header whose sizes are set at close;
    :func:`runtime.core.rundir.repair_wav_header` sets them after a crash): libsndfile's close
    fsynced the file a second time, on the media loop, once per run."""

    def __init__(self, path: Path, rate: int = SAMPLE_RATE, flush_frames: int = 25) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        # Both are closed in close(), which the run calls however it ends.
        self._raw = open(self._fd, "wb", closefd=False)  # noqa: SIM115
        self._file = wave.open(self._raw, "wb")  # noqa: SIM115
        self._file.setnchannels(2)
        self._file.setsampwidth(2)
        self._file.setframerate(rate)
        self._closed = False
        self._flush_samples = max(1, flush_frames) * (rate * FRAME_MS // 1000)
        self._buf = np.zeros((0, 2), dtype=np.int16)
        self._n = 0
        """Samples pending in ``_buf``."""

    def write(self, user: Pcm, agent: Pcm) -> None:
        """One frame of each channel, or a stretch of frames (the same length on both)."""
        n = len(user)
        if self._n + n > len(self._buf):
            grown = np.zeros((max(self._n + n, 2 * self._flush_samples), 2), dtype=np.int16)
            grown[:self._n] = self._buf[:self._n]
            self._buf = grown
        self._buf[self._n:self._n + n, 0] = user
        self._buf[self._n:self._n + n, 1] = agent
        self._n += n
        if self._n >= self._flush_samples:
            self.flush()

    def flush(self) -> None:
        """Hand the pending samples to the OS (no fsync)."""
        if self._n:
            self._file.writeframesraw(self._buf[:self._n].astype("<i2", copy=False).data)
            self._raw.flush()
            self._n = 0
            SYNCER.mark(self._fd)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.flush()
            self._file.close()  # sets the header's sizes
            self._raw.close()
            SYNCER.close_later(self._fd)  # the last fsync and the close, off the media loop


class StreamResampler:
    """Streaming soxr resampling of PCM16 mono from ``in_rate`` to ``out_rate``.

    Audio crosses an adapter 40 ms at a time; resampling each chunk on its own (``resample``)
    would restart the filter at every boundary (a click per frame and a length drift), so each
    direction of a session keeps one stream whose filter state spans the chunks. A pass-through
    when the rates match. ``flush`` returns the filter's tail and starts a fresh stream (call it
    at the end of a response so its last few milliseconds are not held back).
    """

    def __init__(self, in_rate: int, out_rate: int) -> None:
        self.in_rate = in_rate
        self.out_rate = out_rate
        self._stream = self._new()

    def _new(self) -> soxr.ResampleStream | None:
        if self.in_rate == self.out_rate:
            return None
        return soxr.ResampleStream(self.in_rate, self.out_rate, 1, dtype="int16", quality="HQ")

    def push(self, pcm: Pcm) -> Pcm:
        if self._stream is None:
            return pcm
        return np.asarray(self._stream.resample_chunk(pcm), dtype=np.int16)

    def flush(self) -> Pcm:
        if self._stream is None:
            return np.zeros(0, dtype=np.int16)
        tail = np.asarray(
            self._stream.resample_chunk(np.zeros(0, dtype=np.int16), last=True), dtype=np.int16
        )
        self._stream = self._new()
        return tail
