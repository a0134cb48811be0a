"""Study B end to end in a real browser (acceptance 1 and 3 of issue #8): headless Debian
Chromium, driven by Playwright inside a loopback-only network namespace (``unshare -n``), joins
with a participant token, consents, passes the microphone check and runs a session whose
microphone is a WAV of frozen bank realizations; then the browser is killed mid-call and a new
one rejoins; then, in the second session, the server is killed (SIGKILL) and restarted on the
same data directory. tests/browser/study_b_scenario.py does the driving and prints what it saw;
the assertions are here, on the page samples, the database and the run directories.

The task is apexv1_051 with its scripted oracle, chosen from the reveal graphs: the agent
greets, the caller opens (WAV utterance 1), the agent asks for the account ID (an ``on_ask``
fact: it appears on the card when that turn ends), the caller answers (WAV utterance 2), the
agent asks for the invoice numbers and the policy's answer is a ``correct`` plan, so a private
correction cue shows about 20 s into the call. The WAV places the two realizations the
simulator would select at the frozen run's spacing plus a second of slack (the scripted agent
waits for the end of each utterance, so only their spacing matters), after 4 s of leading
silence (the file starts playing at getUserMedia, a second or two before the media clock).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
from sqlmodel import Session, select

from app.auth import create_user
from app.live import RECOVERED
from app.models_study_b import LiveSession, Participant, StudyB
from app.settings import Settings
from app.web import create_app
from grading.gates import grade_run_dir
from runtime.core.audio import SAMPLE_RATE, resample
from runtime.core.events import read_events
from runtime.core.spec import TaskSpec, find_task
from runtime.speechbank.bank import BankPlayer
from runtime.user.simulator import select_realization
from study_protocols.study_b import make_plan
from tests.browser.test_browser import run_scenario, skip_reason
from tests.conftest import run_script

PASSWORD = "browser-test-pass-9"

pytestmark = pytest.mark.sqlite_only(
    reason="the app server runs inside a loopback-only network namespace (unshare -n) that "
           "cannot reach the session's PostgreSQL cluster; the routes it drives run on both "
           "backends in the in-process route tests")

HERE = Path(__file__).resolve().parent
SCREENSHOTS = HERE / "screenshots"
TOKEN = "e2e-participant-token-0123456789ab"
TIMEOUT_S = 420
WAV_RATE = 44_100
"""Chromium's fake capture device runs at 44.1 kHz and needs 16-bit PCM (notes)."""


def _realization(task: TaskSpec, plan_id: str) -> np.ndarray[Any, Any]:
    plan = task.plan(plan_id)
    assert plan is not None
    real = select_realization(task.id, 0, plan)
    return BankPlayer(task).audio(real.id, real.audio)


def _speech_wav(path: Path, task: TaskSpec, frozen_run: Path) -> dict[str, float]:
    """Opening, then the account-ID answer at the frozen run's spacing plus 1 s, after 4 s of
    silence; a long silent tail."""
    starts = {e.plan_id: e.t_media_ms for e in read_events(frozen_run / "events.jsonl").events
              if e.type == "user.plan"}
    gap_s = (starts["ans_account_id"] - starts["opening"]) / 1000 + 1.0
    lead_s = 4.0
    opening = _realization(task, "opening")
    answer = _realization(task, "ans_account_id")
    total = int((lead_s + gap_s + len(answer) / SAMPLE_RATE + 40) * SAMPLE_RATE)
    audio = np.zeros(total, np.int16)
    at = int(lead_s * SAMPLE_RATE)
    audio[at:at + len(opening)] = opening
    at = int((lead_s + gap_s) * SAMPLE_RATE)
    audio[at:at + len(answer)] = answer
    sf.write(str(path), resample(audio, SAMPLE_RATE, WAV_RATE), WAV_RATE, subtype="PCM_16")
    return {"lead_s": lead_s, "gap_s": gap_s}


def _tone_wav(path: Path) -> None:
    t = np.arange(WAV_RATE) / WAV_RATE
    tone = (0.25 * np.sin(2 * np.pi * 440 * t) * 32767).astype(np.int16)
    sf.write(str(path), tone, WAV_RATE, subtype="PCM_16")


def _setup(data: Path) -> tuple[Settings, list[int]]:
    settings = Settings(data_dir=data, secret_key="browser-test-secret")
    app = create_app(settings)
    with Session(app.state.engine) as db:
        create_user(db, "ada", PASSWORD)
        # A plan as the app makes one (the study page shows it); the session rows below are
        # the ones this test plays.
        plan = make_plan(["apexv1_051", "apexv1_070"], ["scripted:oracle"], seed=0,
                         n_anchor=0, anchor_task_ids=None, sessions_per_participant=2)
        study = StudyB(name="e2e audit", created_by="ada", status="launched", seed=0,
                       plan=plan.to_json(),
                       task_ids=["apexv1_051", "apexv1_070"], systems=["scripted:oracle"],
                       consent_text="Consent for the end-to-end test.", completion_code="E2E",
                       on_disconnect="rejoin")
        db.add(study)
        db.flush()
        person = Participant(study_id=study.id or 0, label="P01", token=TOKEN)
        db.add(person)
        db.flush()
        rows = [LiveSession(study_id=study.id or 0, participant_id=person.id or 0, position=k,
                            task_id=t, system="scripted:oracle")
                for k, t in enumerate(["apexv1_051", "apexv1_070"], start=1)]
        for row in rows:
            db.add(row)
        db.commit()
        ids = [r.id or 0 for r in rows]
    app.state.engine.dispose()
    return settings, ids


