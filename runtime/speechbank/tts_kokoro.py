"""Kokoro-82M speech synthesis: the pinned local TTS of the frozen speech bank (appendix B.2).

:class:`KokoroEngine` implements :class:`runtime.speechbank.bank.TTSEngine` with the real
``kokoro`` package
(0.9.x) running fully offline on the assets that :mod:`runtime.speechbank.kokoro_assets` assembles.
Every
utterance is seeded (``torch.manual_seed(seed)``) and synthesized on a fixed number of threads, so
the same text, voice, rate and seed give the same samples. Output is mono PCM16 at 24 kHz,
Kokoro's native rate (= :data:`runtime.core.audio.SAMPLE_RATE`, so nothing is resampled).

The model is loaded lazily, once per process and cache directory, and shared by every engine
instance (bank builds, the baseline agent's voice, tests).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from runtime.core.audio import SAMPLE_RATE, Pcm, to_pcm16
from runtime.speechbank.bank import TTSError
from runtime.speechbank.bank_audio import tighten_pauses
from runtime.speechbank.kokoro_assets import (
    CONVERTER_VERSION,
    KOKORO_REPO_ID,
    KOKORO_VERSION,
    SETUP_HINT,
    SPACY_PACKAGE,
    SPACY_PACKAGE_VERSION,
    VOICES_SOURCE,
    KokoroAssetError,
    KokoroPaths,
    activate_spacy_alias,
    check_weights_file,
    default_cache_dir,
    import_kokoro,
    load_weights_strict,
    new_kmodel,
    require_record,
)

KOKORO_SAMPLE_RATE = 24_000
DEFAULT_THREADS = 2
PAUSES = {"lead_ms": 120, "trail_ms": 200, "max_pause_ms": 480}
"""Quiet kept before and after each utterance, and the longest pause inside one: Kokoro pads
with 0.3–0.7 s and can pause ~0.7 s at a full stop, longer than a turn detector's hangover
(:func:`runtime.speechbank.bank_audio.tighten_pauses`)."""
LANG_CODES = {"a": "American English", "b": "British English"}
"""Voice-name prefix → Kokoro pipeline language (``af_heart`` → ``a``)."""


@dataclass
class _Loaded:
    """One process-wide model per cache directory, with its pipelines and voice packs."""

    kmodel: Any
    weights_sha256: str
    voice_files: dict[str, Path]
    pipelines: dict[str, Any] = field(default_factory=dict)
    voices: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_LOADED: dict[Path, _Loaded] = {}
_LOAD_LOCK = threading.Lock()


def _load(paths: KokoroPaths, threads: int) -> _Loaded:
    key = paths.root.resolve()
    with _LOAD_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        import torch

        record = require_record(paths)
        digest = check_weights_file(paths, record)
        torch.set_num_threads(threads)
        kmodel = new_kmodel(paths.config)
        load_weights_strict(paths, kmodel)
        kmodel.eval()
        activate_spacy_alias(paths)
        loaded = _Loaded(kmodel=kmodel, weights_sha256=digest,
                         voice_files={v: paths.voice(v) for v in record.voices})
        _LOADED[key] = loaded
        return loaded


class KokoroEngine:
    """Kokoro-82M v1.0 through the torch ``kokoro`` package. ``__init__`` does no I/O."""

    name = "kokoro"

    def __init__(self, cache_dir: Path | None = None, *, threads: int = DEFAULT_THREADS) -> None:
        self._cache_dir = cache_dir
        self._threads = threads

    @property
    def paths(self) -> KokoroPaths:
        return KokoroPaths(self._cache_dir or default_cache_dir())

    def voices(self) -> list[str]:
        """The English voices the assets hold (e.g. ``af_heart``, ``am_michael``, ``bf_emma``)."""
        return require_record(self.paths).voices

    def describe(self) -> str:
        record = require_record(self.paths)
        weights = record.sha256(self.paths.weights.name) or "?"
        voices = sorted((rel, sha) for rel, sha in record.pieces["voices"].files.items())
        voice_set = metadata_digest(voices)
        return (
            f"kokoro {KOKORO_VERSION} Kokoro-82M v1.0 (int8 ONNX dequantized, converter "
            f"{CONVERTER_VERSION}) weights sha256:{weights[:12]} "
            f"voices {VOICES_SOURCE} x{len(voices)} sha256:{voice_set[:12]} "
            f"misaki {_version('misaki')} {SPACY_PACKAGE} {SPACY_PACKAGE_VERSION} "
            f"torch {_version('torch')} threads {self._threads} rate {KOKORO_SAMPLE_RATE} "
            f"pauses {PAUSES['lead_ms']}/{PAUSES['trail_ms']}/{PAUSES['max_pause_ms']} ms"
        )

    def load(self) -> None:
        """Load the model now (otherwise the first :meth:`synthesize` does)."""
        _load(self.paths, self._threads)

    def synthesize(self, text: str, *, voice: str, rate: float, seed: int) -> Pcm:
        import torch

        if rate <= 0:
            raise TTSError(f"Kokoro speaking rate must be positive, got {rate}")
        loaded = _load(self.paths, self._threads)
        with loaded.lock:
            pack = self._voice(loaded, voice)
            pipeline = self._pipeline(loaded, voice[0])
            torch.set_num_threads(self._threads)
            torch.manual_seed(seed)
            chunks: list[np.ndarray[Any, Any]] = []
            try:
                for result in pipeline(text, voice=pack, speed=rate):
                    if result.audio is not None:
                        chunks.append(result.audio.detach().cpu().numpy())
            except Exception as exc:  # G2P and model errors of any type: name text and voice
                raise TTSError(
                    f"Kokoro failed on {text[:60]!r} with voice '{voice}': "
                    f"{type(exc).__name__}: {exc}"
                ) from None
        if not chunks:
            return np.zeros(0, dtype=np.int16)
        audio = np.concatenate(chunks).astype(np.float32)
        if not np.isfinite(audio).all():
            raise TTSError(f"Kokoro produced NaN/Inf for {text[:60]!r} with voice '{voice}'")
        return tighten_pauses(to_pcm16(audio), **PAUSES)

    # ----------------------------------------------------------------- helpers

    @staticmethod
    def _voice(loaded: _Loaded, voice: str) -> Any:
        if voice not in loaded.voice_files:
            raise TTSError(
                f"Kokoro voice '{voice}' is not available; available voices: "
                f"{', '.join(sorted(loaded.voice_files))}"
            )
        if voice not in loaded.voices:
            import torch

            path = loaded.voice_files[voice]
            try:
                pack = torch.load(path, map_location="cpu", weights_only=True)
            except Exception as exc:  # a damaged voice file: name it
                raise KokoroAssetError(
                    f"{path}: Kokoro voice '{voice}' unreadable ({type(exc).__name__}); "
                    f"{SETUP_HINT}"
                ) from None
            loaded.voices[voice] = pack.float()
        return loaded.voices[voice]

    @staticmethod
    def _pipeline(loaded: _Loaded, lang: str) -> Any:
        if lang not in loaded.pipelines:
            kokoro = import_kokoro()
            if lang not in LANG_CODES:
                raise TTSError(f"no Kokoro pipeline for language code '{lang}'")
            loaded.pipelines[lang] = kokoro.KPipeline(
                lang_code=lang, repo_id=KOKORO_REPO_ID, model=loaded.kmodel
            )
        return loaded.pipelines[lang]


def metadata_digest(items: list[tuple[str, str]]) -> str:
    import hashlib

    return hashlib.sha256("\n".join(f"{a} {b}" for a, b in items).encode()).hexdigest()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "missing"


assert KOKORO_SAMPLE_RATE == SAMPLE_RATE, "the bank and runtime rate must equal Kokoro's"
