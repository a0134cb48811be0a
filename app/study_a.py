"""Study A in the web app (paper appendix F.2): studies drawn by the sampler, annotator queues,
ratings saved one at a time, calibration items, and the agreement report.

The routes (``app/routes/study_a.py`` for researchers, ``app/routes/annotate.py`` for
annotators) stay thin; everything that touches the tables lives here.

Visibility is decided in one place: :func:`item_view` builds the :class:`ItemView` an annotator's
page is rendered from, out of the user's side of the task only (persona, goals, constraints, the
facts visible with the plan, the plan's own facts and trigger in words, the transcript). The
templates never receive a :class:`~runtime.core.spec.TaskSpec`, so a template cannot show a gold
value, a grader, a required action or the reference trajectory by accident.
"""

from __future__ import annotations

import io
import random
import re
import secrets
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import soundfile as sf
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app.db import releasing
from app.models import _now
from app.models_study_a import Annotator, ItemVisit, StudyA, StudyAItem
from app.models_study_a import Rating as RatingRow
from runtime.core import csv_safe
from runtime.core.spec import TaskSpec, UserPlan
from study_protocols import agreement
from study_protocols.study_a import SamplingError, annotator_order, sample_study_a
from study_protocols.visibility import (
    fact_values,
    find_hidden_gold,
    hidden_gold_strings,
    plan_visible_facts,
    volunteer_facts,
)

DEFAULT_ANNOTATORS = 3
MAX_ANNOTATORS = 50
MAX_COMMENT_CHARS = 2000
CALIBRATION_MAX_BYTES = 20 * 1024 * 1024
"""Largest calibration audio upload (20 MiB: minutes of WAV, far more of Ogg/MP3/FLAC)."""

AUDIO_FORMATS: dict[str, tuple[str, frozenset[str]]] = {
    ".wav": ("audio/wav", frozenset({"audio/wav", "audio/x-wav", "audio/wave",
                                     "audio/vnd.wave"})),
    ".ogg": ("audio/ogg", frozenset({"audio/ogg", "application/ogg", "audio/opus"})),
    ".oga": ("audio/ogg", frozenset({"audio/ogg", "application/ogg"})),
    ".opus": ("audio/ogg", frozenset({"audio/ogg", "audio/opus", "application/ogg"})),
    ".mp3": ("audio/mpeg", frozenset({"audio/mpeg", "audio/mp3", "audio/mpeg3",
                                      "audio/x-mpeg-3"})),
    ".flac": ("audio/flac", frozenset({"audio/flac", "audio/x-flac"})),
}
"""Calibration audio: extension → (the type it is served as, the upload types accepted).
``application/octet-stream`` (what some browsers send for any file) is also accepted. Whatever
the type, the file's first bytes must match the extension and the whole file must decode as
that format (:func:`check_audio_upload`)."""
DECODED_FORMATS = {".wav": {"WAV", "WAVEX"}, ".ogg": {"OGG"}, ".oga": {"OGG"},
                   ".opus": {"OGG"}, ".mp3": {"MP3"}, ".flac": {"FLAC"}}
"""The container libsndfile must find in a file of each extension."""
UPLOAD_HEADERS = {"Content-Security-Policy": "default-src 'none'; sandbox",
                  "Content-Disposition": "inline"}
"""Served audio (uploads included): were a browser ever to open it as a page, it would run
nothing (and ``nosniff``, on every response, keeps it audio)."""

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.\-]{0,31}$")


class StudyAError(ValueError):
    """Bad input from a researcher or an annotator; the message says what to change."""


class RatingLocked(StudyAError):
    """The annotator has submitted (or the study is closed): ratings can no longer change."""


class QueueIncomplete(StudyAError):
    """Submit was asked for before every item had all three ratings."""

    def __init__(self, missing: list[int]) -> None:
        shown = ", ".join(str(n) for n in missing[:20]) + (" …" if len(missing) > 20 else "")
        super().__init__(f"{len(missing)} item(s) still need all three ratings: {shown}")
        self.missing = missing


# --------------------------------------------------------------------------- input models


class StudyACreate(BaseModel):
    """The researcher's create form."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=200)
    seed: int = Field(default=0, ge=0, lt=2**31)
    n_tasks: int = Field(default=24, ge=1, le=500)
    plans_per_task: int = Field(default=3, ge=1, le=10)
    n_annotators: int = Field(default=DEFAULT_ANNOTATORS, ge=0, le=MAX_ANNOTATORS)


class RatingUpdate(BaseModel):
    """One rating POST: any of the three ratings and the comment; a field left out keeps its
    saved value, ``null`` clears it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    fidelity: int | None = Field(default=None, ge=1, le=5)
    naturalness: int | None = Field(default=None, ge=1, le=5)
    leakage: int | None = Field(default=None, ge=0, le=1)
    comment: str | None = Field(default=None, max_length=MAX_COMMENT_CHARS)

    @field_validator("leakage", mode="before")
    @classmethod
    def _flag(cls, v: Any) -> Any:
        return int(v) if isinstance(v, bool) else v


