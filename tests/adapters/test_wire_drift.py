"""Our wire models against the ``openai`` SDK's own type models, so protocol drift is caught.

The SDK (pinned in pyproject) ships the OpenAI realtime and Live event unions. Every server
event type they define must be in our catalogs (known: acted on or ignored by name), and every
message our adapters send must validate against the SDK's client models without a single field
the SDK does not know. xAI and StepFun ship no Python models; their fakes check the session
shapes the providers document.
"""

from __future__ import annotations

import typing
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from runtime.agents.base import AgentSessionConfig
from runtime.agents.providers._openai_style import (
    ConversationItemCreate,
    ConversationItemTruncate,
    FunctionCallOutputItem,
    InputAudioBufferAppend,
    ResponseCreate,
)
from runtime.agents.providers.gpt_live import make_adapter as make_gpt_live
from runtime.agents.providers.gpt_live.events import CATALOG as LIVE_CATALOG
from runtime.agents.providers.gpt_live.events import (
    NESTED,
    FunctionCallOutput,
    InputAudioAppend,
    ResponseItemCreate,
    SessionClose,
)
from runtime.agents.providers.gpt_live.events import VOICES as LIVE_VOICES
from runtime.agents.providers.gpt_live.events import ResponseCreate as LiveResponseCreate
from runtime.agents.providers.openai_realtime import make_adapter as make_openai
from runtime.agents.providers.openai_realtime.events import CATALOG as OPENAI_CATALOG
from runtime.agents.providers.openai_realtime.events import VOICES as OPENAI_VOICES


def union_types(union: Any) -> set[str]:
    args = typing.get_args(union)
    if typing.get_origin(union) is typing.Annotated:
        args = typing.get_args(args[0])
    return {t for arm in args for t in typing.get_args(arm.model_fields["type"].annotation)}


def literal_values(annotation: Any) -> set[str]:
    found: set[str] = set()
    for arg in typing.get_args(annotation):
        if typing.get_origin(arg) is typing.Literal:
            found |= set(typing.get_args(arg))
        else:
            found |= literal_values(arg)
    if typing.get_origin(annotation) is typing.Literal:
        found |= set(typing.get_args(annotation))
    return found


def unknown_fields(model: Any, path: str = "") -> list[str]:
    """Fields present in a validated SDK model that the SDK does not declare (extras)."""
    found: list[str] = []
    if isinstance(model, BaseModel):
        found += [f"{path}.{k}" for k in (model.model_extra or {})]
        for name in type(model).model_fields:
            found += unknown_fields(getattr(model, name), f"{path}.{name}")
    elif isinstance(model, list):
        for i, item in enumerate(model):
            found += unknown_fields(item, f"{path}[{i}]")
    return found


CONFIG = AgentSessionConfig(
    task_id="t", instructions="Be brief.", sample_rate=24_000,
    tools=[{"type": "function", "name": "lookup", "description": "Look up.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}],
)


def test_openai_catalog_covers_exactly_the_sdk_server_events() -> None:
    from openai.types.realtime import RealtimeServerEvent

    assert set(OPENAI_CATALOG.models) == union_types(RealtimeServerEvent)


def test_openai_voices_are_the_sdk_allowlist() -> None:
    from openai.types.realtime.realtime_audio_config_output import RealtimeAudioConfigOutput

    annotation = RealtimeAudioConfigOutput.model_fields["voice"].annotation
    assert set(OPENAI_VOICES) == literal_values(annotation)


@pytest.mark.parametrize("message", [
    make_openai(None, {"OPENAI_API_KEY": "k"}).session(CONFIG),
    InputAudioBufferAppend(audio="AAAA"),
    ConversationItemCreate(event_id="o1", item=FunctionCallOutputItem(call_id="c", output="{}")),
    ResponseCreate(event_id="r1"),
    ConversationItemTruncate(event_id="t1", item_id="i", audio_end_ms=120),
], ids=lambda m: m.type)
def test_openai_client_messages_are_sdk_client_events(message: BaseModel) -> None:
    from openai.types.realtime import RealtimeClientEvent

    parsed = TypeAdapter(RealtimeClientEvent).validate_json(message.model_dump_json(
        exclude_none=True))
    assert unknown_fields(parsed) == []


def test_live_catalog_covers_exactly_the_sdk_server_events() -> None:
    from openai.types.live import ServerEvent

    assert set(LIVE_CATALOG.models) == union_types(ServerEvent)


def test_live_nested_catalog_covers_exactly_the_responses_stream() -> None:
    from openai.types.responses import ResponseStreamEvent

    assert set(NESTED) == union_types(ResponseStreamEvent)


def test_live_voices_are_the_sdk_built_in_voices() -> None:
    from openai.types.live.built_in_voice import BuiltInVoice

    assert set(LIVE_VOICES) == set(typing.get_args(BuiltInVoice))


@pytest.mark.parametrize("message", [
    make_gpt_live(None, {"OPENAI_API_KEY": "k"}).session(CONFIG),
    InputAudioAppend(audio="AAAA"),
    ResponseItemCreate(event_id="o1", item=FunctionCallOutput(call_id="c", output="{}")),
    LiveResponseCreate(event_id="r1"),
    SessionClose(event_id="x1"),
], ids=lambda m: m.type)
def test_live_client_messages_are_sdk_client_events(message: BaseModel) -> None:
    from openai.types.live import ClientEvent

    parsed = TypeAdapter(ClientEvent).validate_json(message.model_dump_json(exclude_none=True))
    assert unknown_fields(parsed) == []
