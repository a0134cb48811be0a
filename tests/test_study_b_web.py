"""Study B researcher pages through the in-process client: set-up and plan, edits (swap, CSV
import), launch (participants, tokens, sessions), login, Table 10 from real scripted run
directories, and authorization corrections in replay."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.models_study_b import LiveSession, Participant, StudyB
from app.settings import Settings
from app.study_b import session_run_rel
from runtime.core.events import (
    AuthDecisionEvent,
    AuthGrant,
    AuthRevoke,
    CardFact,
    CueDone,
    CueShow,
    EventLog,
    ParticipantConnection,
    SessionStart,
    UserTranscript,
    read_events,
)
from study_protocols.study_b import PlannedSession, StudyBPlan, check_plan, make_plan
from tests.conftest import run_script
from tests.webclient import WebClient, log_in, page_csrf

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

TASKS = ["apexv1_001", "apexv1_011", "apexv1_015", "apexv1_070"]
ORACLE, NEG = "scripted:oracle", "scripted:negative_unfinalized"
SYSTEMS = [ORACLE, NEG]
SEED = 3


@pytest.fixture
def client(web_client: WebClient) -> TestClient:
    return web_client(next_url=None)


_csrf = page_csrf


def login(client: TestClient) -> str:
    log_in(client, next_url="/studies/b")
    return _csrf(client, "/studies/b")


def _form(csrf: str, **over: object) -> dict[str, object]:
    data: dict[str, object] = {"csrf_token": csrf, "name": "pilot", "systems": SYSTEMS,
                               "systems_extra": "", "task_ids": TASKS, "n_anchor": "2",
                               "seed": str(SEED), "consent_text": "I agree to take part.",
                               "completion_code": "C0DE42", "on_disconnect": "rejoin"}
    data.update(over)
    return data


def create(client: TestClient, csrf: str, **over: object) -> int:
    r = client.post("/studies/b", data=_form(csrf, **over), follow_redirects=False)
    assert r.status_code == 303, r.text[:2000]
    return int(r.headers["location"].rsplit("/", 1)[1])


def db(client: TestClient) -> Session:
    app = client.app
    return Session(app.state.engine)  # type: ignore[attr-defined]


def stored_plan(client: TestClient, sid: int) -> StudyBPlan:
    with db(client) as s:
        study = s.get(StudyB, sid)
        assert study is not None
        return StudyBPlan.from_json(study.plan)


def text_of(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


# --------------------------------------------------------------------------- set-up and plan


def test_create_shows_a_balanced_reproducible_plan(client: TestClient) -> None:
    csrf = login(client)
    sid = create(client, csrf)
    expected = make_plan(TASKS, SYSTEMS, seed=SEED, n_anchor=2)
    plan = stored_plan(client, sid)
    assert plan == expected  # the same seed reproduces the plan
    # 4 tasks + 2 anchors = 6 units × 2 systems = 12 sessions, two per participant
    assert len(plan.sessions) == 12 and len(plan.participants()) == 6
    page = client.get(f"/studies/b/{sid}")
    assert page.status_code == 200
    body = text_of(page.text)
    assert "draft" in body and "Plan check: every cell is run once" in body
    for s in plan.sessions:
        assert s.participant in body and s.task_id in body
    balance = re.search(r'<table class="grid compact" id="balance">(.*?)</table>', page.text,
                        re.S)
    assert balance
    rows = re.findall(r"<tr><td>([^<]+)</td>((?:<td>\d+</td>)+)</tr>", balance.group(1))
    counts = {name: [int(x) for x in re.findall(r"\d+", cells)] for name, cells in rows}
    # 6 participants × 2 positions, 2 systems: 3 of each system at each position, 6 in all
    assert counts == {ORACLE: [3, 3, 6], NEG: [3, 3, 6]}
    # the list shows the study with its sizes
    listing = text_of(client.get("/studies/b").text)
    assert "pilot" in listing and "draft" in listing
    # exports: JSON equals the stored plan, CSV reads back to it
    assert client.get(f"/studies/b/{sid}/plan.json").json() == expected.to_json()
    csv_text = client.get(f"/studies/b/{sid}/plan.csv").text
    back = StudyBPlan.from_csv(io.StringIO(csv_text), seed=SEED, task_ids=expected.task_ids,
                               systems=expected.systems,
                               anchor_task_ids=expected.anchor_task_ids)
    assert back == expected
    # regenerate with another seed: the plan is make_plan's for that seed
    r = client.post(f"/studies/b/{sid}/regenerate", data={"csrf_token": csrf, "seed": "11"},
                    follow_redirects=False)
    assert r.status_code == 303
    assert stored_plan(client, sid) == make_plan(TASKS, SYSTEMS, seed=11, n_anchor=2)


@pytest.mark.parametrize(("over", "named"), [
    ({"systems_extra": "bogus:thing"}, "bogus:thing"),
    ({"systems_extra": "scripted:oracle_typo"}, "scripted:oracle_typo"),
    ({"systems_extra": "baseline,,scripted:x"}, "blank agent spec"),
    ({"systems": [], "systems_extra": ""}, "choose at least one system"),
    ({"systems": [ORACLE, ORACLE]}, "listed twice"),
    ({"task_ids": ["apexv1_001", "no_such_task"]}, "no_such_task"),
    ({"sessions_per_participant": "3"}, "sessions_per_participant=3"),
    ({"sessions_per_participant": "5"}, "Use one of: 2"),
    ({"n_anchor": "9"}, "n_anchor=9"),
    ({"seed": "abc"}, "seed 'abc' is not a whole number"),
    ({"completion_url": "prolific.com/x"}, "prolific.com/x"),
    ({"name": "  "}, "needs a name"),
])
def test_bad_input_is_refused_naming_the_value(client: TestClient, over: dict[str, object],
                                               named: str) -> None:
    csrf = login(client)
    r = client.post("/studies/b", data=_form(csrf, **over))
    assert r.status_code == 400
    errors = " ".join(text_of(e) for e in re.findall(r'role="alert">(.*?)</span>', r.text,
                                                     re.S))
    assert named in errors, errors
    with db(client) as s:
        assert s.exec(select(StudyB)).all() == []


def _slots(plan: StudyBPlan) -> dict[tuple[str, int], PlannedSession]:
    return {(s.participant, s.position): s for s in plan.sessions}


def test_swap_valid_and_invalid(client: TestClient) -> None:
    csrf = login(client)
    sid = create(client, csrf)
    plan = stored_plan(client, sid)
    slots = _slots(plan)

    def tasks_of(label: str) -> set[str]:
        return {s.task_id for s in plan.sessions if s.participant == label}

    # Invalid by construction: X receives a task it already holds at its other position.
    bad = next(((x.participant, x.position), (y.participant, y.position))
               for x in plan.sessions for y in plan.sessions
               if y.participant != x.participant and y.task_id in tasks_of(x.participant)
               and y.task_id != x.task_id)
    r = client.post(f"/studies/b/{sid}/swap", data={
        "csrf_token": csrf, "a_participant": bad[0][0], "a_position": bad[0][1],
        "b_participant": bad[1][0], "b_position": bad[1][1]})
    assert r.status_code == 400
    body = text_of(r.text)
    assert "The swap was refused" in body and "sees task" in body
    assert stored_plan(client, sid) == plan

    # Valid by construction: same system and position, and neither participant holds the
    # other's task, so every cell, anchor pair, system count and position count is unchanged.
    good = next(((x.participant, x.position), (y.participant, y.position))
                for x in plan.sessions for y in plan.sessions
                if x.participant < y.participant and x.position == y.position
                and x.system == y.system and x.task_id != y.task_id
                and y.task_id not in tasks_of(x.participant)
                and x.task_id not in tasks_of(y.participant))
    r = client.post(f"/studies/b/{sid}/swap", data={
        "csrf_token": csrf, "a_participant": good[0][0], "a_position": good[0][1],
        "b_participant": good[1][0], "b_position": good[1][1]}, follow_redirects=False)
    assert r.status_code == 303
    after = _slots(stored_plan(client, sid))
    assert after[good[0]].task_id == slots[good[1]].task_id
    assert after[good[1]].task_id == slots[good[0]].task_id
    assert after[good[0]].anchor == slots[good[1]].anchor
    assert check_plan(stored_plan(client, sid)) == []
    # a position that is not a number is refused with a message, nothing changes
    r = client.post(f"/studies/b/{sid}/swap", data={
        "csrf_token": csrf, "a_participant": "P01", "a_position": "first",
        "b_participant": "P02", "b_position": "1"})
    assert r.status_code == 400 and "'first'" in text_of(r.text)


def test_csv_export_edit_import_refuses_violations(client: TestClient) -> None:
    csrf = login(client)
    sid = create(client, csrf)
    plan = stored_plan(client, sid)
    exported = client.get(f"/studies/b/{sid}/plan.csv")
    assert exported.status_code == 200 and "attachment" in exported.headers[
        "content-disposition"]
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert len(rows) == len(plan.sessions)
    # Edit: the first row's session now uses the other system.
    first = rows[0]
    first["system"] = NEG if first["system"] == ORACLE else ORACLE
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    edited = StudyBPlan.from_csv(io.StringIO(out.getvalue()), seed=plan.seed,
                                 task_ids=plan.task_ids, systems=plan.systems,
                                 anchor_task_ids=plan.anchor_task_ids)
    violations = check_plan(edited)
    # that participant now meets one system twice and one cell loses its only run
    assert any("meets system" in v for v in violations)
    assert any("has 0 primary sessions" in v or "has 0 second sessions" in v
               for v in violations)
    r = client.post(f"/studies/b/{sid}/import", data={"csrf_token": csrf},
                    files={"plan_file": ("plan.csv", out.getvalue().encode(), "text/csv")})
    assert r.status_code == 400
    body = text_of(r.text)
    assert "The imported plan was refused" in body
    for v in violations:
        assert v in body, v
    assert stored_plan(client, sid) == plan
    # a malformed row is named by its line
    broken = exported.text.replace("\nP", "\nP", 1).splitlines()
    broken[2] = broken[2].replace(",1,", ",x,").replace(",2,", ",x,")
    r = client.post(f"/studies/b/{sid}/import", data={"csrf_token": csrf},
                    files={"plan_file": ("plan.csv", "\n".join(broken).encode(), "text/csv")})
    assert r.status_code == 400 and "line 3" in text_of(r.text)
    # the unedited export imports cleanly
    r = client.post(f"/studies/b/{sid}/import", data={"csrf_token": csrf},
                    files={"plan_file": ("plan.csv", exported.content, "text/csv")},
                    follow_redirects=False)
    assert r.status_code == 303 and stored_plan(client, sid) == plan


# --------------------------------------------------------------------------- launch


def launch(client: TestClient, csrf: str, sid: int) -> None:
    r = client.post(f"/studies/b/{sid}/launch", data={"csrf_token": csrf},
                    follow_redirects=False)
    assert r.status_code == 303


def test_launch_creates_participants_tokens_and_sessions(client: TestClient) -> None:
    csrf = login(client)
    sid = create(client, csrf)
    plan = stored_plan(client, sid)
    launch(client, csrf, sid)
    with db(client) as s:
        study = s.get(StudyB, sid)
        assert study is not None and study.status == "launched"
        people = s.exec(select(Participant).where(Participant.study_id == sid)).all()
        rows = s.exec(select(LiveSession).where(LiveSession.study_id == sid)).all()
        label_of = {p.id: p.label for p in people}
    assert sorted(p.label for p in people) == plan.participants()
    tokens = [p.token for p in people]
    assert len(set(tokens)) == len(tokens)
    assert all(len(t) >= 32 and re.fullmatch(r"[A-Za-z0-9_-]+", t) for t in tokens)
    assert all(p.consent == "pending" for p in people)
    got = sorted((label_of[r.participant_id], r.position, r.task_id, r.system, r.anchor)
                 for r in rows)
    want = sorted((x.participant, x.position, x.task_id, x.system, x.anchor)
                  for x in plan.sessions)
    assert got == want and all(r.state == "pending" for r in rows)
    page = client.get(f"/studies/b/{sid}")
    body = text_of(page.text)
    for t in tokens:
        assert f"http://testserver/p/{t}" in body
        assert (f"http://testserver/p/{t}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
                f"&STUDY_ID={{{{%STUDY_ID%}}}}&SESSION_ID={{{{%SESSION_ID%}}}}") in body
    links = client.get(f"/studies/b/{sid}/links.csv").text
    assert all(t in links for t in tokens)
    # the plan is frozen: edits, a second launch and regenerating are refused
    for path, data in ((f"/studies/b/{sid}/swap", {"a_participant": "P01", "a_position": "1",
                                                   "b_participant": "P02",
                                                   "b_position": "1"}),
                       (f"/studies/b/{sid}/regenerate", {"seed": "9"}),
                       (f"/studies/b/{sid}/launch", {})):
        r = client.post(path, data={"csrf_token": csrf, **data})
        assert r.status_code == 409 and "launched" in text_of(r.text)
    assert stored_plan(client, sid) == plan
    with db(client) as s:
        assert len(s.exec(select(Participant).where(Participant.study_id == sid)).all()) == 6
    # the HTMX poll gets the monitor fragment only
    frag = client.get(f"/studies/b/{sid}", headers={"HX-Request": "true"})
    assert frag.status_code == 200 and "<html" not in frag.text and tokens[0] in frag.text
    r = client.post(f"/studies/b/{sid}/close", data={"csrf_token": csrf},
                    follow_redirects=False)
    assert r.status_code == 303
    assert "closed" in text_of(client.get(f"/studies/b/{sid}").text)


def test_captions_are_a_study_option_off_by_default(client: TestClient) -> None:
    csrf = login(client)
    form = client.get("/studies/b").text
    box = re.search(r'<input type="checkbox" name="captions"[^>]*>', form)
    assert box and "checked" not in box.group(0)
    plain = create(client, csrf)
    captioned = create(client, csrf, name="with captions", captions="1")
    with db(client) as s:
        a, b = s.get(StudyB, plain), s.get(StudyB, captioned)
        assert a is not None and b is not None
        assert a.captions is False and b.captions is True
    assert "captions off" in text_of(client.get(f"/studies/b/{plain}").text)
    assert "captions on" in text_of(client.get(f"/studies/b/{captioned}").text)
    # a refused form keeps the box as it was ticked
    r = client.post("/studies/b", data=_form(csrf, name=" ", captions="1"))
    assert r.status_code == 400
    box = re.search(r'<input type="checkbox" name="captions"[^>]*>', r.text)
    assert box and "checked" in box.group(0)


def _irreversible(page: str) -> dict[str, str]:
    """Form action → its confirmation question."""
    return {m.group(1): html.unescape(m.group(2)) for m in re.finditer(
        r'<form method="post" action="([^"]+)"[^>]*data-irreversible="([^"]+)"', page)}


def test_irreversible_actions_ask_for_confirmation(client: TestClient) -> None:
    csrf = login(client)
    sid = create(client, csrf)
    draft = client.get(f"/studies/b/{sid}").text
    assert '<script src="/static/js/confirm.js" defer></script>' in draft
    asks = _irreversible(draft)
    assert "Launch study “pilot”?" in asks[f"/studies/b/{sid}/launch"]
    assert "cannot be undone" in asks[f"/studies/b/{sid}/launch"]
    assert "edits to the current plan are lost" in asks[f"/studies/b/{sid}/regenerate"]
    assert "Replace the current plan" in asks[f"/studies/b/{sid}/import"]
    assert f"/studies/b/{sid}/swap" not in asks  # a swap can be swapped back
    launch(client, csrf, sid)
    asks = _irreversible(client.get(f"/studies/b/{sid}").text)
    assert "Close study “pilot”?" in asks[f"/studies/b/{sid}/close"]
    script = client.get("/static/js/confirm.js")
    assert script.status_code == 200
    assert "data-irreversible" in script.text and "window.confirm" in script.text
    assert "preventDefault" in script.text


@pytest.mark.sqlite_only(reason="an SQLite file by name; tests/test_migrations.py upgrades "
                         "from every revision with rows on SQLite and PostgreSQL")
def test_migration_0004_adds_the_options_to_existing_studies(tmp_path: Path) -> None:
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import inspect, text

    from app.db import MIGRATIONS, make_engine, migrate

    engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0003")
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO study_b (name, created_by, created_at, seed, sessions_per_participant,"
            " status, consent_text, completion_code, completion_url, on_disconnect) VALUES "
            "('old', 'ada', '2025-01-01 00:00:00', 0, 0, 'launched', '', '', '', 'rejoin')"))
    migrate(engine)
    columns = {c["name"] for c in inspect(engine).get_columns("study_b_participant")}
    assert "headphones_checked_at" in columns
    with Session(engine) as s:
        old = s.exec(select(StudyB)).one()
        assert old.name == "old" and old.captions is False


def test_researcher_pages_need_a_login(client: TestClient) -> None:
    csrf = login(client)
    sid = create(client, csrf)
    launch(client, csrf, sid)
    with db(client) as s:
        token = s.exec(select(Participant).where(Participant.study_id == sid)).first()
        assert token is not None
        tok = token.token
    paths = ["/studies/b", f"/studies/b/{sid}", f"/studies/b/{sid}/plan.csv",
             f"/studies/b/{sid}/plan.json", f"/studies/b/{sid}/links.csv",
             f"/studies/b/{sid}/results", f"/studies/b/{sid}/results.csv",
             f"/studies/b/{sid}/results.json"]
    anonymous = TestClient(client.app)
    anonymous.get(f"/p/{tok}")  # whatever the participant side answers, it is no login
    for path in paths:
        for url in (path, f"{path}?token={tok}"):
            r = anonymous.get(url, follow_redirects=False,
                              headers={"Authorization": f"Bearer {tok}"})
            assert r.status_code == 303 and r.headers["location"].startswith("/login"), url
            assert tok not in r.text
    # state changes need a login and a CSRF token
    fresh = _csrf(anonymous)
    r = anonymous.post(f"/studies/b/{sid}/close", data={"csrf_token": fresh},
                       follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")
    r = client.post(f"/studies/b/{sid}/close", data={}, follow_redirects=False)
    assert r.status_code == 403


# --------------------------------------------------------------------------- Table 10


def _place(run_dir: Path, runs_dir: Path, rel: str) -> None:
    target = runs_dir / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(run_dir, target)


def test_table10_against_a_hand_computation(client: TestClient, tmp_path: Path) -> None:
    csrf = login(client)
    sid = create(client, csrf)
    launch(client, csrf, sid)
    settings: Settings = client.app.state.settings  # type: ignore[attr-defined]
    runs_dir = settings.runs_dir
    src = tmp_path / "src"
    for task in TASKS:  # one oracle (WS 1) and one negative (WS 0) run per task, reused
        run_script(task, "oracle", src / "oracle")
        run_script(task, "negative_unfinalized", src / "neg")

    with db(client) as s:
        people = {p.id: p for p in s.exec(select(Participant)
                                          .where(Participant.study_id == sid)).all()}
        rows = s.exec(select(LiveSession).where(LiveSession.study_id == sid)).all()
        anchors = sorted({r.task_id for r in rows if r.anchor})
        assert len(anchors) == 2
        a1 = anchors[0]
        incomplete_task = next(t for t in TASKS if t not in anchors)
        pending_task = next(t for t in TASKS if t not in anchors and t != incomplete_task)
        for r in rows:
            label = people[r.participant_id].label
            if r.system == ORACLE and not r.anchor and r.task_id == incomplete_task:
                r.state, r.detail = "incomplete", "participant left"
            elif r.system == NEG and not r.anchor and r.task_id == pending_task:
                continue  # still pending: left out of Table 10
            else:
                # the human outcome follows the system, except: on the oracle system the
                # second participant of anchor task a1 fails (the anchor pair disagrees)
                ok = r.system == ORACLE and not (r.anchor and r.task_id == a1)
                rel = session_run_rel(sid, label, r.position, r.task_id)
                _place(src / ("oracle" if ok else "neg") / r.task_id / "r0", runs_dir, rel)
                r.state, r.run_dir = "complete", rel
            s.add(r)
        s.commit()

    # synthetic campaigns: oracle everywhere; the negative system passes one repeat of 2
    # on the first task and fails everything else
    oracle_camp, neg_camp = runs_dir / "sim" / "oracle", runs_dir / "sim" / "neg"
    for task in TASKS:
        run_script(task, "oracle", oracle_camp)
        run_script(task, "negative_unfinalized", neg_camp)
    run_script(TASKS[0], "oracle", neg_camp, repeat=1)
    for camp, agent in ((oracle_camp, ORACLE), (neg_camp, NEG)):
        (camp / "campaign.json").write_text(json.dumps({"agent": agent, "seed": 0}))

    # nothing chosen: the synthetic column says so
    page = client.get(f"/studies/b/{sid}/results")
    assert page.status_code == 200
    assert "not chosen" in text_of(page.text)
    assert "sim/oracle" in page.text and "sim/neg" in page.text

    query = "s0=sim/oracle&s1=sim/neg"
    data = client.get(f"/studies/b/{sid}/results.json?{query}").json()
    t10 = data["table10"]
    assert data["human_sessions"] == {"graded": 10, "incomplete": 1, "pending": 1,
                                      "notes": []}
    assert list(t10["systems"]) == SYSTEMS
    oracle_row, neg_row = t10["systems"][ORACLE], t10["systems"][NEG]
    # oracle: 3 graded primary tasks (one incomplete, excluded from both), all passing
    # in both conditions → 100, 100, diff 0 with a degenerate CI
    assert oracle_row["n_tasks"] == 3 and oracle_row["n_incomplete"] == 1
    assert oracle_row["human_pass_at_1"] == 100.0
    assert oracle_row["synthetic_pass_at_1"] == 100.0
    assert oracle_row["diff"] == 0.0 and oracle_row["diff_ci"] == [0.0, 0.0]
    # negative: 3 graded tasks (one pending); human 0 on each; synthetic per task is
    # 50 (TASKS[0], 1 of 2 repeats) and 0, 0 → 50/3; diff −50/3
    assert neg_row["n_tasks"] == 3 and neg_row["tasks"] == sorted(
        t for t in TASKS if t != pending_task)
    assert TASKS[0] != pending_task
    assert neg_row["human_pass_at_1"] == 0.0
    assert neg_row["synthetic_pass_at_1"] == pytest.approx(50 / 3)
    assert neg_row["diff"] == pytest.approx(-50 / 3)
    # paired task-level bootstrap of the per-task differences, drawn independently
    diffs = np.array([-50.0 if t == TASKS[0] else 0.0 for t in neg_row["tasks"]])
    rng = np.random.default_rng(SEED)
    idx = rng.integers(0, len(diffs), size=(2000, len(diffs)))
    lo, hi = np.quantile(diffs[idx].mean(axis=1), [0.025, 0.975])
    assert neg_row["diff_ci"] == pytest.approx([lo, hi])
    assert lo == -50.0 and hi == 0.0  # three tasks: all-−50 and no-−50 draws both occur
    assert t10["mean_diff"]["value"] == pytest.approx((0 - 50 / 3) / 2)
    # anchors: on the oracle system a1 disagrees (1 vs 0), the other anchor agrees (1, 1);
    # on the negative system both pairs fail twice (0, 0)
    a_or, a_neg = t10["anchor"]["systems"][ORACLE], t10["anchor"]["systems"][NEG]
    assert a_or["n_pairs"] == 2 and a_or["pct_same"] == 50.0
    assert a_or["pass_at_1_primary"] == 100.0 and a_or["pass_at_1_second"] == 50.0
    assert a_neg["n_pairs"] == 2 and a_neg["pct_same"] == 100.0
    assert t10["anchor"]["overall"]["pct_same"] == 75.0
    pair = next(p for p in a_or["pairs"] if p["task_id"] == a1)
    assert pair["primary_participant"] != pair["second_participant"]

    # the page shows the same numbers; CSV export holds them too
    page = client.get(f"/studies/b/{sid}/results?{query}")
    body = text_of(page.text)
    assert "-16.7" in body and "[-50.0, 0.0]" in body and "50.0" in body
    csv_rows = list(csv.DictReader(io.StringIO(
        client.get(f"/studies/b/{sid}/results.csv?{query}").text)))
    by_system = {r["system"]: r for r in csv_rows}
    assert float(by_system[NEG]["diff"]) == pytest.approx(-50 / 3, abs=1e-4)
    assert float(by_system[NEG]["synthetic_pass_at_1"]) == pytest.approx(50 / 3, abs=1e-4)
    assert by_system[ORACLE]["n_incomplete"] == "1"
    # the monitor lists replay links and WS for finished sessions
    monitor = client.get(f"/studies/b/{sid}").text
    assert "/runs/study-b/" in monitor and "replay" in monitor
    # only the negative system chosen: the oracle's synthetic is "not chosen", undefined diff
    data = client.get(f"/studies/b/{sid}/results.json?s1=sim/neg").json()
    row = data["table10"]["systems"][ORACLE]
    assert row["synthetic_pass_at_1"] is None and row["diff"] is None
    assert "not chosen" in row["notes"][0]
    shown = text_of(client.get(f"/studies/b/{sid}/results?s1=sim/neg").text)
    assert "undefined (" in shown
    # a campaign that is not under the runs directory is refused by name
    data = client.get(f"/studies/b/{sid}/results.json?s0=../etc").json()
    assert any("'../etc'" in p for p in data["problems"])

    # each picker is labelled with its system; another system's campaign is offered only as
    # refused (disabled), and choosing it anyway is refused naming the system, the campaign
    # and the agent it ran
    page = client.get(f"/studies/b/{sid}/results").text
    for i, system in enumerate(SYSTEMS):
        assert (f'<label for="pick-s{i}">Synthetic campaign for system <code>{system}</code>'
                f'</label>') in page
    picker0 = page[page.index('id="pick-s0"'):page.index("</select>", page.index('id="pick-s0"'))]
    assert re.search(r'<option value="sim/oracle"\s*>', picker0)
    assert re.search(r'<option value="sim/neg" disabled', picker0)
    data = client.get(f"/studies/b/{sid}/results.json?s0=sim/neg&s1=sim/neg").json()
    why = data["refused"][ORACLE]
    assert "'sim/neg'" in why and f"ran agent '{NEG}'" in why and f"not system '{ORACLE}'" in why
    assert any(p.startswith(f"{ORACLE}: refused:") for p in data["problems"])
    assert data["synthetic_campaigns"] == {NEG: "sim/neg"}
    row = data["table10"]["systems"][ORACLE]
    assert row["synthetic_pass_at_1"] is None and row["notes"][0].startswith(
        "synthetic condition refused")
    shown = text_of(client.get(f"/studies/b/{sid}/results?s0=sim/neg").text)
    assert f"Refused: campaign 'sim/neg' ran agent '{NEG}', not system '{ORACLE}'" in shown
    # a campaign of the same system that misses some of the study's tasks is refused, naming
    # them: by its task list, or (no list) by the runs it has
    part = runs_dir / "sim" / "oracle-part"
    for task in TASKS[:2]:
        shutil.copytree(oracle_camp / task, part / task)
    (part / "campaign.json").write_text(json.dumps({"agent": ORACLE, "tasks": TASKS[:2]}))
    data = client.get(f"/studies/b/{sid}/results.json?s0=sim/oracle-part").json()
    why = data["refused"][ORACLE]
    assert "does not cover the study's tasks for system 'scripted:oracle'" in why
    assert f"its task list lacks {', '.join(TASKS[2:])} (2 of 4 tasks)" in why
    (part / "campaign.json").write_text(json.dumps({"agent": ORACLE}))
    data = client.get(f"/studies/b/{sid}/results.json?s0=sim/oracle-part").json()
    assert f"it has no graded run of {', '.join(TASKS[2:])}" in data["refused"][ORACLE]
    # the campaigns of the right systems, covering the tasks, are used as before
    data = client.get(f"/studies/b/{sid}/results.json?{query}").json()
    assert data["refused"] == {} and data["synthetic_campaigns"] == {ORACLE: "sim/oracle",
                                                                      NEG: "sim/neg"}


# --------------------------------------------------------------------------- corrections


def _live_run(tmp_path: Path, runs_dir: Path) -> tuple[str, list[int]]:
    """A run directory shaped like a live participant's: the scripted oracle's log re-emitted
    through EventLog with a cue, a transcript and an ``auth.decision`` before each grant or
    revocation (as the orchestrator logs them), plus role-card and connection events."""
    src = run_script("apexv1_070", "oracle", tmp_path / "live-src")
    rel = "study-b/live/P01/1-apexv1_070"
    dest = runs_dir / rel
    dest.mkdir(parents=True)
    shutil.copy(src / "meta.json", dest / "meta.json")
    shutil.copy(src / "trace.wav", dest / "trace.wav")
    log = EventLog(dest / "events.jsonl")
    decisions: list[int] = []
    for e in read_events(src / "events.jsonl").events:
        t = e.t_media_ms
        if isinstance(e, SessionStart):
            log.emit(e, t)
            log.emit(ParticipantConnection(state="connected"), t)
            log.emit(CardFact(fact_id="employee_name", version=1), t)
            continue
        if isinstance(e, AuthGrant | AuthRevoke):
            kind = "approve" if isinstance(e, AuthGrant) else "revoke"
            said = "yes, go ahead and submit it" if kind == "approve" else "wait, don't submit"
            cue = f"cue-{e.plan_id}"
            log.emit(CueShow(cue_id=cue, kind=kind, plan_id=str(e.plan_id),
                             text=f"{kind} now"), t)
            log.emit(UserTranscript(text=said, start_ms=t - 900, end_ms=t, asr="test"), t)
            d = log.emit(AuthDecisionEvent(
                decision="grant" if kind == "approve" else "revoke", action=e.action,
                confidence=1.0, evidence=said, classifier="rules", cue_id=cue), t)
            decisions.append(d.seq)
            log.emit(e, t)
            log.emit(CueDone(cue_id=cue), t)
            continue
        log.emit(e, t)
    log.close()
    return rel, decisions


def test_correcting_a_decision_in_replay_regrades_with_provenance(
        client: TestClient, tmp_path: Path) -> None:
    csrf = login(client)
    settings: Settings = client.app.state.settings  # type: ignore[attr-defined]
    rel, decisions = _live_run(tmp_path, settings.runs_dir)
    assert len(decisions) == 3  # grant, revoke (barge-in), grant again before the commit
    page = client.get(f"/runs/{rel}/replay")
    assert page.status_code == 200
    body = text_of(page.text)
    assert "Authorization decisions" in body and "No correction yet." in body
    assert "“yes, go ahead and submit it”" in body
    grade = re.search(r"WS <b class=\"(pass|fail)\">(\d)</b>", page.text)
    assert grade and grade.group(2) == "1"  # the oracle's run passes as logged
    last = decisions[-1]  # the grant the commit used
    # refused: no reason, an unknown value, a seq that is not a decision, no CSRF
    for data, why in (({"decision_seq": last, "new": "none", "reason": " "}, "reason"),
                      ({"decision_seq": last, "new": "maybe", "reason": "x"}, "'maybe'"),
                      ({"decision_seq": 1, "new": "none", "reason": "x"}, "event 1"),
                      ({"decision_seq": last, "new": "grant", "reason": "x"}, "already")):
        r = client.post(f"/runs/{rel}/corrections", data={"csrf_token": csrf, **data})
        assert r.status_code == 400 and why in text_of(r.text), (data, text_of(r.text)[:600])
    r = client.post(f"/runs/{rel}/corrections",
                    data={"decision_seq": last, "new": "none", "reason": "x"})
    assert r.status_code == 403
    assert not (settings.runs_dir / rel / "corrections.jsonl").exists()
    # the replay is graded (and cached) before the correction
    reason = "She said 'yes' to the agent's question about the dates, not to submitting."
    r = client.post(f"/runs/{rel}/corrections", data={
        "csrf_token": csrf, "decision_seq": str(last), "new": "none", "reason": reason},
        follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].endswith("/replay#corrections")
    lines = (settings.runs_dir / rel / "corrections.jsonl").read_text().splitlines()
    assert len(lines) == 1
    saved = json.loads(lines[0])
    assert saved["by"] == "ada" and saved["old"] == "grant" and saved["new"] == "none"
    assert saved["reason"] == reason and saved["decision_seq"] == last
    assert saved["action"] == "commit:lr_1" and saved["at"]
    # the event log is untouched
    assert sum(isinstance(e, AuthDecisionEvent) for e in
               read_events(settings.runs_dir / rel / "events.jsonl").events) == 3
    page = client.get(f"/runs/{rel}/replay")
    body = text_of(page.text)
    history = re.search(r'id="correction-history">(.*?)</table>', page.text, re.S)
    assert history
    row = text_of(history.group(1))
    assert "ada" in row and "grant → none" in row and reason in row and saved["at"] in row
    # re-graded: the commit now went through without an approval, so WS is 0
    grade = re.search(r"WS <b class=\"(pass|fail)\">(\d)</b>", page.text)
    assert grade and grade.group(2) == "0"
    # … and the page says so: before → after, the decision that changed, and why
    regrade = re.search(r'id="regrade">(.*?)</table>', page.text, re.S)
    assert regrade
    rows = [text_of(r) for r in re.findall(r"<tr>(.*?)</tr>", regrade.group(1), re.S)]
    assert rows[1].split() == ["as", "logged", "pass", "pass", "pass", "pass", "pass"]
    assert rows[2].split() == ["with", "corrections", "pass", "fail", "←", "pass", "pass",
                               "fail", "←"]
    changed = text_of(re.search(r'id="changed-decisions">(.*?)</ul>', page.text,
                                re.S).group(1))  # type: ignore[union-attr]
    assert f"decision {last}: grant → none" in changed and reason in changed
    assert "PV now fails" in text_of(page.text)
    row_html = re.search(rf'id="decision-{last}"(.*?)</tr>', page.text, re.S)
    assert row_html and "none (corrected)" in text_of(row_html.group(1))
    # the corrections travel to the timeline lanes
    lanes = re.search(r'id="corrections-data">(.*?)</script>', page.text, re.S)
    assert lanes and json.loads(lanes.group(1))[0]["new"] == "none"
    # correcting it back restores the pass; both corrections stay on record
    r = client.post(f"/runs/{rel}/corrections", data={
        "csrf_token": csrf, "decision_seq": str(last), "new": "grant",
        "reason": "Listened again: she did approve."}, follow_redirects=False)
    assert r.status_code == 303
    page = client.get(f"/runs/{rel}/replay")
    grade = re.search(r"WS <b class=\"(pass|fail)\">(\d)</b>", page.text)
    assert grade and grade.group(2) == "1"
    assert "none → grant" in text_of(page.text)
    assert len((settings.runs_dir / rel / "corrections.jsonl").read_text().splitlines()) == 2