def validation_message(exc: ValidationError) -> str:
    """One line per problem, naming the field, the value and the allowed range."""
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "body"
        given = err.get("input")
        lines.append(f"{where}: {err['msg']} (got {given!r})" if err["type"] != "missing"
                     else f"{where}: missing")
    return "; ".join(lines)


# --------------------------------------------------------------------------- studies


def create_study(session: Session, tasks: Mapping[str, TaskSpec], params: StudyACreate, *,
                 created_by: str) -> StudyA:
    """Run the sampler on ``tasks`` and store the study, its items and ``n_annotators``
    annotators. Raises :class:`StudyAError` when the sampler cannot draw at all."""
    try:
        sample = sample_study_a(sorted(tasks.values(), key=lambda t: t.id),
                                n_tasks=params.n_tasks, plans_per_task=params.plans_per_task,
                                seed=params.seed)
    except SamplingError as exc:
        raise StudyAError(str(exc)) from None
    report = sample.to_json()
    report.pop("items", None)  # the items are rows of their own
    study = StudyA(name=params.name, created_by=created_by, seed=params.seed,
                   n_tasks=params.n_tasks, plans_per_task=params.plans_per_task,
                   sample_report=report)
    session.add(study)
    session.flush()
    assert study.id is not None
    for item in sample.items:
        session.add(StudyAItem(study_id=study.id, item_key=item.key, task_id=item.task_id,
                               plan_id=item.plan_id, realization_id=item.realization_id,
                               role=item.role))
    session.commit()
    session.refresh(study)
    for _ in range(params.n_annotators):
        add_annotator(session, study)
    return study


def get_study(session: Session, study_id: int) -> StudyA | None:
    return session.get(StudyA, study_id)


def list_studies(session: Session) -> list[StudyA]:
    return list(session.exec(select(StudyA).order_by(col(StudyA.id).desc())))


def study_items(session: Session, study_id: int) -> list[StudyAItem]:
    return list(session.exec(select(StudyAItem).where(StudyAItem.study_id == study_id)
                             .order_by(col(StudyAItem.id))))


def study_annotators(session: Session, study_id: int) -> list[Annotator]:
    return list(session.exec(select(Annotator).where(Annotator.study_id == study_id)
                             .order_by(col(Annotator.id))))


def close_study(session: Session, study: StudyA) -> None:
    study.status = "closed"
    session.add(study)
    session.commit()


# --------------------------------------------------------------------------- annotators


def _next_label(existing: Sequence[str]) -> str:
    n = len(existing) + 1
    while f"A{n}" in existing:
        n += 1
    return f"A{n}"


def add_annotator(session: Session, study: StudyA, label: str | None = None) -> Annotator:
    """A new annotator with an unguessable invitation token and their own seeded order of
    every item of the study (calibration items included)."""
    assert study.id is not None
    if study.status != "open":
        raise StudyAError("the study is closed; annotators can no longer be added")
    existing = [a.label for a in study_annotators(session, study.id)]
    if len(existing) >= MAX_ANNOTATORS:
        raise StudyAError(f"a study has at most {MAX_ANNOTATORS} annotators")
    label = (label or "").strip() or _next_label(existing)
    if not _LABEL.match(label):
        raise StudyAError(f"annotator label {label!r}: use 1–32 letters, digits, spaces, '.', "
                          "'_' or '-', starting with a letter or digit")
    if label in existing:
        raise StudyAError(f"this study already has an annotator labelled {label!r}")
    items = study_items(session, study.id)
    by_key = {i.item_key: i.id for i in items}
    order = annotator_order([i.item_key for i in items], seed=study.seed, annotator=label)
    annotator = Annotator(study_id=study.id, label=label, token=secrets.token_urlsafe(24),
                          order=[int(by_key[k] or 0) for k in order])
    session.add(annotator)
    session.commit()
    session.refresh(annotator)
    return annotator


def annotator_by_token(session: Session, token: str) -> Annotator | None:
    if not token or len(token) > 64:
        return None
    return session.exec(select(Annotator).where(Annotator.token == token)).first()


