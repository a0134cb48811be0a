"""Real-browser tests of the run list and compare pages (issue #17): Debian Chromium at
1,366 × 768, in a loopback-only network namespace (see tests/browser/test_browser.py). The
data: a 24-task × 3-repeat campaign of the scripted oracle on the virtual clock, plus one run of
another scripted agent (tests/fixtures/scripts/apexv1_070_late_summary.yaml) whose caller plans
come later and after other steps. Screenshots go to tests/browser/screenshots/."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from runtime.core.spec import load_tasks
from runtime.session.campaign import run_campaign
from runtime.suite.subsets import AUDIT, task_folders
from tests.browser.test_browser import PASSWORD, SCREENSHOTS, part_ok, run_scenario, scenario_app
from tests.conftest import run_script

LATE = Path(__file__).resolve().parent.parent / "fixtures" / "scripts" / \
    "apexv1_070_late_summary.yaml"
TASK, REPEATS = "apexv1_070", 3
PLAN = "barge_revoke"

pytestmark = pytest.mark.sqlite_only(
    reason="the app server runs inside a loopback-only network namespace (unshare -n) that "
           "cannot reach the session's PostgreSQL cluster")


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    app = scenario_app(tmp_path_factory, "runs-browser")
    app.state.engine.dispose()
    settings = app.state.settings
    data = settings.data_dir
    tasks = load_tasks(task_folders(None, AUDIT))  # the 24 audit tasks, each with an oracle
    assert len(tasks) == 24
    asyncio.run(run_campaign(tasks, "scripted:oracle", settings.runs_dir / "camp24",
                             repeats=REPEATS, concurrency=2))
    run_script(TASK, LATE, settings.runs_dir / "alt")
    config = data.parent / "runs_scenario.json"
    config.write_text(json.dumps({
        "data_dir": str(data), "username": "ada", "password": PASSWORD,
        "screenshots": str(SCREENSHOTS), "search": TASK,
        "pick": [f"camp24/{TASK}/r0", f"alt/{TASK}/r0"], "plan": PLAN,
    }))
    out = run_scenario("runs_scenario.py", config, 240)
    (SCREENSHOTS / "runs_result.json").write_text(json.dumps(out, indent=2))
    out["n_runs"] = len(tasks) * REPEATS + 1
    return out


def test_run_list_fits_1366_and_is_paged(result: dict[str, Any]) -> None:
    runs = part_ok(result, "runs")
    sizes = runs["first"]["sizes"]
    assert sizes["scroll"] <= sizes["inner"] == 1366, sizes  # no horizontal scroll
    assert len(runs["first"]["rows"]) == 50  # the first page of the 73 runs
    assert f"of {result['n_runs']}" in runs["first"]["summary"].replace("\n", " ")
    seconds = [int(m) * 60 + int(s) for m, s in (d.split(":") for d in runs["durations"])]
    assert len(seconds) == 50 and seconds == sorted(seconds, reverse=True)
    assert (SCREENSHOTS / "runs_1366.png").is_file()


def test_search_then_two_ticked_runs_open_compare(result: dict[str, Any]) -> None:
    runs = part_ok(result, "runs")
    searched = runs["searched"]
    assert sorted(searched["rows"]) == sorted(
        [f"alt/{TASK}/r0"] + [f"camp24/{TASK}/r{k}" for k in range(REPEATS)])
    assert f"q={TASK}" in searched["url"]
    assert searched["sizes"]["scroll"] <= searched["sizes"]["inner"]
    assert runs["disabled_before"] and runs["enabled_after"]
    url = runs["compare_url"]
    assert re.search(rf"run=camp24%2F{TASK}%2Fr0", url) and re.search(rf"run=alt%2F{TASK}%2Fr0",
                                                                       url), url


def test_compare_aligns_the_plan_and_seeks_both_players(result: dict[str, Any]) -> None:
    compare = part_ok(result, "compare")
    assert compare["rows"] == 1  # the revocation plan of both runs on one row
    assert compare["players"] == 2 and compare["fields"] > 3
    seeks = compare["seeks"]
    assert abs(seeks["b"]["t"] - seeks["a"]["t"]) > 5  # one row, though 15 s apart
    for side in ("a", "b"):
        assert abs(seeks[side]["current"] - seeks[side]["t"]) < 1.5, seeks
    sizes = compare["sizes"]
    assert sizes["scroll"] <= sizes["inner"], sizes
    assert (SCREENSHOTS / "compare_1366.png").is_file()
