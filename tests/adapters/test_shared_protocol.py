"""Shared suite, protocol level: each adapter driven frame by frame against its fake, the way
the orchestrator drives it (send a 40 ms frame, poll, answer tool calls at once)."""

from __future__ import annotations

import numpy as np
import pytest

from runtime.agents.base import (
    AgentErrorSignal,
    AudioDelta,
    InfrastructureError,
    ProtocolUnknown,
    ResponseDone,
    ToolCallRequest,
    TranscriptDone,
)
from runtime.agents.errors import ProviderConfigError
from runtime.agents.scripted import Script, ScriptTool, ScriptTurn
from runtime.core.audio import SAMPLE_RATE, frames, silence
from tests.adapters.conftest import CONFIG, drive, speech, user_turn
from tests.adapters.harness import ErrorKind, ProviderHarness, Scenario

PARALLEL = Script(turns=[
    ScriptTurn(
        tools=[ScriptTool(name="lookup", args={"q": q}) for q in ("alpha", "beta", "gamma")],
        say="All three are done.",
    ),
    ScriptTurn(say="Anything else?"),
])


@pytest.mark.parametrize("done_lag_frames", [1, 0], ids=["done-lags", "done-with-calls"])
async def test_parallel_tool_calls_are_all_answered_before_one_continuation(
    harness: ProviderHarness, done_lag_frames: int,
) -> None:
    """Both orders matter: the response may end before the first output goes back (Grok's
    hang came from continuing after that first output) or after the last one."""
    await harness.start(Scenario(script=PARALLEL, done_lag_frames=done_lag_frames))
    adapter = harness.adapter()
    await adapter.connect(CONFIG)
    events = await drive(adapter, user_turn() + [silence()] * 60)
    await adapter.close()

    calls = [e for e in events if isinstance(e, ToolCallRequest)]
    assert [c.args for c in calls] == [{"q": "alpha"}, {"q": "beta"}, {"q": "gamma"}]
    assert len({c.call_id for c in calls}) == 3
    # On the wire: the three outputs, then exactly one request to continue (which may be the
    # message carrying the outputs, for a protocol whose tool response continues by itself).
    outputs, continuations = harness.tool_output_indexes(), harness.continuations()
    assert sorted(harness.tool_outputs()) == sorted(c.call_id for c in calls)
    after_outputs = [i for i in continuations if i >= outputs[0]]
    assert len(after_outputs) == 1 and after_outputs[0] >= outputs[-1], (outputs, continuations)
    # ... and the model went on to speak about the results.
    assert TranscriptDone(text="All three are done.") in events
    assert any(isinstance(e, AudioDelta) for e in events)
    assert not [e for e in events if isinstance(e, AgentErrorSignal)]
    assert harness.violations() == []


# --------------------------------------------------------------------------- error categories


async def test_bad_key_is_a_fatal_authentication_error(harness: ProviderHarness) -> None:
    await harness.start(Scenario(script=PARALLEL))
    adapter = harness.adapter(api_key="sk-wrong")
    await adapter.connect(CONFIG)
    events = await adapter.poll(0)
    await adapter.close()
    assert len(events) == 1 and isinstance(events[0], AgentErrorSignal)
    assert (events[0].category, events[0].fatal) == ("authentication", True)
    assert "sk-wrong" not in events[0].message


async def test_missing_key_names_the_variable(harness: ProviderHarness) -> None:
    await harness.start(Scenario())
    adapter = harness.adapter(api_key=None)
    with pytest.raises(ProviderConfigError, match=r"[A-Z_]+_API_KEY"):
        await adapter.connect(CONFIG)
    await adapter.close()


@pytest.mark.parametrize("kind", ["rate_limit", "quota", "server"])
async def test_handshake_errors_are_fatal_with_their_category(
    harness: ProviderHarness, kind: ErrorKind,
) -> None:
    await harness.start(Scenario(script=PARALLEL, handshake_error=kind))
    adapter = harness.adapter()
    await adapter.connect(CONFIG)
    events = await adapter.poll(0)
    await adapter.close()
    signals = [e for e in events if isinstance(e, AgentErrorSignal)]
    assert [(s.category, s.fatal) for s in signals] == [(kind, True)]


@pytest.mark.parametrize(("kind", "fatal"), [
    ("rate_limit", False), ("server", False), ("quota", True), ("protocol", True),
])
async def test_errors_during_a_response_keep_their_category(
    harness: ProviderHarness, kind: ErrorKind, fatal: bool,
) -> None:
    await harness.start(Scenario(script=PARALLEL, error_on_response={1: kind}))
    adapter = harness.adapter()
    await adapter.connect(CONFIG)
    events = await drive(adapter, user_turn())
    await adapter.close()
    signals = [e for e in events if isinstance(e, AgentErrorSignal)]
    assert [(s.category, s.fatal) for s in signals] == [(kind, fatal)]
    assert not [e for e in events if isinstance(e, ToolCallRequest)]


