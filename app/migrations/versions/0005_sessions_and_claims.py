"""Server-side researcher sessions; when a shared join link claimed a Study B place.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "auth_session",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("user.id"), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(), nullable=False),
        sa.Column("ended_at", sa.DateTime(), nullable=True),
        sa.Column("ended_reason", sa.String(length=32), nullable=False, server_default=""),
    )
    op.create_index("ix_auth_session_key_hash", "auth_session", ["key_hash"], unique=True)
    op.create_index("ix_auth_session_user_id", "auth_session", ["user_id"])
    with op.batch_alter_table("study_b_participant") as batch:
        batch.add_column(sa.Column("claimed_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("study_b_participant") as batch:
        batch.drop_column("claimed_at")
    op.drop_index("ix_auth_session_user_id", table_name="auth_session")
    op.drop_index("ix_auth_session_key_hash", table_name="auth_session")
    op.drop_table("auth_session")
