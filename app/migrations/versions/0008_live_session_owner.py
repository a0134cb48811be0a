"""Study B: which app process holds a running live session (#18).

Several app processes may serve one study. At start-up a process marks ``incomplete`` only the
running sessions whose holder is gone (app/live.py ``holder_is_gone``), not the live calls of
the other processes. Rows written before this revision have no holder and are treated as
before: a running one at start-up was cut off.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("study_b_session") as batch:
        batch.add_column(sa.Column("holder", sa.String(length=160), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("study_b_session") as batch:
        batch.drop_column("holder")
