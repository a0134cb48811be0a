"""Study A: rating studies, items, annotators, ratings.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "study_a",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("n_tasks", sa.Integer(), nullable=False),
        sa.Column("plans_per_task", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("sample_report", sa.JSON(), nullable=True),
    )
    op.create_table(
        "study_a_item",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("study_id", sa.Integer(), sa.ForeignKey("study_a.id"), nullable=False),
        sa.Column("item_key", sa.String(length=200), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("plan_id", sa.String(length=64), nullable=False),
        sa.Column("realization_id", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=32), nullable=False),
        sa.Column("calibration", sa.Boolean(), nullable=False),
        sa.Column("calibration_text", sa.String(), nullable=True),
        sa.Column("calibration_audio", sa.String(), nullable=True),
        sa.Column("calibration_note", sa.String(), nullable=False),
        sa.UniqueConstraint("study_id", "item_key"),
    )
    op.create_index("ix_study_a_item_study_id", "study_a_item", ["study_id"])
    op.create_table(
        "study_a_annotator",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("study_id", sa.Integer(), sa.ForeignKey("study_a.id"), nullable=False),
        sa.Column("label", sa.String(length=64), nullable=False),
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.Column("order", sa.JSON(), nullable=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("submitted_at", sa.DateTime(), nullable=True),
    )
    op.create_index("ix_study_a_annotator_study_id", "study_a_annotator", ["study_id"])
    op.create_index("ix_study_a_annotator_token", "study_a_annotator", ["token"], unique=True)
    op.create_table(
        "study_a_rating",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("annotator_id", sa.Integer(), sa.ForeignKey("study_a_annotator.id"),
                  nullable=False),
        sa.Column("item_id", sa.Integer(), sa.ForeignKey("study_a_item.id"), nullable=False),
        sa.Column("fidelity", sa.Integer(), nullable=True),
        sa.Column("naturalness", sa.Integer(), nullable=True),
        sa.Column("leakage", sa.Integer(), nullable=True),
        sa.Column("comment", sa.String(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("annotator_id", "item_id"),
    )
    op.create_index("ix_study_a_rating_annotator_id", "study_a_rating", ["annotator_id"])
    op.create_index("ix_study_a_rating_item_id", "study_a_rating", ["item_id"])


def downgrade() -> None:
    for table in ("study_a_rating", "study_a_annotator", "study_a_item", "study_a"):
        op.drop_table(table)
