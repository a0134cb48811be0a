"""Study B live calls with two aiortc peers in one process (notes/webrtc-testing.md): a
"browser" peer sends a bank realization as its microphone and listens to the agent; the
server's LiveCall runs the scripted oracle on the realtime clock. Covered: the agent hears the
participant (user-channel energy in trace.wav, a transcript, the agent's next turn) and its
voice comes back; a reload rejoins the same run; the ``incomplete`` policy ends a dropped
call; a server killed mid-call (SIGKILL) leaves a run that start-up recovery marks incomplete
and repairs without losing what was on disk; one failing call never disturbs another.
Assertions are on content, never on timing (two shared cores)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.live import (
    RECOVERED,
    BankRobot,
    CallPlan,
    LiveCall,
    LiveCallManager,
    repair_run_dir,
    repair_wav_header,
)
from app.models_study_b import LiveSession, Participant, StudyB
from app.rtc import recorded_mic_track_class
from app.settings import Settings
from app.web import create_app
from grading.gates import grade_run_dir
from runtime.core.audio import SAMPLE_RATE, Pcm, TraceWriter, resample
from runtime.core.events import read_events
from runtime.core.spec import TaskSpec, find_task
from runtime.session.campaign import parse_agent_spec
from runtime.speechbank.bank import BankPlayer
from runtime.user.live_user import LiveParticipant
from runtime.user.simulator import select_realization

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

ROOT = Path(__file__).resolve().parent.parent
TASK = "apexv1_051"
"""Greets first, then asks for the account ID once the caller has opened (an on_ask fact)."""


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import aioice.ice

    monkeypatch.setattr(aioice.ice, "get_host_addresses",
                        lambda use_ipv4, use_ipv6: ["127.0.0.1"])


class FakeStore:
    """Records what a call tells its ``LiveSession`` row."""

    def __init__(self) -> None:
        self.log: list[tuple[str, int, str, str]] = []

    def started(self, key: int, run_rel: str) -> None:
        self.log.append(("started", key, run_rel, ""))

    def finished(self, key: int, state: str, detail: str) -> None:
        self.log.append(("finished", key, state, detail))


def opening_audio(task: TaskSpec, lead_s: float = 2.5, tail_s: float = 30.0) -> Pcm:
    """The opening's bank realization with silence around it (24 kHz)."""
    plan = task.plan("opening")
    assert plan is not None
    real = select_realization(task.id, 0, plan)
    speech = BankPlayer(task).audio(real.id, real.audio)
    return np.concatenate([np.zeros(int(lead_s * SAMPLE_RATE), np.int16), speech,
                           np.zeros(int(tail_s * SAMPLE_RATE), np.int16)])




class BrowserPeer:
    """The participant's browser played by aiortc: one sendrecv audio transceiver."""

    def __init__(self, mic: Pcm) -> None:
        self.mic = mic
        self.pc: Any = None
        self.received: list[np.ndarray[Any, Any]] = []
        self._tasks: list[asyncio.Task[None]] = []

    async def connect(self, call: LiveCall) -> None:
        from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

        self.pc = pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        pc.addTrack(recorded_mic_track_class()(resample(self.mic, SAMPLE_RATE, 48_000), False))

        @pc.on("track")
        def _on_track(track: Any) -> None:
            self._tasks.append(asyncio.ensure_future(self._drain(track)))

        await pc.setLocalDescription(await pc.createOffer())
        answer = await call.answer(pc.localDescription.sdp, "offer")
        await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type="answer"))

    async def _drain(self, track: Any) -> None:
        while True:
            try:
                frame = await track.recv()
            except Exception:
                return
            self.received.append(frame.to_ndarray().reshape(-1))

    def energy(self) -> float:
        if not self.received:
            return 0.0
        audio = np.concatenate(self.received).astype(np.float64)
        return float(np.sqrt(np.mean(audio ** 2)))

    async def close(self) -> None:
        if self.pc is not None:
            await self.pc.close()
        for task in self._tasks:
            task.cancel()


def _plan(tmp_path: Path, task: TaskSpec, key: int = 1, on_disconnect: str = "rejoin",
          spec: str = "scripted:oracle") -> CallPlan:
    rel = f"study-b/1/P0{key}/1-{task.id}"
    return CallPlan(key=key, task=task, factory=parse_agent_spec(spec),
                    run_dir=tmp_path / "runs" / rel, run_rel=rel, seed=0,
                    on_disconnect=on_disconnect,  # type: ignore[arg-type]
                    meta={"participant": f"P0{key}"})


