"""The committed speech bank fits the repository (issue 19): the bank of the catalogue's 120
workflows stays under 80 MB. Until every workflow is written, the bound is checked on the bytes
per task of the banks that exist, projected to 120; once all are written, on the real total.
Every file must be in today's encoding, so the projection is of what a build writes now; and no
file may pause inside long enough for a turn detector to end the caller's turn there."""

from __future__ import annotations

from pathlib import Path

from runtime.agents.scripted import EnergyVAD
from runtime.core.audio import FRAME_SAMPLES, read_mono, silence
from runtime.core.spec import default_tasks_dir
from runtime.speechbank.bank import item_encoding
from runtime.speechbank.bank_audio import MAX_TURN_PAUSE_MS, bank_encoding
from runtime.speechbank.bank_manifest import load_manifest
from tests.conftest import bundled_tasks

LIMIT_BYTES = 80_000_000
CATALOGUE_N = 120


def _bank_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in (folder / "bank").rglob("*") if f.is_file())


def test_every_bank_file_is_in_todays_encoding() -> None:
    stale = []
    for task in bundled_tasks():
        manifest = load_manifest(task.folder)
        assert manifest is not None, f"{task.id} has no bank"
        stale += [f"{task.id}/{i.file}: {item_encoding(i)}" for i in manifest.items
                  if item_encoding(i) != bank_encoding(Path(i.file).suffix.lower())]
    assert stale == [], "run `apex-voice bank build` (it re-encodes, it does not re-synthesize)"


def test_the_bank_of_120_workflows_stays_under_80_mb() -> None:
    folders = sorted(p for p in default_tasks_dir().glob("apexv1_*") if p.is_dir())
    assert len(folders) == len(bundled_tasks())
    total = sum(_bank_bytes(f) for f in folders)
    projected = total if len(folders) >= CATALOGUE_N else total / len(folders) * CATALOGUE_N
    print(f"\nbank: {total / 1e6:.1f} MB for {len(folders)} tasks; "
          f"{projected / 1e6:.1f} MB for {CATALOGUE_N}")
    assert projected < LIMIT_BYTES


def test_no_realization_pauses_long_enough_to_end_the_callers_turn() -> None:
    """Every bank file records its longest inner pause, under MAX_TURN_PAUSE_MS; and, played
    frame by frame to the scripted agent's own turn detector, the files with the longest
    pauses of each task end one utterance each, at their end (the detector, not the measure
    the build used, is the judge)."""
    over, unmeasured, split = [], [], []
    for task in bundled_tasks():
        manifest = load_manifest(task.folder)
        assert manifest is not None, f"{task.id} has no bank"
        for item in manifest.items:
            if item.longest_pause_ms is None:
                unmeasured.append(f"{task.id}/{item.file}")
            elif item.longest_pause_ms > MAX_TURN_PAUSE_MS:
                over.append(f"{task.id}/{item.file}: {item.longest_pause_ms} ms")
        longest = sorted(manifest.items, key=lambda i: -(i.longest_pause_ms or 0))[:4]
        for item in longest:
            audio = read_mono(task.folder / item.file)
            vad = EnergyVAD()
            frames = len(audio) // FRAME_SAMPLES
            ends = [k for k in range(frames)
                    if vad.push(audio[k * FRAME_SAMPLES:(k + 1) * FRAME_SAMPLES]) == "end"]
            ends += [frames + k for k in range(40) if vad.push(silence()) == "end"]
            if len(ends) != 1 or ends[0] < frames:
                split.append(f"{task.id}/{item.file}: turn ends at frames {ends} of {frames}")
    fix = "run `apex-voice bank build` (it measures and cuts pauses; it does not re-synthesize)"
    assert unmeasured == [], fix
    assert over == [], fix
    assert split == []
