"""Study B: the per-study captions option and the participant's headphone check.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("study_b") as batch:
        batch.add_column(sa.Column("captions", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
    with op.batch_alter_table("study_b_participant") as batch:
        batch.add_column(sa.Column("headphones_checked_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("study_b_participant") as batch:
        batch.drop_column("headphones_checked_at")
    with op.batch_alter_table("study_b") as batch:
        batch.drop_column("captions")
