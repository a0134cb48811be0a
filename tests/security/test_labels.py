"""Participant labels from a Study B plan CSV (issue #15, item 3), tried the way a careless or
hostile editor of the CSV would: a label that is a path (``../../../../outside/x``) or holds a
NUL byte is refused at import with the row and field named; and a label that got into the
database anyway (an older version imported it) never becomes a path part: its live call writes
inside the data directory and the study pages keep working."""

from __future__ import annotations

import asyncio
import csv
import io
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.live import BankRobot, DbCallStore, LiveCallManager
from app.models_study_b import LiveSession, Participant, StudyB
from runtime.core.spec import TaskSpec
from runtime.user.live_user import LiveParticipant
from study_protocols.study_b import PlannedSession, StudyBPlan
from tests.webclient import PASSWORD, WebClient, log_in, researcher_app

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

ORACLE = "scripted:oracle"
NEG = "scripted:negative_unfinalized"
BAD_LABELS = ["../../../../outside/x", "P\x0001", "/etc/passwd", "..", "P 01/../../x"]


@pytest.fixture
def client(web_client: WebClient) -> TestClient:
    return web_client(next_url=None, secret_key="label-test")


def _draft(client: TestClient, csrf: str) -> int:
    tasks = client.app.state.catalogue.tasks  # type: ignore[attr-defined]
    ids = [t for t in sorted(tasks)
           if (tasks[t].folder / "scripts" / "negative_unfinalized.yaml").is_file()][:4]
    r = client.post("/studies/b", data={"csrf_token": csrf, "name": "labels",
                                        "systems": [ORACLE, NEG], "task_ids": ids,
                                        "n_anchor": "0", "seed": "3",
                                        "consent_text": "I agree to take part."},
                    follow_redirects=False)
    assert r.status_code == 303, _text(r.text)[-800:]
    return int(r.headers["location"].rsplit("/", 1)[1])


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&#39;", "'") \
        .replace("&#34;", '"').replace("&quot;", '"')


@pytest.mark.parametrize("bad", BAD_LABELS)
def test_a_path_or_control_character_label_is_refused_at_import(client: TestClient,
                                                                 bad: str) -> None:
    csrf = log_in(client, next_url="/studies/b")
    sid = _draft(client, csrf)
    exported = client.get(f"/studies/b/{sid}/plan.csv").text
    rows = list(csv.DictReader(io.StringIO(exported)))
    victim = rows[0]["participant"]
    for row in rows:  # renamed consistently: the design itself stays valid
        if row["participant"] == victim:
            row["participant"] = bad
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    first_line = 2 + next(i for i, row in enumerate(rows) if row["participant"] == bad)
    r = client.post(f"/studies/b/{sid}/import", data={"csrf_token": csrf},
                    files={"plan_file": ("plan.csv", out.getvalue().encode(), "text/csv")},
                    follow_redirects=False)
    assert r.status_code == 400, r.status_code
    body = _text(r.text)
    assert "The imported plan was refused" in body
    assert f"line {first_line}" in body and "participant" in body
    assert re.search(r"letters, digits", body), body[-600:]
    # The stored plan is unchanged and the study page still renders.
    page = client.get(f"/studies/b/{sid}")
    assert page.status_code == 200 and bad not in page.text


def _robot_manager(runs_dir: Path, engine: Any) -> LiveCallManager:
    robots: dict[str, BankRobot] = {}

    def participant(task: TaskSpec, seed: int, asr: Any) -> LiveParticipant:
        robot = robots.setdefault(task.id, BankRobot(task, seed))
        return LiveParticipant(task, seed=seed, asr=robot.asr(), transcribe_inline=True)

    return LiveCallManager(runs_dir, clock="virtual", asr_factory=lambda: None,
                           participant_factory=participant,
                           feeder_factory=lambda plan: robots[plan.task.id],
                           reap_every_s=3600, store=DbCallStore(engine))


def _csrf(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, html[:300]
    return match.group(1)


async def test_a_bad_label_already_in_the_database_is_never_a_path_part(
        tmp_path: Path, db_backend: str) -> None:
    """As an older version left it: a launched study whose participants are labelled
    ``../../../../outside/x`` and ``P<NUL>02``. PostgreSQL refuses a NUL character in text and
    a label over 16 characters, so there the older version could only have left shorter
    labels that climb out of their folder."""
    data = tmp_path / "data"
    app = researcher_app(data, secret_key="label-test")
    settings = app.state.settings
    labels = ({"../../../../outside/x": "tok-path-" + "a" * 24, "P\x0002": "tok-nul-" + "b" * 24}
              if db_backend == "sqlite" else
              {"../../../outside": "tok-path-" + "a" * 24, "P/../../../x": "tok-dots-" + "b" * 24})
    with Session(app.state.engine) as db:
        plan = StudyBPlan(0, ("apexv1_070",), (ORACLE,), (),
                          tuple(PlannedSession(label, 1, "apexv1_070", ORACLE, False)
                                for label in sorted(labels)))
        study = StudyB(name="old", created_by="ada", status="launched", seed=0,
                       task_ids=["apexv1_070"], systems=[ORACLE], plan=plan.to_json())
        db.add(study)
        db.flush()
        assert study.id is not None
        for label, token in labels.items():
            person = Participant(study_id=study.id, label=label, token=token)
            db.add(person)
            db.flush()
            db.add(LiveSession(study_id=study.id, participant_id=person.id or 0, position=1,
                               task_id="apexv1_070", system=ORACLE))
        db.commit()
        study_id = study.id
    app.state.live = _robot_manager(settings.runs_dir, app.state.engine)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        for label, token in labels.items():
            page = (await http.get(f"/p/{token}/consent")).text
            await http.post(f"/p/{token}/consent", data={"csrf_token": _csrf(page),
                                                         "decision": "agree"})
            page = (await http.get(f"/p/{token}/mic")).text
            await http.post(f"/p/{token}/mic", data={"csrf_token": _csrf(page),
                                                     "headphones": "yes"})
            with Session(app.state.engine) as db:
                person = db.exec(select(Participant).where(Participant.token == token)).one()
                row = db.exec(select(LiveSession)
                              .where(LiveSession.participant_id == person.id)).one()
            assert row.id is not None
            r = await http.get(f"/p/{token}/s/{row.id}")
            assert r.status_code == 200, (label, r.status_code)
            call = app.state.live.get(row.id)
            assert call is not None and call.start()
            while not call.done:
                await asyncio.sleep(0.05)
            run_dir = call.run_dir.resolve()
            assert settings.runs_dir.resolve() in run_dir.parents, (label, run_dir)
            assert (run_dir / "events.jsonl").is_file()
            assert "\x00" not in str(run_dir) and ".." not in run_dir.parts
        # Nothing was written next to the data directory.
        assert not (tmp_path / "outside").exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
        # The researcher's pages keep working with such labels in the database.
        page = (await http.get("/login")).text
        r = await http.post("/login", data={"csrf_token": _csrf(page), "username": "ada",
                                            "password": PASSWORD, "next": "/tasks"})
        for path in (f"/studies/b/{study_id}", f"/studies/b/{study_id}/results",
                     f"/studies/b/{study_id}/links.csv", "/runs"):
            r = await http.get(path)
            assert r.status_code == 200, (path, r.status_code)
    await app.state.live.close()
    app.state.engine.dispose()
