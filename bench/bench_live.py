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

``--server-only`` (issue 18, point 3) measures the server alone: the live-call module as the
app runs it (``LiveCallManager``, ``LiveCall.answer``, the default ``LiveParticipant`` with the
process's faster-whisper ASR, VAD and transcription queue) in a subprocess of its own, the
participants' aiortc peers in this process, each sending a speech recording made of the task's
own bank utterances (looped, each participant from another point). The agent is a stand-in
(an agent in a real call is a remote provider; its adapter is I/O). It ramps the number of
concurrent calls until 1 % of the media frames are late (> 40 ms after the media clock's
deadline) and prints per step the late-frame share, the server's CPU per call (``/proc/<pid>/
stat`` user + system over the steady part of the step), the added latency (microphone frame
handed over by aiortc → the agent adapter's ``send_audio``; agent frame → encoder), the
capacity, the anchor (a minimal aiortc echo server in the same kind of subprocess, same
clients, same run) and a per-call cost breakdown by component (py-spy sampling every thread of
the server over one step, scaled to the threads' CPU from ``/proc``, :func:`breakdown`).

Usage: .venv/bin/python bench/bench_live.py [--seconds 12] [--levels 1,2,4,8,16] [--asr]
       .venv/bin/python bench/bench_live.py --server-only [--repeats 2] [--levels …]
       (figures also go to bench/out/live.json, bench/out/live_server.json)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
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
from runtime.core.audio import FRAME_MS, SAMPLE_RATE, Pcm, rms  # noqa: E402
from runtime.core.spec import TaskSpec, find_task  # noqa: E402
from runtime.session.campaign import AgentFactory, parse_agent_spec  # noqa: E402
from runtime.user.live_user import LiveParticipant  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from benchlib import load_line, load_now, ratio_line, spread  # noqa: E402

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
    """Times at which quiet turns loud (one per pulse): a frame of at least ``threshold`` RMS
    after at least ``quiet`` quieter frames."""

    def __init__(self, threshold: float = ONSET_RMS, quiet: int = 5) -> None:
        self.times: list[float] = []
        self.threshold = threshold
        self.quiet = quiet
        self._quiet = quiet * 2

    def push(self, pcm: Pcm, at: float) -> None:
        if rms(pcm) >= self.threshold:
            if self._quiet >= self.quiet:
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


def _factory(agents: list[PulseAgent], cls: type[PulseAgent] | None = None) -> AgentFactory:
    def make(task: TaskSpec) -> PulseAgent:
        agent = (cls or PulseAgent)()
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
    from runtime.speech.asr import shared_asr
    from runtime.speechbank.bank import BankPlayer
    from runtime.user.simulator import select_realization

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


# =========================================================================== --server-only
# The server (the live-call module as the app runs it: LiveCallManager, LiveCall.answer, the
# default participant with the process's faster-whisper ASR and transcription queue) runs in
# a subprocess of its own (``--serve app``); the participants' aiortc peers run in this
# process and send a speech WAV. The anchor (issue 20) is a minimal aiortc echo server in the
# same kind of subprocess (``--serve echo``), measured in the same run.

SPEECH_PLANS = ("opening", "ans_contact_name", "ans_account_id", "ans_invoices", "ans_card")
SPEECH_GAP_S = 1.5
SPEECH_ONSET_RMS = 500.0
SETTLE_S = 2.0
"""Seconds after every peer connected before the CPU window opens (connection set-up)."""
LATE_LIMIT = 0.01
"""A step is sustained when fewer than 1 % of the media frames are late (> 40 ms)."""


def speech_wav(task_id: str = TASK) -> Pcm:
    """The participant's voice at 48 kHz: a few of the task's own bank recordings (what a
    participant says in this task), each followed by ``SPEECH_GAP_S`` of silence."""
    from runtime.core.audio import resample
    from runtime.speechbank.bank import BankPlayer
    from runtime.user.simulator import select_realization

    task = find_task(task_id)
    player = BankPlayer(task)
    parts: list[Pcm] = []
    for plan_id in SPEECH_PLANS:
        plan = task.plan(plan_id)
        if plan is None or not plan.realizations:
            continue
        real = select_realization(task.id, 0, plan)
        parts += [player.audio(real.id, real.audio),
                  np.zeros(int(SAMPLE_RATE * SPEECH_GAP_S), dtype=np.int16)]
    return resample(np.concatenate(parts), SAMPLE_RATE, 48_000)


def proc_cpu_s(pid: int, stat: str | None = None) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads) from ``/proc/<pid>/stat``
    (fields 14 and 15, in clock ticks). ``stat``: the file's text, read when omitted."""
    import os

    text = stat if stat is not None else Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2:].split()  # the command may hold spaces and ")"
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15; state is 3)
    return ticks / os.sysconf("SC_CLK_TCK")


