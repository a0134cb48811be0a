"""Study B live calls (paper appendix F.1/F.3): a participant talks to the evaluated agent over
WebRTC while the task's reveal graph runs in cue mode on their private role card.

One :class:`LiveCall` per assigned session (a ``LiveSession`` row). Its orchestrator runs on the
realtime media clock in a thread of its own with its own event loop, exactly as a simulator run
but with a :class:`~runtime.user.live_user.LiveParticipant` as the user source, so a slow or
crashing
agent never stalls the server or another participant. The browser's microphone arrives as Opus
decoded by aiortc (s16 stereo 48 kHz), is downmixed and resampled to 24 kHz
(:class:`~app.rtc.MicSink`) and pushed into the participant; the agent channel goes back as
20 ms, 48 kHz frames (:class:`~app.rtc.AudioFeed`). The agent receives only the participant's
speech. The run directory is an ordinary one (``events.jsonl``, ``trace.wav``, ``meta.json``)
under ``<runs_dir>/study-b/<study>/<label>/<position>-<task>/`` and grades like any other.

Connections come and go: with the study's ``on_disconnect`` = ``rejoin`` a reload (a new offer)
replaces the peer connection while the orchestrator keeps running (silence on the user channel
while the participant is away, ``participant.connection`` events logged); with ``incomplete`` a
lost connection or a page gone for ``leave_grace_s`` ends the run as an infrastructure drop and
marks the session ``incomplete``. At server start, sessions still marked ``running`` are marked
``incomplete`` and their run directories repaired so they read and grade
(:func:`recover_interrupted`).

Nothing here sends the participant the event log: the page gets role-card snapshots, cue state,
the call state and the elapsed time only (:func:`card_view`), never the agent spec, the run
directory or any grader state.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.live_run import LiveRun, LiveRunManager, check_offer, mark_participant
from app.models_study_b import LiveSession, Participant
from app.rtc import (
    AudioFeed,
    LatencyProbe,
    MicSink,
    channel_track_class,
    close_peer,
    drain_track,
)
from runtime.agents.base import InfrastructureError
from runtime.core.audio import FRAME_MS, SAMPLE_RATE, VOICE_RMS, Pcm, rms
from runtime.core.events import (
    AgentSpeechStart,
    AgentTranscript,
    AgentTruncated,
    ClockMode,
    Event,
    SessionEnd,
)
from runtime.core.rundir import (  # noqa: F401  (repair_wav_header: re-exported for callers)
    finished_run,
    recover_runs,
    repair_run_dir,
    repair_wav_header,
)
from runtime.core.spec import TaskSpec
from runtime.session.campaign import AgentFactory
from runtime.session.orchestrator import Orchestrator, RunResult
from runtime.user.simulator import UserSource

if TYPE_CHECKING:

    from runtime.speech.asr import ASR
    from runtime.user.live_user import PendingPlan, RoleCard

log = logging.getLogger(__name__)

CallState = Literal["waiting", "running", "complete", "incomplete", "failed"]
OnDisconnect = Literal["rejoin", "incomplete"]
CARD_EVENTS = frozenset({"cue.show", "cue.done", "card.fact", "participant.connection",
                         "session.end"})
"""Event types after which the participant's card or call state may have changed."""
MIC_QUEUE_TARGET = SAMPLE_RATE * 20 // 1000
"""20 ms: the least microphone audio left waiting after each frame that counts as no standing
queue (aiortc hands frames over in 20 ms steps, the media clock takes 40 ms; less would let a
late packet leave a frame short, which the participant source fills with silence)."""
ENDED_BY_PARTICIPANT = "the participant ended the call"
SERVER_SHUTDOWN = "the server shut down during the session"
RECOVERED = "the server stopped during the session (recovered at start-up)"

PARTICIPANT_MESSAGES: dict[str, str] = {
    "waiting": "Press “Start call” when you are ready.",
    "running": "The call is on.",
    "complete": "This session is finished. Thank you!",
    "incomplete": "This session ended early. You can go on with the next session.",
    "failed": "This session ended early because of a technical problem on our side. You can "
              "go on with the next session.",
}
"""What a participant is told about a call's state: never the detail the researcher sees."""
PARTICIPANT_LABELS: dict[str, str] = {
    "waiting": "Not started",
    "running": "Call in progress",
    "complete": "Call finished – thank you",
    "incomplete": "Ended early",
    "failed": "Ended early",
}
"""The call state's tag on the participant's page, in plain words (the internal state names
``waiting``, ``running``, ``complete``, ``incomplete`` and ``failed`` are never shown; the
page says "Connecting…" while its connection comes up)."""
CAPTION_EVENTS = frozenset({"agent.speech.start", "agent.transcript", "agent.truncated"})
"""Event types that change the captions (when the study shows them)."""
CAPTION_TURNS = 3
"""Captions show the agent's last few turns."""


