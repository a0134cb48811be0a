"""Demo mode in process: login and CSRF on every demo route, HTMX fragments vs pages, 404
pages, a whole live run (virtual clock) from the picker to the grade, session clean-up, the
orchestrator's observer hooks, and the WebRTC answer heard by an aiortc peer over loopback."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import markupsafe
import numpy as np
import pytest
import soundfile as sf
from fastapi.testclient import TestClient

from app.demo import DEMO_DIR, DemoManager, agent_choices
from app.settings import Settings
from grading.gates import grade_run_dir
from runtime.agents.base import InfrastructureError
from runtime.core.audio import FRAME_MS, Pcm
from runtime.core.events import Event, read_events
from runtime.core.spec import find_task
from runtime.session.campaign import parse_agent_spec
from runtime.session.orchestrator import Orchestrator
from runtime.speechbank.bank import BankPlayer
from runtime.user.simulator import FrozenSimulator
from tests.webclient import PASSWORD, WebClient, log_in, page_csrf, researcher_app

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

HAVE_AIORTC = importlib.util.find_spec("aiortc") is not None


@pytest.fixture(scope="module")
def shared_app(tmp_path_factory: pytest.TempPathFactory,
               module_database_url: str | None) -> tuple[Any, Settings]:
    """One app for the module (loading the catalogue and hashing passwords takes seconds),
    one per database backend."""
    app = researcher_app(tmp_path_factory.mktemp("demo") / "data", users=("ada", "grace"),
                         database_url=module_database_url)
    return app, app.state.settings


@pytest.fixture
def app_and_settings(shared_app: tuple[Any, Settings]) -> tuple[Any, Settings]:
    """The shared app with a fresh demo manager (virtual clock: runs take a second)."""
    app, settings = shared_app
    app.state.demo = DemoManager(settings.runs_dir, clock="virtual", reap_every_s=0.2)
    return app, settings


@pytest.fixture
def client(app_and_settings: tuple[Any, Settings], web_client: WebClient) -> TestClient:
    return web_client(app=app_and_settings[0], next_url=None)


_csrf = page_csrf


def login(client: TestClient, username: str = "ada") -> str:
    return log_in(client, username=username, next_url="/demo")


def start_demo(client: TestClient, token: str, task: str = "apexv1_070",
               agent: str = "scripted:oracle") -> str:
    r = client.post("/demo", data={"csrf_token": token, "task": task, "agent": agent,
                                   "seed": "0"}, follow_redirects=False)
    assert r.status_code == 303, r.text[:500]
    return str(r.headers["location"]).rsplit("/", 1)[1]


def wait_done(manager: DemoManager, session_id: str, timeout: float = 60.0) -> None:
    """Until the run has ended and been graded (``done`` comes first, at ``session.end``)."""
    deadline = time.monotonic() + timeout
    session = manager.get(session_id)
    assert session is not None
    while not (session.done and session.graded):
        assert time.monotonic() < deadline, f"demo still {session.state}"
        time.sleep(0.05)


def sse_messages(text: str) -> list[tuple[str, str, str | None]]:
    """(event, data, id) for each message of an event stream."""
    out = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if line.startswith(":") or ":" not in line:
                continue
            key, _, value = line.partition(":")
            fields[key] = value.strip()
        if "event" in fields:
            out.append((fields["event"], fields.get("data", ""), fields.get("id")))
    return out


# --------------------------------------------------------------------------- access


DEMO_GETS = ["/demo", "/demo?task=apexv1_070", "/demo/abc", "/demo/abc/events",
             "/demo/abc/result"]
DEMO_POSTS = ["/demo", "/demo/abc/offer", "/demo/abc/start", "/demo/abc/stop"]


@pytest.mark.parametrize("path", DEMO_GETS)
def test_demo_pages_need_a_login(client: TestClient, path: str) -> None:
    r = client.get(path, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login?next=/demo")
    r = client.get(path, headers={"HX-Request": "true"}, follow_redirects=False)
    assert r.status_code == 401 and r.headers["HX-Redirect"].startswith("/login")


@pytest.mark.parametrize("path", DEMO_POSTS)
def test_demo_posts_need_csrf_and_a_login(client: TestClient, path: str) -> None:
    token = _csrf(client)
    r = client.post(path, headers={"X-CSRF-Token": token}, follow_redirects=False)
    assert r.status_code == 303 and "/login" in r.headers["location"]  # not logged in
    login(client)
    assert client.post(path, data={"task": "apexv1_070"}).status_code == 403
    r = client.post(path, headers={"X-CSRF-Token": "forged"}, json={"sdp": "x"})
    assert r.status_code == 403 and "CSRF" in r.text


def test_picker_page_and_agent_fragment(client: TestClient,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for keys in ("OPENAI_API_KEY", "XAI_API_KEY", "STEPFUN_API_KEY", "GEMINI_API_KEY",
                 "GOOGLE_API_KEY"):
        monkeypatch.delenv(keys, raising=False)
    login(client)
    page = client.get("/demo")
    assert page.text.lstrip().startswith("<!doctype html>")
    assert 'value="scripted:oracle"' in page.text and 'href="/demo"' in page.text
    assert "openai-realtime" not in page.text  # no key, not offered
    frag = client.get("/demo?task=apexv1_001", headers={"HX-Request": "true"})
    assert "<html" not in frag.text and "<option" in frag.text
    assert "scripted:negative_stale_correction" in frag.text
    # A provider appears once its key is set (and its adapter module exists).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    specs = [c.spec for c in agent_choices(find_task("apexv1_001"), {"OPENAI_API_KEY": "x"})]
    assert specs[0] == "scripted:oracle"
    from runtime.agents.registry import available
    if available("openai-realtime"):
        assert "openai-realtime" in specs
        assert "openai-realtime" in client.get("/demo?task=apexv1_001",
                                               headers={"HX-Request": "true"}).text


def test_unknown_task_agent_seed_and_session(client: TestClient) -> None:
    token = login(client)
    for r in [client.get("/demo?task=nope_999"),
              client.post("/demo", data={"csrf_token": token, "task": "nope_999",
                                         "agent": "scripted:oracle"}),
              client.get("/demo/nosuchdemo"), client.get("/demo/nosuchdemo/events"),
              client.get("/demo/nosuchdemo/result")]:
        assert r.status_code == 404, r.url
        assert "<!doctype html>" in r.text and "Traceback" not in r.text
    r = client.post("/demo", data={"csrf_token": token, "task": "apexv1_070",
                                   "agent": "scripted:../../../etc/passwd"})
    assert r.status_code == 400 and "cannot run task apexv1_070" in r.text
    r = client.post("/demo", data={"csrf_token": token, "task": "apexv1_070",
                                   "agent": "scripted:oracle", "seed": "many"})
    assert r.status_code == 400 and "seed" in r.text
    r = client.post("/demo", data={"csrf_token": token, "task": "apexv1_070"})
    assert r.status_code == 400 and "no agent chosen; choose one of: scripted:oracle" in r.text


def test_a_live_run_from_picker_to_grade(client: TestClient,
                                         app_and_settings: tuple[Any, Settings]) -> None:
    app, settings = app_and_settings
    manager: DemoManager = app.state.demo
    token = login(client)
    demo_id = start_demo(client, token)
    page = client.get(f"/demo/{demo_id}")
    assert page.status_code == 200 and 'data-field="end_date"' in page.text
    assert 'data-state="waiting"' in page.text
    status = client.get(f"/demo/{demo_id}", headers={"HX-Request": "true"})
    assert "<html" not in status.text and 'id="demo-state"' in status.text
    assert "appear when the run ends" in client.get(f"/demo/{demo_id}/result",
                                                    headers={"HX-Request": "true"}).text
    # Another researcher cannot see or drive this session (no `with`: that would run the
    # app's shutdown, which stops every demo, when this second client closes).
    other = TestClient(app)
    other_token = login(other, "grace")
    assert other.get(f"/demo/{demo_id}").status_code == 404
    assert other.post(f"/demo/{demo_id}/start",
                      headers={"X-CSRF-Token": other_token}).status_code == 404
    r = client.post(f"/demo/{demo_id}/start", headers={"HX-Request": "true",
                                                         "X-CSRF-Token": token})
    assert r.status_code == 204
    wait_done(manager, demo_id)
    session = manager.get(demo_id)
    assert session is not None
    assert session.state == "finished", session.detail
    # The event stream replays the whole log, then the end.
    stream = sse_messages(client.get(f"/demo/{demo_id}/events").text)
    kinds = [k for k, _, _ in stream]
    assert kinds[-1] == "end" and "state" in kinds
    logs = [(d, i) for k, d, i in stream if k == "log"]
    assert '"type":"session.start"' in logs[0][0] and '"type":"session.end"' in logs[-1][0]
    assert any('"to_state":"COMMITTED"' in d for d, _ in logs)
    assert any('"type":"auth.revoke"' in d for d, _ in logs)
    assert all('"t_wall"' not in d for d, _ in logs)
    # A reconnecting browser gets only what it missed.
    resumed = sse_messages(client.get(f"/demo/{demo_id}/events",
                                      headers={"Last-Event-ID": "10"}).text)
    first_id = next(i for k, _, i in resumed if k == "log")
    assert first_id == "11"
    # The grade, as a fragment and as a page.
    frag = client.get(f"/demo/{demo_id}/result", headers={"HX-Request": "true"}).text
    assert "<html" not in frag and 'data-gate="TS"' in frag and "lr_1.end_date" in frag
    assert re.search(r'data-gate="WS">1<', frag)
    assert client.get(f"/demo/{demo_id}/result").text.lstrip().startswith("<!doctype html>")
    # An ordinary run directory: listed under /runs and replayable.
    run_dir = settings.runs_dir / DEMO_DIR / "apexv1_070" / demo_id
    assert (run_dir / "trace.wav").is_file()
    rel = f"{DEMO_DIR}/apexv1_070/{demo_id}"
    assert rel in client.get("/runs").text
    assert client.get(f"/runs/{rel}/replay").status_code == 200
    # Once the server forgets the session, its address opens the replay.
    manager.sessions.clear()
    r = client.get(f"/demo/{demo_id}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/runs/{rel}/replay"
    assert 'data-gate="AV"' in client.get(f"/demo/{demo_id}/result").text


def test_too_many_live_demos_are_refused(client: TestClient,
                                         app_and_settings: tuple[Any, Settings]) -> None:
    app, _ = app_and_settings
    app.state.demo.max_sessions = 1
    token = login(client)
    first = start_demo(client, token)
    r = client.post("/demo", data={"csrf_token": token, "task": "apexv1_070",
                                   "agent": "scripted:oracle"})
    assert r.status_code == 429 and "already running" in r.text
    assert client.post(f"/demo/{first}/stop", data={"csrf_token": token},
                       follow_redirects=False).status_code == 303
    assert app.state.demo.get(first).state == "stopped"
    start_demo(client, token)  # a stopped demo frees its place


# --------------------------------------------------------------------------- sessions


async def test_a_session_whose_browser_went_away_is_stopped_and_forgotten(
    tmp_path: Path,
) -> None:
    manager = DemoManager(tmp_path / "runs", clock="realtime", leave_grace_s=0.3,
                          retain_s=0.5, reap_every_s=3600)
    task = find_task("apexv1_070")
    session = manager.create(task, parse_agent_spec("scripted:oracle"), owner="ada")
    assert session.start()
    await asyncio.sleep(0.5)  # realtime: a few frames, then nobody is watching
    await manager.reap()
    deadline = time.monotonic() + 10
    while not session.graded:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    assert session.state == "stopped" and session.detail == "the browser went away"
    events = read_events(session.run_dir / "events.jsonl").events
    end = events[-1]
    assert end.type == "session.end" and end.failure_class == "infrastructure"
    assert "demo stopped: the browser went away" in end.detail
    assert session.grade is not None and not session.grade.WS
    assert sf.info(str(session.run_dir / "trace.wav")).frames > 0
    await manager.reap(now=time.monotonic() + 10)
    assert manager.get(session.id) is None
    assert manager.find_run_dir(session.id) == session.run_dir
    await manager.close()


async def test_a_failing_agent_fails_its_session_only(tmp_path: Path) -> None:
    manager = DemoManager(tmp_path / "runs", clock="virtual")
    task = find_task("apexv1_070")
    bad = manager.create(task, parse_agent_spec(f"scripted:{tmp_path / 'missing.yaml'}"),
                         owner="ada")
    good = manager.create(task, parse_agent_spec("scripted:oracle"), owner="ada")
    bad.start()
    good.start()
    deadline = time.monotonic() + 60
    while not (bad.graded and good.graded):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    assert bad.state == "failed" and "missing.yaml" in bad.detail
    assert good.state == "finished" and good.grade is not None and good.grade.WS
    await manager.close()


def test_the_page_feed_is_bounded(tmp_path: Path) -> None:
    async def run() -> None:
        manager = DemoManager(tmp_path / "runs", clock="virtual", max_events=20)
        session = manager.create(find_task("apexv1_070"), parse_agent_spec("scripted:oracle"),
                                 owner="ada")
        session.listening = True  # as if a browser listened: the audio feeds fill up
        session.start()
        while not session.done:
            await asyncio.sleep(0.05)
        assert len(session.events) == 21  # 20, then always the session.end
        assert session.dropped_events > 0 and '"session.end"' in session.events[-1][1]
        for feed in session.feeds:
            assert len(feed.frames) == feed.frames.maxlen and feed.dropped > 0
        await manager.close()

    asyncio.run(run())


# --------------------------------------------------------------------------- orchestrator hooks


def _orchestrator(run_dir: Path, **hooks: Any) -> Orchestrator:
    task = find_task("apexv1_070")
    agent = parse_agent_spec("scripted:oracle").make(task)
    user = FrozenSimulator(task, 0, BankPlayer(task))
    return Orchestrator(task, agent, user, run_dir, agent_spec="scripted:oracle", seed=0,
                        **hooks)


def test_observer_hooks_see_every_frame_and_event(tmp_path: Path) -> None:
    frames: list[tuple[Pcm, Pcm, int]] = []
    seen: list[Event] = []
    orch = _orchestrator(tmp_path / "run", on_frame=lambda u, a, t: frames.append((u, a, t)),
                         on_event=seen.append)
    result = asyncio.run(orch.run())
    assert [t for _, _, t in frames] == list(range(0, result.media_ms, FRAME_MS))
    trace, _ = sf.read(str(tmp_path / "run" / "trace.wav"), dtype="int16")
    assert np.array_equal(trace[:, 0], np.concatenate([u for u, _, _ in frames]))
    assert np.array_equal(trace[:, 1], np.concatenate([a for _, a, _ in frames]))
    logged = read_events(tmp_path / "run" / "events.jsonl").events
    assert [e.model_dump() for e in seen] == [e.model_dump() for e in logged]


def test_a_frame_hook_can_end_the_run_as_infrastructure(tmp_path: Path) -> None:
    def stop_at_2s(user: Pcm, agent: Pcm, t: int) -> None:
        if t >= 2000:
            raise InfrastructureError("demo stopped: test")

    result = asyncio.run(_orchestrator(tmp_path / "run", on_frame=stop_at_2s).run())
    assert result.end_reason == "infrastructure_error" and result.media_ms == 2000
    end = read_events(tmp_path / "run" / "events.jsonl").events[-1]
    assert end.type == "session.end" and end.detail == "demo stopped: test"


# --------------------------------------------------------------------------- WebRTC


@pytest.mark.skipif(not HAVE_AIORTC, reason="aiortc is not installed")
async def test_an_aiortc_peer_hears_both_channels(
    app_and_settings: tuple[Any, Settings], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The browser's side played by aiortc over loopback: offer two receive-only audio
    transceivers, get the answer through the CSRF-protected route, receive 20 ms Opus frames
    on both tracks with speech on each (the agent greets, the user opens)."""
    import aioice.ice
    from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

    monkeypatch.setattr(aioice.ice, "get_host_addresses", lambda use_ipv4, use_ipv6: ["127.0.0.1"])
    app, _ = app_and_settings
    app.state.demo = DemoManager(app.state.settings.runs_dir, clock="realtime",
                                 limits={"max_duration_ms": 6000})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        page = (await http.get("/login")).text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        await http.post("/login", data={"csrf_token": token, "username": "ada",
                                        "password": PASSWORD})
        page = (await http.get("/tasks")).text  # login gave the session a new token
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        r = await http.post("/demo", data={"csrf_token": token, "task": "apexv1_070",
                                           "agent": "scripted:oracle"})
        demo_id = str(r.headers["location"]).rsplit("/", 1)[1]
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        pc.addTransceiver("audio", direction="recvonly")
        pc.addTransceiver("audio", direction="recvonly")
        received: dict[str, list[np.ndarray[Any, Any]]] = {"user": [], "agent": []}
        roles: dict[str, str] = {}
        tasks: list[asyncio.Task[None]] = []

        async def drain(role: str, track: Any) -> None:
            while True:
                try:
                    frame = await track.recv()
                except Exception:
                    return
                received[role].append(frame.to_ndarray().reshape(-1, 2))

        @pc.on("track")
        def on_track(track: Any) -> None:
            mid = next(t.mid for t in pc.getTransceivers() if t.receiver.track is track)
            tasks.append(asyncio.ensure_future(drain(roles[str(mid)], track)))

        await pc.setLocalDescription(await pc.createOffer())
        bad = await http.post(f"/demo/{demo_id}/offer", json={"sdp": "v=0", "type": "answer"},
                              headers={"X-CSRF-Token": token})
        assert bad.status_code == 400 and "offer" in bad.json()["error"]
        r = await http.post(f"/demo/{demo_id}/offer", headers={"X-CSRF-Token": token},
                            json={"sdp": pc.localDescription.sdp, "type": "offer"})
        assert r.status_code == 200, r.text
        answer = r.json()
        roles.update(answer["tracks"])
        assert sorted(roles.values()) == ["agent", "user"]
        await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type="answer"))
        session = app.state.demo.get(demo_id)
        deadline = time.monotonic() + 30
        while not session.done:
            assert time.monotonic() < deadline, session.state
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)  # the last frames in flight
        await pc.close()
        for t in tasks:
            t.cancel()
        assert session.state == "finished" and "timeout" in session.detail
        for role in ("user", "agent"):
            frames = received[role]
            assert frames and all(len(f) == 960 for f in frames), role
            pcm = np.concatenate(frames).astype(np.float64)
            assert len(pcm) > 48_000 * 3, role  # seconds of audio, not a handful of frames
            assert np.sqrt(np.mean(pcm**2)) > 100, role  # speech, not silence
        await app.state.demo.close()


