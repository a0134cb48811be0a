"""The full-duplex orchestrator on one media clock (paper §3.3, appendix B.3–B.4).

Every 40 ms of media time it takes one user frame from the user source, streams it to the agent,
collects the agent's events (audio, transcript, tool calls, interruptions), runs tool calls in
the Voice Workbench, plays agent audio out on the media clock (dropping the unplayed remainder
when the agent yields, and logging the truncation), fires authored duplex and world events at
their anchors, and writes both channels to the stereo trace and every fact to the event log.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from runtime.agents.base import (
    AgentAdapter,
    AgentErrorSignal,
    AgentSessionConfig,
    AudioDelta,
    Hangup,
    InfrastructureError,
    Interrupted,
    ProtocolUnknown,
    ResponseDone,
    ToolCallRequest,
    TranscriptDone,
)
from runtime.core.audio import (
    FRAME_MS,
    FRAME_SAMPLES,
    SAMPLE_RATE,
    SILENT_FRAME,
    STEADY_MAX_FRAMES,
    Pcm,
    TraceWriter,
    frames_before,
    silence,
    silent_block,
)
from runtime.core.events import (
    AgentAct,
    AgentErrorEvent,
    AgentHangup,
    AgentProtocolUnknown,
    AgentSpeechEnd,
    AgentSpeechStart,
    AgentTranscript,
    AgentTruncated,
    ArtifactUpdate,
    AuthHold,
    ClockMode,
    EndReason,
    Event,
    EventLog,
    SessionEnd,
    SessionStart,
    ToolCall,
    WorldEventFired,
    failure_class_of,
)
from runtime.core.rundir import RunDir, RunMeta
from runtime.core.spec import Lifecycle, PredLifecycle, TaskSpec, WorldEvent, agent_instructions
from runtime.session.observer import Act, SemanticActObserver
from runtime.session.workbench import Workbench, tool_schemas
from runtime.user.simulator import UserFrame, UserSource

FrameObserver = Callable[[Pcm, Pcm, int], None]
"""``on_frame(user_pcm, agent_pcm, t_media_ms)``: both channels of each 40 ms frame as written
to the trace. It may raise ``InfrastructureError`` to end the run (a live viewer went away)."""
EventObserver = Callable[[Event], None]
"""``on_event(event)``: every event right after the event log wrote it."""
AUTH_HOLD_MS = 3000
"""Longest media time an approval-gated tool call is held while a live participant's
authorization decision is still being computed (``UserSource.authorization_pending``)."""
HEARD_TAIL_MS = 600
"""An agent turn cut by the user's speech with at most this much of its audio left unplayed
(and all of it generated) counts as heard: its acts reach the user source as a finished turn.
People start answering while a question ends; the question was heard."""


@runtime_checkable
class FramePacer(Protocol):
    """A user source fed by a live device (a participant's microphone). In realtime mode the
    clock takes its next frame as soon as the device has delivered all of it, rather than at
    the frame's fixed deadline: a sample then waits only for its own 40 ms frame to fill, not
    also for the next tick of a clock out of phase with the microphone."""

    def frame_ready(self) -> bool:
        """True when a whole frame of device audio is waiting."""
        ...

    def set_frame_waiter(self, wake: Callable[[], None] | None) -> None:
        """``wake`` is called (from any thread) once a whole frame is waiting; None clears."""
        ...


VIRTUAL_YIELD_MS = 5_000
"""On the virtual clock, a run lets the others on its event loop go every this much media
(a few milliseconds of wall time)."""


class MediaClock:
    """Media time in whole frames. ``virtual`` advances as fast as the participants allow;
    ``realtime`` paces each frame against the wall clock (live humans, real APIs).

    With a :class:`FramePacer` in realtime mode, frame *n* is taken when the device has
    delivered it, but never earlier than one frame before its deadline (the clock never runs
    ahead of the wall clock by more than a frame) nor later than half a frame after it (a
    device that stalls or is gone gets silence on time)."""

    EARLY_FRAMES = 1.0
    LATE_FRAMES = 0.5

    def __init__(self, mode: ClockMode, frame_ms: int = FRAME_MS,
                 pacer: FramePacer | None = None) -> None:
        self.mode = mode
        self.frame_ms = frame_ms
        self.t_ms = 0
        self.pacer = pacer
        self._start = time.monotonic()

    def deadline(self, t_ms: int) -> float:
        """When (``time.monotonic()``) the frame at media time ``t_ms`` is due in realtime mode
        (the frame ending at ``t_ms + frame_ms`` is written by then)."""
        return self._start + t_ms / 1000

    def anchor(self) -> None:
        """Pace from now on: the wall-clock origin moves so that ``t_ms`` is due now (called
        once the agent is connected, so a slow handshake does not put the first frames
        behind their deadlines)."""
        self._start = time.monotonic() - self.t_ms / 1000

    async def tick(self) -> None:
        self.t_ms += self.frame_ms
        if self.mode == "realtime":
            deadline = self._start + self.t_ms / 1000
            if self.pacer is not None:
                await self._paced(deadline, self.pacer)
                return
            delay = deadline - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        elif self.t_ms % VIRTUAL_YIELD_MS == 0:
            await asyncio.sleep(0)  # let concurrent runs share the event loop

    async def skip(self, frames: int) -> None:
        """Virtual mode: move ``frames`` frames on at once (a steady stretch)."""
        before = self.t_ms
        self.t_ms += frames * self.frame_ms
        if self.t_ms // VIRTUAL_YIELD_MS != before // VIRTUAL_YIELD_MS:
            await asyncio.sleep(0)

    async def _paced(self, deadline: float, pacer: FramePacer) -> None:
        frame_s = self.frame_ms / 1000
        early = deadline - self.EARLY_FRAMES * frame_s
        late = deadline + self.LATE_FRAMES * frame_s
        wait = early - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        if pacer.frame_ready():
            return
        loop = asyncio.get_running_loop()
        arrived = asyncio.Event()

        def wake() -> None:
            loop.call_soon_threadsafe(arrived.set)

        pacer.set_frame_waiter(wake)
        try:
            if pacer.frame_ready():  # it came while the waiter was being set
                return
            timeout = late - time.monotonic()
            if timeout > 0:
                # Late or gone: the source gives silence for this frame.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(arrived.wait(), timeout)
        finally:
            pacer.set_frame_waiter(None)


@dataclass
class _Playout:
    """Agent audio received faster than real time, played out 40 ms per tick."""

    turn: int = 0
    buffer: Pcm = field(default_factory=lambda: np.zeros(0, dtype=np.int16))
    speaking: bool = False
    played: int = 0
    response_done: bool = True
    acts: list[Act] = field(default_factory=list)


@dataclass
class _Tick:
    """What the loop carries from one frame to the next."""

    pending_world: dict[str, WorldEvent]
    last_activity: int = 0
    """Media time of the last speech, audio played or tool call (idle and grace timers)."""
    terminal_at: int | None = None
    hangup: bool = False
    user_goodbye: bool = False
    held: list[ToolCallRequest] = field(default_factory=list)
    """Tool calls held while a live participant's authorization decision is computed."""
    held_since: int = 0


@dataclass
class RunResult:
    run_dir: Path
    end_reason: EndReason
    failure_class: str
    media_ms: int
    wall_s: float


class Orchestrator:
    def __init__(
        self,
        task: TaskSpec,
        agent: AgentAdapter,
        user: UserSource,
        run_dir: Path,
        *,
        agent_spec: str,
        seed: int,
        clock: ClockMode = "virtual",
        wall_clock_in_log: bool = True,
        meta_extra: dict[str, Any] | None = None,
        on_frame: FrameObserver | None = None,
        on_event: EventObserver | None = None,
        steady_stretches: bool = True,
    ) -> None:
        self.task = task
        self.agent = agent
        self.user = user
        self.run_dir = run_dir
        self.agent_spec = agent_spec
        self.seed = seed
        self.clock = MediaClock(
            clock, pacer=user if isinstance(user, FramePacer) and clock == "realtime" else None,
        )
        self._wall_in_log = wall_clock_in_log
        self._meta_extra = meta_extra or {}
        self._on_frame = on_frame
        self._on_event = on_event
        self.observer = SemanticActObserver.for_task(task)
        self._terminal = [p for p in task.grading.terminal if isinstance(p, PredLifecycle)]
        self._terminal_stale = True
        """An artifact may have changed since :meth:`_terminal_reached` last looked (every
        artifact change comes through :meth:`_on_workbench_event`)."""
        self._terminal_now = False
        self._gated_tools = {r.tool for r in task.authorization}
        self._play: _Playout | None = None
        self._steady = steady_stretches and clock == "virtual" and on_frame is None
        """Move through steady stretches in one step (:meth:`_steady_stretch`); off for the
        realtime clock and when someone watches each frame. Off gives the same run."""
        self.frames_in_stretches = 0

    # ------------------------------------------------------------------ helpers

    def _emit(self, event: Event) -> Event:
        emitted = self.log.emit(event, self.clock.t_ms)
        if self._on_event is not None:
            self._on_event(emitted)
        return emitted

    def _terminal_reached(self) -> bool:
        if not self._terminal:
            return False
        for pred in self._terminal:
            art = self.workbench.artifacts.get(pred.artifact)
            if art is None or not pred.holds_for(art.lifecycle):
                return False
        return True

    def _start_meta(self) -> RunMeta:
        return RunMeta.model_validate({
            "task_id": self.task.id, "task_version": self.task.version,
            "agent": self.agent_spec, "seed": self.seed, "clock": self.clock.mode,
            "sample_rate": SAMPLE_RATE, "frame_ms": FRAME_MS, "status": "running",
            **self._meta_extra,
        })

    # ------------------------------------------------------------------ the loop

    async def run(self) -> RunResult:
        """One run, start to end. Whatever happens after the run directory is opened, the
        event log and trace are closed and ``meta.json`` stops saying ``running``: a run that
        could not even connect ends ``infrastructure_error`` (or re-raises a configuration
        error after recording it)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        record = RunDir(self.run_dir)
        meta = self._start_meta()
        wall0 = time.monotonic()
        self.log = EventLog(self.run_dir / "events.jsonl", wall_clock=self._wall_in_log)
        try:
            self.trace = TraceWriter(self.run_dir / "trace.wav")
            self.workbench = Workbench(self.task, self._on_workbench_event)
            record.write_meta(meta)
            self._emit(SessionStart(
                task_id=self.task.id, task_version=self.task.version, agent=self.agent_spec,
                seed=self.seed, clock=self.clock.mode, sample_rate=SAMPLE_RATE,
                frame_ms=FRAME_MS,
            ))
            reason, detail = await self._converse()
            failure = failure_class_of(reason)
            self._emit(SessionEnd(reason=reason, failure_class=failure, detail=detail))
        except BaseException as exc:  # a configuration error at connect, a cancelled task
            self._abandon(record, meta, f"the run stopped before it ended: "
                                        f"{type(exc).__name__}: {exc}")
            raise
        finally:
            with contextlib.suppress(AttributeError):  # no trace: the log alone was opened
                self.trace.close()
            self.log.close()
        wall = time.monotonic() - wall0
        record.write_meta(meta.ended(reason, failure, self.clock.t_ms, wall_s=round(wall, 3)))
        return RunResult(self.run_dir, reason, failure, self.clock.t_ms, wall)

    def _abandon(self, record: RunDir, meta: RunMeta, detail: str) -> None:
        """Record a run that stopped by an exception: ``session.end`` (infrastructure) in its
        log when it can still be written, and ``meta.json`` ``incomplete`` with why."""
        with contextlib.suppress(Exception):
            self._emit(SessionEnd(reason="infrastructure_error",
                                  failure_class="infrastructure", detail=detail))
        with contextlib.suppress(Exception):
            record.write_meta(meta.ended("infrastructure_error", "infrastructure",
                                         self.clock.t_ms, status="incomplete",
                                         recovered=detail))

    async def _converse(self) -> tuple[EndReason, str]:
        """Connect the agent, run the loop, close the agent: the end reason and its detail.
        A configuration error at connect (``ProviderConfigError``) propagates, after the
        agent is closed."""
        reason: EndReason
        detail = ""
        try:
            await self.agent.connect(AgentSessionConfig(
                task_id=self.task.id, instructions=agent_instructions(self.task),
                tools=tool_schemas(self.task), sample_rate=SAMPLE_RATE, clock=self.clock.mode,
            ))
            self.clock.anchor()
            try:
                reason, detail = await self._loop()
            except InfrastructureError:
                raise
            except Exception as exc:
                # A broken bank file or a bug on our side during the conversation is not the
                # agent's failure: the run ends as an infrastructure drop that names the fault,
                # and other runs go on. (A bad configuration at connect still stops the run
                # with its own message.)
                reason = "infrastructure_error"
                detail = f"harness error: {type(exc).__name__}: {exc}"
        except InfrastructureError as exc:
            reason, detail = "infrastructure_error", str(exc)
        finally:
            try:
                await self.agent.close()
            except Exception as exc:
                detail = detail or f"error while closing the agent: {exc}"
        return reason, detail

    @property
    def agent_audio_left_ms(self) -> int | None:
        """Agent audio received and not yet played, once the agent has finished generating
        its turn (None while it is silent or still generating): how soon its turn ends."""
        play = self._play
        if play is None or not play.speaking or not play.response_done:
            return None
        return len(play.buffer) * 1000 // SAMPLE_RATE

    async def _run_tool(self, ev: ToolCallRequest) -> None:
        self._emit(ToolCall(call_id=ev.call_id, name=ev.name, args=ev.args))
        result = self.workbench.call_tool(ev.call_id, ev.name, ev.args)
        payload = result.result if result.ok else {"error": result.error}
        await self.agent.send_tool_result(ev.call_id, payload)

    def _on_workbench_event(self, event: Event) -> Event:
        self._terminal_stale = True
        if isinstance(event, ArtifactUpdate):
            self.user.on_lifecycle(event.artifact_id, Lifecycle(event.lifecycle), event.changed)
        return self._emit(event)

    async def _steady_stretch(
        self, t: int, play: _Playout, pending_world: dict[str, WorldEvent], last_activity: int,
    ) -> int:
        """Move through the frames from ``t`` in which nothing can happen but audio, in one
        step: no event on either side, no world event or end condition due, the agent's
        audio (if any) playing on. The caller's audio, what the agent hears and what the
        trace gets are the same as one frame at a time; only the per-frame Python goes.
        Returns how many frames it moved (0: play the next frame the ordinary way)."""
        hear = getattr(self.agent, "hear_steady", None)
        steady_audio = getattr(self.user, "steady_audio", None)
        skip_frames = getattr(self.user, "skip_frames", None)
        if hear is None or steady_audio is None or skip_frames is None:
            return 0
        limits = self.task.limits
        n = min(STEADY_MAX_FRAMES, (limits.max_duration_ms - t) // FRAME_MS)
        if play.speaking:
            if not len(play.buffer):
                return 0
            n = min(n, -(-len(play.buffer) // FRAME_SAMPLES) - 1)  # the last one ends the turn
        elif not self.user.speaking:
            # Quiet: stop before the earliest an end condition could hold.
            quiet_end = last_activity + min(limits.end_grace_ms, limits.idle_timeout_ms)
            n = min(n, (quiet_end - t) // FRAME_MS)
        for world in pending_world.values():
            if world.after_plan is not None and world.after_plan in self.user.policy.spoken:
                return 0
            if world.at_ms is not None:
                n = min(n, frames_before(t, world.at_ms))
        if n <= 0:
            return 0
        pcm = steady_audio(t, n)
        heard = await hear(pcm, t) if len(pcm) else 0
        if not heard:
            return 0
        skip_frames(heard)
        size = heard * FRAME_SAMPLES
        agent_pcm = silent_block(heard)
        if play.speaking:
            agent_pcm, play.buffer = play.buffer[:size], play.buffer[size:]
            play.played += size
        self.trace.write(pcm[:size], agent_pcm)
        self.frames_in_stretches += heard
        await self.clock.skip(heard)
        return heard

    async def _loop(self) -> tuple[EndReason, str]:
        """The media clock's ticks until an end condition holds. Each tick, in order: world
        events fire, the user source gives its frame (and any authorization it carries), the
        agent's events are handled, one frame of agent audio plays out; then the agent's
        turn may end and the end conditions are checked. A steady stretch (nothing but audio
        can happen) moves many frames in one step instead."""
        tick = _Tick(pending_world={w.id: w for w in self.task.world_events})
        play = self._play = _Playout()
        while True:
            t = self.clock.t_ms
            stretch = 0
            if self._steady and not tick.held and not self._terminal_stale:
                stretch = await self._steady_stretch(t, play, tick.pending_world,
                                                     tick.last_activity)
                if stretch and (play.speaking or self.user.speaking):
                    tick.last_activity = t + (stretch - 1) * FRAME_MS
            if not stretch:
                self._fire_world_events(t, tick)
                frame = await self._user_frame(t, tick)
                fatal = await self._agent_events(t, tick)
                if fatal is not None:
                    return fatal
                await self._play_out(t, frame, tick)
            t = self.clock.t_ms
            self._end_agent_turn(t)
            ended = self._end_condition(t, tick)
            if ended is not None:
                return ended

    def _fire_world_events(self, t: int, tick: _Tick) -> None:
        """Seeded world events that are due (by media time or after a spoken plan)."""
        for wid, world in list(tick.pending_world.items()) if tick.pending_world else ():
            due = (world.at_ms is not None and t >= world.at_ms) or (
                world.after_plan is not None and world.after_plan in self.user.policy.spoken
            )
            if due:
                del tick.pending_world[wid]
                self._emit(WorldEventFired(event_id=wid, description=world.description))
                self.user.on_world_event(wid)

    async def _user_frame(self, t: int, tick: _Tick) -> UserFrame:
        """The user source's frame: its events logged, its authorization applied, held tool
        calls released once a live decision is in, and its audio sent to the agent."""
        # The user learns whether agent audio is playing: a duplex event logs whether it
        # overlapped agent speech.
        self.user.agent_audible = self._playout.speaking
        frame = self.user.next_frame(t)
        for user_event in frame.events:
            self._emit(user_event)
        self._authorize(frame)
        if (frame.finished is not None and frame.finished.ends_session) or frame.ends_session:
            tick.user_goodbye = True
        if tick.held and (
            not self.user.authorization_pending or t - tick.held_since >= AUTH_HOLD_MS
        ):
            self._emit(AuthHold(
                call_ids=[r.call_id for r in tick.held], tools=[r.name for r in tick.held],
                waited_ms=t - tick.held_since,
                outcome="expired" if self.user.authorization_pending else "decided",
            ))
            for req in tick.held:
                await self._run_tool(req)
            tick.held = []
            tick.last_activity = t
        if self.user.speaking:
            tick.last_activity = t
        if not frame.late:  # late microphone audio is sent when it arrives
            await self.agent.send_audio(frame.pcm, t)
        return frame

    def _authorize(self, frame: UserFrame) -> None:
        """The frame's one authorization effect on the Workbench: the authored grant or
        revocation of a plan whose utterance ended (frozen simulator), or the decision read
        from a live participant's speech."""
        plan = frame.finished
        auth = plan.authorization if plan is not None else None
        if plan is not None and auth is not None:
            evidence = f"plan {plan.id} spoken"
            if auth.grant:
                self.workbench.grant(auth.grant, plan_id=plan.id, evidence=evidence)
            if auth.revoke:
                self.workbench.revoke(auth.revoke, plan_id=plan.id, evidence=evidence)
        speech = frame.authorization
        if speech is not None:
            change = self.workbench.grant if speech.decision == "grant" else self.workbench.revoke
            change(speech.action, plan_id=speech.plan_id, evidence=speech.evidence)

    async def _agent_events(self, t: int, tick: _Tick) -> tuple[EndReason, str] | None:
        """Every event the agent produced this frame, in order; an end reason when one was
        a fatal error."""
        play = self._playout
        for ev in await self.agent.poll(t):
            if isinstance(ev, AudioDelta):
                self._agent_audio(t, ev)
            elif isinstance(ev, TranscriptDone):
                self._agent_transcript(ev)
            elif isinstance(ev, ToolCallRequest):
                await self._agent_tool_call(t, ev, tick)
            elif isinstance(ev, Interrupted):
                await self._agent_interrupted(t, ev)
            elif isinstance(ev, ResponseDone):
                play.response_done = True
            elif isinstance(ev, Hangup):
                tick.hangup = True
                self._emit(AgentHangup())
            elif isinstance(ev, ProtocolUnknown):
                self._emit(AgentProtocolUnknown(event_type=ev.event_type,
                                                message=ev.message[:300]))
            elif isinstance(ev, AgentErrorSignal):
                self._emit(AgentErrorEvent(category=ev.category, message=ev.message))
                if ev.fatal:
                    return "agent_error", ev.message
        return None

    def _agent_audio(self, t: int, ev: AudioDelta) -> None:
        """Agent audio joins the playout buffer; the first of a turn starts the turn."""
        play = self._playout
        if not play.speaking:
            play.turn += 1
            play.speaking, play.played = True, 0
            play.response_done = False
            self._emit(AgentSpeechStart(turn=play.turn))
            self.user.on_agent_speech_start(t)
        play.buffer = np.concatenate([play.buffer, ev.pcm])

    def _agent_transcript(self, ev: TranscriptDone) -> None:
        """The agent's words for its turn, and the acts the observer reads in them."""
        play = self._playout
        turn = play.turn + (0 if play.speaking else 1)
        self._emit(AgentTranscript(turn=turn, text=ev.text))
        for act in self.observer.observe(ev.text):
            play.acts.append(act)
            self._emit(AgentAct(
                turn=turn, act=act.act, field=act.field, artifact=act.artifact,
                action=act.action, text=act.text,
            ))

    async def _agent_tool_call(self, t: int, ev: ToolCallRequest, tick: _Tick) -> None:
        """Run a tool call now, or hold it while a live authorization decision is pending."""
        if tick.held or (ev.name in self._gated_tools and self.user.authorization_pending):
            # A live decision on the participant's last utterance is not in yet: the gated
            # call (and every call after it, in order) waits for it, so ASR latency never
            # blocks a commit the participant approved. The frozen simulator never has a
            # decision pending.
            if not tick.held:
                tick.held_since = t
            tick.held.append(ev)
            return
        await self._run_tool(ev)
        tick.last_activity = t

    async def _agent_interrupted(self, t: int, ev: Interrupted) -> None:
        """The agent stopped its turn (barge-in): the unplayed audio is dropped and logged."""
        play = self._playout
        if not (play.speaking and len(play.buffer)):
            return
        heard = play.played * 1000 // SAMPLE_RATE
        dropped = len(play.buffer) * 1000 // SAMPLE_RATE
        self._emit(AgentTruncated(turn=play.turn, heard_ms=heard, dropped_ms=dropped,
                                  reason=ev.reason))
        await self.agent.truncated(heard)
        play.buffer = play.buffer[:0]
        self._emit(AgentSpeechEnd(turn=play.turn, played_ms=heard))
        if play.response_done and dropped <= HEARD_TAIL_MS and play.acts:
            # Cut in its last moments: the turn was heard (the simulator and the live
            # participant answer it once they finish speaking).
            self.user.on_agent_turn_end(play.acts, t)
        play.speaking, play.acts = False, []

    async def _play_out(self, t: int, frame: UserFrame, tick: _Tick) -> None:
        """One frame of agent audio played on the media clock, both channels into the trace,
        and the clock moved on."""
        play = self._playout
        agent_frame = SILENT_FRAME
        if play.speaking and len(play.buffer):
            chunk = play.buffer[:FRAME_SAMPLES]
            play.buffer = play.buffer[FRAME_SAMPLES:]
            play.played += len(chunk)
            agent_frame = chunk if len(chunk) == FRAME_SAMPLES else np.concatenate(
                [chunk, silence(FRAME_SAMPLES - len(chunk))]
            )
            tick.last_activity = t
        self.trace.write(frame.pcm, agent_frame)
        if self._on_frame is not None:
            self._on_frame(frame.pcm, agent_frame, t)
        await self.clock.tick()

    def _end_agent_turn(self, t: int) -> None:
        """The agent's turn ends once its response is done and all of it has played."""
        play = self._playout
        if play.speaking and not len(play.buffer) and play.response_done:
            play.speaking = False
            self._emit(AgentSpeechEnd(
                turn=play.turn, played_ms=play.played * 1000 // SAMPLE_RATE,
            ))
            self.user.on_agent_turn_end(play.acts, t)
            play.acts = []

    def _end_condition(self, t: int, tick: _Tick) -> tuple[EndReason, str] | None:
        """Why the run ends now, if it does (B.4's end conditions, in order)."""
        limits = self.task.limits
        quiet = not self._playout.speaking and not self.user.speaking
        if self._terminal_stale:
            self._terminal_now, self._terminal_stale = self._terminal_reached(), False
        if self._terminal_now:
            tick.terminal_at = t if tick.terminal_at is None else tick.terminal_at
        else:
            tick.terminal_at = None  # left the terminal state (an edit sent it back to draft)
        if tick.hangup and quiet:
            return "agent_hangup", ""
        if tick.user_goodbye and quiet and t - tick.last_activity >= limits.end_grace_ms:
            return "user_goodbye", ""
        if (
            tick.terminal_at is not None and quiet and not self.user.busy
            and t - max(tick.last_activity, tick.terminal_at) >= limits.end_grace_ms
        ):
            return "terminal_state", ""
        if t >= limits.max_duration_ms:
            return "timeout", f"no terminal state after {limits.max_duration_ms} ms"
        if quiet and not self.user.busy and t - tick.last_activity >= limits.idle_timeout_ms:
            return "idle_timeout", f"nobody spoke for {limits.idle_timeout_ms} ms"
        return None

    @property
    def _playout(self) -> _Playout:
        assert self._play is not None, "the loop has not started"
        return self._play