def participant_status(state: str, elapsed_ms: int = 0,
                       connected: bool = False) -> dict[str, Any]:
    """A call state as the participant's page receives it: the state (for the page's logic,
    never printed), its plain label and message, the elapsed time."""
    shown = state if state in PARTICIPANT_MESSAGES else "incomplete"
    return {"state": shown, "label": PARTICIPANT_LABELS[shown], "elapsed_ms": elapsed_ms,
            "connected": connected, "message": PARTICIPANT_MESSAGES[shown]}


class LiveCallError(Exception):
    """A participant's request cannot be served; the message is safe to show them."""


class LiveBusy(LiveCallError):
    """The server runs as many live calls as it may."""


class LiveUser(UserSource, Protocol):
    """What a call needs from its user source beyond the orchestrator's :class:`UserSource`
    (runtime/user/live_user.py's ``LiveParticipant``)."""

    def push_audio(self, pcm: Pcm) -> None: ...

    def role_card(self) -> RoleCard: ...

    def mark_connected(self) -> None: ...

    def mark_disconnected(self) -> None: ...

    @property
    def stats(self) -> dict[str, int]:
        """Counters of the microphone path (``buffered_samples``: audio waiting)."""
        ...

    @property
    def pending(self) -> PendingPlan | None:
        """The plan the participant is cued to say now, if any."""
        ...

    def close(self) -> None:
        """Stop the participant's transcription worker (the run has ended)."""
        ...


ParticipantFactory = Callable[[TaskSpec, int, "ASR | None"], LiveUser]
MicFeeder = Callable[[int, "LiveCall"], "Pcm | None"]
"""``feeder(t_media_ms, call)``: audio to push as the participant's microphone before the next
frame (a robot participant for tests and benchmarks, run on the call's own thread)."""


def _default_participant(task: TaskSpec, seed: int, asr: ASR | None) -> LiveUser:
    from runtime.user.live_user import LiveParticipant

    participant: LiveUser = LiveParticipant(task, seed=seed, asr=asr)
    return participant


_asr_lock = threading.Lock()
_asr_problem: str | None = None


def default_asr() -> ASR | None:
    """The process-wide recognizer (runtime.speech.asr.shared_asr), or None (logged once) when
    it cannot load here: the call then runs without transcripts."""
    global _asr_problem
    with _asr_lock:
        if _asr_problem is not None:
            return None
        try:
            from runtime.speech.asr import shared_asr

            return shared_asr()
        except Exception as exc:  # missing weights or packages: calls run without ASR
            _asr_problem = f"{type(exc).__name__}: {exc}"
            log.warning("live calls run without ASR: %s", _asr_problem)
            return None


# --------------------------------------------------------------------------- the page's view


def card_view(card: RoleCard) -> dict[str, Any]:
    """The role card as the participant's page receives it: persona, goal, the facts known
    now, cues (text and times only) and guidance. Built field by field so nothing else the
    card object may carry (plan ids, grader state) can reach the page."""
    cues = [{"id": c.cue_id, "kind": c.kind, "text": c.text, "shown_ms": c.shown_ms,
             "done_ms": c.done_ms} for c in card.cues]
    active = card.active_cue
    # The cue box keeps the last cue until a newer one replaces it: a cue is done
    # (``cue.done``) when the participant's answer ends, often seconds before the agent
    # reacts to it; the page then shows it greyed, marked done.
    last = card.cues[-1] if card.cues else None
    shown = active if active is not None else last
    return {
        "persona_name": card.persona_name,
        "persona_role": card.persona_role,
        "speaking_style": card.speaking_style,
        "goals": list(card.goals),
        "constraints": list(card.constraints),
        "objective": card.objective_for_user,
        "facts": [{"id": f.fact_id, "description": f.description, "value": f.value,
                   "version": f.version, "since_ms": f.since_ms,
                   "released": not f.known_at_start, "when_asked": f.when_asked}
                  for f in card.facts],
        "cues": cues,
        "active_cue": None if active is None else {
            "id": active.cue_id, "kind": active.kind, "text": active.text,
            "shown_ms": active.shown_ms},
        "shown_cue": None if shown is None else {
            "id": shown.cue_id, "kind": shown.kind, "text": shown.text,
            "shown_ms": shown.shown_ms, "done": shown is not active},
        "guidance": card.guidance,
    }


