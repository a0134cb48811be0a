"""Several app processes serving one study (issue #18, docs/scale.md): start-up recovery marks
``incomplete`` only the running sessions whose app process is gone, never the live calls of
another process."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session

from app.live import PROCESS, RECOVERED, holder_is_gone, recover_interrupted
from app.models_study_b import LiveSession, Participant, StudyB
from app.settings import Settings
from app.web import create_app

HOST = socket.gethostname()


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    return child.pid


def test_who_counts_as_gone() -> None:
    me = f"{HOST}/{1234}/aaaa"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert holder_is_gone(None, me) and holder_is_gone("", me)
        assert not holder_is_gone(f"{HOST}/{sleeper.pid}/bbbb", me)
        assert holder_is_gone(f"{HOST}/{_dead_pid()}/bbbb", me)
        assert holder_is_gone(f"{HOST}/1234/bbbb", me)  # my id, reused: an earlier process
        assert not holder_is_gone(me, me)
        assert not holder_is_gone(f"another-{HOST}/{_dead_pid()}/bbbb", me)  # its own host's
        assert holder_is_gone(f"{HOST}/not-a-pid", me)
        assert PROCESS.startswith(f"{HOST}/")
    finally:
        sleeper.kill()
        sleeper.wait(timeout=30)


@pytest.mark.database
def test_start_up_recovery_leaves_other_processes_calls_alone(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", secret_key="holders")
    app = create_app(settings)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    holders = {
        "legacy": None,
        "other process, alive": f"{HOST}/{sleeper.pid}/cafe",
        "other process, dead": f"{HOST}/{_dead_pid()}/cafe",
        "other host": f"elsewhere-{HOST}/4242/cafe",
    }
    try:
        with Session(app.state.engine) as db:
            study = StudyB(name="holders", created_by="ada", status="launched", seed=0,
                           task_ids=["apexv1_070"], systems=["scripted:oracle"],
                           consent_text="c", completion_code="X", on_disconnect="rejoin")
            db.add(study)
            db.flush()
            ids: dict[str, int] = {}
            for k, (name, holder) in enumerate(holders.items(), start=1):
                person = Participant(study_id=study.id or 0, label=f"P{k:02d}", token=f"t{k}")
                db.add(person)
                db.flush()
                row = LiveSession(study_id=study.id or 0, participant_id=person.id or 0,
                                  position=1, task_id="apexv1_070", system="scripted:oracle",
                                  state="running", holder=holder)
                db.add(row)
                db.flush()
                ids[name] = row.id or 0
            db.commit()
        recovered = recover_interrupted(app.state.engine, settings.runs_dir,
                                        me=f"{HOST}/1/beef")
        assert sorted(recovered) == sorted([ids["legacy"], ids["other process, dead"]])
        with Session(app.state.engine) as db:
            states = {name: db.get(LiveSession, i) for name, i in ids.items()}
            assert {n: r.state for n, r in states.items() if r} == {
                "legacy": "incomplete", "other process, alive": "running",
                "other process, dead": "incomplete", "other host": "running"}
            assert states["legacy"] is not None
            assert states["legacy"].detail.startswith(RECOVERED)
    finally:
        sleeper.kill()
        sleeper.wait(timeout=30)
        app.state.engine.dispose()
