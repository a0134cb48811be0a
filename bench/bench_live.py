"""Study B live calls: server-side added latency and how many concurrent calls one server
sustains. Prints figures; asserts nothing.

Both sides run in this process over loopback (aioice limited to 127.0.0.1): a "browser" aiortc
peer sends a pulse train as its microphone (100 ms of 1 kHz every 1.02 s, 20 ms stereo 48 kHz
frames paced in real time) and drains the agent's track; the server side is an ordinary
:class:`app.live.LiveCall` on the realtime media clock with a pulse agent (it records when each
user pulse reaches its ``send_audio`` and answers with a pulse of its own every second).

1. **Mic → agent adapter**: from the moment aiortc hands the decoded frame holding a pulse's
   onset to the server (``MicSink`` arrival, after aiortc's jitter buffer) to the moment the
   orchestrator hands the 40 ms frame holding that onset to the agent adapter's ``send_audio``
   (through ``LiveParticipant``'s buffer and the media clock's 40 ms tick). Baseline in the same
   run: the conversion alone (decode hand-over → downmix + 2:1 FIR to 24 kHz), the floor of any
   path.
2. **Agent → encoder**: from the orchestrator's ``on_frame`` (the agent frame as written to the
   trace) to aiortc's encoder taking it (``ChannelTrack.recv``), i.e. the 20 ms resampled
   frames' wait in the ``AudioFeed``. Baseline in the same run: the
   live demo's agent channel (``DemoSession``, the same feed and track), frozen simulator user.
3. **Concurrent calls**: N = 1, 2, 4, 8, … calls at once (each with its own browser peer in
   this process, so the CPU cost of both ends is counted: a conservative figure); a media frame
   "slips" when the orchestrator writes it more than one frame (40 ms) after its deadline. The
   series stops when more than 5 % of frames slip, more than 5 % of the microphone frames the
   agent gets are gaps (underruns), or agent audio waits over 200 ms (p95). The participant's
   ASR is replaced by a no-op (the pulses are not speech); ``--asr`` times faster-whisper on
   one utterance to add.

Usage: .venv/bin/python bench/bench_live.py [--seconds 12] [--levels 1,2,4,8,16] [--asr]
       (figures also go to bench/out/live.json)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.demo import DemoManager  # noqa: E402  (after the path set-up above)
from app.live import CallPlan, CallProbes, LiveCall, LiveCallManager  # noqa: E402
from app.robot_peer import connect_browser  # noqa: E402
from app.rtc import discard_track, recorded_mic_track_class  # noqa: E402
from runtime.agents.base import (  # noqa: E402
    AgentEvent,
    AgentSessionConfig,
    AudioDelta,
    ResponseDone,
)
from runtime.audio import FRAME_MS, SAMPLE_RATE, Pcm, rms  # noqa: E402
from runtime.campaign import AgentFactory, parse_agent_spec  # noqa: E402
from runtime.live_user import LiveParticipant  # noqa: E402
from runtime.spec import TaskSpec, find_task  # noqa: E402

TASK = "apexv1_051"
PULSE_S, PERIOD_S = 0.1, 1.02
"""1.02 s = 51 browser frames: successive onsets fall alternately in the first and the second
20 ms of a 40 ms media frame, as real speech onsets fall anywhere in it (a 1.00 s period would
put every onset at the same phase and measure only that one case)."""
ONSET_RMS = 1500.0
drains: list[asyncio.Task[None]] = []
"""Tasks draining the agent's track at each browser peer (kept referenced)."""


def loopback_only_ice() -> None:
    import aioice.ice

    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: (  # type: ignore[assignment]
        ["127.0.0.1"] if use_ipv4 else [])


def pulse_train(rate: int, seconds: float) -> Pcm:
    t = np.arange(int(rate * seconds)) / rate
    on = (t % PERIOD_S) < PULSE_S
    return (on * 0.5 * np.sin(2 * np.pi * 1000 * t) * 32767).astype(np.int16)


