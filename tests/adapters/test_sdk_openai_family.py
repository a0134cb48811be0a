"""Each OpenAI-family fake driven by the provider's official SDK client, not by our adapter.

The ``openai`` SDK's websocket clients (``AsyncOpenAI.realtime.connect`` for the GA protocol
OpenAI and xAI speak, ``AsyncOpenAI.beta.realtime.connect`` for the beta protocol StepFun
speaks) take a full tool-calling turn against the fake: session setup with one function tool,
user audio (a loud tone, then quiet: the server VAD ends the turn; StepFun's client commits
and asks), the function call read from the SDK's typed events, its output and a new response,
the reply's audio, a barge-in (OpenAI's server cancels; the xAI and StepFun clients send
``response.cancel``), a truncate past the audio received (refused) and one at the heard
position (``conversation.item.truncated``).

Every event the SDK hands back must be the SDK model of its own type (the SDK's parser falls
back to the union's first model for a type it does not know), must validate strictly against
the SDK's union and carry no field the model does not declare; the fake must record no
violation; and the event sequence of each step is fixed. A fake drifting from the SDK's types
fails here even where our adapter would not notice.
"""

from __future__ import annotations

import asyncio
import json
import typing
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

import pytest
from openai import AsyncOpenAI
from pydantic import TypeAdapter, ValidationError

from runtime.agents.scripted import Script, ScriptTool, ScriptTurn
from runtime.core.audio import frames, silence
from tests.adapters.conftest import speech, user_turn
from tests.adapters.harness import Scenario
from tests.fakes.realtime.base import API_KEY, FakeRealtimeServer, b64_pcm, pcm_b64
from tests.fakes.realtime.openai_family import (
    GrokFake,
    OpenAIFake,
    StepFunFake,
    undeclared_fields,
)

