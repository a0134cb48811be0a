"""GPT-Live behaviours reported from the real service (issue #14), against the fake's modes.

* Output audio streams continuously, *silence included*: the adapter must still see each
  utterance end, and must not pass the streamed silence on as agent speech.
* Input transcripts lag the user's speech by 600-1,000 ms: a barge-in must be seen when the
  service stops talking, not when the transcript finally arrives, and a user turn while the
  agent is silent is no barge-in.
* Speech the service keeps producing while the user talks over it is not a barge-in.
* The backend may never send a terminal lifecycle event: the continuation still goes out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from runtime.agents.base import (
    AgentEvent,
    AudioDelta,
    Interrupted,
    ResponseDone,
    ToolCallRequest,
    TranscriptDone,
)
from runtime.agents.scripted import Script, ScriptTool, ScriptTurn
from runtime.core.audio import SAMPLE_RATE, Pcm, frames, silence
from tests.adapters.conftest import CONFIG, drive, speech, user_turn
from tests.adapters.harness import Scenario
from tests.fakes.realtime.gpt_live import TRANSCRIPT_LAG_MS
from tests.fakes.realtime.harness import GptLiveHarness

LONG = ("Thanks for waiting. I have your file open and I am going to read the whole summary "
        "back to you now, line by line, so please stop me if anything sounds wrong.")
SHORT = "Got it."


@pytest.fixture
async def live() -> AsyncIterator[GptLiveHarness]:
    h = GptLiveHarness()
    yield h
    await h.stop()


async def timeline(h: GptLiveHarness, pcm_frames: list[Pcm]) -> list[tuple[int, AgentEvent]]:
    """Drive the adapter like the orchestrator (:func:`~tests.adapters.conftest.drive`);
    every event with the frame index it arrived at."""
    adapter = h.adapter()
    await adapter.connect(CONFIG)
    out: list[tuple[int, AgentEvent]] = []
    await drive(adapter, pcm_frames, timed=out)
    await adapter.close()
    return out


def of(events: list[tuple[int, AgentEvent]], kind: type) -> list[tuple[int, AgentEvent]]:
    return [(i, e) for i, e in events if isinstance(e, kind)]


def speech_ms(events: list[tuple[int, AgentEvent]]) -> int:
    return sum(len(e.pcm) for _, e in of(events, AudioDelta)) * 1000 // SAMPLE_RATE


async def test_utterances_end_although_the_service_streams_silence(live: GptLiveHarness) -> None:
    script = Script(turns=[ScriptTurn(say=SHORT), ScriptTurn(say=SHORT)])
    await live.start(Scenario(script=script, mode="silence_stream", audio_speedup=1.0))
    events = await timeline(live, user_turn() + [silence()] * 60 + user_turn()
                            + [silence()] * 60)
    assert [e for _, e in of(events, TranscriptDone)] == [TranscriptDone(SHORT)] * 2
    assert len(of(events, ResponseDone)) == 2
    assert not of(events, Interrupted)
    # Only the two utterances were passed on, not the seconds of silence streamed around them.
    utterance_ms = max(400, len(SHORT) * Scenario().speech_ms_per_char)
    assert speech_ms(events) <= 2 * utterance_ms + 200, speech_ms(events)
    assert sum(1 for e in live._fake().emitted if e["type"] == "session.output_audio.delta") > 150


async def test_a_barge_in_is_seen_when_the_service_yields_not_when_the_transcript_lands(
    live: GptLiveHarness,
) -> None:
    await live.start(Scenario(script=Script(turns=[ScriptTurn(say=LONG)]),
                              mode="silence_stream", audio_speedup=1.0))
    opening = user_turn() + [silence()] * 30  # the agent speaks ~1.2 s of it before the cut
    cut_in = len(opening)
    pcm = opening + frames(speech(1500)) + [silence()] * 60
    events = await timeline(live, pcm)
    interrupted = of(events, Interrupted)
    assert len(interrupted) == 1, events
    onset = cut_in + 1  # the second loud frame (an energy VAD's onset, either side)
    at = interrupted[0][0]
    assert onset <= at <= onset + 2, (at, onset)
    # ... well before the user's transcript could have arrived.
    assert (at - onset) * 40 < TRANSCRIPT_LAG_MS
    assert speech_ms(events) < len(LONG) * Scenario().speech_ms_per_char // 2


async def test_the_lagging_transcript_of_a_turn_taken_in_silence_is_no_barge_in(
    live: GptLiveHarness,
) -> None:
    script = Script(turns=[ScriptTurn(say=SHORT), ScriptTurn(say=SHORT)])
    await live.start(Scenario(script=script, mode="silence_stream", audio_speedup=1.0))
    # The user answers right after the agent's short utterance; its transcript lands 800 ms
    # later, while the service streams silence (and, with it, the agent's next reply).
    events = await timeline(live, user_turn() + [silence()] * 20 + user_turn(800, 1200)
                            + [silence()] * 60)
    assert not of(events, Interrupted)
    assert len(of(events, ResponseDone)) == 2


async def test_speech_the_service_keeps_producing_over_the_user_is_no_barge_in(
    live: GptLiveHarness,
) -> None:
    await live.start(Scenario(script=Script(turns=[ScriptTurn(say=LONG)]), audio_speedup=1.0))
    live._fake().talks_over = True  # type: ignore[attr-defined]
    pcm = user_turn() + [silence()] * 30 + frames(speech(400)) + [silence()] * 250
    events = await timeline(live, pcm)
    assert not of(events, Interrupted)
    assert [e for _, e in of(events, TranscriptDone)] == [TranscriptDone(LONG)]


async def test_a_backend_response_without_a_terminal_event_is_still_continued(
    live: GptLiveHarness,
) -> None:
    script = Script(turns=[ScriptTurn(tools=[ScriptTool(name="lookup", args={"q": "a"})],
                                      say=SHORT)])
    await live.start(Scenario(script=script, mode="open_backend"))
    events = await timeline(live, user_turn() + [silence()] * 60)
    assert len(of(events, ToolCallRequest)) == 1
    assert len(live.continuations()) == 1
    assert [e for _, e in of(events, TranscriptDone)] == [TranscriptDone(SHORT)]
    assert not [m for m in live._fake().emitted
                if m.get("event", {}).get("type") == "response.completed"]


async def test_every_documented_event_is_accepted_in_strict_mode() -> None:
    """Each type of the SDK's ``live.ServerEvent`` union the adapter ignores, and each
    Responses stream type inside ``response.event``, ends nothing (strict mode: an unknown
    type would fail the adapter)."""
    import json

    from runtime.agents.base import AgentErrorSignal
    from runtime.agents.providers._openai_style import Ignored
    from runtime.agents.providers.gpt_live import make_adapter
    from runtime.agents.providers.gpt_live.events import CATALOG, NESTED, NestedEvent

    adapter = make_adapter(None, {"OPENAI_API_KEY": "k"})
    top = [t for t, model in CATALOG.models.items() if model is Ignored]
    inner = [t for t, model in NESTED.items() if model is NestedEvent]
    assert len(top) >= 15 and len(inner) >= 40
    for kind in top:
        await adapter.handle(adapter.parse(json.dumps({"type": kind, "event_id": "e"})))
    for kind in inner:
        await adapter.handle(adapter.parse(json.dumps(
            {"type": "response.event", "event_id": "e", "event": {"type": kind}})))
    out = await adapter.poll(0)
    assert not [e for e in out if isinstance(e, AgentErrorSignal)] and not adapter.failed
    with pytest.raises(Exception, match="telepathy"):
        await adapter.handle(adapter.parse(json.dumps(
            {"type": "response.event", "event_id": "e", "event": {"type": "telepathy"}})))
