"""Study B tables: a live-human transfer audit, its participants and their assigned sessions
(paper appendix F.1/F.3). Audio, events and grades live in ordinary run directories."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from app.models import _now


class StudyB(SQLModel, table=True):
    __tablename__ = "study_b"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=200)
    created_by: str = Field(max_length=64)
    created_at: datetime = Field(default_factory=_now)
    seed: int = 0
    task_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    systems: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    """Agent specs; participants never see them."""
    anchor_task_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    sessions_per_participant: int = 0
    plan: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    """The assignment plan (``StudyBPlan.to_json()``), editable while ``draft``."""
    status: str = Field(default="draft", max_length=16)
    """``draft`` (plan editable), ``launched`` (links work) or ``closed``."""
    consent_text: str = ""
    completion_code: str = ""
    completion_url: str = ""
    """Where the end page sends the participant (e.g. Prolific's completion URL)."""
    join_token: str | None = Field(default=None, max_length=64, unique=True, index=True)
    """Set at launch: the study's shared link ``/p/join/<join_token>`` hands each new external
    participant id (e.g. Prolific's ``PROLIFIC_PID``) the next unclaimed participant."""
    on_disconnect: str = Field(default="rejoin", max_length=16)
    """``rejoin`` (a reload continues the same session) or ``incomplete`` (it ends the session
    and marks it incomplete)."""
    captions: bool = False
    """Show the participant the agent's words as captions during a call (off by default)."""


class Participant(SQLModel, table=True):
    __tablename__ = "study_b_participant"
    __table_args__ = (UniqueConstraint("study_id", "label"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study_b.id", index=True)
    label: str = Field(max_length=16)
    """``P01``…: the plan's participant label."""
    token: str = Field(max_length=64, unique=True, index=True)
    external_pid: str | None = Field(default=None, max_length=128)
    external_study_id: str | None = Field(default=None, max_length=128)
    external_session_id: str | None = Field(default=None, max_length=128)
    claimed_at: datetime | None = None
    """When the shared join link last handed this place to an external id; such a claim
    expires (the place goes to the next newcomer, with a new token) when the participant has
    not answered the consent page within ``join_claim_expiry_minutes``."""
    consent: str = Field(default="pending", max_length=16)
    """``pending``, ``given`` or ``declined``."""
    consent_at: datetime | None = None
    mic_checked_at: datetime | None = None
    headphones_checked_at: datetime | None = None
    """When the participant confirmed they heard the test sound and wear headphones."""
    created_at: datetime = Field(default_factory=_now)
    finished_at: datetime | None = None


class LiveSession(SQLModel, table=True):
    __tablename__ = "study_b_session"
    __table_args__ = (UniqueConstraint("participant_id", "position"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study_b.id", index=True)
    participant_id: int = Field(foreign_key="study_b_participant.id", index=True)
    position: int
    task_id: str = Field(max_length=64)
    system: str = Field(max_length=200)
    anchor: bool = False
    state: str = Field(default="pending", max_length=16)
    """``pending``, ``running``, ``complete``, ``incomplete`` or ``failed``."""
    run_dir: str | None = None
    """Relative to the runs directory."""
    holder: str | None = Field(default=None, max_length=160)
    """The app process running the call, ``host/pid/nonce`` (app/live.py ``PROCESS``); set when
    the call starts. Start-up recovery leaves a running session alone while its holder lives."""
    detail: str = ""
    started_at: datetime | None = None
    ended_at: datetime | None = None