class Onsets:
    """Times at which quiet turns loud (one per pulse)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._quiet = 10

    def push(self, pcm: Pcm, at: float) -> None:
        if rms(pcm) >= ONSET_RMS:
            if self._quiet >= 5:
                self.times.append(at)
            self._quiet = 0
        else:
            self._quiet += 1


class PulseAgent:
    """An agent adapter that notes when user pulses arrive and speaks a pulse every second."""

    name = "bench-pulse"

    def __init__(self) -> None:
        self.heard = Onsets()
        self._next_ms = 1000
        self._pulse = pulse_train(SAMPLE_RATE, PULSE_S)

    async def connect(self, config: AgentSessionConfig) -> None:
        del config

    async def send_audio(self, frame: Pcm, t_media_ms: int) -> None:
        self.heard.push(frame, time.monotonic())

    async def send_tool_result(self, call_id: str, output: dict[str, Any]) -> None:
        del call_id, output

    async def poll(self, t_media_ms: int) -> list[AgentEvent]:
        if t_media_ms >= self._next_ms:
            self._next_ms += 1000
            return [AudioDelta(pcm=self._pulse), ResponseDone()]
        return []

    async def truncated(self, heard_ms: int) -> None:
        del heard_ms

    async def close(self) -> None:
        pass


class _NoASR:
    name = "none"

    def transcribe(self, pcm: Pcm, sample_rate: int = SAMPLE_RATE, *,
                   prompt: str | None = None) -> str:
        return ""


def _mic_track(seconds: float) -> Any:
    return recorded_mic_track_class()(pulse_train(48_000, seconds), True)


async def _browser(call: LiveCall, seconds: float) -> Any:
    return await connect_browser(call, _mic_track(seconds), drains)


class CallMeasures:
    def __init__(self) -> None:
        self.mic = Onsets()
        self.convert_ms: list[float] = []
        self.agent_out_ms: list[float] = []
        self.frames: list[tuple[int, float, float]] = []

    def probes(self) -> CallProbes:
        def mic(at: float, pcm: Pcm) -> None:
            self.convert_ms.append((time.monotonic() - at) * 1000)
            self.mic.push(pcm, at)

        return CallProbes(mic=mic, agent_out=lambda s: self.agent_out_ms.append(s * 1000),
                          frame=lambda t, due: self.frames.append((t, time.monotonic(), due)))


def pair_latencies(sent: list[float], heard: list[float]) -> list[float]:
    """Each heard onset against the latest sent onset before it (within 0.5 s), in ms."""
    out = []
    for h in heard:
        before = [s for s in sent if s <= h and h - s < 0.5]
        if before:
            out.append((h - before[-1]) * 1000)
    return out


def slip_fraction(frames: list[tuple[int, float, float]]) -> float:
    """Frames written more than one frame (40 ms) after the media clock's own deadline for
    them. Each entry is ``(t_media_ms, written_at, deadline)`` in ``time.monotonic()`` seconds;
    the deadline comes from the clock (``MediaClock.deadline``), never from the frames
    themselves: the microphone pacer may take a frame up to 40 ms *early*, so an origin fitted
    to the earliest frame would count on-time frames as late (issue 20)."""
    if len(frames) < 10:
        return float("nan")
    frames = frames[25:]  # the first second: connection set-up
    late = sum(1 for _, written, due in frames if written - due > FRAME_MS / 1000)
    return late / len(frames)


def stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    arr = np.asarray(values)
    return {"n": len(values), "median_ms": round(float(np.median(arr)), 2),
            "p95_ms": round(float(np.percentile(arr, 95)), 2),
            "max_ms": round(float(arr.max()), 2)}


def _factory(agents: list[PulseAgent]) -> AgentFactory:
    def make(task: TaskSpec) -> PulseAgent:
        agent = PulseAgent()
        agents.append(agent)
        return agent

    return AgentFactory("bench-pulse", make)  # type: ignore[arg-type]


async def run_calls(n: int, seconds: float, work: Path) -> dict[str, Any]:
    task = find_task(TASK)
    agents: list[PulseAgent] = []
    manager = LiveCallManager(
        work / f"runs-{n}", reap_every_s=3600, max_calls=n, asr_factory=lambda: None,
        participant_factory=lambda t, s, a: LiveParticipant(t, seed=s, asr=_NoASR()),
        limits={"max_duration_ms": int(seconds * 1000), "idle_timeout_ms": 10**7})
    measures = [CallMeasures() for _ in range(n)]
    calls = []
    for k in range(n):
        rel = f"bench/{n}/{k}"
        plan = CallPlan(key=k, task=task, factory=_factory(agents),
                        run_dir=manager.runs_dir / rel, run_rel=rel)
        calls.append(await manager.open(plan, probes=measures[k].probes()))
    peers = [await _browser(call, seconds + 5) for call in calls]
    deadline = time.monotonic() + seconds + 60
    while not all(c.done for c in calls) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    for pc in peers:
        await pc.close()
    await manager.close()
    mic_ms: list[float] = []
    convert: list[float] = []
    out_ms: list[float] = []
    slips = []
    gaps = [c.participant.stats["underruns"] / max(1, c.participant.stats["frames_out"])  # type: ignore[attr-defined]
            for c in calls]
    for m, agent in zip(measures, agents, strict=False):
        mic_ms += pair_latencies(m.mic.times, agent.heard.times)
        convert += m.convert_ms
        out_ms += m.agent_out_ms
        slips.append(slip_fraction(m.frames))
    return {"calls": n, "states": [c.state for c in calls], "mic_to_adapter": stats(mic_ms),
            "mic_conversion_baseline": stats(convert), "agent_to_encoder": stats(out_ms),
            "slipped_fraction": round(max(slips), 4) if slips else None,
            "slipped_per_call": [round(s, 4) for s in slips],
            "mic_underrun_fraction": round(max(gaps), 4) if gaps else None,
            "mic_trimmed_ms": [c.mic_trimmed * 1000 // SAMPLE_RATE for c in calls]}


async def demo_baseline(seconds: float, work: Path) -> dict[str, Any]:
    """The live demo's agent channel through the same feed and track (frozen user)."""
    from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

    manager = DemoManager(work / "demo-runs", limits={"max_duration_ms": int(seconds * 1000)})
    session = manager.create(find_task("apexv1_070"), parse_agent_spec("scripted:oracle"),
                             owner="bench")
    waits: list[float] = []
    session.feeds[1].probe = lambda s: waits.append(s * 1000)
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    pc.addTransceiver("audio", direction="recvonly")
    pc.addTransceiver("audio", direction="recvonly")

    @pc.on("track")
    def _on_track(track: Any) -> None:
        drains.append(asyncio.ensure_future(discard_track(track)))

    await pc.setLocalDescription(await pc.createOffer())
    answer = await session.answer(pc.localDescription.sdp, "offer")
    await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type="answer"))
    deadline = time.monotonic() + seconds + 60
    while not session.done and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    await pc.close()
    await manager.close()
    return {"agent_to_encoder": stats(waits)}


