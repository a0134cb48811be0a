"""The demo's mic mode in a real browser (issue #17): a researcher takes the caller's part
with their microphone and the role card. Headless Debian Chromium at 1,366 × 768, driven by
Playwright inside a loopback-only network namespace, with a fake microphone playing the task's
own caller opening (the bank realization the simulator would select, read from
``tasks/apexv1_051/bank/*.ogg`` with soundfile and written as a 16-bit, 44.1 kHz WAV after
4 s of silence). tests/browser/demo_mic_scenario.py drives the page and prints what it saw;
the assertions are here, on the page and the run directory.

apexv1_051 with its scripted oracle: the agent greets, the caller opens, the agent asks for
the account ID, which is the agent answering the caller. The researcher then ends the call;
the page shows the grade in the viewport with the players stopped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from runtime.core.audio import resample
from runtime.core.events import read_events
from runtime.core.spec import find_task
from runtime.user.simulator import select_realization
from tests.browser.test_browser import PASSWORD, check_end_state, run_scenario, scenario_app
from tests.conftest import run_script

pytestmark = pytest.mark.sqlite_only(
    reason="the app server runs inside a loopback-only network namespace (unshare -n) that "
           "cannot reach the session's PostgreSQL cluster; the routes it drives run on both "
           "backends in the in-process route tests")

HERE = Path(__file__).resolve().parent
SCREENSHOTS = HERE / "screenshots"
TASK = "apexv1_051"
TIMEOUT_S = 300
WAV_RATE = 44_100
"""Chromium's fake capture device runs at 44.1 kHz and needs 16-bit PCM (notes)."""


def caller_wav(path: Path, lead_s: float = 4.0, tail_s: float = 30.0) -> str:
    """The caller's opening from the task's speech bank as a WAV for the fake microphone."""
    task = find_task(TASK)
    plan = task.plan("opening")
    assert plan is not None and plan.realizations
    real = select_realization(task.id, 0, plan)
    ogg = task.folder / (real.audio or f"bank/{real.id}.ogg")
    assert ogg.is_file(), ogg
    audio, rate = sf.read(str(ogg), dtype="int16")
    if audio.ndim > 1:
        audio = audio.mean(axis=1).astype(np.int16)
    speech = resample(audio, rate, WAV_RATE)
    silence = np.zeros(int(lead_s * WAV_RATE), np.int16)
    sf.write(str(path), np.concatenate([silence, speech, np.zeros(int(tail_s * WAV_RATE),
                                                                   np.int16)]),
             WAV_RATE, subtype="PCM_16")
    return real.text


@pytest.fixture(scope="module")
def mic_result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    app = scenario_app(tmp_path_factory, "demo_mic")
    app.state.engine.dispose()
    settings = app.state.settings
    data = settings.data_dir
    root = data.parent
    run_script(TASK, "oracle", root / "frozen")  # caches the oracle's speech
    text = caller_wav(root / "caller.wav")
    config = root / "scenario.json"
    config.write_text(json.dumps({
        "data_dir": str(data), "task": TASK, "agent": "scripted:oracle", "username": "ada",
        "password": PASSWORD, "screenshots": str(SCREENSHOTS),
        "mic_wav": str(root / "caller.wav"), "answer_timeout_ms": 90_000,
    }))
    result = run_scenario("demo_mic_scenario.py", config, TIMEOUT_S)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "demo_mic_result.json").write_text(json.dumps(result, indent=2))
    return {"result": result, "settings": settings, "opening": text}


def _mic(mic_result: dict[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = mic_result["result"]["mic"]
    assert "error" not in part, (part.get("error"), part.get("traceback"),
                                 mic_result["result"].get("console"))
    return part


def test_a_researcher_talks_to_the_agent_with_the_role_card(mic_result: dict[str, Any]) -> None:
    mic = _mic(mic_result)
    card = mic["card_before"]
    assert card["visible"] and card["cue_box"] and card["facts"], card
    assert card["in_view"]["inside"], card["in_view"]  # on the first screen
    assert card["button"] == "Start call" and card["stop"] == "End call"
    assert mic["during"]["card_visible"] and mic["during"]["card_updates"] >= 1
    # The microphone was live and the agent's voice came back.
    assert mic["during"]["mic"] and mic["during"]["mic"]["totalAudioEnergy"] > 0
    assert mic["during"]["agent_stats"]["totalAudioEnergy"] > 0
    # The run: the caller's speech (the fake microphone) heard, then the agent's answer.
    run_dir = next((mic_result["settings"].runs_dir / "demo-live" / TASK).iterdir())
    events = read_events(run_dir / "events.jsonl").events
    ends = [e for e in events if e.type == "user.speech.end"]
    asks = [e for e in events if e.type == "agent.act" and e.act == "ask"]
    assert ends and asks and any(a.seq > ends[0].seq for a in asks)
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["demo_mode"] == "mic" and meta["agent"] == "scripted:oracle"
    # Ended by the researcher, graded, the grade in view.
    assert mic["state"] == "stopped" and set(mic["gates"]) == {"WS", "TS", "PV", "AC", "AV"}
    check_end_state(mic["end"])
    for page, size in mic["hscroll"].items():
        assert size["scroll"] <= size["client"], (page, size)
    for shot in ("demo_mic_picker.png", "demo_mic_call.png", "demo_mic_end.png"):
        assert (SCREENSHOTS / shot).is_file()
