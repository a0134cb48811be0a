"""Study A: when each annotator opened, played to the end and completed each item (#17).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "study_a_item_visit",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("annotator_id", sa.Integer(), sa.ForeignKey("study_a_annotator.id"),
                  nullable=False),
        sa.Column("item_id", sa.Integer(), sa.ForeignKey("study_a_item.id"), nullable=False),
        sa.Column("opened_at", sa.DateTime(), nullable=True),
        sa.Column("played_at", sa.DateTime(), nullable=True),
        sa.Column("rated_at", sa.DateTime(), nullable=True),
        sa.UniqueConstraint("annotator_id", "item_id"),
    )
    op.create_index("ix_study_a_item_visit_annotator_id", "study_a_item_visit",
                    ["annotator_id"])
    op.create_index("ix_study_a_item_visit_item_id", "study_a_item_visit", ["item_id"])


def downgrade() -> None:
    op.drop_index("ix_study_a_item_visit_item_id", table_name="study_a_item_visit")
    op.drop_index("ix_study_a_item_visit_annotator_id", table_name="study_a_item_visit")
    op.drop_table("study_a_item_visit")