class Captions:
    """The agent's words for the participant's page, turn by turn, when the study shows
    captions. Fed the run's events on the call's thread; read from the server's loop.

    A turn's text (``agent.transcript``) is shown once that turn's speech has started
    (``agent.speech.start``): an agent that sends its text before its audio never shows words
    before they are heard. A turn cut short (``agent.truncated``: the participant cut in) keeps
    only the share of its words that was played, ending in "…". Nothing but the agent's words
    is kept: no plan ids, no event types, no acts or tool results."""

    def __init__(self, turns: int = CAPTION_TURNS) -> None:
        self.turns = turns
        self._lock = threading.Lock()
        self._text: dict[int, str] = {}
        self._heard: dict[int, float] = {}
        self._spoken: set[int] = set()

    def on_event(self, event: Event) -> bool:
        """Take one run event; True when the captions may have changed."""
        with self._lock:
            if isinstance(event, AgentSpeechStart):
                self._spoken.add(event.turn)
            elif isinstance(event, AgentTranscript):
                text = event.text.strip()
                if not text:
                    return False
                before = self._text.get(event.turn)
                self._text[event.turn] = f"{before} {text}" if before else text
            elif isinstance(event, AgentTruncated):
                total = event.heard_ms + event.dropped_ms
                self._heard[event.turn] = event.heard_ms / total if total > 0 else 1.0
            else:
                return False
            return True

    def view(self) -> list[dict[str, Any]]:
        """The last ``turns`` spoken turns: ``{"turn", "text", "cut"}``."""
        with self._lock:
            shown = sorted(t for t in self._text if t in self._spoken)[-self.turns:]
            out = []
            for turn in shown:
                text, cut = self._text[turn], False
                share = self._heard.get(turn)
                if share is not None and share < 1.0:
                    words = text.split()
                    kept = words[:int(len(words) * share)]
                    text, cut = (" ".join(kept) + "…") if kept else "…", True
                out.append({"turn": turn, "text": text, "cut": cut})
            return out


def shown_fact_values(card: RoleCard) -> list[Any]:
    """The fact values the card shows (what the gold scan may allow)."""
    return [f.value for f in card.facts]


# --------------------------------------------------------------------------- persistence


class CallStore(Protocol):
    """Where a call's state lands (the ``LiveSession`` row); called from any thread."""

    def started(self, key: int, run_rel: str) -> None: ...

    def finished(self, key: int, state: str, detail: str) -> None: ...


def now_utc() -> datetime:
    return datetime.now(UTC)


PROCESS = f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"
"""This app process, as the holder of the live sessions it runs (``LiveSession.holder``):
host name, process id, and a nonce that tells it from an earlier process with the same id."""


def holder_is_gone(holder: str | None, me: str = PROCESS) -> bool:
    """Whether the process that ran a session (``LiveSession.holder``) is no longer running,
    as far as this process can tell: no holder recorded (a row from before holders, or a
    single-process server) counts as gone; so does a holder on this host whose process id
    is not alive, or is this process's own id with another nonce (an earlier process whose
    id was reused). A holder on another host is taken to be alive: that host's app process
    recovers its own sessions when it starts again (docs/scale.md)."""
    if not holder:
        return True
    host, _, rest = holder.partition("/")
    pid_text, _, nonce = rest.partition("/")
    my_host, _, my_rest = me.partition("/")
    my_pid, _, my_nonce = my_rest.partition("/")
    if host != my_host or not pid_text.isdigit():
        return host == my_host  # an unreadable holder of this host: not a live process
    if pid_text == my_pid:
        return nonce != my_nonce
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, under another user
    try:  # a killed process its parent has not reaped yet (a zombie) is gone too
        stat = Path(f"/proc/{pid_text}/stat").read_text()
        return stat.rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return False


class DbCallStore:
    """:class:`CallStore` over the app's database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def started(self, key: int, run_rel: str) -> None:
        with Session(self.engine) as db:
            row = db.get(LiveSession, key)
            if row is None:
                return
            row.state, row.run_dir, row.detail = "running", run_rel, ""
            row.holder = PROCESS
            row.started_at = row.started_at or now_utc()
            db.add(row)
            db.commit()

    def finished(self, key: int, state: str, detail: str) -> None:
        with Session(self.engine) as db:
            row = db.get(LiveSession, key)
            if row is None:
                return
            row.state, row.detail, row.ended_at = state, detail[:2000], now_utc()
            db.add(row)
            person = db.get(Participant, row.participant_id)
            db.commit()
            if person is not None and person.finished_at is None:
                states = db.exec(select(LiveSession.state)
                                 .where(LiveSession.participant_id == person.id)).all()
                if all(s in ("complete", "incomplete", "failed") for s in states):
                    person.finished_at = now_utc()
                    db.add(person)
                    db.commit()


# --------------------------------------------------------------------------- one call


@dataclass(frozen=True)
class CallPlan:
    """What one call runs, resolved from its ``LiveSession`` row."""

    key: int
    """The ``LiveSession`` id."""
    task: TaskSpec
    factory: AgentFactory
    run_dir: Path
    run_rel: str
    """``run_dir`` relative to the runs directory (stored in the row)."""
    seed: int = 0
    on_disconnect: OnDisconnect = "rejoin"
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Extra ``meta.json`` fields (study, participant label, position)."""
    captions: bool = False
    """Show the participant the agent's words (the study's captions option)."""


