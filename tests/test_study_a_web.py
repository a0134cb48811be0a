"""Study A in the web app, through the in-process client: creating a study from the sampler,
annotator queues, ratings saved one by one (validation, edits, lock after submit), resuming,
calibration items kept out of the agreement figures, exports, access by token only, and a gold
scan over every response an annotator can reach."""

from __future__ import annotations

import csv
import html
import io
import itertools
import json
import math
import re
import struct
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app import study_a as svc
from app.models_study_a import Annotator, ItemVisit, StudyA, StudyAItem
from app.models_study_a import Rating as RatingRow
from runtime.core.spec import TaskSpec, load_tasks
from runtime.suite.subsets import AUDIT, task_folders
from study_protocols.agreement import REPORT_CSV_COLUMNS, agreement_report, read_ratings_csv
from study_protocols.study_a import sample_study_a
from study_protocols.visibility import (
    fact_values,
    find_hidden_gold,
    hidden_gold_strings,
    plan_visible_facts,
    user_state_text,
    volunteer_facts,
)
from tests.webclient import WebClient, log_in, researcher_app

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

TOKEN_URL = re.compile(r"http://testserver/annotate/([A-Za-z0-9_-]{32})(?![A-Za-z0-9_-])")
GRADERS = ("exact", "casefold_exact", "normalized_date", "normalized_phone",
           "normalized_address", "enum", "numeric_tolerance", "set_f1", "ordered_list",
           "interval_overlap", "semantic")


@pytest.fixture(scope="module")
def tasks() -> dict[str, TaskSpec]:
    """The audit subset: the web Study A's pool (Catalogue.audit)."""
    return {t.id: t for t in load_tasks(task_folders(None, AUDIT))}


@pytest.fixture
def app(tmp_path: Path) -> Any:
    return researcher_app(tmp_path / "data")


@pytest.fixture
def researcher(app: Any, web_client: WebClient) -> TestClient:
    return web_client(app=app, next_url="/studies/a")


