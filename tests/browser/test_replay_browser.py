"""Real-browser tests of the replay page (issue #17): Debian Chromium at 1,366 × 768, in a
loopback-only network namespace (see tests/browser/test_browser.py).

The data: the 10-minute, 2,000-event synthetic run of bench/bench_webapp.py (its builder,
``synthetic_run``, reused) and a short live-participant log (speech without text when it
starts, an empty transcript, connection events), written here. Each defect the issue lists has
a test below that fails on the replay before #17: overlapping and clipped chips, lane titles
written over, empty chips on live runs, no zoom, no time axis, a click landing on the chip that
covers the one clicked, Space and arrows doing nothing, Play never turning into Pause, a ``#t=``
change in the same tab ignored, gate failures as raw predicate JSON with no link. Screenshots
go to tests/browser/screenshots/.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.bench_webapp import TRACE_S, synthetic_run
from runtime.core.events import (
    AgentTranscript,
    CueShow,
    EventLog,
    ParticipantConnection,
    SessionEnd,
    SessionStart,
    UserPlanEvent,
    UserSpeechEnd,
    UserSpeechStart,
    UserTranscript,
)
from tests.browser.test_browser import PASSWORD, SCREENSHOTS, part_ok, run_scenario, scenario_app

LONG, LIVE = "long/apexv1_070/r0", "live/apexv1_070/r0"

pytestmark = pytest.mark.sqlite_only(
    reason="the app server runs inside a loopback-only network namespace (unshare -n) that "
           "cannot reach the session's PostgreSQL cluster")


def live_run(run_dir: Path) -> None:
    """What a Study B session logs around a live participant's first turns (no trace)."""
    run_dir.mkdir(parents=True)
    log = EventLog(run_dir / "events.jsonl", wall_clock=False)
    log.emit(SessionStart(task_id="apexv1_070", task_version="1", agent="scripted:oracle",
                          seed=0, clock="realtime", sample_rate=24000, frame_ms=40), 0)
    log.emit(ParticipantConnection(state="connected"), 200)
    log.emit(AgentTranscript(turn=1, text="Hi, people operations, how can I help?"), 900)
    log.emit(CueShow(cue_id="c1", kind="inform", plan_id="live_1", text="Ask for leave"), 1000)
    log.emit(UserPlanEvent(plan_id="live_1", intent="inform", trigger="live"), 3000)
    log.emit(UserSpeechStart(plan_id="live_1", realization_id="live_1", text="",
                             duration_ms=0), 3000)
    log.emit(UserSpeechEnd(plan_id="live_1", realization_id="live_1"), 6000)
    log.emit(UserTranscript(text="", start_ms=3000, end_ms=6000, asr="whisper"), 6400)
    log.emit(ParticipantConnection(state="disconnected"), 9000)
    log.emit(SessionEnd(reason="user_goodbye"), 9000)
    log.close()
    (run_dir / "meta.json").write_text(json.dumps({
        "task_id": "apexv1_070", "agent": "scripted:oracle", "seed": 0, "run_id": "live",
        "status": "complete", "end_reason": "user_goodbye", "clock": "realtime"}))


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    app = scenario_app(tmp_path_factory, "replay-browser")
    app.state.engine.dispose()
    settings = app.state.settings
    data = settings.data_dir
    synthetic_run(settings.runs_dir / LONG)
    live_run(settings.runs_dir / LIVE)
    config = data.parent / "replay_scenario.json"
    config.write_text(json.dumps({
        "data_dir": str(data), "username": "ada", "password": PASSWORD,
        "screenshots": str(SCREENSHOTS), "long_run": LONG, "live_run": LIVE,
    }))
    out = run_scenario("replay_scenario.py", config, 300)
    (SCREENSHOTS / "replay_result.json").write_text(json.dumps(out, indent=2))
    return out


def test_ten_minute_trace_fits_1366_without_horizontal_scroll(result: dict[str, Any]) -> None:
    long = part_ok(result, "long")
    assert long["sizes"]["scroll"] <= long["sizes"]["inner"] == 1366, long["sizes"]
    assert long["zoomed"]["sizes"]["scroll"] <= 1366, long["zoomed"]["sizes"]
    assert (SCREENSHOTS / "replay_10min_1366.png").is_file()
    assert (SCREENSHOTS / "replay_10min_zoomed_1366.png").is_file()


def test_chips_never_overlap(result: dict[str, Any]) -> None:
    """Defect: chips overlap and are clipped (``late_badge_1`` shown for ``update_badge_1``)."""
    long = part_ok(result, "long")
    for level in ("fit", "zoomed"):
        geo = long[level]
        assert geo["chips"] > 50, geo
        assert geo["n_overlaps"] == 0, (level, geo["overlaps"])


