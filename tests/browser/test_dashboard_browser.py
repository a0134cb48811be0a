"""Campaign dashboard and /campaigns in a real browser (Debian Chromium, headless, Playwright) at
1,366 × 768, with the app server and the browser inside a loopback-only network namespace
(``unshare -n``) as in tests/browser/test_browser.py. One subprocess
(tests/browser/dashboard_scenario.py) opens the pages and prints what it measured; the tests
below assert on it. Screenshots go to tests/browser/screenshots/ (git-ignored).

The campaigns (tests/browser/dashboard_data.py): ``wide``, the 24 audit tasks × 3 repeats of
the scripted oracle and negative agents in virtual time; ``wide-copy``, the same runs again (its
frontier point coincides with ``wide``'s); ``tiny``, 2 tasks × 1 repeat (Pass@3 undefined).

Issue #17's dashboard defects, each with a test here: the page was 2,349 px wide; the Pass@k
chart was 132 × 47 px with ~3 px text; the floor-control table wrapped word by word; the
frontier printed campaign names on top of each other, with no ticks and no error bars; CI
whiskers carried no numbers; heatmap cells showed no n; "undefined" reasons were clipped; the
charts were SVG with ``role="img"`` and no label.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from tests.browser.dashboard_data import build_campaigns
from tests.browser.test_browser import PASSWORD, SCREENSHOTS, part_ok, run_scenario, scenario_app

# The pages read run directories; the database holds only the login (tests/pg.py).
pytestmark = pytest.mark.sqlite_only(reason="the dashboard reads run directories, not the "
                                     "database")

TIMEOUT_S = 240
DASHBOARDS = ["wide", "tiny"]
FLOOR_ROWS = 5
MIN_TEXT_PX = 10.0  # rendered height of any text on a chart (the old Pass@k chart: ~3 px)


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    app = scenario_app(tmp_path_factory, "dashboard_browser")
    app.state.engine.dispose()
    settings = app.state.settings
    data = settings.data_dir
    campaigns = build_campaigns(settings.runs_dir)
    config = data.parent / "dashboard_scenario.json"
    config.write_text(json.dumps({
        "data_dir": str(data), "username": "ada", "password": PASSWORD,
        "screenshots": str(SCREENSHOTS), "dashboards": DASHBOARDS, "campaigns": campaigns}))
    out = run_scenario("dashboard_scenario.py", config, TIMEOUT_S)
    (SCREENSHOTS / "dashboard_result.json").write_text(json.dumps(out, indent=2))
    return out


@pytest.fixture(params=DASHBOARDS)
def board(request: pytest.FixtureRequest, result: dict[str, Any]) -> dict[str, Any]:
    return part_ok(result, f"dashboard:{request.param}")


@pytest.fixture
def wide(result: dict[str, Any]) -> dict[str, Any]:
    return part_ok(result, "dashboard:wide")


@pytest.fixture
def campaigns(result: dict[str, Any]) -> dict[str, Any]:
    return part_ok(result, "campaigns")


def _chart(page: dict[str, Any], kind: str, key: str | None = None) -> dict[str, Any]:
    found = [c for c in page["charts"] if c["kind"] == kind and c["key"] == key]
    assert len(found) == 1, (kind, key, [(c["kind"], c["key"]) for c in page["charts"]])
    chart: dict[str, Any] = found[0]
    return chart


def _texts(chart: dict[str, Any]) -> list[str]:
    return [t["text"] for t in chart["texts"]]


def _ci(lo: float, hi: float) -> str:
    return f"{100 * lo:.1f}–{100 * hi:.1f}%"


# --------------------------------------------------------------------------- layout


@pytest.mark.parametrize("page", ["dashboard:wide", "dashboard:tiny", "campaigns"])
def test_no_horizontal_scroll_at_1366(result: dict[str, Any], page: str) -> None:
    part = part_ok(result, page)
    assert part["viewport_width"] == 1366
    assert part["page_width"] <= part["viewport_width"], part["page_width"]
    assert part["body_width"] <= part["viewport_width"]
    for chart in part["charts"]:
        assert chart["container"]["right"] <= part["viewport_width"], chart["kind"]
        if chart["svg"]:
            assert chart["svg"]["right"] <= part["viewport_width"] + 0.5, chart["kind"]
    assert Path(part["screenshot"]).is_file()


def test_every_chart_rendered_with_a_title_and_a_description(board: dict[str, Any]) -> None:
    report = board["report"]["report"]
    expected = [("passk", None), ("gates", None), ("stop", None), ("overlap", None)]
    expected += [("heatmap", dim) for dim in report["slices"]]
    assert sorted((c["kind"], c["key"] or "") for c in board["charts"]) == sorted(
        (k, d or "") for k, d in expected)
    for chart in board["charts"]:
        name = (chart["kind"], chart["key"])
        assert chart["rendered"] == "ok" and not chart["error"], (name, chart["error"])
        assert chart["svg"] and chart["svg"]["w"] >= 250 and chart["svg"]["h"] >= 80, name
        assert chart["title"] and chart["title"][0], name
        assert chart["label"] and len(chart["label"]) > 30, name


def test_chart_text_is_readable(board: dict[str, Any]) -> None:
    assert board["svg_texts"]
    for text in board["svg_texts"]:  # every text drawn in an SVG of the page
        assert text["h"] >= MIN_TEXT_PX, text
    passk = _chart(board, "passk")
    assert passk["svg"]["w"] >= 450 and passk["svg"]["h"] >= 150, passk["svg"]


def test_floor_control_rows_do_not_wrap(board: dict[str, Any]) -> None:
    rows = board["floor_rows"]
    assert len(rows) == FLOOR_ROWS
    for row in rows:
        assert row["lines"] == 1, row
        assert row["height"] < 1.6 * row["line"], row


def test_the_charts_use_the_report_json_and_no_eval(result: dict[str, Any],
                                                     board: dict[str, Any]) -> None:
    assert board["embedded"] == board["report"]
    assert board["csp"] == [], board["csp"]  # no Content-Security-Policy violation (eval…)
    console = result["console"]
    assert not [c for c in console if c.startswith(("pageerror", "error"))
                and "Failed to load resource" not in c], console
    assert all(r.endswith("/favicon.ico") for r in result["failed_requests"]), \
        result["failed_requests"]


# --------------------------------------------------------------------------- content


def test_confidence_intervals_are_printed_and_in_tooltips(board: dict[str, Any]) -> None:
    report = board["report"]["report"]
    level = f"{round(100 * report['confidence'])}% CI"
    texts = " | ".join(_texts(_chart(board, "passk")))
    printed = 0
    for key in ("pass_at_1", "pass_at_3", "reliable_at_3", "afa", "correction_uptake"):
        m = report[key]
        if m["value"] is None:
            assert "undefined" in texts
            continue
        assert f"{100 * m['value']:.1f}%" in texts, (key, texts)
        if m["ci"]:
            assert f"({level} {_ci(*m['ci'])})" in texts, (key, texts)
            printed += 1
    assert printed >= 2
    p1 = report["pass_at_1"]
    assert board["tooltip"] and f"{100 * p1['value']:.1f}%" in board["tooltip"], board["tooltip"]
    assert _ci(*p1["ci"]) in board["tooltip"], board["tooltip"]


def test_gate_rates_are_printed(board: dict[str, Any]) -> None:
    texts = _texts(_chart(board, "gates"))
    for gate, rate in board["report"]["report"]["gate_pass_rates"].items():
        assert gate in texts and f"{100 * rate:.1f}%" in texts, (gate, texts)


def test_heatmap_cells_show_n(board: dict[str, Any]) -> None:
    for dim, labels in board["report"]["report"]["slices"].items():
        texts = _texts(_chart(board, "heatmap", dim))
        cells = [t for t in texts if " · n=" in t]
        assert len(cells) == 2 * len(labels), (dim, texts)  # Pass@1 and AFA per label
        expected = Counter(f"n={row['n_tasks']}" for row in labels.values() for _ in range(2))
        assert Counter(t.split(" · ")[1] for t in cells) == expected, dim
        for label, row in labels.items():
            assert label in texts, (dim, label)
            value = row["pass_at_1"]["value"]
            shown = "n/a" if value is None else f"{100 * value:.0f}%"
            assert f"{shown} · n={row['n_tasks']}" in cells, (dim, label, cells)


def test_floor_control_distributions(wide: dict[str, Any]) -> None:
    graded = [r for r in wide["report"]["runs"] if not r["infrastructure_failure"]]
    stop = _chart(wide, "stop")
    with_stop = sum(r["median_stop_latency_ms"] is not None for r in graded)
    assert any(f"{with_stop} of {len(graded)} graded runs" in t for t in _texts(stop))
    assert f"median {round(wide['report']['median_stop_latency_ms'])} ms" in _texts(stop)
    overlap = _chart(wide, "overlap")
    assert f"median {100 * wide['report']['overlap_ratio']:.2f}%" in _texts(overlap)


def test_undefined_reasons_are_whole(result: dict[str, Any]) -> None:
    tiny = part_ok(result, "dashboard:tiny")
    report = tiny["report"]["report"]
    undefined = [k for k in ("pass_at_1", "pass_at_3", "reliable_at_3", "afa",
                             "correction_uptake") if report[k]["value"] is None]
    assert undefined, "the tiny campaign should leave Pass@3 undefined"
    page_text = " ".join(tiny["page_text"].split())
    for key in undefined:
        note = report[key]["note"]
        assert note and " ".join(note.split()) in page_text, (key, note)
    assert tiny["undefined"]
    for seen in tiny["undefined"]:
        assert seen["right"] <= seen["viewport"] + 0.5, seen
        if seen["svg"]:
            assert seen["svg"]["left"] - 0.5 <= seen["left"], seen
            assert seen["right"] <= seen["svg"]["right"] + 0.5, seen
            assert seen["bottom"] <= seen["svg"]["bottom"] + 0.5, seen


# --------------------------------------------------------------------------- frontier


def test_frontier_rendered_from_each_campaigns_report(campaigns: dict[str, Any]) -> None:
    chart = _chart(campaigns, "frontier")
    assert chart["rendered"] == "ok" and chart["svg"]["w"] >= 500 and chart["svg"]["h"] >= 300
    assert chart["title"] and chart["label"]
    points = {p["campaign"]: p for p in campaigns["frontier_data"]}
    assert set(points) == set(campaigns["reports"])
    for name, report in campaigns["reports"].items():
        assert points[name]["pass_at_1"] == report["report"]["pass_at_1"], name
        assert points[name]["median_response_latency_ms"] == report["median_response_latency_ms"]
    assert campaigns["csp"] == []


def test_frontier_labels_do_not_overlap(campaigns: dict[str, Any]) -> None:
    assert campaigns["svg_texts"] and all(t["h"] >= MIN_TEXT_PX for t in campaigns["svg_texts"])
    labels = campaigns["labels"]
    assert sorted(lb["text"] for lb in labels) == sorted(campaigns["reports"])
    for a, b in combinations(labels, 2):
        apart = (a["x1"] <= b["x0"] or b["x1"] <= a["x0"]
                 or a["y1"] <= b["y0"] or b["y1"] <= a["y0"])
        assert apart, (a, b)
    # wide and wide-copy are the same runs: one point, two readable labels
    assert len(campaigns["points"]) == len(campaigns["reports"])


def test_frontier_has_ticks_and_error_bars(campaigns: dict[str, Any]) -> None:
    axes = campaigns["tick_axes"]
    assert len(axes) == 2 and all(len(ticks) >= 3 for ticks in axes), axes
    assert any("%" in t for t in campaigns["ticks"])  # Pass@1 axis in percent
    n = len(campaigns["reports"])
    assert campaigns["error_bars"] == {"error_x": n, "error_y": n}
