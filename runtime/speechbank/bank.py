"""The frozen speech bank (appendix B.2): compiling realizations to audio, and verifying it.

A TTS engine turns realization text into audio once, offline; the runtime only ever plays the
frozen files. ``apex-voice bank build`` writes ``tasks/<id>/bank/<realization>.ogg`` (Ogg/Opus;
``.flac`` also works: the realization's ``audio`` path picks the format, see
:mod:`runtime.speechbank.bank_audio`) plus ``bank/manifest.json`` (text, duration, sample rate,
sha256 per
file). The committed bank is synthesized by :class:`runtime.speechbank.tts_kokoro.KokoroEngine`.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Protocol

import numpy as np
import soundfile as sf

from runtime.core.audio import SAMPLE_RATE, AudioFileError, Pcm, read_mono, resample, rms
from runtime.core.spec import TaskSpec
from runtime.speechbank.bank_audio import (
    LEGACY_OGG_ENCODING,
    MAX_TURN_PAUSE_MS,
    bank_encoding,
    longest_pause_ms,
    write_bank_audio,
)
from runtime.speechbank.bank_manifest import (
    BankItem,
    BankManifest,
    load_manifest,
    save_manifest,
    sha256_file,
)


class TTSError(Exception):
    """Speech synthesis failed; the message names the engine, voice or text at fault."""


class TTSEngine(Protocol):
    """One seam for every speech synthesizer (Kokoro-82M for the bank, espeak-ng for tests)."""

    name: str

    def describe(self) -> str:
        """The pinned engine configuration recorded in the manifest."""
        ...

    def synthesize(self, text: str, *, voice: str, rate: float, seed: int) -> Pcm:
        """Mono PCM16 at :data:`SAMPLE_RATE`."""
        ...


_KOKORO_VOICE = re.compile(r"(?P<lang>[ab])(?P<sex>[fm])_[a-z]+")


def espeak_voice(voice: str) -> str:
    """Persona voices name Kokoro voices (``af_heart``: American, female); espeak-ng speaks them
    with the nearest espeak voice (``en-us+f3``). Other names pass through unchanged."""
    m = _KOKORO_VOICE.fullmatch(voice)
    if m is None:
        return voice
    return f"{'en-us' if m['lang'] == 'a' else 'en-gb'}+{m['sex']}3"


class EspeakEngine:
    """Debian's espeak-ng: fast, robotic and fully deterministic. Good for tests and CI."""

    name = "espeak-ng"

    def __init__(self, binary: str = "espeak-ng") -> None:
        self._binary = binary

    def _path(self) -> str:
        found = shutil.which(self._binary)
        if found is None:
            raise TTSError(
                f"'{self._binary}' not found: install Debian's espeak-ng "
                "(`apt-get install espeak-ng`; `make test` does this when run as root)"
            )
        return found

    def describe(self) -> str:
        out = subprocess.run([self._path(), "--version"], capture_output=True, text=True)
        return out.stdout.strip().splitlines()[0] if out.stdout else "espeak-ng"

    def synthesize(self, text: str, *, voice: str, rate: float, seed: int) -> Pcm:
        del seed  # espeak-ng has no randomness
        voice = espeak_voice(voice)
        words_per_minute = str(round(175 * rate))
        proc = subprocess.run(
            [self._path(), "-v", voice, "-s", words_per_minute, "--stdout", text],
            capture_output=True,
        )
        if proc.returncode != 0 or not proc.stdout:
            detail = proc.stderr.decode(errors="replace").strip()
            raise TTSError(f"espeak-ng failed for voice '{voice}': {detail or 'no audio'}")
        data, rate_in = sf.read(io.BytesIO(proc.stdout), dtype="int16")
        return resample(np.asarray(data, dtype=np.int16), int(rate_in), SAMPLE_RATE)