def asr_cost() -> dict[str, Any]:
    from runtime.bank import BankPlayer
    from runtime.simulator import select_realization
    from runtime.speech.asr import shared_asr

    task = find_task(TASK)
    plan = task.plan("opening")
    assert plan is not None
    real = select_realization(task.id, 0, plan)
    pcm = BankPlayer(task).audio(real.id, real.audio)
    asr = shared_asr()
    asr.transcribe(pcm)
    t0 = time.monotonic()
    asr.transcribe(pcm)
    return {"utterance_s": round(len(pcm) / SAMPLE_RATE, 2),
            "transcribe_s": round(time.monotonic() - t0, 3)}


def sustains(r: dict[str, Any]) -> bool:
    """A level is sustained when at most 5 % of media frames slip, at most 5 % of the
    microphone frames the agent gets are gaps, and agent audio waits under 200 ms (p95)."""
    slipped, gaps = r["slipped_fraction"], r["mic_underrun_fraction"]
    wait = r["agent_to_encoder"].get("p95_ms", float("inf"))
    return (slipped is not None and slipped <= 0.05 and gaps is not None and gaps <= 0.05
            and wait < 200)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    loopback_only_ice()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print("latency, one call ...", flush=True)
        out["one_call"] = await run_calls(1, args.seconds, work)
        print("baseline: the live demo's agent channel ...", flush=True)
        out["demo_baseline"] = await demo_baseline(args.seconds, work)
        series = []
        for n in args.levels:
            print(f"{n} concurrent calls ...", flush=True)
            result = await run_calls(n, args.seconds, work)
            series.append(result)
            if not sustains(result):
                break
        out["concurrency"] = series
    if args.asr:
        out["asr"] = asr_cost()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--levels", default="1,2,4,8,16")
    parser.add_argument("--asr", action="store_true")
    args = parser.parse_args()
    args.levels = [int(x) for x in args.levels.split(",")]
    out = asyncio.run(main_async(args))
    one = out["one_call"]
    print("\nserver-side added latency (one call, jitter buffers excluded)")
    for name in ("mic_to_adapter", "mic_conversion_baseline", "agent_to_encoder"):
        print(f"  {name:24s} {one[name]}")
    print(f"  {'demo agent_to_encoder':24s} {out['demo_baseline']['agent_to_encoder']}")
    print("\nconcurrent live calls (stop when > 5 % of frames slip > 40 ms, > 5 % of mic "
          "frames are gaps, or agent audio waits > 200 ms p95)")
    sustained = 0
    for r in out["concurrency"]:
        ok = sustains(r)
        sustained = r["calls"] if ok else sustained
        print(f"  N={r['calls']:3d}  slipped {r['slipped_fraction']:.2%}  "
              f"mic→adapter median {r['mic_to_adapter'].get('median_ms')} ms  "
              f"agent→encoder median {r['agent_to_encoder'].get('median_ms')} ms  "
              f"mic underruns {r['mic_underrun_fraction']:.1%}  "
              f"states {sorted(set(r['states']))}")
    print(f"  sustained: {sustained} concurrent calls")
    out["sustained_calls"] = sustained
    if "asr" in out:
        print(f"\nASR (faster-whisper tiny.en): {out['asr']}")
    dest = ROOT / "bench" / "out"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "live.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
