"""Same task, seed and script → identical event logs (wall clock aside) and byte-identical
user audio; grading a copied run directory gives the same result."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import soundfile as sf

from grading.gates import grade_run_dir
from runtime.core.events import comparable, read_events
from tests.conftest import bundled_tasks, run_script


def _channels(run_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    data, rate = sf.read(str(run_dir / "trace.wav"), dtype="int16", always_2d=True)
    assert rate == 24_000 and data.shape[1] == 2
    return data[:, 0], data[:, 1]


def test_same_seed_same_log_and_user_audio(tmp_path: Path) -> None:
    a = run_script("apexv1_070", "oracle", tmp_path / "a", seed=7)
    b = run_script("apexv1_070", "oracle", tmp_path / "b", seed=7)
    ea, eb = read_events(a / "events.jsonl"), read_events(b / "events.jsonl")
    assert ea.problems == eb.problems == []
    assert [comparable(e) for e in ea.events] == [comparable(e) for e in eb.events]
    ua, _ = _channels(a)
    ub, _ = _channels(b)
    assert ua.tobytes() == ub.tobytes()
    assert np.abs(ua.astype(np.int32)).max() > 1000  # the user channel holds real speech


def test_other_seed_other_realizations(tmp_path: Path) -> None:
    chosen = []
    for seed in (0, 1, 2, 3):
        run = run_script("apexv1_001", "oracle", tmp_path / f"s{seed}", seed=seed)
        events = read_events(run / "events.jsonl").events
        chosen.append(tuple(getattr(e, "realization_id", "") for e in events
                            if e.type == "user.speech.start"))
    assert len(set(chosen)) > 1


def test_grade_of_copied_run_dir_is_identical(tmp_path: Path) -> None:
    run = run_script("apexv1_001", "negative_stale_correction", tmp_path / "runs")
    copy = tmp_path / "elsewhere" / "copied"
    shutil.copytree(run, copy)
    tasks = {t.id: t for t in bundled_tasks()}
    assert grade_run_dir(run, tasks) == grade_run_dir(copy, tasks)