def queue(session: Session, annotator: Annotator) -> list[StudyAItem]:
    """The annotator's items in their own order."""
    rows = {i.id: i for i in study_items(session, annotator.study_id)}
    return [rows[i] for i in annotator.order if i in rows]


def ratings_of(session: Session, annotator: Annotator) -> dict[int, RatingRow]:
    """The annotator's saved ratings by item id."""
    rows = session.exec(select(RatingRow).where(RatingRow.annotator_id == annotator.id))
    return {r.item_id: r for r in rows}


def is_complete(rating: RatingRow | None) -> bool:
    return rating is not None and None not in (rating.fidelity, rating.naturalness,
                                               rating.leakage)


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    submitted: bool
    position: int
    """1-based position of the item the annotator last opened."""

    @property
    def missing(self) -> int:
        return self.total - self.done


def progress(session: Session, annotator: Annotator) -> Progress:
    ratings = ratings_of(session, annotator)
    done = sum(1 for i in annotator.order if is_complete(ratings.get(i)))
    return Progress(done=done, total=len(annotator.order),
                    submitted=annotator.submitted_at is not None,
                    position=min(annotator.position, max(len(annotator.order) - 1, 0)) + 1)


def set_position(session: Session, annotator: Annotator, position: int) -> None:
    """Remember the item the annotator has open (1-based), so any device resumes there."""
    index = position - 1
    if 0 <= index < len(annotator.order) and annotator.position != index:
        session.exec(update(Annotator).where(col(Annotator.id) == annotator.id)
                        .values(position=index))
        session.commit()
        session.refresh(annotator)


def _locked_reason(session: Session, annotator: Annotator) -> str | None:
    # Re-read the annotator and hold its row until the save commits (PostgreSQL: SELECT … FOR
    # NO KEY UPDATE; SQLite has no row locks and ignores it, its writers take turns anyway):
    # a submit handled by another app process at the same moment then either comes first (and
    # this save is refused) or waits for this save, which it then counts.
    session.refresh(annotator, with_for_update={"key_share": True})
    if annotator.submitted_at is not None:
        return "your ratings are handed in and locked; they can no longer change"
    study = session.get(StudyA, annotator.study_id)
    if study is None or study.status != "open":
        return "this study is closed; ratings can no longer change"
    return None


@releasing
def save_rating(session: Session, annotator: Annotator, item: StudyAItem,
                change: RatingUpdate) -> RatingRow:
    """Save the fields given in ``change`` (and only those) for one item, at once.

    One row per (annotator, item), enforced by the table's unique constraint. The update names
    only the changed columns, so concurrent saves of different items, or of different ratings
    of one item, never overwrite each other. Raises :class:`RatingLocked` after submit or
    close.
    """
    reason = _locked_reason(session, annotator)
    if reason is not None:
        raise RatingLocked(reason)
    if item.id not in annotator.order:
        raise StudyAError("this item is not in your queue")
    values: dict[str, Any] = {k: getattr(change, k) for k in change.model_fields_set}
    if values.get("comment") is None and "comment" in values:
        values["comment"] = ""
    values["updated_at"] = _now()
    where = (col(RatingRow.annotator_id) == annotator.id, col(RatingRow.item_id) == item.id)
    if session.exec(update(RatingRow).where(*where).values(**values)).rowcount == 0:
        try:
            session.add(RatingRow(annotator_id=int(annotator.id or 0), item_id=int(item.id or 0),
                                  **values))
            session.commit()
        except IntegrityError:  # another request created the row first: update it instead
            session.rollback()
            session.exec(update(RatingRow).where(*where).values(**values))
            session.commit()
    else:
        session.commit()
    row = session.exec(select(RatingRow).where(*where)).one()
    session.refresh(row)
    return row


@releasing
def submit(session: Session, annotator: Annotator) -> None:
    """Lock the annotator's ratings. Every item needs all three ratings first (the comment is
    optional); otherwise :class:`QueueIncomplete` lists the positions still missing."""
    reason = _locked_reason(session, annotator)
    if reason is not None:
        raise RatingLocked(reason)
    ratings = ratings_of(session, annotator)
    missing = [n for n, i in enumerate(annotator.order, start=1)
               if not is_complete(ratings.get(i))]
    if missing:
        raise QueueIncomplete(missing)
    annotator.submitted_at = _now()
    session.add(annotator)
    session.commit()


NOT_PLAYED = ("Listen to the whole clip first: the ratings open once it has played to the "
              "end (press Space to play).")


class NotPlayed(StudyAError):
    """A rating for an item whose clip the annotator has not yet played to the end."""


