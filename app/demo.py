"""Live demo sessions: a task and an agent run on the realtime media clock while a browser
listens over WebRTC and watches the event log fill in.

One :class:`DemoSession` per live run. Its orchestrator runs in a thread of its own with its own
event loop, so a slow or crashing agent (a blocking TTS call, a provider outage) never stalls the
server or another session. The orchestrator's observer hooks hand every frame and every logged
event over: frames go to two bounded :class:`~app.rtc.AudioFeed` queues (user, agent) as 20 ms,
48 kHz s16 frames, which two aiortc tracks pace out to the browser; events go to a bounded list
the page's Server-Sent-Events stream reads. The run directory is an ordinary one under
``<runs_dir>/demo-live/<task>/<session id>/``, so it shows up in the run list and replays.

Two modes. ``listen``: the task's frozen simulator is the caller and the browser hears both
channels. ``mic``: the researcher takes the caller's part with their microphone, as a Study B
participant does (app/live.py): a :class:`~runtime.user.live_user.LiveParticipant` is the user
source (the reveal graph in cue mode, its role card with facts and private cues shown on the
page), the microphone arrives over WebRTC into a :class:`~app.rtc.MicSink`, and the agent
channel goes back to the browser. Both run on the same realtime media clock.

The session is marked ended (``finished``, ``stopped``) as soon as the run logs
``session.end``, before its files are closed and graded: the page stops its players and shows
the end at once, and receives the grade (``graded``) when grading is done.

aiortc is imported only where a browser connects: the rest of the app works without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from app.live_run import ACTIVE, LiveRun, LiveRunManager, check_offer, mark_participant
from app.rtc import (
    AudioFeed,
    MicSink,
    channel_track_class,
    drain_track,
)
from grading.gates import RunGrade, grade_run_dir
from runtime.agents.base import InfrastructureError
from runtime.agents.registry import BASELINE_SPECS, PROVIDERS, available
from runtime.core.audio import Pcm
from runtime.core.events import ClockMode, Event
from runtime.core.rundir import RunDir, recover_run
from runtime.core.spec import TaskSpec
from runtime.session.campaign import AgentFactory, AgentSpecError, parse_agent_spec
from runtime.session.orchestrator import Orchestrator
from runtime.speechbank.bank import BankPlayer
from runtime.user.simulator import FrozenSimulator, UserSource

if TYPE_CHECKING:

    from app.live import LiveUser
    from runtime.speech.asr import ASR

log = logging.getLogger(__name__)

DEMO_DIR = "demo-live"
"""Live runs go to ``<runs_dir>/demo-live/<task id>/<session id>/``."""
SessionState = Literal["waiting", "running", "finished", "failed", "stopped"]
DemoMode = Literal["listen", "mic"]
MODES: dict[str, str] = {
    "listen": "Listen: the task's simulated caller talks to the agent",
    "mic": "Talk: you are the caller, with your microphone and the role card",
}
"""The demo modes and how the picker labels them."""



class DemoError(Exception):
    """A demo request cannot be served; the message says why (shown to the researcher)."""


class DemoBusy(DemoError):
    """Too many live demos at once."""


# --------------------------------------------------------------------------- agents


@dataclass(frozen=True)
class AgentChoice:
    spec: str
    label: str
    group: Literal["scripted", "baseline", "provider"]


def agent_choices(task: TaskSpec, env: Mapping[str, str]) -> list[AgentChoice]:
    """The agents that can run ``task`` here: its scripts (oracle first), the baseline when its
    spec parses, and each provider whose module exists and whose API key is set."""
    out: list[AgentChoice] = []
    scripts = sorted((task.folder / "scripts").glob("*.yaml"),
                     key=lambda p: (p.stem != "oracle", p.stem))
    for path in scripts:
        out.append(AgentChoice(f"scripted:{path.stem}", f"scripted: {path.stem}", "scripted"))
    for spec in BASELINE_SPECS:
        if _baseline_parses(spec, _baseline_env_key(env)):
            out.append(AgentChoice(spec, spec, "baseline"))
    for agent in PROVIDERS:
        if available(agent.kind) and any(env.get(k) for k in agent.keys):
            label = f"{agent.kind} (key from {' or '.join(agent.keys)})"
            out.extend(AgentChoice(spec, label, "provider") for spec in agent.demo_specs)
    return out


def _baseline_env_key(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in env.items() if k.startswith("APEX_BASELINE")))


@functools.lru_cache(maxsize=16)
def _baseline_parses(spec: str, env_key: tuple[tuple[str, str], ...]) -> bool:
    del env_key  # part of the cache key only: the baseline reads APEX_BASELINE_* settings
    try:
        parse_agent_spec(spec)
    except (AgentSpecError, ImportError):
        return False
    return True


def resolve_agent(task: TaskSpec, spec: str, env: Mapping[str, str]) -> AgentFactory:
    """The factory for ``spec`` if it is one of :func:`agent_choices`; otherwise DemoError."""
    choices = agent_choices(task, env)
    if spec not in {c.spec for c in choices}:
        offered = ", ".join(c.spec for c in choices) or "none"
        what = f"agent '{spec}' cannot run task {task.id} here" if spec else "no agent chosen"
        raise DemoError(f"{what}; choose one of: {offered}")
    try:
        return parse_agent_spec(spec)
    except AgentSpecError as exc:
        raise DemoError(str(exc)) from None


# --------------------------------------------------------------------------- sessions


class DemoSession(LiveRun):
    """One live run: its state, its event feed for the page, its two audio feeds and its
    WebRTC peer connection. Created by :class:`DemoManager`. The run (``_thread_main``,
    ``_run``) and the observer hooks run on the session's own thread; everything else on the
    server's event loop (app/live_run.py: what it shares with a Study B call)."""

    thread_name = "demo"

    def __init__(
        self, *, session_id: str, task: TaskSpec, factory: AgentFactory, owner: str,
        run_dir: Path, seed: int, clock: ClockMode, loop: asyncio.AbstractEventLoop,
        max_events: int, mode: DemoMode = "listen", participant: LiveUser | None = None,
    ) -> None:
        if mode == "mic" and participant is None:
            raise ValueError("a mic-mode demo needs a live participant")
        super().__init__(task=task, run_dir=run_dir, loop=loop)
        self.id = session_id
        self.mode: DemoMode = mode
        self.participant = participant
        """The live caller (mic mode): the microphone goes in, the role card comes out."""
        self.factory = factory
        self.agent = factory.spec
        self.owner = owner
        self.seed = seed
        self.clock: ClockMode = clock
        self.state: SessionState = "waiting"
        self.events: list[tuple[int, str]] = []
        """``(seq, event JSON)`` as the event log wrote them (wall-clock field left out)."""
        self.max_events = max_events
        self.dropped_events = 0
        self.feeds = (AudioFeed(), AudioFeed())
        """User channel, agent channel (mic mode: the agent channel only goes out)."""
        self.mic = MicSink(self._push_mic)
        self.created_wall = time.time()
        self.grade: RunGrade | None = None
        self.grade_problem: str | None = None
        self.graded = False
        """Grading is over (``grade`` or ``grade_problem`` is set, or nothing was written):
        comes after the end (``done``), which is marked when the run logs ``session.end``."""

    # ---------------------------------------------------------------- page feed

    def _label(self) -> str:
        return self.id

    def status(self) -> dict[str, Any]:
        return {"state": self.state, "detail": self.detail, "media_ms": self.media_ms,
                "dropped_events": self.dropped_events, "listening": self.listening,
                "graded": self.graded, "mode": self.mode}

    def card(self) -> dict[str, Any] | None:
        """The caller's role card as the Study B participant page shows it (mic mode)."""
        if self.participant is None:
            return None
        from app.live import card_view

        return card_view(self.participant.role_card())

    # ---------------------------------------------------------------- run

    def request_stop(self, reason: str) -> None:
        """End the run at its next frame (logged as ``infrastructure_error`` with ``reason``,
        never as an agent failure); a session that never started just closes."""
        if self.state == "waiting":
            self.state, self.detail = "stopped", reason
            self.ended_at = time.monotonic()
            self.graded = True  # nothing to grade
            self.signal.wake()
        else:
            self._stop_running(reason)

    def abandon_if_stuck(self, now: float, after_s: float = 10.0) -> None:
        """A run that has not reached its next frame ``after_s`` after a stop (an agent stuck
        in a call) is marked stopped; its thread ends on its own and changes nothing here."""
        if self._stuck(now, after_s):
            self.state, self.detail = "stopped", f"{self._stop_reason} (the run did not end)"
            self.ended_at = now
            self._abandoned = True
            self.graded = True  # the grade, if any, is left to the replay
            self.signal.wake()

    def _thread_main(self) -> None:
        state: SessionState = "finished"
        detail = ""
        try:
            detail = asyncio.run(self._run())
            if self._stop.is_set():
                state, detail = "stopped", self._stop_reason
        except Exception as exc:  # any failure ends this session only, with its message
            log.exception("demo %s failed", self.id)
            state, detail = "failed", f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(Exception):  # a log left open: closed as infrastructure
                recover_run(self.run_dir, f"harness error: {detail}")
        if not self._abandoned and (state != "finished" or self.state in ACTIVE):
            # Normally marked at ``session.end`` already (_on_event); a crash may log none.
            self.state, self.detail = state, detail
            self.ended_at = self.ended_at or time.monotonic()
            self.signal.notify()
        elif not self._abandoned:
            self.detail = detail
        if (self.run_dir / "events.jsonl").is_file():
            try:
                grade = grade_run_dir(self.run_dir, {self.task.id: self.task})
            except Exception as exc:  # grading problems are shown, not raised
                self.grade_problem = f"{type(exc).__name__}: {exc}"
            else:
                self.grade = grade
        if self._abandoned:
            return
        self.graded = True
        self.signal.notify()

    async def _run(self) -> str:
        agent = self.factory.make(self.task)
        user: UserSource
        if self.participant is not None:
            user = self.participant
        else:
            user = FrozenSimulator(self.task, self.seed, BankPlayer(self.task))
        orch = Orchestrator(
            self.task, agent, user, self.run_dir, agent_spec=self.factory.spec, seed=self.seed,
            clock=self.clock,
            meta_extra={"run_id": f"demo-{self.id}", "demo": True, "started_by": self.owner,
                        "demo_mode": self.mode},
            on_frame=self._on_frame, on_event=self._on_event,
        )
        try:
            result = await orch.run()
        finally:
            if self.participant is not None:  # the live caller's transcription worker
                with contextlib.suppress(Exception):
                    self.participant.close()
        return _outcome(result.end_reason, result.media_ms)

    # ---------------------------------------------------------------- orchestrator hooks
    # (called on the session's own thread)

    def _on_frame(self, user: Pcm, agent: Pcm, t_media_ms: int) -> None:
        if self._stop.is_set():
            raise InfrastructureError(f"demo stopped: {self._stop_reason}")
        self.media_ms = t_media_ms
        if self.listening:
            if self.mode == "listen":
                self.feeds[0].push(user)
            self.feeds[1].push(agent)

    def _on_event(self, event: Event) -> None:
        if len(self.events) < self.max_events or event.type == "session.end":
            self.events.append((event.seq, event.model_dump_json(exclude={"t_wall"})))
        else:
            self.dropped_events += 1
        if event.type == "session.end" and self.state == "running":
            # The media has ended: say so now, not after the files are closed and graded
            # (grading, or the agent's threads winding down, can take seconds on a busy
            # machine). ``graded`` follows from _thread_main.
            self.media_ms = event.t_media_ms
            if self._stop.is_set():
                self.state, self.detail = "stopped", self._stop_reason
            else:
                self.state = "finished"
                self.detail = _outcome(str(getattr(event, "reason", "")), event.t_media_ms)
            self.ended_at = time.monotonic()
        self.signal.notify()

    # ---------------------------------------------------------------- microphone (mic mode)

    def _push_mic(self, pcm: Pcm) -> None:
        if self.state == "running" and self.participant is not None and len(pcm):
            self.participant.push_audio(pcm)

    def _mark_caller(self, connected: bool) -> None:
        if self.participant is None or self.state != "running":
            return
        mark_participant(self.participant, connected, f"demo {self.id}")

    # ---------------------------------------------------------------- WebRTC

    async def answer(self, sdp: str, sdp_type: str) -> dict[str, Any]:
        """Answer the browser's offer: two receive-only audio transceivers (user, agent), or
        in mic mode one (the microphone in, the agent channel out). The run starts when the
        connection is up (or, listening, with :meth:`start`)."""
        check_offer(sdp, sdp_type, DemoError)
        if self.done:
            raise DemoError(f"this demo has ended ({self.state}); start a new one")
        try:
            from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
        except ImportError:
            raise DemoError("live audio needs aiortc (pip install aiortc==1.16.0)") from None
        await self.close_peer()
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.pc = pc

        @pc.on("track")
        def _on_track(track: Any) -> None:
            if self.mode == "mic" and track.kind == "audio" and pc is self.pc:
                self._drains.append(asyncio.ensure_future(drain_track(track, self.mic)))

        @pc.on("connectionstatechange")
        async def _on_state() -> None:
            if pc is not self.pc:
                return
            if pc.connectionState == "connected":
                self.listening = True
                self.last_seen = time.monotonic()
                self.start()
                self._mark_caller(True)
            elif pc.connectionState in ("failed", "closed"):
                self.listening = False
                self._mark_caller(False)
            self.signal.wake()

        expected = 1 if self.mode == "mic" else 2
        try:
            await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="offer"))
            audio = [t for t in pc.getTransceivers() if t.kind == "audio"]
            if len(audio) != expected:
                raise DemoError(
                    f"the offer has {len(audio)} audio transceivers; expected {expected} "
                    + ("(your microphone, the agent)" if self.mode == "mic" else "(user, agent)"))
            track_class = channel_track_class()
            for feed in self.feeds[2 - expected:]:
                pc.addTrack(track_class(feed))
            await pc.setLocalDescription(await pc.createAnswer())
        except Exception as exc:
            await self.close_peer()
            if isinstance(exc, DemoError):
                raise
            raise DemoError(f"could not answer the offer: {exc}") from None
        local = pc.localDescription
        roles = ["agent"] if self.mode == "mic" else ["user", "agent"]
        return {"sdp": local.sdp, "type": local.type,
                "tracks": {str(t.mid): role for t, role in zip(audio, roles, strict=True)}}