def cpu_per_call(cpu_start_s: float, cpu_end_s: float, wall_s: float, calls: int) -> float:
    """The share of one core each call costs: CPU seconds over the window / its wall seconds
    / the number of calls (0.10 = 10 % of a core)."""
    if wall_s <= 0 or calls <= 0:
        raise ValueError("a CPU window needs a positive duration and at least one call")
    return (cpu_end_s - cpu_start_s) / wall_s / calls


def late_fraction(frames_by_call: list[list[tuple[int, float, float]]]) -> tuple[float, float]:
    """(late frames / frames over every call, the worst call's fraction): a frame is late when
    the orchestrator writes it more than 40 ms after the media clock's deadline
    (:func:`slip_fraction`; the first second of each call is set-up and not counted)."""
    late = total = 0
    worst = 0.0
    for frames in frames_by_call:
        kept = frames[25:]
        n_late = sum(1 for _, written, due in kept if written - due > FRAME_MS / 1000)
        late, total = late + n_late, total + len(kept)
        if kept:
            worst = max(worst, n_late / len(kept))
    return (late / total if total else float("nan")), worst


def capacity(steps: list[dict[str, Any]], limit: float = LATE_LIMIT) -> int:
    """The largest number of calls sustained with fewer than ``limit`` late frames (median over
    a step's repeats), counting up the ramp and stopping at the first step that fails (a
    lucky larger step after a failed one does not count). 0 when even the first failed."""
    best = 0
    for step in sorted(steps, key=lambda s: s["calls"]):
        late = step["late_median"]
        if late != late or late >= limit:  # NaN (no frames) fails too
            break
        best = step["calls"]
    return best


# ---------------------------------------------------------------- the per-call cost breakdown

COMPONENTS = ("Opus decode/encode", "resampling", "ASR", "VAD", "orchestrator & participant",
              "event log", "trace WAV", "agent stand-in", "WebRTC transport (RTP/SRTP/ICE)",
              "event loops & thread hand-offs", "other")


def classify(stack: list[tuple[str, str]]) -> str:
    """The component a stack's CPU time belongs to. ``stack``: ``(file, function)`` innermost
    first; the innermost frame that matches a rule decides, rules in order (so a resampler
    called by the ASR counts as resampling, pydantic called by the event log counts as the
    event log)."""
    for path, func in stack:
        p = "/" + path.replace("\\", "/").lstrip("/")
        if p.endswith("/aiortc/codecs/opus.py"):
            return "Opus decode/encode"
        if ("/soxr/" in p or (p.endswith("/app/rtc.py") and func in ("process", "convert"))
                or (p.endswith("/runtime/core/audio.py") and func in ("resample", "push"))):
            return "resampling"
        if (p.endswith(("/runtime/speech/vad.py", "/runtime/agents/scripted.py"))
                or (p.endswith("/runtime/user/live_user.py") and func == "_track_voice")):
            return "VAD"
        if ("/faster_whisper/" in p or "/ctranslate2/" in p
                or p.endswith(("/runtime/speech/asr.py", "/runtime/speech/asr_queue.py"))
                or (p.endswith("/runtime/user/live_user.py") and func in ("_process",
                "_transcribe"))):
            return "ASR"
        if p.endswith("/runtime/core/durability.py") or (p.endswith("/runtime/core/events.py")
                                                    and func in ("emit", "close")):
            return "event log"
        if "/soundfile" in p or (p.endswith("/runtime/core/audio.py")
                                 and func in ("write", "flush", "close")):
            return "trace WAV"
        if p.endswith("/bench/bench_live.py"):
            return "agent stand-in"
        if "/runtime/" in p or p.endswith("/app/live.py"):
            return "orchestrator & participant"
        if (any(k in p for k in ("/aiortc/", "/aioice/", "/pylibsrtp/", "/av/", "/crypto"))
                or p.endswith("/app/rtc.py")):
            return "WebRTC transport (RTP/SRTP/ICE)"
        if ("/asyncio/" in p or "/concurrent/futures/" in p
                or p.endswith(("/threading.py", "/selectors.py", "/queue.py"))):
            return "event loops & thread hand-offs"
    return "other"