@dataclass
class CallProbes:
    """Hooks for ``bench/bench_live.py``: ``mic`` sees each microphone frame as aiortc hands it
    over, ``agent_out`` how long each agent frame waited in the server, ``frame`` each media
    frame as the orchestrator writes it."""

    mic: Callable[[float, Pcm], None] | None = None
    agent_out: LatencyProbe | None = None
    frame: Callable[[int, float], None] | None = None
    """Called with ``t_media_ms`` and the media clock's deadline for it (``time.monotonic()``
    seconds) as each frame is written."""
    event: Callable[[Event], None] | None = None
    """Called with every run event as it is logged (a robot participant listens here)."""


class LiveCall(LiveRun):
    """One participant session: its state, its role card, its peer connection and its run.
    The run (``_thread_main``, ``_run``) and the orchestrator hooks run on the call's own
    thread; everything else on the server's event loop (app/live_run.py: what it shares
    with a live demo)."""

    def __init__(
        self, plan: CallPlan, participant: LiveUser, *, clock: ClockMode,
        loop: asyncio.AbstractEventLoop, store: CallStore | None = None,
        feeder: MicFeeder | None = None, probes: CallProbes | None = None,
    ) -> None:
        super().__init__(task=plan.task, run_dir=plan.run_dir, loop=loop)
        self.plan = plan
        self.key = plan.key
        self.on_disconnect: OnDisconnect = plan.on_disconnect
        self.participant = participant
        self.clock: ClockMode = clock
        self.store = store
        self.feeder = feeder
        self.probes = probes or CallProbes()
        self.state: CallState = "waiting"
        self.detail = ""
        """Why the call ended, for the researcher (never sent to the participant)."""
        self.agent_feed = AudioFeed(probe=self.probes.agent_out)
        self.mic = MicSink(self._push_mic, on_frame=self.probes.mic)
        self.connections = 0
        """Peer connections that reached "connected" (a rejoin adds one)."""
        self.participant_connected = False
        self.page_seen = False
        self.card_version = 0
        self._stop_outcome: CallState = "incomplete"
        self._end_detail = ""
        self._mic_lock = threading.Lock()
        self._mic_trim = 0
        self._mic_levels: deque[int] = deque(maxlen=1000 // FRAME_MS)
        self.mic_trimmed = 0
        """Microphone samples skipped to keep the standing queue short."""
        self.orchestrator: Orchestrator | None = None
        """The run's orchestrator once it started (read-only use: a robot participant)."""
        self.captions: Captions | None = Captions() if plan.captions else None

    # ---------------------------------------------------------------- what the page sees

    thread_name = "live"

    def _label(self) -> str:
        return str(self.key)

    def card(self) -> dict[str, Any]:
        view = card_view(self.participant.role_card())
        if self.captions is not None:
            view["captions"] = self.captions.view()
        return view

    def status(self) -> dict[str, Any]:
        """Call state for the participant's page (no researcher detail)."""
        return participant_status(self.state, self.media_ms, self.listening)

    @property
    def peer_connected(self) -> bool:
        return self.pc is not None and self.pc.connectionState == "connected"

    def present(self) -> bool:
        """Is the participant there? A page with its event stream open is (a killed browser
        closes that stream at once, long before ICE notices), as long as its call is still
        connected once it has been; a peer with no page (a test or benchmark peer) is while
        its connection is up."""
        if self.page_seen:
            return self.subscribers > 0 and (self.connections == 0 or self.peer_connected)
        return self.peer_connected

    # ---------------------------------------------------------------- the run

    def request_stop(self, reason: str, outcome: CallState = "incomplete") -> None:
        """End the run at its next frame (logged as ``infrastructure_error`` with ``reason``)
        and mark the session ``outcome``; a call that never started just closes."""
        if self.state == "waiting":
            self._finish(outcome, reason)
            self.signal.wake()
        elif self._stop_running(reason):
            self._stop_outcome = outcome

    def abandon_if_stuck(self, now: float, after_s: float = 10.0) -> None:
        """A run that has not reached its next frame ``after_s`` after a stop (an agent stuck
        in a call) is marked ended; its thread finishes on its own and changes nothing."""
        if self._stuck(now, after_s):
            self._abandoned = True
            self._finish(self._stop_outcome, f"{self._stop_reason} (the run did not end)")
            self.signal.wake()

    def _finish(self, state: CallState, detail: str) -> None:
        self.state, self.detail = state, detail
        self.ended_at = time.monotonic()
        if self.store is not None:
            try:
                self.store.finished(self.key, state, detail)
            except Exception:
                log.exception("live call %s: could not record the end", self.key)

    def _thread_main(self) -> None:
        # The row is written here, on the call's own thread: a database commit (an fsync on
        # SQLite, a round trip on PostgreSQL) on the server's event loop would stall every
        # other call's audio (issue 18).
        state: CallState
        if self.store is not None:
            try:
                self.store.started(self.key, self.plan.run_rel)
            except Exception:  # the run is what matters; the row is fixed at its end
                log.exception("live call %s: could not record the start", self.key)
        try:
            result = asyncio.run(self._run())
            state, detail = self._outcome(result)
        except Exception as exc:  # any failure ends this call only, with its message
            log.exception("live call %s failed", self.key)
            state, detail = "failed", f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(Exception):
                repair_run_dir(self.run_dir, f"harness error: {detail}", status="failed")
        if self._abandoned:
            return
        self._finish(state, detail)
        self.signal.notify()

    def _outcome(self, result: RunResult) -> tuple[CallState, str]:
        what = f"{result.end_reason} after {result.media_ms / 1000:.1f} s of media"
        if self._end_detail:
            what += f": {self._end_detail}"
        if self._stop.is_set():
            return self._stop_outcome, self._stop_reason
        if result.end_reason == "infrastructure_error":
            return "failed", what
        if not self.participant_connected and result.end_reason in ("timeout", "idle_timeout"):
            return "incomplete", f"{what} while the participant was disconnected"
        return "complete", what

    async def _run(self) -> RunResult:
        agent = self.plan.factory.make(self.task)
        orch = self.orchestrator = Orchestrator(
            self.task, agent, self.participant, self.run_dir, agent_spec=self.plan.factory.spec,
            seed=self.plan.seed, clock=self.clock,
            meta_extra={"run_id": f"study-b-{self.key}", "live": True, "study_b": True,
                        "on_disconnect": self.on_disconnect, **self.plan.meta},
            on_frame=self._on_frame, on_event=self._on_event,
        )
        try:
            return await orch.run()
        finally:
            with contextlib.suppress(Exception):  # the participant's transcription worker
                self.participant.close()

    # ---------------------------------------------------------------- orchestrator hooks
    # (called on the call's own thread)

    def clock_deadline(self, t_ms: int) -> float:
        """The orchestrator's media-clock deadline for media time ``t_ms`` (monotonic s)."""
        orch = self.orchestrator
        return orch.clock.deadline(t_ms) if orch is not None else float("nan")

    def _on_frame(self, user: Pcm, agent: Pcm, t_media_ms: int) -> None:
        if self._stop.is_set():
            raise InfrastructureError(f"live call stopped: {self._stop_reason}")
        self.media_ms = t_media_ms + FRAME_MS
        if self.probes.frame is not None:
            # The media clock's own deadline for this frame: the tick that released media
            # time t_media_ms waited for it (runtime/session/orchestrator.py, MediaClock.tick).
            self.probes.frame(t_media_ms, self.clock_deadline(t_media_ms))
        self._watch_mic_queue()
        if self.listening:
            self.agent_feed.push(agent)
        if self.feeder is not None:
            pcm = self.feeder(self.media_ms, self)
            if pcm is not None and len(pcm):
                self.participant.push_audio(pcm)

    def _on_event(self, event: Event) -> None:
        if self.probes.event is not None:
            self.probes.event(event)
        if isinstance(event, SessionEnd):
            self._end_detail = event.detail
        changed = event.type in CARD_EVENTS
        if self.captions is not None and event.type in CAPTION_EVENTS:
            changed = self.captions.on_event(event) or changed
        if changed:
            self.card_version += 1
            self.signal.notify()

    # ---------------------------------------------------------------- microphone

    def _push_mic(self, pcm: Pcm) -> None:
        if self.state != "running":
            return
        with self._mic_lock:
            # Latency is taken back in the participant's quiet, never out of their voice.
            cut = min(self._mic_trim, len(pcm)) if (
                self._mic_trim and rms(pcm) < VOICE_RMS) else 0
            self._mic_trim -= cut
        if cut:
            self.mic_trimmed += cut
            pcm = pcm[cut:]
        if len(pcm):
            self.participant.push_audio(pcm)

    def _watch_mic_queue(self) -> None:
        """Keep the microphone's standing queue short (on the call's thread, right after the
        orchestrator took this frame): a burst at connect (or a stall) leaves audio waiting in
        the participant's buffer that the steady 40 ms consumption never drains, adding that
        much latency for the rest of the call. When the buffer never fell below
        ``MIC_QUEUE_TARGET`` samples during the last second, the excess is skipped from the
        next quiet microphone audio (below the VAD's voice level: a cut inside a word would
        clip what the agent and the recognizer hear), counted in ``mic_trimmed``. The queue
        is measured again once that trim has been taken."""
        stats = self.participant.stats
        with self._mic_lock:
            if self._mic_trim:  # still waiting for quiet to take the last excess from
                self._mic_levels.clear()
                return
        self._mic_levels.append(int(stats.get("buffered_samples", 0)))
        if len(self._mic_levels) == self._mic_levels.maxlen:
            excess = min(self._mic_levels) - MIC_QUEUE_TARGET
            if excess > 0:
                with self._mic_lock:
                    self._mic_trim += excess
            self._mic_levels.clear()

    # ---------------------------------------------------------------- WebRTC

    async def answer(self, sdp: str, sdp_type: str) -> dict[str, Any]:
        """Answer the browser's offer: one audio transceiver, the microphone in and the agent
        channel out. The run starts when the connection is up; a later offer (a reload)
        replaces the connection of a running call."""
        check_offer(sdp, sdp_type, LiveCallError)
        if self.done:
            raise LiveCallError("this session has ended")
        if self.state == "running" and self.on_disconnect == "incomplete" and self.connections:
            self.request_stop("the participant reconnected; this study ends a session when "
                              "its connection drops")
            raise LiveCallError("this session ended when the connection dropped")
        try:
            from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
        except ImportError:
            raise LiveCallError("live audio is not available on this server") from None
        old, self.pc = self.pc, None
        self.listening = False
        if old is not None:  # a reload: the old connection is gone, whatever ICE says yet
            self.set_participant_connected(False)
        await close_peer(old)
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.pc = pc

        @pc.on("track")
        def _on_track(track: Any) -> None:
            if track.kind == "audio" and pc is self.pc:
                self._drains.append(asyncio.ensure_future(drain_track(track, self.mic)))

        @pc.on("connectionstatechange")
        async def _on_state() -> None:
            if pc is not self.pc:
                return
            if pc.connectionState == "connected":
                self.connections += 1
                self.agent_feed.clear()
                self.listening = True
                self.last_seen = time.monotonic()
                self.start()
                self.set_participant_connected(True)
            elif pc.connectionState in ("failed", "closed"):
                self.listening = False
                self.connection_lost(f"the connection {pc.connectionState}")
            self.signal.wake()

        try:
            await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="offer"))
            audio = [t for t in pc.getTransceivers() if t.kind == "audio"]
            if len(audio) != 1:
                raise LiveCallError(f"the offer has {len(audio)} audio transceivers; expected "
                                    "1 (your microphone, the assistant's voice)")
            pc.addTrack(channel_track_class()(self.agent_feed))
            await pc.setLocalDescription(await pc.createAnswer())
        except Exception as exc:
            if self.pc is pc:
                self.pc = None
            await close_peer(pc)
            if isinstance(exc, LiveCallError):
                raise
            raise LiveCallError(f"could not answer the offer: {exc}") from None
        local = pc.localDescription
        return {"sdp": local.sdp, "type": local.type}

    def set_participant_connected(self, connected: bool) -> None:
        """Tell the participant source (it logs ``participant.connection``), once per change."""
        if connected == self.participant_connected or self.state != "running":
            return
        self.participant_connected = connected
        mark_participant(self.participant, connected, f"live call {self.key}")
        self.signal.wake()

    def connection_lost(self, why: str) -> None:
        """The peer connection failed or closed (not replaced by a new offer)."""
        if self.state != "running":
            return
        if self.on_disconnect == "incomplete":
            self.request_stop(f"the participant's connection was lost ({why})")
        else:
            self.set_participant_connected(False)

    async def hang_up(self) -> None:
        """The participant pressed End call."""
        self.request_stop(ENDED_BY_PARTICIPANT)
        await self.close_peer()



