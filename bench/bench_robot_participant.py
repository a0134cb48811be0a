"""Study B with a human-like robot participant over the real WebRTC path: does a perfect agent
pass with "people" as it does with the simulator, and how soon is a spoken approval decided?
Prints figures; asserts nothing.

Both ends run in this process over loopback (aioice limited to 127.0.0.1). Each call is an
ordinary :class:`app.live.LiveCall` on the realtime media clock, the scripted oracle as the
agent, and a :class:`runtime.user.robot.HumanRobot` as the participant's browser (aiortc peer):
it speaks each plan's bank realization with human timing (onset 150–600 ms after the agent's
turn, about a third of replies over the agent's last 0–300 ms). The participant's speech goes
through the microphone sink, the VAD, the shared transcription queue and faster-whisper
tiny.en, as a person's would.

1. **Suite**: every bundled task, ``--parallel`` (4) calls at a time. Workflow Success per task.
2. **Table 10, oracle vs oracle**: the robot's sessions as the human condition, one
   frozen-simulator run per task (virtual clock) as the synthetic one, through
   ``study_protocols.study_b.table10``: the human-minus-synthetic difference should be 0.
3. **Speech end → authorization decision**: for every utterance decided under an approve or
   revoke cue (or over an approval request), media time of the ``auth.decision`` minus the end
   of the participant's voice (``user.transcript.end_ms``). Figures for 1 call alone (the
   anchor, same run), the suite's ``--parallel`` calls, and ``--stress`` (8) calls at once on
   tasks with approvals. The floor is the VAD's end-of-utterance quiet: it ends an utterance on
   its 16th quiet 40 ms frame, 600 ms after the voice ended at the start of the first one, and
   no decision can come before that. Target: p95 ≤ 1000 ms at 8 calls.

Usage: .venv/bin/python bench/bench_robot_participant.py [--parallel 4] [--stress 8]
       [--tasks apexv1_010,apexv1_070] (figures also go to bench/out/robot_participant.json)
"""

from __future__ import annotations

import argparse
import asyncio
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

from app.live import LiveCallManager  # noqa: E402  (after the path set-up above)
from app.robot_peer import RobotCall, run_robot_calls  # noqa: E402
from grading.gates import grade_run_dir  # noqa: E402
from runtime.agents.scripted import EnergyVAD  # noqa: E402
from runtime.core.audio import FRAME_MS  # noqa: E402
from runtime.core.events import AuthDecisionEvent, CueShow, UserTranscript, read_events  # noqa: E402
from runtime.core.spec import TaskSpec, default_tasks_dir, load_tasks  # noqa: E402
from runtime.session.campaign import parse_agent_spec, run_one  # noqa: E402
from runtime.speech.asr import shared_asr  # noqa: E402
from study_protocols.study_b import SessionOutcome, table10  # noqa: E402

AGENT = "scripted:oracle"


def loopback_only_ice() -> None:
    import aioice.ice

    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: (
        ["127.0.0.1"] if use_ipv4 else [])


def decision_latencies(run_dir: Path) -> list[float]:
    """ms from the end of the participant's voice to the decision, for each utterance decided
    with an authorizing context (a grant/revoke, or an approve/revoke cue)."""
    events = read_events(run_dir / "events.jsonl").events
    kinds = {e.cue_id: e.kind for e in events if isinstance(e, CueShow)}
    out: list[float] = []
    last: UserTranscript | None = None
    for e in events:
        if isinstance(e, UserTranscript):
            last = e
        elif isinstance(e, AuthDecisionEvent) and last is not None:
            if e.decision != "none" or kinds.get(e.cue_id or "") in ("approve", "revoke"):
                out.append(float(e.t_media_ms - last.end_ms))
            last = None
    return out


def stats(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    arr = np.asarray(values)
    return {"n": len(values), "median_ms": round(float(np.median(arr)), 1),
            "p95_ms": round(float(np.percentile(arr, 95)), 1),
            "min_ms": round(float(arr.min()), 1), "max_ms": round(float(arr.max()), 1)}


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}, {os.cpu_count()} cores"


async def calls(tasks: list[TaskSpec], work: Path, parallel: int) -> list[RobotCall]:
    manager = LiveCallManager(work / "runs", reap_every_s=3600, max_calls=parallel)
    try:
        return await run_robot_calls(tasks, work, agent=AGENT, parallel=parallel,
                                     manager=manager)
    finally:
        await manager.close()