def parse_pyspy_raw(text: str) -> list[tuple[list[tuple[str, str]], float]]:
    """py-spy's ``--format raw`` (collapsed stacks: ``func (file:line);… count``, outermost
    first) as ``(stack innermost first, samples)``; ``thread``/``process`` frames dropped."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or " " not in line:
            continue
        frames_part, count = line.rsplit(" ", 1)
        stack = []
        for frame in frames_part.split(";"):
            if frame.startswith(("thread (", "process ")) or " (" not in frame:
                continue
            func, where = frame.rsplit(" (", 1)
            stack.append((where.rstrip(")").rsplit(":", 1)[0], func.strip()))
        out.append((stack[::-1], float(count)))
    return out


def attribute(samples: list[tuple[list[tuple[str, str]], float]]) -> dict[str, float]:
    """Weight (samples or seconds) per component (every component listed, zeros included)."""
    out = dict.fromkeys(COMPONENTS, 0.0)
    for stack, weight in samples:
        out[classify(stack)] += weight
    return out


def breakdown(samples: list[tuple[list[tuple[str, str]], float]], python_cpu_s: float,
              native_cpu_s: float, wall_s: float, calls: int) -> dict[str, Any]:
    """The server's CPU over a window split by component: the Python threads' CPU (measured)
    in proportion to the profiler's samples of them, plus the CPU of threads Python does not
    run (CTranslate2's pool: the ASR). Per component: CPU seconds, share of the server's CPU,
    share of a core per call."""
    counts = attribute(samples)
    total = sum(counts.values())
    cpu = {name: python_cpu_s * c / total for name, c in counts.items()} if total else {}
    cpu["ASR (CTranslate2's own threads)"] = native_cpu_s
    server = python_cpu_s + native_cpu_s
    rows = {name: {"cpu_s": round(s, 3), "share": round(s / server, 4) if server else 0.0,
                   "core_per_call": round(s / wall_s / calls, 4)}
            for name, s in sorted(cpu.items(), key=lambda kv: -kv[1]) if s > 0}
    return {"calls": calls, "wall_s": round(wall_s, 2), "server_cpu_s": round(server, 3),
            "core_per_call": round(server / wall_s / calls, 4), "samples": int(total),
            "components": rows}


def thread_cpu_s(pid: int) -> dict[int, float]:
    """CPU seconds of each thread of ``pid`` (``/proc/<pid>/task/<tid>/stat``)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError):
            out[int(task.name)] = proc_cpu_s(pid, (task / "stat").read_text())
    return out


# ---------------------------------------------------------------- the server process


