"""Unit tests of the shared adapter machinery: error categories, the continuation gate, the
playout mirror, wire catalogs, and ``make_adapter`` (environment only, no I/O)."""

from __future__ import annotations

import json
import logging
import socket
from dataclasses import replace

import pytest

from runtime.agents.base import AgentErrorSignal, InfrastructureError
from runtime.agents.errors import (
    ErrorCategory,
    ProviderConfigError,
    WireProtocolError,
    categorize,
    connection_lost,
    provider_error,
)
from runtime.agents.providers._openai_style import AudioDeltaEvent, Ignored, parse_arguments
from runtime.agents.providers._realtime import ContinuationGate, PlayoutMirror
from runtime.agents.providers.openai_realtime.events import CATALOG
from runtime.agents.registry import PROVIDER_MODULES
from runtime.core.audio import FRAME_SAMPLES, SAMPLE_RATE
from runtime.session.campaign import parse_agent_spec
from tests.adapters.conftest import CONFIG

# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("kw", "category"), [
    ({"status": 401}, ErrorCategory.AUTHENTICATION),
    ({"status": 403}, ErrorCategory.AUTHENTICATION),
    ({"status": 429}, ErrorCategory.RATE_LIMIT),
    ({"status": 402}, ErrorCategory.QUOTA),
    ({"status": 503}, ErrorCategory.SERVER),
    ({"status": 400}, ErrorCategory.PROTOCOL),
    ({"error_type": "invalid_request_error", "code": "invalid_api_key"},
     ErrorCategory.AUTHENTICATION),
    ({"error_type": "invalid_request_error", "code": "insufficient_quota"}, ErrorCategory.QUOTA),
    ({"code": "rate_limit_exceeded"}, ErrorCategory.RATE_LIMIT),
    ({"error_type": "server_error"}, ErrorCategory.SERVER),
    ({"code": "RESOURCE_EXHAUSTED"}, ErrorCategory.RATE_LIMIT),
    ({"error_type": "invalid_request_error", "code": "unknown_parameter"},
     ErrorCategory.PROTOCOL),
    ({}, ErrorCategory.PROTOCOL),
])
def test_categorize(kw: dict[str, object], category: ErrorCategory) -> None:
    assert categorize(**kw) is category  # type: ignore[arg-type]


def test_fatality_follows_the_category_and_the_handshake() -> None:
    assert provider_error("x", code="insufficient_quota").fatal
    assert provider_error("x", status=401).fatal
    assert not provider_error("x", code="rate_limit_exceeded").fatal
    assert not provider_error("x", error_type="server_error").fatal
    assert provider_error("x", error_type="server_error", during_handshake=True).fatal
    signal = provider_error("slow down", code="rate_limit_exceeded").signal()
    assert signal == AgentErrorSignal(
        category="rate_limit", message="slow down [rate_limit_exceeded]", fatal=False,
    )


def test_a_lost_connection_is_an_infrastructure_error() -> None:
    err = connection_lost("socket closed")
    assert isinstance(err, InfrastructureError) and "connectivity" in str(err)


# --------------------------------------------------------------------------- continuation gate


def test_gate_owes_one_continuation_after_every_parallel_output() -> None:
    gate = ContinuationGate()
    gate.started()
    for call in ("a", "b", "c"):
        gate.tool_call(call)
    gate.output("a")
    gate.output("b")
    assert not gate.due()  # c is still missing
    gate.output("c")
    assert not gate.due()  # the response that called the tools is still active
    gate.finished()
    assert gate.due()
    gate.requested("create_1")
    assert not gate.due()  # asked once, not again


def test_gate_defers_a_wanted_response_to_the_end_of_the_active_one() -> None:
    gate = ContinuationGate()
    gate.requested("create_1")
    gate.want()
    assert not gate.due()
    gate.finished()
    assert gate.due()


def test_gate_forgets_a_refused_request() -> None:
    gate = ContinuationGate()
    gate.requested("create_1")
    assert not gate.refused("someone_else")
    assert gate.active
    assert gate.refused("create_1")
    assert not gate.active


# --------------------------------------------------------------------------- playout mirror