@pytest.fixture(scope="module")
def e2e(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    reason = skip_reason()
    if reason is not None:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("study_b_browser")
    settings, ids = _setup(root / "data")
    task = find_task("apexv1_051")
    # The frozen run gives the plans' spacing and caches the oracle's speech for both tasks.
    frozen = run_script("apexv1_051", "oracle", root / "frozen")
    run_script("apexv1_070", "oracle", root / "frozen")
    timing = _speech_wav(root / "speech.wav", task, frozen)
    _tone_wav(root / "tone.wav")
    sf.write(str(root / "silence.wav"), np.zeros(WAV_RATE * 2, np.int16), WAV_RATE,
             subtype="PCM_16")
    config = root / "scenario.json"
    config.write_text(json.dumps({
        "data_dir": str(settings.data_dir), "token": TOKEN, "screenshots": str(SCREENSHOTS),
        "speech_wav": str(root / "speech.wav"), "tone_wav": str(root / "tone.wav"),
        "silence_wav": str(root / "silence.wav"), "server_log": str(root / "server.log"),
        "cue_timeout_s": 90, "username": "ada", "password": PASSWORD,
        "study_id": study_id(settings),
    }))
    result = run_scenario("study_b_scenario.py", config, TIMEOUT_S,
                          extra_log=root / "server.log")
    server_log = (root / "server.log").read_text()[-3000:] if (root / "server.log").is_file() \
        else ""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "study_b_result.json").write_text(json.dumps(result, indent=2))
    app = create_app(settings)
    with Session(app.state.engine) as db:
        person = db.exec(select(Participant).where(Participant.token == TOKEN)).one()
        rows = [db.get(LiveSession, i) for i in ids]
        db.expunge_all()
    app.state.engine.dispose()
    return {"result": result, "settings": settings, "person": person, "rows": rows,
            "timing": timing, "server_log": server_log}


def study_id(settings: Settings) -> int:
    app = create_app(settings)
    with Session(app.state.engine) as db:
        found = db.exec(select(StudyB)).one().id or 0
    app.state.engine.dispose()
    return found


def _ok(e2e: dict[str, Any], name: str) -> dict[str, Any]:
    part: dict[str, Any] = e2e["result"][name]
    assert "error" not in part, (part.get("error"), part.get("traceback"),
                                 e2e["result"].get("console"), e2e["server_log"])
    return part


def _run_dir(e2e: dict[str, Any], index: int) -> Path:
    row = e2e["rows"][index]
    assert row.run_dir, row
    path: Path = e2e["settings"].runs_dir / row.run_dir
    return path


def test_consent_and_microphone_check(e2e: dict[str, Any]) -> None:
    consent = _ok(e2e, "consent")
    assert consent["consent_url"].endswith(f"/p/{TOKEN}/consent")
    assert consent["mic_url"].endswith(f"/p/{TOKEN}/mic")
    assert consent["mic"]["recordedBytes"] > 0 and consent["mic"]["peak"] > 0.05
    # Continue waits for the headphone check: the test sound played and confirmed.
    assert consent["mic"]["continue_before_sound"]
    assert consent["mic"]["soundPlayed"] and consent["mic"]["headphones"]
    assert consent["session_items"][0].startswith("Session 1 of 2")
    person = e2e["person"]
    assert person.consent == "given" and person.consent_at and person.mic_checked_at
    assert person.headphones_checked_at
    assert (person.external_pid, person.external_study_id, person.external_session_id) == (
        "e2e-pid-1", "e2e-study", "e2e-session")


