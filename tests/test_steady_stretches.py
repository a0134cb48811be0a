"""The virtual clock's steady stretches (runtime/session/orchestrator.py ``_steady_stretch``) change
nothing but speed: every bundled script on every bundled task gives the same event log (wall
clock aside), the same stereo trace byte for byte and the same end, whether the clock moves
frame by frame or through stretches."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from runtime.agents.base import AgentEvent
from runtime.agents.scripted import AfterMs, Script, ScriptedAgent, ScriptTurn, load_script
from runtime.core.audio import FRAME_SAMPLES, TraceWriter, frame_levels, rms, silent_block
from runtime.core.events import comparable, read_events
from runtime.core.spec import TaskSpec, WorldEvent
from runtime.session.campaign import cache_dir
from runtime.session.orchestrator import Orchestrator
from runtime.speechbank.bank import BankPlayer, EspeakEngine, SpeechCache
from runtime.user.simulator import FrozenSimulator
from tests.conftest import bundled_tasks

TASKS = bundled_tasks()


def _speech() -> SpeechCache:
    return SpeechCache(EspeakEngine(), cache_dir() / "agent-speech")


def _run(task: TaskSpec, agent: Any, out: Path, *, stretches: bool,
         seed: int = 0) -> tuple[Orchestrator, Path]:
    user = FrozenSimulator(task, seed, BankPlayer(task))
    orch = Orchestrator(task, agent, user, out, agent_spec="scripted", seed=seed,
                        steady_stretches=stretches)
    asyncio.run(orch.run())
    return orch, out


def _same_run(a: Path, b: Path) -> None:
    ea, eb = read_events(a / "events.jsonl"), read_events(b / "events.jsonl")
    assert ea.problems == eb.problems == []
    assert [comparable(e) for e in ea.events] == [comparable(e) for e in eb.events]
    assert (a / "trace.wav").read_bytes() == (b / "trace.wav").read_bytes()


def _scripts() -> list[tuple[TaskSpec, Path]]:
    return [(t, p) for t in TASKS for p in sorted((t.folder / "scripts").glob("*.yaml"))]


@pytest.mark.parametrize("task_id", sorted(t.id for t in TASKS))
def test_every_script_gives_the_same_run_with_and_without_stretches(
    task_id: str, tmp_path: Path,
) -> None:
    speech = _speech()
    moved = total = 0
    for task, script in _scripts():
        if task.id != task_id:
            continue
        runs = []
        for stretches in (False, True):
            agent = ScriptedAgent(load_script(script), speech)
            orch, out = _run(task, agent, tmp_path / script.stem / str(stretches),
                             stretches=stretches)
            runs.append(out)
        _same_run(*runs)
        moved += orch.frames_in_stretches
        total += orch.clock.t_ms // 40
    # The stretches are taken (a check that the feature is on, not a speed claim).
    assert moved > total / 2, (moved, total)


@pytest.mark.parametrize("delay_ms", [300, 1_700, 4_100])
def test_an_agent_on_a_timer_gives_the_same_run(delay_ms: int, tmp_path: Path) -> None:
    """Each oracle turn on a fixed delay after the agent's last turn, whatever the caller
    does (silence, speech, barge-ins): readiness that comes with time inside a stretch."""
    speech = _speech()
    moved = 0
    for task_id in ("apexv1_001", "apexv1_070"):
        task = next(t for t in TASKS if t.id == task_id)
        oracle = load_script(task.folder / "scripts" / "oracle.yaml")
        timed = oracle.model_copy(update={"turns": [
            turn.model_copy(update={"after": AfterMs(ms=delay_ms + 130 * i)})
            for i, turn in enumerate(oracle.turns)
        ]})
        runs = []
        for stretches in (False, True):
            orch, out = _run(task, ScriptedAgent(timed, speech),
                             tmp_path / task_id / str(stretches), stretches=stretches)
            runs.append(out)
        _same_run(*runs)
        moved += orch.frames_in_stretches
    assert moved > 0


def test_a_world_event_at_a_time_inside_a_stretch_fires_on_its_frame(tmp_path: Path) -> None:
    base = next(t for t in TASKS if t.id == "apexv1_001")
    task = base.model_copy(update={"world_events": [
        WorldEvent(id="w_odd", description="fires between two stretch boundaries",
                   at_ms=3_330),
    ]})
    runs = []
    for stretches in (False, True):
        agent = ScriptedAgent(load_script(base.folder / "scripts" / "oracle.yaml"),
                              _speech())
        runs.append(_run(task, agent, tmp_path / str(stretches), stretches=stretches)[1])
    _same_run(*runs)
    fired = [e for e in read_events(runs[1] / "events.jsonl").events
             if e.type == "world.event"]
    assert [e.t_media_ms for e in fired] == [3_360]  # the first frame starting at or after


class _LoudAtTen(ScriptedAgent):
    """Changes what a frame does (hangs up at 10 s): it must be played frame by frame."""

    async def poll(self, t_media_ms: int) -> list[AgentEvent]:
        events = await super().poll(t_media_ms)
        if t_media_ms == 10_000:
            from runtime.agents.base import Hangup
            events.append(Hangup())
        return events


def test_a_subclass_that_changes_a_frame_is_played_frame_by_frame(tmp_path: Path) -> None:
    task = next(t for t in TASKS if t.id == "apexv1_001")
    agent = _LoudAtTen(load_script(task.folder / "scripts" / "oracle.yaml"), _speech())
    orch, out = _run(task, agent, tmp_path / "run", stretches=True)
    assert orch.frames_in_stretches == 0
    assert any(e.type == "agent.hangup" and e.t_media_ms == 10_000
               for e in read_events(out / "events.jsonl").events)


def test_frame_levels_equal_rms_frame_by_frame() -> None:
    rng = np.random.default_rng(3)
    block = rng.integers(-32768, 32767, FRAME_SAMPLES * 7, dtype=np.int16)
    block[:FRAME_SAMPLES] = 0
    block[FRAME_SAMPLES:2 * FRAME_SAMPLES] = -32768
    expected = [rms(block[i:i + FRAME_SAMPLES]) for i in range(0, len(block), FRAME_SAMPLES)]
    assert frame_levels(block) == expected
    assert frame_levels(silent_block(3)) == [0.0, 0.0, 0.0]
    # A read-only recording's aligned slices read its levels, computed once; others compute.
    recording = block.copy()
    recording.flags.writeable = False
    for start, n in ((0, 7), (2, 3), (6, 1)):
        piece = recording[start * FRAME_SAMPLES:(start + n) * FRAME_SAMPLES]
        assert frame_levels(piece) == expected[start:start + n]
    shifted = recording[100:100 + 2 * FRAME_SAMPLES]
    assert frame_levels(shifted) == [rms(shifted[:FRAME_SAMPLES]), rms(shifted[FRAME_SAMPLES:])]


def test_a_stretch_reaches_the_os_within_a_second_of_media(tmp_path: Path) -> None:
    path = tmp_path / "t.wav"
    trace = TraceWriter(path)
    frame = np.ones(FRAME_SAMPLES, np.int16)
    for _ in range(24):
        trace.write(frame, frame)
    assert path.stat().st_size <= 44  # under a second pending: not handed over yet
    block = np.ones(FRAME_SAMPLES * 25, np.int16)
    trace.write(block, block)  # 49 frames pending: all of it goes to the OS now
    assert path.stat().st_size == 44 + 49 * FRAME_SAMPLES * 4
    trace.close()


class _Beep:
    """Agent speech without a synthesizer: 0.3 s of tone per turn."""

    def speak(self, text: str) -> np.ndarray:
        del text
        return np.full(FRAME_SAMPLES * 7 + 100, 2_000, np.int16)


@pytest.mark.parametrize("seed", range(12))
def test_hear_steady_equals_frame_by_frame_on_random_audio(seed: int) -> None:
    """The scripted agent's bulk hearing against its own frame-by-frame path, on random
    stretches of silence, speech and single loud blips, with every kind of turn timing."""
    rng = np.random.default_rng(seed)
    turns = [ScriptTurn(after=after, say="x", barge_in=rng.choice(["yield", "ignore"]))
             for after in ([None, "user", "none", AfterMs(ms=int(rng.integers(0, 3000)))]
                           * 3)]
    script = Script(turns=turns)
    one, bulk = (ScriptedAgent(script, _Beep()) for _ in range(2))  # type: ignore[arg-type]
    loud = np.full(FRAME_SAMPLES, 3_000, np.int16)
    chunks: list[np.ndarray] = []
    for _ in range(60):
        n = int(rng.integers(1, 26))
        kind = rng.integers(0, 3)
        if kind == 0:
            chunks.append(silent_block(n))
        else:
            mask = rng.random(n) < (0.9 if kind == 1 else 0.08)
            chunks.append(np.concatenate([loud if m else np.zeros(FRAME_SAMPLES, np.int16)
                                          for m in mask]))

    async def frame_by_frame() -> list[tuple[int, str]]:
        out, t = [], 0
        for chunk in chunks:
            for i in range(len(chunk) // FRAME_SAMPLES):
                await one.send_audio(chunk[i * FRAME_SAMPLES:(i + 1) * FRAME_SAMPLES], t)
                out += [(t, type(e).__name__) for e in await one.poll(t)]
                t += 40
        return out

    async def in_stretches() -> list[tuple[int, str]]:
        out, t = [], 0
        for chunk in chunks:
            while len(chunk):
                heard = await bulk.hear_steady(chunk, t)
                t += 40 * heard
                chunk = chunk[heard * FRAME_SAMPLES:]
                if len(chunk):  # the agent has something to say on this frame
                    await bulk.send_audio(chunk[:FRAME_SAMPLES], t)
                    out += [(t, type(e).__name__) for e in await bulk.poll(t)]
                    t += 40
                    chunk = chunk[FRAME_SAMPLES:]
        return out

    expected, got = asyncio.run(frame_by_frame()), asyncio.run(in_stretches())
    assert got == expected
    state = lambda a: (a._vad.in_speech, a._vad._loud, a._vad._quiet,  # noqa: E731
                       a._vad.utterances_ended, a._next)
    assert state(bulk) == state(one)
