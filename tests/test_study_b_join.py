"""The shared study link of a launched Study B (one URL for a recruitment platform): each new
external participant id claims the next free participant, the same id always returns to the
same participant, two people never share one, and a full study says so."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from app import study_b as svc
from app.models_study_b import Participant, StudyB
from tests.webclient import log_in, researcher_app

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

SYSTEMS = ("scripted:oracle", "scripted:negative_unfinalized")


@pytest.fixture
def app_and_study(tmp_path: Path) -> Iterator[tuple[Any, int]]:
    # One test client plays every participant here: the per-client claim limit is lifted
    # (tests/security/test_join_link.py covers the limits).
    app = researcher_app(tmp_path / "data", join_client_limit="1000/hour")
    with Session(app.state.engine) as db:
        tasks = app.state.catalogue.tasks
        scripted = [t for t in sorted(tasks)
                    if (tasks[t].folder / "scripts" / "negative_unfinalized.yaml").is_file()]
        ids = tuple(scripted[:4])
        study = svc.create_study(db, svc.NewStudy(
            name="join", systems=SYSTEMS, task_ids=ids, n_anchor=0, seed=1,
        ), tasks=tasks, by="ada")
        svc.launch(db, study)
        assert study.id is not None
        yield app, study.id
    app.state.engine.dispose()


def _join_token(app: Any, study_id: int) -> str:
    with Session(app.state.engine) as db:
        study = db.get(StudyB, study_id)
        assert study is not None and study.join_token and len(study.join_token) >= 32
        return study.join_token


def _labels(app: Any, study_id: int) -> dict[str, str | None]:
    with Session(app.state.engine) as db:
        people = db.exec(select(Participant).where(Participant.study_id == study_id)
                         .order_by(col(Participant.label))).all()
        return {p.label: p.external_pid for p in people}


def test_each_new_id_claims_the_next_participant_and_keeps_it(
        app_and_study: tuple[Any, int]) -> None:
    app, study_id = app_and_study
    join = _join_token(app, study_id)
    with TestClient(app) as client:
        first = client.get(f"/p/join/{join}?PROLIFIC_PID=aaa&STUDY_ID=s1&SESSION_ID=x1",
                           follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"].startswith("/p/")
        again = client.get(f"/p/join/{join}?PROLIFIC_PID=aaa&STUDY_ID=s1&SESSION_ID=x2",
                           follow_redirects=False)
        assert again.headers["location"] == first.headers["location"]  # same person, same slot
        second = client.get(f"/p/join/{join}?PROLIFIC_PID=bbb", follow_redirects=False)
        assert second.headers["location"] != first.headers["location"]
        # The claimed link leads into the ordinary flow (consent first).
        page = client.get(first.headers["location"], follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"].endswith("/consent")
    labels = _labels(app, study_id)
    assert labels["P01"] == "aaa" and labels["P02"] == "bbb"
    with Session(app.state.engine) as db:
        p1 = db.exec(select(Participant).where(Participant.external_pid == "aaa")).one()
        assert (p1.external_study_id, p1.external_session_id) == ("s1", "x1")


def test_a_full_study_missing_id_and_bad_links(app_and_study: tuple[Any, int]) -> None:
    app, study_id = app_and_study
    join = _join_token(app, study_id)
    n = len(_labels(app, study_id))
    with TestClient(app) as client:
        for i in range(n):
            assert client.get(f"/p/join/{join}?PROLIFIC_PID=p{i}",
                              follow_redirects=False).status_code == 303
        full = client.get(f"/p/join/{join}?PROLIFIC_PID=late")
        assert full.status_code == 409 and "no free places" in full.text
        # A returning participant still gets in after the study filled up.
        assert client.get(f"/p/join/{join}?PROLIFIC_PID=p0",
                          follow_redirects=False).status_code == 303
        missing = client.get(f"/p/join/{join}")
        assert missing.status_code == 400 and "participant id" in missing.text
        placeholder = client.get(f"/p/join/{join}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}")
        assert placeholder.status_code == 400
        assert client.get("/p/join/not-a-real-token?PROLIFIC_PID=z").status_code == 404
        assert client.get(f"/p/join/{join[:-1]}?PROLIFIC_PID=z").status_code == 404
        # The join token opens nothing else.
        assert client.get(f"/p/{join}", follow_redirects=False).status_code == 404
        log_in(client, next_url="/studies/b")
        page = client.get(f"/studies/b/{study_id}").text
        assert f"/p/join/{join}?PROLIFIC_PID=" in page


def test_a_closed_study_refuses_its_shared_link(app_and_study: tuple[Any, int]) -> None:
    app, study_id = app_and_study
    join = _join_token(app, study_id)
    with Session(app.state.engine) as db:
        study = db.get(StudyB, study_id)
        assert study is not None
        svc.close(db, study)
    with TestClient(app) as client:
        assert client.get(f"/p/join/{join}?PROLIFIC_PID=z").status_code == 404


def test_simultaneous_arrivals_never_share_a_participant(app_and_study: tuple[Any, int]) -> None:
    app, study_id = app_and_study
    n = len(_labels(app, study_id))
    got: list[str] = []
    errors: list[BaseException] = []

    def arrive(i: int) -> None:
        try:
            with Session(app.state.engine) as db:
                study = db.get(StudyB, study_id)
                assert study is not None
                got.append(svc.claim_participant(db, study, f"pid{i}").label)
        except svc.StudyFull:
            got.append("full")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=arrive, args=(i,)) for i in range(n + 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    claimed = [g for g in got if g != "full"]
    assert len(claimed) == n and len(set(claimed)) == n  # every slot once, none twice
    assert got.count("full") == 2
    recorded = [pid for pid in _labels(app, study_id).values() if pid]
    assert len(recorded) == n and len(set(recorded)) == n
