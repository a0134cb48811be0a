"""Alembic migrations on SQLite and on PostgreSQL (issue #18): from an empty database to the
newest revision; from each earlier revision, holding one representative row in every table it
has, to the newest (rows and their timestamps kept, new columns at their defaults, new rows
still numbered); the newest schema is exactly the tables the app declares; and down to each
earlier revision and back up."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlmodel import Session, SQLModel, select

from app.db import alembic_config, downgrade, make_engine, migrate
from app.models import AuthSession, User
from app.models_study_a import Annotator, ItemVisit, Rating, StudyA, StudyAItem
from app.models_study_b import LiveSession, Participant, StudyB
from tests.pg import Cluster

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

SCRIPTS = ScriptDirectory.from_config(alembic_config())
REVISIONS = [s.revision for s in reversed(list(SCRIPTS.walk_revisions()))]
HEAD = REVISIONS[-1]
EARLIER = REVISIONS[:-1]

WHEN = datetime(2025, 1, 2, 3, 4, 5)
"""A moment as the app wrote it before 0007: UTC, without its zone."""

# One row per table, in foreign-key order; a table's row is inserted at the first revision
# that has the table, with the columns that revision has (ids left to the database).
ROWS: dict[str, dict[str, Any]] = {
    "user": {"username": "ada", "password_hash": "x", "created_at": WHEN},
    "study_a": {"name": "A", "created_by": "ada", "created_at": WHEN, "seed": 1, "n_tasks": 24,
                "plans_per_task": 3, "status": "open", "sample_report": {"drawn": 1}},
    "study_a_item": {"study_id": 1, "item_key": "t:p:r", "task_id": "t", "plan_id": "p",
                     "realization_id": "r", "role": "opening", "calibration": False,
                     "calibration_note": ""},
    "study_a_annotator": {"study_id": 1, "label": "A1", "token": "tok-a", "order": [1],
                          "position": 0, "created_at": WHEN},
    "study_a_rating": {"annotator_id": 1, "item_id": 1, "fidelity": 5, "naturalness": 4,
                       "leakage": 1, "comment": "fine", "updated_at": WHEN},
    "study_b": {"name": "B", "created_by": "ada", "created_at": WHEN, "seed": 3,
                "task_ids": ["t"], "systems": ["s"], "anchor_task_ids": [],
                "sessions_per_participant": 1, "plan": {"seed": 3}, "status": "launched",
                "consent_text": "", "completion_code": "", "completion_url": "",
                "on_disconnect": "rejoin", "join_token": "join"},
    "study_b_participant": {"study_id": 1, "label": "P01", "token": "tok-p",
                            "external_pid": "pid-1", "consent": "given", "consent_at": WHEN,
                            "created_at": WHEN},
    "study_b_session": {"study_id": 1, "participant_id": 1, "position": 1, "task_id": "t",
                        "system": "s", "anchor": True, "state": "complete", "detail": "",
                        "started_at": WHEN, "ended_at": WHEN},
    "auth_session": {"key_hash": "h" * 64, "user_id": 1, "created_at": WHEN,
                     "last_seen_at": WHEN, "ended_reason": ""},
    "study_a_item_visit": {"annotator_id": 1, "item_id": 1, "opened_at": WHEN,
                           "played_at": WHEN},
}
MODELS: dict[str, type[SQLModel]] = {
    "user": User, "study_a": StudyA, "study_a_item": StudyAItem, "study_a_annotator": Annotator,
    "study_a_rating": Rating, "study_b": StudyB, "study_b_participant": Participant,
    "study_b_session": LiveSession, "auth_session": AuthSession, "study_a_item_visit": ItemVisit,
}


@pytest.fixture
def engine(request: pytest.FixtureRequest, db_backend: str, tmp_path: Path) -> Iterator[sa.Engine]:
    """An engine on an empty database (no tables at all) of the test's backend."""
    if db_backend == "sqlite":
        eng = make_engine(f"sqlite:///{tmp_path / 'apex.db'}")
        yield eng
        eng.dispose()
        return
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    name = cluster.new_database(empty=True)
    eng = make_engine(cluster.url(name))
    yield eng
    eng.dispose()
    cluster.drop_database(name)