def _outcome(end_reason: str, media_ms: int) -> str:
    return f"{end_reason} after {media_ms / 1000:.1f} s of media"


# --------------------------------------------------------------------------- the manager


class DemoManager(LiveRunManager[DemoSession]):
    """Every live demo of this server: creates sessions (at most ``max_sessions`` waiting or
    running at once), finds them, and reaps them: a session whose page has been gone for
    ``leave_grace_s`` is stopped; an ended one is forgotten after ``retain_s`` (its run
    directory stays on disk)."""

    def __init__(
        self, runs_dir: Path, *, clock: ClockMode = "realtime", max_sessions: int = 4,
        leave_grace_s: float = 10.0, retain_s: float = 300.0, max_events: int = 5000,
        limits: Mapping[str, int] | None = None, reap_every_s: float = 2.0,
        asr_factory: Callable[[], ASR | None] | None = None,
        participant_factory: Callable[[TaskSpec, int, ASR | None], LiveUser] | None = None,
    ) -> None:
        super().__init__(runs_dir, clock=clock, limits=limits, reap_every_s=reap_every_s,
                         name="demo")
        self.asr_factory = asr_factory
        """Speech recognition for mic mode (default: app.live.default_asr, shared with
        Study B; None when it cannot load: the call runs without transcripts)."""
        self.participant_factory = participant_factory
        """The live caller for mic mode (default: a LiveParticipant, as in Study B)."""
        self.max_sessions = max_sessions
        self.leave_grace_s = leave_grace_s
        self.retain_s = retain_s
        self.max_events = max_events
        self.sessions: dict[str, DemoSession] = {}

    def sessions_held(self) -> list[DemoSession]:
        return list(self.sessions.values())

    def active(self) -> list[DemoSession]:
        return [s for s in self.sessions.values() if not s.done]

    def _check_capacity(self) -> None:
        if len(self.active()) >= self.max_sessions:
            raise DemoBusy(f"{self.max_sessions} live demos are already running; stop one "
                           "or wait for one to finish")

    def create(self, task: TaskSpec, factory: AgentFactory, *, owner: str,
               seed: int = 0, mode: DemoMode = "listen",
               participant: LiveUser | None = None) -> DemoSession:
        self._check_capacity()
        task = self._effective(task)
        session_id = secrets.token_urlsafe(9)
        run_dir = self.runs_dir / DEMO_DIR / task.id / session_id
        session = DemoSession(
            session_id=session_id, task=task, factory=factory, owner=owner, run_dir=run_dir,
            seed=seed, clock=self.clock, loop=asyncio.get_running_loop(),
            max_events=self.max_events, mode=mode, participant=participant,
        )
        self.sessions[session_id] = session
        self._janitor.ensure()
        return session

    async def open(self, task: TaskSpec, factory: AgentFactory, *, owner: str,
                   seed: int = 0, mode: DemoMode = "listen") -> DemoSession:
        """:meth:`create`; in mic mode first the live caller (speech recognition loads in a
        thread: nothing waits for it on the server's loop)."""
        participant = None
        if mode == "mic":
            self._check_capacity()
            from app.live import _default_participant, default_asr

            asr = await asyncio.to_thread(self.asr_factory or default_asr)
            participant = await asyncio.to_thread(
                self.participant_factory or _default_participant, self._effective(task), seed,
                asr)
        return self.create(task, factory, owner=owner, seed=seed, mode=mode,
                           participant=participant)

    def get(self, session_id: str) -> DemoSession | None:
        return self.sessions.get(session_id)

    def find_run_dir(self, session_id: str) -> Path | None:
        """The run directory of a session this server no longer holds in memory."""
        if not session_id or "/" in session_id or session_id.startswith("."):
            return None
        root = self.runs_dir / DEMO_DIR
        if not root.is_dir():
            return None
        return next((d for d in root.glob(f"*/{session_id}") if RunDir(d).exists()),
                    None)

    async def reap(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        for session in list(self.sessions.values()):
            if session.subscribers > 0:
                session.last_seen = now
            if not session.done:
                if now - session.last_seen > self.leave_grace_s:
                    session.request_stop("the browser went away")
                session.abandon_if_stuck(now)
                continue
            ended = session.ended_at or now
            if session.pc is not None and now - ended > 5.0:
                await session.close_peer()  # after the last audio has played out
            if session.subscribers == 0 and now - max(ended, session.last_seen) > self.retain_s:
                await session.close_peer()
                del self.sessions[session.id]

    async def close(self, timeout_s: float = 5.0) -> None:
        """Stop every session (server shutdown) and wait briefly for their runs to end."""
        await super().close(timeout_s)

    def _stop_for_shutdown(self, session: DemoSession) -> None:
        session.request_stop(self.shutdown_reason)
        self.sessions.clear()
