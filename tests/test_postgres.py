"""PostgreSQL itself (issue #18): the start-up path for a database server (one line, no
password, what to do), and two app processes serving one PostgreSQL database under concurrent
requests: shared join-link claims (each place to exactly one participant id, each id one
place), Study A annotator saves (no rating lost) and Study B plan edits (no edit lost; an edit
after the launch is refused, and the launched sessions are the stored plan)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy.engine import make_url
from sqlmodel import Session, col, select

from app.auth import create_user
from app.cli import main as cli_main
from app.db import DatabaseRefused, open_database
from app.models_study_a import Annotator, ItemVisit, StudyAItem
from app.models_study_a import Rating as RatingRow
from app.models_study_b import LiveSession, Participant, StudyB
from app.settings import Settings
from app.web import create_app
from study_protocols.study_b import StudyBPlan, swap_sessions
from tests.pg import Cluster, _free_port
from tests.webclient import PASSWORD

pytestmark = pytest.mark.postgresql_only

ROOT = Path(__file__).resolve().parent.parent
SECRET = "two-process-secret"
TOKEN_LINK = re.compile(r"/annotate/([A-Za-z0-9_-]{32})(?![A-Za-z0-9_-])")
CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')
CSRF_HEADER = re.compile(r'"X-CSRF-Token": "([^"]+)"')


# --------------------------------------------------------------------------- start-up path


def _refusal(url: str, tmp_path: Path) -> str:
    with pytest.raises(DatabaseRefused) as caught:
        open_database(Settings(data_dir=tmp_path / "data", database_url=url))
    message = str(caught.value)
    assert "\n" not in message
    password = make_url(url).password
    assert password and password not in message
    assert "***" in message
    return message


def test_a_database_server_that_refuses_is_one_line_without_the_password(
        pg_cluster: Cluster, tmp_path: Path) -> None:
    wrong = pg_cluster.url("postgres").replace(pg_cluster.password, "not-the-password")
    message = _refusal(wrong, tmp_path)
    assert "cannot be reached" in message and "password" in message
    missing = pg_cluster.url("no_such_database")
    message = _refusal(missing, tmp_path)
    assert "no_such_database" in message and "createdb" in message
    nobody_there = f"postgresql+psycopg://apex:secret-pw@127.0.0.1:{_free_port()}/x"
    message = _refusal(nobody_there, tmp_path)
    assert "is running" in message
    with pytest.raises(DatabaseRefused, match="--init-db applies to the SQLite"):
        open_database(Settings(data_dir=tmp_path / "data", database_url=missing, init_db=True))


def test_the_cli_never_prints_the_database_password(tmp_path: Path) -> None:
    url = os.environ["DATABASE_URL"]
    password = make_url(url).password
    assert password
    result = CliRunner().invoke(cli_main, ["user", "create", "grace", "--password-stdin"],
                                input="long-enough-pw\n",
                                env={"APEX_DATA_DIR": str(tmp_path / "data")})
    assert result.exit_code == 0, result.output
    assert "created researcher 'grace'" in result.output
    assert password not in result.output and "***" in result.output


def test_timestamps_survive_a_server_in_another_time_zone(pg_cluster: Cluster,
                                                          tmp_path: Path) -> None:
    """The server's default zone is not UTC; what the app stores and reads back is the same
    moment (the columns hold their zone; app/db.py's sessions run in UTC)."""
    from datetime import UTC, datetime

    from app.models import User

    with pg_cluster.admin() as conn:
        zone = conn.execute("SHOW timezone").fetchone()[0]
    assert zone != "UTC"  # tests/pg.py starts the cluster in another zone on purpose
    engine = open_database(Settings(data_dir=tmp_path / "data"))
    moment = datetime(2025, 6, 1, 12, 30, tzinfo=UTC)
    with Session(engine) as db:
        db.add(User(username="tz", password_hash="x", created_at=moment))
        db.commit()
    engine.dispose()
    engine = open_database(Settings(data_dir=tmp_path / "data"))
    with Session(engine) as db:
        assert db.exec(select(User)).one().created_at == moment
    engine.dispose()


def test_text_postgresql_cannot_hold_is_a_bad_request_not_a_server_error(tmp_path: Path) -> None:
    """A NUL character in a form field or a token (SQLite stores it; PostgreSQL refuses it) is
    a 400 that says what to do."""
    from fastapi.testclient import TestClient

    from tests.webclient import log_in, page_csrf, researcher_app

    app = researcher_app(tmp_path / "data", secret_key=SECRET)
    with TestClient(app, raise_server_exceptions=False) as client:
        token = page_csrf(client)
        nul = client.post("/login", data={"csrf_token": token, "username": "ad\x00a",
                                           "password": PASSWORD, "next": "/tasks"})
        pages = [nul, client.get("/p/abc%00def"), client.get("/annotate/abc%00def"),
                 client.get("/p/join/abc%00def")]
        for r in pages:
            assert r.status_code == 400, (r.request.url, r.status_code)
            assert "NUL character" in r.text and "remove it" in r.text
        log_in(client, next_url="/studies/a")
        r = client.post("/studies/a", data={
            "csrf_token": page_csrf(client, "/studies/a"), "name": "pi\x00lot", "seed": "0",
            "n_tasks": "4", "plans_per_task": "3", "n_annotators": "1"})
        assert r.status_code == 400 and "NUL character" in r.text, r.status_code
    app.state.engine.dispose()


# --------------------------------------------------------------------------- two processes


class Server:
    """``apex-voice serve`` on loopback in its own process."""

    def __init__(self, data: Path, log: Path, env: dict[str, str]) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        with log.open("w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from app.cli import main; main()", "serve",
                 "--no-demo-runs", "--host", "127.0.0.1", "--port", str(self.port)],
                cwd=ROOT, env={**env, "APEX_DATA_DIR": str(data)}, stdout=out,
                stderr=subprocess.STDOUT)

    def wait_up(self, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}: "
                                     f"{self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.base}/login", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"server not up in {timeout_s} s: {self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory: pytest.TempPathFactory, module_database_url: str | None,
                ) -> Iterator[tuple[list[Server], Any]]:
    """Two app processes on one fresh PostgreSQL database and one data folder, sharing the
    session secret, for the module (each test works on studies of its own); an engine of the
    test's own on the database."""
    assert module_database_url is not None
    folder = tmp_path_factory.mktemp("two-servers")
    data = folder / "data"
    app = create_app(Settings(data_dir=data, secret_key=SECRET, database_url=module_database_url))
    with Session(app.state.engine) as db:
        create_user(db, "ada", PASSWORD)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "APEX_SECRET_KEY": SECRET,
           "DATABASE_URL": module_database_url,
           # every request comes from 127.0.0.1: the per-address limits would stop the test,
           # not the database
           "APEX_JOIN_CLIENT_LIMIT": "100000/minute", "APEX_JOIN_LINK_LIMIT": "100000/minute",
           "APEX_LOGIN_CLIENT_LIMIT": "100000/minute"}
    servers = [Server(data, folder / f"server{i}.log", env) for i in (1, 2)]
    try:
        for server in servers:
            server.wait_up()
        yield servers, app.state.engine
    finally:
        for server in servers:
            server.stop()
        app.state.engine.dispose()


