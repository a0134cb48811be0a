"""The GPT-Live fake driven by the ``openai`` SDK's own Live client, not by our adapter.

``AsyncOpenAI(...).live.connect()`` opens the fake's ``/v1/live/sessions`` socket; the test
sends the SDK's client events (``session.start``, ``session.update``,
``session.instructions.append``, ``session.input_audio.mute``/``unmute``, audio,
``response.item.create``, ``response.create``, ``session.close``) and reads every server
event through the SDK's ``recv()``. Every received message must also validate strictly
against the SDK's ``live.ServerEvent`` union (and the nested Responses stream against
``responses.ResponseStreamEvent``), and the fake must record no violation of the SDK's client
models, so a fake that drifts from the SDK fails here whatever our adapter does.

One full tool-calling turn with a barge-in, in every wire mode of the fake. The Live API has
no truncation message on the primary websocket: the barge-in is the server's (its voice stops
when the user talks), which the test checks on the audio.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import numpy as np
import openai
import pytest
from openai.types.live import ServerEvent
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from runtime.agents.scripted import Script, ScriptTool, ScriptTurn
from tests.adapters.harness import Scenario
from tests.fakes.realtime.base import API_KEY
from tests.fakes.realtime.gpt_live import GptLiveFake
from tests.fakes.realtime.harness import GptLiveHarness

RATE = 24_000
FRAME = RATE * 40 // 1000
ANSWER = "I found the record; it says the order shipped on Monday and arrives on Thursday."

SCRIPT = Script(turns=[ScriptTurn(tools=[ScriptTool(name="lookup", args={"q": "order 7"})],
                                  say=ANSWER)])

SERVER: TypeAdapter[Any] = TypeAdapter(ServerEvent)
NESTED: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)


def frame(loud: bool) -> str:
    n = np.arange(FRAME)
    pcm = (6000 * np.sin(2 * np.pi * 300 * n / RATE)).astype(np.int16) if loud else (
        np.zeros(FRAME, dtype=np.int16))
    return base64.b64encode(pcm.astype("<i2").tobytes()).decode("ascii")


def loudness(delta: str) -> float:
    pcm = np.frombuffer(base64.b64decode(delta), dtype="<i2").astype(np.float64)
    return float(np.sqrt(np.mean(pcm ** 2))) if len(pcm) else 0.0


class Reader:
    """Reads the connection through the SDK in the background; keeps (typed, raw) events."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.events: list[Any] = []
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for event in self.conn:
            self.events.append(event)

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]

    def nested(self, kind: str) -> list[Any]:
        return [e.event for e in self.of("response.event") if e.event.get("type") == kind]

    async def until(self, what: str, check: Any, timeout: float = 5.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not check():
            assert loop.time() < deadline, f"no {what}; got {[e.type for e in self.events]}"
            await asyncio.sleep(0.005)


async def send_frames(conn: Any, loud: bool, count: int) -> None:
    for _ in range(count):
        await conn.send({"type": "session.input_audio.append", "audio": frame(loud)})
        await asyncio.sleep(0.002)


@pytest.mark.parametrize("mode", GptLiveHarness.modes)
async def test_sdk_live_client_runs_a_tool_turn_with_barge_in(mode: str) -> None:
    async with GptLiveFake(Scenario(script=SCRIPT, mode=mode, audio_speedup=1.0)) as fake:
        client = openai.AsyncOpenAI(api_key=API_KEY,
                                    websocket_base_url=f"ws://127.0.0.1:{fake.port}/v1")
        async with client.live.connect() as conn:
            reader = Reader(conn)
            await conn.send({"type": "session.start", "event_id": "start_1", "session": {
                "model": "gpt-live-1", "instructions": "You are a test agent.",
                "audio": {"format": {"type": "audio/pcm", "rate": RATE},
                          "output": {"voice": "marin"}},
                "delegation": {"type": "responses", "responses": {
                    "model": "gpt-5.6-sol", "instructions": "Use the tools.",
                    "tools": [{"type": "function", "name": "lookup",
                               "description": "Look something up.",
                               "parameters": {"type": "object",
                                              "properties": {"q": {"type": "string"}}}}],
                }},
            }})
            await reader.until("session.started", lambda: reader.of("session.started"))

            # The session commands a client may send besides audio.
            await conn.send({"type": "session.update", "event_id": "upd_1", "session": {
                "delegation": {"type": "responses",
                               "responses": {"instructions": "Be brief."}}}})
            await conn.send({"type": "session.instructions.append", "event_id": "app_1",
                             "content": "The caller is on a mobile phone."})
            await conn.send({"type": "session.input_audio.mute", "event_id": "mute_1"})
            await send_frames(conn, True, 10)  # muted: not heard, no turn
            await conn.send({"type": "session.input_audio.unmute", "event_id": "unmute_1"})
            await reader.until("acknowledgements", lambda: reader.of("session.input_audio.unmuted"))
            assert [e.client_event_id for e in reader.of("session.updated")] == ["upd_1"]
            assert [e.client_event_id for e in reader.of("session.instructions.appended")] == [
                "app_1"]
            assert [e.client_event_id for e in reader.of("session.input_audio.muted")] == [
                "mute_1"]
            assert not reader.of("session.input_transcript.delta")
            assert not reader.of("session.delegation.created")

            # The user's turn: the voice delegates, the backend calls the tool.
            await send_frames(conn, True, 25)
            await send_frames(conn, False, 25)
            await reader.until("function call", lambda: [
                e for e in reader.nested("response.output_item.done")
                if e["item"]["type"] == "function_call"])
            call = next(e["item"] for e in reader.nested("response.output_item.done")
                        if e["item"]["type"] == "function_call")
            assert call["name"] == "lookup" and json.loads(call["arguments"]) == {"q": "order 7"}
            await send_frames(conn, False, 2)
            await conn.send({"type": "response.item.create", "event_id": "out_1", "item": {
                "type": "function_call_output", "call_id": call["call_id"],
                "output": json.dumps({"status": "shipped"})}})
            await conn.send({"type": "response.create", "event_id": "create_1"})

            # The voice speaks the answer; the user cuts in a little way into it.
            await reader.until("agent speech", lambda: reader.of("session.output_transcript.delta"))
            await send_frames(conn, False, 10)
            spoken = [e for e in reader.of("session.output_audio.delta")
                      if loudness(e.delta) > 100]
            assert spoken, "the voice never spoke"
            before = len(reader.events)
            transcripts = len(reader.of("session.input_transcript.delta"))
            await send_frames(conn, True, 25)
            await send_frames(conn, False, 25)
            await reader.until("user transcript", lambda: len(
                reader.of("session.input_transcript.delta")) > transcripts)
            # The server stopped its voice at the user's onset (second loud frame): after it,
            # any audio it streams is silence.
            after = [e for e in reader.events[before + 2:]
                     if e.type == "session.output_audio.delta"]
            assert all(loudness(e.delta) < 1 for e in after)
            total_ms = sum(len(base64.b64decode(e.delta)) // 2 for e in spoken) * 1000 // RATE
            assert total_ms < len(ANSWER) * Scenario().speech_ms_per_char, "barge-in not honoured"

            await conn.send({"type": "session.close", "event_id": "close_1"})
            await reader.until("session.closed", lambda: reader.of("session.closed"))
            await reader.task

    assert fake.violations == []
    assert reader.events, "nothing received"
    for event, raw in zip(reader.events, fake.emitted, strict=True):
        assert type(event).__module__.startswith("openai.types.live."), type(event)
        SERVER.validate_python(raw)
        if raw["type"] == "response.event":
            NESTED.validate_python(raw["event"])
    kinds = {e.type for e in reader.events}
    if mode == "full_events":
        assert {"info", "session.usage.updated"} <= kinds
        nested = {e.event["type"] for e in reader.of("response.event")}
        assert {"response.in_progress", "response.function_call_arguments.delta",
                "response.reasoning_summary_text.delta"} <= nested
    if mode == "open_backend":
        assert not reader.nested("response.completed")
    if mode == "silence_stream":
        silent = [e for e in reader.of("session.output_audio.delta") if loudness(e.delta) < 1]
        assert len(silent) > 50, "the voice did not stream silence"
