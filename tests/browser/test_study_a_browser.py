"""Study A annotator, end to end in a real browser (Debian Chromium, headless, Playwright), with
the app server and the browser inside a loopback-only network namespace (``unshare -n``), as in
tests/browser/test_browser.py. One subprocess (tests/browser/study_a_scenario.py) drives the
page and prints a JSON result that the tests below assert on; screenshots go to
tests/browser/screenshots/ (git-ignored).

The annotator opens their invitation link, plays the utterance with the keyboard (the audio
element's clock advances and its ``played`` ranges are non-empty), rates it with the keyboard
(fidelity, naturalness, leakage), goes to the next item with the keyboard, reloads the page
mid-study and finds the next item shown with the first counted as done, and going back shows
the saved ratings. The ratings stay disabled until the clip has played to the end. The
researcher's study page fits 1,366 px and "Close study" asks first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from app import study_a as svc
from app.models_study_a import Annotator
from tests.browser.test_browser import PASSWORD, SCREENSHOTS, run_scenario, scenario_app

pytestmark = pytest.mark.sqlite_only(
    reason="the app server runs inside a loopback-only network namespace (unshare -n) that "
           "cannot reach the session's PostgreSQL cluster; the routes it drives run on both "
           "backends in the in-process route tests")

TIMEOUT_S = 180


@pytest.fixture(scope="module")
def browser_result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    app = scenario_app(tmp_path_factory, "study_a_browser")
    data = app.state.settings.data_dir
    with Session(app.state.engine) as session:
        svc.create_study(session, app.state.catalogue.tasks,
                         svc.StudyACreate(name="browser", n_tasks=4, n_annotators=1),
                         created_by="ada")
        annotator = session.exec(select(Annotator)).one()
        token = annotator.token
        # The researcher's page is checked on a full-size study (72 items, long item keys).
        study_id = svc.create_study(session, app.state.catalogue.tasks,
                                    svc.StudyACreate(name="wide", n_annotators=0),
                                    created_by="ada").id
    app.state.engine.dispose()
    config = data.parent / "study_a_scenario.json"
    config.write_text(json.dumps({"data_dir": str(data), "token": token,
                                  "screenshots": str(SCREENSHOTS), "study_id": study_id,
                                  "username": "ada", "password": PASSWORD}))
    result = run_scenario("study_a_scenario.py", config, TIMEOUT_S)
    (SCREENSHOTS / "study_a_result.json").write_text(json.dumps(result, indent=2))
    return result


@pytest.fixture(scope="module")
def run(browser_result: dict[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = browser_result["annotator"]
    assert "error" not in part, (part.get("error"), part.get("traceback"),
                                 browser_result.get("console"))
    return part


def test_the_play_key_plays_the_utterance(run: dict[str, Any]) -> None:
    audio = run["audio"]
    assert audio["currentTime"] > 0.3 and audio["duration"] > 1.0
    assert audio["played"] and audio["played"][0][1] > audio["played"][0][0]
    assert run["replay"]["paused_at"] > 0.3
    assert run["replay"]["after"] < run["replay"]["paused_at"]  # R went back to the start


def test_ratings_open_only_after_the_clip_played_to_the_end(run: dict[str, Any]) -> None:
    before = run["before_listening"]
    assert before["buttons"] == 12 and before["disabled"] == 12 and before["note"]
    assert before["saved"] == 0 and before["pending"] == 0
    assert before["status"].startswith("Listen to the whole clip first")
    after = run["after_listening"]
    assert after["disabled"] == 0 and after["ended"] and after["note_hidden"]
    refused = run["unheard_post"]
    assert refused["status"] == 409 and refused["body"]["not_played"] is True


def test_researcher_page_fits_1366_and_closing_asks_first(
        browser_result: dict[str, Any]) -> None:
    part = browser_result["researcher"]
    assert "error" not in part, (part.get("error"), part.get("traceback"))
    widths = part["widths"]
    assert widths["page"] <= widths["viewport"], widths  # no page-wide horizontal scroll
    assert len(part["close_asked"]) == 1 and part["close_asked"][0].startswith("Close study “wide”")
    assert part["still_open"]


def test_keyboard_ratings_are_saved_at_once(run: dict[str, Any]) -> None:
    assert run["first"]["n"] == "1" and run["first"]["done"] == "0"
    assert run["rated"]["pressed"] == {"fidelity": 4, "naturalness": 4, "leakage": 0}
    assert run["rated"]["done"] == "1" and run["status"].startswith("Saved")
    # Typing a comment with rating keys in it changed no rating.
    assert run["after_comment"]["pressed"] == run["rated"]["pressed"]
    assert run["errors"] == 0


def test_reload_mid_study_resumes_on_the_next_item(run: dict[str, Any]) -> None:
    reloaded = run["reloaded"]
    assert reloaded["url"].endswith("/item/2") and reloaded["n"] == "2"
    assert reloaded["done"] == "1" and reloaded["total"] == "12"
    assert reloaded["pressed"] == {"fidelity": None, "naturalness": None, "leakage": None}
    assert reloaded["transcript"] != run["first"]["transcript"]
    assert run["resumed"]["url"].endswith("/item/2")


def test_going_back_shows_the_saved_ratings(run: dict[str, Any]) -> None:
    back = run["back"]
    assert back["n"] == "1" and back["pressed"] == {"fidelity": 4, "naturalness": 4,
                                                    "leakage": 0}
    assert back["comment"] == "fast speech, sounds fine"
    first = run["server"]["items"][0]
    assert (first["fidelity"], first["naturalness"], first["leakage"]) == (4, 4, 0)
    assert first["comment"] == "fast speech, sounds fine" and run["server"]["done"] == 1
    for shot in run["screenshots"]:
        assert Path(shot).is_file()
