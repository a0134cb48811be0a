"""In-process tests of every web route: login required, CSRF enforced, HTMX fragments vs full
pages, 404 pages, and replay of damaged run directories."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.conftest import run_script
from tests.webclient import PASSWORD, WebClient, log_in, page_csrf

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)


@pytest.fixture(scope="module")
def runs_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    run_script("apexv1_070", "oracle", out / "camp")
    run_script("apexv1_001", "negative_stale_correction", out / "camp")
    run_script("apexv1_070", "negative_commit_without_approval", out / "other")
    (out / "camp" / "campaign.json").write_text('{"agent": "scripted", "seed": 0}')
    return out


@pytest.fixture
def client(web_client: WebClient, runs_source: Path) -> TestClient:
    return web_client(runs_source, next_url=None)


_csrf = page_csrf


def login(client: TestClient) -> None:
    log_in(client)


RESEARCHER_PAGES = [
    "/tasks", "/tasks/apexv1_001", "/tasks/apexv1_001/audio/opening_r1", "/runs",
    "/runs/camp/apexv1_070/r0/replay", "/runs/camp/apexv1_070/r0/trace.wav",
    "/runs/camp/apexv1_070/r0/peaks.json", "/campaigns", "/campaigns/camp",
    "/campaigns/camp/report.json", "/campaigns/camp/runs.csv", "/campaigns/camp/slices.csv",
    "/compare?a=camp/apexv1_070/r0&b=other/apexv1_070/r0",
]


@pytest.mark.parametrize("path", RESEARCHER_PAGES)
def test_every_researcher_page_needs_a_login(client: TestClient, path: str) -> None:
    r = client.get(path, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login?next=")
    r = client.get(path, headers={"HX-Request": "true"}, follow_redirects=False)
    assert r.status_code == 401 and r.headers["HX-Redirect"].startswith("/login")
    login(client)
    assert client.get(path).status_code == 200


def test_login_rejects_wrong_password_and_missing_csrf(client: TestClient) -> None:
    token = _csrf(client)
    r = client.post("/login", data={"csrf_token": token, "username": "ada", "password": "nope"})
    assert r.status_code == 401 and "Wrong username or password" in r.text
    r = client.post("/login", data={"username": "ada", "password": PASSWORD})
    assert r.status_code == 403 and "CSRF" in r.text
    r = client.post("/login", data={"csrf_token": "forged", "username": "ada",
                                    "password": PASSWORD})
    assert r.status_code == 403


def test_logout_needs_csrf(client: TestClient) -> None:
    login(client)
    assert client.post("/logout").status_code == 403
    assert client.get("/tasks").status_code == 200  # still logged in
    token = _csrf(client, "/tasks")
    r = client.post("/logout", data={"csrf_token": token}, follow_redirects=False)
    assert r.status_code == 303
    assert client.get("/tasks", follow_redirects=False).status_code == 303


def test_htmx_gets_fragments_plain_requests_get_pages(client: TestClient) -> None:
    login(client)
    full = client.get("/tasks")
    assert full.text.lstrip().startswith("<!doctype html>") and "apexv1_070" in full.text
    frag = client.get("/tasks?archetype=coordinate", headers={"HX-Request": "true"})
    assert "<html" not in frag.text and "apexv1_070" in frag.text
    assert "apexv1_001" not in frag.text
    runs = client.get("/runs?outcome=fail", headers={"HX-Request": "true"})
    assert "<html" not in runs.text and "camp/apexv1_001/r0" in runs.text
    assert "camp/apexv1_070/r0" not in runs.text  # the oracle passed
    assert "Suite composition" in full.text


def test_task_page_lists_reveal_graph_and_plays_audio(client: TestClient) -> None:
    login(client)
    page = client.get("/tasks/apexv1_070").text
    assert "barge_revoke" in page and "960 ms after the caller says approve_first" in page
    audio = client.get("/tasks/apexv1_070/audio/barge_revoke_r1")
    assert audio.status_code == 200 and audio.content[:4] == b"OggS"  # Ogg/Opus bank


def test_unknown_ids_give_404_pages(client: TestClient) -> None:
    login(client)
    for path in ["/tasks/nope_999", "/tasks/apexv1_001/audio/nope", "/runs/nope/replay",
                 "/runs/../../etc/replay", "/no/such/page", "/studies/a/abc", "/studies/b/x1"]:
        r = client.get(path)
        assert r.status_code == 404, path
        assert "<!doctype html>" in r.text and "Traceback" not in r.text
    # Error pages reached from a participant's or annotator's link do not point into the
    # researcher side.
    for path in ["/p/not-a-token", "/annotate/not-a-token", "/p/not-a-token/s/x"]:
        r = client.get(path)
        assert r.status_code == 404 and "/tasks" not in r.text, path


def test_replay_page_has_events_and_grade(client: TestClient) -> None:
    login(client)
    page = client.get("/runs/camp/apexv1_001/r0/replay").text
    assert 'id="events-data"' in page and "artifact.update" in page
    assert "(stale)" in page  # the stale date of birth is marked in the field diff
    peaks = client.get("/runs/camp/apexv1_001/r0/peaks.json").json()
    assert len(peaks["peaks"]) == 2 and peaks["duration"] > 30
    assert len(peaks["peaks"][0]) == pytest.approx(peaks["duration"] * 50, abs=2)


def test_damaged_run_directories_open_with_notices(client: TestClient, tmp_path: Path) -> None:
    login(client)
    run = Path(client.app.state.settings.runs_dir) / "camp" / "apexv1_070" / "r0"  # type: ignore[attr-defined]
    lines = (run / "events.jsonl").read_text().splitlines()
    (run / "events.jsonl").write_text("\n".join(lines[:40]) + "\n" + lines[40][:25])
    (run / "trace.wav").unlink()
    page = client.get("/runs/camp/apexv1_070/r0/replay")
    assert page.status_code == 200
    assert "unreadable event" in page.text and "did not finish" in page.text
    assert "no stereo trace" in page.text
    assert client.get("/runs/camp/apexv1_070/r0/trace.wav").status_code == 404


def test_campaign_dashboard_and_downloads(client: TestClient) -> None:
    login(client)
    page = client.get("/campaigns/camp").text
    assert "Gate decomposition" in page and "Reliability" in page and "Floor control" in page
    report = client.get("/campaigns/camp/report.json").json()
    assert report["report"]["n_runs"] == 2
    assert report["report"]["pass_at_1"]["value"] == 0.5  # 070 oracle passes, 001 negative fails
    assert report["yield_rate"] == 1.0  # the oracle yielded to its one barge-in
    csv_rows = client.get("/campaigns/camp/runs.csv").text.strip().splitlines()
    assert csv_rows[0].startswith("run_id,path,task_id") and len(csv_rows) == 3
    assert "archetype,coordinate" in client.get("/campaigns/camp/slices.csv").text
    assert "camp" in client.get("/campaigns").text
    assert client.get("/campaigns/nope").status_code == 404


def test_two_runs_side_by_side_aligned_on_acts(client: TestClient) -> None:
    login(client)
    replay = client.get("/runs/camp/apexv1_070/r0/replay").text
    assert 'action="/compare"' in replay and "other/apexv1_070/r0" in replay
    page = client.get("/compare?a=camp/apexv1_070/r0&b=other/apexv1_070/r0").text
    # The negative tries to commit before asking for approval: the paths part at that tool call.
    assert 'id="diverged"' in page
    diverged = page[page.index('id="diverged"'):][:600]
    assert "tool:commit" in diverged
    assert "cmp-same" in page and "cmp-only_b" in page
    assert client.get("/compare?a=camp/apexv1_070/r0&b=nope").status_code == 404