def test_mirror_maps_the_heard_position_onto_the_item_being_played() -> None:
    """Speech before a tool call (item A, 0.4 s) and the answer after it (item B) play as one
    turn; a barge-in 0.6 s into the turn is 0.2 s into B."""
    mirror = PlayoutMirror()
    mirror.advance(0)
    mirror.audio("A", SAMPLE_RATE * 400 // 1000)
    mirror.done()
    mirror.advance(40)
    mirror.audio("B", SAMPLE_RATE * 2)
    mirror.advance(600)
    assert mirror.played == SAMPLE_RATE * 600 // 1000
    point = mirror.interrupt()
    assert point is not None
    assert (point.item_id, point.audio_end_ms, point.turn_played_ms) == ("B", 200, 600)
    assert not mirror.speaking


def test_mirror_ends_a_turn_like_the_orchestrator() -> None:
    mirror = PlayoutMirror()
    mirror.advance(0)
    mirror.audio("A", FRAME_SAMPLES * 2)
    mirror.advance(80)
    assert mirror.speaking and not mirror.audible  # drained, but no ResponseDone yet
    mirror.done()
    mirror.advance(120)
    assert not mirror.speaking
    assert mirror.interrupt() is None  # nothing buffered: the orchestrator would not truncate


# --------------------------------------------------------------------------- wire catalogs


def test_catalog_parses_known_events_and_raises_on_unknown_ones() -> None:
    delta = CATALOG.parse('{"type": "response.output_audio.delta", "event_id": "e",'
                          ' "response_id": "r", "item_id": "i", "output_index": 0,'
                          ' "content_index": 0, "delta": "AAA="}')
    assert isinstance(delta, AudioDeltaEvent) and delta.item_id == "i"
    assert isinstance(CATALOG.parse('{"type": "rate_limits.updated", "rate_limits": []}'), Ignored)
    with pytest.raises(WireProtocolError, match=r"unknown event type 'response\.telepathy'"):
        CATALOG.parse('{"type": "response.telepathy"}')
    with pytest.raises(WireProtocolError, match="not JSON"):
        CATALOG.parse("{oops")
    with pytest.raises(WireProtocolError, match="binary"):
        CATALOG.parse(b"\x00\x01")
    with pytest.raises(WireProtocolError, match=r"malformed 'response\.output_audio\.delta'"):
        CATALOG.parse('{"type": "response.output_audio.delta", "item_id": "i"}')


def test_garbled_tool_arguments_are_passed_on_not_dropped() -> None:
    assert parse_arguments('{"q": "x"}') == {"q": "x"}
    assert parse_arguments("") == {}
    assert parse_arguments('{"q": ') == {"_unparsed_arguments": '{"q": '}
    assert parse_arguments("[1]") == {"_unparsed_arguments": "[1]"}


# --------------------------------------------------------------------------- make_adapter


@pytest.mark.parametrize("kind", ["openai-realtime", "grok", "stepfun", "gpt-live"])
def test_make_adapter_reads_the_environment_only(
    kind: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("make_adapter must not touch the network")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    factory = parse_agent_spec(f"{kind}:some-model")
    adapter = factory.make(None)  # type: ignore[arg-type]
    assert adapter.name == f"{kind}:some-model"
    assert PROVIDER_MODULES[kind].endswith(kind.replace("-", "_"))


def test_endpoint_override_must_be_a_websocket_url() -> None:
    from runtime.agents.providers.grok import make_adapter

    with pytest.raises(ProviderConfigError, match="APEX_GROK_URL"):
        make_adapter(None, {"APEX_GROK_URL": "https://api.x.ai/v1/realtime"})
    adapter = make_adapter(None, {"APEX_GROK_URL": "ws://127.0.0.1:9/rt"})
    assert adapter.endpoint() == "ws://127.0.0.1:9/rt?model=grok-voice-think-fast-2.0"


async def test_a_live_service_refuses_the_virtual_clock() -> None:
    from runtime.agents.providers.stepfun import make_adapter

    adapter = make_adapter(None, {"STEPFUN_API_KEY": "k"})
    with pytest.raises(ProviderConfigError, match="--clock realtime"):
        await adapter.connect(replace(CONFIG, clock="virtual"))
    await adapter.close()


def test_sample_rate_override_is_checked() -> None:
    from runtime.agents.providers.gpt_live import make_adapter

    with pytest.raises(ProviderConfigError, match="APEX_GPT_LIVE_SAMPLE_RATE"):
        make_adapter(None, {"APEX_GPT_LIVE_SAMPLE_RATE": "44100"})
    assert make_adapter(None, {"APEX_GPT_LIVE_SAMPLE_RATE": "16000"}).settings.input_rate == 16000


async def test_keys_are_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    from runtime.agents.providers.openai_realtime import make_adapter

    secret = "sk-do-not-log-me-1234567890"
    adapter = make_adapter(None, {
        "OPENAI_API_KEY": secret, "APEX_OPENAI_REALTIME_URL": "ws://127.0.0.1:9/v1/realtime",
        "APEX_OPENAI_REALTIME_VOICE": "not-a-voice",
    })
    assert secret not in repr(adapter.settings)
    with caplog.at_level(logging.DEBUG), pytest.raises(InfrastructureError) as info:
        await adapter.connect(replace(CONFIG, clock="realtime"))
    await adapter.close()
    assert secret not in caplog.text and secret not in str(info.value)


@pytest.mark.parametrize("module", ["openai_realtime", "grok", "stepfun", "gpt_live"])
def test_every_setting_is_documented(module: str) -> None:
    import importlib
    from pathlib import Path

    adapter = importlib.import_module(f"runtime.agents.providers.{module}.adapter")
    docs = (Path(__file__).parents[2] / "docs" / "adapters.md").read_text(encoding="utf-8")
    settings = [v for k, v in vars(adapter).items() if k.endswith("_ENV")]
    assert settings
    assert [s for s in settings if f"`{s}`" not in docs] == []


@pytest.mark.parametrize("event_type", [
    "ping", "conversation.item.input_audio_transcription.updated",
    "input_audio_buffer.timeout_triggered", "conversation.item.truncated",
    "conversation.item.deleted", "response.text.delta",
])
def test_grok_parses_the_events_public_clients_saw_on_the_real_service(event_type: str) -> None:
    """Strict mode (the test suite's) still accepts them: they are modelled, not tolerated."""
    from runtime.agents.providers.grok.events import CATALOG

    parsed = CATALOG.parse(json.dumps({"type": event_type, "event_id": "e1", "timestamp": 1}))
    assert parsed.type == event_type


# --------------------------------------------------------------------------- paper defaults


def test_default_models_are_the_papers_systems_where_the_docs_name_them() -> None:
    import typing

    from openai.types.realtime import realtime_session_create_request_param as request

    from runtime.agents.providers.gpt_live.adapter import DEFAULT_MODEL as LIVE
    from runtime.agents.providers.grok.adapter import DEFAULT_MODEL as GROK
    from runtime.agents.providers.openai_realtime.adapter import DEFAULT_MODEL as OPENAI
    from runtime.agents.providers.stepfun.adapter import DEFAULT_MODEL as STEPFUN

    # GPT-realtime-2.1 as the SDK spells it (its model literals, not our string).
    hints = typing.get_type_hints(request.RealtimeSessionCreateRequestParam)
    known = {a for arg in typing.get_args(hints["model"]) for a in typing.get_args(arg)}
    assert OPENAI == "gpt-realtime-2.1" and OPENAI in known
    assert GROK == "grok-voice-think-fast-2.0"  # D.2
    assert LIVE == "gpt-live-1"
    assert STEPFUN.startswith("stepaudio-3")  # Step-Audio3, not step-audio-2


@pytest.mark.parametrize(("asked", "wire"), [
    (None, "Ara"), ("xai_ara", "Ara"), ("ara", "Ara"), ("eve", "Eve"), ("Rex", "Rex"),
    ("Nova", "Nova"),
])
def test_grok_voices_take_the_documented_spelling(asked: str | None, wire: str) -> None:
    from runtime.agents.providers.grok import make_adapter

    env = {"XAI_API_KEY": "k"} | ({"APEX_GROK_VOICE": asked} if asked else {})
    assert make_adapter(None, env).session(CONFIG).session.voice == wire


@pytest.mark.parametrize(("model", "asked", "wire"), [
    ("step-audio-2", "linjiajiejie", "qingchunshaonv"),
    ("step-audio-2-mini", "wenrounansheng", "wenrounansheng"),
    ("step-audio-2", None, "qingchunshaonv"),
    ("stepaudio-3-realtime-preview", "linjiajiejie", "linjiajiejie"),
])
def test_stepfun_clamps_voices_only_for_step_audio_2(model: str, asked: str | None,
                                                     wire: str) -> None:
    from runtime.agents.providers.stepfun import make_adapter

    env = {"STEPFUN_API_KEY": "k"} | ({"APEX_STEPFUN_VOICE": asked} if asked else {})
    assert make_adapter(model, env).session(CONFIG).session.voice == wire


async def test_a_transcript_done_without_its_text_uses_the_deltas() -> None:
    """pipecat models xAI's ``response.output_audio_transcript.done`` without ``transcript``."""
    from runtime.agents.base import TranscriptDone
    from runtime.agents.providers.grok import make_adapter

    adapter = make_adapter(None, {"XAI_API_KEY": "k"})
    part = {"response_id": "r1", "item_id": "i1", "output_index": 0, "content_index": 0}
    for raw in (
        {"type": "response.output_audio_transcript.delta", "delta": "Hello ", **part},
        {"type": "response.output_audio_transcript.delta", "delta": "there.", **part},
        {"type": "response.output_audio_transcript.done", **part},
        {"type": "response.output_audio_transcript.done", **part, "transcript": "Given."},
    ):
        await adapter.handle(adapter.parse(json.dumps(raw)))
    done = [e for e in await adapter.poll(0) if isinstance(e, TranscriptDone)]
    assert done == [TranscriptDone("Hello there."), TranscriptDone("Given.")]
