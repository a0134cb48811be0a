"""Demo mode in process: login and CSRF on every demo route, HTMX fragments vs pages, 404
pages, a whole live run (virtual clock) from the picker to the grade, session clean-up, the
orchestrator's observer hooks, and the WebRTC answer heard by an aiortc peer over loopback."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import soundfile as sf
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.auth import create_user
from app.demo import DEMO_DIR, DemoManager, agent_choices
from app.settings import Settings
from app.web import create_app
from runtime.agents.base import InfrastructureError
from runtime.audio import FRAME_MS, Pcm
from runtime.bank import BankPlayer
from runtime.campaign import parse_agent_spec
from runtime.events import Event, read_events
from runtime.orchestrator import Orchestrator
from runtime.simulator import FrozenSimulator
from runtime.spec import find_task
from tests.webclient import PASSWORD, log_in, page_csrf

HAVE_AIORTC = importlib.util.find_spec("aiortc") is not None


@pytest.fixture(scope="module")
def shared_app(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Settings]:
    """One app for the module (loading the catalogue and hashing passwords takes seconds)."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("demo") / "data",
                        secret_key="test-secret")
    app = create_app(settings)
    with Session(app.state.engine) as session:
        create_user(session, "ada", PASSWORD)
        create_user(session, "grace", PASSWORD)
    return app, settings


@pytest.fixture
def app_and_settings(shared_app: tuple[Any, Settings]) -> tuple[Any, Settings]:
    """The shared app with a fresh demo manager (virtual clock: runs take a second)."""
    app, settings = shared_app
    app.state.demo = DemoManager(settings.runs_dir, clock="virtual", reap_every_s=0.2)
    return app, settings


@pytest.fixture
def client(app_and_settings: tuple[Any, Settings]) -> Iterator[TestClient]:
    app, _ = app_and_settings
    with TestClient(app) as c:
        yield c


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
    deadline = time.monotonic() + timeout
    session = manager.get(session_id)
    assert session is not None
    while not session.done:
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
    assert session is not None and session.state == "finished", session.detail
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
    while not session.done:
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
    while not (bad.done and good.done):
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