def test_a_click_on_a_visible_chip_lands_on_that_chip(result: dict[str, Any]) -> None:
    """Defect: clicking a visible chip can jump to the chip covering it."""
    long = part_ok(result, "long")
    for level in ("fit", "zoomed"):
        assert long[level]["visible"] > 20 and long[level]["not_hit"] == [], long[level]
    clicked = long["clicked"]
    assert clicked["clock"] == f"{clicked['chip_t']:.1f} s"
    assert abs(clicked["view"]["now"] - clicked["chip_t"]) < 0.05


def test_lane_titles_are_never_covered(result: dict[str, Any]) -> None:
    """Defect: lane labels are overwritten by the chips."""
    long = part_ok(result, "long")
    assert long["fit"]["titles_covered"] == [] and long["zoomed"]["titles_covered"] == []


def test_time_axis_labels_the_run(result: dict[str, Any]) -> None:
    """Defect: no time axis."""
    ticks = part_ok(result, "long")["ticks"]
    assert 5 <= len(ticks) <= 30, ticks
    assert ticks[0] == "0:00" and "5:00" in ticks, ticks  # m:ss for a 10-minute run


def test_keys_zoom_and_zoom_relays_the_lanes(result: dict[str, Any]) -> None:
    """Defect: no zoom (+ and − change it; the lanes are laid out again, still without
    overlap, and the axis has more ticks)."""
    long = part_ok(result, "long")
    fit, once, thrice, back = long["zooms"]
    assert abs(fit * TRACE_S - long["fit"]["view"]["trackW"]) < 2  # the whole run fits
    assert once == pytest.approx(2 * fit, rel=0.02)
    assert thrice == pytest.approx(8 * fit, rel=0.02)
    assert back == pytest.approx(4 * fit, rel=0.02)
    assert long["zoomed"]["chips"] > long["fit"]["chips"]  # fewer folded into "+N"
    assert long["zoomed"]["view"]["contentW"] > 7 * long["zoomed"]["view"]["trackW"]
    assert long["zoomed"]["ticks"] > len(long["ticks"])


def test_arrows_move_the_playhead(result: dict[str, Any]) -> None:
    """Defect: Space / arrows do nothing (→ +5 s, ← −5 s; not while typing in a field)."""
    arrows = part_ok(result, "long")["arrows"]
    assert arrows["before"] == pytest.approx(100, abs=0.05)
    assert arrows["right"] == pytest.approx(105, abs=0.05)
    assert arrows["left"] == pytest.approx(95, abs=0.05)
    assert arrows["clock"] == "95.0 s"
    in_field = part_ok(result, "long")["in_field"]
    assert in_field["after"] == in_field["before"]


def test_space_toggles_play_and_the_button_follows(result: dict[str, Any]) -> None:
    """Defects: Space does nothing; Play never turns into Pause."""
    space = part_ok(result, "long")["space"]
    assert space["playing"]["play"] == "Pause" and space["playing"]["pressed"] == "true"
    assert space["paused"]["play"] == "Play" and space["paused"]["pressed"] == "false"
    assert space["paused"]["view"]["now"] > space["playing"]["view"]["now"]  # it did play


def test_a_hash_change_in_the_same_tab_seeks(result: dict[str, Any]) -> None:
    """Defect: a ``#t=`` change in the same tab is ignored."""
    h = part_ok(result, "long")["hash"]
    assert h["clock"] == "321.5 s" and h["audio"] == pytest.approx(321.5, abs=0.05)
    assert h["hash"] == "#t=321.5"


def test_a_gate_failure_is_readable_and_its_link_seeks_and_marks(
        result: dict[str, Any]) -> None:
    """Defect: gate failures are raw predicate JSON, not linked to the moment."""
    long = part_ok(result, "long")
    assert long["gate_texts"] and not any('{"' in t or '"kind"' in t
                                          for t in long["gate_texts"]), long["gate_texts"]
    assert long["gate_links"] >= 1
    link = long["gate_link"]
    assert link["clock"] == f"{link['seek']:.1f} s"
    assert link["view"]["now"] == pytest.approx(link["seek"], abs=0.05)
    assert not link["cursor_hidden"]
    # The chips of the events behind it are marked (an event folded into a "+N" chip marks
    # that chip), and one of them is in view beside the playhead.
    assert link["seqs"] and link["marked"], link
    assert any(abs(m["x"] - link["cursor_x"]) < 300 for m in link["marked"]), link


def test_live_run_chips_all_have_labels(result: dict[str, Any]) -> None:
    """Defect: live runs show empty chips (speech without text, an empty transcript)."""
    live = part_ok(result, "live")
    texts = [c["text"] for c in live["chips"]]
    assert len(texts) >= 7, live["chips"]
    assert all(t.strip() and t.strip() != "“”" for t in texts), texts
    assert "speaking (live_1)" in texts and "participant connected" in texts
    assert any(t.startswith("(no words recognized") for t in texts), texts
    assert live["sizes"]["scroll"] <= live["sizes"]["inner"]