def utterance_seed(task_id: str, realization_id: str) -> int:
    digest = hashlib.sha256(f"{task_id}|{realization_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _check_audible(audio: Pcm, what: str) -> None:
    if len(audio) == 0 or rms(audio) < 30.0:
        raise TTSError(f"{what} synthesized to silence; check its text and voice")


def item_encoding(item: BankItem) -> str:
    """The item's recorded encoding; items written before encodings were recorded are
    ``.ogg`` files at level 0.85 (or FLAC)."""
    if item.encoding is not None:
        return item.encoding
    suffix = Path(item.file).suffix.lower()
    return LEGACY_OGG_ENCODING if suffix == ".ogg" else bank_encoding(suffix)


def _current_encoding(task: TaskSpec, item: BankItem, target: Path,
                      log: list[str] | None) -> BankItem:
    """A kept item in today's encoding with its pauses under the limit
    (:data:`MAX_TURN_PAUSE_MS`): a file in an older encoding, or one that pauses too long, is
    decoded and encoded again (a further generation, recorded in ``reencoded_from``; its
    pauses cut, :func:`~runtime.speechbank.bank_audio.encode_turn`) instead of synthesized
    afresh."""
    want = bank_encoding(target.suffix.lower())
    have = item_encoding(item)
    pause = item.longest_pause_ms
    try:
        if have == want:
            if pause is None:
                pause = longest_pause_ms(read_mono(target))
            if pause <= MAX_TURN_PAUSE_MS:
                return item.model_copy(update={"encoding": want, "longest_pause_ms": pause})
        turn = write_bank_audio(target, read_mono(target))
    except AudioFileError as exc:
        raise TTSError(f"{task.id}: realization '{item.realization}': {exc}") from None
    if log is not None:
        why = (f"{have} -> {want}" if have != want
               else f"a {pause} ms pause cut to {turn.longest_pause_ms} ms")
        log.append(f"{task.id}: re-encoded {item.realization} ({why})")
    return item.model_copy(update={
        "encoding": want, "sha256": sha256_file(target), "duration_ms": turn.duration_ms,
        "longest_pause_ms": turn.longest_pause_ms, "reencoded_from": item.reencoded_from or have,
    })


def build_bank(
    task: TaskSpec, engine: TTSEngine, *, force: bool = False, log: list[str] | None = None
) -> BankManifest:
    """Synthesize every realization of ``task``; unchanged items are kept (re-encoded when
    their file is in an older encoding, :func:`_current_encoding`). The manifest is saved after
    each new item, so an interrupted build resumes where it stopped."""
    folder = task.folder
    old = load_manifest(folder)
    described = engine.describe()
    reuse = old is not None and old.engine == described and not force
    items: list[BankItem] = []
    pending = {i.realization: i for i in old.items} if (old is not None and reuse) else {}
    for plan in task.plans:
        for real in plan.realizations:
            pending.pop(real.id, None)
            target = folder / real.audio
            prev = old.item(real.id) if (old is not None and reuse) else None
            if (
                prev is not None and prev.text == real.text and prev.file == real.audio
                and target.is_file() and sha256_file(target) == prev.sha256
            ):
                items.append(_current_encoding(task, prev.model_copy(update={"plan": plan.id}),
                                               target, log))
                continue
            audio = engine.synthesize(
                real.text, voice=task.user.persona.voice, rate=task.user.persona.rate,
                seed=utterance_seed(task.id, real.id),
            )
            _check_audible(audio, f"{task.id}: realization '{real.id}'")
            try:
                turn = write_bank_audio(target, audio)
            except AudioFileError as exc:
                raise TTSError(f"{task.id}: realization '{real.id}': {exc}") from None
            items.append(BankItem(
                realization=real.id, plan=plan.id, text=real.text, file=real.audio,
                duration_ms=turn.duration_ms, sample_rate=SAMPLE_RATE,
                sha256=sha256_file(target), encoding=bank_encoding(target.suffix.lower()),
                longest_pause_ms=turn.longest_pause_ms,
            ))
            if log is not None:
                log.append(f"{task.id}: synthesized {real.id} ({len(audio) / SAMPLE_RATE:.1f} s)")
            save_manifest(folder, BankManifest(task_id=task.id, engine=described,
                                               items=[*items, *pending.values()]))
    manifest = BankManifest(task_id=task.id, engine=described, items=items)
    save_manifest(folder, manifest)
    return manifest


def verify_bank(task: TaskSpec) -> list[str]:
    """Problems with the task's bank against its manifest (empty list = verified)."""
    folder = task.folder
    manifest = load_manifest(folder)
    if manifest is None:
        return [
            f"{folder}/bank/manifest.json: missing; run `apex-voice bank build --tasks {task.id}`"
        ]
    problems: list[str] = []
    for item in manifest.items:
        path = folder / item.file
        if not path.is_file():
            problems.append(f"{path}: missing (realization {item.realization})")
        elif sha256_file(path) != item.sha256:
            problems.append(f"{path}: checksum mismatch (realization {item.realization})")
    return problems


@functools.lru_cache(maxsize=8192)
def _decoded(path: Path, mtime_ns: int, size: int) -> Pcm:
    """One bank file decoded, shared by every run of the process and read-only (a consumer
    that tried to change it in place would raise instead of corrupting the next run; the
    scripted agent's levels of it are computed once, :func:`runtime.core.audio.frame_levels`).
    Keyed by modification time and size, so a rebuilt bank is decoded again."""
    del mtime_ns, size
    audio = read_mono(path)
    if audio.base is not None:
        audio = audio.copy()  # its own buffer: a slice of it has it as ``base``
    audio.flags.writeable = False
    return audio


class BankPlayer:
    """Loads frozen realizations for the user simulator, decoded once per process: a campaign
    builds a player per run, and decoding Ogg/Opus was 40 % of a virtual-clock run (issue 20)."""

    def __init__(self, task: TaskSpec) -> None:
        self._task = task

    def audio(self, realization_id: str, relative_path: str) -> Pcm:
        del realization_id  # the file is the identity
        path = self._task.folder / relative_path
        try:
            st = path.stat()
        except OSError:
            return read_mono(path)  # raises its clear AudioFileError naming the file
        return _decoded(path, st.st_mtime_ns, st.st_size)


class SpeechCache:
    """Agent speech for the scripted agent: synthesized once per (engine, voice, text) and kept
    on disk so repeated runs are fast and byte-identical."""

    def __init__(self, engine: TTSEngine, cache_dir: Path, voice: str = "en-us+m3") -> None:
        self.engine = engine
        self.voice = voice
        self.cache_dir = cache_dir
        self._memory: dict[str, Pcm] = {}

    def speak(self, text: str) -> Pcm:
        key = hashlib.sha256(f"{self.engine.name}|{self.voice}|{text}".encode()).hexdigest()
        if key in self._memory:
            return self._memory[key]
        path = self.cache_dir / f"{key}.flac"
        if path.is_file():
            audio = read_mono(path)
        else:
            audio = self.engine.synthesize(text, voice=self.voice, rate=1.1, seed=0)
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            # A name of its own per process: several processes (Ray workers of one campaign,
            # two CLI runs) may fill the same cache at once.
            tmp = path.with_suffix(f".{os.getpid()}.tmp.flac")
            sf.write(str(tmp), audio, SAMPLE_RATE, format="FLAC", subtype="PCM_16")
            tmp.replace(path)
        self._memory[key] = audio
        return audio
