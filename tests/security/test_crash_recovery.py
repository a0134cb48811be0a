"""Crash recovery for every kind of run (issue #15, item 4), done the way an unlucky operator
meets it: ``kill -9`` of the server in the middle of a live demo and a Study B live call, and of
``apex-voice run`` in the middle of a campaign. After a restart every run is ``complete`` or
``incomplete`` with an infrastructure reason (closed log, readable WAV), and none is graded as an
agent failure; a run still being written by a live process is left alone; re-running the
campaign finishes it and keeps the cut run aside, repaired."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import wave
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.models_study_b import LiveSession, Participant, StudyB
from app.runindex import outcome_of
from app.settings import Settings
from app.web import create_app
from grading.gates import grade_run_dir
from runtime.core.events import read_events
from runtime.core.rundir import find_run_dirs
from runtime.core.spec import find_task
from tests.conftest import run_script

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

ROOT = Path(__file__).resolve().parents[2]
TASK = "apexv1_070"

SERVER_CHILD = r'''
import asyncio, sys
from pathlib import Path
from app.demo import DemoManager
from app.live import BankRobot, CallPlan, DbCallStore, LiveCallManager
from app.settings import Settings
from app.web import create_app
from runtime.session.campaign import parse_agent_spec
from runtime.user.live_user import LiveParticipant
from runtime.core.spec import find_task

data, key, rel = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
app = create_app(Settings(data_dir=data, secret_key="crash-test"))
task = find_task("apexv1_070")
robot = BankRobot(task)

async def main():
    calls = LiveCallManager(
        data / "runs", store=DbCallStore(app.state.engine), reap_every_s=3600,
        participant_factory=lambda t, s, a: LiveParticipant(t, seed=s, asr=robot.asr(),
                                                             transcribe_inline=True),
        asr_factory=lambda: None, feeder_factory=lambda plan: robot)
    call = await calls.open(CallPlan(key=key, task=task,
                                     factory=parse_agent_spec("scripted:oracle"),
                                     run_dir=data / "runs" / rel, run_rel=rel))
    call.start()
    demos = DemoManager(data / "runs", reap_every_s=3600)
    demo = demos.create(task, parse_agent_spec("scripted:oracle"), owner="ada")
    demo.start()
    print("DEMO", demo.run_dir, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
'''


def _study_row(engine: Any) -> int:
    with Session(engine) as db:
        study = StudyB(name="crash", created_by="ada", status="launched")
        db.add(study)
        db.flush()
        person = Participant(study_id=study.id or 0, label="P01", token="c" * 32)
        db.add(person)
        db.flush()
        row = LiveSession(study_id=study.id or 0, participant_id=person.id or 0, position=1,
                          task_id=TASK, system="scripted:oracle")
        db.add(row)
        db.commit()
        assert row.id is not None
        return row.id


def _media_on_disk(run_dir: Path) -> bool:
    """A few seconds of the run are on disk: events logged and trace audio flushed."""
    log, trace = run_dir / "events.jsonl", run_dir / "trace.wav"
    return (log.is_file() and log.read_text(encoding="utf-8").count("\n") >= 5
            and trace.is_file() and trace.stat().st_size > 2 * 96_000)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from app.cli import main; main()", *args]


def _assert_recovered_or_complete(run_dir: Path) -> str:
    meta = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
    task = find_task(meta["task_id"])
    grade = grade_run_dir(run_dir, {task.id: task})
    events = read_events(run_dir / "events.jsonl").events
    ends = [e for e in events if e.type == "session.end"]
    assert len(ends) == 1 and events[-1].type == "session.end", run_dir
    with wave.open(str(run_dir / "trace.wav")) as w:  # the header matches the data again
        assert w.getnchannels() == 2 and w.getnframes() > 0
    if meta["status"] == "complete":
        assert ends[0].reason != "infrastructure_error" or grade.infrastructure_failure
        return "complete"
    assert meta["status"] == "incomplete", (run_dir, meta["status"])
    assert meta["end_reason"] == "infrastructure_error"
    assert meta["failure_class"] == "infrastructure"
    assert ends[0].reason == "infrastructure_error" and ends[0].failure_class == "infrastructure"
    assert grade.infrastructure_failure and outcome_of(grade) == "infrastructure"
    return "incomplete"


@pytest.mark.slow
def test_kill_9_during_a_demo_a_live_call_and_a_campaign(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data, secret_key="crash-test")
    app = create_app(settings)
    key = _study_row(app.state.engine)
    app.state.engine.dispose()
    runs = data / "runs"
    live_rel = f"study-b/1/P01/1-{TASK}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "APEX_DATA_DIR": str(data)}
    server = subprocess.Popen([sys.executable, "-c", SERVER_CHILD, str(data), str(key), live_rel],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    campaign = subprocess.Popen(
        _cli("run", "--task", TASK, "--agent", "scripted:oracle", "--clock", "realtime",
             "--out", str(runs / "camp")),
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    children = [server, campaign]
    try:
        assert server.stdout is not None
        demo_line = server.stdout.readline()
        assert demo_line.startswith("DEMO "), server.stderr.read() if server.stderr else ""
        demo_dir = Path(demo_line.split(" ", 1)[1].strip())
        cut = {"demo": demo_dir, "live": runs / live_rel, "campaign": runs / "camp" / TASK / "r0"}
        deadline = time.monotonic() + 150
        while not all(_media_on_disk(d) for d in cut.values()):
            for child in children:
                assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, {k: _media_on_disk(d) for k, d in cut.items()}
            time.sleep(0.2)
        # A recovery pass while the writers are alive (a second server starting, say) must
        # leave their runs alone.
        from runtime.core.rundir import recover_runs

        assert recover_runs(runs) == []
        for d in cut.values():
            meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
            assert meta["status"] == "running", d
    finally:
        for child in children:
            child.send_signal(signal.SIGKILL)
        for child in children:
            child.wait(timeout=30)
    for name, d in cut.items():  # as the crash left them
        events = read_events(d / "events.jsonl").events
        assert events and all(e.type != "session.end" for e in events), name
    sizes = {name: (d / "events.jsonl").read_bytes() for name, d in cut.items()}

    # Restart the server on the same data directory.
    restarted = create_app(settings)
    with TestClient(restarted) as client:
        for name, d in cut.items():
            assert (d / "events.jsonl").read_bytes().startswith(sizes[name]), name
            assert _assert_recovered_or_complete(d) == "incomplete", name
            meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
            assert meta.get("recovered"), name
        every = find_run_dirs([runs])
        assert set(cut.values()) <= set(every)
        for d in every:
            _assert_recovered_or_complete(d)
        with Session(restarted.state.engine) as db:
            row = db.get(LiveSession, key)
            assert row is not None and row.state == "incomplete"
        # The researcher's run list says infrastructure for all three, never "fail".
        from app.auth import create_user
        from tests.webclient import PASSWORD, log_in

        with Session(restarted.state.engine) as db:
            create_user(db, "ada", PASSWORD)
        log_in(client, next_url="/runs")
        listing = client.get("/runs?outcome=fail")
        assert listing.status_code == 200
        infra = client.get("/runs?outcome=infrastructure")
        for d in cut.values():
            rel = str(d.relative_to(runs))
            assert rel not in listing.text and rel in infra.text
            row = infra.text[infra.text.index(f"/runs/{rel}/replay"):]
            row = row[:row.index("</tr>")]
            assert ">infra<" in row and "infrastructure_error" in row, row
    restarted.state.engine.dispose()

    # Running the campaign again finishes it; the cut run is kept aside, still repaired.
    again = subprocess.run(
        _cli("run", "--task", TASK, "--agent", "scripted:oracle", "--out", str(runs / "camp")),
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert _assert_recovered_or_complete(cut["campaign"]) == "complete"
    aside = list((runs / "camp" / ".incomplete").iterdir())
    assert len(aside) == 1 and _assert_recovered_or_complete(aside[0]) == "incomplete"


def test_a_run_without_session_end_is_never_an_agent_failure(tmp_path: Path) -> None:
    """The grader, given a log cut before ``session.end`` (a crash nobody repaired), counts an
    infrastructure failure, not a failed agent, even where the gates fail."""
    run_dir = run_script(TASK, "negative_commit_without_approval", tmp_path / "camp")
    task = find_task(TASK)
    assert not grade_run_dir(run_dir, {task.id: task}).WS  # an agent failure when finished
    log = run_dir / "events.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    assert '"session.end"' in lines[-1]
    log.write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")
    meta = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
    meta["status"] = "running"
    (run_dir / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    grade = grade_run_dir(run_dir, {task.id: task})
    assert grade.end_reason is None and grade.infrastructure_failure
    assert outcome_of(grade) == "infrastructure"
    assert any("no session.end" in p for p in grade.problems)
