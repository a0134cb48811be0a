"""Real-browser tests: Debian Chromium, headless, driven by Playwright, with the app server and
the browser both inside a network namespace that has only ``lo`` (``unshare -n``), so nothing
can leave loopback. One subprocess (tests/browser/scenario.py) runs both scenarios and prints a
JSON result that the tests below assert on; it and the screenshots go to
tests/browser/screenshots/ (git-ignored).

(a) a live demo of apexv1_070 with its scripted oracle (about 67 s of media on the realtime
clock, at 1,366 × 768): the browser receives both channels over WebRTC (samples received, audio
energy, concealment under 20%) and the page ends with the committed artifact and the gates, in a
clean end state (players stopped, list numbers visible, the lifecycle history one line per
transition, the grade in view);
(b) a replay: clicking an ``artifact.update`` marker seeks the audio and the artifact panel
shows that version.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_script
from tests.webclient import PASSWORD, researcher_app

pytestmark = pytest.mark.sqlite_only(
    reason="the app server runs inside a loopback-only network namespace (unshare -n) that "
           "cannot reach the session's PostgreSQL cluster; the routes it drives run on both "
           "backends in the in-process route tests")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CHROMIUM = Path("/usr/lib/chromium/chromium")
SCREENSHOTS = HERE / "screenshots"
TIMEOUT_S = 240


def skip_reason() -> str | None:
    if not CHROMIUM.is_file():
        return f"Debian Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    for module, pin in (("playwright", "playwright==1.65.2"), ("aiortc", "aiortc==1.16.0")):
        if find_spec(module) is None:
            return f"{module} is not installed (pip install {pin})"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip (util-linux, iproute2) is missing"
    probe = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return ("cannot create a loopback-only network namespace (unshare -n needs root or "
                f"user namespaces): {probe.stderr.strip()[:200]}")
    return None


def scenario_app(tmp_path_factory: pytest.TempPathFactory, name: str) -> Any:
    """The app of a scenario's server: a fresh data folder ``<tmp>/<name>*/data`` with
    researcher "ada" (:data:`PASSWORD`); its caller lets go of the database before the server
    starts. Skips the test where the browser cannot run here."""
    reason = skip_reason()
    if reason is not None:
        pytest.skip(reason)
    return researcher_app(tmp_path_factory.mktemp(name) / "data", secret_key="browser-test-secret")


def run_scenario(script: str, config: Path, timeout_s: float, extra_log: Path | None = None,
                 ) -> dict[str, Any]:
    """Run ``tests/browser/<script>`` with ``config`` inside a loopback-only network namespace
    and return the JSON it printed on its ``RESULT`` line (the test fails, with the scenario's
    output and ``extra_log``'s tail, when there is none)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" "$@"',
           sys.executable, str(HERE / script), str(config)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=ROOT,
                          env=env, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        more = ""
        if extra_log is not None and extra_log.is_file():
            more = f"\n{extra_log.name}:\n{extra_log.read_text()[-3000:]}"
        pytest.fail(f"the browser scenario printed no result (exit {proc.returncode}):\n"
                    f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}{more}")
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT "):])
    return result


@pytest.fixture(scope="module")
def browser_result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    app = scenario_app(tmp_path_factory, "browser")
    app.state.engine.dispose()
    settings = app.state.settings
    data = settings.data_dir
    # The replay target, and the oracle's agent speech cached for the live demo.
    run_script("apexv1_070", "oracle", settings.runs_dir / "camp")
    config = data.parent / "scenario.json"
    config.write_text(json.dumps({
        "data_dir": str(data), "replay_run": "camp/apexv1_070/r0", "task": "apexv1_070",
        "agent": "scripted:oracle", "username": "ada", "password": PASSWORD,
        "screenshots": str(SCREENSHOTS), "demo_timeout_ms": 150_000,
    }))
    result = run_scenario("scenario.py", config, TIMEOUT_S)
    (SCREENSHOTS / "result.json").write_text(json.dumps(result, indent=2))
    return result


def part_ok(result: dict[str, Any], name: str) -> dict[str, Any]:
    """One step's part of a scenario's RESULT; the test fails with its error, traceback and the
    page's console when the step failed."""
    part: dict[str, Any] = result[name]
    assert "error" not in part, (part.get("error"), part.get("traceback"),
                                 result.get("console"))
    return part


def test_demo_in_a_real_browser(browser_result: dict[str, Any]) -> None:
    demo = part_ok(browser_result, "demo")
    assert demo["state"] == "finished"
    for role in ("user", "agent"):
        stats = demo["stats"].get(role)
        assert stats, f"no inbound-rtp stats for the {role} track: {demo['stats']}"
        assert stats["totalSamplesReceived"] > 48_000 * 30, (role, stats)
        assert stats["totalAudioEnergy"] > 0, (role, stats)
        concealed = stats["concealedSamples"] / stats["totalSamplesReceived"]
        assert concealed < 0.2, (role, stats)
    assert demo["artifacts"] == [{"version": demo["artifacts"][0]["version"],
                                  "lifecycle": "COMMITTED"}]
    assert demo["fields"]["end_date"] == "2027-06-11"
    assert demo["gates"] == {"WS": "1", "TS": "pass", "PV": "pass", "AC": "pass", "AV": "pass"}
    assert demo["afa"] == "10/10"
    assert "revoked" in demo["auth"] and "granted" in demo["auth"]
    assert "barge_in" in demo["duplex"]
    assert demo["transcript_lines"] > 10 and demo["tool_lines"] >= 10
    assert Path(demo["screenshot"]).is_file()


def check_end_state(demo: dict[str, Any]) -> None:
    """Issue #17's demo end state (tests/browser/scenario.py, ``end_state``): players stopped
    at their final time, every list number visible, one lifecycle line per transition, the
    grade in the 1,366 × 768 viewport, no horizontal scroll, the status ended with the media."""
    assert demo["players"], "no audio players on the page"
    for player in demo["players"]:
        # A live stream's player counts on while the stream stays attached.
        assert player["paused"] and player["t1"] == player["t0"], player
    for marker in demo["markers"]:
        assert marker["need"] <= marker["room"], marker  # "10." fits left of its item
    assert demo["grade_in_view"] and demo["grade_in_view"]["inside"], demo["grade_in_view"]
    assert demo["gates_in_view"] and demo["gates_in_view"]["inside"], demo["gates_in_view"]
    assert demo["hscroll"]["scroll"] <= demo["hscroll"]["client"], demo["hscroll"]
    marks = demo["end_marks"]
    assert "media" in marks and "status" in marks, marks
    assert marks["status"] - marks["media"] < 2000, marks  # ms: ended with the media


def test_demo_end_state_in_a_real_browser(browser_result: dict[str, Any]) -> None:
    demo = part_ok(browser_result, "demo")
    check_end_state(demo)
    assert any(m["items"] >= 10 for m in demo["markers"]), demo["markers"]
    # apexv1_070's oracle drafts, confirms and commits: each transition on a line of its own.
    trail = demo["trails"][0]
    assert trail["entries"] >= 2 and trail["lines"] == trail["entries"], trail
    assert "COMMITTED" in trail["texts"][-1]


def test_replay_seek_in_a_real_browser(browser_result: dict[str, Any]) -> None:
    replay = part_ok(browser_result, "replay")
    assert replay["markers"] > 3
    assert replay["shown_version"] == replay["expected_version"]
    assert replay["clock"] == f"{replay['clicked_t']:.1f} s"
    assert replay["hash"] == f"#t={replay['clicked_t']:.1f}"
    assert Path(replay["screenshot"]).is_file()
