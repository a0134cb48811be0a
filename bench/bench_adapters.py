"""Benchmarks for the provider adapters against their local fakes. Prints figures; asserts nothing.

1. **CPU per 40 ms frame.** Each adapter is driven the way the orchestrator drives it (send a
   user frame, poll, answer tool calls) through a whole apexv1_001 conversation with its fake
   model. The fake runs in a second thread with its own event loop, in lockstep with the
   adapter, and the CPU time of the adapter's thread alone is measured
   (``time.thread_time``). Target: under 1 ms of CPU per frame per session.
   Anchor: the same run with the scripted oracle as the agent (no wire protocol), and the
   ratio.
2. **Concurrent realtime sessions.** N whole runs (orchestrator, frozen simulator, Workbench,
   trace) of apexv1_001 in ``realtime`` clock mode in this process, each against its own fake
   served from a second process (the "provider side" gets the other core). A frame *slips*
   when its tick starts more than one frame (40 ms) after its deadline. Target: at least 20
   sessions with no slipped frame on 2 cores. Anchor: the same N runs with the scripted
   oracle as the agent and no provider process, and the ratio of CPU per frame.

Usage: .venv/bin/python bench/bench_adapters.py [--providers openai-realtime,grok,...]
           [--sessions 10,20,30] [--seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

# The fakes live in tests/ (not an installed package): make the repository importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlib import load_line, load_now, ratio_line

from runtime.agents.base import AgentSessionConfig
from runtime.core.audio import FRAME_MS
from runtime.core.spec import TaskSpec, find_task
from runtime.session.campaign import AgentFactory, parse_agent_spec
from runtime.session.orchestrator import MediaClock, Orchestrator
from runtime.speechbank.bank import BankPlayer
from runtime.user.simulator import FrozenSimulator
from tests.adapters.harness import oracle_conversation
from tests.fakes.realtime.base import FakeRealtimeServer
from tests.fakes.realtime.harness import HARNESSES, RealtimeHarness

TASK = "apexv1_001"


def harness_class(kind: str) -> type[RealtimeHarness]:
    cls = HARNESSES[kind]
    assert isinstance(cls, type) and issubclass(cls, RealtimeHarness)
    return cls


def adapter_for(kind: str, url: str) -> Any:
    h = harness_class(kind)
    env = {h.url_env: url, h.key_env: "test-key"}
    return importlib.import_module(h.module).make_adapter(None, env)


# --------------------------------------------------------------------------- 1. CPU per frame


class FakeThread:
    """A fake server on its own event loop in a background thread."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        h = harness_class(kind)
        self.fake: FakeRealtimeServer = self.call(self._start(h))

    async def _start(self, h: type[RealtimeHarness]) -> FakeRealtimeServer:
        fake = h.fake_class(oracle_conversation(TASK), record=False)
        return await fake.start()

    def call(self, coro: Awaitable[Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()  # type: ignore[arg-type]

    def lockstep(self) -> Callable[[int], Awaitable[int]]:
        async def sync(client_sent: int) -> int:
            future: Future[int] = asyncio.run_coroutine_threadsafe(
                self.fake.settle(client_sent), self.loop,
            )
            return await asyncio.wrap_future(future)

        return sync

    def close(self) -> None:
        self.call(self.fake.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


class TimedAdapter:
    """Delegates to an adapter and adds up the CPU time of this thread spent inside it, per
    frame (a frame starts with ``send_audio``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.per_frame: list[float] = []

    async def _timed(self, call: Awaitable[Any], new_frame: bool = False) -> Any:
        c0 = time.thread_time()
        result = await call
        spent = time.thread_time() - c0
        if new_frame or not self.per_frame:
            self.per_frame.append(0.0)
        self.per_frame[-1] += spent
        return result

    async def connect(self, config: AgentSessionConfig) -> None:
        await self.inner.connect(config)

    async def send_audio(self, frame: Any, t_media_ms: int) -> None:
        await self._timed(self.inner.send_audio(frame, t_media_ms), new_frame=True)

    async def poll(self, t_media_ms: int) -> list[Any]:
        result: list[Any] = await self._timed(self.inner.poll(t_media_ms))
        return result

    async def send_tool_result(self, call_id: str, output: dict[str, Any]) -> None:
        await self._timed(self.inner.send_tool_result(call_id, output))

    async def truncated(self, heard_ms: int) -> None:
        await self._timed(self.inner.truncated(heard_ms))

    async def close(self) -> None:
        await self.inner.close()


async def _timed_run(task: TaskSpec, agent: Any, name: str) -> dict[str, float]:
    """A whole virtual-clock run of the task; CPU spent inside ``agent`` per frame."""
    timed = TimedAdapter(agent)
    work = Path(tempfile.mkdtemp(prefix="apex-bench-adapters-"))
    orch = Orchestrator(task, timed, FrozenSimulator(task, 0, BankPlayer(task)),
                        work / name.replace(":", "-"), agent_spec=name, seed=0,
                        clock="virtual")
    result = await orch.run()
    per_frame = sorted(timed.per_frame)
    return {
        "end": result.end_reason,
        "frames": len(per_frame),
        "mean_ms": 1000 * statistics.fmean(per_frame),
        "p99_ms": 1000 * per_frame[int(0.99 * (len(per_frame) - 1))],
        "max_ms": 1000 * per_frame[-1],
    }


async def cpu_per_frame(kind: str, task: TaskSpec) -> dict[str, float]:
    """The adapter against its fake, in lockstep."""
    server = FakeThread(kind)
    try:
        adapter = adapter_for(kind, server.fake.url)
        adapter.attach_lockstep(server.lockstep())
        return await _timed_run(task, adapter, kind)
    finally:
        server.close()


async def cpu_per_frame_scripted(task: TaskSpec) -> dict[str, float]:
    """The anchor: the same run and measurement with the scripted oracle as the agent (the
    same conversation with no wire protocol, no fake, no audio encoding)."""
    return await _timed_run(task, parse_agent_spec("scripted:oracle").make(task),
                            "scripted:oracle")


# --------------------------------------------------------------------------- 2. concurrency


def serve_fakes(kind: str, count: int, conn: Connection) -> None:
    """Child process: ``count`` fake servers; send their URLs, serve until told to stop."""

    async def main() -> None:
        h = harness_class(kind)
        fakes = [await h.fake_class(oracle_conversation(TASK), record=False).start()
                 for _ in range(count)]
        conn.send([f.url for f in fakes])
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)
        for fake in fakes:
            await fake.stop()

    asyncio.run(main())


class SlipClock(MediaClock):
    """A realtime media clock that records how late each tick starts."""

    def __init__(self) -> None:
        super().__init__("realtime")
        self.lateness_ms: list[float] = []

    async def tick(self) -> None:
        deadline = self._start + (self.t_ms + self.frame_ms) / 1000
        await super().tick()
        self.lateness_ms.append(max(0.0, (time.monotonic() - deadline) * 1000))


async def concurrent_sessions(
    kind: str, sessions: int, seconds: int, stagger_s: float = 1.0,
) -> dict[str, float]:
    """N realtime runs against ``kind``'s fakes, or (``kind == "scripted"``, the anchor) with
    the scripted oracle as the agent and no provider side at all."""
    parent, child = mp.Pipe()
    proc = None
    urls: list[str] = []
    if kind != "scripted":
        proc = mp.get_context("spawn").Process(target=serve_fakes, args=(kind, sessions, child),
                                               daemon=True)
        proc.start()
        urls = parent.recv()
    task = find_task(TASK)
    limits = task.limits.model_copy(update={"max_duration_ms": seconds * 1000})
    task = task.model_copy(update={"limits": limits})
    work = Path(tempfile.mkdtemp(prefix="apex-bench-concurrency-"))
    clocks: list[SlipClock] = []
    # One bank decoded up front and shared: decoding the user's audio is not adapter work.
    bank = BankPlayer(task)
    for plan in task.plans:
        for real in plan.realizations:
            bank.audio(real.id, real.audio)

    async def one(i: int) -> None:
        # Spread the starts over ``stagger_s``: N runs started in the same millisecond tick in
        # phase and flush their traces in the same frame (see the note printed by main()).
        await asyncio.sleep(stagger_s * i / sessions)
        factory = (parse_agent_spec("scripted:oracle") if kind == "scripted"
                   else AgentFactory(kind, lambda _t: adapter_for(kind, urls[i])))
        orch = Orchestrator(task, factory.make(task), FrozenSimulator(task, 0, bank),
                            work / f"s{i}", agent_spec=kind, seed=0, clock="realtime")
        clock = SlipClock()
        orch.clock = clock
        clocks.append(clock)
        await orch.run()

    cpu0, wall0 = time.process_time(), time.monotonic()
    await asyncio.gather(*(one(i) for i in range(sessions)))
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    if proc is not None:
        parent.send("stop")
        proc.join(timeout=10)
    late = sorted(x for c in clocks for x in c.lateness_ms)
    return {
        "frames": len(late),
        "slipped": sum(1 for x in late if x > FRAME_MS),
        "p50_ms": late[len(late) // 2],
        "p99_ms": late[int(0.99 * (len(late) - 1))],
        "max_ms": late[-1],
        "cpu_per_frame_ms": 1000 * cpu / max(1, len(late)),
        "wall_s": wall,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--providers", default="openai-realtime,grok,stepfun,gpt-live")
    ap.add_argument("--sessions", default="10,20,30")
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--concurrency-provider", default="openai-realtime")
    ap.add_argument("--stagger", type=float, default=1.0,
                    help="spread the session starts over this many seconds (0: all at once)")
    args = ap.parse_args()
    os.environ.setdefault("APEX_VOICE_CACHE_DIR", tempfile.mkdtemp(prefix="apex-bench-cache-"))
    task = find_task(TASK)
    load = load_now()
    print(f"== adapter CPU per 40 ms frame ({TASK} conversation, fake in another thread, "
          "lockstep; target < 1 ms)")
    anchor = asyncio.run(cpu_per_frame_scripted(task))
    print(f"{'anchor: scripted':16s} ({anchor['end']}) frames {anchor['frames']:5.0f}  mean "
          f"{anchor['mean_ms']:.3f} ms  p99 {anchor['p99_ms']:.3f} ms  max "
          f"{anchor['max_ms']:.2f} ms  (the same conversation, no wire protocol)")
    for kind in args.providers.split(","):
        r = asyncio.run(cpu_per_frame(kind, task))
        print(f"{kind:16s} ({r['end']}) frames {r['frames']:5.0f}  mean {r['mean_ms']:.3f} ms  "
              f"p99 {r['p99_ms']:.3f} ms  max {r['max_ms']:.2f} ms  "
              + ratio_line("mean", "scripted", r["mean_ms"], anchor["mean_ms"]))
    kind = args.concurrency_provider
    print(f"\n== concurrent realtime sessions ({kind}, {args.seconds} s of media each, fakes "
          "in a second process; a slip = a tick > 40 ms late; target >= 20 with 0 slips)")
    for n in (int(x) for x in args.sessions.split(",")):
        runs = {k: asyncio.run(concurrent_sessions(k, n, args.seconds, args.stagger))
                for k in ("scripted", kind)}
        for k, r in runs.items():
            label = "anchor, scripted" if k == "scripted" else k
            print(f"{n:3d} sessions {label:16s} frames {r['frames']:6.0f}  slipped "
                  f"{r['slipped']:4.0f}  lateness p50 {r['p50_ms']:.1f} ms  p99 "
                  f"{r['p99_ms']:.1f} ms  max {r['max_ms']:.1f} ms  CPU/frame "
                  f"{r['cpu_per_frame_ms']:.2f} ms  wall {r['wall_s']:.1f} s")
        print("             " + ratio_line("CPU per frame", "scripted",
                                           runs[kind]["cpu_per_frame_ms"],
                                           runs["scripted"]["cpu_per_frame_ms"]))
    print(load_line(load))


if __name__ == "__main__":
    main()
