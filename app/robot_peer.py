"""A human-like robot participant over the real WebRTC path (Study B dry runs, tests, benches).

The robot (:class:`runtime.user.robot.HumanRobot`) plays the participant's browser: an aiortc peer
whose microphone track asks the robot for each 20 ms of audio, paced in real time, while the
server side is an ordinary :class:`app.live.LiveCall` — the same microphone sink, media clock,
VAD, transcription queue and recognizer as a person's call. The robot hears the run through
the call's event probe and reads the participant's state the way a person reads the role card.

``python -m app.robot_peer TASK…`` runs tasks against the scripted oracle and prints each
run's verdict (``bench/bench_robot_participant.py`` runs the whole suite with figures).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.live import CallPlan, CallProbes, LiveCall, LiveCallManager
from app.rtc import WEBRTC_FRAME, WEBRTC_RATE, discard_track, paced_mic_track
from runtime.core.audio import SAMPLE_RATE, Pcm, resample
from runtime.core.events import Event
from runtime.core.spec import TaskSpec
from runtime.user.live_user import LiveParticipant
from runtime.user.robot import HumanRobot, HumanTiming


class _Driver:
    """The robot between two threads: events arrive on the call's thread, audio is pulled on
    the event loop's (one lock)."""

    def __init__(self, call: LiveCall, timing: HumanTiming | None, seed: int) -> None:
        self.call = call
        self.lock = threading.Lock()
        participant = call.participant
        assert isinstance(participant, LiveParticipant), "a robot needs a LiveParticipant"

        def left() -> int | None:
            orch = call.orchestrator
            return orch.agent_audio_left_ms if orch is not None else None

        self.robot = HumanRobot(call.task, participant, seed=seed, timing=timing,
                                agent_audio_left_ms=left)
        self._pending = np.zeros(0, dtype=np.int16)

    def on_event(self, event: Event) -> None:
        with self.lock:
            self.robot.on_event(event)

    def next_20ms(self) -> Pcm:
        """48 kHz mono for the next browser frame."""
        while len(self._pending) < WEBRTC_FRAME:
            with self.lock:
                pcm = self.robot.frame(self.call.media_ms)
            self._pending = np.concatenate([self._pending, resample(pcm, SAMPLE_RATE,
                                                                    WEBRTC_RATE)])
        out, self._pending = self._pending[:WEBRTC_FRAME], self._pending[WEBRTC_FRAME:]
        return out


@dataclass
class RobotCall:
    call: LiveCall
    robot: HumanRobot
    pc: Any
    drains: list[asyncio.Task[None]]

    async def close(self) -> None:
        await self.pc.close()
        for task in self.drains:
            task.cancel()


async def connect_browser(call: LiveCall, mic: Any,
                          drains: list[asyncio.Task[None]]) -> Any:
    """A loopback aiortc peer in the participant's browser's place: sends ``mic`` (an aiortc
    track), drains the agent's track (tasks appended to ``drains``), and completes the offer /
    answer with ``call``. Returns the peer connection."""
    from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    pc.addTrack(mic)

    @pc.on("track")
    def _on_track(track: Any) -> None:
        drains.append(asyncio.ensure_future(discard_track(track)))

    await pc.setLocalDescription(await pc.createOffer())
    answer = await call.answer(pc.localDescription.sdp, "offer")
    await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type="answer"))
    return pc


async def connect_robot(manager: LiveCallManager, plan: CallPlan, *,
                        timing: HumanTiming | None = None) -> RobotCall:
    """Open ``plan``'s call on ``manager`` and connect a robot's browser to it (the run starts
    when the peer connects, as with a person)."""
    holder: dict[str, _Driver] = {}
    probes = CallProbes(event=lambda e: holder["d"].on_event(e) if "d" in holder else None)
    call = await manager.open(plan, probes=probes)
    driver = holder["d"] = _Driver(call, timing, plan.seed)
    drains: list[asyncio.Task[None]] = []
    pc = await connect_browser(call, paced_mic_track(driver.next_20ms), drains)
    return RobotCall(call, driver.robot, pc, drains)


async def run_robot_calls(
    tasks: Sequence[TaskSpec], work: Path, *, agent: str = "scripted:oracle",
    parallel: int = 4, timing: HumanTiming | None = None, seed: int = 0,
    manager: LiveCallManager | None = None, timeout_s: float = 600.0,
) -> list[RobotCall]:
    """Each task's call with a robot participant, ``parallel`` at a time, on the realtime
    clock over loopback WebRTC; returns the finished calls (their run directories hold the
    logs)."""
    from runtime.session.campaign import parse_agent_spec

    factory = parse_agent_spec(agent)
    own = manager is None
    mgr = manager or LiveCallManager(work / "runs", reap_every_s=3600, max_calls=parallel)
    done: list[RobotCall] = []
    queue = list(enumerate(tasks))
    running: list[RobotCall] = []
    deadline = time.monotonic() + timeout_s * max(1, len(tasks) // parallel + 1)
    try:
        while queue or running:
            while queue and len(running) < parallel:
                k, task = queue.pop(0)
                rel = f"robot/{task.id}-{k}"
                plan = CallPlan(key=k, task=task, factory=factory, run_dir=work / "runs" / rel,
                                run_rel=rel, seed=seed, meta={"robot": True})
                running.append(await connect_robot(mgr, plan, timing=timing))
            await asyncio.sleep(0.2)
            for rc in [r for r in running if r.call.done]:
                running.remove(rc)
                await rc.close()
                done.append(rc)
            if time.monotonic() > deadline:
                raise TimeoutError(f"robot calls still running after {timeout_s} s each: "
                                   f"{[r.call.task.id for r in running]}")
    finally:
        for rc in running:
            await rc.close()
        if own:
            await mgr.close()
    return done


def _loopback_only() -> None:
    import aioice.ice

    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: (
        ["127.0.0.1"] if use_ipv4 else [])


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import sys
    import tempfile

    from grading.gates import grade_run_dir
    from runtime.core.spec import default_tasks_dir, load_tasks

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("tasks", nargs="*", help="task ids (default: every bundled task)")
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--agent", default="scripted:oracle")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    _loopback_only()
    suite = {t.id: t for t in load_tasks([default_tasks_dir()])}
    unknown = [t for t in args.tasks if t not in suite]
    if unknown:
        print(f"unknown task id(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    chosen = [suite[t] for t in args.tasks] or list(suite.values())
    with tempfile.TemporaryDirectory() as tmp:
        calls = asyncio.run(run_robot_calls(chosen, Path(tmp), agent=args.agent,
                                            parallel=args.parallel))
        for rc in calls:
            grade = grade_run_dir(rc.call.run_dir, suite)
            print(f"{rc.call.task.id}  {rc.call.state:10s} WS={int(grade.WS)}  "
                  f"{dict(grade.gate_reasons) if not grade.WS else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