def _tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}


def _version(engine: sa.Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def _schema_drift(engine: sa.Engine) -> list[Any]:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(context, SQLModel.metadata))


def _insert_rows(engine: sa.Engine) -> list[str]:
    meta = sa.MetaData()
    with engine.begin() as conn:
        meta.reflect(conn)
        done = []
        for name, row in ROWS.items():
            if name in meta.tables:
                table = meta.tables[name]
                conn.execute(table.insert(), {k: v for k, v in row.items() if k in table.c})
                done.append(name)
    return done


def test_from_empty_to_the_newest_revision(engine: sa.Engine) -> None:
    assert _tables(engine) == set()
    migrate(engine)
    assert _version(engine) == HEAD
    assert _tables(engine) == set(MODELS)
    assert _schema_drift(engine) == []
    migrate(engine)  # a second start-up finds nothing to do
    assert _version(engine) == HEAD


@pytest.mark.parametrize("start", EARLIER)
def test_from_an_earlier_revision_with_rows_to_the_newest(engine: sa.Engine, start: str) -> None:
    migrate(engine, start)
    assert _version(engine) == start
    inserted = _insert_rows(engine)
    assert inserted  # every revision has at least one table
    migrate(engine)
    assert _version(engine) == HEAD
    assert _schema_drift(engine) == []
    moment = WHEN.replace(tzinfo=UTC)
    with Session(engine) as db:
        for name in inserted:
            rows = db.exec(select(MODELS[name])).all()
            assert len(rows) == 1, name
        user = db.exec(select(User)).one()
        assert (user.username, user.created_at) == ("ada", moment)
        if "study_a_rating" in inserted:
            rating = db.exec(select(Rating)).one()
            assert (rating.fidelity, rating.naturalness, rating.leakage) == (5, 4, 1)
            assert rating.updated_at == moment
            assert db.exec(select(Annotator)).one().order == [1]
            assert db.exec(select(StudyAItem)).one().calibration is False
        if "study_b" in inserted:
            study = db.exec(select(StudyB)).one()
            assert study.captions is False  # 0004's default for studies made before it
            assert study.plan == {"seed": 3} and study.task_ids == ["t"]
            person = db.exec(select(Participant)).one()
            assert person.claimed_at is None and person.consent_at == moment
            assert db.exec(select(LiveSession)).one().anchor is True
        # New rows are still numbered after the migrated ones (PostgreSQL's sequences).
        db.add(User(username="grace", password_hash="y"))
        db.commit()
        ids = sorted(u.id for u in db.exec(select(User)).all() if u.id is not None)
        assert ids == [1, 2]


def _schema(engine: sa.Engine) -> dict[str, list[tuple[str, str, bool]]]:
    """Every table's columns: name, type and whether it takes NULL."""
    inspector = sa.inspect(engine)
    return {t: [(c["name"], str(c["type"]), bool(c["nullable"]))
                for c in inspector.get_columns(t)] for t in sorted(_tables(engine))}


@pytest.mark.parametrize("target", ["base", *EARLIER])
def test_down_to_an_earlier_revision_and_back_up(engine: sa.Engine, target: str) -> None:
    if target != "base":
        migrate(engine, target)
    as_built = _schema(engine)
    migrate(engine)
    downgrade(engine, target)
    assert _version(engine) == (None if target == "base" else target)
    assert _schema(engine) == as_built  # the schema that revision built, nothing more or less
    assert (_tables(engine) == set()) == (target == "base")
    migrate(engine)
    assert _version(engine) == HEAD
    assert _schema_drift(engine) == []