def _visit_mark(session: Session, annotator: Annotator, item: StudyAItem, column: str) -> None:
    """Set ``column`` of the annotator's visit of ``item`` to now, unless it is already set
    (the first time counts). Opening is implied by any later event."""
    now = _now()
    where = (col(ItemVisit.annotator_id) == annotator.id, col(ItemVisit.item_id) == item.id)
    marks = [column] if column == "opened_at" else ["opened_at", column]

    def set_unset() -> None:
        for name in marks:
            session.exec(update(ItemVisit).where(*where, col(getattr(ItemVisit, name)).is_(None))
                         .values({name: now}))
        session.commit()

    set_unset()
    if session.exec(select(ItemVisit).where(*where)).first() is None:
        try:
            visit = ItemVisit(annotator_id=int(annotator.id or 0), item_id=int(item.id or 0))
            for name in marks:
                setattr(visit, name, now)
            session.add(visit)
            session.commit()
        except IntegrityError:  # another request created the row first: mark it instead
            session.rollback()
            set_unset()


def mark_opened(session: Session, annotator: Annotator, item: StudyAItem) -> None:
    if item.id in annotator.order and annotator.submitted_at is None:
        _visit_mark(session, annotator, item, "opened_at")


@releasing
def mark_played(session: Session, annotator: Annotator, item: StudyAItem) -> None:
    """The page reports that the item's clip played to the end."""
    reason = _locked_reason(session, annotator)
    if reason is not None:
        raise RatingLocked(reason)
    if item.id not in annotator.order:
        raise StudyAError("this item is not in your queue")
    _visit_mark(session, annotator, item, "played_at")


def _visit(session: Session, annotator: Annotator, item: StudyAItem) -> ItemVisit | None:
    return session.exec(select(ItemVisit).where(ItemVisit.annotator_id == annotator.id,
                                                ItemVisit.item_id == item.id)).first()


def has_played(session: Session, annotator: Annotator, item: StudyAItem) -> bool:
    visit = _visit(session, annotator, item)
    return visit is not None and visit.played_at is not None


@releasing
def save_rating_after_listening(session: Session, annotator: Annotator, item: StudyAItem,
                                change: RatingUpdate) -> RatingRow:
    """:func:`save_rating` for the annotator's page: a rating (not a comment) needs the clip
    played to the end first (:class:`NotPlayed`); the first time the item's three ratings are
    complete is recorded as the end of its time."""
    reason = _locked_reason(session, annotator)
    if reason is not None:
        raise RatingLocked(reason)
    rates = change.model_fields_set & {"fidelity", "naturalness", "leakage"}
    if rates and not has_played(session, annotator, item):
        raise NotPlayed(NOT_PLAYED)
    row = save_rating(session, annotator, item, change)
    if is_complete(row):
        _visit_mark(session, annotator, item, "rated_at")
    return row


def first_unrated(session: Session, annotator: Annotator) -> int | None:
    """1-based position of the first item in the queue without all three ratings."""
    ratings = ratings_of(session, annotator)
    return next((n for n, i in enumerate(annotator.order, start=1)
                 if not is_complete(ratings.get(i))), None)


def item_seconds(session: Session, study: StudyA) -> dict[tuple[str, str], float]:
    """Seconds from first opening an item to first completing its three ratings, by
    (item key, annotator label); only items both opened and completed."""
    assert study.id is not None
    items = {i.id: i for i in study_items(session, study.id)}
    people = {a.id: a for a in study_annotators(session, study.id)}
    rows = session.exec(select(ItemVisit).where(col(ItemVisit.annotator_id).in_(list(people))))
    out: dict[tuple[str, str], float] = {}
    for v in rows:
        item = items.get(v.item_id)
        if item is None or v.opened_at is None or v.rated_at is None:
            continue
        out[(item.item_key, people[v.annotator_id].label)] = \
            round(max((v.rated_at - v.opened_at).total_seconds(), 0.0), 1)
    return out


# --------------------------------------------------------------------------- calibration


def _looks_like(ext: str, head: bytes) -> bool:
    """Whether a file's first bytes match its extension's container."""
    if ext == ".wav":
        return head[:4] == b"RIFF" and head[8:12] == b"WAVE"
    if ext in (".ogg", ".oga", ".opus"):
        return head[:4] == b"OggS"
    if ext == ".mp3":  # an ID3 tag, or an MPEG audio frame sync
        return head[:3] == b"ID3" or (len(head) > 1 and head[0] == 0xFF
                                      and head[1] & 0xE0 == 0xE0)
    return ext == ".flac" and head[:4] == b"fLaC"