def _researcher(base: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=60)
    token = CSRF_FIELD.search(client.get("/login").text)
    assert token
    r = client.post("/login", data={"csrf_token": token.group(1), "username": "ada",
                                    "password": PASSWORD, "next": "/studies/b"})
    assert r.status_code == 303, r.text[:500]
    return client


def _csrf(client: httpx.Client, path: str) -> str:
    match = CSRF_FIELD.search(client.get(path).text)
    assert match, path
    return match.group(1)


def _clone(client: httpx.Client, base: str) -> httpx.Client:
    """The same browser (its cookies) talking to another app process."""
    return httpx.Client(base_url=base, cookies=client.cookies, timeout=60)


def _all_at_once(jobs: list[Callable[[], Any]]) -> list[Any]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(lambda job: job(), jobs))


def _study_b(client: httpx.Client, name: str) -> int:
    data = {"csrf_token": _csrf(client, "/studies/b"), "name": name,
            "systems": ["scripted:oracle", "scripted:negative_unfinalized"], "systems_extra": "",
            "task_ids": ["apexv1_001", "apexv1_011", "apexv1_015", "apexv1_070"],
            "n_anchor": "2", "seed": "3", "consent_text": "I agree to take part.",
            "completion_code": "C0DE42", "on_disconnect": "rejoin"}
    r = client.post("/studies/b", data=data)
    assert r.status_code == 303, r.text[:2000]
    return int(r.headers["location"].rsplit("/", 1)[1])


