"""Interaction diagnostics computed from the event log (paper §6.2, appendix H): floor control
(yield rate to barge-ins, stop latency, overlap), response latency and tool-call efficiency.

Pure functions of the events; no audio is read (overlap is measured on the logged speech
intervals, which is what the trace holds: truncated agent audio is not in it).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pydantic import BaseModel

from runtime.core.events import (
    AgentSpeechEnd,
    AgentSpeechStart,
    AgentTruncated,
    DuplexFire,
    Event,
    SessionEnd,
    ToolCall,
    UserSpeechEnd,
    UserSpeechStart,
)

YIELD_WINDOW_MS = 2000
"""An agent that stops within this long after the user starts talking over it has yielded."""


class FloorControl(BaseModel):
    barge_ins: int
    """User utterances that started while the agent was speaking."""
    yields: int
    stop_latencies_ms: list[int]
    overlap_ms: int
    speech_ms: int
    """Time during which anyone spoke (the union of both channels' speech)."""
    response_latencies_ms: list[int]
    """End of a user utterance → start of the next agent audio."""
    tool_calls: int

    @property
    def yield_rate(self) -> float | None:
        return self.yields / self.barge_ins if self.barge_ins else None

    @property
    def overlap_ratio(self) -> float | None:
        return self.overlap_ms / self.speech_ms if self.speech_ms else None

    @property
    def median_stop_latency_ms(self) -> float | None:
        return statistics.median(self.stop_latencies_ms) if self.stop_latencies_ms else None

    @property
    def median_response_latency_ms(self) -> float | None:
        lat = self.response_latencies_ms
        return statistics.median(lat) if lat else None


def _intervals(events: Sequence[Event]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    end_t = max((e.t_media_ms for e in events), default=0)
    user: list[tuple[int, int]] = []
    agent: list[tuple[int, int]] = []
    u_start: int | None = None
    a_start: int | None = None
    for e in events:
        if isinstance(e, UserSpeechStart):
            u_start = e.t_media_ms
        elif isinstance(e, UserSpeechEnd) and u_start is not None:
            user.append((u_start, e.t_media_ms))
            u_start = None
        elif isinstance(e, AgentSpeechStart):
            a_start = e.t_media_ms
        elif isinstance(e, AgentSpeechEnd) and a_start is not None:
            agent.append((a_start, e.t_media_ms))
            a_start = None
        elif isinstance(e, SessionEnd):
            end_t = e.t_media_ms
    if u_start is not None:
        user.append((u_start, end_t))
    if a_start is not None:
        agent.append((a_start, end_t))
    return user, agent


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    return sum(max(0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)


def floor_control(events: Sequence[Event]) -> FloorControl:
    user, agent = _intervals(events)
    barge_ins = 0
    latencies: list[int] = []
    truncations = [e for e in events if isinstance(e, AgentTruncated)]
    for start, _ in user:
        during = next(((s, e) for s, e in agent if s < start < e), None)
        if during is None:
            continue
        barge_ins += 1
        cut = next((t for t in truncations
                    if start <= t.t_media_ms <= min(during[1], start + YIELD_WINDOW_MS)), None)
        if cut is not None:
            latencies.append(cut.t_media_ms - start)
    overlap = _overlap(user, agent)
    speech = sum(e - s for s, e in user) + sum(e - s for s, e in agent) - overlap
    response: list[int] = []
    for _, u_end in user:
        nxt = next((s for s, _ in agent if s >= u_end), None)
        # Only turns the agent took after the user finished (not ones it was talking over)
        # and before the user spoke again.
        if (
            nxt is not None and not any(s < u_end < e for s, e in agent)
            and not any(u_end < us < nxt for us, _ in user)
        ):
            response.append(nxt - u_end)
    return FloorControl(
        barge_ins=barge_ins, yields=len(latencies), stop_latencies_ms=latencies,
        overlap_ms=overlap, speech_ms=speech, response_latencies_ms=response,
        tool_calls=sum(isinstance(e, ToolCall) for e in events),
    )


def duplex_events_fired(events: Sequence[Event]) -> int:
    return sum(isinstance(e, DuplexFire) for e in events)
