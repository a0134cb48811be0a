"""Study A tables: a rating study, its utterance items, annotators and their ratings (paper
appendix F.2). Ratings are saved one at a time, the moment they are given."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from app.models import _now


class StudyA(SQLModel, table=True):
    __tablename__ = "study_a"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=200)
    created_by: str = Field(max_length=64)
    created_at: datetime = Field(default_factory=_now)
    seed: int = 0
    n_tasks: int = 24
    plans_per_task: int = 3
    status: str = Field(default="open", max_length=16)
    """``open`` (annotators rate) or ``closed`` (no more ratings accepted)."""
    sample_report: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    """What the sampler drew and every stratification constraint it could not satisfy."""


class StudyAItem(SQLModel, table=True):
    """One frozen utterance to rate (or a calibration item, reported apart)."""

    __tablename__ = "study_a_item"
    __table_args__ = (UniqueConstraint("study_id", "item_key"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study_a.id", index=True)
    item_key: str = Field(max_length=200)
    """Stable id used in exports: ``<task>:<plan>:<realization>`` or ``calib:<name>``."""
    task_id: str = Field(max_length=64)
    plan_id: str = Field(max_length=64)
    realization_id: str = Field(max_length=64)
    role: str = Field(default="", max_length=32)
    """Why it was sampled: ``opening``, ``information``, ``critical`` or ``calibration``."""
    calibration: bool = False
    calibration_text: str | None = None
    """The written text of a calibration realization (its audio is synthesized or uploaded)."""
    calibration_audio: str | None = None
    """Path of a calibration item's audio file under the data directory."""
    calibration_note: str = ""
    """What the researcher expects annotators to say about it (never shown to them)."""


class Annotator(SQLModel, table=True):
    __tablename__ = "study_a_annotator"

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study_a.id", index=True)
    label: str = Field(max_length=64)
    token: str = Field(max_length=64, unique=True, index=True)
    """Unguessable invitation token; the link ``/annotate/<token>`` opens this queue only."""
    order: list[int] = Field(default_factory=list, sa_column=Column(JSON))
    """Item ids in this annotator's own randomized order."""
    position: int = 0
    """Index into ``order`` of the item last shown (resume where one left off)."""
    created_at: datetime = Field(default_factory=_now)
    submitted_at: datetime | None = None
    """Set when the annotator submits; ratings are locked afterwards."""


class Rating(SQLModel, table=True):
    __tablename__ = "study_a_rating"
    __table_args__ = (UniqueConstraint("annotator_id", "item_id"),)

    id: int | None = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="study_a_annotator.id", index=True)
    item_id: int = Field(foreign_key="study_a_item.id", index=True)
    fidelity: int | None = None
    naturalness: int | None = None
    leakage: int | None = None
    comment: str = ""
    updated_at: datetime = Field(default_factory=_now)


class ItemVisit(SQLModel, table=True):
    """When an annotator first opened an item, first played its clip to the end and first
    completed its three ratings (server clocks). A rating is accepted only after ``played_at``
    is set (listen before rating); ``rated_at - opened_at`` is the time spent on the item."""

    __tablename__ = "study_a_item_visit"
    __table_args__ = (UniqueConstraint("annotator_id", "item_id"),)

    id: int | None = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="study_a_annotator.id", index=True)
    item_id: int = Field(foreign_key="study_a_item.id", index=True)
    opened_at: datetime | None = None
    played_at: datetime | None = None
    rated_at: datetime | None = None