def check_audio_upload(filename: str, content_type: str, data: bytes) -> str:
    """The extension of an acceptable calibration audio upload, or :class:`StudyAError`
    saying what is wrong (type, extension, size, or content that is not that format)."""
    ext = Path(filename or "").suffix.lower()
    allowed = ", ".join(sorted(AUDIO_FORMATS))
    if ext not in AUDIO_FORMATS:
        raise StudyAError(f"audio file {filename!r}: extension {ext or '(none)'!r} is not "
                          f"accepted; upload WAV, Ogg/Opus, MP3 or FLAC ({allowed})")
    ctype = (content_type or "").split(";")[0].strip().lower()
    if ctype and ctype != "application/octet-stream" and ctype not in AUDIO_FORMATS[ext][1]:
        raise StudyAError(f"audio file {filename!r}: content type {ctype!r} does not match "
                          f"its {ext} extension (expected {AUDIO_FORMATS[ext][0]})")
    if not data:
        raise StudyAError(f"audio file {filename!r} is empty")
    if len(data) > CALIBRATION_MAX_BYTES:
        raise StudyAError(f"audio file {filename!r} is {len(data) / 2**20:.1f} MiB; the limit is "
                          f"{CALIBRATION_MAX_BYTES // 2**20} MiB")
    if not _looks_like(ext, data[:16]):
        raise StudyAError(f"audio file {filename!r} does not start like a {ext} file; "
                          "export it again as WAV, Ogg/Opus, MP3 or FLAC")
    _check_decodes(filename, ext, data)
    return ext


def _check_decodes(filename: str, ext: str, data: bytes) -> None:
    """Decode the whole file (libsndfile, through soundfile): :class:`StudyAError` when it is
    not audio of its extension's format, holds no samples, fails part-way, or (WAV) carries
    bytes after the end of its RIFF chunk, where anything (a web page) could hide."""
    redo = "; export it again as WAV, Ogg/Opus, MP3 or FLAC"
    try:
        with sf.SoundFile(io.BytesIO(data)) as fh:
            container = str(fh.format)
            frames = 0
            for block in fh.blocks(blocksize=1 << 16, dtype="int16", always_2d=True):
                frames += len(block)
    except (RuntimeError, ValueError, TypeError, EOFError) as exc:  # soundfile: RuntimeError
        reason = getattr(exc, "error_string", "") or type(exc).__name__
        raise StudyAError(f"audio file {filename!r} cannot be decoded as {ext} audio "
                          f"({reason}){redo}") from None
    if container not in DECODED_FORMATS[ext]:
        raise StudyAError(f"audio file {filename!r} is {container} audio, not {ext}{redo}")
    if frames == 0:
        raise StudyAError(f"audio file {filename!r} holds no audio samples{redo}")
    if ext == ".wav":
        end = 8 + int.from_bytes(data[4:8], "little")
        extra = len(data) - end - (end % 2)
        if extra > 0:
            raise StudyAError(f"audio file {filename!r} has {extra} bytes after the end of its "
                              f"audio{redo}")


def add_calibration_item(
    session: Session, study: StudyA, tasks: Mapping[str, TaskSpec], *, data_dir: Path,
    context: str, text: str, note: str, name: str, filename: str, content_type: str,
    audio: bytes,
) -> StudyAItem:
    """A calibration item: researcher-written text with uploaded audio, shown in the user
    state and plan of ``context`` (``task_id:plan_id``). It joins every annotator's queue that
    is not submitted, at a seeded random place after the item they have open; its ratings are
    reported apart and never enter an agreement figure."""
    assert study.id is not None
    if study.status != "open":
        raise StudyAError("the study is closed; calibration items can no longer be added")
    task_id, _, plan_id = context.partition(":")
    task = tasks.get(task_id)
    if task is None or task.plan(plan_id) is None:
        raise StudyAError(f"context {context!r}: choose a task and plan of this study")
    text = text.strip()
    if not text:
        raise StudyAError("the calibration transcript is empty; write what the audio says")
    if len(text) > 2000:
        raise StudyAError("the calibration transcript is longer than 2000 characters")
    slug = re.sub(r"[^a-z0-9]+", "-", (name or "").strip().lower()).strip("-")[:40]
    items = study_items(session, study.id)
    slug = slug or f"item{sum(1 for i in items if i.calibration) + 1}"
    key = f"calib:{slug}"
    if any(i.item_key == key for i in items):
        raise StudyAError(f"this study already has a calibration item named {slug!r}")
    ext = check_audio_upload(filename, content_type, audio)
    folder = data_dir / "study_a" / str(study.id)
    folder.mkdir(parents=True, exist_ok=True)
    stored = folder / f"calib_{uuid.uuid4().hex}{ext}"
    stored.write_bytes(audio)
    item = StudyAItem(study_id=study.id, item_key=key, task_id=task_id, plan_id=plan_id,
                      realization_id="calibration", role="calibration", calibration=True,
                      calibration_text=text, calibration_audio=str(stored.relative_to(data_dir)),
                      calibration_note=note.strip()[:2000])
    session.add(item)
    session.flush()
    for a in study_annotators(session, study.id):
        if a.submitted_at is not None:
            continue
        rng = _seeded_rng(study.seed, a.label, key)
        start = min(a.position + 1, len(a.order))
        index = rng.randint(start, len(a.order))
        a.order = [*a.order[:index], int(item.id or 0), *a.order[index:]]
        session.add(a)
    session.commit()
    session.refresh(item)
    return item


