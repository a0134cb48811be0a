"""Audio files of the frozen speech bank: Ogg/Opus (compact, the default) or FLAC, by suffix.

The bank is committed, so its files must be small and reproducible byte for byte:

- ``.ogg``: Opus at a pinned compression level (about 23 kbit/s VBR for 24 kHz speech, roughly a
  tenth of FLAC; the bank of the 120 workflows must stay under 80 MB, and
  ``bench/bench_bank_size.py`` measured no loss of recognizer accuracy against the 45 kbit/s of
  level 0.85 that banks were built with until 2026-12-04). libsndfile gives every Ogg stream a
  random serial number, so the same audio would encode to different bytes each time;
  :func:`fix_ogg_serial` sets a fixed serial and recomputes each page's CRC, which makes the
  file a pure function of the samples.
- ``.flac``: lossless PCM16, deterministic as written.

Both are read back by :func:`runtime.core.audio.read_mono` (libsndfile decodes either).
"""

from __future__ import annotations

import io
import itertools
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import soundfile as sf

from runtime.core.audio import (
    FRAME_SAMPLES,
    SAMPLE_RATE,
    VOICE_RMS,
    AudioFileError,
    Pcm,
    frame_levels,
)

OPUS_COMPRESSION_LEVEL = 0.94
"""libsndfile's 0 (best) … 1 (smallest); 0.94 ≈ 23 kbit/s for Kokoro speech at 24 kHz."""
LEGACY_OGG_ENCODING = "Ogg/Opus level 0.85"
"""What every ``.ogg`` bank file was before manifests recorded their encoding."""
OGG_SERIAL = 0x41505856
"""Fixed Ogg bitstream serial number ("APXV")."""
BANK_SUFFIXES = (".ogg", ".flac")


def _crc_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else (r << 1)
        table.append(r & 0xFFFFFFFF)
    return tuple(table)


_CRC = _crc_table()