class _AppServer:
    """The live-call module as the app runs it, driven over the control pipe."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.round = 0
        self.manager: LiveCallManager | None = None
        self.measures: list[CallMeasures] = []
        self.agents: list[PulseAgent] = []

    async def warm(self) -> dict[str, Any]:
        from app.live import default_asr
        from runtime.speech.asr_queue import shared_queue

        asr = await asyncio.to_thread(default_asr)
        shared_queue()
        return {"asr": getattr(asr, "name", None)}

    async def open(self, n: int, seconds: float) -> dict[str, Any]:
        self.round += 1
        task = find_task(TASK)
        self.agents = []
        self.manager = LiveCallManager(
            self.work / f"runs-{self.round}", reap_every_s=3600, max_calls=n,
            limits={"max_duration_ms": int(seconds * 1000), "idle_timeout_ms": 10**7})
        self.measures = []
        for k in range(n):
            m = CallMeasures()
            m.mic = Onsets(SPEECH_ONSET_RMS, quiet=15)  # 20 ms frames: 300 ms of quiet
            self.measures.append(m)
            rel = f"bench/{self.round}/{k}"
            plan = CallPlan(key=k, task=task, factory=_factory(self.agents, _SpeechPulseAgent),
                            run_dir=self.manager.runs_dir / rel, run_rel=rel)
            await self.manager.open(plan, probes=m.probes())
        return {"keys": list(range(n))}

    async def answer(self, key: int, sdp: str) -> dict[str, Any]:
        assert self.manager is not None
        call = self.manager.get(key)
        assert call is not None
        return await call.answer(sdp, "offer")

    async def threads(self) -> dict[str, Any]:
        import threading

        return {"python_tids": [t.native_id for t in threading.enumerate()]}

    async def finish(self, seconds: float) -> dict[str, Any]:
        from runtime.speech.asr_queue import shared_queue

        assert self.manager is not None
        calls = list(self.manager.calls.values())
        deadline = time.monotonic() + seconds + 60
        while not all(c.done for c in calls) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        queue = shared_queue()
        backlog = queue.waiting()
        await self.manager.close()
        mic_ms: list[float] = []
        out_ms: list[float] = []
        for m, agent in zip(self.measures, self.agents, strict=False):
            mic_ms += pair_latencies(m.mic.times, agent.heard.times)
            out_ms += m.agent_out_ms
        late, worst = late_fraction([m.frames for m in self.measures])
        return {"late": late, "worst_call_late": worst,
                "frames": sum(max(0, len(m.frames) - 25) for m in self.measures),
                "mic_to_adapter": stats(mic_ms), "agent_to_encoder": stats(out_ms),
                "underruns": max((c.participant.stats["underruns"]  # type: ignore[attr-defined]
                                  / max(1, c.participant.stats["frames_out"])  # type: ignore[attr-defined]
                                  for c in calls), default=0.0),
                "asr_jobs": sum(queue.served), "asr_backlog": backlog,
                "states": sorted({c.state for c in calls})}


class _SpeechPulseAgent(PulseAgent):
    """:class:`PulseAgent` whose onset detector fits speech (a lower level, 320 ms of quiet in
    40 ms frames) — the same rule as the microphone side's."""

    def __init__(self) -> None:
        super().__init__()
        self.heard = Onsets(SPEECH_ONSET_RMS, quiet=8)


class _EchoServer:
    """The anchor: a minimal aiortc echo server (each call's microphone track sent straight
    back: Opus decode, Opus encode, RTP/SRTP, nothing else)."""

    def __init__(self) -> None:
        self.pcs: list[Any] = []

    async def warm(self) -> dict[str, Any]:
        return {}

    async def open(self, n: int, seconds: float) -> dict[str, Any]:
        self.pcs = []
        return {"keys": list(range(n))}

    async def answer(self, key: int, sdp: str) -> dict[str, Any]:
        from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.pcs.append(pc)

        @pc.on("track")
        def _on_track(track: Any) -> None:
            pc.addTrack(track)

        await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="offer"))
        await pc.setLocalDescription(await pc.createAnswer())
        return {"sdp": pc.localDescription.sdp, "type": pc.localDescription.type}

    async def threads(self) -> dict[str, Any]:
        return {"python_tids": []}

    async def finish(self, seconds: float) -> dict[str, Any]:
        for pc in self.pcs:
            await pc.close()
        return {"late": float("nan"), "states": []}


async def serve(mode: str) -> None:
    """The server subprocess: JSON requests on stdin, one JSON reply a line on the original
    stdout (anything else printed goes to stderr)."""
    import os

    loopback_only_ice()
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    with tempfile.TemporaryDirectory() as tmp:
        server: Any = _AppServer(Path(tmp)) if mode == "app" else _EchoServer()
        out.write(json.dumps({"ok": await server.warm(), "pid": os.getpid()}) + "\n")
        while line := await reader.readline():
            req = json.loads(line)
            op = req.pop("op")
            if op == "quit":
                break
            try:
                reply = {"ok": await getattr(server, op)(**req)}
            except Exception as exc:  # reported to the driver, which stops
                reply = {"error": f"{type(exc).__name__}: {exc}"}
            out.write(json.dumps(reply) + "\n")


# ---------------------------------------------------------------- the driver (the clients)


class ServerProc:
    """A server subprocess and its control pipe."""

    def __init__(self, proc: asyncio.subprocess.Process, log_path: Path) -> None:
        self.proc = proc
        self.log_path = log_path
        self.pid = proc.pid

    @classmethod
    async def start(cls, mode: str, log_path: Path) -> ServerProc:
        log_fh = log_path.open("w")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(Path(__file__).resolve()), "--serve", mode,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=log_fh,
            limit=1 << 20)
        self = cls(proc, log_path)
        await self._reply(300)
        return self

    async def _reply(self, timeout: float) -> Any:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line:
            tail = self.log_path.read_text()[-2000:]
            raise RuntimeError(f"the server process exited:\n{tail}")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"server: {reply['error']}")
        return reply["ok"]

    async def call(self, op: str, timeout: float = 120, **kw: Any) -> Any:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"op": op, **kw}) + "\n").encode())
        await self.proc.stdin.drain()
        return await self._reply(timeout)

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            assert self.proc.stdin is not None
            self.proc.stdin.write(b'{"op": "quit"}\n')
            await self.proc.stdin.drain()
            await asyncio.wait_for(self.proc.wait(), 20)
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


