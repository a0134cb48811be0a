"""Bank audio files: Ogg/Opus made byte-reproducible, FLAC, and the format chosen by suffix."""

from __future__ import annotations

import itertools
import struct
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from runtime.core.audio import AudioFileError, read_mono, rms
from runtime.speechbank.bank import espeak_voice
from runtime.speechbank.bank_audio import (
    MAX_TURN_PAUSE_MS,
    OGG_SERIAL,
    encode_bank_audio,
    encode_turn,
    longest_pause_ms,
    ogg_crc,
    write_bank_audio,
)
from runtime.speechbank.kokoro_assets import kokoro_build_lock


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


def _speech_with_pause(pause_ms: int) -> np.ndarray:  # type: ignore[type-arg]
    """Two loud bursts with ``pause_ms`` of near-silence between (a full stop)."""
    quiet = np.zeros(24 * pause_ms, dtype=np.int16)
    return np.concatenate([_tone(0.8), quiet, _tone(0.8)])


def _quiet_runs_by_hand(audio: np.ndarray, phase: int) -> int:  # type: ignore[type-arg]
    """The longest run of 40 ms frames below RMS 300 between loud ones, counted in a plain
    loop (independent of the vectorized measure)."""
    levels = []
    for start in range(phase, len(audio) - 959, 960):
        x = audio[start:start + 960].astype(float)
        levels.append((sum(v * v for v in x) / 960) ** 0.5)
    loud = [i for i, v in enumerate(levels) if v >= 300]
    return max((b - a - 1 for a, b in itertools.pairwise(loud)), default=0) * 40


def test_longest_pause_is_what_a_40_ms_turn_detector_hears() -> None:
    for pause in (200, 500, 700):
        audio = _speech_with_pause(pause)
        want = max(_quiet_runs_by_hand(audio, 0), _quiet_runs_by_hand(audio, 480))
        assert longest_pause_ms(audio) == want
        assert pause - 80 <= want <= pause + 40
    assert longest_pause_ms(_tone()) == 0


def test_an_encoded_realization_never_pauses_as_long_as_a_turn_end(tmp_path: Path) -> None:
    """A pause the scripted agent's 640 ms hangover would take for the end of the caller's
    turn is cut until the decoded file pauses at most MAX_TURN_PAUSE_MS; a short one is left
    alone, byte for byte as the plain encoder writes it."""
    long_pause = _speech_with_pause(700)
    turn = write_bank_audio(tmp_path / "long.ogg", long_pause)
    back = read_mono(tmp_path / "long.ogg")
    assert longest_pause_ms(back) == turn.longest_pause_ms <= MAX_TURN_PAUSE_MS < 640
    assert turn.duration_ms == len(back) * 1000 // 24_000 < len(long_pause) * 1000 // 24_000
    short = _speech_with_pause(300)
    kept = encode_turn(short, ".ogg")
    assert kept.data == encode_bank_audio(short, ".ogg")
    assert kept.duration_ms == len(short) * 1000 // 24_000


def test_kokoro_builds_take_turns(tmp_path: Path) -> None:
    """A second build waits (and is told so) while the first holds the machine's lock, and
    goes on as soon as it is released."""
    order: list[str] = []
    waited: list[Path] = []

    def second() -> None:
        with kokoro_build_lock(on_wait=waited.append, root=tmp_path):
            order.append("second")

    with kokoro_build_lock(root=tmp_path):
        worker = threading.Thread(target=second)
        worker.start()
        worker.join(timeout=0.5)
        assert worker.is_alive()  # blocked on the lock
        order.append("first")
    worker.join(timeout=10)
    assert order == ["first", "second"]
    assert waited == [tmp_path / "kokoro-build.lock"]


def test_kokoro_builds_take_turns_in_the_order_they_asked(tmp_path: Path) -> None:
    """Builds waiting for the lock get it first come, first served (a plain file lock hands
    it to whichever poll comes first); a ticket left by a build that died is passed over."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    queue = tmp_path / "kokoro-build.queue"
    queue.mkdir()
    (queue / f"{1:020d}-{dead.pid}-1").touch()  # older than any ticket taken below
    order: list[str] = []

    def build(name: str) -> None:
        with kokoro_build_lock(root=tmp_path, poll_s=0.01):
            order.append(name)

    with kokoro_build_lock(root=tmp_path, poll_s=0.01):
        workers = []
        for name in ["a", "b", "c", "d"]:
            worker = threading.Thread(target=build, args=(name,))
            worker.start()
            workers.append(worker)
            deadline = time.monotonic() + 10  # the ticket is taken before the next asks
            while (len([t for t in queue.iterdir() if not t.name.startswith("0" * 19)])
                   < len(workers) and time.monotonic() < deadline):
                time.sleep(0.005)
        time.sleep(0.2)  # every waiter has polled many times
        assert order == []
    for worker in workers:
        worker.join(timeout=10)
    assert order == ["a", "b", "c", "d"]
    assert not list(queue.iterdir())  # no ticket left behind, the dead one's removed
