"""Floor-control diagnostics on hand-built event logs (values computed by hand)."""

from __future__ import annotations

from pathlib import Path

from grading.diagnostics import floor_control
from runtime.core.events import (
    AgentSpeechEnd,
    AgentSpeechStart,
    AgentTruncated,
    Event,
    SessionEnd,
    ToolCall,
    UserSpeechEnd,
    UserSpeechStart,
    read_events,
)
from tests.conftest import run_script


def _at(t: int, e: Event) -> Event:
    e.t_media_ms = t
    return e


def _user(s: int, e: int) -> list[Event]:
    return [_at(s, UserSpeechStart(plan_id="p", realization_id="r", text="x", duration_ms=e - s)),
            _at(e, UserSpeechEnd(plan_id="p", realization_id="r"))]


def _agent(s: int, e: int, turn: int) -> list[Event]:
    return [_at(s, AgentSpeechStart(turn=turn)), _at(e, AgentSpeechEnd(turn=turn, played_ms=e - s))]


def test_hand_computed_floor_control() -> None:
    # agent 0–2000; user 2400–3000 (answer, latency 2400-... no: response measured to next agent)
    # agent 3500–6000 but the user barges in at 4000 and the agent stops at 4080 (yield, 80 ms);
    # user 4000–5000; agent 5600–7000; user talks over it 6500–7500 and the agent does not stop.
    events: list[Event] = [
        *_agent(0, 2000, 1), *_user(2400, 3000),
        _at(3500, AgentSpeechStart(turn=2)), *_user(4000, 5000)[:1],
        _at(4080, AgentTruncated(turn=2, heard_ms=580, dropped_ms=1920, reason="barge_in")),
        _at(4080, AgentSpeechEnd(turn=2, played_ms=580)), *_user(4000, 5000)[1:],
        _at(5200, ToolCall(call_id="c1", name="update", args={})),
        *_agent(5600, 7000, 3)[:1], *_user(6500, 7500)[:1], *_agent(5600, 7000, 3)[1:],
        *_user(6500, 7500)[1:], _at(8000, SessionEnd(reason="agent_hangup")),
    ]
    events.sort(key=lambda e: e.t_media_ms)
    fc = floor_control(events)
    assert fc.barge_ins == 2            # 4000 (during 3500–4080) and 6500 (during 5600–7000)
    assert fc.yields == 1 and fc.stop_latencies_ms == [80]
    assert fc.yield_rate == 0.5 and fc.median_stop_latency_ms == 80
    # overlap: 4000–4080 (80) + 6500–7000 (500) = 580
    assert fc.overlap_ms == 580
    # speech union: user 600+1000+1000 + agent 2000+580+1400 − 580 = 6000
    assert fc.speech_ms == 6000
    # responses: 3000 → 3500 (500) and 5000 → 5600 (600); 7500 has no next agent turn
    assert fc.response_latencies_ms == [500, 600]
    assert fc.tool_calls == 1


def test_oracle_run_yields_to_its_barge_in(tmp_path: Path) -> None:
    run = run_script("apexv1_070", "oracle", tmp_path)
    fc = floor_control(read_events(run / "events.jsonl").events)
    assert fc.barge_ins == 1 and fc.yields == 1
    assert 0 < fc.stop_latencies_ms[0] <= 200
    # The scripted agent answers 640 ms after the last loud frame; bank audio ends with some
    # trailing silence, so the gap after the logged end of the utterance is shorter.
    assert fc.median_response_latency_ms is not None and 0 < fc.median_response_latency_ms < 640
