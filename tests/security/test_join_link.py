"""The shared join link of a launched Study B (issue #15, item 5), tried the way an attacker
would: made-up participant ids must not drain every place for good, a participant id someone
else claimed must not open that person's personal link, and the link is rate limited."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from app import study_b as svc
from app.models_study_b import Participant, StudyB
from tests.clock import Clock
from tests.webclient import researcher_app

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

SYSTEMS = ("scripted:oracle", "scripted:negative_unfinalized")


def _study(tmp_path: Path, **settings: Any) -> tuple[Any, str, int]:
    app = researcher_app(tmp_path / "data", secret_key="join-test", **settings)
    with Session(app.state.engine) as db:
        tasks = app.state.catalogue.tasks
        ids = tuple(t for t in sorted(tasks) if (tasks[t].folder / "scripts" /
                                                 "negative_unfinalized.yaml").is_file())[:4]
        study = svc.create_study(db, svc.NewStudy(name="join", systems=SYSTEMS, task_ids=ids,
                                                  n_anchor=0, seed=1), tasks=tasks, by="ada")
        svc.launch(db, study)
        assert study.id is not None and study.join_token
        return app, study.join_token, study.id


@pytest.fixture
def roomy(tmp_path: Path) -> Iterator[tuple[Any, str, int]]:
    """Rate limits out of the way (each test below sets the one it is about)."""
    made = _study(tmp_path, join_link_limit="1000/minute", join_client_limit="1000/minute")
    yield made
    made[0].state.engine.dispose()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock.install(monkeypatch, svc, "_clock")


def _client(app: Any, n: int) -> TestClient:
    """A browser at its own address (``198.51.100.n``) with its own cookies."""
    return TestClient(app, client=(f"198.51.100.{n}", 40000 + n))


def _places(app: Any, study_id: int) -> list[Participant]:
    with Session(app.state.engine) as db:
        return list(db.exec(select(Participant).where(Participant.study_id == study_id)
                            .order_by(col(Participant.label))).all())


def test_a_known_participant_id_does_not_open_someone_elses_link(
        roomy: tuple[Any, str, int]) -> None:
    app, join, _ = roomy
    victim = _client(app, 1)
    first = victim.get(f"/p/join/{join}?PROLIFIC_PID=5f1e-real-person", follow_redirects=False)
    assert first.status_code == 303
    personal = first.headers["location"]
    token = personal.removeprefix("/p/")
    # The victim's own browser comes back through the shared link: same place.
    again = victim.get(f"/p/join/{join}?PROLIFIC_PID=5f1e-real-person", follow_redirects=False)
    assert again.status_code == 303 and again.headers["location"] == personal
    # An attacker who learnt the participant id (it is in Prolific URLs and exports) asks
    # for it from another browser.
    attacker = _client(app, 66)
    r = attacker.get(f"/p/join/{join}?PROLIFIC_PID=5f1e-real-person", follow_redirects=False)
    assert r.status_code in (403, 409), r.status_code
    assert token not in r.text and token not in r.headers.get("location", "")
    assert "personal link" in r.text


def test_made_up_ids_cannot_hold_every_place_for_good(tmp_path: Path, clock: Clock) -> None:
    app, join, study_id = _study(tmp_path, join_link_limit="1000/minute",
                                 join_client_limit="1000/minute",
                                 join_claim_expiry_minutes=1.0)
    n = len(_places(app, study_id))
    squatted = {}
    for i in range(n):  # one made-up id per place, from as many machines as needed
        r = _client(app, 10 + i).get(f"/p/join/{join}?PROLIFIC_PID=fake{i}",
                                     follow_redirects=False)
        assert r.status_code == 303
        squatted[f"fake{i}"] = r.headers["location"]
    # Full, for now: a squatted place is held while its claim is young.
    assert _client(app, 99).get(f"/p/join/{join}?PROLIFIC_PID=early").status_code == 409
    clock.advance(61)
    # Nobody ever started (consent still pending): the claims have expired.
    real = _client(app, 100)
    r = real.get(f"/p/join/{join}?PROLIFIC_PID=real-person", follow_redirects=False)
    assert r.status_code == 303, r.text[:300]
    place = r.headers["location"]
    assert place not in squatted.values()  # the place got a new personal link…
    consent = real.get(place)
    assert consent.status_code == 200 and "consent" in str(consent.url)
    # …and the squatter's old link to it opens nothing.
    tokens = {p.token for p in _places(app, study_id)}
    stale = [link for link in squatted.values() if link.removeprefix("/p/") not in tokens]
    assert len(stale) == 1
    assert _client(app, 101).get(stale[0], follow_redirects=False).status_code == 404
    app.state.engine.dispose()


def test_one_machine_cannot_claim_place_after_place(tmp_path: Path) -> None:
    app, join, study_id = _study(tmp_path, join_link_limit="1000/minute",
                                 join_client_limit="2/hour")
    attacker = _client(app, 7)
    codes = [attacker.get(f"/p/join/{join}?PROLIFIC_PID=bot{i}",
                          follow_redirects=False).status_code for i in range(4)]
    assert codes[:2] == [303, 303] and codes[2:] == [429, 429], codes
    claimed = [p for p in _places(app, study_id) if p.external_pid]
    assert len(claimed) == 2
    # A participant who already holds a place still gets back in (it is not a new claim).
    assert attacker.get(f"/p/join/{join}?PROLIFIC_PID=bot0",
                        follow_redirects=False).status_code == 303
    # Real participants elsewhere are not affected.
    assert _client(app, 8).get(f"/p/join/{join}?PROLIFIC_PID=human",
                               follow_redirects=False).status_code == 303
    app.state.engine.dispose()


def test_the_shared_link_itself_is_rate_limited(tmp_path: Path) -> None:
    app, join, study_id = _study(tmp_path, join_link_limit="2/minute",
                                 join_client_limit="1000/minute")
    codes = [_client(app, 20 + i).get(f"/p/join/{join}?PROLIFIC_PID=burst{i}",
                                      follow_redirects=False) for i in range(4)]
    assert [r.status_code for r in codes] == [303, 303, 429, 429]
    assert int(codes[2].headers["Retry-After"]) > 0
    assert re.search(r"try again", codes[2].text, re.I)
    assert len([p for p in _places(app, study_id) if p.external_pid]) == 2
    app.state.engine.dispose()


def test_claims_of_participants_who_started_never_expire(tmp_path: Path,
                                                        clock: Clock) -> None:
    app, join, study_id = _study(tmp_path, join_link_limit="1000/minute",
                                 join_client_limit="1000/minute",
                                 join_claim_expiry_minutes=1.0)
    people = _places(app, study_id)
    started = _client(app, 30)
    r = started.get(f"/p/join/{join}?PROLIFIC_PID=keen", follow_redirects=False)
    place = r.headers["location"]
    page = started.get(place).text  # the consent page
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf
    started.post(f"{place}/consent", data={"csrf_token": csrf.group(1), "decision": "agree"})
    for i in range(len(people) - 1):
        _client(app, 40 + i).get(f"/p/join/{join}?PROLIFIC_PID=other{i}")
    clock.advance(61)
    for i in range(len(people) - 1):  # the idle claims are handed on…
        assert _client(app, 60 + i).get(f"/p/join/{join}?PROLIFIC_PID=new{i}",
                                        follow_redirects=False).status_code == 303
    # …but not the place of the participant who consented.
    assert _client(app, 90).get(f"/p/join/{join}?PROLIFIC_PID=late").status_code == 409
    assert started.get(place, follow_redirects=False).status_code == 303
    with Session(app.state.engine) as db:
        keen = db.exec(select(Participant).where(Participant.external_pid == "keen")).one()
        assert keen.consent == "given" and f"/p/{keen.token}" == place
        assert db.get(StudyB, study_id) is not None
    app.state.engine.dispose()
