"""PostgreSQL: every timestamp column holds its zone (``timestamp with time zone``).

The tables declare zone-aware timestamps (SQLModel's ``UTCDateTime``) and the app writes UTC,
but 0001–0006 created ``timestamp without time zone`` columns: PostgreSQL then stored each
moment in the session's zone and handed it back without one, so a server whose default zone
is not UTC shifted every timestamp by its offset. The values already stored are read as UTC
(no release before this one ran on PostgreSQL with a server in another zone: it had no driver,
and app/db.py now sets each session's zone to UTC). SQLite stores the same text either way:
nothing to do there.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

COLUMNS = {
    "user": ("created_at",),
    "study_a": ("created_at",),
    "study_a_annotator": ("created_at", "submitted_at"),
    "study_a_rating": ("updated_at",),
    "study_b": ("created_at",),
    "study_b_participant": ("consent_at", "mic_checked_at", "headphones_checked_at",
                            "claimed_at", "created_at", "finished_at"),
    "study_b_session": ("started_at", "ended_at"),
    "auth_session": ("created_at", "last_seen_at", "ended_at"),
    "study_a_item_visit": ("opened_at", "played_at", "rated_at"),
}


def _convert(with_zone: bool) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, columns in COLUMNS.items():
        for column in columns:
            op.alter_column(table, column, type_=sa.DateTime(timezone=with_zone),
                            existing_type=sa.DateTime(timezone=not with_zone),
                            postgresql_using=f"{column} AT TIME ZONE 'UTC'")


def upgrade() -> None:
    _convert(with_zone=True)


def downgrade() -> None:
    _convert(with_zone=False)
