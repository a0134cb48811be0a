"""Live provider tests: one shipped task per provider against the real API, in realtime.

Skipped unless both the provider's key and ``APEX_LIVE_TESTS=1`` are set: a developer with
``OPENAI_API_KEY`` in their shell must not spend money, or leave loopback, on a plain
``pytest`` (DESIGN §5). Run them with, e.g.::

    APEX_LIVE_TESTS=1 OPENAI_API_KEY=sk-... .venv/bin/pytest -q tests/adapters/test_live.py

They check the adapter, not the model: the session opens, the agent speaks and is heard by the
observer, tool calls reach the Workbench when the model makes them, and the run ends without
an infrastructure drop or a provider error. The Workflow Success of the run is printed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from grading.gates import grade_run_dir
from runtime.core.events import read_events
from runtime.core.spec import find_task
from runtime.session.campaign import parse_agent_spec, run_one

LIVE = [
    ("openai-realtime", "OPENAI_API_KEY"),
    ("grok", "XAI_API_KEY"),
    ("stepfun", "STEPFUN_API_KEY"),
    ("gpt-live", "OPENAI_API_KEY"),
]


@pytest.mark.parametrize(("kind", "key_env"), LIVE, ids=[k for k, _ in LIVE])
async def test_live_provider_runs_a_shipped_task(kind: str, key_env: str, tmp_path: Path) -> None:
    if os.environ.get("APEX_LIVE_TESTS") != "1" or not os.environ.get(key_env):
        pytest.skip(f"live test: set APEX_LIVE_TESTS=1 and {key_env} to run it")
    task = find_task("apexv1_001")
    result = await run_one(
        task, parse_agent_spec(kind), tmp_path / task.id, seed=0, repeat=0, clock="realtime",
    )
    events = read_events(result.run_dir / "events.jsonl").events
    errors = [e for e in events if e.type == "agent.error"]
    assert result.failure_class != "infrastructure", result
    assert not errors, errors
    assert any(e.type == "agent.speech.start" for e in events)
    assert any(e.type == "agent.transcript" for e in events)
    grade = grade_run_dir(result.run_dir, {task.id: task})
    print(json.dumps({"provider": kind, "end_reason": result.end_reason, "WS": grade.WS,
                      "gates": grade.gates, "afa": grade.afa}))