def test_two_processes_hand_each_shared_link_place_to_exactly_one_participant(
        two_servers: tuple[list[Server], Any]) -> None:
    servers, engine = two_servers
    researcher = _researcher(servers[0].base)
    sid = _study_b(researcher, "claims")
    r = researcher.post(f"/studies/b/{sid}/launch",
                        data={"csrf_token": _csrf(researcher, f"/studies/b/{sid}")})
    assert r.status_code == 303, r.text[:2000]
    with Session(engine) as db:
        study = db.get(StudyB, sid)
        assert study is not None and study.join_token
        join = study.join_token
        places = len(db.exec(select(Participant).where(Participant.study_id == sid)).all())
    assert places >= 4
    # More ids than places, every id arriving at both processes at once (a double click, two
    # tabs), all at the same moment.
    pids = [f"pid-{i:02d}" for i in range(places + 4)]

    def arrive(pid: str, base: str) -> Callable[[], tuple[str, int, str]]:
        def go() -> tuple[str, int, str]:
            with httpx.Client(base_url=base, timeout=60) as c:
                r = c.get(f"/p/join/{join}",
                          params={"PROLIFIC_PID": pid, "STUDY_ID": "s", "SESSION_ID": pid})
                return pid, r.status_code, r.headers.get("location", "")
        return go

    answers = _all_at_once([arrive(pid, s.base) for pid in pids for s in servers])
    assert {code for _, code, _ in answers} <= {303, 403, 409}, answers
    with Session(engine) as db:
        people = db.exec(select(Participant).where(Participant.study_id == sid)).all()
    holders = [p.external_pid for p in people if p.external_pid is not None]
    assert len(holders) == places  # every place taken…
    assert len(set(holders)) == places  # …each by a different id
    by_token = {p.token: p.external_pid for p in people}
    sent_to: dict[str, set[str]] = {}
    for pid, code, location in answers:
        if code == 303:
            sent_to.setdefault(pid, set()).add(location.rsplit("/", 1)[1])
    for pid, tokens in sent_to.items():
        assert len(tokens) == 1, (pid, tokens)  # an id is sent to one place only…
        assert by_token[next(iter(tokens))] == pid  # …the place that holds that id
    assert set(sent_to) == set(holders)
    refused_full = {pid for pid, code, _ in answers if code == 409}
    assert refused_full == set(pids) - set(holders)  # the rest were told the study is full


def test_two_processes_lose_no_annotator_rating(two_servers: tuple[list[Server], Any]) -> None:
    servers, engine = two_servers
    researcher = _researcher(servers[0].base)
    data = {"csrf_token": _csrf(researcher, "/studies/a"), "name": "pilot", "seed": "0",
            "n_tasks": "4", "plans_per_task": "3", "n_annotators": "2"}
    r = researcher.post("/studies/a", data=data)
    assert r.status_code == 303, r.text[:2000]
    study_id = int(r.headers["location"].rsplit("/", 1)[1])
    tokens = list(dict.fromkeys(TOKEN_LINK.findall(
        researcher.get(f"/studies/a/{study_id}").text)))
    assert len(tokens) == 2
    browsers: dict[str, tuple[httpx.Client, str]] = {}
    for token in tokens:
        client = httpx.Client(base_url=servers[0].base, timeout=60)
        page = client.get(f"/annotate/{token}/item/1")
        match = CSRF_HEADER.search(page.text)
        assert page.status_code == 200 and match
        browsers[token] = (client, match.group(1))
    with Session(engine) as db:
        orders = {a.token: list(a.order) for a in db.exec(
            select(Annotator).where(Annotator.study_id == study_id))}
    total = len(next(iter(orders.values())))
    assert total >= 6

    def post(token: str, n: int, what: str, body: dict[str, Any], server: Server
             ) -> Callable[[], int]:
        def go() -> int:
            client, csrf = browsers[token]
            with _clone(client, server.base) as c:
                return c.post(f"/annotate/{token}/item/{n}/{what}", json=body,
                              headers={"X-CSRF-Token": csrf}).status_code
        return go

    def wanted(token: str, n: int) -> dict[str, Any]:
        k = tokens.index(token)
        return {"fidelity": 1 + (n + k) % 5, "naturalness": 1 + (2 * n + k) % 5,
                "leakage": (n + k) % 2, "comment": f"item {n} by {k}"}

    # Every clip played (twice, once per process), then every field of every item saved on
    # its own, the four fields of one item through both processes, all at the same moment.
    played = _all_at_once([post(t, n, "played", {}, s) for t in tokens
                           for n in range(1, total + 1) for s in servers])
    assert set(played) == {200}
    saves = [post(t, n, "rating", {field: value}, servers[(n + i) % 2])
             for t in tokens for n in range(1, total + 1)
             for i, (field, value) in enumerate(wanted(t, n).items())]
    assert set(_all_at_once(saves)) == {200}
    with Session(engine) as db:
        annotators = {a.id: a.token for a in db.exec(
            select(Annotator).where(Annotator.study_id == study_id))}
        ratings = db.exec(select(RatingRow).where(
            col(RatingRow.annotator_id).in_(list(annotators)))).all()
        visits = db.exec(select(ItemVisit).where(
            col(ItemVisit.annotator_id).in_(list(annotators)))).all()
        items = {i.id for i in db.exec(select(StudyAItem)
                                       .where(StudyAItem.study_id == study_id))}
    assert len(ratings) == len(tokens) * total  # one row per (annotator, item), none doubled
    for row in ratings:
        token = annotators[row.annotator_id]
        n = orders[token].index(row.item_id) + 1
        assert row.item_id in items
        got = {"fidelity": row.fidelity, "naturalness": row.naturalness,
               "leakage": row.leakage, "comment": row.comment}
        assert got == wanted(token, n), (token, n)
    assert len(visits) == len(tokens) * total
    assert all(v.played_at is not None and v.rated_at is not None for v in visits)