def _seeded_rng(seed: int, *parts: str) -> random.Random:
    return random.Random("|".join(["study-a-calibration", str(seed), *parts]))


def calibration_audio_path(item: StudyAItem, data_dir: Path) -> Path | None:
    if not item.calibration_audio:
        return None
    root = data_dir.resolve()
    path = (data_dir / item.calibration_audio).resolve()
    return path if root in path.parents and path.is_file() else None


def item_audio(item: StudyAItem, tasks: Mapping[str, TaskSpec],
               data_dir: Path) -> tuple[Path, str] | None:
    """The audio file of an item and the type it is served as (bank audio of the sampled
    realization, or a calibration upload), or None when it is missing."""
    if item.calibration:
        path = calibration_audio_path(item, data_dir)
        return (path, AUDIO_FORMATS[path.suffix.lower()][0]) if path is not None else None
    task = tasks.get(item.task_id)
    plan = task.plan(item.plan_id) if task is not None else None
    if task is None or plan is None:
        return None
    for real in plan.realizations:
        if real.id == item.realization_id:
            path = (task.folder / real.audio).resolve()
            if task.folder.resolve() not in path.parents or not path.is_file():
                return None
            kind = AUDIO_FORMATS.get(path.suffix.lower())
            return path, kind[0] if kind else "application/octet-stream"
    return None


# --------------------------------------------------------------------------- what annotators see


@dataclass(frozen=True)
class FactLine:
    label: str
    value: str
    note: str = ""


@dataclass(frozen=True)
class ItemView:
    """Everything an annotator's page shows for one item, and nothing else."""

    scenario: str
    persona_name: str
    persona_role: str
    speaking_style: str
    goals: list[str]
    constraints: list[str]
    known_facts: list[FactLine]
    intent: str
    intent_words: str
    trigger: str
    plan_facts: list[FactLine]
    authorization: str
    ends_call: bool
    transcript: str
    notes: list[str] = field(default_factory=list)


INTENT_WORDS = {
    "open": "Open the call and say why they are calling",
    "answer": "Answer what the agent asked",
    "clarify": "Ask for clarification, or say they do not know",
    "correct": "Correct something",
    "approve": "Approve the action the agent asked about",
    "revoke": "Withdraw an approval given earlier",
    "barge_in": "Cut in while the agent is speaking",
    "backchannel": "A short acknowledgement while the agent speaks",
    "inform": "Tell the agent something",
    "goodbye": "End the call",
    "decline": "Decline what the agent proposed",
}
_ACT_WORDS = {
    "greet": "The agent greets the user.",
    "confirm": "The agent asks the user to confirm something.",
    "read_back": "The agent reads information back to the user.",
    "summarize": "The agent summarizes what it has.",
    "inform": "The agent gives the user information.",
    "close": "The agent wraps up the call.",
}
_STATE_WORDS = {"DRAFT": "a draft", "READY_FOR_REVIEW": "ready for review",
                "SUBMITTED": "handed in", "COMMITTED": "final (committed)"}
_DUPLEX_WORDS = {
    "barge_in": "cuts in", "overlap": "talks over the agent", "backchannel": "reacts briefly",
    "correction": "cuts in with a correction", "cancellation": "cuts in to cancel",
    "clarification": "cuts in to ask",
}


def humanize(name: str) -> str:
    """``date_of_birth`` → ``date of birth``."""
    return name.replace("_", " ").strip()