# --------------------------------------------------------------------------- the end state


def test_the_end_is_marked_when_the_media_ends_not_when_the_grade_is_ready(
    client: TestClient, app_and_settings: tuple[Any, Settings],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #17: the page sat on "running" long after the media ended (the state changed
    only once the run was graded). With grading held back, the session says ``finished`` as
    soon as the run logs ``session.end``; the result says it is grading; the grade follows."""
    import app.demo as demo_module

    release = threading.Event()
    grading = threading.Event()

    def slow_grade(*args: Any, **kwargs: Any) -> Any:
        grading.set()
        assert release.wait(60), "the test never released the grader"
        return grade_run_dir(*args, **kwargs)

    monkeypatch.setattr(demo_module, "grade_run_dir", slow_grade)
    app, _ = app_and_settings
    manager: DemoManager = app.state.demo
    token = login(client)
    demo_id = start_demo(client, token)
    session = manager.get(demo_id)
    assert session is not None
    try:
        client.post(f"/demo/{demo_id}/start", headers={"X-CSRF-Token": token,
                                                       "HX-Request": "true"})
        assert grading.wait(60), "the run never reached its grading"
        # The grader is still held: the end is already known.
        status = session.status()
        assert status["state"] == "finished" and not status["graded"], status
        assert "terminal_state" in status["detail"] or "after" in status["detail"]
        assert status["media_ms"] > 0
        frag = client.get(f"/demo/{demo_id}/result", headers={"HX-Request": "true"}).text
        assert 'id="demo-grading"' in frag and "data-gate" not in frag
        page = client.get(f"/demo/{demo_id}").text
        assert 'data-state="finished"' in page
    finally:
        release.set()
    wait_done(manager, demo_id)
    assert session.state == "finished" and session.grade is not None and session.grade.WS
    stream = sse_messages(client.get(f"/demo/{demo_id}/events").text)
    states = [json.loads(d) for k, d, _ in stream if k == "state"]
    assert states[-1]["graded"] and stream[-1][0] == "end"
    assert 'data-gate="WS"' in client.get(f"/demo/{demo_id}/result",
                                          headers={"HX-Request": "true"}).text


def test_gate_failures_are_printed_as_sentences(
    client: TestClient, app_and_settings: tuple[Any, Settings],
) -> None:
    """A failing run's result lists each gate failure as its readable sentence (with a link
    to its moment in the replay), not the raw predicate line of ``gate_reasons``."""
    app, _ = app_and_settings
    manager: DemoManager = app.state.demo
    token = login(client)
    demo_id = start_demo(client, token, agent="scripted:negative_commit_without_approval")
    client.post(f"/demo/{demo_id}/start", headers={"X-CSRF-Token": token, "HX-Request": "true"})
    wait_done(manager, demo_id)
    session = manager.get(demo_id)
    assert session is not None and session.grade is not None
    failures = [f for fs in session.grade.gate_failures.values() for f in fs]
    assert failures and not session.grade.WS
    frag = client.get(f"/demo/{demo_id}/result", headers={"HX-Request": "true"}).text
    assert 'id="gate-failures"' in frag
    items = re.findall(r'<li data-gate-failure="(\w+)"', frag)
    assert len(items) == len(failures)
    for failure in failures:
        assert str(markupsafe.escape(failure.text)) in frag
        # The raw line is kept as the item's title only, never printed as text.
        assert f"<p class=\"hint\">{failure.reason}" not in frag
    if any(f.t_media_ms is not None for f in failures):
        assert re.search(r'href="/runs/demo-live/apexv1_070/[^"#]+/replay#t=\d+\.\d"', frag)


# --------------------------------------------------------------------------- mic mode


def _mic_manager(settings: Settings, **kwargs: Any) -> DemoManager:
    """Mic mode without speech recognition (the call runs without transcripts)."""
    return DemoManager(settings.runs_dir, asr_factory=lambda: None, **kwargs)


def test_mic_mode_page_shows_the_callers_role_card(
    client: TestClient, app_and_settings: tuple[Any, Settings],
) -> None:
    app, settings = app_and_settings
    app.state.demo = _mic_manager(settings, clock="virtual")
    token = login(client)
    picker = client.get("/demo?task=apexv1_051").text
    assert 'name="mode" value="mic"' in picker and 'name="mode" value="listen"' in picker
    r = client.post("/demo", data={"csrf_token": token, "task": "apexv1_051",
                                   "agent": "scripted:oracle", "mode": "sing"})
    assert r.status_code == 400 and "is not one of: listen, mic" in r.text
    r = client.post("/demo", data={"csrf_token": token, "task": "apexv1_051",
                                   "agent": "scripted:oracle",
                                   "mode": "mic"}, follow_redirects=False)
    assert r.status_code == 303
    demo_id = str(r.headers["location"]).rsplit("/", 1)[1]
    session = app.state.demo.get(demo_id)
    assert session is not None and session.mode == "mic"
    page = client.get(f"/demo/{demo_id}").text
    assert 'data-mode="mic"' in page and 'id="role-card"' in page and 'id="cue-box"' in page
    assert ">Start call<" in page and ">End call<" in page
    assert 'id="demo-start"' not in page and 'id="audio-user"' not in page
    card = session.card()
    assert card is not None and card["facts"]
    for fact in card["facts"]:  # what the caller knows from the start is on the page
        assert f'data-fact="{fact["id"]}"' in page
    # A listen-mode offer (two receive-only transceivers) does not fit a mic-mode demo.
    if HAVE_AIORTC:
        sdp = _offer_sdp(transceivers=2)
        r = client.post(f"/demo/{demo_id}/offer", headers={"X-CSRF-Token": token},
                        json={"sdp": sdp, "type": "offer"})
        assert r.status_code == 400 and "expected 1" in r.json()["error"]
    client.post(f"/demo/{demo_id}/stop", headers={"X-CSRF-Token": token, "HX-Request": "true"})
    assert session.state == "stopped"


def _offer_sdp(transceivers: int) -> str:
    from aiortc import RTCPeerConnection

    async def make() -> str:
        pc = RTCPeerConnection()
        for _ in range(transceivers):
            pc.addTransceiver("audio", direction="recvonly")
        await pc.setLocalDescription(await pc.createOffer())
        sdp = str(pc.localDescription.sdp)
        await pc.close()
        return sdp

    return asyncio.run(make())


@pytest.mark.skipif(not HAVE_AIORTC, reason="aiortc is not installed")
async def test_an_aiortc_caller_talks_to_the_agent_in_mic_mode(
    app_and_settings: tuple[Any, Settings], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The researcher's browser played by aiortc over loopback: one audio transceiver sends
    the caller's opening (the task's own bank realization) as the microphone and receives the
    agent. The agent hears it and answers (it asks for the account ID after the opening ends);
    the event stream carries the role card; the call ends as a stopped demo with a grade."""
    import aioice.ice
    from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

    from app.rtc import recorded_mic_track_class
    from runtime.core.audio import SAMPLE_RATE, resample
    from runtime.user.simulator import select_realization

    monkeypatch.setattr(aioice.ice, "get_host_addresses", lambda use_ipv4, use_ipv6: ["127.0.0.1"])
    app, settings = app_and_settings
    app.state.demo = _mic_manager(settings, clock="realtime")
    task = find_task("apexv1_051")
    plan = task.plan("opening")
    assert plan is not None
    real = select_realization(task.id, 0, plan)
    opening = BankPlayer(task).audio(real.id, real.audio)
    lead = np.zeros(SAMPLE_RATE, np.int16)  # a second of silence first
    mic48 = resample(np.concatenate([lead, opening]), SAMPLE_RATE, 48_000)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        page = (await http.get("/login")).text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        await http.post("/login", data={"csrf_token": token, "username": "ada",
                                        "password": PASSWORD})
        page = (await http.get("/tasks")).text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        r = await http.post("/demo", data={"csrf_token": token, "task": "apexv1_051",
                                           "agent": "scripted:oracle", "mode": "mic"})
        demo_id = str(r.headers["location"]).rsplit("/", 1)[1]
        session = app.state.demo.get(demo_id)
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        pc.addTrack(recorded_mic_track_class()(mic48, False))
        received: list[np.ndarray[Any, Any]] = []
        tasks: list[asyncio.Task[None]] = []

        async def drain(track: Any) -> None:
            while True:
                try:
                    frame = await track.recv()
                except Exception:
                    return
                received.append(frame.to_ndarray().reshape(-1, 2))

        pc.on("track", lambda track: tasks.append(asyncio.ensure_future(drain(track))))
        await pc.setLocalDescription(await pc.createOffer())
        r = await http.post(f"/demo/{demo_id}/offer", headers={"X-CSRF-Token": token},
                            json={"sdp": pc.localDescription.sdp, "type": "offer"})
        assert r.status_code == 200, r.text
        answer = r.json()
        assert list(answer["tracks"].values()) == ["agent"]
        await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type="answer"))

        def seen(kind: str, **match: Any) -> list[dict[str, Any]]:
            out = []
            for _, data in list(session.events):
                e = json.loads(data)
                if e["type"] == kind and all(e.get(k) == v for k, v in match.items()):
                    out.append(e)
            return out

        deadline = time.monotonic() + 60
        while not seen("agent.act", act="ask", field="account_id"):
            assert time.monotonic() < deadline and not session.done, (
                session.state, session.detail, [json.loads(d)["type"] for _, d in session.events])
            await asyncio.sleep(0.1)
        r = await http.post(f"/demo/{demo_id}/stop",
                            headers={"X-CSRF-Token": token, "HX-Request": "true"})
        assert r.status_code == 204
        while not session.graded:
            assert time.monotonic() < deadline, session.state
            await asyncio.sleep(0.1)
        await pc.close()
        for t in tasks:
            t.cancel()
        ends = seen("user.speech.end")
        ask = seen("agent.act", act="ask", field="account_id")[0]
        assert ends and ask["seq"] > ends[0]["seq"]  # the agent answered the caller
        assert session.state == "stopped" and session.grade is not None
        assert received and np.sqrt(np.mean(np.concatenate(received).astype(np.float64) ** 2)) > 100
        meta = json.loads((session.run_dir / "meta.json").read_text())
        assert meta["demo_mode"] == "mic"
        stream = sse_messages((await http.get(f"/demo/{demo_id}/events")).text)
        cards = [json.loads(d) for k, d, _ in stream if k == "card"]
        assert cards and 'id="role-card"' in cards[-1]["html"] and cards[-1]["card"]["facts"]
    await app.state.demo.close()


# --------------------------------------------------------------------------- docs


def test_every_setting_is_documented_in_webapp_md() -> None:
    """app/settings.py promises it: each field of Settings, with its environment variable."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "webapp.md").read_text()
    for name, field in Settings.model_fields.items():
        assert f"`{name}`" in doc, f"docs/webapp.md does not document the setting {name}"
        alias = field.validation_alias
        env_names = list(getattr(alias, "choices", [])) or [f"APEX_{name.upper()}"]
        for env in env_names:
            assert f"`{env}`" in doc, f"docs/webapp.md does not name {env} for {name}"
