"""Recorded sessions, the replay side: every fixture in ``tests/fixtures/wire/`` replays through
its provider's real adapter (wire models, event handling, client messages; strict protocol
mode) with the task's frozen user, and the adapter must produce the tool calls and agent
transcripts it produced when the session was recorded, with no protocol error and no run
ended. A fresh recording against each fake round-trips the same way, and tampering with a
fixture's wire makes the comparison fail.

Fixtures recorded against the fakes are regenerated with
``.venv/bin/python -m tests.fixtures.wire.regenerate``; recordings of real services come from
``apex-voice adapters record`` (docs/adapters.md, "Recorded sessions").
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from runtime.agents.registry import PROVIDER_MODULES
from runtime.agents.wire_format import Fixture, read_fixture
from tests.adapters.wire_replay import (
    HARNESSES,
    client_drift,
    mismatches,
    record_against_fake,
    recorded_controls,
    replay,
)
from tests.fixtures.wire.regenerate import HERE as FIXTURES
from tests.fixtures.wire.regenerate import KEY as FIXTURE_KEY
from tests.fixtures.wire.regenerate import TASK

SHIPPED = sorted(FIXTURES.glob("*.jsonl"))

KNOWN_KEYS = (FIXTURE_KEY, "test-key", "fake-gemini-key")
"""Every key a fake of this repository accepts: none may be in a fixture."""


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
async def test_fixture_replays_through_its_adapter(path: Path, tmp_path: Path) -> None:
    outcome = await replay(path, tmp_path / "replay")
    problems = mismatches(outcome)
    assert problems == [], "\n".join(problems)
    expect = outcome.fixture.header.expect
    assert expect.tool_calls and expect.transcripts  # a conversation, not an empty session
    assert outcome.got.failure_class == "none"


def test_every_provider_has_a_fixture() -> None:
    kinds = {read_fixture(p).header.agent.kind for p in SHIPPED}
    assert kinds == set(PROVIDER_MODULES) & set(HARNESSES)
    assert kinds >= {"openai-realtime", "grok", "stepfun", "gpt-live"}


_LONG_BASE64 = re.compile(r'"([A-Za-z0-9+/]{64,}={0,2})"')


def _payloads(text: str) -> list[str]:
    """Long base64-looking strings that are not sha256 digests (hex): payloads (none allowed)."""
    return [m[:80] for m in _LONG_BASE64.findall(text) if not re.fullmatch(r"[0-9a-f]{64}", m)]


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_fixture_has_no_key_and_no_audio(path: Path) -> None:
    text = path.read_text()
    for key in KNOWN_KEYS:
        assert key not in text
    assert "Bearer" not in text and "x-goog-api-key" not in text.lower()
    fixture = read_fixture(path)
    assert "?" not in fixture.header.upstream and "@" not in fixture.header.upstream
    assert _payloads(text) == []
    audio = fixture.header.frames
    assert audio["client_audio"] > 100 and audio["server_audio"] > 10
    assert path.stat().st_size < 600_000


# --------------------------------------------------------------------------- teeth


def _tamper(fixture: Fixture, key: str, old: str, new: str) -> int:
    """Replace string ``old`` by ``new`` under ``key`` in every *server* frame."""
    count = 0

    def walk(node: Any) -> Any:
        nonlocal count
        if isinstance(node, dict):
            out = {}
            for k, v in node.items():
                if k == key and v == old:
                    out[k] = new
                    count += 1
                else:
                    out[k] = walk(v)
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    for frame in fixture.frames:
        if frame.dir == "server" and frame.msg is not None:
            frame.msg = walk(frame.msg)
    return count


def _openai_fixture() -> Path:
    return next(p for p in SHIPPED if "openai-realtime" in p.name)


async def test_a_tampered_tool_name_fails_the_replay(tmp_path: Path) -> None:
    fixture = read_fixture(_openai_fixture())
    name = fixture.header.expect.tool_calls[-1].name
    assert _tamper(fixture, "name", name, name + "_tampered") > 0
    outcome = await replay(fixture, tmp_path / "replay")
    problems = mismatches(outcome)
    assert any(p.startswith("tool calls differ") for p in problems), problems
    assert f'"{name}_tampered"' in "\n".join(problems)


async def test_a_tampered_transcript_fails_the_replay(tmp_path: Path) -> None:
    fixture = read_fixture(_openai_fixture())
    # The last utterance's transcript, as its final ``.done`` event carries it.
    done = [f for f in fixture.frames if f.dir == "server" and isinstance(f.msg, dict)
            and str(f.msg.get("type", "")).endswith("audio_transcript.done")]
    text = done[-1].msg["transcript"]
    assert _tamper(fixture, "transcript", text, "Something else entirely.") > 0
    problems = mismatches(await replay(fixture, tmp_path / "replay"))
    assert any(p.startswith("agent transcripts differ") for p in problems), problems


async def test_a_missing_server_frame_fails_the_replay(tmp_path: Path) -> None:
    """Dropping the frame with the first tool call: the conversation cannot be the same."""
    fixture = read_fixture(_openai_fixture())
    first = next(i for i, f in enumerate(fixture.frames) if f.dir == "server"
                 and isinstance(f.msg, dict)
                 and f.msg.get("type") == "response.function_call_arguments.done")
    del fixture.frames[first]
    problems = mismatches(await replay(fixture, tmp_path / "replay"))
    assert any(p.startswith("tool calls differ") for p in problems), problems


# --------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("kind", sorted(HARNESSES))
async def test_record_then_replay_round_trip(kind: str, tmp_path: Path) -> None:
    """The recorder, through its proxy, against each fake; the fixture it writes replays."""
    key = f"sk-round-trip-{kind}-7c1d"
    out = tmp_path / "session.jsonl"
    recording = await record_against_fake(kind, TASK, out, key=key, run_dir=tmp_path / "run",
                                          query="api_key=query-secret-3a9b")
    header = recording.header
    assert recording.run.end_reason == "user_goodbye"
    assert header.agent.kind == kind and header.task_id == TASK and header.clock == "virtual"
    assert header.expect.failure_class == "none" and header.expect.tool_calls
    assert header.upstream.startswith(("ws://127.0.0.1:", "wss://127.0.0.1:"))
    text = out.read_text()
    assert key not in text and "query-secret-3a9b" not in text and "api_key" not in text

    # Audio is digested both ways, with the lengths the adapter and the fake put on the wire.
    fixture = read_fixture(out)
    assert fixture.header.frames["client_audio"] == sum(1 for f in fixture.frames
                                                        if f.dir == "client" and f.audio)
    restored = [f.payload() for f in fixture.frames if f.audio]
    assert all(len(p) > 0 for p in restored)
    assert "$audio" in text and _payloads(text) == []

    outcome = await replay(out, tmp_path / "replay")
    assert mismatches(outcome) == []
    assert outcome.pending == 0  # every recorded server frame was replayed
    assert client_drift(outcome) == []
    assert outcome.client_controls == recorded_controls(fixture)


async def test_replayed_audio_has_the_recorded_length(tmp_path: Path) -> None:
    fixture = read_fixture(_openai_fixture())
    deltas = [f for f in fixture.frames if f.dir == "server" and f.audio]
    sent = json.loads(deltas[0].payload())
    pcm = base64.b64decode(sent["delta"])
    assert len(pcm) == deltas[0].msg["delta"]["$audio"]["bytes"]
    assert any(pcm)  # a tone, not silence: the agent is audible in a replayed trace
