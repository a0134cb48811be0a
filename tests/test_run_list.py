"""The run list (issue #17): date, duration, agent, task and outcome; sorted, searched and
paged on the server through query parameters; two runs ticked → compare; incomplete campaigns
marked; a search with no match told apart from an empty runs folder; bad parameters a 400 or
clamped with a note, never a 500; the index re-reads a run only when its files change."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import app.runindex as runindex
import grading.gates as gates
from runtime.core.rundir import RunDir
from tests.conftest import run_script
from tests.webclient import WebClient

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

N_COPIES = 23
"""Copies of the oracle run with other agents, durations and dates: 26 runs in all."""


@pytest.fixture(scope="module")
def runs_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    oracle = run_script("apexv1_070", "oracle", out / "camp")
    run_script("apexv1_001", "negative_stale_correction", out / "camp")
    run_script("apexv1_070", "negative_commit_without_approval", out / "other")
    (out / "camp" / "campaign.json").write_text(json.dumps(
        {"agent": "scripted:oracle", "seed": 0, "repeats": 1,
         "tasks": ["apexv1_070", "apexv1_001"]}))
    # A campaign whose campaign.json asks for more runs than it holds (an aborted campaign).
    (out / "other" / "campaign.json").write_text(json.dumps(
        {"agent": "scripted:negative_commit_without_approval", "seed": 0, "repeats": 3,
         "tasks": ["apexv1_070"]}))
    # Copies with their own agent label, media length and start time: what to sort and page.
    lines = (oracle / "events.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    for k in range(N_COPIES):
        d = out / "bulk" / "apexv1_070" / f"r{k}"
        shutil.copytree(oracle, d, ignore=shutil.ignore_patterns("*.wav"))  # not listed
        meta = json.loads((d / "meta.json").read_text())
        meta.update(agent=f"scripted:copy{k:02d}", repeat=k, run_id=f"apexv1_070.r{k}",
                    media_ms=64000 + 1000 * ((k * 7) % N_COPIES))
        (d / "meta.json").write_text(json.dumps(meta))
        head = {**first, "t_wall": 1_800_000_000 + 3600 * ((k * 5) % N_COPIES)}
        (d / "events.jsonl").write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    (out / "bulk" / "campaign.json").write_text(json.dumps(
        {"agent": "copies", "seed": 0, "repeats": N_COPIES, "tasks": ["apexv1_070"]}))
    return out


@pytest.fixture
def client(web_client: WebClient, runs_source: Path) -> TestClient:
    return web_client(runs_source, next_url="/runs")


ALL = N_COPIES + 3


def _runs(html: str) -> list[str]:
    return re.findall(r'<tr data-run="([^"]+)"', html)


def _cell(html: str, run: str, cls: str) -> str:
    row = html[html.index(f'<tr data-run="{run}"'):]
    row = row[:row.index("</tr>")]
    match = re.search(rf'<td class="{cls}">(.*?)</td>', row, flags=re.S)
    assert match, row
    return match.group(1)


def test_rows_show_date_duration_agent_task_outcome(client: TestClient) -> None:
    page = client.get("/runs?q=copy07").text
    assert _runs(page) == ["bulk/apexv1_070/r7"]
    meta = json.loads((Path(client.app.state.settings.runs_dir)  # type: ignore[attr-defined]
                       / "bulk/apexv1_070/r7/meta.json").read_text())
    seconds = meta["media_ms"] // 1000
    assert _cell(page, "bulk/apexv1_070/r7", "num") == f"{seconds // 60}:{seconds % 60:02d}"
    t_wall = 1_800_000_000 + 3600 * ((7 * 5) % N_COPIES)
    from datetime import UTC, datetime
    when = datetime.fromtimestamp(t_wall, UTC)
    assert f'<time datetime="{when.isoformat(timespec="seconds")}">' \
           f'{when:%Y-%m-%d %H:%M}</time>' in page
    assert "scripted:copy07" in page and ">apexv1_070<" in page and ">pass<" in page


def test_sorted_on_the_server(client: TestClient) -> None:
    page = client.get("/runs?q=bulk&sort=duration&dir=asc&per=50").text
    rows = _runs(page)
    durations = [_cell(page, r, "num") for r in rows]
    seconds = [int(m) * 60 + int(s) for m, s in (d.split(":") for d in durations)]
    assert len(rows) == N_COPIES and seconds == sorted(seconds) and seconds[0] < seconds[-1]
    down = _runs(client.get("/runs?q=bulk&sort=duration&dir=desc&per=50").text)
    assert down == list(reversed(rows))
    by_date = client.get("/runs?q=bulk&sort=date&dir=asc&per=50").text
    dates = re.findall(r'<time datetime="([^"]+)"', by_date)
    assert len(dates) == N_COPIES and dates == sorted(dates)
    agents = _runs(client.get("/runs?sort=agent&dir=asc&per=50").text)
    # scripted:copy00 … scripted:copy22, scripted:negative_…, scripted:oracle
    assert agents[0] == "bulk/apexv1_070/r0" and agents[-1] == "camp/apexv1_070/r0"
    assert 'aria-sort="ascending"' in client.get("/runs?sort=task&dir=asc").text


def test_searched_and_filtered_on_the_server(client: TestClient) -> None:
    assert sorted(_runs(client.get("/runs?q=negative").text)) == ["camp/apexv1_001/r0",
                                                                 "other/apexv1_070/r0"]
    assert _runs(client.get("/runs?q=NEGATIVE+apexv1_001").text) == ["camp/apexv1_001/r0"]
    assert _runs(client.get("/runs?outcome=fail&q=camp").text) == ["camp/apexv1_001/r0"]


def test_paged_on_the_server(client: TestClient) -> None:
    per = 10
    seen: list[str] = []
    for page in (1, 2, 3):
        r = client.get(f"/runs?sort=run&dir=asc&per={per}&page={page}",
                       headers={"HX-Request": "true"})
        assert r.status_code == 200 and "<html" not in r.text  # the fragment alone
        rows = _runs(r.text)
        assert len(rows) == min(per, ALL - (page - 1) * per)
        assert f"page {page} of 3" in r.text
        seen += rows
    assert len(seen) == ALL == len(set(seen)) and seen == sorted(seen)
    page2 = client.get(f"/runs?sort=run&dir=asc&per={per}&page=2").text
    assert 'rel="next"' in page2 and 'rel="prev"' in page2
    assert "page=3" in page2 and "sort=run" in page2  # pager links keep the sort
    # The default page holds at most 50 rows.
    assert len(_runs(client.get("/runs").text)) == min(ALL, 50)


def test_bad_parameters_are_a_400_or_clamped_never_a_500(client: TestClient) -> None:
    for query, says in (("sort=bogus", "sort by one of date"), ("dir=sideways", "asc or desc"),
                        ("page=two", "page must be a whole number"),
                        ("page=1e3", "page must be a whole number"),
                        ("per=ten", "per must be a whole number"),
                        ("outcome=great", "unknown outcome")):
        r = client.get(f"/runs?{query}")
        assert r.status_code == 400 and says in r.text, (query, r.status_code, r.text[-400:])
    r = client.get("/runs?per=10&page=99")
    assert r.status_code == 200 and "There is no page 99" in r.text and "page 3 of 3" in r.text
    assert len(_runs(r.text)) == ALL - 20
    r = client.get("/runs?per=10&page=-4")
    assert r.status_code == 200 and "There is no page -4" in r.text and "page 1 of 3" in r.text
    r = client.get("/runs?per=100000")
    assert r.status_code == 200 and "out of range" in r.text and len(_runs(r.text)) == ALL


def test_no_match_is_not_the_empty_state(client: TestClient, tmp_path: Path) -> None:
    r = client.get("/runs?q=no-such-run-anywhere")
    assert r.status_code == 200 and _runs(r.text) == []
    assert "No run matches" in r.text and f"{ALL} runs exist" in r.text
    assert "No runs here yet" not in r.text
    frag = client.get("/runs?outcome=ungraded", headers={"HX-Request": "true"}).text
    assert "No run matches" in frag and "No runs here yet" not in frag
    shutil.rmtree(client.app.state.settings.runs_dir)  # type: ignore[attr-defined]
    empty = client.get("/runs").text
    assert "No runs here yet" in empty and "No run matches" not in empty


def test_incomplete_campaigns_are_marked(client: TestClient) -> None:
    page = client.get("/runs?per=50").text
    notices = re.findall(r'class="notice error incomplete-campaign" data-campaign="([^"]+)"',
                         page)
    assert notices == ["other"]
    assert "1 of 3 runs complete" in page
    row = page[page.index('<tr data-run="other/apexv1_070/r0"'):]
    assert "incomplete campaign" in row[:row.index("</tr>")]
    for complete in ("camp/apexv1_070/r0", "bulk/apexv1_070/r3"):
        row = page[page.index(f'<tr data-run="{complete}"'):]
        assert "incomplete campaign" not in row[:row.index("</tr>")]
    # A run cut off and kept aside under .incomplete/ marks its campaign too.
    runs = Path(client.app.state.settings.runs_dir)  # type: ignore[attr-defined]
    shutil.copytree(runs / "camp" / "apexv1_070" / "r0",
                    runs / "camp" / ".incomplete" / "apexv1_070.r0.1800000000000")
    page = client.get("/runs?per=50").text
    assert "camp" in re.findall(r'data-campaign="([^"]+)"', page)
    assert "cut-off run kept aside" in page
    assert ".incomplete" not in "".join(_runs(page))  # kept aside, not listed as a run


def test_two_ticked_runs_go_to_compare(client: TestClient) -> None:
    page = client.get("/runs?q=apexv1_070&per=50").text
    form = page[page.index('<form method="get" action="/compare"'):]
    form = form[:form.index("</form>")]
    boxes = re.findall(r'<input type="checkbox" name="run" value="([^"]+)"', form)
    assert "camp/apexv1_070/r0" in boxes and "other/apexv1_070/r0" in boxes
    assert 'id="compare-picked"' in form
    r = client.get("/compare?run=camp/apexv1_070/r0&run=other/apexv1_070/r0")
    assert r.status_code == 200 and 'id="cmp-rows"' in r.text


def test_the_index_does_not_reread_unchanged_runs(client: TestClient,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert client.get("/runs").status_code == 200  # fills the index
    calls = {"meta": 0, "grade": 0}
    read_meta, grade = RunDir.read_meta, gates.grade_run_dir

    def counting_meta(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["meta"] += 1
        return read_meta(*args, **kwargs)

    def counting_grade(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["grade"] += 1
        return grade(*args, **kwargs)

    monkeypatch.setattr(RunDir, "read_meta", counting_meta)
    monkeypatch.setattr(runindex, "grade_run_dir", counting_grade)
    for query in ("", "?sort=duration", "?q=copy&page=2&per=10"):
        assert client.get(f"/runs{query}").status_code == 200
    assert calls == {"meta": 0, "grade": 0}
    # A run whose meta.json changes is read again (and only that one).
    runs = Path(client.app.state.settings.runs_dir)  # type: ignore[attr-defined]
    meta_path = runs / "bulk" / "apexv1_070" / "r4" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["agent"] = "scripted:renamed"
    meta_path.write_text(json.dumps(meta))
    page = client.get("/runs?q=renamed").text
    # Its record is read twice (by the index, then by the grader), the others not at all.
    assert _runs(page) == ["bulk/apexv1_070/r4"] and calls == {"meta": 2, "grade": 1}