# --------------------------------------------------------------------------- the manager


class LiveCallManager(LiveRunManager[LiveCall]):
    """Every live call of this server: opens one per session (at most ``max_calls`` running
    at once), finds them, and reaps them every ``reap_every_s``: a participant away for
    ``disconnect_grace_s`` is marked disconnected; with ``incomplete`` a call away for
    ``leave_grace_s`` ends incomplete, with ``rejoin`` one away for ``rejoin_timeout_s``; an
    ended call is forgotten after ``retain_s`` (its run directory stays on disk)."""

    def __init__(
        self, runs_dir: Path, *, store: CallStore | None = None, clock: ClockMode = "realtime",
        max_calls: int = 8, disconnect_grace_s: float = 2.0, leave_grace_s: float = 10.0,
        rejoin_timeout_s: float = 300.0, retain_s: float = 600.0, reap_every_s: float = 1.0,
        asr_factory: Callable[[], ASR | None] = default_asr,
        participant_factory: ParticipantFactory = _default_participant,
        limits: Mapping[str, int] | None = None,
        feeder_factory: Callable[[CallPlan], MicFeeder | None] | None = None,
    ) -> None:
        super().__init__(runs_dir, clock=clock, limits=limits, reap_every_s=reap_every_s,
                         name="live call")
        self.store = store
        self.max_calls = max_calls
        self.disconnect_grace_s = disconnect_grace_s
        self.leave_grace_s = leave_grace_s
        self.rejoin_timeout_s = rejoin_timeout_s
        self.retain_s = retain_s
        self.asr_factory = asr_factory
        self.participant_factory = participant_factory
        self.feeder_factory = feeder_factory
        self.calls: dict[int, LiveCall] = {}
        self._opening: dict[int, asyncio.Lock] = {}

    def sessions_held(self) -> list[LiveCall]:
        return list(self.calls.values())

    def running(self) -> list[LiveCall]:
        return [c for c in self.calls.values() if c.state == "running"]

    def get(self, key: int) -> LiveCall | None:
        return self.calls.get(key)

    async def open(self, plan: CallPlan, probes: CallProbes | None = None) -> LiveCall:
        """The call of ``plan.key``, created (not started) on first use."""
        root = self.runs_dir.resolve()
        try:
            inside = root in plan.run_dir.resolve().parents
        except (ValueError, OSError):
            inside = False
        if not inside:  # checked where the path is used: a run never writes elsewhere
            log.error("live call %s: run directory %r is outside %s; refused", plan.key,
                      str(plan.run_dir), root)
            raise LiveCallError("this session cannot run; please tell the researcher")
        lock = self._opening.setdefault(plan.key, asyncio.Lock())
        async with lock:
            call = self.calls.get(plan.key)
            if call is not None:
                return call
            task = self._effective(plan.task)
            if task is not plan.task:
                plan = dataclasses.replace(plan, task=task)
            asr = await asyncio.to_thread(self.asr_factory)
            participant = await asyncio.to_thread(self.participant_factory, task, plan.seed, asr)
            feeder = self.feeder_factory(plan) if self.feeder_factory is not None else None
            call = LiveCall(plan, participant, clock=self.clock, loop=asyncio.get_running_loop(),
                            store=self.store, feeder=feeder, probes=probes)
            self.calls[plan.key] = call
            self._janitor.ensure()
            return call

    def check_capacity(self, call: LiveCall) -> None:
        """Refuse to start one more call than ``max_calls``."""
        if call.state == "waiting" and len(self.running()) >= self.max_calls:
            raise LiveBusy("the study server is busy right now; please try again in a minute")

    async def reap(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        for call in list(self.calls.values()):
            if call.present():
                call.last_seen = now
            away = now - call.last_seen
            if call.state == "running":
                if away > self.disconnect_grace_s:
                    call.set_participant_connected(False)
                limit = (self.leave_grace_s if call.on_disconnect == "incomplete"
                         else self.rejoin_timeout_s)
                if call.connections and away > limit:
                    call.request_stop(f"the participant was away for {away:.0f} s")
                call.abandon_if_stuck(now)
                continue
            if call.state == "waiting":
                if call.subscribers == 0 and away > self.retain_s:
                    await call.close_peer()
                    del self.calls[call.key]
                continue
            ended = call.ended_at or now
            if call.pc is not None and now - ended > 5.0:
                await call.close_peer()  # after the last audio has played out
            if call.subscribers == 0 and now - max(ended, call.last_seen) > self.retain_s:
                await call.close_peer()
                del self.calls[call.key]

    def _stop_for_shutdown(self, call: LiveCall) -> None:
        """Each call ends ``incomplete`` with what it received on disk."""
        call.request_stop(SERVER_SHUTDOWN)

    def _forget_all(self) -> None:
        self.calls.clear()


# --------------------------------------------------------------------------- a robot participant


class BankRobot:
    """A robot in the participant's place, for dry runs, tests and benchmarks: whenever the
    participant source expects a plan (``LiveParticipant.pending``), it speaks that plan's
    frozen realization from the task's bank (the one the simulator would select) into the
    microphone, 40 ms per frame, after ``reaction_ms``. Use it as a call's ``feeder``; its
    :meth:`asr` stands in for speech recognition with the realization text (labelled
    ``bank-text``). Not thread-safe: one robot per call, driven from the call's thread."""

    name = "bank-text"

    def __init__(self, task: TaskSpec, seed: int = 0, reaction_ms: int = 200,
                 max_utterances: int | None = None) -> None:
        from runtime.speechbank.bank import BankPlayer

        self.task = task
        self.seed = seed
        self.reaction_ms = reaction_ms
        self.max_utterances = max_utterances
        self._bank = BankPlayer(task)
        self._queue: list[Pcm] = []
        self._answered: set[tuple[str, int]] = set()
        self.spoken: list[tuple[int, str, str]] = []
        """``(t_media_ms, plan id, text)`` of each utterance started."""
        self.last_text = ""

    def __call__(self, t_media_ms: int, call: LiveCall) -> Pcm | None:
        if not self._queue:
            self._maybe_start(t_media_ms, call.participant)
        return self._queue.pop(0) if self._queue else None

    def _maybe_start(self, t_ms: int, participant: LiveUser) -> None:
        from runtime.core.audio import frames
        from runtime.user.simulator import select_realization

        if self.max_utterances is not None and len(self.spoken) >= self.max_utterances:
            return
        pending = participant.pending
        if pending is None or (pending.plan_id, pending.shown_ms) in self._answered:
            return
        if t_ms - pending.shown_ms < self.reaction_ms:
            return
        plan = self.task.plan(pending.plan_id)
        if plan is None or not plan.realizations:
            return
        self._answered.add((pending.plan_id, pending.shown_ms))
        real = select_realization(self.task.id, self.seed, plan)
        self._queue = frames(self._bank.audio(real.id, real.audio))
        self.spoken.append((t_ms, plan.id, real.text))
        self.last_text = real.text

    def asr(self) -> Any:
        """An ASR stand-in returning the text of the utterance the robot spoke last."""
        robot = self

        class _Transcript:
            name = "bank-text"

            def transcribe(self, pcm: Pcm, sample_rate: int = 24_000, *,
                           prompt: str | None = None) -> str:
                del pcm, sample_rate, prompt
                return robot.last_text

        return _Transcript()


# --------------------------------------------------------------------------- crash recovery


def recover_interrupted(engine: Engine, runs_dir: Path, *, me: str = PROCESS) -> list[int]:
    """At server start: every session still ``running`` whose holder is gone
    (:func:`holder_is_gone`) was cut off by a stop of its server. Mark it ``incomplete`` (with
    a detail saying so) and repair its run directory so it reads and grades; the live calls of
    other app processes serving the same study are left alone. Then every other half-written
    run under ``runs_dir`` (live demos, campaigns) is repaired the same way
    (:func:`runtime.core.rundir.recover_runs`; runs still being written by a live process are
    left alone). Returns the session ids recovered."""
    recovered: list[int] = []
    with Session(engine) as db:
        rows = db.exec(select(LiveSession).where(col(LiveSession.state) == "running")).all()
        for row in rows:
            if not holder_is_gone(row.holder, me):
                log.info("Study B session %s is running in another app process (%s): left "
                         "alone", row.id, row.holder)
                continue
            state, detail = "incomplete", RECOVERED
            run_dir = (runs_dir / row.run_dir).resolve() if row.run_dir else None
            if run_dir is not None and runs_dir.resolve() not in run_dir.parents:
                run_dir = None
            if run_dir is not None and finished_run(run_dir):
                # The run ended on its own just before the stop; only its row was behind.
                state, detail = "complete", "the run had finished; recorded at start-up"
            elif run_dir is not None:
                try:
                    if not repair_run_dir(run_dir, detail):
                        detail += "; no run directory was written"
                except OSError as exc:
                    detail += f"; the run directory could not be repaired: {exc}"
            else:
                detail += "; no run directory was written"
            row.state, row.detail, row.ended_at = state, detail, now_utc()
            db.add(row)
            assert row.id is not None
            recovered.append(row.id)
        db.commit()
    for key in recovered:
        log.warning("Study B session %s was running when the server stopped: marked "
                    "incomplete", key)
    recover_runs(runs_dir)
    return recovered