async def _until(pred: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def _types(call: LiveCall) -> list[str]:
    return [e.type for e in read_events(call.run_dir / "events.jsonl").events]


# --------------------------------------------------------------------------- the call


async def test_the_agent_hears_the_participant_and_answers_over_webrtc(tmp_path: Path) -> None:
    task = find_task(TASK)
    store = FakeStore()
    manager = LiveCallManager(tmp_path / "runs", store=store, reap_every_s=3600,
                              limits={"max_duration_ms": 14_000})
    call = await manager.open(_plan(tmp_path, task))
    assert call.state == "waiting"
    # From the first second the card holds what she knows (given when asked), never a
    # correction the reveal graph has not released.
    on_ask = {f.id for f in task.user.facts if f.reveal.rule == "on_ask"}
    first = {f["id"]: f for f in call.card()["facts"]}
    assert on_ask <= set(first) and all(first[f]["when_asked"] for f in on_ask)
    assert all(f["version"] == 1 and not f["released"] for f in first.values())
    peer = BrowserPeer(opening_audio(task))
    await peer.connect(call)
    await _until(lambda: call.state == "running", 30, "the call to start")
    await _until(lambda: call.done, 60, "the run to end")
    await asyncio.sleep(0.3)
    await peer.close()
    assert call.state == "complete", call.detail
    assert store.log[0] == ("started", 1, call.plan.run_rel, "")
    assert store.log[-1][:3] == ("finished", 1, "complete")
    events = read_events(call.run_dir / "events.jsonl").events
    # The agent heard the opening: its second turn (asking for the account ID) came after the
    # participant's utterance ended; the account ID was on the card from the start.
    speech_end = next(e for e in events if e.type == "user.speech.end")
    asks = [e for e in events if e.type == "agent.transcript" and "account ID" in e.text]
    assert asks and asks[0].seq > speech_end.seq
    known = [e for e in events if e.type == "card.fact" and e.fact_id == "account_id"]
    assert known and known[0].t_media_ms == 0 and known[0].known_at_start
    assert "account_id" in {f["id"] for f in call.card()["facts"]}
    transcript = next(e for e in events if e.type == "user.transcript")
    if not transcript.error:  # faster-whisper installed (the speech extra)
        assert "orbital freight" in transcript.text.lower()
    assert [e.state for e in events if e.type == "participant.connection"] == ["connected"]
    # Both channels are in the trace: the participant's speech on the left, the agent's right.
    trace, rate = sf.read(str(call.run_dir / "trace.wav"), dtype="int16")
    assert rate == SAMPLE_RATE and trace.shape[1] == 2
    start = next(e for e in events if e.type == "user.speech.start").t_media_ms
    window = trace[start * 24:speech_end.t_media_ms * 24]
    assert np.sqrt(np.mean(window[:, 0].astype(float) ** 2)) > 300
    assert np.sqrt(np.mean(trace[:, 1].astype(float) ** 2)) > 100
    # The agent's voice reached the browser.
    assert peer.energy() > 50 and len(peer.received) > 100
    assert call.mic.samples > SAMPLE_RATE * 5
    grade = grade_run_dir(call.run_dir, {task.id: task})
    assert grade.end_reason == "timeout" and not grade.problems
    await manager.close()


async def test_a_reload_rejoins_the_same_run(tmp_path: Path) -> None:
    task = find_task(TASK)
    manager = LiveCallManager(tmp_path / "runs", reap_every_s=3600,
                              limits={"max_duration_ms": 60_000})
    call = await manager.open(_plan(tmp_path, task))
    first = BrowserPeer(opening_audio(task, lead_s=0.5))
    await first.connect(call)
    await _until(lambda: call.media_ms > 2000, 30, "two seconds of media")
    await first.close()  # the page reloads: its connection closes
    await _until(lambda: not call.participant_connected, 15, "the drop to be noticed")
    assert call.state == "running"
    again = await manager.open(_plan(tmp_path, task))
    assert again is call
    second = BrowserPeer(np.zeros(SAMPLE_RATE * 30, np.int16))
    await second.connect(call)
    await _until(lambda: call.connections == 2 and call.participant_connected, 30, "rejoin")
    await _until(lambda: "agent.speech.start" in _types(call), 30, "agent speech")
    mark = call.media_ms
    await _until(lambda: call.media_ms > mark + 1000, 30, "media after the rejoin")
    await call.hang_up()
    await _until(lambda: call.done, 30, "the run to end")
    await second.close()
    assert call.state == "incomplete" and call.detail == "the participant ended the call"
    events = read_events(call.run_dir / "events.jsonl").events
    assert [e.type for e in events].count("session.start") == 1
    assert [e.state for e in events if e.type == "participant.connection"] == [
        "connected", "disconnected", "connected"]
    end = events[-1]
    assert end.type == "session.end" and end.failure_class == "infrastructure"
    assert "the participant ended the call" in end.detail
    assert len(list(call.run_dir.parent.iterdir())) == 1  # one run directory
    await manager.close()


async def test_the_incomplete_policy_ends_a_dropped_call(tmp_path: Path) -> None:
    task = find_task(TASK)
    store = FakeStore()
    manager = LiveCallManager(tmp_path / "runs", store=store, reap_every_s=3600)
    call = await manager.open(_plan(tmp_path, task, on_disconnect="incomplete"))
    peer = BrowserPeer(opening_audio(task, lead_s=0.5))
    await peer.connect(call)
    await _until(lambda: call.media_ms > 1500, 30, "media")
    await peer.close()
    await _until(lambda: call.done, 30, "the dropped call to end")
    assert call.state == "incomplete" and "connection was lost" in call.detail
    assert store.log[-1][:3] == ("finished", 1, "incomplete")
    end = read_events(call.run_dir / "events.jsonl").events[-1]
    assert end.type == "session.end" and end.reason == "infrastructure_error"
    assert "connection was lost" in end.detail
    retry = BrowserPeer(np.zeros(SAMPLE_RATE, np.int16))
    with pytest.raises(Exception, match="has ended"):
        await retry.connect(call)
    await retry.close()
    assert grade_run_dir(call.run_dir, {task.id: task}).infrastructure_failure
    await manager.close()


async def test_a_page_gone_too_long_ends_an_incomplete_policy_call(tmp_path: Path) -> None:
    """The page's event stream is the heartbeat: gone for ``leave_grace_s`` ends the call,
    before ICE would notice a killed browser."""
    task = find_task(TASK)
    manager = LiveCallManager(tmp_path / "runs", reap_every_s=3600, leave_grace_s=0.5)
    call = await manager.open(_plan(tmp_path, task, on_disconnect="incomplete"))
    peer = BrowserPeer(opening_audio(task, lead_s=0.5))
    await peer.connect(call)
    await _until(lambda: call.state == "running", 30, "start")
    call.page_seen, call.subscribers = True, 1
    await manager.reap()
    assert call.state == "running" and call.participant_connected
    call.subscribers = 0  # the browser was killed: its stream closed
    await asyncio.sleep(0.7)
    await manager.reap()
    await _until(lambda: call.done, 30, "the call to end")
    assert call.state == "incomplete" and "away" in call.detail
    types = _types(call)
    assert "participant.connection" in types
    await peer.close()
    await manager.close()


# --------------------------------------------------------------------------- isolation


async def test_one_failing_call_never_disturbs_another(tmp_path: Path) -> None:
    """Three calls at once: one whose agent cannot be built, one whose robot participant
    raises mid-run, one refused a garbled offer; the fourth, a real WebRTC call, runs on."""
    task = find_task(TASK)
    store = FakeStore()
    manager = LiveCallManager(tmp_path / "runs", store=store, reap_every_s=3600,
                              limits={"max_duration_ms": 9_000})
    good = await manager.open(_plan(tmp_path, task, key=1))
    broken_agent = await manager.open(
        _plan(tmp_path, task, key=2, spec=f"scripted:{tmp_path / 'missing.yaml'}"))
    crashing = await manager.open(_plan(tmp_path, task, key=3))
    garbled = await manager.open(_plan(tmp_path, task, key=4))

    def explode(t_ms: int, call: LiveCall) -> Pcm | None:
        if t_ms > 1000:
            raise RuntimeError("robot participant fell over")
        return None

    crashing.feeder = explode
    peer = BrowserPeer(opening_audio(task))
    await peer.connect(good)
    with pytest.raises(Exception, match=r"transceivers|could not answer"):
        await garbled.answer("v=0\r\n", "offer")
    broken_agent.start()
    crashing.start()
    await _until(lambda: broken_agent.done and crashing.done, 60, "the failing calls")
    assert good.state == "running"
    await _until(lambda: good.done, 60, "the good call")
    await peer.close()
    assert broken_agent.state == "failed" and "missing.yaml" in broken_agent.detail
    assert crashing.state == "failed" and "robot participant fell over" in crashing.detail
    assert garbled.state == "waiting"
    assert good.state == "complete", good.detail
    events = read_events(good.run_dir / "events.jsonl").events
    assert any(e.type == "agent.transcript" and "account ID" in e.text for e in events)
    # The crashed run's directory still reads and grades (as an infrastructure failure);
    # the agent that could not be built left no half-written run behind.
    grade = grade_run_dir(crashing.run_dir, {task.id: task})
    assert grade.infrastructure_failure
    assert not (broken_agent.run_dir / "events.jsonl").exists()
    finished = {key: state for kind, key, state, _ in store.log if kind == "finished"}
    assert finished == {1: "complete", 2: "failed", 3: "failed"}
    await manager.close()


# --------------------------------------------------------------------------- crash recovery


def test_repair_wav_header_fixes_a_killed_writer(tmp_path: Path) -> None:
    path = tmp_path / "trace.wav"
    writer = TraceWriter(path, flush_frames=1)
    for _ in range(10):
        writer.write(np.full(960, 1000, np.int16), np.full(960, -1000, np.int16))
    # As a SIGKILL leaves it: samples flushed, the header never finalized.
    with path.open("r+b") as fh:
        fh.seek(4)
        fh.write((0).to_bytes(4, "little"))
        fh.seek(40)
        fh.write((0).to_bytes(4, "little"))
        fh.seek(0, os.SEEK_END)
        fh.write(b"\x01\x02\x03")  # a partial sample frame
    with pytest.raises(wave.Error):  # unreadable for strict readers
        wave.open(str(path)).close()
    assert repair_wav_header(path)
    with wave.open(str(path)) as w:
        assert w.getnframes() == 9600 and w.getnchannels() == 2
        data = np.frombuffer(w.readframes(9600), np.int16).reshape(-1, 2)
    assert (data[:, 0] == 1000).all() and (data[:, 1] == -1000).all()
    assert not repair_wav_header(path)  # already fine
    bogus = tmp_path / "x.wav"
    bogus.write_bytes(b"not a wav file at all")
    assert not repair_wav_header(bogus)


def test_repair_run_dir_keeps_every_line_and_appends_the_end(tmp_path: Path) -> None:
    task = find_task(TASK)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "meta.json").write_text(json.dumps({"task_id": task.id, "status": "running"}))
    good = ('{"seq": 1, "t_media_ms": 0, "t_wall": 1.0, "source": "orchestrator", "type": '
            '"session.start", "task_id": "apexv1_051", "task_version": "1", "agent": "x", '
            '"seed": 0, "clock": "realtime", "sample_rate": 24000, "frame_ms": 40}\n')
    cut = '{"seq": 2, "t_media_ms": 880, "t_wall": 2.0, "source": "us'
    (run_dir / "events.jsonl").write_text(good + cut)
    writer = TraceWriter(run_dir / "trace.wav")
    for _ in range(25):
        writer.write(np.zeros(960, np.int16), np.zeros(960, np.int16))
    writer.flush()
    assert repair_run_dir(run_dir, "server crashed")
    text = (run_dir / "events.jsonl").read_text()
    assert text.startswith(good + cut + "\n")
    read = read_events(run_dir / "events.jsonl")
    assert len(read.problems) == 1 and "events.jsonl:2" in read.problems[0]
    end = read.events[-1]
    assert end.type == "session.end" and end.seq == 2 and end.detail == "server crashed"
    assert end.t_media_ms == 1000
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["status"] == "incomplete" and meta["end_reason"] == "infrastructure_error"
    assert meta["media_ms"] == 1000
    repair_run_dir(run_dir, "again")  # idempotent: one end only
    assert [e.type for e in read_events(run_dir / "events.jsonl").events].count(
        "session.end") == 1
    grade = grade_run_dir(run_dir, {task.id: task})
    assert grade.infrastructure_failure and grade.end_reason == "infrastructure_error"
    assert not repair_run_dir(tmp_path / "nothing-here", "x")


