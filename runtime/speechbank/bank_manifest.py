"""The frozen speech bank's manifest (appendix B.2): one per task, ``bank/manifest.json``.

Kept free of audio imports so the validator and graders can read it anywhere.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

MANIFEST_NAME = "manifest.json"
BANK_DIR = "bank"


class BankItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    realization: str
    plan: str
    text: str
    file: str
    """Path relative to the task folder, e.g. ``bank/answer_dob__r1.flac``."""
    duration_ms: int = Field(ge=0)
    sample_rate: int = Field(gt=0)
    sha256: str
    encoding: str | None = None
    """How the file is encoded (``Ogg/Opus level 0.94``); None in manifests written before it
    was recorded, whose ``.ogg`` files are ``Ogg/Opus level 0.85``."""
    reencoded_from: str | None = None
    """Set when the file was decoded from an earlier encoding and encoded again (a second
    generation) instead of being synthesized afresh: the encoding it was first written in."""
    longest_pause_ms: int | None = Field(default=None, ge=0)
    """The longest quiet stretch inside the decoded file as a 40 ms turn detector hears it
    (:func:`runtime.speechbank.bank_audio.longest_pause_ms`); None in manifests written before
    it was measured."""


class BankManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str
    engine: str
    """TTS engine and its pinned configuration, e.g. ``espeak-ng 1.51 voice=en-us``."""
    items: list[BankItem] = Field(default_factory=list)

    def item(self, realization_id: str) -> BankItem | None:
        return next((i for i in self.items if i.realization == realization_id), None)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def manifest_path(task_folder: Path) -> Path:
    return task_folder / BANK_DIR / MANIFEST_NAME


def load_manifest(task_folder: Path) -> BankManifest | None:
    """The task's manifest, or None when the task has no bank yet."""
    path = manifest_path(task_folder)
    if not path.is_file():
        return None
    return BankManifest.model_validate(json.loads(path.read_text(encoding="utf-8")))


def save_manifest(task_folder: Path, manifest: BankManifest) -> Path:
    path = manifest_path(task_folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)  # atomic: an interrupted build never leaves a half-written manifest
    return path