def graded(done: list[RobotCall], suite: dict[str, TaskSpec]) -> list[dict[str, Any]]:
    rows = []
    for rc in done:
        g = grade_run_dir(rc.call.run_dir, suite)
        rows.append({"task": rc.call.task.id, "state": rc.call.state, "WS": g.WS,
                     "infrastructure_failure": g.infrastructure_failure,
                     "failed": {k: v for k, v in g.gate_reasons.items()},
                     "overlapped_replies": sum(s.how == "overlap" for s in rc.robot.spoken),
                     "latencies_ms": decision_latencies(rc.call.run_dir)})
    return rows


def synthetic(tasks: list[TaskSpec], work: Path,
              suite: dict[str, TaskSpec]) -> dict[str, list[bool]]:
    factory = parse_agent_spec(AGENT)
    out: dict[str, list[bool]] = {}
    for t in tasks:
        run_dir = work / "sim" / t.id
        asyncio.run(run_one(t, factory, run_dir, seed=0, repeat=0))
        out[t.id] = [grade_run_dir(run_dir, suite).WS]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--stress", type=int, default=8)
    ap.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    args = ap.parse_args()
    loopback_only_ice()
    suite = {t.id: t for t in load_tasks([default_tasks_dir()])}
    chosen = [suite[t] for t in args.tasks.split(",") if t] or list(suite.values())
    shared_asr()  # loaded once, before the clocks start
    floor = (EnergyVAD().hangover - 1) * FRAME_MS
    out: dict[str, Any] = {"floor_vad_end_quiet_ms": floor}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print(f"anchor: one call alone (apexv1_070) ... [{load()}]", flush=True)
        one = graded(asyncio.run(calls([suite["apexv1_070"]], work / "one", 1)), suite)
        out["one_call"] = {"rows": one, "latency": stats(one[0]["latencies_ms"]), "load": load()}
        print(f"suite: {len(chosen)} tasks, {args.parallel} calls at a time ... [{load()}]",
              flush=True)
        t0 = time.monotonic()
        rows = graded(asyncio.run(calls(chosen, work / "suite", args.parallel)), suite)
        out["suite"] = {"rows": rows, "seconds": round(time.monotonic() - t0, 1),
                        "latency": stats([x for r in rows for x in r["latencies_ms"]]),
                        "load": load()}
        gated = [t for t in chosen if t.authorization][:args.stress]
        gated = (gated * (args.stress // max(1, len(gated)) + 1))[:args.stress]
        print(f"stress: {len(gated)} calls at once on tasks with approvals ... [{load()}]",
              flush=True)
        stress = graded(asyncio.run(calls(gated, work / "stress", len(gated))), suite)
        out["stress"] = {"calls": len(gated), "rows": stress, "load": load(),
                         "latency": stats([x for r in stress for x in r["latencies_ms"]])}
        sim = synthetic(chosen, work, suite)
        human = [SessionOutcome(task_id=r["task"], system=AGENT, participant="robot",
                                anchor=False,
                                ws=None if r["infrastructure_failure"] else r["WS"])
                 for r in rows]
        t10 = table10(human, {AGENT: sim}, n_resamples=200)
        out["table10"] = t10["systems"][AGENT]
    (ROOT / "bench" / "out").mkdir(parents=True, exist_ok=True)
    (ROOT / "bench" / "out" / "robot_participant.json").write_text(json.dumps(out, indent=2))

    print("\nsuite with the robot participant (scripted oracle, realtime, WebRTC, whisper)")
    for r in rows:
        print(f"  {r['task']}  {r['state']:10s} WS={int(r['WS'])}  overlapped replies "
              f"{r['overlapped_replies']:2d}  {r['failed'] if not r['WS'] else ''}")
    passed = sum(r["WS"] for r in rows)
    print(f"  Workflow Success {passed}/{len(rows)} in {out['suite']['seconds']} s "
          f"[{out['suite']['load']}]")
    t = out["table10"]
    print(f"\nTable 10, oracle vs oracle: human (robot) Pass@1 {t['human_pass_at_1']} %, "
          f"synthetic {t['synthetic_pass_at_1']} %, difference {t['diff']} points")
    print(f"\nspeech end → authorization decision (floor: the VAD's end quiet, {floor} ms)")
    for name, key in (("1 call (anchor)", "one_call"),
                      (f"{args.parallel} calls (suite)", "suite"),
                      (f"{len(gated)} calls at once", "stress")):
        print(f"  {name:22s} {out[key]['latency']}  [{out[key]['load']}]")
    p95 = out["stress"]["latency"].get("p95_ms")
    print(f"  target p95 <= 1000 ms at {len(gated)} calls: "
          f"{'met' if p95 is not None and p95 <= 1000 else 'NOT met'}")


if __name__ == "__main__":
    main()