CRASH_CHILD = r'''
import asyncio, sys
from pathlib import Path
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
    manager = LiveCallManager(
        data / "runs", store=DbCallStore(app.state.engine), reap_every_s=3600,
        participant_factory=lambda t, s, a: LiveParticipant(t, seed=s, asr=robot.asr(),
                                                             transcribe_inline=True),
        asr_factory=lambda: None, feeder_factory=lambda plan: robot)
    call = await manager.open(CallPlan(key=key, task=task,
                                       factory=parse_agent_spec("scripted:oracle"),
                                       run_dir=data / "runs" / rel, run_rel=rel))
    call.start()
    print("STARTED", flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
'''


def _study_rows(engine: Any) -> int:
    with Session(engine) as db:
        study = StudyB(name="crash", created_by="ada", status="launched")
        db.add(study)
        db.flush()
        person = Participant(study_id=study.id or 0, label="P01", token="t" * 32)
        db.add(person)
        db.flush()
        row = LiveSession(study_id=study.id or 0, participant_id=person.id or 0, position=1,
                          task_id="apexv1_070", system="scripted:oracle")
        db.add(row)
        db.commit()
        assert row.id is not None
        return row.id


def test_a_server_killed_mid_call_leaves_a_run_that_recovery_repairs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data, secret_key="crash-test")
    app = create_app(settings)
    key = _study_rows(app.state.engine)
    app.state.engine.dispose()
    rel = "study-b/1/P01/1-apexv1_070"
    run_dir = data / "runs" / rel
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CRASH_CHILD, str(data), str(key), rel],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the child call never got going"
            log = run_dir / "events.jsonl"
            if log.is_file() and '"user.speech.end"' in log.read_text():
                break  # the robot's opening was heard: a second or two of media on disk
            time.sleep(0.2)
        time.sleep(1.5)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    on_disk = (run_dir / "events.jsonl").read_text()
    lines = [ln for ln in on_disk.splitlines() if ln.strip()]
    before = read_events(run_dir / "events.jsonl").events
    assert before and before[-1].type != "session.end"
    last_media = max(e.t_media_ms for e in before)
    with Session(app.state.engine) as db:
        row = db.get(LiveSession, key)
        assert row is not None and row.state == "running" and row.run_dir == rel
    # A fresh server on the same data directory: start-up recovery.
    restarted = create_app(settings)
    with TestClient(restarted):
        pass
    with Session(restarted.state.engine) as db:
        row = db.get(LiveSession, key)
        assert row is not None and row.state == "incomplete" and row.detail == RECOVERED
    after = (run_dir / "events.jsonl").read_text()
    assert after.startswith(on_disk)  # nothing received was lost or rewritten
    events = read_events(run_dir / "events.jsonl").events
    assert len(events) >= len(lines)
    end = events[-1]
    assert end.type == "session.end" and end.detail == RECOVERED
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    with wave.open(str(run_dir / "trace.wav")) as w:
        frames = w.getnframes()
        assert w.getnchannels() == 2 and frames > 0
    # The trace is flushed once a second of media: at most about a second behind the log.
    assert frames * 1000 // SAMPLE_RATE >= last_media - 1100
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["status"] == "incomplete" and meta["recovered"] == RECOVERED
    task = find_task("apexv1_070")
    grade = grade_run_dir(run_dir, {task.id: task})
    assert grade.infrastructure_failure and grade.end_reason == "infrastructure_error"
    assert not [p for p in grade.problems if "trace" in p]


def test_robot_participant_completes_a_virtual_run(tmp_path: Path) -> None:
    """The BankRobot plays the simulator's part through the live path: on the virtual clock
    the oracle passes every gate, with cues and card facts logged."""

    async def run() -> LiveCall:
        task = find_task("apexv1_070")
        robot = BankRobot(task)
        manager = LiveCallManager(
            tmp_path / "runs", clock="virtual", reap_every_s=3600, asr_factory=lambda: None,
            participant_factory=lambda t, s, a: LiveParticipant(
                t, seed=s, asr=robot.asr(), transcribe_inline=True),
            feeder_factory=lambda plan: robot)
        call = await manager.open(_plan(tmp_path, task))
        call.start()
        await _until(lambda: call.done, 120, "the virtual run")
        await manager.close()
        return call

    call = asyncio.run(run())
    assert call.state == "complete", call.detail
    task = find_task("apexv1_070")
    grade = grade_run_dir(call.run_dir, {task.id: task})
    assert grade.WS and all(grade.gates.values())
    types = _types(call)
    assert "cue.show" in types and "card.fact" in types and "auth.decision" in types