async def client_step(server: ServerProc, n: int, seconds: float, speech48: Pcm,
                      profile: bool = False) -> dict[str, Any]:
    """One step: ``n`` participant peers in this process against the server process; the
    server's CPU over the steady part of the calls, and what the server measured."""
    import os

    from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

    keys = (await server.call("open", n=n, seconds=seconds))["keys"]
    pcs = []
    local_drains: list[asyncio.Task[None]] = []
    shift = len(speech48) // max(1, n)
    for k in keys:
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        # Each participant starts at another point of the recording (people do not speak in
        # step), looping.
        pc.addTrack(recorded_mic_track_class()(np.roll(speech48, -k * shift), True))

        @pc.on("track")
        def _on_track(track: Any) -> None:
            local_drains.append(asyncio.ensure_future(discard_track(track)))

        await pc.setLocalDescription(await pc.createOffer())
        ans = await server.call("answer", key=k, sdp=pc.localDescription.sdp)
        await pc.setRemoteDescription(RTCSessionDescription(sdp=ans["sdp"], type="answer"))
        pcs.append(pc)
    t_connect = time.monotonic()
    while (any(pc.connectionState != "connected" for pc in pcs)
           and time.monotonic() - t_connect < 30):
        await asyncio.sleep(0.05)
    await asyncio.sleep(SETTLE_S)
    window = max(1, int(seconds - SETTLE_S - 1.5))
    spy = None
    if profile:  # py-spy samples every thread from outside, without pausing the process
        spy_out = Path(tempfile.mkdtemp()) / "pyspy.txt"
        spy = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).parent / "py-spy"), "record", "-p", str(server.pid),
            "-d", str(window), "-r", "100", "-f", "raw", "--nonblocking", "-o", str(spy_out),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    threads_a = thread_cpu_s(server.pid)
    cpu_a, own_a, t_a = proc_cpu_s(server.pid), proc_cpu_s(os.getpid()), time.monotonic()
    await asyncio.sleep(window)
    cpu_b, own_b, t_b = proc_cpu_s(server.pid), proc_cpu_s(os.getpid()), time.monotonic()
    threads_b = thread_cpu_s(server.pid)
    cost = None
    if spy is not None:
        python_tids = set((await server.call("threads"))["python_tids"])
        await asyncio.wait_for(spy.wait(), 60)
        delta = {tid: cpu - threads_a.get(tid, 0.0) for tid, cpu in threads_b.items()}
        cost = breakdown(parse_pyspy_raw(spy_out.read_text()) if spy_out.exists() else [],
                         sum(d for t, d in delta.items() if t in python_tids),
                         sum(d for t, d in delta.items() if t not in python_tids),
                         t_b - t_a, n)
    result = await server.call("finish", seconds=seconds, timeout=seconds + 120)
    for pc in pcs:
        await pc.close()
    for task in local_drains:
        task.cancel()
    result.update(calls=n, server_core_per_call=cpu_per_call(cpu_a, cpu_b, t_b - t_a, n),
                  client_core_per_call=cpu_per_call(own_a, own_b, t_b - t_a, n),
                  window_s=round(t_b - t_a, 2))
    if cost is not None:
        result["breakdown"] = cost
    return result


def _median(values: list[float]) -> float:
    vals = [v for v in values if v == v]
    return float(np.median(vals)) if vals else float("nan")


