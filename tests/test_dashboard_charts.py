"""The campaign dashboard's and /campaigns' charts, in process (the real-browser checks are in
tests/browser/test_dashboard_browser.py): the pages carry the very JSON that report.json serves
for static/js/charts.js to draw (no hand-drawn SVG, no inline script), each chart container is
labelled and has a text alternative, the Content Security Policy still forbids eval, and the
vendored Vega builds are the pinned versions with their licences."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from tests.conftest import run_script
from tests.webclient import WebClient

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "static" / "vendor" / "vega"
PINNED = {"vega.min.js": ("vega", "6.4.0"), "vega-lite.min.js": ("vega-lite", "6.5.0"),
          "vega-embed.min.js": ("vega-embed", "7.3.0")}


@pytest.fixture(scope="module")
def runs_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    run_script("apexv1_070", "oracle", out / "camp")
    run_script("apexv1_001", "negative_stale_correction", out / "camp")
    (out / "camp" / "campaign.json").write_text('{"agent": "scripted", "seed": 0}')
    shutil.copytree(out / "camp", out / "group" / "camp2")
    return out


@pytest.fixture
def client(web_client: WebClient, runs_source: Path) -> TestClient:
    return web_client(runs_source)


def _json_block(html: str, block_id: str) -> object:
    match = re.search(rf'<script type="application/json" id="{block_id}">(.*?)</script>', html,
                      re.S)
    assert match, f"no #{block_id} data block"
    return json.loads(match.group(1))


def _scripts_are_files_or_data(html: str) -> None:
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert 'src="/static/' in tag or 'type="application/json"' in tag, tag


def test_dashboard_embeds_report_json_for_its_charts(client: TestClient) -> None:
    page = client.get("/campaigns/camp")
    html = page.text
    report = client.get("/campaigns/camp/report.json").json()
    assert _json_block(html, "dashboard-data") == report
    # drawn in the browser by the charting library, not hand-drawn SVG labelled as nothing
    assert "<svg" not in html and 'role="img"' not in html
    assert '<script src="/static/vendor/vega/vega.min.js"' in html
    assert '<script src="/static/js/charts.js"' in html
    _scripts_are_files_or_data(html)
    charts = re.findall(r'<div class="vega-chart" data-chart="([a-z]+)"(?: data-key="([^"]+)")?'
                        r' aria-label="([^"]+)"', html)
    kinds = sorted((kind, key) for kind, key, _ in charts)
    expected = [("gates", ""), ("overlap", ""), ("passk", ""), ("stop", "")]
    expected += [("heatmap", dim) for dim in report["report"]["slices"]]
    assert kinds == sorted(expected)
    assert all(label.strip() for _, _, label in charts)
    # a text alternative: a data table for the reliability and gate charts and each heatmap
    assert html.count('<details class="chart-data">') == 2 + len(report["report"]["slices"])
    p1 = report["report"]["pass_at_1"]
    assert f"{100 * p1['value']:.1f}%" in html and f"{100 * p1['ci'][0]:.1f}–" in html


def test_dashboard_states_why_a_metric_is_undefined(client: TestClient) -> None:
    report = client.get("/campaigns/camp/report.json").json()["report"]
    assert report["pass_at_3"]["value"] is None  # one repeat per task
    html = client.get("/campaigns/camp").text
    item = re.search(r'<li data-metric="Pass@3" class="undefined">(.*?)</li>', html, re.S)
    assert item, "no note for the undefined Pass@3"
    note = report["pass_at_3"]["note"]
    assert note and str(escape(note)) in item.group(1)


def test_campaign_list_frontier_uses_each_report(client: TestClient) -> None:
    html = client.get("/campaigns").text
    _scripts_are_files_or_data(html)
    assert "<svg" not in html
    assert 'data-chart="frontier"' in html
    points = _json_block(html, "frontier-data")
    assert isinstance(points, list)
    assert sorted(p["campaign"] for p in points) == ["camp", "group/camp2"]
    for p in points:
        report = client.get(f"/campaigns/{p['campaign']}/report.json").json()
        assert p["pass_at_1"] == report["report"]["pass_at_1"]
        assert p["median_response_latency_ms"] == report["median_response_latency_ms"]
        assert p["response_latency_iqr_ms"] == report["response_latency_iqr_ms"]


def test_csp_still_forbids_eval_on_the_dashboard(client: TestClient) -> None:
    csp = client.get("/campaigns/camp").headers["content-security-policy"]
    script_src = next(d for d in csp.split(";") if d.strip().startswith("script-src "))
    assert script_src.split() == ["script-src", "'self'"]
    assert "unsafe-eval" not in csp


def test_response_latency_spread_in_report(client: TestClient) -> None:
    from grading.dashboard import _quartiles

    report = client.get("/campaigns/camp/report.json").json()
    latencies = sorted(r["median_response_latency_ms"] for r in report["runs"]
                       if r["median_response_latency_ms"] is not None)
    q1, q3 = report["response_latency_iqr_ms"]
    assert latencies[0] <= q1 <= report["median_response_latency_ms"] <= q3 <= latencies[-1]
    assert _quartiles([]) is None and _quartiles([5.0]) == (5.0, 5.0)
    assert _quartiles([1.0, 2.0, 3.0, 4.0, 5.0]) == (2.0, 4.0)


def test_vendored_vega_is_pinned_with_licences(client: TestClient) -> None:
    version = (VENDOR / "VERSION").read_text()
    for name in ("LICENSE", "LICENSE-vega-lite", "LICENSE-vega-embed",
                 "THIRD_PARTY_LICENSES.txt"):
        assert "Redistribution and use" in (VENDOR / name).read_text(), name
    for filename, (package, pinned) in PINNED.items():
        body = (VENDOR / filename).read_bytes()
        assert f"{package} {pinned} (BSD-3-Clause)" in version
        assert f'"{pinned}"'.encode() in body, filename  # the build's own version string
        assert f"{hashlib.sha256(body).hexdigest()}  {filename}" in version, filename
        served = client.get(f"/static/vendor/vega/{filename}")
        assert served.status_code == 200 and served.content == body