def test_a_session_over_webrtc_reveals_a_fact_and_shows_a_cue(e2e: dict[str, Any]) -> None:
    call = _ok(e2e, "call")
    task = find_task("apexv1_051")
    run_dir = _run_dir(e2e, 0)
    events = read_events(run_dir / "events.jsonl").events
    # The agent heard the participant: it asked for the account ID after the opening ended,
    # then for the invoice numbers after the answer.
    ends = [e for e in events if e.type == "user.speech.end"]
    asks = [e for e in events if e.type == "agent.act" and e.act == "ask"]
    account_ask = next(e for e in asks if e.field == "account_id")
    assert ends and account_ask.seq > ends[0].seq
    # The card shows what she knows from the first second (the account ID, given when
    # asked); the corrected duplicate invoice number appears when the reveal graph releases
    # it, not before ...
    assert "account_id@1" in call["before"]["dom_facts"]
    fact = next(e for e in events if e.type == "card.fact" and e.fact_id == "duplicate_invoice"
                and e.version == 2)
    assert not fact.known_at_start and fact.seq > account_ask.seq
    assert "duplicate_invoice@2" not in call["before"]["dom_facts"]
    running = [s for s in call["samples"] if s["state"] == "running"]
    assert any("duplicate_invoice@2" not in s["dom_facts"] for s in running)
    shown = [s for s in running if "duplicate_invoice@2" in s["dom_facts"]]
    assert shown, "the corrected invoice number never appeared on the card"
    # ... and the browser saw it no earlier than the server logged it (media ms, at 1 s).
    assert shown[0]["elapsed"] + 1000 >= fact.t_media_ms
    # A cue appeared at its anchor (the end of the agent's invoice question) and the page
    # showed the cue's text.
    cue = next(e for e in events if e.type == "cue.show")
    assert cue.kind == "correct" and cue.plan_id == "ans_invoices"
    assert call["last"]["cue"] and call["last"]["cue_box"] == cue.text
    invoice_ask = next(e for e in asks if e.field in ("original_invoice", "duplicate_invoice"))
    assert cue.seq > invoice_ask.seq
    assert all(e.t_media_ms >= 0 for e in events if e.type in ("cue.show", "card.fact"))
    # Both channels are in the trace: the participant's voice and the agent's.
    trace, rate = sf.read(str(run_dir / "trace.wav"), dtype="int16")
    assert rate == SAMPLE_RATE and trace.shape[1] == 2
    starts = [e.t_media_ms for e in events if e.type == "user.speech.start"]
    window = trace[starts[0] * 24:ends[0].t_media_ms * 24, 0].astype(np.float64)
    assert np.sqrt(np.mean(window ** 2)) > 300
    assert np.sqrt(np.mean(trace[:, 1].astype(np.float64) ** 2)) > 100
    transcripts = [e for e in events if e.type == "user.transcript"]
    assert transcripts
    if not transcripts[0].error:  # faster-whisper installed
        assert "orbital" in transcripts[0].text.lower() or "grace" in transcripts[0].text.lower()
    grade = grade_run_dir(run_dir, {task.id: task})
    assert grade.task_id == task.id and not [p for p in grade.problems if "trace" in p]


def test_closing_the_browser_and_reopening_rejoins_the_same_run(e2e: dict[str, Any]) -> None:
    _ok(e2e, "call")
    rejoin = _ok(e2e, "rejoin")
    assert rejoin["link_text"] == "continue"
    assert rejoin["state"] == "incomplete" and "ended early" in rejoin["message"]
    assert rejoin["label"] == "Ended early"  # never the internal state name
    assert rejoin["next_visible"]
    row = e2e["rows"][0]
    assert row.state == "incomplete" and row.detail == "the participant ended the call"
    run_dir = _run_dir(e2e, 0)
    assert [p.name for p in run_dir.parent.glob("1-*")] == [run_dir.name]  # one run
    events = read_events(run_dir / "events.jsonl").events
    assert [e.type for e in events].count("session.start") == 1
    connections = [e for e in events if e.type == "participant.connection"]
    assert [e.state for e in connections] == ["connected", "disconnected", "connected"]
    # The browser was closed after this much media; the log kept going, in one run.
    assert connections[1].t_media_ms >= e2e["result"]["call"]["closed_at_elapsed"] - 1000
    assert events[-1].type == "session.end"
    assert "the participant ended the call" in events[-1].detail
    assert any("Session 1 of 2" in item and "ended early" in item
               for item in rejoin["items_after"])


def test_a_server_killed_mid_session_leaves_a_readable_incomplete_run(
    e2e: dict[str, Any],
) -> None:
    restart = _ok(e2e, "restart")
    row = e2e["rows"][1]
    assert row.state == "incomplete" and row.detail == RECOVERED
    assert restart["state_after"] == "incomplete" and restart["start_disabled"]
    assert restart["label_after"] == "Ended early"
    run_dir = _run_dir(e2e, 1)
    read = read_events(run_dir / "events.jsonl")
    events = read.events
    assert events[0].type == "session.start" and events[-1].type == "session.end"
    assert events[-1].detail == RECOVERED and events[-1].failure_class == "infrastructure"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert "agent.speech.start" in {e.type for e in events}
    # What the server had received is on disk: at most about a second of trace is missing.
    info = sf.info(str(run_dir / "trace.wav"))
    assert info.channels == 2
    assert info.frames * 1000 // SAMPLE_RATE >= restart["elapsed_at_kill"] - 1500
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["status"] == "incomplete"
    task = find_task("apexv1_070")
    grade = grade_run_dir(run_dir, {task.id: task})
    assert grade.infrastructure_failure and grade.end_reason == "infrastructure_error"


def test_researcher_study_pages_fit_1366_without_horizontal_scroll(e2e: dict[str, Any]) -> None:
    """Issue #17: the Study B researcher pages (the study with its plan and links, the results
    after the sessions above) at 1,366 × 768 have no page-wide horizontal scroll."""
    pages = _ok(e2e, "researcher_pages")
    assert set(pages) == {"study", "results"}
    for name, size in pages.items():
        assert size["scroll"] <= size["inner"], (name, size)
