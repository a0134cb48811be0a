"""Study B: live-human audits, participants, assigned sessions.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "study_b",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("task_ids", sa.JSON(), nullable=True),
        sa.Column("systems", sa.JSON(), nullable=True),
        sa.Column("anchor_task_ids", sa.JSON(), nullable=True),
        sa.Column("sessions_per_participant", sa.Integer(), nullable=False),
        sa.Column("plan", sa.JSON(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("consent_text", sa.String(), nullable=False),
        sa.Column("completion_code", sa.String(), nullable=False),
        sa.Column("completion_url", sa.String(), nullable=False),
        sa.Column("on_disconnect", sa.String(length=16), nullable=False),
        sa.Column("join_token", sa.String(length=64), nullable=True),
    )
    op.create_index("ix_study_b_join_token", "study_b", ["join_token"], unique=True)
    op.create_table(
        "study_b_participant",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("study_id", sa.Integer(), sa.ForeignKey("study_b.id"), nullable=False),
        sa.Column("label", sa.String(length=16), nullable=False),
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.Column("external_pid", sa.String(length=128), nullable=True),
        sa.Column("external_study_id", sa.String(length=128), nullable=True),
        sa.Column("external_session_id", sa.String(length=128), nullable=True),
        sa.Column("consent", sa.String(length=16), nullable=False),
        sa.Column("consent_at", sa.DateTime(), nullable=True),
        sa.Column("mic_checked_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.UniqueConstraint("study_id", "label"),
    )
    op.create_index("ix_study_b_participant_study_id", "study_b_participant", ["study_id"])
    op.create_index("ix_study_b_participant_token", "study_b_participant", ["token"],
                    unique=True)
    op.create_table(
        "study_b_session",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("study_id", sa.Integer(), sa.ForeignKey("study_b.id"), nullable=False),
        sa.Column("participant_id", sa.Integer(), sa.ForeignKey("study_b_participant.id"),
                  nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("system", sa.String(length=200), nullable=False),
        sa.Column("anchor", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("run_dir", sa.String(), nullable=True),
        sa.Column("detail", sa.String(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=True),
        sa.Column("ended_at", sa.DateTime(), nullable=True),
        sa.UniqueConstraint("participant_id", "position"),
    )
    op.create_index("ix_study_b_session_study_id", "study_b_session", ["study_id"])
    op.create_index("ix_study_b_session_participant_id", "study_b_session", ["participant_id"])


def downgrade() -> None:
    for table in ("study_b_session", "study_b_participant", "study_b"):
        op.drop_table(table)
