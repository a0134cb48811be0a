"""Fixtures of the shared adapter suite: one fake server per provider harness, run helpers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from runtime.agents.base import (
    AgentAdapter,
    AgentEvent,
    AgentSessionConfig,
    AudioDelta,
    Interrupted,
    ResponseDone,
    ToolCallRequest,
)
from runtime.core.audio import FRAME_SAMPLES, SAMPLE_RATE, Pcm, frames, silence
from runtime.core.events import Event, read_events
from runtime.core.spec import TaskSpec, find_task
from runtime.session.campaign import AgentFactory, run_one
from runtime.session.orchestrator import RunResult
from tests.adapters.harness import ProviderHarness, Scenario, discover, oracle_conversation

HARNESSES = discover()


conversation = oracle_conversation
"""The fake model's script for a shipped task: its oracle, minus the greeting."""


def _harness_modes() -> list[Any]:
    params = []
    for kind in sorted(HARNESSES):
        for mode in HARNESSES[kind]().modes:
            name = kind if mode == "minimal" else f"{kind}/{mode}"
            params.append(pytest.param((kind, mode), id=name))
    return params


@pytest.fixture(params=_harness_modes())
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[ProviderHarness]:
    """Every provider harness in every wire mode of its fake (ids ``kind`` and ``kind/mode``)."""
    kind, mode = request.param
    h = HARNESSES[kind]()
    h.mode = mode
    yield h
    await h.stop()


@dataclass
class Run:
    result: RunResult
    events: list[Event]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


async def run_task(
    harness: ProviderHarness, task_id: str, scenario: Scenario, out: Path, **adapter_kw: Any,
) -> Run:
    """One virtual-clock run of a shipped task with its frozen simulator against the fake."""
    await harness.start(scenario)
    task: TaskSpec = find_task(task_id)
    factory = AgentFactory(harness.kind, lambda _task: harness.adapter(**adapter_kw))
    result = await run_one(task, factory, out / task.id, seed=0, repeat=0)
    log = read_events(result.run_dir / "events.jsonl")
    assert not log.problems, log.problems
    return Run(result, log.events)


def speech(ms: int = 1000, hz: float = 300.0) -> Pcm:
    t = np.arange(SAMPLE_RATE * ms // 1000) / SAMPLE_RATE
    return (6000 * np.sin(2 * np.pi * hz * t)).astype(np.int16)


def user_turn(ms: int = 1000, pause_ms: int = 1200) -> list[Pcm]:
    """Frames of one user utterance (a loud tone) and the pause that ends the turn."""
    return frames(speech(ms)) + [silence() for _ in range(pause_ms // 40)]


CONFIG = AgentSessionConfig(
    task_id="adapter-test", instructions="You are a test agent.",
    tools=[{"type": "function", "name": "lookup", "description": "Look something up.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}],
    sample_rate=SAMPLE_RATE,
)


async def drive(adapter: AgentAdapter, pcm_frames: list[Pcm], *, t0: int = 0,
                answer_tools: bool = True,
                timed: list[tuple[int, AgentEvent]] | None = None) -> list[AgentEvent]:
    """Feed frames the way the orchestrator does: send a frame, poll, answer tool calls at
    once, play agent audio out 40 ms per frame, and on ``Interrupted`` drop the unplayed audio
    and report what was heard with ``truncated`` (runtime/session/orchestrator.py, reduced).
    ``timed`` also collects each event with the index of the frame it arrived at."""
    events: list[AgentEvent] = []
    buffered = played = 0
    speaking = done = False
    t = t0
    for i, frame in enumerate(pcm_frames):
        assert len(frame) == FRAME_SAMPLES
        await adapter.send_audio(frame, t)
        for event in await adapter.poll(t):
            events.append(event)
            if timed is not None:
                timed.append((i, event))
            if answer_tools and isinstance(event, ToolCallRequest):
                await adapter.send_tool_result(event.call_id, {"ok": True})
            elif isinstance(event, AudioDelta):
                if not speaking:
                    speaking, played, done = True, 0, False
                buffered += len(event.pcm)
            elif isinstance(event, ResponseDone):
                done = True
            elif isinstance(event, Interrupted) and speaking and buffered:
                await adapter.truncated(played * 1000 // SAMPLE_RATE)
                speaking, buffered = False, 0
        if speaking and buffered:
            chunk = min(FRAME_SAMPLES, buffered)
            buffered -= chunk
            played += chunk
        if speaking and not buffered and done:
            speaking = False
        t += 40
    return events