def ogg_crc(data: bytes) -> int:
    """The Ogg page checksum (CRC-32, polynomial 0x04C11DB7, no reflection, initial value 0)."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC[((crc >> 24) ^ byte) & 0xFF]
    return crc


def fix_ogg_serial(data: bytes, serial: int = OGG_SERIAL) -> bytes:
    """Rewrite every page of a single-stream Ogg file to ``serial``, with fresh CRCs."""
    out = bytearray(data)
    pos = 0
    while pos < len(out):
        if out[pos:pos + 4] != b"OggS" or pos + 27 > len(out):
            raise AudioFileError(f"not an Ogg stream at byte {pos}")
        segments = out[pos + 26]
        size = 27 + segments + sum(out[pos + 27:pos + 27 + segments])
        page = out[pos:pos + size]
        struct.pack_into("<I", page, 14, serial)
        struct.pack_into("<I", page, 22, 0)
        struct.pack_into("<I", page, 22, ogg_crc(bytes(page)))
        out[pos:pos + size] = page
        pos += size
    return bytes(out)


def bank_encoding(suffix: str) -> str:
    """How a bank file with this suffix is encoded today (recorded per manifest item)."""
    if suffix == ".ogg":
        return f"Ogg/Opus level {OPUS_COMPRESSION_LEVEL}"
    if suffix == ".flac":
        return "FLAC PCM16"
    raise AudioFileError(
        f"unsupported bank audio format '{suffix}': use one of {', '.join(BANK_SUFFIXES)}"
    )


def encode_bank_audio(audio: Pcm, suffix: str, rate: int = SAMPLE_RATE, *,
                      opus_level: float = OPUS_COMPRESSION_LEVEL) -> bytes:
    """The file bytes for ``audio`` in the format named by ``suffix`` (``.ogg`` or ``.flac``);
    ``opus_level`` other than the pinned one only for measuring (bench/bench_bank_size.py)."""
    buf = io.BytesIO()
    if suffix == ".ogg":
        sf.write(buf, audio, rate, format="OGG", subtype="OPUS", compression_level=opus_level)
        return fix_ogg_serial(buf.getvalue())
    if suffix == ".flac":
        sf.write(buf, audio, rate, format="FLAC", subtype="PCM_16")
        return buf.getvalue()
    raise AudioFileError(
        f"unsupported bank audio format '{suffix}': use one of {', '.join(BANK_SUFFIXES)}"
    )


def decode_bank_audio(data: bytes) -> Pcm:
    """The PCM16 samples of encoded bank file bytes (what the runtime will play)."""
    try:
        pcm, _rate = sf.read(io.BytesIO(data), dtype="int16", always_2d=True)
    except (sf.LibsndfileError, RuntimeError) as exc:
        raise AudioFileError(f"cannot decode bank audio: {exc}") from None
    return np.ascontiguousarray(pcm[:, 0])


def write_bank_audio(path: Path, audio: Pcm, rate: int = SAMPLE_RATE) -> BankAudio:
    """Encode a realization by suffix, its pauses kept under :data:`MAX_TURN_PAUSE_MS`
    (:func:`encode_turn`), and write it atomically (a crash never leaves half a file)."""
    try:
        turn = encode_turn(audio, path.suffix.lower(), rate)
    except AudioFileError as exc:
        raise AudioFileError(f"{path}: {exc}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(turn.data)
    tmp.replace(path)
    return turn


# --------------------------------------------------------------------------- pauses

def tighten_pauses(
    audio: Pcm,
    *,
    rate: int = SAMPLE_RATE,
    window_ms: int = 20,
    quiet_rms: float = VOICE_RMS,
    lead_ms: int = 120,
    trail_ms: int = 200,
    max_pause_ms: int = 480,
    crossfade_ms: int = 10,
) -> Pcm:
    """Trim quiet lead-in and tail to ``lead_ms``/``trail_ms`` and shorten every quiet stretch
    inside the utterance to ``max_pause_ms`` (its middle is cut, with a short crossfade).

    A frozen realization is one user turn: Kokoro pads each utterance with 0.3–0.7 s of quiet at
    both ends and can pause ~0.7 s at a full stop, which a turn detector (e.g. the scripted
    agent's 640 ms hangover) would take for the end of the turn. Deterministic; audio with no
    window above ``quiet_rms`` is returned unchanged (the bank's audibility check names it).
    """
    win = max(1, rate * window_ms // 1000)
    n_win = -(-len(audio) // win)
    if n_win == 0:
        return audio
    padded = np.zeros(n_win * win, dtype=np.float64)
    padded[: len(audio)] = audio
    energy = np.sqrt(np.mean(padded.reshape(n_win, win) ** 2, axis=1))
    loud = np.flatnonzero(energy >= quiet_rms)
    if len(loud) == 0:
        return audio
    start = max(0, int(loud[0]) * win - rate * lead_ms // 1000)
    end = min(len(audio), (int(loud[-1]) + 1) * win + rate * trail_ms // 1000)
    keep = rate * max_pause_ms // 1000 // 2
    fade = rate * crossfade_ms // 1000
    pieces: list[npt.NDArray[np.float64]] = []
    cursor = start
    for a, b in itertools.pairwise(loud):
        gap_from, gap_to = (int(a) + 1) * win, int(b) * win  # quiet windows between two loud
        if gap_to - gap_from > 2 * keep:
            pieces.append(audio[cursor:gap_from + keep + fade].astype(np.float64))
            cursor = gap_to - keep
    pieces.append(audio[cursor:end].astype(np.float64))
    out = pieces[0]
    ramp = np.linspace(1.0, 0.0, fade, endpoint=False) if fade else np.zeros(0)
    for nxt in pieces[1:]:
        if fade:
            mixed = out[-fade:] * ramp + nxt[:fade] * (1.0 - ramp)
            out = np.concatenate([out[:-fade], mixed, nxt[fade:]])
        else:
            out = np.concatenate([out, nxt])
    return np.round(out).clip(-32768, 32767).astype(np.int16)


# --------------------------------------------------------------------------- turn pauses

MAX_TURN_PAUSE_MS = 520
"""The longest quiet stretch a realization may hold inside it, as a turn detector with 40 ms
frames hears the decoded file: three frames short of the scripted agent's 640 ms hangover,
the shortest end-of-turn wait of any agent here. A longer pause ends the caller's turn in the
middle (the agent answers half an utterance). Kokoro's full stops, a 40 ms frame straddling
the end of a word, and lossy coding each lengthen a pause that :func:`tighten_pauses` cut to
480 ms in 20 ms windows; so the limit is checked on the encoded file."""


@dataclass(frozen=True)
class BankAudio:
    """An encoded realization: the file bytes, its duration and its longest inner pause."""

    data: bytes
    duration_ms: int
    longest_pause_ms: int


def longest_pause_ms(audio: Pcm, *, frame: int = FRAME_SAMPLES,
                     quiet_rms: float = VOICE_RMS) -> int:
    """The longest run of quiet frames between two loud ones, in ms, over both frame phases
    (from the first sample, and half a frame later): how long a turn detector that reads
    ``frame``-sample frames may hear the speaker pause inside the utterance."""
    longest = 0
    for phase in (0, frame // 2):
        n = (len(audio) - phase) // frame
        if n < 2:
            continue
        loud = np.flatnonzero(np.asarray(frame_levels(audio[phase:phase + n * frame], frame))
                              >= quiet_rms)
        if len(loud) >= 2:
            longest = max(longest, int(np.max(np.diff(loud))) - 1)
    return longest * frame * 1000 // SAMPLE_RATE


def encode_turn(audio: Pcm, suffix: str, rate: int = SAMPLE_RATE, *,
                max_pause_ms: int = MAX_TURN_PAUSE_MS) -> BankAudio:
    """Encode ``audio`` (:func:`encode_bank_audio`) so that the decoded file pauses no longer
    than ``max_pause_ms`` inside: while it does, the pauses of the source are cut 40 ms
    shorter (:func:`tighten_pauses`) and it is encoded again. Audio whose pauses cannot be
    brought under the limit (a pause of a few frames' length left) is an error."""
    cut = 480
    while True:
        data = encode_bank_audio(audio, suffix, rate)
        decoded = decode_bank_audio(data)
        pause = longest_pause_ms(decoded)
        if pause <= max_pause_ms:
            return BankAudio(data, len(decoded) * 1000 // rate, pause)
        cut -= 40
        if cut < 200:
            raise AudioFileError(
                f"a pause of {pause} ms inside the utterance stays above {max_pause_ms} ms "
                "however short its pauses are cut; check the synthesized audio")
        audio = tighten_pauses(audio, rate=rate, max_pause_ms=cut)