async def server_only_async(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    loopback_only_ice()
    speech48 = speech_wav()
    out: dict[str, Any] = {"seconds": args.seconds, "repeats": args.repeats,
                           "speech_s": round(len(speech48) / 48_000, 1)}
    app = await ServerProc.start("app", work / "server-app.log")
    steps: list[dict[str, Any]] = []
    try:
        idle_a, t0 = proc_cpu_s(app.pid), time.monotonic()
        await asyncio.sleep(2.0)
        out["idle_server_cores"] = round((proc_cpu_s(app.pid) - idle_a)
                                         / (time.monotonic() - t0), 4)
        for n in args.levels:
            runs = []
            for r in range(args.repeats):
                print(f"  {n} calls, repeat {r + 1}/{args.repeats} ...", flush=True)
                runs.append(await client_step(app, n, args.seconds, speech48))
            step = summarize_step(n, runs)
            steps.append(step)
            print("  " + step_line(step), flush=True)
            if not step["late_median"] < LATE_LIMIT:
                break
        out["steps"] = steps
        out["capacity"] = capacity(steps)
        if args.breakdown_calls:
            print(f"  breakdown: {args.breakdown_calls} calls, sampled ...", flush=True)
            run = await client_step(app, args.breakdown_calls, args.seconds, speech48,
                                    profile=True)
            out["breakdown"] = run["breakdown"]
    finally:
        await app.stop()
    echo = await ServerProc.start("echo", work / "server-echo.log")
    try:
        runs = []
        for r in range(args.repeats):
            print(f"  anchor: echo server, {args.anchor_calls} calls, repeat {r + 1} ...",
                  flush=True)
            runs.append(await client_step(echo, args.anchor_calls, args.seconds, speech48))
        out["echo"] = {"calls": args.anchor_calls,
                       "server_core_per_call": [r["server_core_per_call"] for r in runs]}
    finally:
        await echo.stop()
    return out


def summarize_step(n: int, runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"calls": n, "runs": runs,
            "late_median": _median([r["late"] for r in runs]),
            "late": [r["late"] for r in runs],
            "worst_call_late": max(r["worst_call_late"] for r in runs),
            "server_core_per_call": [r["server_core_per_call"] for r in runs],
            "client_core_per_call": [r["client_core_per_call"] for r in runs],
            "mic_to_adapter_median_ms": [r["mic_to_adapter"].get("median_ms") for r in runs],
            "mic_to_adapter_p95_ms": [r["mic_to_adapter"].get("p95_ms") for r in runs],
            "agent_to_encoder_median_ms": [r["agent_to_encoder"].get("median_ms")
                                           for r in runs],
            "asr_backlog": [r["asr_backlog"] for r in runs],
            "underruns": max(r["underruns"] for r in runs),
            "states": sorted({s for r in runs for s in r["states"]})}


def _spread_or_na(values: list[Any], fmt: str, unit: str = "", scale: float = 1.0) -> str:
    vals = [v * scale for v in values if v is not None and v == v]
    return f"{spread(vals, fmt)}{unit}" if vals else "n/a"


def step_line(step: dict[str, Any]) -> str:
    def pct(key: str, unit: str = " %") -> str:
        return _spread_or_na(step[key], ".1f", unit, 100)

    def ms(key: str) -> str:
        return _spread_or_na(step[key], ".0f", " ms")

    late = _spread_or_na(step["late"], ".2f", " %", 100)
    return (f"N={step['calls']:3d}  late frames {late} (worst call {step['worst_call_late']:.2%})"
            f"\n         server CPU per call {pct('server_core_per_call', ' % of a core')}"
            f"; clients' {pct('client_core_per_call')}"
            f"\n         mic→agent adapter {ms('mic_to_adapter_median_ms')} (p95 "
            f"{ms('mic_to_adapter_p95_ms')}); agent→encoder {ms('agent_to_encoder_median_ms')}"
            f"\n         mic underruns ≤ {step['underruns']:.1%}, ASR backlog at end "
            f"{step['asr_backlog']}, states {step['states']}")


def print_server_only(out: dict[str, Any], load_start: tuple[float, float, float]) -> None:
    print(f"\nlive-call capacity, server alone (participants' aiortc peers in another process, "
          f"{out['seconds']:.0f} s calls, speech {out['speech_s']} s looped, ASR on; "
          f"idle server {out['idle_server_cores']:.1%} of a core)")
    for step in out["steps"]:
        print("  " + step_line(step))
    print(f"  capacity: {out['capacity']} concurrent calls with < 1 % late frames "
          f"(steps tried: {[s['calls'] for s in out['steps']]})")
    ok = [s for s in out["steps"] if s["calls"] == out["capacity"]]
    if ok:
        print(f"  at capacity: server CPU per call "
              f"{_spread_or_na(ok[0]['server_core_per_call'], '.1f', ' % of a core', 100)}, "
              f"mic→agent adapter {_spread_or_na(ok[0]['mic_to_adapter_median_ms'], '.0f', ' ms')}")
    echo = out["echo"]
    app = next((s for s in out["steps"] if s["calls"] == echo["calls"]), None)
    print(f"  anchor: minimal aiortc echo server, {echo['calls']} calls, CPU per call "
          f"{_spread_or_na(echo['server_core_per_call'], '.1f', ' % of a core', 100)}")
    if app is not None:
        print("  " + ratio_line(f"live call CPU per call ({echo['calls']} calls)",
                                "echo server's", _median(app["server_core_per_call"]),
                                _median(echo["server_core_per_call"])))
    if "breakdown" in out:
        b = out["breakdown"]
        print(f"\nper-call cost breakdown ({b['calls']} calls, {b['wall_s']} s, server "
              f"{b['core_per_call']:.1%} of a core per call; py-spy, {b['samples']} samples of "
              f"the Python threads, scaled to their CPU from /proc; CTranslate2's threads apart)")
        for name, row in b["components"].items():
            print(f"  {name:36s} {row['core_per_call']:7.2%} of a core per call  "
                  f"({row['share']:.0%} of the server's CPU)")
        cores = os.cpu_count() or 1
        per_call = b["core_per_call"]
        print(f"  → {cores} cores / {per_call:.1%} per call = {cores / per_call:.0f} calls "
              f"if the CPU were the only limit; 20 calls need ≤ {cores / 20:.1%} per call")
    print(load_line(load_start, own_threads=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=None,
                        help="media seconds per call (default 12; 15 with --server-only)")
    parser.add_argument("--levels", default=None,
                        help="concurrent calls per step (default 1,2,4,8,16; "
                             "1,2,4,8,12,16,20,24,32 with --server-only)")
    parser.add_argument("--asr", action="store_true")
    parser.add_argument("--server-only", action="store_true",
                        help="the server in a process of its own (ASR on), the participants' "
                             "peers in this one: capacity, CPU per call, latency, breakdown")
    parser.add_argument("--repeats", type=int, default=2, help="--server-only: runs per step")
    parser.add_argument("--anchor-calls", type=int, default=4,
                        help="--server-only: calls for the echo-server anchor")
    parser.add_argument("--breakdown-calls", type=int, default=4,
                        help="--server-only: calls in the profiled step (0: no breakdown)")
    parser.add_argument("--serve", choices=("app", "echo"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve))
        return
    if args.server_only:
        args.seconds = args.seconds or 15.0
        args.levels = [int(x) for x in (args.levels or "1,2,4,8,12,16,20,24,32").split(",")]
        load_start = load_now()
        with tempfile.TemporaryDirectory() as tmp:
            result = asyncio.run(server_only_async(args, Path(tmp)))
        result["load"] = load_line(load_start, own_threads=2)
        print_server_only(result, load_start)
        dest = ROOT / "bench" / "out"
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "live_server.json").write_text(json.dumps(result, indent=2, default=str))
        return
    args.seconds = args.seconds or 12.0
    args.levels = [int(x) for x in (args.levels or "1,2,4,8,16").split(",")]
    load_start = load_now()
    out = asyncio.run(main_async(args))
    one = out["one_call"]
    print("\nserver-side added latency (one call, jitter buffers excluded)")
    for name in ("mic_to_adapter", "mic_conversion_baseline", "agent_to_encoder"):
        print(f"  {name:24s} {one[name]}")
    print(f"  {'demo agent_to_encoder':24s} {out['demo_baseline']['agent_to_encoder']}")
    pairs = (("mic_to_adapter", "the microphone frame's conversion alone",
              one["mic_to_adapter"], one["mic_conversion_baseline"]),
             ("agent_to_encoder", "the live demo's agent channel (same path)",
              one["agent_to_encoder"], out["demo_baseline"]["agent_to_encoder"]))
    for figure, anchor, got, base in pairs:
        if got.get("median_ms") and base.get("median_ms"):
            print("  " + ratio_line(f"{figure} median", anchor, got["median_ms"],
                                    base["median_ms"]))
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
    out["load"] = load_line(load_start, own_threads=2)
    print(out["load"])
    if "asr" in out:
        print(f"\nASR (faster-whisper tiny.en): {out['asr']}")
    dest = ROOT / "bench" / "out"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "live.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