def _form_csrf(client: TestClient, path: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', client.get(path).text)
    assert match
    return match.group(1)


def login(client: TestClient) -> None:
    log_in(client, next_url="/studies/a")


def create_study(client: TestClient, **form: str) -> int:
    data = {"name": "pilot", "seed": "0", "n_tasks": "24", "plans_per_task": "3",
            "n_annotators": "3", **form}
    r = client.post("/studies/a", data={"csrf_token": _form_csrf(client, "/studies/a"), **data},
                    follow_redirects=False)
    assert r.status_code == 303, r.text[:2000]
    return int(r.headers["location"].rsplit("/", 1)[1])


def tokens(client: TestClient, study_id: int) -> list[str]:
    return list(dict.fromkeys(TOKEN_URL.findall(client.get(f"/studies/a/{study_id}").text)))


class Annotating:
    """One annotator's browser: its own cookies, the CSRF token its pages carry."""

    def __init__(self, app: Any, token: str) -> None:
        self.client = TestClient(app)
        self.token = token
        page = self.client.get(f"/annotate/{token}/item/1")
        assert page.status_code == 200
        match = re.search(r'"X-CSRF-Token": "([^"]+)"', page.text)
        assert match
        self.csrf = match.group(1)

    def played(self, n: int) -> Any:
        """What the page posts when the item's clip has played to the end."""
        return self.client.post(f"/annotate/{self.token}/item/{n}/played", json={},
                                headers={"X-CSRF-Token": self.csrf})

    def rate(self, n: int, *, listen: bool = True, **body: Any) -> Any:
        """Save a rating, having played the clip to the end first unless ``listen=False``."""
        if listen:  # idempotent: the first play-through counts
            self.played(n)
        return self.client.post(f"/annotate/{self.token}/item/{n}/rating", json=body,
                                headers={"X-CSRF-Token": self.csrf})

    def rate_all(self, fidelity: int = 5, naturalness: int = 4, leakage: int = 0) -> None:
        total = self.state()["total"]
        for n in range(1, total + 1):
            r = self.rate(n, fidelity=fidelity, naturalness=naturalness, leakage=leakage)
            assert r.status_code == 200, r.text

    def state(self) -> dict[str, Any]:
        body: dict[str, Any] = self.client.get(f"/annotate/{self.token}/state.json").json()
        return body


def rows(app: Any, model: Any) -> list[Any]:
    with Session(app.state.engine) as session:
        return list(session.exec(select(model)))


# --------------------------------------------------------------------------- researcher


def test_create_study_draws_72_items_and_three_independent_queues(
        app: Any, researcher: TestClient, tasks: dict[str, TaskSpec]) -> None:
    study_id = create_study(researcher)
    page = html.unescape(researcher.get(f"/studies/a/{study_id}").text)
    # Closing the study is irreversible: the form asks first (static/js/confirm.js).
    assert re.search(r'action="/studies/a/\d+/close" data-irreversible="Close study “pilot”\? '
                     r'No rating can change any more\. This cannot be undone\."', page)
    assert '<script src="/static/js/confirm.js" defer></script>' in page
    # The constraint report of the sampler, and what it could not satisfy.
    sample = sample_study_a(sorted(tasks.values(), key=lambda t: t.id), seed=0)
    for check in sample.checks:
        assert f"<td>{check.name}</td><td>{check.wanted}</td><td>{check.got}</td>" in page
    assert sample.unsatisfied() == []  # every shipped task has a critical plan
    items = [i for i in rows(app, StudyAItem) if i.study_id == study_id]
    assert len(items) == 72
    assert {i.item_key for i in items} == {i.key for i in sample.items}
    assert {i.role for i in items} == {"opening", "information", "critical"}
    people = [a for a in rows(app, Annotator) if a.study_id == study_id]
    assert [a.label for a in people] == ["A1", "A2", "A3"]
    ids = sorted(int(i.id or 0) for i in items)
    for a in people:
        assert sorted(a.order) == ids  # a permutation of every item
    assert len({tuple(a.order) for a in people}) == 3  # three different orders
    assert len({a.token for a in people}) == 3
    assert sorted(tokens(researcher, study_id)) == sorted(a.token for a in people)
    assert "0/72" in page
    # The study list shows it.
    listing = researcher.get("/studies/a").text
    assert "pilot" in listing and f"/studies/a/{study_id}" in listing


def test_study_list_counts_items_and_the_items_table_fits(researcher: TestClient) -> None:
    study_id = create_study(researcher, n_tasks="2", n_annotators="1")
    listing = researcher.get("/studies/a").text
    assert "built-in method" not in listing
    row = listing[listing.index(f'href="/studies/a/{study_id}"'):]
    row = row[:row.index("</tr>")]
    assert re.findall(r"<td>([^<]*)</td>", row)[1:3] == ["6", "1"]  # items, annotators
    # The items table scrolls inside its own box; its cells wrap (static/css/study.css).
    page = researcher.get(f"/studies/a/{study_id}").text
    assert '<div class="table-scroll">\n<table class="grid compact study-items">' in page
    css = researcher.get("/static/css/study.css").text
    assert ".table-scroll { max-width: 100%; overflow-x: auto; }" in css
    assert "table.study-items td, table.study-items th { overflow-wrap: anywhere; }" in css


def test_create_study_rejects_bad_input_with_clear_messages(researcher: TestClient) -> None:
    token = _form_csrf(researcher, "/studies/a")
    base = {"csrf_token": token, "name": "x", "seed": "0", "n_tasks": "24",
            "plans_per_task": "3", "n_annotators": "3"}
    r = researcher.post("/studies/a", data={**base, "n_tasks": "100"})
    assert r.status_code == 400 and "larger than the pool of 24" in r.text
    r = researcher.post("/studies/a", data={**base, "seed": "-1"})
    assert r.status_code == 400 and "seed" in r.text and "-1" in r.text
    r = researcher.post("/studies/a", data={**base, "n_annotators": "lots"})
    assert r.status_code == 400 and "n_annotators" in r.text
    r = researcher.post("/studies/a", data={**base, "name": "  "})
    assert r.status_code == 400 and "name" in r.text
    r = researcher.post("/studies/a", data={k: v for k, v in base.items() if k != "csrf_token"})
    assert r.status_code == 403
    assert rows(researcher.app, StudyA) == []


def test_add_annotator_gets_own_order_and_label_checks(app: Any, researcher: TestClient) -> None:
    study_id = create_study(researcher, n_tasks="8", n_annotators="1")
    token = _form_csrf(researcher, f"/studies/a/{study_id}")
    r = researcher.post(f"/studies/a/{study_id}/annotators",
                        data={"csrf_token": token, "label": "MK"}, follow_redirects=False)
    assert r.status_code == 303
    r = researcher.post(f"/studies/a/{study_id}/annotators",
                        data={"csrf_token": token, "label": "MK"})
    assert r.status_code == 400 and "already has an annotator labelled" in r.text
    r = researcher.post(f"/studies/a/{study_id}/annotators",
                        data={"csrf_token": token, "label": "<b>"})
    assert r.status_code == 400 and "label" in r.text
    people = [a for a in rows(app, Annotator) if a.study_id == study_id]
    assert [a.label for a in people] == ["A1", "MK"]
    assert sorted(people[0].order) == sorted(people[1].order) and len(people[0].order) == 24
    assert people[0].order != people[1].order


# --------------------------------------------------------------------------- ratings


def test_rating_is_validated_saved_edited_and_locked_after_submit(
        app: Any, researcher: TestClient) -> None:
    study_id = create_study(researcher, n_tasks="2", n_annotators="2")
    a = Annotating(app, tokens(researcher, study_id)[0])
    r = a.rate(1, fidelity=4)
    assert r.status_code == 200
    assert r.json()["rating"] == {"fidelity": 4, "naturalness": None, "leakage": None,
                                  "comment": ""}
    assert r.json()["complete"] is False and r.json()["done"] == 0
    cases: list[tuple[dict[str, Any], str]] = [
        ({"naturalness": 0}, "naturalness"), ({"fidelity": 6}, "fidelity"),
        ({"fidelity": "4"}, "fidelity"), ({"fidelity": 3.5}, "fidelity"),
        ({"leakage": 2}, "leakage"), ({"stars": 5}, "stars"),
        ({"comment": "x" * 2001}, "comment")]
    for bad, word in cases:
        r = a.rate(1, **bad)
        assert r.status_code == 400 and word in r.json()["error"], (bad, r.text)
    r = a.client.post(f"/annotate/{a.token}/item/1/rating", content=b"not json",
                      headers={"X-CSRF-Token": a.csrf})
    assert r.status_code == 400 and "JSON" in r.json()["error"]
    r = a.client.post(f"/annotate/{a.token}/item/1/rating", json={"fidelity": 2})
    assert r.status_code == 403 and "CSRF" in r.json()["error"]
    # Edits change only the field given.
    assert a.rate(1, naturalness=3).json()["rating"]["fidelity"] == 4
    r = a.rate(1, fidelity=2, leakage=True, comment="sounds read out")
    assert r.json()["rating"] == {"fidelity": 2, "naturalness": 3, "leakage": 1,
                                  "comment": "sounds read out"}
    assert r.json()["complete"] is True and r.json()["done"] == 1
    assert a.rate(1, leakage=None).json()["complete"] is False  # null clears a rating
    a.rate(1, leakage=0)
    saved = [x for x in rows(app, RatingRow)]
    assert len(saved) == 1 and (saved[0].fidelity, saved[0].naturalness, saved[0].leakage) \
        == (2, 3, 0)
    # The page shows the saved ratings pressed.
    page = a.client.get(f"/annotate/{a.token}/item/1").text
    assert re.search(r'data-dim="fidelity" data-value="2" aria-pressed="true"', page)
    assert re.search(r'data-dim="leakage" data-value="0" aria-pressed="true"', page)
    assert "sounds read out" in page
    # Submit is refused until every item has all three ratings.
    submit_token = a.csrf
    r = a.client.post(f"/annotate/{a.token}/submit", data={"csrf_token": submit_token})
    assert r.status_code == 409 and "5 item(s) still need all three ratings: 2, 3, 4, 5, 6" \
        in r.text
    a.rate_all()
    r = a.client.post(f"/annotate/{a.token}/submit", data={"csrf_token": submit_token},
                      follow_redirects=False)
    assert r.status_code == 303
    r = a.rate(1, fidelity=5)
    assert r.status_code == 409 and r.json()["locked"] is True
    assert "handed in and locked" in r.json()["error"]
    assert a.rate(2, comment="late").status_code == 409
    page = a.client.get(f"/annotate/{a.token}/item/1").text
    assert 'data-locked="true"' in page and "disabled" in page and "readonly" in page
    assert a.state()["finished"] is True
    r = a.client.post(f"/annotate/{a.token}/submit", data={"csrf_token": submit_token})
    assert r.status_code == 409
    # The other annotator is not locked; closing the study locks everyone.
    b = Annotating(app, tokens(researcher, study_id)[1])
    assert b.rate(1, fidelity=1).status_code == 200
    close = _form_csrf(researcher, f"/studies/a/{study_id}")
    researcher.post(f"/studies/a/{study_id}/close", data={"csrf_token": close})
    r = b.rate(1, fidelity=2)
    assert r.status_code == 409 and "closed" in r.json()["error"]


def test_resume_where_one_left_off_on_any_device(app: Any, researcher: TestClient) -> None:
    study_id = create_study(researcher, n_tasks="4", n_annotators="1")
    token = tokens(researcher, study_id)[0]
    a = Annotating(app, token)
    r = a.client.get(f"/annotate/{token}", follow_redirects=False)
    assert r.headers["location"] == f"/annotate/{token}/item/1"
    a.rate(1, fidelity=5, naturalness=5, leakage=0)
    assert a.client.get(f"/annotate/{token}/item/2").status_code == 200
    assert a.client.get(f"/annotate/{token}/item/5", headers={"HX-Request": "true"}) \
        .status_code == 200
    other_device = TestClient(app)
    # The link continues at the first item not yet rated (2), not the last one opened (5).
    r = other_device.get(f"/annotate/{token}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/annotate/{token}/item/2"
    overview = other_device.get(f"/annotate/{token}/overview").text
    assert re.search(rf'id="ann-continue" href="/annotate/{token}/item/2">Continue where you '
                     r'left off \(item 2', overview)
    state = other_device.get(f"/annotate/{token}/state.json").json()
    assert state["position"] == 5 and state["done"] == 1 and state["items"][0]["fidelity"] == 5
    page = other_device.get(f"/annotate/{token}/item/5").text
    assert 'id="ann-done">1<' in page and "Item <b id=\"ann-n\">5</b> of 12" in page
    a.rate(2, fidelity=4, naturalness=4, leakage=1)
    a.rate(3, fidelity=4)  # partly rated: still the first unrated
    r = other_device.get(f"/annotate/{token}", follow_redirects=False)
    assert r.headers["location"] == f"/annotate/{token}/item/3"
    for n in range(3, 13):
        a.rate(n, fidelity=4, naturalness=4, leakage=0)
    r = other_device.get(f"/annotate/{token}", follow_redirects=False)
    assert r.headers["location"] == f"/annotate/{token}/overview"  # all rated: submit there
    assert 'id="ann-continue"' not in other_device.get(r.headers["location"]).text
    # Out-of-range positions are not saved as the position.
    assert other_device.get(f"/annotate/{token}/item/13").status_code == 404
    assert other_device.get(f"/annotate/{token}/state.json").json()["position"] == 5


def test_ratings_open_only_after_the_clip_played_to_the_end(
        app: Any, researcher: TestClient) -> None:
    study_id = create_study(researcher, n_tasks="2", n_annotators="1")
    a = Annotating(app, tokens(researcher, study_id)[0])
    page = a.client.get(f"/annotate/{a.token}/item/1").text
    assert 'data-played="false"' in page and 'id="ann-listen"' in page
    assert f'data-played-url="/annotate/{a.token}/item/1/played"' in page
    assert len(re.findall(r'<button type="button" data-dim="\w+" data-value="\d" '
                          r'aria-pressed="false" disabled>', page)) == 12
    # The server refuses a rating of an item not yet heard, with a clear message.
    r = a.rate(1, listen=False, fidelity=4)
    assert r.status_code == 409 and r.json()["not_played"] is True
    assert "Listen to the whole clip first" in r.json()["error"]
    assert rows(app, RatingRow) == []
    assert a.rate(1, listen=False, comment="a note before listening").status_code == 200
    # The played event needs the page's CSRF header and a position in the queue.
    assert a.client.post(f"/annotate/{a.token}/item/1/played", json={}).status_code == 403
    assert a.played(99).status_code == 404
    assert a.played(1).status_code == 200
    assert a.rate(1, listen=False, fidelity=4).status_code == 200
    page = a.client.get(f"/annotate/{a.token}/item/1").text
    assert 'data-played="true"' in page and 'id="ann-listen"' not in page
    assert ' disabled>' not in page
    # Hearing item 1 opens item 1 only.
    assert a.rate(2, listen=False, fidelity=4).status_code == 409
    script = a.client.get("/static/js/annotate.js").text
    assert '"ended"' in script and "playedUrl" in script


def test_time_per_item_is_recorded_on_the_server(app: Any, researcher: TestClient) -> None:
    study_id = create_study(researcher, n_tasks="2", n_annotators="1")
    a = Annotating(app, tokens(researcher, study_id)[0])  # opens item 1
    a.client.get(f"/annotate/{a.token}/item/2")
    a.rate(1, fidelity=4, naturalness=4)
    visits = {v.item_id: v for v in rows(app, ItemVisit)}
    assert len(visits) == 2
    first = next(v for v in visits.values() if v.played_at is not None)
    assert first.opened_at is not None and first.rated_at is None  # not complete yet
    opened = first.opened_at
    a.client.get(f"/annotate/{a.token}/item/1")  # reopening keeps the first open
    a.rate(1, leakage=0)
    v = next(x for x in rows(app, ItemVisit) if x.item_id == first.item_id)
    assert v.opened_at == opened and v.rated_at is not None and v.rated_at >= opened
    done_at = v.rated_at
    a.rate(1, leakage=1)  # a later edit keeps the first completion
    assert next(x for x in rows(app, ItemVisit) if x.item_id == first.item_id).rated_at \
        == done_at


def test_htmx_gets_the_item_fragment(app: Any, researcher: TestClient) -> None:
    study_id = create_study(researcher, n_tasks="2", n_annotators="1")
    token = tokens(researcher, study_id)[0]
    client = TestClient(app)
    frag = client.get(f"/annotate/{token}/item/2", headers={"HX-Request": "true"}).text
    assert "<html" not in frag and 'id="annotate"' in frag and 'data-position="2"' in frag
    full = client.get(f"/annotate/{token}/item/2").text
    assert full.lstrip().startswith("<!doctype html>") and "/static/js/annotate.js" in full


def test_concurrent_saves_never_clobber_each_other(app: Any, researcher: TestClient) -> None:
    study_id = create_study(researcher, n_tasks="4", n_annotators="1")
    engine = app.state.engine
    with Session(engine) as session:
        annotator = session.exec(select(Annotator)).one()
        order = list(annotator.order)
    fields = ["fidelity", "naturalness", "leakage"]
    jobs = [(item_id, f) for item_id in order for f in fields]

    def save(job: tuple[int, str]) -> None:
        item_id, field = job
        value = 0 if field == "leakage" else 1 + item_id % 5
        with Session(engine) as session:
            annotator = session.exec(select(Annotator)).one()
            item = session.get(StudyAItem, item_id)
            assert item is not None
            svc.save_rating(session, annotator, item,
                            svc.RatingUpdate.model_validate({field: value}))

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(save, jobs))
    saved = {r.item_id: r for r in rows(app, RatingRow)}
    assert len(saved) == len(order) == 12
    for item_id in order:
        r = saved[item_id]
        assert (r.fidelity, r.naturalness, r.leakage) == (1 + item_id % 5, 1 + item_id % 5, 0)
    assert study_id


# --------------------------------------------------------------------------- results, exports


def _rate_study(app: Any, researcher: TestClient, study_id: int) -> list[Annotating]:
    """Three annotators with different, overlapping judgments of every item."""
    people = [Annotating(app, t) for t in tokens(researcher, study_id)]
    with Session(app.state.engine) as session:
        keys = {i.id: i.item_key for i in session.exec(select(StudyAItem))}
        annotators = {a.token: a for a in session.exec(select(Annotator))}
    for k, person in enumerate(people):
        order = annotators[person.token].order
        for n, item_id in enumerate(order, start=1):
            h = sum(map(ord, keys[item_id]))
            fid = 5 - (h + k) % 3 if (h + k) % 4 else 3
            nat = 4 + (h * (k + 1)) % 2 if k < 2 else 3 + h % 3
            leak = int((h + k) % 11 == 0)
            r = person.rate(n, fidelity=fid, naturalness=nat, leakage=leak)
            assert r.status_code == 200
    return people


def test_exports_round_trip_and_match_the_agreement_report(
        app: Any, researcher: TestClient, tasks: dict[str, TaskSpec], tmp_path: Path) -> None:
    study_id = create_study(researcher, n_tasks="8")
    _rate_study(app, researcher, study_id)
    r = researcher.get(f"/studies/a/{study_id}/ratings.csv")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert "attachment" in r.headers["content-disposition"]
    lines = r.text.splitlines()
    assert lines[0] == ("item_id,task_id,annotator_id,fidelity,naturalness,leakage,calibration,"
                        "seconds")
    assert len(lines) == 1 + 24 * 3
    # seconds, last: first open (or first play, which implies it) to complete ratings, from
    # the server's clocks.
    table = list(csv.DictReader(io.StringIO(r.text)))
    assert all(float(row["seconds"]) >= 0 for row in table)
    path = tmp_path / "ratings.csv"
    path.write_text(r.text)
    ratings = read_ratings_csv(path)
    assert len(ratings) == 72 and {x.annotator_id for x in ratings} == {"A1", "A2", "A3"}
    keys = {i.item_key for i in rows(app, StudyAItem)}
    assert {x.item_id for x in ratings} == keys
    # The JSON report is the agreement report of exactly those ratings.
    archetypes = {t.id: t.taxonomy.archetype for t in tasks.values()}
    expected = agreement_report(ratings, archetypes=archetypes, seed=0)
    got = researcher.get(f"/studies/a/{study_id}/agreement.json").json()
    assert got["dimensions"] == json.loads(json.dumps(expected["dimensions"]))
    assert got["per_archetype"] == json.loads(json.dumps(expected["per_archetype"]))
    assert got["most_disagreed"] == json.loads(json.dumps(expected["most_disagreed"]))
    assert got["calibration"] is None
    # Table 9 CSV.
    table = researcher.get(f"/studies/a/{study_id}/table9.csv").text.splitlines()
    assert table[0] == ",".join(REPORT_CSV_COLUMNS)
    assert [row.split(",")[0] for row in table[1:]] == ["fidelity", "naturalness", "leakage"]
    fid = dict(zip(REPORT_CSV_COLUMNS, table[1].split(","), strict=False))
    assert float(fid["mean"]) == pytest.approx(expected["dimensions"]["fidelity"]["mean"])
    assert float(fid["alpha_ordinal"]) == pytest.approx(
        expected["dimensions"]["fidelity"]["alpha_ordinal"])
    # The results page shows the same numbers in the Table 9 layout.
    page = researcher.get(f"/studies/a/{study_id}/results").text
    row = page[page.index('id="row-fidelity"'):page.index('id="row-naturalness"')]
    assert f"{expected['dimensions']['fidelity']['mean']:.2f}" in row
    lo, hi = expected["dimensions"]["fidelity"]["ci"]
    assert f"[{lo:.2f}, {hi:.2f}]" in row
    assert f"{expected['dimensions']['fidelity']['alpha_ordinal']:.3f}" in row
    start = page.index('id="row-leakage"')
    leak = page[start:page.index("</tbody>", start)]
    kappa = expected["dimensions"]["leakage"]["fleiss_kappa"]
    assert kappa is not None and f"{kappa:.3f}" in leak
    for name in expected["per_archetype"]:
        assert f"<td>{name}</td>" in page
    assert expected["most_disagreed"][0]["item_id"] in page
    # Comments export.
    a = Annotating(app, tokens(researcher, study_id)[0])
    a.rate(3, comment='odd "pause", then fine')
    comments = researcher.get(f"/studies/a/{study_id}/comments.csv").text.splitlines()
    assert comments[0] == "item_id,task_id,annotator_id,calibration,updated_at,comment"
    assert len(comments) == 2 and comments[1].endswith('"odd ""pause"", then fine"')


def test_results_show_undefined_statistics_as_undefined(app: Any, researcher: TestClient) -> None:
    study_id = create_study(researcher, n_tasks="2")
    page = researcher.get(f"/studies/a/{study_id}/results").text
    assert page.count("undefined (") >= 9  # nothing rated: every figure is undefined
    assert "no fidelity ratings" in page
    # Every annotator agrees on every rating: alpha and kappa have no chance disagreement.
    for token in tokens(researcher, study_id):
        Annotating(app, token).rate_all(fidelity=5, naturalness=4, leakage=0)
    report = researcher.get(f"/studies/a/{study_id}/agreement.json").json()
    assert report["dimensions"]["fidelity"]["mean"] == 5.0
    assert report["dimensions"]["fidelity"]["alpha_ordinal"] is None
    assert report["dimensions"]["leakage"]["fleiss_kappa"] is None
    page = researcher.get(f"/studies/a/{study_id}/results").text
    row = page[page.index('id="row-fidelity"'):page.index('id="row-naturalness"')]
    assert "5.00" in row and "undefined (every pairable rating is 5" in row
    leak = page[page.index('id="row-leakage"'):]
    assert "0.0%" in leak and "undefined (" in leak[:leak.index("</tr>")]
    csv_rows = researcher.get(f"/studies/a/{study_id}/table9.csv").text.splitlines()
    fid = dict(zip(REPORT_CSV_COLUMNS, next(csv.reader([csv_rows[1]])), strict=True))
    assert fid["alpha_ordinal"] == "" and "every pairable rating is 5" in fid["undefined"]



def _wav_bytes(seconds: float = 0.5, rate: int = 16000) -> bytes:
    """A small PCM16 mono WAV (a 440 Hz tone) written by hand."""
    n = int(seconds * rate)
    frames = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate)))
                      for i in range(n))
    header = b"RIFF" + struct.pack("<I", 36 + len(frames)) + b"WAVEfmt " + struct.pack(
        "<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data" + struct.pack("<I", len(frames))
    return header + frames


def _upload(client: TestClient, study_id: int, *, filename: str = "leaky.wav",
            content: bytes | None = None, ctype: str = "audio/wav",
            context: str | None = None, name: str = "leaky", text: str | None = None) -> Any:
    page = client.get(f"/studies/a/{study_id}").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    ctx = context or re.findall(r'<option value="([^"]+)"', page)[0]
    assert token
    return client.post(
        f"/studies/a/{study_id}/calibration",
        data={"csrf_token": token.group(1), "context": ctx, "name": name,
              "text": text or "Um, so, the the thing, the form, uh, is it, the thing.",
              "note": "garbled on purpose: expect fidelity 1-2"},
        files={"audio": (filename, io.BytesIO(content if content is not None else _wav_bytes()),
                         ctype)},
        follow_redirects=False)


def test_calibration_upload_is_checked(app: Any, researcher: TestClient,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    study_id = create_study(researcher, n_tasks="2", n_annotators="1")
    r = _upload(researcher, study_id, filename="notes.txt", ctype="text/plain")
    assert r.status_code == 400 and "extension '.txt' is not accepted" in html.unescape(r.text)
    r = _upload(researcher, study_id, ctype="image/png")
    assert r.status_code == 400
    assert "content type 'image/png' does not match" in html.unescape(r.text)
    r = _upload(researcher, study_id, content=b"ID3" + b"\0" * 64)
    assert r.status_code == 400 and "does not start like a .wav file" in html.unescape(r.text)
    r = _upload(researcher, study_id, content=b"")
    assert r.status_code == 400 and "is empty" in html.unescape(r.text)
    monkeypatch.setattr(svc, "CALIBRATION_MAX_BYTES", 1000)
    r = _upload(researcher, study_id)
    assert r.status_code == 400 and "the limit is" in html.unescape(r.text)
    monkeypatch.undo()
    r = _upload(researcher, study_id, context="apexv1_001:nope")
    assert r.status_code == 400 and "context" in html.unescape(r.text)
    r = _upload(researcher, study_id, text="   ")
    assert r.status_code == 400 and "transcript is empty" in html.unescape(r.text)
    # Ogg, MP3 and FLAC that decode; octet-stream is accepted when the audio is that format
    # (a file with only the right first bytes is not: tests/security/test_files.py).
    for i, (fname, fmt, subtype) in enumerate([("a.ogg", "OGG", "VORBIS"),
                                               ("b.mp3", "MP3", "MPEG_LAYER_III"),
                                               ("c.flac", "FLAC", "PCM_16")]):
        encoded = io.BytesIO()
        sf.write(encoded, np.sin(np.arange(8000) / 8.0) * 0.3, 16000, format=fmt,
                 subtype=subtype)
        r = _upload(researcher, study_id, filename=fname, content=encoded.getvalue(),
                    ctype="application/octet-stream", name=f"fmt{i}")
        assert r.status_code == 303, r.text[:500]
    assert sum(1 for i in rows(app, StudyAItem) if i.calibration) == 3
    assert all(len(a.order) == 9 for a in rows(app, Annotator))


def test_calibration_items_are_rated_blind_and_reported_apart(
        app: Any, researcher: TestClient, tasks: dict[str, TaskSpec]) -> None:
    study_id = create_study(researcher, n_tasks="8")
    people = _rate_study(app, researcher, study_id)
    before = researcher.get(f"/studies/a/{study_id}/agreement.json").json()
    with Session(app.state.engine) as session:
        positions = {a.token: a.position for a in session.exec(select(Annotator))}
    r = _upload(researcher, study_id)
    assert r.status_code == 303, r.text[:1000]
    calib = next(i for i in rows(app, StudyAItem) if i.calibration)
    assert calib.item_key == "calib:leaky" and calib.role == "calibration"
    for person in people:
        annotator = next(a for a in rows(app, Annotator) if a.token == person.token)
        assert len(annotator.order) == 25
        n = annotator.order.index(int(calib.id or 0)) + 1
        assert n > positions[person.token]  # after the item they had open
        page = person.client.get(f"/annotate/{person.token}/item/{n}").text
        # Shown like any other item: its transcript and the context's plan, nothing that
        # marks it as calibration.
        assert "the the thing" in page
        assert "calib" not in page.lower() and "garbled on purpose" not in page
        audio = person.client.get(f"/annotate/{person.token}/audio/{n}")
        assert audio.status_code == 200 and audio.content[:4] == b"RIFF"
        assert audio.headers["content-type"] == "audio/wav"
        assert person.rate(n, fidelity=1, naturalness=1, leakage=1).status_code == 200
    after = researcher.get(f"/studies/a/{study_id}/agreement.json").json()
    assert after["dimensions"] == before["dimensions"]
    assert after["most_disagreed"] == before["most_disagreed"]
    assert after["per_archetype"] == before["per_archetype"]
    assert after["n_calibration_ratings"] == 3
    assert after["calibration"]["n_items"] == 1
    assert after["calibration"]["annotators"]["A1"]["leakage_flags"] == 1
    csv_text = researcher.get(f"/studies/a/{study_id}/ratings.csv").text
    calib_rows = [row for row in csv.DictReader(io.StringIO(csv_text))
                  if row["item_id"] == "calib:leaky"]
    assert len(calib_rows) == 3 and all(row["calibration"] == "1" for row in calib_rows)
    assert all(float(row["seconds"]) >= 0 for row in calib_rows)  # opened, then rated
    page = researcher.get(f"/studies/a/{study_id}/results").text
    section = page[page.index('id="calibration-results"'):]
    assert "1 calibration item(s), 3 rating(s)" in section and "garbled on purpose" in section
    # The researcher hears the upload too.
    assert researcher.get(f"/studies/a/{study_id}/items/{calib.id}/audio").content[:4] == b"RIFF"


# --------------------------------------------------------------------------- access


def test_a_token_opens_only_its_own_queue(app: Any, researcher: TestClient) -> None:
    first = create_study(researcher, n_tasks="2", n_annotators="2")
    second = create_study(researcher, n_tasks="3", n_annotators="1", name="other")
    a_token, b_token = tokens(researcher, first)
    c_token = tokens(researcher, second)[0]
    a = Annotating(app, a_token)
    b = Annotating(app, b_token)
    assert a.rate(1, fidelity=3).status_code == 200
    assert b.state()["items"][0]["fidelity"] is None  # A's rating is not B's
    # Each queue holds its own study's items only.
    items = {i.id: i.study_id for i in rows(app, StudyAItem)}
    for person in rows(app, Annotator):
        assert {items[i] for i in person.order} == {person.study_id}
    # Guessed, altered or truncated tokens and positions outside the queue give 404.
    forged = a_token[:-1] + ("A" if a_token[-1] != "A" else "B")
    for token in (forged, a_token[:-4], "x", "0" * 32, c_token + "x"):
        for path in (f"/annotate/{token}", f"/annotate/{token}/item/1",
                     f"/annotate/{token}/audio/1", f"/annotate/{token}/overview",
                     f"/annotate/{token}/state.json"):
            r = a.client.get(path, follow_redirects=False)
            assert r.status_code == 404, path
            assert "not valid" in r.text and "Traceback" not in r.text
        r = a.client.post(f"/annotate/{token}/item/1/rating", json={"fidelity": 1},
                          headers={"X-CSRF-Token": a.csrf})
        assert r.status_code == 404
    for n in (0, -1, 7, 99):
        for path in (f"/annotate/{a_token}/item/{n}", f"/annotate/{a_token}/audio/{n}"):
            assert a.client.get(path).status_code == 404, path
        r = a.rate(n, fidelity=1)
        assert r.status_code == 404 and r.json()["error"] == "There is no such item in your queue."
    assert a.client.get("/annotate").status_code == 404
    assert a.client.get("/annotate/").status_code == 404
    assert len(rows(app, RatingRow)) == 1


def test_researcher_pages_need_a_login_and_tokens_open_nothing_there(
        app: Any, researcher: TestClient) -> None:
    study_id = create_study(researcher, n_tasks="2", n_annotators="1")
    token = tokens(researcher, study_id)[0]
    annotator = Annotating(app, token)  # an annotator's browser, with its session cookie
    paths = ["/studies/a", f"/studies/a/{study_id}", f"/studies/a/{study_id}/results",
             f"/studies/a/{study_id}/annotators", f"/studies/a/{study_id}/ratings.csv",
             f"/studies/a/{study_id}/table9.csv", f"/studies/a/{study_id}/agreement.json",
             f"/studies/a/{study_id}/comments.csv", f"/studies/a/{study_id}/items/1/audio",
             f"/studies/a/{study_id}?token={token}", f"/studies/a/{study_id}/results?t={token}"]
    for path in paths:
        for client in (TestClient(app), annotator.client):
            r = client.get(path, follow_redirects=False)
            assert r.status_code == 303 and r.headers["location"].startswith("/login"), path
            assert token not in r.text
        r = annotator.client.get(path, headers={"HX-Request": "true"}, follow_redirects=False)
        assert r.status_code == 401
    r = annotator.client.get(f"/studies/a/{token}", follow_redirects=False)
    assert r.status_code in (303, 404, 422) and "pilot" not in r.text
    for path in ("/studies/a", f"/studies/a/{study_id}/annotators",
                 f"/studies/a/{study_id}/close"):
        r = annotator.client.post(path, data={"csrf_token": annotator.csrf},
                                  follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"].startswith("/login"), path
    assert len(rows(app, Annotator)) == 1 and rows(app, StudyA)[0].status == "open"
    assert researcher.get(f"/studies/a/{study_id}/results").status_code == 200
    assert researcher.get("/studies/a/999").status_code == 404


# --------------------------------------------------------------------------- gold scan


def _visible_texts(view: svc.ItemView) -> list[str]:
    """Every string the view was built from (the words the annotator may see)."""
    out = [view.scenario, view.persona_name, view.persona_role, view.speaking_style,
           *view.goals, *view.constraints, view.intent_words, view.trigger,
           view.authorization, view.transcript]
    for f in [*view.known_facts, *view.plan_facts]:
        out += [f.label, f.value, f.note]
    return [s for s in out if s]


def _grader_words(body: str, allowed: list[str]) -> list[str]:
    """Grader names in ``body`` outside the user-visible strings. The dimension "semantic
    fidelity" is the rating scale's own name, not the grader."""
    text = html.unescape(body)
    for s in sorted(allowed, key=len, reverse=True):
        text = text.replace(s, " ")
    text = re.sub(r"(?i)semantic fidelity", " ", text)
    return [g for g in GRADERS if re.search(rf"(?<![\w]){re.escape(g)}(?![\w])", text,
                                             flags=re.IGNORECASE)]


def _grader_state(task: TaskSpec) -> list[str]:
    """Strings only grader state and the reference trajectory carry: tool names (those that
    are not plain words like "submit"), document texts, the agent's task context and
    objective, and the scripted agents' lines."""
    out = [t.name for t in task.tools if "_" in t.name] + [d.text[:60] for d in task.documents]
    out += [task.context[:60], task.objective[:60]]
    for script in sorted((task.folder / "scripts").glob("*.yaml")):
        out += [m.strip() for m in re.findall(r"say:\s*\"?([^\"\n]{25,})", script.read_text())]
    return [s for s in out if s]


def _scan(body: str, task: TaskSpec, hidden: set[str], allowed: list[str],
          other_texts: list[str], where: str) -> None:
    assert find_hidden_gold(body, hidden) == [], where
    assert _grader_words(body, allowed) == [], where
    assert not re.search(r"(?i)\b(gold|grader|graded|reference trajectory)\b", body), where
    plain = html.unescape(body)
    for s in _grader_state(task):
        assert s not in plain, (where, s)
    for s in other_texts:
        assert s not in plain, (where, "another plan's realization", s)


def test_no_annotator_response_contains_gold_or_grader_state(
        app: Any, researcher: TestClient, tasks: dict[str, TaskSpec]) -> None:
    study_id = create_study(researcher)
    assert _upload(researcher, study_id).status_code == 303
    with Session(app.state.engine) as session:
        items = {i.id: i for i in session.exec(select(StudyAItem))}
        people = list(session.exec(select(Annotator)))
    study_tasks = [tasks[k] for k in sorted({i.task_id for i in items.values()})]
    # Pages that are not about one item: nothing beyond what the user knows from the start.
    task_hidden = set().union(*(hidden_gold_strings(t, fact_values(t, volunteer_facts(t)))
                                for t in study_tasks))
    scanned = 0
    for person in people:
        a = Annotating(app, person.token)
        t = person.token
        for n, item_id in enumerate(person.order, start=1):
            item = items[item_id]
            task = tasks[item.task_id]
            plan = task.plan(item.plan_id)
            assert plan is not None
            hidden = hidden_gold_strings(task, fact_values(task, plan_visible_facts(task, plan)))
            view = svc.item_view(task, item)
            allowed = _visible_texts(view)
            shown_text = view.transcript
            others = [r.text for p in task.plans for r in p.realizations
                      if r.text != shown_text and r.text not in shown_text]
            responses = [
                a.client.get(f"/annotate/{t}/item/{n}"),
                a.client.get(f"/annotate/{t}/item/{n}", headers={"HX-Request": "true"}),
                a.rate(n, fidelity=4),
                a.rate(n, fidelity=9),
                a.client.post(f"/annotate/{t}/item/{n}/rating", json={"fidelity": 1}),
            ]
            audio = a.client.get(f"/annotate/{t}/audio/{n}")
            head = a.client.head(f"/annotate/{t}/audio/{n}")
            ranged = a.client.get(f"/annotate/{t}/audio/{n}", headers={"Range": "bytes=0-99"})
            assert audio.status_code == 200 and ranged.status_code == 206
            assert audio.content[:4] in (b"OggS", b"RIFF")
            meta = json.dumps({**dict(audio.headers), **dict(head.headers),
                               **dict(ranged.headers)})
            for k, r in enumerate(responses):
                _scan(r.text, task, hidden, allowed, others, f"{person.label} item {n} #{k}")
                scanned += 1
            _scan(meta, task, hidden, allowed, others, f"{person.label} audio {n}")
            if item.calibration:
                assert "calib" not in responses[0].text.lower()
        pages = [
            a.client.get(f"/annotate/{t}/overview"),
            a.client.get(f"/annotate/{t}/state.json"),
            a.client.get(f"/annotate/{t}", follow_redirects=False),
            a.client.get(f"/annotate/{t}/item/{len(person.order) + 1}"),
            a.client.get(f"/annotate/{t}/audio/0"),
            a.client.post(f"/annotate/{t}/submit",
                          data={"csrf_token": a.csrf}),
            a.client.post(f"/annotate/{t}/submit", data={}),
            a.client.get(f"/annotate/{t}x/item/1"),
        ]
        titles = [svc.scenario_title(t_) for t_ in study_tasks]
        for k, r in enumerate(pages):
            # The overview lists the scenario titles of every task: a title may hold a word
            # that is a hidden gold value of another task, so titles are taken out before the
            # scan of every task's hidden gold (each title is checked against its own task's).
            body = html.unescape(r.text)
            for title in sorted(titles, key=len, reverse=True):
                body = body.replace(title, " ")
            assert find_hidden_gold(body, task_hidden) == [], (person.label, k)
            assert _grader_words(body, []) == [], (person.label, k)
            assert not re.search(r"(?i)\b(gold|grader)\b", r.text), (person.label, k)
            scanned += 1
    assert scanned == 3 * (73 * 5 + 8)


def test_every_plan_of_the_suite_renders_without_hidden_gold(
        tasks: dict[str, TaskSpec]) -> None:
    """The annotator's view of every plan of every task (not only the sampled ones) shows no
    hidden gold value: trigger words, field labels, fact labels and titles included."""
    checked = 0
    for task in tasks.values():
        for plan, real in itertools.chain.from_iterable(
                ((p, r) for r in p.realizations[:1]) for p in task.plans):
            item = StudyAItem(study_id=1, item_key="k", task_id=task.id, plan_id=plan.id,
                              realization_id=real.id)
            view = svc.item_view(task, item)
            hidden = hidden_gold_strings(task, fact_values(task, plan_visible_facts(task, plan)))
            words = " | ".join(_visible_texts(view))
            assert find_hidden_gold(words, hidden) == [], (task.id, plan.id)
            assert view.transcript == real.text
            title_hidden = hidden_gold_strings(task, fact_values(task, volunteer_facts(task)))
            assert find_hidden_gold(svc.scenario_title(task), title_hidden) == [], task.id
            assert all(s in user_state_text(task) for s in view.goals)
            checked += 1
    assert checked > 300
