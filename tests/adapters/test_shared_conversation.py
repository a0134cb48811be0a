"""Shared suite, whole runs: every adapter against its fake, with a shipped task's frozen user.

The fake model plays ``tests/adapters/scripts/<task>.yaml`` through the provider's protocol
(tool calls with the gold values, then speech); the frozen simulator answers what it hears.
Runs use the virtual clock in lockstep with the fake (docs/adapters.md), so they are
deterministic and take a second or two each.
"""

from __future__ import annotations

import json
from pathlib import Path

import soundfile as sf

from grading.gates import grade_run_dir
from runtime.core.audio import FRAME_MS, rms
from runtime.core.spec import find_task
from tests.adapters.conftest import conversation, run_task
from tests.adapters.harness import ProviderHarness


async def test_full_conversation_commits_through_tool_calls(
    harness: ProviderHarness, tmp_path: Path,
) -> None:
    scenario = conversation("apexv1_001")
    run = await run_task(harness, "apexv1_001", scenario, tmp_path)

    assert run.result.end_reason == "user_goodbye", run.of("session.end")
    lifecycles = [e.lifecycle for e in run.of("artifact.update")]
    assert lifecycles[-1] == "COMMITTED"
    calls = run.of("tool.call")
    assert scenario.script is not None
    scripted = [(t.name, t.args) for turn in scenario.script.turns for t in turn.tools]
    assert [(c.name, c.args) for c in calls] == scripted
    assert {"kb_search", "set_ready", "commit"} <= {c.name for c in calls}
    assert not run.of("agent.error")
    grade = grade_run_dir(run.result.run_dir, {"apexv1_001": find_task("apexv1_001")})
    assert grade.WS, grade.gate_reasons
    # Every tool result went back on the wire, each batch before one continuation.
    assert sorted(harness.tool_outputs()) == sorted(c.call_id for c in calls)
    assert harness.violations() == []
    meta = json.loads((run.result.run_dir / "meta.json").read_text())
    assert meta["end_reason"] == "user_goodbye" and meta["failure_class"] == "none"


async def test_barge_in_truncates_at_the_heard_position(
    harness: ProviderHarness, tmp_path: Path,
) -> None:
    """apexv1_070's authored barge-in: the user cuts into "Great, I'm submitting..." 600 ms
    in; the agent's audio stops where the user stopped hearing it, and the provider is told
    exactly that position."""
    # Audio streamed at 2x real time: the response is still being generated when the user
    # cuts in, so providers that need an explicit cancel must send one.
    scenario = conversation("apexv1_070", audio_speedup=2.0)
    run = await run_task(harness, "apexv1_070", scenario, tmp_path)

    truncated = run.of("agent.truncated")
    assert len(truncated) == 1, truncated
    heard = truncated[0].heard_ms
    # The turn the user cut into, and the frame where the user's voice became detectable:
    # the second loud 40 ms frame of the barge-in utterance (an energy VAD's onset, whichever
    # side runs it). The agent must have stopped exactly there.
    start = next(e for e in run.of("agent.speech.start") if e.turn == truncated[0].turn)
    fired = run.of("duplex.fire")[0]
    onset = second_loud_frame_ms(run.result.run_dir / "trace.wav", fired.t_media_ms)
    assert heard == onset - start.t_media_ms, (heard, onset, start.t_media_ms)
    assert truncated[0].dropped_ms > 0  # audio was buffered and never played
    ends = [e for e in run.of("agent.speech.end") if e.turn == truncated[0].turn]
    assert [e.played_ms for e in ends] == [heard]
    if harness.truncates_on_wire:
        assert harness.truncations() == [heard]
    if harness.cancels_on_wire:
        assert harness.cancels() == 1
    assert run.result.end_reason == "user_goodbye", run.of("session.end")
    assert [e.lifecycle for e in run.of("artifact.update")][-1] == "COMMITTED"
    grade = grade_run_dir(run.result.run_dir, {"apexv1_070": find_task("apexv1_070")})
    assert grade.WS, grade.gate_reasons
    assert harness.violations() == []


def second_loud_frame_ms(trace: Path, from_ms: int) -> int:
    """Media time of the second consecutive loud user frame at or after ``from_ms``."""
    stereo, rate = sf.read(str(trace), dtype="int16")
    frame = rate * FRAME_MS // 1000
    loud = 0
    for index in range(from_ms // FRAME_MS, len(stereo) // frame):
        loud = loud + 1 if rms(stereo[index * frame:(index + 1) * frame, 0]) >= 300 else 0
        if loud == 2:
            return index * FRAME_MS
    raise AssertionError("no user onset in the trace")


async def test_disconnect_mid_response_is_an_infrastructure_drop(
    harness: ProviderHarness, tmp_path: Path,
) -> None:
    scenario = conversation("apexv1_001", disconnect_on_response=2)
    run = await run_task(harness, "apexv1_001", scenario, tmp_path)

    end = run.of("session.end")[0]
    assert (end.reason, end.failure_class) == ("infrastructure_error", "infrastructure")
    assert "connectivity" in end.detail
    assert not run.of("agent.error")
    meta = json.loads((run.result.run_dir / "meta.json").read_text())
    assert meta["failure_class"] == "infrastructure"
