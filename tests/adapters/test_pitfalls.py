"""One test per D.2 pitfall, each failing if its fix is removed from the adapter.

Each fake reproduces the provider behaviour that made the fix necessary, and a ``*_has_teeth``
test shows that behaviour with a raw websocket client, so the adapter tests cannot pass
vacuously.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from websockets.asyncio.client import connect

from runtime.agents.base import AgentErrorSignal, AudioDelta, ToolCallRequest, TranscriptDone
from runtime.agents.scripted import Script, ScriptTool, ScriptTurn
from runtime.core.audio import silence
from tests.adapters.conftest import CONFIG, drive, user_turn
from tests.adapters.harness import Scenario
from tests.fakes.realtime.base import API_KEY, b64_pcm
from tests.fakes.realtime.harness import (
    GptLiveHarness,
    GrokHarness,
    OpenAIHarness,
    RealtimeHarness,
    StepFunHarness,
)

ONE_TOOL = Script(turns=[
    ScriptTurn(tools=[ScriptTool(name="lookup", args={"q": "alpha"})], say="Found it."),
])
THREE_TOOLS = Script(turns=[
    ScriptTurn(tools=[ScriptTool(name="lookup", args={"q": q}) for q in ("a", "b", "c")],
               say="All three are done."),
])


async def run_turn(harness: RealtimeHarness, scenario: Scenario, **adapter_kw: Any) -> list[Any]:
    await harness.start(scenario)
    adapter = harness.adapter(**adapter_kw)
    await adapter.connect(CONFIG)
    events = await drive(adapter, user_turn() + [silence()] * 60)
    await adapter.close()
    return events


def server_errors(harness: RealtimeHarness) -> list[dict[str, Any]]:
    assert harness.fake is not None
    return [e["error"] for e in harness.fake.emitted if e["type"] == "error"]


async def raw_session(harness: RealtimeHarness, messages: list[dict[str, Any]]) -> None:
    """Send ``messages`` with a plain websocket client (no adapter), then let the fake settle."""
    assert harness.fake is not None
    async with connect(harness.fake.url, proxy=None, max_queue=None,
                       additional_headers={"Authorization": f"Bearer {API_KEY}"}) as ws:
        for message in messages:
            await ws.send(json.dumps(message))
        await harness.fake.settle(len(messages))


def speech_then_pause(pause_ms: int = 1200) -> list[dict[str, Any]]:
    return [
        {"type": "input_audio_buffer.append", "audio": b64_pcm(f)}
        for f in user_turn(pause_ms=pause_ms)
    ]


@pytest.fixture
async def openai() -> Any:
    h = OpenAIHarness()
    yield h
    await h.stop()


# --------------------------------------------------------------------------- OpenAI realtime


async def test_openai_asks_for_tool_choice_auto_so_the_model_calls_tools(
    openai: OpenAIHarness,
) -> None:
    events = await run_turn(openai, Scenario(script=ONE_TOOL))
    update = next(m for m in openai.sent() if m["type"] == "session.update")
    assert update["session"]["tool_choice"] == "auto"
    assert [e.name for e in events if isinstance(e, ToolCallRequest)] == ["lookup"]


async def test_openai_without_tool_choice_auto_never_calls_tools_has_teeth(
    openai: OpenAIHarness,
) -> None:
    await openai.start(Scenario(script=ONE_TOOL))
    await raw_session(openai, [
        {"type": "session.update", "session": {"type": "realtime", "tools": CONFIG.tools}},
        *speech_then_pause(),
    ])
    assert openai.fake is not None
    kinds = [e["type"] for e in openai.fake.emitted]
    assert "session.updated" in kinds and "response.created" in kinds
    assert "response.function_call_arguments.done" not in kinds


async def test_openai_clamps_an_unknown_voice_and_keeps_the_tools(openai: OpenAIHarness) -> None:
    events = await run_turn(openai, Scenario(script=ONE_TOOL), voice="nova")
    update = next(m for m in openai.sent() if m["type"] == "session.update")
    assert update["session"]["audio"]["output"]["voice"] == "marin"
    assert not [e for e in events if isinstance(e, AgentErrorSignal)]
    assert [e.name for e in events if isinstance(e, ToolCallRequest)] == ["lookup"]
    assert server_errors(openai) == []


async def test_openai_unknown_voice_rejects_the_whole_update_has_teeth(
    openai: OpenAIHarness,
) -> None:
    await openai.start(Scenario(script=ONE_TOOL))
    await raw_session(openai, [
        {"type": "session.update", "event_id": "setup_1", "session": {
            "type": "realtime", "tools": CONFIG.tools, "tool_choice": "auto",
            "audio": {"output": {"voice": "nova"}}}},
        *speech_then_pause(),
    ])
    assert [e["param"] for e in server_errors(openai)] == ["session.audio.output.voice"]
    assert openai.fake is not None
    kinds = [e["type"] for e in openai.fake.emitted]
    assert "session.updated" not in kinds
    assert "response.function_call_arguments.done" not in kinds  # the tools were dropped


async def test_openai_coalesces_response_create_against_the_active_response(
    openai: OpenAIHarness,
) -> None:
    """The fake's ``response.done`` lags the function call by one frame, like a real server's;
    a client that continues as soon as its outputs are in collides with the active response."""
    events = await run_turn(openai, Scenario(script=THREE_TOOLS))
    assert server_errors(openai) == []
    assert not [e for e in events if isinstance(e, AgentErrorSignal)]
    sent = openai.sent()
    creates = [i for i, m in enumerate(sent) if m["type"] == "response.create"]
    assert len(creates) == 1
    assert TranscriptDone(text="All three are done.") in events


async def test_openai_overlapping_response_create_is_refused_has_teeth(
    openai: OpenAIHarness,
) -> None:
    await openai.start(Scenario(script=ONE_TOOL))
    await raw_session(openai, [
        {"type": "session.update", "session": {"type": "realtime", "tools": CONFIG.tools,
                                               "tool_choice": "auto"}},
        # The user turn ends on the 16th quiet frame (640 ms hang-over): the server starts its
        # response there, and its response.done comes one frame later.
        *speech_then_pause(pause_ms=640),
        {"type": "response.create", "event_id": "create_1"},
    ])
    assert [e["code"] for e in server_errors(openai)] == [
        "conversation_already_has_active_response"
    ]


async def test_openai_barge_in_truncates_the_playing_item(openai: OpenAIHarness) -> None:
    """Speech starts while the agent talks: ``Interrupted`` and a truncate of that item at
    the heard position (the shared suite checks the position against the orchestrator's)."""
    script = Script(turns=[ScriptTurn(say="x" * 100), ScriptTurn(say="Sorry, go ahead.")])
    await openai.start(Scenario(script=script))
    adapter = openai.adapter()
    await adapter.connect(CONFIG)
    events = await drive(adapter, user_turn(pause_ms=1600) + user_turn())
    await adapter.close()
    truncates = [m for m in openai.sent() if m["type"] == "conversation.item.truncate"]
    assert len(truncates) == 1
    assert openai.fake is not None
    spoken = [e for e in openai.fake.emitted if e["type"] == "response.output_audio.delta"]
    assert truncates[0]["item_id"] == spoken[0]["item_id"]
    # The first turn ends at 1600 ms (1 s of speech + the VAD's 640 ms hang-over, last frame
    # at 1560) and the agent's audio plays from there; the second utterance starts at 2600 ms
    # and the server's VAD fires on its second loud frame, at 2640: 1040 ms were heard.
    assert truncates[0]["audio_end_ms"] == 1040
    assert TranscriptDone(text="Sorry, go ahead.") in events


# --------------------------------------------------------------------------- Grok


async def test_grok_submits_every_parallel_output_before_one_response_create() -> None:
    """The response is done when its three calls arrive: continuing after the first output
    is exactly what hung Grok."""
    grok = GrokHarness()
    try:
        events = await run_turn(grok, Scenario(script=THREE_TOOLS, done_lag_frames=0))
        sent = grok.sent()
        outputs = grok.tool_output_indexes()
        creates = [i for i, m in enumerate(sent) if m["type"] == "response.create"]
        assert len(outputs) == 3 and len(creates) == 1 and creates[0] > outputs[-1]
        assert TranscriptDone(text="All three are done.") in events  # no hang
        assert grok.fake is not None and not grok.fake.sessions[-1].hung  # type: ignore[attr-defined]
    finally:
        await grok.stop()


async def test_grok_continuing_before_every_output_hangs_has_teeth() -> None:
    grok = GrokHarness()
    try:
        await grok.start(Scenario(script=THREE_TOOLS))
        assert grok.fake is not None
        fake = grok.fake
        async with connect(fake.url, proxy=None, max_queue=None,
                           additional_headers={"Authorization": f"Bearer {API_KEY}"}) as ws:
            messages = [
                {"type": "session.update", "session": {"tools": CONFIG.tools}},
                *speech_then_pause(),
            ]
            for message in messages:
                await ws.send(json.dumps(message))
            await fake.settle(len(messages))
            calls = [e["call_id"] for e in fake.emitted
                     if e["type"] == "response.function_call_arguments.done"]
            assert len(calls) == 3
            # Answer the first call only, and ask to continue.
            for message in (
                {"type": "conversation.item.create", "item": {
                    "type": "function_call_output", "call_id": calls[0], "output": "{}"}},
                {"type": "response.create"},
                *speech_then_pause(),
            ):
                await ws.send(json.dumps(message))
                messages.append(message)
            await fake.settle(len(messages))
        session = fake.sessions[-1]
        assert session.hung  # type: ignore[attr-defined]
        created = [i for i, e in enumerate(fake.emitted) if e["type"] == "response.created"]
        assert len(created) == 2  # the tool calls, then the continuation that never goes on
        after = fake.emitted[created[-1]:]
        assert not [e for e in after if e["type"] in ("response.output_audio.delta",
                                                      "response.done")]
    finally:
        await grok.stop()


# --------------------------------------------------------------------------- StepFun


async def test_stepfun_commits_the_input_buffer_before_asking_for_a_response() -> None:
    stepfun = StepFunHarness()
    try:
        events = await run_turn(stepfun, Scenario(script=Script(turns=[ScriptTurn(say="Hello!")])))
        kinds = [m["type"] for m in stepfun.sent()]
        commit = kinds.index("input_audio_buffer.commit")
        assert kinds[commit + 1] == "response.create"
        assert "turn_detection" not in next(
            m for m in stepfun.sent() if m["type"] == "session.update")["session"]
        assert TranscriptDone(text="Hello!") in events
        assert any(isinstance(e, AudioDelta) for e in events)
    finally:
        await stepfun.stop()


async def test_stepfun_without_commit_never_answers_has_teeth() -> None:
    stepfun = StepFunHarness()
    try:
        await stepfun.start(Scenario(script=Script(turns=[ScriptTurn(say="Hello!")])))
        await raw_session(stepfun, [
            {"type": "session.update", "session": {"tools": []}},
            *speech_then_pause(),
            {"type": "response.create"},
        ])
        assert stepfun.fake is not None
        kinds = [e["type"] for e in stepfun.fake.emitted]
        assert "response.audio.delta" not in kinds  # heard nothing committed: said nothing
    finally:
        await stepfun.stop()


async def test_stepfun_barge_in_cancels_the_response_being_generated() -> None:
    stepfun = StepFunHarness()
    try:
        script = Script(turns=[ScriptTurn(say="x" * 200), ScriptTurn(say="Sorry.")])
        await stepfun.start(Scenario(script=script, audio_speedup=2.0))
        adapter = stepfun.adapter()
        await adapter.connect(CONFIG)
        await drive(adapter, user_turn(pause_ms=1600) + user_turn())
        await adapter.close()
        assert stepfun.cancels() == 1
        assert stepfun.fake is not None
        done = [e for e in stepfun.fake.emitted if e["type"] == "response.done"]
        assert done[0]["response"]["status"] == "cancelled"
    finally:
        await stepfun.stop()


# --------------------------------------------------------------------------- GPT-Live


async def test_gpt_live_names_the_model_in_session_start() -> None:
    live = GptLiveHarness()
    try:
        await run_turn(live, Scenario(script=ONE_TOOL))
        first = live.sent()[0]
        assert first["type"] == "session.start"
        session = first["session"]
        assert session["model"] == "gpt-live-1"
        assert session["audio"] == {"format": {"type": "audio/pcm", "rate": 24000},
                                    "output": {"voice": "marin"}}
        assert session["delegation"]["type"] == "responses"
        assert session["delegation"]["responses"]["tool_choice"] == "auto"
        assert live.fake is not None and "model=" not in live.fake.requests[0][0]
        assert live.violations() == []
    finally:
        await live.stop()