async def test_an_unknown_server_event_is_a_fatal_protocol_error(
    harness: ProviderHarness,
) -> None:
    await harness.start(Scenario(script=PARALLEL, unknown_event_on_response=1))
    adapter = harness.adapter()
    await adapter.connect(CONFIG)
    events = await drive(adapter, user_turn())
    await adapter.close()
    signals = [e for e in events if isinstance(e, AgentErrorSignal)]
    assert len(signals) == 1
    assert (signals[0].category, signals[0].fatal) == ("protocol", True)
    assert "telepathy" in signals[0].message


async def test_an_unreachable_endpoint_is_an_infrastructure_error(
    harness: ProviderHarness,
) -> None:
    await harness.start(Scenario())
    adapter = harness.adapter()
    await harness.stop()  # the port is closed now: connection refused
    with pytest.raises(InfrastructureError, match="connectivity"):
        await adapter.connect(CONFIG)
    await adapter.close()


async def test_a_dropped_connection_raises_infrastructure_error(
    harness: ProviderHarness,
) -> None:
    await harness.start(Scenario(script=PARALLEL, disconnect_on_response=2))
    adapter = harness.adapter()
    await adapter.connect(CONFIG)
    with pytest.raises(InfrastructureError, match="connectivity"):
        await drive(adapter, user_turn() + [silence()] * 100)
    await adapter.close()


# --------------------------------------------------------------------------- resampling


def dominant_hz(pcm: np.ndarray, rate: int) -> float:
    windowed = pcm.astype(np.float64) * np.hanning(len(pcm))
    spectrum = np.abs(np.fft.rfft(windowed))
    return float(np.argmax(spectrum) * rate / len(pcm))


def voiced_seconds(pcm: np.ndarray, rate: int) -> float:
    """From the first to the last sample above a fifth of full tone amplitude."""
    loud = np.flatnonzero(np.abs(pcm) > 1000)
    return float((loud[-1] - loud[0]) / rate) if len(loud) else 0.0


def wire_rate_cases() -> list[tuple[str, int]]:
    from tests.adapters.conftest import HARNESSES

    return [(kind, rate) for kind in sorted(HARNESSES)
            for rate in HARNESSES[kind]().wire_rates]


@pytest.mark.parametrize(("kind", "rate"), wire_rate_cases(),
                         ids=[f"{k}@{r}" for k, r in wire_rate_cases()])
async def test_resampling_keeps_frequency_and_duration(kind: str, rate: int) -> None:
    from tests.adapters.conftest import HARNESSES

    harness = HARNESSES[kind]()
    harness.configure(rate)
    say = "x" * 40  # 40 characters: 2.2 s of fake speech at the default 55 ms per character
    scenario = Scenario(script=Script(turns=[ScriptTurn(say=say)]), tone_hz=1000.0)
    await harness.start(scenario)
    try:
        adapter = harness.adapter()
        await adapter.connect(CONFIG)
        user = speech(1000, hz=440.0)
        events = await drive(adapter, frames(user) + [silence()] * 120)
        await adapter.close()

        # User → provider: the 440 Hz second arrives at the wire rate, still 440 Hz, still 1 s.
        heard = harness.user_audio()
        assert abs(voiced_seconds(heard, rate) - 1.0) < 0.005
        start = int(np.argmax(np.abs(heard) > 1000))
        assert abs(dominant_hz(heard[start:start + rate], rate) - 440.0) < 2.0
        # Provider → runtime: the 1 kHz tone comes back at 24 kHz with its length.
        agent = np.concatenate([e.pcm for e in events if isinstance(e, AudioDelta)])
        expected_s = len(say) * scenario.speech_ms_per_char / 1000
        assert abs(len(agent) / SAMPLE_RATE - expected_s) < 0.005
        assert abs(voiced_seconds(agent, SAMPLE_RATE) - expected_s) < 0.005
        assert abs(dominant_hz(agent, SAMPLE_RATE) - 1000.0) < 2.0
        assert any(isinstance(e, ResponseDone) for e in events)
        assert harness.violations() == []
    finally:
        await harness.stop()


async def test_outside_strict_mode_an_unknown_server_event_is_logged_and_ignored(
    harness: ProviderHarness, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The default for real campaigns: a message type the adapter does not model ends no run;
    it comes out as ``ProtocolUnknown`` (logged as ``agent.protocol_unknown``) and the turn
    goes on, tool calls included."""
    monkeypatch.setenv("APEX_STRICT_PROTOCOL", "0")
    await harness.start(Scenario(script=PARALLEL, unknown_event_on_response=1))
    adapter = harness.adapter()
    await adapter.connect(CONFIG)
    events = await drive(adapter, user_turn())
    await adapter.close()
    assert not [e for e in events if isinstance(e, AgentErrorSignal)]
    unknown = [e for e in events if isinstance(e, ProtocolUnknown)]
    assert len(unknown) == 1 and "telepathy" in unknown[0].event_type
    assert [e for e in events if isinstance(e, ToolCallRequest)]
