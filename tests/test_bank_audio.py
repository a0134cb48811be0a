"""Bank audio files: Ogg/Opus made byte-reproducible, FLAC, and the format chosen by suffix."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from runtime.core.audio import AudioFileError, read_mono, rms
from runtime.speechbank.bank import espeak_voice
from runtime.speechbank.bank_audio import OGG_SERIAL, encode_bank_audio, ogg_crc, write_bank_audio


def _tone(seconds: float = 1.5) -> np.ndarray:  # type: ignore[type-arg]
    t = np.arange(int(24_000 * seconds)) / 24_000
    wave = 0.3 * np.sin(2 * np.pi * 220 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
    return np.round(wave * 32767).astype(np.int16)


def _pages(data: bytes) -> list[bytes]:
    pages, pos = [], 0
    while pos < len(data):
        segments = data[pos + 26]
        size = 27 + segments + sum(data[pos + 27:pos + 27 + segments])
        pages.append(data[pos:pos + size])
        pos += size
    return pages


def test_ogg_opus_is_byte_identical_with_valid_page_checksums() -> None:
    audio = _tone()
    first, second = encode_bank_audio(audio, ".ogg"), encode_bank_audio(audio, ".ogg")
    assert first == second  # libsndfile alone picks a random stream serial each time
    pages = _pages(first)
    assert pages and all(p[:4] == b"OggS" for p in pages)
    for page in pages:
        assert struct.unpack_from("<I", page, 14)[0] == OGG_SERIAL
        blank = bytearray(page)
        blank[22:26] = b"\0\0\0\0"
        assert ogg_crc(bytes(blank)) == struct.unpack_from("<I", page, 22)[0]
    assert len(first) < audio.nbytes / 4  # against raw PCM16


def test_written_files_read_back_at_24khz(tmp_path: Path) -> None:
    audio = _tone()
    for name in ("a.ogg", "a.flac"):
        write_bank_audio(tmp_path / "bank" / name, audio)
        back = read_mono(tmp_path / "bank" / name)
        assert len(back) == len(audio)
        assert abs(rms(back) - rms(audio)) / rms(audio) < 0.05
    assert np.array_equal(read_mono(tmp_path / "bank" / "a.flac"), audio)
    assert not list((tmp_path / "bank").glob(".*.tmp"))


def test_unknown_suffix_is_named(tmp_path: Path) -> None:
    with pytest.raises(AudioFileError, match=r"a\.mp3: unsupported bank audio format '\.mp3'"):
        write_bank_audio(tmp_path / "a.mp3", _tone(0.1))


def test_kokoro_voice_names_map_to_espeak_voices() -> None:
    assert espeak_voice("af_heart") == "en-us+f3"
    assert espeak_voice("am_michael") == "en-us+m3"
    assert espeak_voice("bf_emma") == "en-gb+f3"
    assert espeak_voice("en-gb+f2") == "en-gb+f2"  # espeak names pass through
