"""Compare two runs (issue #17): the same caller plan on the same row however its timing and
position differ, both stereo traces seekable from the rows, and the field diff against gold."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.compare import Step, align
from grading.gates import grade_run_dir
from runtime.core.spec import find_task
from tests.conftest import run_script
from tests.webclient import WebClient

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

LATE = Path(__file__).parent / "fixtures" / "scripts" / "apexv1_070_late_summary.yaml"
A, B = "oracle/apexv1_070/r0", "late/apexv1_070/r0"


@pytest.fixture(scope="module")
def runs_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    run_script("apexv1_070", "oracle", out / "oracle")
    run_script("apexv1_070", LATE, out / "late")
    return out


@pytest.fixture
def client(web_client: WebClient, runs_source: Path) -> TestClient:
    return web_client(runs_source)


def _rows(page: str) -> list[str]:
    body = page[max(0, page.find('id="cmp-rows"')):]  # the whole page without such a table
    return re.findall(r"<tr[ >].*?</tr>", body, flags=re.S)


def _plan_times(runs: Path, rel: str, plan: str) -> float:
    for line in (runs / rel / "events.jsonl").read_text().splitlines():
        if f'"plan_id":"{plan}"' in line and '"type":"user.plan"' in line:
            return int(re.search(r'"t_media_ms":(\d+)', line).group(1)) / 1000  # type: ignore[union-attr]
    raise AssertionError(f"{plan} not in {rel}")


def test_a_plan_both_runs_reached_is_on_one_row(client: TestClient, runs_source: Path) -> None:
    page = client.get(f"/compare?a={A}&b={B}")
    assert page.status_code == 200
    rows = _rows(page.text)
    for plan in ("barge_revoke", "approve_first", "ans_reason"):
        ta, tb = _plan_times(runs_source, A, plan), _plan_times(runs_source, B, plan)
        assert tb - ta > 5, (plan, ta, tb)  # the fixture's plan really comes later in run B
        holding = [r for r in rows if f"user:{plan}<" in r]
        assert len(holding) == 1, (plan, holding)  # one row, not a row per run
        row = holding[0]
        assert row.count(f"user:{plan}<") == 2
        assert f"{ta:.1f} s" in row and f"{tb:.1f} s" in row
        assert f"+{tb - ta:.1f} s" in row
    # A plan only one run reached faces a gap, not another run's step.
    goodbye = [r for r in rows if "user:goodbye<" in r]
    assert len(goodbye) == 1 and "cmp-only_a" in goodbye[0] and "gap" in goodbye[0]


def test_both_traces_play_from_their_rows(client: TestClient) -> None:
    page = client.get(f"/compare?a={A}&b={B}").text
    for key, rel in (("a", A), ("b", B)):
        assert f'id="audio-{key}"' in page and f'src="/runs/{rel}/trace.wav"' in page
        assert client.get(f"/runs/{rel}/trace.wav").status_code == 200
    seeks = re.findall(r'class="seek" data-side="([ab])" data-t="([0-9.]+)"', page)
    assert {s for s, _ in seeks} == {"a", "b"}
    assert '<script src="/static/js/compare.js"' in page
    assert client.get("/static/js/compare.js").status_code == 200


def test_field_diff_shows_both_runs_against_gold(client: TestClient,
                                                 runs_source: Path) -> None:
    page = client.get(f"/compare?a={A}&b={B}").text
    assert 'id="field-diff"' in page
    task = find_task("apexv1_070")
    grades = [grade_run_dir(runs_source / rel, {task.id: task}) for rel in (A, B)]
    start = page.index('id="field-diff"')
    table = page[start:page.index("</table>", start)]
    for fa, fb in zip(grades[0].fields, grades[1].fields, strict=True):
        row = re.search(rf'<tr data-field="{fa.artifact}\.{fa.field}".*?</tr>', table, flags=re.S)
        assert row, fa.field
        scores = re.findall(r'data-score="([0-9.]+)"', row.group(0))
        assert [float(s) for s in scores] == [fa.score, fb.score]
        assert str(fa.gold) in row.group(0)


def test_compare_refuses_anything_but_two_runs(client: TestClient) -> None:
    assert client.get("/compare").status_code == 400
    r = client.get(f"/compare?run={A}")
    assert r.status_code == 400 and "exactly two" in r.text
    r = client.get(f"/compare?run={A}&run={B}")  # the run list's checkboxes
    assert r.status_code == 200 and 'id="cmp-rows"' in r.text
    assert client.get(f"/compare?a={A}&b=nope").status_code == 404


def _steps(*labels: str) -> list[Step]:
    return [Step(lb, i * 1000, "", plan_id=lb[5:] if lb.startswith("user:") else None)
            for i, lb in enumerate(labels)]


def test_alignment_anchors_on_plans_not_on_the_longest_block() -> None:
    # Run B asks for approval at once and summarises after the revocation: a longest-block
    # matcher pairs A's summary with B's and leaves the revocation on two rows.
    a = _steps("user:ans", "tool:set", "agent:sum", "agent:rb", "agent:req", "user:approve",
               "agent:inform", "user:revoke", "tool:set", "agent:req", "user:again")
    b = _steps("user:ans", "agent:req", "user:approve", "agent:wait", "user:revoke", "tool:set",
               "agent:sum", "agent:rb", "agent:req", "user:other")
    rows, first = align(a, b)
    for plan in ("user:ans", "user:approve", "user:revoke"):
        [row] = [r for r in rows if (r.a and r.a.label == plan) or (r.b and r.b.label == plan)]
        assert row.kind == "same" and row.a and row.b and row.a.label == row.b.label == plan
    assert [r.kind for r in rows if r.is_plan and r.kind != "same"] == ["only_a", "only_b"]
    assert first is not None and rows[first].kind != "same"
    # Each run's steps appear once, in their own order.
    assert [r.a.label for r in rows if r.a] == [s.label for s in a]
    assert [r.b.label for r in rows if r.b] == [s.label for s in b]


def test_common_subsequence_is_longest() -> None:
    from app.compare import common_subsequence

    pairs = common_subsequence(list("xabcyabcz"), list("abcqz"))
    assert len(pairs) == 4
    assert all(i < i2 and j < j2 for (i, j), (i2, j2) in pairwise(pairs))