def test_two_processes_lose_no_plan_edit(two_servers: tuple[list[Server], Any]) -> None:
    servers, engine = two_servers
    researcher = _researcher(servers[0].base)
    sid = _study_b(researcher, "edits")
    csrf = _csrf(researcher, f"/studies/b/{sid}")
    with Session(engine) as db:
        study = db.get(StudyB, sid)
        assert study is not None
        before = StudyBPlan.from_json(study.plan)

    def tasks_of(label: str) -> set[str]:
        return {s.task_id for s in before.sessions if s.participant == label}

    # Swaps that keep the design and touch different participants: they commute, and each
    # undoes itself, so the final plan is known from how many times each one was accepted.
    swaps: list[tuple[tuple[str, int], tuple[str, int]]] = []
    used: set[str] = set()
    for x in before.sessions:
        for y in before.sessions:
            if (x.participant < y.participant and not {x.participant, y.participant} & used
                    and x.position == y.position and x.system == y.system
                    and x.task_id != y.task_id and y.task_id not in tasks_of(x.participant)
                    and x.task_id not in tasks_of(y.participant)):
                swaps.append(((x.participant, x.position), (y.participant, y.position)))
                used |= {x.participant, y.participant}
    assert len(swaps) >= 2, swaps

    def swap(k: int, server: Server) -> Callable[[], tuple[int, int]]:
        a, b = swaps[k]

        def go() -> tuple[int, int]:
            with _clone(researcher, server.base) as c:
                r = c.post(f"/studies/b/{sid}/swap", data={
                    "csrf_token": csrf, "a_participant": a[0], "a_position": a[1],
                    "b_participant": b[0], "b_position": b[1]})
                return k, r.status_code
        return go

    def launch() -> tuple[int, int]:
        with _clone(researcher, servers[1].base) as c:
            return -1, c.post(f"/studies/b/{sid}/launch", data={"csrf_token": csrf}).status_code

    # Round one: every swap three times, through both processes, at once.
    jobs = [swap(k, servers[(k + i) % 2]) for i in range(3) for k in range(len(swaps))]
    first = _all_at_once(jobs)
    # Round two: the same again with the launch among them.
    second = _all_at_once([*jobs[: len(jobs) // 2], launch, *jobs[len(jobs) // 2:]])
    answers = first + second
    assert ((-1, 303)) in answers
    assert {code for k, code in answers if k >= 0} <= {303, 409}, answers
    assert all(code == 303 for _, code in first)  # nothing refused before the launch
    accepted = Counter(k for k, code in answers if k >= 0 and code == 303)
    expected = before
    for k, count in accepted.items():
        if count % 2:
            expected = swap_sessions(expected, *swaps[k])
    with Session(engine) as db:
        study = db.get(StudyB, sid)
        assert study is not None and study.status == "launched"
        stored = StudyBPlan.from_json(study.plan)
        people = {p.id: p.label for p in db.exec(
            select(Participant).where(Participant.study_id == sid))}
        launched = sorted((people[s.participant_id], s.position, s.task_id, s.system, s.anchor)
                          for s in db.exec(select(LiveSession)
                                           .where(LiveSession.study_id == sid)))
    assert stored == expected  # every accepted swap is in the plan: none was lost
    assert launched == sorted((s.participant, s.position, s.task_id, s.system, s.anchor)
                              for s in stored.sessions)  # the launched sessions are the plan