TOOL: dict[str, Any] = {"type": "function", "name": "lookup", "description": "Look something up.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
ANSWER = "The answer is alpha, and here is a long explanation of it. " * 2
SCRIPT = Script(turns=[
    ScriptTurn(tools=[ScriptTool(name="lookup", args={"q": "alpha"})], say=ANSWER),
    ScriptTurn(say="Go ahead."),
])


def union_models(union: Any) -> dict[str, Any]:
    args: tuple[Any, ...] = typing.get_args(union)
    if typing.get_origin(union) is typing.Annotated:
        args = typing.get_args(args[0])
    return {t: arm for arm in args for t in typing.get_args(arm.model_fields["type"].annotation)}


def collapse(kinds: list[str]) -> list[str]:
    """Consecutive repeats of one type (audio chunks) as one."""
    return [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]


@dataclass
class SdkSession:
    """An SDK connection in lockstep with the fake: after each step, read exactly what the
    fake sent in answer (no timers, no guessing)."""

    conn: Any
    fake: FakeRealtimeServer
    union: Any
    loose: frozenset[str] = frozenset()
    """Types whose payload is the provider's own (xAI's session): checked by model class
    only."""
    sent: int = 0
    got: int = 0
    events: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.models = union_models(self.union)
        self.adapter: TypeAdapter[Any] = TypeAdapter(self.union)

    async def send(self, *calls: Awaitable[None]) -> list[Any]:
        """Run SDK sends (one client message each), then receive every answer."""
        for call in calls:
            await call
            self.sent += 1
        expected = await self.fake.settle(self.sent)
        new: list[Any] = []
        while self.got < expected:
            # What connection.recv() does, keeping the frame for the strict check.
            raw = await asyncio.wait_for(self.conn.recv_bytes(), 5)
            new.append(self.check(self.conn.parse_event(raw), raw))
            self.got += 1
        self.events += new
        return new

    def check(self, event: Any, raw: str | bytes) -> Any:
        """``event``, the SDK's parse of ``raw``, is the SDK model of its type; ``raw``
        validates strictly against the union and has no field the model does not declare."""
        model = self.models.get(event.type)
        assert model is not None, f"{event.type} is not in the SDK union"
        assert type(event) is model, f"{event.type} parsed as {type(event).__name__}"
        if event.type in self.loose:
            return event
        parsed = self.adapter.validate_json(raw)
        extras = [f for f in undeclared_fields(parsed) if f != ".session.id"]
        assert extras == [], f"{event.type}: fields the SDK does not declare: {extras}"
        return event

    async def audio(self, pcm_frames: list[Any]) -> list[Any]:
        return await self.send(*(self.conn.input_audio_buffer.append(audio=b64_pcm(f))
                                 for f in pcm_frames))


def kinds(events: list[Any]) -> list[str]:
    return collapse([e.type for e in events])


def received_ms(events: list[Any], delta_type: str, item_id: str) -> int:
    samples = sum(len(pcm_b64(e.delta)) for e in events
                  if e.type == delta_type and e.item_id == item_id)
    return samples * 1000 // 24_000


async def tool_turn_with_barge_in(s: SdkSession, *, beta: bool, server_cancels: bool,
                                  commit: bool) -> dict[str, list[str]]:
    """The shared conversation; returns each step's (collapsed) event types."""
    audio = "response.audio" if beta else "response.output_audio"
    steps: dict[str, list[str]] = {}

    # The user asks; the model calls the tool.
    heard = await s.audio(user_turn())
    if commit:
        heard += await s.send(s.conn.input_audio_buffer.commit(), s.conn.response.create())
    heard += await s.audio([silence()])  # the tool response's done lags one frame
    steps["ask"] = kinds(heard)
    call = next(e for e in heard if e.type == "response.function_call_arguments.done")
    item = next(e.item for e in heard if e.type == "response.output_item.added")
    assert (item.type, item.call_id, item.name) == ("function_call", call.call_id, "lookup")
    assert call.arguments == '{"q": "alpha"}'
    assert getattr(call, "name", "lookup") == "lookup"

    # The client answers the call and asks for the reply; its audio streams.
    output = {"type": "function_call_output", "call_id": call.call_id, "output": '{"ok": true}'}
    reply = await s.send(s.conn.conversation.item.create(item=output),
                         s.conn.response.create())
    reply += await s.audio([silence()] * 3)
    steps["reply"] = kinds(reply)
    speaking = next(e for e in reply if e.type == f"{audio}.delta")
    assert next(e for e in reply if e.type == f"{audio}_transcript.delta").delta == ANSWER

    # The user barges in while the agent speaks.
    barge = await s.audio(frames(speech(120)))
    if not server_cancels:
        barge += await s.send(s.conn.response.cancel())
    steps["barge_in"] = kinds(barge)
    done = [e for e in barge if e.type == "response.done"]
    assert [(d.response.status, d.response.status_details.reason) for d in done] == [
        ("cancelled", "turn_detected" if server_cancels else "client_cancelled")]

    # The client reports what was heard: not more than it received, then half of it.
    got_ms = received_ms(s.events, f"{audio}.delta", speaking.item_id)
    refused = await s.send(s.conn.conversation.item.truncate(
        item_id=speaking.item_id, content_index=0, audio_end_ms=got_ms + 40))
    assert [(e.type, e.error.param) for e in refused] == [("error", "audio_end_ms")]
    truncated = await s.send(s.conn.conversation.item.truncate(
        item_id=speaking.item_id, content_index=0, audio_end_ms=got_ms // 2))
    assert [(e.type, e.item_id, e.audio_end_ms) for e in truncated] == [
        ("conversation.item.truncated", speaking.item_id, got_ms // 2)]
    assert s.fake.violations == []
    return steps


def client(fake: FakeRealtimeServer) -> AsyncOpenAI:
    return AsyncOpenAI(api_key=API_KEY, websocket_base_url=f"ws://127.0.0.1:{fake.port}/v1")


GA_REPLY = [
    "conversation.item.added", "response.created", "response.output_item.added",
    "response.content_part.added", "response.output_audio_transcript.delta",
    "response.output_audio.delta",
]


async def test_openai_sdk_client_takes_a_tool_turn_with_barge_in() -> None:
    from openai.types.realtime import RealtimeServerEvent

    async with OpenAIFake(Scenario(script=SCRIPT)) as fake:
        async with client(fake).realtime.connect(model="gpt-realtime") as conn:
            s = SdkSession(conn, fake, RealtimeServerEvent)
            setup = await s.send(conn.session.update(session={
                "type": "realtime", "instructions": "Be brief.", "tools": [typing.cast(Any, TOOL)],
                "tool_choice": "auto", "audio": {"output": {"voice": "marin"}},
            }))
            assert kinds(setup) == ["session.created", "session.updated"]
            steps = await tool_turn_with_barge_in(s, beta=False, server_cancels=True,
                                                  commit=False)
        assert fake.requests[0][0] == "/v1/realtime?model=gpt-realtime"
    assert steps == {
        "ask": ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
                "input_audio_buffer.committed", "response.created",
                "response.output_item.added", "response.function_call_arguments.delta",
                "response.function_call_arguments.done", "response.output_item.done",
                "response.done"],
        "reply": GA_REPLY,
        "barge_in": ["response.output_audio.delta", "input_audio_buffer.speech_started",
                     "response.output_audio.done", "response.output_audio_transcript.done",
                     "response.content_part.done", "response.output_item.done",
                     "response.done"],
    }


async def test_grok_with_the_openai_sdk_client_takes_a_tool_turn_with_barge_in() -> None:
    """xAI speaks the GA event names, so the SDK's GA client works against it; the session is
    xAI's own flat shape (checked by model class only), and xAI's server VAD leaves the cancel
    to the client."""
    from openai.types.realtime import RealtimeServerEvent

    async with GrokFake(Scenario(script=SCRIPT)) as fake:
        async with client(fake).realtime.connect(model="grok-voice-think-fast-2.0") as conn:
            s = SdkSession(conn, fake, RealtimeServerEvent,
                           loose=frozenset({"session.updated"}))
            setup = await s.send(conn.session.update(session=typing.cast(Any, {
                "instructions": "Be brief.", "voice": "Ara", "tools": [TOOL],
                "turn_detection": {"type": "server_vad"},
                "audio": {side: {"format": {"type": "audio/pcm", "rate": 24_000}}
                          for side in ("input", "output")},
            })))
            assert kinds(setup) == ["conversation.created", "session.updated"]
            assert setup[1].to_dict()["session"]["voice"] == "Ara"
            steps = await tool_turn_with_barge_in(s, beta=False, server_cancels=False,
                                                  commit=False)
        assert fake.requests[0][0] == "/v1/realtime?model=grok-voice-think-fast-2.0"
    assert steps["ask"][:3] == ["input_audio_buffer.speech_started",
                                "input_audio_buffer.speech_stopped",
                                "input_audio_buffer.committed"]
    assert steps["reply"] == GA_REPLY
    assert steps["barge_in"] == [
        "response.output_audio.delta", "input_audio_buffer.speech_started",
        "response.output_audio.delta", "response.output_audio.done",
        "response.output_audio_transcript.done", "response.content_part.done",
        "response.output_item.done", "response.done",
    ]


@pytest.mark.parametrize("vad", [None, "server_vad"], ids=["client-commit", "server-vad"])
async def test_stepfun_with_the_beta_sdk_client_takes_a_tool_turn_with_barge_in(
    vad: str | None,
) -> None:
    """StepFun speaks the beta protocol: the SDK's beta client (``OpenAI-Beta: realtime=v1``)
    and beta models. By default the client commits and asks; with ``server_vad`` the server
    ends the turn. Either way the client cancels on a barge-in."""
    from openai.types.beta.realtime import RealtimeServerEvent

    async with StepFunFake(Scenario(script=SCRIPT)) as fake:
        async with client(fake).beta.realtime.connect(model="step-audio-2") as conn:
            s = SdkSession(conn, fake, RealtimeServerEvent)
            setup = await s.send(conn.session.update(session=typing.cast(Any, {
                "modalities": ["text", "audio"], "instructions": "Be brief.",
                "voice": "qingchunshaonv", "input_audio_format": "pcm16",
                "output_audio_format": "pcm16", "tools": [TOOL],
                "turn_detection": {"type": vad} if vad else None,
            })))
            assert kinds(setup) == ["session.created", "session.updated"]
            steps = await tool_turn_with_barge_in(s, beta=True, server_cancels=False,
                                                  commit=vad is None)
        headers = fake.requests[0][1]
        assert headers.get("OpenAI-Beta") == "realtime=v1"
    turn = ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped"]
    assert steps["ask"] == (turn if vad else []) + [
        "input_audio_buffer.committed", "response.created", "response.output_item.added",
        "response.function_call_arguments.delta", "response.function_call_arguments.done",
        "response.output_item.done", "response.done",
    ]
    assert steps["reply"] == [
        "conversation.item.created", "response.created", "response.output_item.added",
        "response.content_part.added", "response.audio_transcript.delta",
        "response.audio.delta",
    ]
    assert steps["barge_in"] == ["response.audio.delta"] + (
        ["input_audio_buffer.speech_started", "response.audio.delta"] if vad else []) + [
        "response.audio.done", "response.audio_transcript.done",
        "response.content_part.done", "response.output_item.done", "response.done",
    ]


@pytest.mark.parametrize("beta", [False, True], ids=["ga", "beta"])
def test_the_sdk_check_has_teeth(beta: bool) -> None:
    """What the tests above apply to every event the SDK client hands them catches an event
    type the SDK does not model, the other protocol's spelling of a type or of a content type,
    and a misspelled field (which the SDK's own parser would keep silently)."""
    from openai._models import construct_type_unchecked
    from openai.types.beta.realtime import RealtimeServerEvent as Beta
    from openai.types.realtime import RealtimeServerEvent as GA

    union = Beta if beta else GA
    s = SdkSession(conn=None, fake=OpenAIFake(), union=union)

    def received(event: dict[str, Any]) -> None:  # connection.parse_event, then the check
        parsed = construct_type_unchecked(value=event, type_=typing.cast(Any, union))
        s.check(parsed, json.dumps(event))

    audio = {"event_id": "e", "response_id": "r", "item_id": "i", "output_index": 0,
             "content_index": 0, "delta": "AAAA"}
    other = "response.output_audio.delta" if beta else "response.audio.delta"
    for raw in ({"type": "ping", "event_id": "e", "timestamp": 1}, {"type": other, **audio}):
        with pytest.raises(AssertionError, match="not in the SDK union"):
            received(raw)
    item = {"id": "i", "type": "message", "role": "assistant",
            "content": [{"type": "audio" if not beta else "output_audio", "transcript": ""}]}
    with pytest.raises(ValidationError):
        received({"type": "conversation.item.created", "event_id": "e", "item": item})
    with pytest.raises(AssertionError, match="does not declare"):
        received({"type": "conversation.item.truncated", "event_id": "e", "item_id": "i",
                  "content_index": 0, "audio_end_ms": 1, "audio_end_msec": 1})