def show_value(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(show_value(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{humanize(str(k))}: {show_value(v)}" for k, v in value.items())
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _field_label(task: TaskSpec, name: str) -> str:
    for _, spec in task.graded_fields():
        if spec.name == name:
            return spec.label
    return humanize(name)


def action_words(task: TaskSpec, action: str) -> str:
    """``commit:enr_1`` → ``submit the benefits enrollment form``."""
    for rule in task.authorization:
        if rule.action == action:
            art = task.artifact(rule.artifact)
            return f"{rule.verbs[0]} the {art.title if art else humanize(rule.artifact)}"
    verb, _, target = action.partition(":")
    art = task.artifact(target)
    return f"{humanize(verb)} the {art.title if art else humanize(target)}"


def trigger_words(task: TaskSpec, plan: UserPlan) -> str:
    """When the plan is spoken, in plain words (without naming other plans)."""
    when = plan.when
    if when.on == "opening":
        return (f"At the start of the call: the user speaks first (after at most "
                f"{when.silence_ms / 1000:g} s of silence from the agent).")
    if when.on == "ask":
        labels = [_field_label(task, f) for f in when.fields]
        return f"The agent asks for the {' and the '.join(labels)}."
    if when.on == "approval_request":
        return f"The agent asks for approval to {action_words(task, when.action)}."
    if when.on == "act":
        return _ACT_WORDS.get(when.act, f"The agent does this: {humanize(when.act)}.")
    if when.on == "lifecycle":
        art = task.artifact(when.artifact)
        title = art.title if art else humanize(when.artifact)
        return f"The agent has made the {title} {_STATE_WORDS.get(when.state.value, '')}."
    if when.on == "duplex":
        kinds = [e.kind for e in task.duplex_events if e.plan == plan.id]
        how = _DUPLEX_WORDS.get(kinds[0], "cuts in") if kinds else "cuts in"
        return f"While the agent is still speaking, the user {how}."
    if when.on == "world_event":
        return "Something happens on the user's side during the call, and the user reacts."
    return "The user cannot tell what the agent wants."


def without_hidden(text: str, hidden: set[str]) -> str:
    """``text`` (a label or a sentence the app wrote) with every hidden gold phrase it contains
    left out. Labels come from field and fact names, and a name can contain a word that is
    also a gold value the user does not know (``quantity_on_hold`` when the status gold is
    "on hold"): the label then reads "quantity"."""
    for phrase in find_hidden_gold(text, hidden):
        pattern = r"\s*(?<![\w])" + re.escape(phrase) + r"(?![\w])"
        text = re.sub(pattern, "", text, flags=re.IGNORECASE)
    return re.sub(r"\s+([.,;:])", r"\1", text).strip() or "this detail"


def scenario_title(task: TaskSpec) -> str:
    """The task's title as a list of items shows it: without any gold value the user does not
    know at the start of the call."""
    return without_hidden(task.title,
                          hidden_gold_strings(task, fact_values(task, volunteer_facts(task))))


def _fact_lines(task: TaskSpec, refs: Sequence[tuple[str, int]], hidden: set[str], *,
                mark_versions: bool) -> list[FactLine]:
    out: list[FactLine] = []
    seen: dict[str, int] = {}
    for fact_id, version in refs:
        fact = task.user.fact(fact_id)
        if fact is None or not 1 <= version <= len(fact.versions):
            continue
        note = ""
        if mark_versions and fact_id in seen:
            note = "corrected value (replaces the one above)"
        elif mark_versions and version > 1:
            note = "corrected value"
        seen[fact_id] = version
        out.append(FactLine(without_hidden(humanize(fact_id), hidden),
                            show_value(fact.versions[version - 1].value), note))
    return out


def item_view(task: TaskSpec, item: StudyAItem) -> ItemView:
    """The annotator's view of ``item`` (see the module docstring)."""
    plan = task.plan(item.plan_id)
    if plan is None:
        raise StudyAError(f"plan {item.plan_id!r} is no longer in task {task.id!r}")
    transcript = item.calibration_text or ""
    if not item.calibration:
        real = next((r for r in plan.realizations if r.id == item.realization_id), None)
        transcript = real.text if real is not None else ""
    auth = ""
    if plan.authorization is not None and plan.authorization.grant:
        auth = f"Gives approval to {action_words(task, plan.authorization.grant)}."
    elif plan.authorization is not None and plan.authorization.revoke:
        auth = f"Withdraws the approval to {action_words(task, plan.authorization.revoke)}."
    visible = plan_visible_facts(task, plan)
    hidden = hidden_gold_strings(task, fact_values(task, visible))
    persona = task.user.persona
    return ItemView(
        scenario=without_hidden(task.title, hidden),
        persona_name=persona.name, persona_role=persona.role,
        speaking_style=persona.speaking_style,
        goals=list(task.user.goals), constraints=list(task.user.constraints),
        known_facts=_fact_lines(task, visible, hidden, mark_versions=False),
        intent=plan.intent, intent_words=INTENT_WORDS.get(plan.intent, humanize(plan.intent)),
        trigger=without_hidden(trigger_words(task, plan), hidden),
        plan_facts=_fact_lines(task, [(r.fact, r.version) for r in plan.facts], hidden,
                               mark_versions=True),
        authorization=without_hidden(auth, hidden) if auth else "", ends_call=plan.ends_session,
        transcript=transcript,
    )


# --------------------------------------------------------------------------- results


def collect_ratings(session: Session, study: StudyA, *,
                    submitted_only: bool = False) -> list[agreement.Rating]:
    """Every saved rating of the study as :class:`study_protocols.agreement.Rating` (item id =
    item key, annotator id = label); calibration ratings flagged. Rows with no rating at all
    (a comment only) are left out."""
    assert study.id is not None
    items = {i.id: i for i in study_items(session, study.id)}
    people = {a.id: a for a in study_annotators(session, study.id)
              if not submitted_only or a.submitted_at is not None}
    rows = session.exec(select(RatingRow).where(col(RatingRow.annotator_id).in_(list(people)))
                        .order_by(col(RatingRow.annotator_id), col(RatingRow.item_id)))
    out: list[agreement.Rating] = []
    for r in rows:
        item = items.get(r.item_id)
        if item is None or (r.fidelity is None and r.naturalness is None and r.leakage is None):
            continue
        out.append(agreement.Rating(item.item_key, item.task_id, people[r.annotator_id].label,
                                    r.fidelity, r.naturalness, r.leakage, item.calibration))
    out.sort(key=lambda x: (x.item_id, x.annotator_id))
    return out


def archetypes_of(tasks: Mapping[str, TaskSpec]) -> dict[str, str]:
    return {t.id: t.taxonomy.archetype for t in tasks.values()}


def study_report(session: Session, study: StudyA, tasks: Mapping[str, TaskSpec], *,
                 submitted_only: bool = False, n_resamples: int = 2000) -> dict[str, Any]:
    """The agreement report (:func:`study_protocols.agreement.agreement_report`) of the
    study's ratings, seeded by the study's seed; calibration ratings only under
    ``calibration``."""
    ratings = collect_ratings(session, study, submitted_only=submitted_only)
    report = agreement.agreement_report(ratings, archetypes=archetypes_of(tasks),
                                        seed=study.seed, n_resamples=n_resamples)
    report["scope"] = "submitted" if submitted_only else "all"
    return report


def ratings_csv(ratings: Sequence[agreement.Rating],
                seconds: Mapping[tuple[str, str], float] | None = None) -> str:
    """The raw ratings CSV (DESIGN §4 columns, item_id = item key) with the ``calibration``
    column always present and, last, ``seconds``: the time from first opening the item to
    completing its ratings (:func:`item_seconds`; empty when unknown).
    :func:`study_protocols.agreement.read_ratings_csv` reads it (and ignores ``seconds``)."""
    seconds = seconds or {}
    buf = io.StringIO()
    writer = csv_safe.writer(buf, lineterminator="\n")
    writer.writerow([*agreement.RATING_COLUMNS, "calibration", "seconds"])

    def cell(v: int | None) -> str:
        return "" if v is None else str(v)

    for r in ratings:
        writer.writerow([r.item_id, r.task_id, r.annotator_id, cell(r.fidelity),
                         cell(r.naturalness), cell(r.leakage), "1" if r.calibration else "0",
                         "" if (t := seconds.get((r.item_id, r.annotator_id))) is None
                         else f"{t:.1f}"])
    return buf.getvalue()


def comments_csv(session: Session, study: StudyA) -> str:
    """Annotators' comments: item_id, task_id, annotator_id, calibration, updated_at,
    comment (rows with a comment only)."""
    assert study.id is not None
    items = {i.id: i for i in study_items(session, study.id)}
    people = {a.id: a for a in study_annotators(session, study.id)}
    buf = io.StringIO()
    writer = csv_safe.writer(buf, lineterminator="\n")
    writer.writerow(["item_id", "task_id", "annotator_id", "calibration", "updated_at",
                     "comment"])
    rows = session.exec(select(RatingRow).where(col(RatingRow.annotator_id).in_(list(people)))
                        .order_by(col(RatingRow.annotator_id), col(RatingRow.item_id)))
    for r in rows:
        item = items.get(r.item_id)
        if item is None or not r.comment:
            continue
        writer.writerow([item.item_key, item.task_id, people[r.annotator_id].label,
                         "1" if item.calibration else "0", r.updated_at.isoformat(),
                         r.comment])
    return buf.getvalue()


def table9_csv(report: Mapping[str, Any]) -> str:
    buf = io.StringIO()
    agreement.report_csv(report, buf)
    return buf.getvalue()
