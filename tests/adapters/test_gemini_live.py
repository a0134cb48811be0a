"""The Gemini Live adapter against a local fake of the Live API (``tests/fakes/gemini_live.py``).

Everything crosses a real TLS websocket on 127.0.0.1 through the google-genai SDK; the fake
validates what the client sends with the SDK's own models and records it, so these tests assert
on the wire. Runs use the virtual clock in lockstep with the fake (exact and fast).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from google.genai import types as genai_types
from pydantic.alias_generators import to_camel

from grading.gates import grade_run_dir
from runtime.agents.base import (
    AgentErrorSignal,
    AgentEvent,
    AgentSessionConfig,
    AudioDelta,
    Interrupted,
    ResponseDone,
    ToolCallRequest,
    TranscriptDone,
)
from runtime.agents.errors import ErrorCategory, ProviderConfigError, WireProtocolError
from runtime.agents.providers.gemini_live import (
    KEY_VARIABLES,
    GeminiLiveAdapter,
    GeminiLiveSettings,
    make_adapter,
)
from runtime.agents.providers.gemini_live._tools import ToolSchemaError, function_declarations
from runtime.agents.providers.gemini_live.events import (
    ErrorReport,
    close_category,
    error_category,
    parse_server_message,
)
from runtime.agents.scripted import Script, load_script
from runtime.core.audio import FRAME_SAMPLES, SAMPLE_RATE, Pcm
from runtime.core.events import (
    AgentErrorEvent,
    AgentSpeechStart,
    AgentTruncated,
    ArtifactUpdate,
    DuplexFire,
    SessionEnd,
    ToolCall,
    UserSpeechEnd,
    read_events,
)
from runtime.core.spec import default_tasks_dir, find_task
from runtime.session.campaign import AgentFactory, parse_agent_spec, run_dir_for, run_one
from runtime.session.orchestrator import RunResult
from runtime.session.workbench import tool_schemas
from tests.adapters.conftest import conversation
from tests.adapters.conftest import run_task as run_shared
from tests.adapters.harness import ProviderHarness
from tests.conftest import bundled_tasks
from tests.fakes.gemini_live import (
    BAD_KEY,
    FAKE_KEY,
    QUOTA_EXCEEDED,
    RATE_LIMITED,
    RESUME_REFUSED,
    SERVER_ERROR,
    Call,
    Close,
    Drop,
    FakeGeminiLive,
    GoAway,
    Interrupt,
    Say,
    Send,
    Tools,
    Turn,
    tone,
)
from tests.fakes.gemini_live.harness import GeminiLiveHarness
from tests.fakes.gemini_live.server import validate_client

# ------------------------------------------------------------------ helpers


def turns_from_script(script: Script, *, parallel: bool = False) -> list[Turn]:
    """A scripted agent's turns as the fake model's: the same tool calls and words.

    Each scripted turn's tools become one ``toolCall`` each (or one parallel ``toolCall`` with
    ``parallel=True``), followed by its speech. Gemini cannot hang up, so ``hangup`` is dropped.
    """
    turns = []
    for i, st in enumerate(script.turns):
        after = st.after or ("none" if i == 0 else "user")
        assert after in ("none", "user"), "timed turns have no Live API equivalent"
        calls = [Call(t.name, dict(t.args)) for t in st.tools]
        steps: list[Any] = [Tools.of(*calls)] if parallel and calls else [
            Tools.of(c) for c in calls
        ]
        if st.say:
            steps.append(Say(st.say))
        turns.append(Turn.of(*steps, after="now" if after == "none" else "user"))
    return turns


def oracle_turns(task_id: str, *, parallel: bool = False) -> list[Turn]:
    path = default_tasks_dir() / task_id / "scripts" / "oracle.yaml"
    return turns_from_script(load_script(path), parallel=parallel)


async def run_task(
    task_id: str, fake: FakeGeminiLive, tmp_path: Path, *,
    env: dict[str, str] | None = None,
    adapter_type: Callable[[GeminiLiveSettings], GeminiLiveAdapter] = GeminiLiveAdapter,
) -> tuple[RunResult, GeminiLiveAdapter]:
    """One orchestrated run of a shipped task against the fake, in lockstep virtual time."""
    task = find_task(task_id)
    made: list[GeminiLiveAdapter] = []

    def make(_: object) -> GeminiLiveAdapter:
        adapter = adapter_type(GeminiLiveSettings.from_env(None, env or fake.env()))
        adapter.attach_lockstep(fake.sync)
        made.append(adapter)
        return adapter

    run_dir = run_dir_for(tmp_path, task.id, 0)
    result = await run_one(task, AgentFactory("gemini-live", make), run_dir, seed=0, repeat=0)
    return result, made[0]


def events_of(result: RunResult) -> list[Any]:
    log = read_events(result.run_dir / "events.jsonl")
    assert log.problems == []
    return list(log.events)


def session_end(result: RunResult) -> SessionEnd:
    ends = [e for e in events_of(result) if isinstance(e, SessionEnd)]
    assert len(ends) == 1
    return ends[0]


def agent_errors(result: RunResult) -> list[AgentErrorEvent]:
    return [e for e in events_of(result) if isinstance(e, AgentErrorEvent)]


SILENCE = np.zeros(FRAME_SAMPLES, dtype=np.int16)


def frames_of(pcm: Pcm) -> list[Pcm]:
    pad = (-len(pcm)) % FRAME_SAMPLES
    padded = np.concatenate([pcm, np.zeros(pad, dtype=np.int16)])
    return list(padded.reshape(-1, FRAME_SAMPLES))


class Driver:
    """Drives one adapter by hand, frame by frame, the way the orchestrator does."""

    def __init__(self, adapter: GeminiLiveAdapter) -> None:
        self.adapter = adapter
        self.t = 0
        self.events: list[tuple[int, AgentEvent]] = []

    async def step(self, frame: Pcm = SILENCE, *, answer_tools: bool = True) -> list[AgentEvent]:
        await self.adapter.send_audio(frame, self.t)
        got = await self.adapter.poll(self.t)
        for ev in got:
            self.events.append((self.t, ev))
            if answer_tools and isinstance(ev, ToolCallRequest):
                await self.adapter.send_tool_result(ev.call_id, {"ok": True, "name": ev.name})
        self.t += 40
        return got

    async def play(self, frames: list[Pcm], **kw: Any) -> None:
        for frame in frames:
            await self.step(frame, **kw)

    async def idle(self, ms: int, **kw: Any) -> None:
        await self.play([SILENCE] * (ms // 40), **kw)

    def of(self, kind: type[AgentEvent]) -> list[Any]:
        return [ev for _, ev in self.events if isinstance(ev, kind)]


SPEECH = tone(300.0, 800, SAMPLE_RATE, amplitude=8000)
"""Loud enough for the client VAD: 800 ms of "user speech"."""

TOOLS = tool_schemas(find_task("apexv1_001"))


async def connected(fake: FakeGeminiLive, **env: str) -> GeminiLiveAdapter:
    adapter = make_adapter(None, fake.env(**env))
    adapter.attach_lockstep(fake.sync)
    await adapter.connect(AgentSessionConfig(
        task_id="apexv1_001", instructions="Be brief.", tools=TOOLS, sample_rate=SAMPLE_RATE,
    ))
    return adapter


# ------------------------------------------------------------------ full conversations


async def test_full_conversation_reaches_committed(tmp_path: Path) -> None:
    """apexv1_001 end to end: the fake model records every field, looks up the premium, asks
    for approval and commits through tool calls (one ``toolCall`` each here; the shared suite
    runs the same task with each turn's calls in parallel); the authored barge-in truncates a
    turn."""
    async with FakeGeminiLive(oracle_turns("apexv1_001")) as fake:
        result, adapter = await run_task("apexv1_001", fake, tmp_path)
    events = events_of(result)
    end = session_end(result)
    assert end.failure_class == "none", end.detail
    assert end.reason in ("terminal_state", "user_goodbye")
    lifecycles = [e.lifecycle for e in events if isinstance(e, ArtifactUpdate)]
    assert lifecycles[-1] == "COMMITTED"
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert {c.name for c in calls} >= {"update_enr_1", "kb_search", "set_ready", "commit"}
    assert all(c.call_id.startswith("function-call-") for c in calls)  # ids the fake issued
    grade = grade_run_dir(result.run_dir, {t.id: t for t in bundled_tasks()})
    assert grade.WS, grade.gate_reasons
    # Every function call was answered on the wire, once, with Gemini's {"output": …} shape.
    answered = [fr for tr in fake.tool_responses for fr in tr.function_responses or []]
    assert sorted(fr.id for fr in answered) == sorted(c.call_id for c in calls)
    assert all(set(fr.response or {}) <= {"output", "error"} for fr in answered)
    assert all(len(tr.function_responses or []) == 1 for tr in fake.tool_responses)
    assert_barge_in_truncated(result, fake, adapter)


def assert_barge_in_truncated(
    result: RunResult, fake: FakeGeminiLive, adapter: GeminiLiveAdapter,
) -> None:
    """The task's authored barge-in cut the agent through the server's ``interrupted``: the
    truncation follows the duplex event as soon as the user's voice is loud (the bank's leading
    silence plus two VAD frames) and the user heard about the event's offset plus that."""
    events = events_of(result)
    task = find_task(events[0].task_id)
    (authored,) = [d for d in task.duplex_events if d.kind == "barge_in"]
    (fired,) = [e for e in events if isinstance(e, DuplexFire) and e.event_id == authored.id]
    truncs = [e for e in events if isinstance(e, AgentTruncated)]
    cut = [e for e in truncs if fired.t_media_ms <= e.t_media_ms <= fired.t_media_ms + 600]
    assert len(cut) == 1, truncs
    # The event fires its offset after the caller's anchor plan ended (media time) ...
    anchor_end = next(e for e in events if isinstance(e, UserSpeechEnd)
                      and e.plan_id == authored.anchor.after_plan)
    assert fired.anchor_ms - anchor_end.t_media_ms == authored.anchor.offset_ms
    # ... and the agent had played from its turn's start up to then, plus the VAD onset.
    start = next(e for e in events if isinstance(e, AgentSpeechStart) and e.turn == cut[0].turn)
    lead = fired.t_media_ms - start.t_media_ms
    assert lead <= cut[0].heard_ms <= lead + 600
    # Every truncation was the server's doing and was reported back to the adapter.
    assert fake.interruptions == len(truncs)
    assert adapter.truncations == [e.heard_ms for e in truncs]
    sent_interrupted = [m for m in fake.sent if m.get("serverContent", {}).get("interrupted")]
    assert len(sent_interrupted) == len(truncs)


async def test_an_interrupted_turn_without_turn_complete_does_not_silence_the_next(
        tmp_path: Path) -> None:
    """Public clients report ``interrupted`` with no ``turnComplete`` after it. Before, the
    adapter dropped every later model turn (its drop flag waited for ``turnComplete``), so the
    agent went silent after the first barge-in; now content after a silent gap is the next
    turn, and the run says so (a non-fatal ``protocol`` note). apexv1_070 still passes."""
    async with FakeGeminiLive(oracle_turns("apexv1_070", parallel=True),
                              complete_interrupted=False) as fake:
        result, _adapter = await run_task("apexv1_070", fake, tmp_path)
    assert fake.interruptions >= 1
    notes = [e for e in agent_errors(result) if "never completed" in e.message]
    assert len(notes) == fake.interruptions
    end = session_end(result)
    assert end.failure_class == "none", end.detail
    grade = grade_run_dir(result.run_dir, {t.id: t for t in bundled_tasks()})
    assert grade.WS, grade.gate_reasons


async def test_revoked_approval_task_with_barge_in(tmp_path: Path) -> None:
    """apexv1_070: the user barges in on "I'm submitting…" and revokes; the fake model yields,
    re-records the end date, re-checks, asks again and commits. Each turn's calls go out as
    one parallel ``toolCall``, answered by one ``toolResponse``."""
    async with FakeGeminiLive(oracle_turns("apexv1_070", parallel=True)) as fake:
        result, adapter = await run_task("apexv1_070", fake, tmp_path)
    end = session_end(result)
    assert end.failure_class == "none", end.detail
    grade = grade_run_dir(result.run_dir, {t.id: t for t in bundled_tasks()})
    assert grade.WS, grade.gate_reasons
    sizes = [len(tr.function_responses or []) for tr in fake.tool_responses]
    assert max(sizes) == 3  # update_lr_1 + check_availability + set_ready after the revocation
    calls = [e for e in events_of(result) if isinstance(e, ToolCall)]
    assert sum(sizes) == len(calls)
    assert_barge_in_truncated(result, fake, adapter)


# ------------------------------------------------------------------ matched conditions (D.2)


async def test_automatic_activity_detection_is_disabled_and_activity_is_explicit() -> None:
    turns = [Turn.of(Say("What is your employee ID?"), after="now"), Turn.of(Say("Thanks."))]
    async with FakeGeminiLive(turns) as fake:
        adapter = await connected(fake)
        drive = Driver(adapter)
        await drive.idle(2000)
        await drive.play(frames_of(SPEECH))
        await drive.idle(1600)
        await adapter.close()
    setup = fake.setups[0]
    assert setup.automatic_activity_detection_disabled
    ric = setup.realtime_input_config
    assert ric is not None
    assert ric.activity_handling is not None
    assert ric.activity_handling.value == "START_OF_ACTIVITY_INTERRUPTS"
    assert ric.turn_coverage is not None
    assert ric.turn_coverage.value == "TURN_INCLUDES_ALL_INPUT"
    kinds = fake.kinds()
    assert kinds.count("activityStart") == 1 and kinds.count("activityEnd") == 1
    assert kinds.index("activityStart") < kinds.index("activityEnd")
    assert fake.turns_started == 2  # the second turn answered the client's activityEnd
    assert [ev.text for ev in drive.of(TranscriptDone)] == ["What is your employee ID?",
                                                              "Thanks."]


class _ServerVadAdapter(GeminiLiveAdapter):
    """The adapter with the D.2 fix removed: the server's own turn detection left on."""

    def live_config(self, config: AgentSessionConfig) -> Any:
        cfg = super().live_config(config)
        assert cfg.realtime_input_config is not None
        cfg.realtime_input_config.automatic_activity_detection = None
        return cfg


async def test_a_run_fails_when_automatic_activity_detection_is_left_on(tmp_path: Path) -> None:
    """The Live API refuses explicit activity signals unless automatic detection is disabled."""
    async with FakeGeminiLive(oracle_turns("apexv1_001")) as fake:
        result, _ = await run_task("apexv1_001", fake, tmp_path, adapter_type=_ServerVadAdapter)
    assert not fake.setups[0].automatic_activity_detection_disabled
    assert fake.closed_with is not None and fake.closed_with[0] == 1007
    assert session_end(result).reason == "agent_error"
    assert [e.category for e in agent_errors(result)] == ["protocol"]


async def test_setup_carries_model_instructions_tools_and_transcription() -> None:
    async with FakeGeminiLive() as fake:
        adapter = make_adapter("gemini-test-live", fake.env(APEX_GEMINI_LIVE_VOICE="Kore"))
        adapter.attach_lockstep(fake.sync)
        await adapter.connect(AgentSessionConfig(
            task_id="apexv1_001", instructions="Be brief.", tools=TOOLS, sample_rate=SAMPLE_RATE,
        ))
        await adapter.close()
    assert fake.paths[0].endswith(".GenerativeService.BidiGenerateContent")
    assert fake.headers[0]["x-goog-api-key"] == FAKE_KEY
    setup = fake.setups[0].setup
    assert setup.model == "models/gemini-test-live"
    assert setup.input_audio_transcription is not None
    assert setup.output_audio_transcription is not None
    gen = setup.generation_config
    assert gen is not None and [m.value for m in gen.response_modalities or []] == ["AUDIO"]
    voice = gen.speech_config.voice_config.prebuilt_voice_config  # type: ignore[union-attr]
    assert voice is not None and voice.voice_name == "Kore"
    decls = [d for tool in setup.tools or [] for d in tool.function_declarations or []]
    assert [d.name for d in decls] == [t["name"] for t in TOOLS]
    update = decls[0].parameters
    assert update is not None and update.properties is not None
    fields = update.properties["fields"]
    assert fields.properties is not None and "employee_id" in fields.properties


# ------------------------------------------------------------------ interruption and tools


async def test_server_interruption_is_honoured() -> None:
    """The server cuts its turn (``interrupted``): Interrupted, partial transcript first, and
    nothing of that turn after it, not even a ResponseDone."""
    turns = [Turn.of(Say("Let me read you the whole policy now.", ms=3000), Interrupt(),
                     after="now")]
    async with FakeGeminiLive(turns) as fake:
        adapter = await connected(fake)
        drive = Driver(adapter)
        await drive.idle(1200)  # 3 s of audio streams in 750 ms at 4× real time
        await adapter.close()
    kinds = [type(ev).__name__ for _, ev in drive.events]
    assert "Interrupted" in kinds
    cut = kinds.index("Interrupted")
    assert "AudioDelta" in kinds[:cut] and kinds[cut - 1] == "TranscriptDone"
    assert "ResponseDone" not in kinds and "AudioDelta" not in kinds[cut:]


async def test_barge_in_while_generating_is_left_to_the_server() -> None:
    turns = [Turn.of(Say("Here is a long answer that keeps going.", ms=4000), after="now")]
    async with FakeGeminiLive(turns) as fake:
        adapter = await connected(fake)
        drive = Driver(adapter)
        await drive.idle(600)
        await drive.play(frames_of(SPEECH))
        await drive.idle(1200)
        await adapter.close()
    assert fake.interruptions == 1  # the fake saw activityStart during its (playing) turn
    assert len(drive.of(Interrupted)) == 1
    assert len(drive.of(ResponseDone)) == 0


async def test_parallel_tool_calls_are_answered_in_one_tool_response() -> None:
    turns = [Turn.of(
        Tools.of(Call("kb_search", {"query": "premium"}), Call("set_ready",
                                                                 {"artifact_id": "enr_1"})),
        Say("Done."), after="now",
    )]
    async with FakeGeminiLive(turns) as fake:
        adapter = await connected(fake)
        drive = Driver(adapter)
        await drive.step(answer_tools=False)
        calls = drive.of(ToolCallRequest)
        assert [c.name for c in calls] == ["kb_search", "set_ready"]
        assert calls[0].args == {"query": "premium"}
        # Answer out of order: nothing goes out until both are in, then one message in order.
        await adapter.send_tool_result(calls[1].call_id, {"lifecycle": "READY_FOR_REVIEW"})
        assert fake.tool_responses == []
        await adapter.send_tool_result(calls[0].call_id, {"error": "no document matched"})
        await drive.idle(1000)
        await adapter.close()
    assert len(fake.tool_responses) == 1
    responses = fake.tool_responses[0].function_responses or []
    assert [(r.id, r.name) for r in responses] == [(c.call_id, c.name) for c in calls]
    assert responses[0].response == {"error": "no document matched"}
    assert responses[1].response == {"output": {"lifecycle": "READY_FOR_REVIEW"}}
    assert [ev.text for ev in drive.of(TranscriptDone)] == ["Done."]


async def test_cancelled_tool_calls_are_not_answered() -> None:
    turns = [Turn.of(Say("One moment."), Tools.of(Call("kb_search", {"query": "x"})),
                     after="now")]
    async with FakeGeminiLive(turns) as fake:
        adapter = await connected(fake)
        drive = Driver(adapter)
        while not drive.of(ToolCallRequest) and drive.t < 2000:
            await drive.step(answer_tools=False)
        (call,) = drive.of(ToolCallRequest)
        await drive.play(frames_of(SPEECH), answer_tools=False)  # barge in: server cancels
        await adapter.send_tool_result(call.call_id, {"ok": True})
        await drive.idle(400)
        await adapter.close()
    assert fake.interruptions == 1
    assert fake.tool_responses == []
    assert any("toolCallCancellation" in m for m in fake.sent)


# ------------------------------------------------------------------ goAway and session resumption

RESUMED = "session resumed after goAway"


def with_go_away(turns: list[Turn], at: dict[int, int]) -> list[Turn]:
    """The turns with a scripted ``goAway`` (``{turn: time_left_ms}``) right after each named
    turn's first tool call, i.e. while the model is in the middle of its turn."""
    out = list(turns)
    for index, left in at.items():
        steps = list(out[index].steps)
        first_tools = next(i for i, step in enumerate(steps) if isinstance(step, Tools))
        steps.insert(first_tools + 1, GoAway(left))
        out[index] = Turn(tuple(steps), out[index].after)
    return out


def connections(fake: FakeGeminiLive) -> list[list[dict[str, Any]]]:
    """The client messages the fake received, one list per connection (each opens with its
    setup)."""
    conns: list[list[dict[str, Any]]] = []
    for message in fake.messages:
        if "setup" in message:
            conns.append([])
        conns[-1].append(message)
    return conns


def kinds_of(messages: list[dict[str, Any]]) -> list[str]:
    """``setup``, ``activityStart``, ``audio``, ``toolResponse``, … of client messages."""
    out = []
    for message in messages:
        (key, body), = message.items()
        out.append(next(iter(body)) if key in ("realtime_input", "realtimeInput") else key)
    return out


def handles_sent(sent: list[dict[str, Any]]) -> list[str]:
    """The resumable handles among server messages."""
    return [m["sessionResumptionUpdate"]["newHandle"] for m in sent
            if m.get("sessionResumptionUpdate", {}).get("resumable")]


async def test_go_away_mid_turn_resumes_the_session_and_the_task_completes(
        tmp_path: Path) -> None:
    """apexv1_001 with two scripted goAways, each in the middle of a tool-calling turn: the
    adapter finishes the turn on the old connection, reconnects at the next resumable point
    with the latest handle, and the conversation goes on in the same session, twice. Without
    the resumption the fake closes each connection once its time left has passed (1011
    "Deadline expired"), and the run ends as an infrastructure drop."""
    turns = with_go_away(oracle_turns("apexv1_001"), {4: 6000, 11: 15000})
    async with FakeGeminiLive(turns) as fake:
        result, adapter = await run_task("apexv1_001", fake, tmp_path)
    end = session_end(result)
    assert end.failure_class == "none", end.detail
    assert end.reason in ("terminal_state", "user_goodbye")
    events = events_of(result)
    assert [e.lifecycle for e in events if isinstance(e, ArtifactUpdate)][-1] == "COMMITTED"
    grade = grade_run_dir(result.run_dir, {t.id: t for t in bundled_tasks()})
    assert grade.WS, grade.gate_reasons
    # Three connections of one session; each new one resumed from the last handle the one
    # before it handed out, and the client (not the deadline) closed the old ones.
    assert fake.sessions == 3 and adapter.resumptions == 2
    assert fake.go_aways == 2 and fake.closed_with is None
    setups = [setup.setup.session_resumption for setup in fake.setups]
    assert setups[0] is not None and setups[0].handle is None
    assert [s.handle for s in setups[1:] if s is not None] == fake.resumed
    for conn, handle in zip(connections(fake)[1:], fake.resumed, strict=True):
        assert conn[0]["setup"]["sessionResumption"] == {"handle": handle}
    before_second = fake.sent.index(next(m for m in fake.sent if m.get("setupComplete", {})
                                         .get("sessionId") == "fake-2"))
    assert fake.resumed[0] == handles_sent(fake.sent[:before_second])[-1]
    # The resumption is in the run log, as a non-fatal connectivity note, and nothing else is.
    errors = agent_errors(result)
    assert [e.category for e in errors] == ["connectivity", "connectivity"]
    assert all(RESUMED in e.message for e in errors)
    # Tool calls on every connection, every one answered once; no turn lost or repeated.
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert {c.call_id.split("-")[2] for c in calls} == {"1", "2", "3"}
    answered = [fr.id or "" for tr in fake.tool_responses for fr in tr.function_responses or []]
    assert sorted(answered) == sorted(c.call_id for c in calls)
    assert fake.turns_started == len(turns)
    assert len(fake.spoken) == len(set(fake.spoken)) == len(turns)
    assert fake.violations == []


async def test_connections_rotated_by_age_resume_wherever_the_conversation_is(
        tmp_path: Path) -> None:
    """The service resets connections by age, not at turn boundaries: every connection gets
    a goAway after 15 s of user audio, with 10 s left. apexv1_001 still commits, each
    resumption logged."""
    async with FakeGeminiLive(oracle_turns("apexv1_001"), rotate_after_ms=15_000,
                              rotate_time_left_ms=10_000) as fake:
        result, adapter = await run_task("apexv1_001", fake, tmp_path)
    end = session_end(result)
    assert end.failure_class == "none", end.detail
    grade = grade_run_dir(result.run_dir, {t.id: t for t in bundled_tasks()})
    assert grade.WS, grade.gate_reasons
    assert adapter.resumptions >= 3 and fake.sessions == adapter.resumptions + 1
    assert fake.closed_with is None
    notes = agent_errors(result)
    assert len(notes) == adapter.resumptions and all(RESUMED in e.message for e in notes)
    assert fake.turns_started == len(oracle_turns("apexv1_001"))
    assert len(fake.spoken) == len(set(fake.spoken))
    assert fake.violations == []


async def test_a_go_away_while_the_user_speaks_replays_the_utterance_on_the_new_connection(
) -> None:
    """goAway while the model is idle and the user is mid-utterance: the adapter resumes at
    once from the handle the model's last turn left, and the new connection hears the
    utterance from its activityStart (sent on the old socket after that handle, it is not in
    the resumed session), then the rest of it; the model answers once, and every later
    resumption (connections here rotate every 1.6 s) keeps the conversation whole."""
    turns = [Turn.of(Say("Hello.", ms=600), after="now"), Turn.of(Say("Got it."))]
    # The fake ages a connection by the user audio it receives, replayed audio included: a
    # rotation age under the replayed utterance would rotate every new connection at once.
    async with FakeGeminiLive(turns, rotate_after_ms=1600, rotate_time_left_ms=5000) as fake:
        adapter = await connected(fake)
        drive = Driver(adapter)
        await drive.idle(1000)
        await drive.play(frames_of(SPEECH))  # the goAway comes 600 ms into it
        await drive.idle(2000)
        await adapter.close()
    # Every connection is rotated after 1.6 s of audio; the first rotation hit the utterance.
    assert fake.sessions == adapter.resumptions + 1 >= 2
    first, second = connections(fake)[:2]
    assert [k for k in kinds_of(first) if k != "audio"] == ["setup", "activityStart"]
    second_kinds = kinds_of(second)
    assert second_kinds[:3] == ["setup", "activityStart", "audio"]
    assert second_kinds.count("activityStart") == 1 and "activityEnd" in second_kinds
    # The new connection heard the whole utterance: its loud part spans the 800 ms tone.
    audio = np.concatenate([
        np.frombuffer(rt.audio.data or b"", dtype="<i2") for rt in (
            validate_client(json.dumps(m)).realtime_input for m in second[1:])
        if rt is not None and rt.audio is not None])
    assert abs(loud_span_ms(audio, 16_000) - 800) <= 45
    assert [ev.text for ev in drive.of(TranscriptDone)] == ["Hello.", "Got it."]
    assert fake.closed_with is None
    signals = drive.of(AgentErrorSignal)
    assert len(signals) == adapter.resumptions
    assert all(RESUMED in s.message and not s.fatal and s.category == "connectivity"
               for s in signals)


async def test_a_go_away_with_too_little_time_resumes_mid_turn_and_says_what_was_lost(
) -> None:
    """goAway with less time left than the adapter's margin while the model speaks after a
    tool call: no resumable point will come in time, so the adapter resumes at once from the
    handle before that turn. The cut response ends (its partial transcript, ResponseDone),
    the note says the resumed session lacks it, and the model, whose session is back before
    that turn, answers the user's next turn on the new connection."""
    turns = [
        Turn.of(Say("Hello.", ms=600), after="now"),
        Turn.of(Tools.of(Call("kb_search", {"query": "premium"})), GoAway(1000),
                Say("Let me read the whole policy to you now.", ms=4000)),
    ]
    async with FakeGeminiLive(turns) as fake:
        adapter = await connected(fake)
        drive = Driver(adapter)
        await drive.idle(1000)
        await drive.play(frames_of(SPEECH))
        await drive.idle(1000)
        assert adapter.resumptions == 1 and fake.sessions == 2
        await drive.play(frames_of(SPEECH))  # asks again, on the new connection
        await drive.idle(5000)
        await adapter.close()
    (resumed,) = fake.resumed
    assert fake.handles[resumed].turn_index == 1  # the handle left by "Hello."
    assert fake.closed_with is None
    signals = drive.of(AgentErrorSignal)
    assert len(signals) == 1 and not signals[0].fatal
    assert RESUMED in signals[0].message and "response being generated" in signals[0].message
    texts = [ev.text for ev in drive.of(TranscriptDone)]
    full = "Let me read the whole policy to you now."
    assert texts[0] == "Hello." and texts[-1] == full
    assert len(texts) == 3 and full.startswith(texts[1]) and texts[1] != full
    assert len(drive.of(ResponseDone)) == 3
    calls = drive.of(ToolCallRequest)
    assert [c.call_id.split("-")[2] for c in calls] == ["1", "2"]
    answered = [fr.id for tr in fake.tool_responses for fr in tr.function_responses or []]
    assert answered == [c.call_id for c in calls]


async def test_a_tool_call_pending_at_a_forced_resumption_is_dropped_not_answered() -> None:
    """The connection must go while a tool call waits for its result: the resumed session
    (from the handle before that turn) never made the call, so its result is not sent on
    the new connection (the service would refuse an unknown call); the note names the call,
    and the user's next turn gets a fresh call there, answered normally."""
    turns = [Turn.of(Say("Hello.", ms=600), after="now"),
             Turn.of(Tools.of(Call("kb_search", {"query": "premium"})), Say("Done."))]
    async with FakeGeminiLive(turns, rotate_after_ms=2600, rotate_time_left_ms=500) as fake:
        adapter = await connected(fake)
        drive = Driver(adapter)
        await drive.idle(1000)
        await drive.play(frames_of(SPEECH), answer_tools=False)
        await drive.idle(1000, answer_tools=False)  # the call (at 2.4 s) waits; goAway at 2.6 s
        (stale,) = drive.of(ToolCallRequest)
        assert adapter.resumptions == 1 and fake.sessions == 2
        await adapter.send_tool_result(stale.call_id, {"ok": True})  # too late: dropped
        await drive.play(frames_of(SPEECH))
        await drive.idle(1500)
        await adapter.close()
    signals = drive.of(AgentErrorSignal)
    assert len(signals) == 1 and RESUMED in signals[0].message
    assert f"tool calls {stale.call_id}" in signals[0].message
    fresh = [c for c in drive.of(ToolCallRequest) if c is not stale]
    assert [c.call_id.split("-")[2] for c in fresh] == ["2"]
    answered = [fr.id for tr in fake.tool_responses for fr in tr.function_responses or []]
    assert answered == [fresh[0].call_id]
    assert [ev.text for ev in drive.of(TranscriptDone)] == ["Hello.", "Done."]
    assert fake.closed_with is None and fake.violations == []


async def test_a_go_away_before_any_resumption_handle_is_an_infrastructure_drop(
        tmp_path: Path) -> None:
    """The service never offered a resumable point: nothing to resume from. Not the agent's
    fault: the run ends as infrastructure, the detail names goAway."""
    async with FakeGeminiLive(oracle_turns("apexv1_001"), rotate_after_ms=15_000,
                              resumable=False) as fake:
        result, adapter = await run_task("apexv1_001", fake, tmp_path)
    end = session_end(result)
    assert end.reason == "infrastructure_error" and end.failure_class == "infrastructure"
    assert "goAway" in end.detail and "handle" in end.detail and "connectivity" in end.detail
    assert agent_errors(result) == []
    assert fake.sessions == 1 and adapter.resumptions == 0


async def test_a_refused_resumption_is_an_infrastructure_drop(tmp_path: Path) -> None:
    async with FakeGeminiLive(oracle_turns("apexv1_001"), rotate_after_ms=15_000,
                              honour_handles=False) as fake:
        result, adapter = await run_task("apexv1_001", fake, tmp_path)
    end = session_end(result)
    assert end.reason == "infrastructure_error" and end.failure_class == "infrastructure"
    assert "could not resume the session after goAway" in end.detail
    assert f"close {RESUME_REFUSED[0]}" in end.detail and RESUME_REFUSED[1] in end.detail
    assert fake.closed_with == RESUME_REFUSED and fake.sessions == 2
    assert adapter.resumptions == 0


def test_go_away_time_left_is_a_protobuf_duration() -> None:
    for raw, ms in [("50s", 50_000), ("1.500s", 1500), ("0.25s", 250), ("", None),
                    ("soon", None)]:
        msg = parse_server_message(f'{{"goAway": {{"timeLeft": "{raw}"}}}}')
        assert msg.go_away is not None and msg.go_away.time_left_ms() == ms
    update = parse_server_message(
        '{"sessionResumptionUpdate": {"newHandle": "h1", "resumable": true}}'
    ).session_resumption_update
    assert update is not None and (update.new_handle, update.resumable) == ("h1", True)


# ------------------------------------------------------------------ the fake's full_events mode

NOT_IN_FULL_EVENTS = {
    "goAway": "its own tests above (it ends a connection)",
    "toolCallCancellation": "only when the user cuts in while calls are pending "
                            "(test_cancelled_tool_calls_are_not_answered)",
    "voiceActivityDetectionSignal": "needs explicitVadSignal in the setup, which google-genai "
                                    "refuses outside Vertex AI",
}
"""``LiveServerMessage`` fields the full_events conversation does not send, and why."""

CONTENT_NOT_IN_FULL_EVENTS = {
    "groundingMetadata": "Google Search grounding is not configured",
    "urlContextMetadata": "the URL context tool is not configured",
    "turnCompleteReason": "only for a turn ended abnormally (safety, malformed function call)",
    "waitingForInput": "proactive audio is not configured",
}
"""``LiveServerContent`` fields it does not send, and why."""


def kinds_sent(fake: FakeGeminiLive) -> tuple[set[str], set[str]]:
    """Top-level kinds and ``serverContent`` fields of everything the fake sent."""
    top = {k for m in fake.sent for k in m}
    content = {k for m in fake.sent for k in m.get("serverContent", {})}
    return top, content


async def test_full_events_mode_sends_every_documented_server_message(tmp_path: Path) -> None:
    """The shared suite's apexv1_001 conversation in the fake's full_events mode sends every
    server message google-genai's ``LiveServerMessage`` / ``LiveServerContent`` define (less
    the ones listed above, each with its reason), interleaved in the normal flow, and the
    run is as clean as in minimal mode; minimal mode sends none of the extra ones. A field a
    new SDK adds fails here until the fake sends it or it is listed."""
    documented = {to_camel(f) for f in genai_types.LiveServerMessage.model_fields}
    content_fields = {to_camel(f) for f in genai_types.LiveServerContent.model_fields}
    assert set(NOT_IN_FULL_EVENTS) <= documented
    assert set(CONTENT_NOT_IN_FULL_EVENTS) <= content_fields
    sent: dict[str, tuple[set[str], set[str]]] = {}
    for mode in ("minimal", "full_events"):
        harness = GeminiLiveHarness()
        harness.mode = mode
        try:
            run = await run_shared(cast(ProviderHarness, harness), "apexv1_001",
                                   conversation("apexv1_001"), tmp_path / mode)
            assert run.result.end_reason == "user_goodbye", run.of("session.end")
            assert not run.of("agent.error") and not run.of("agent.protocol_unknown")
            assert [e.lifecycle for e in run.of("artifact.update")][-1] == "COMMITTED"
            assert harness.violations() == []
            assert harness.fake is not None
            sent[mode] = kinds_sent(harness.fake)
        finally:
            await harness.stop()
    top, content = sent["full_events"]
    assert top == documented - set(NOT_IN_FULL_EVENTS)
    assert content == content_fields - set(CONTENT_NOT_IN_FULL_EVENTS)
    extra_top = {"usageMetadata", "voiceActivity"}
    extra_content = {"inputTranscription", "interimInputTranscription", "interactionStatus"}
    assert not (sent["minimal"][0] & extra_top) and not (sent["minimal"][1] & extra_content)


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("reject", "category"),
    [(BAD_KEY, "authentication"), (RATE_LIMITED, "rate_limit"), (QUOTA_EXCEEDED, "quota"),
     (SERVER_ERROR, "server")],
    ids=["bad-auth", "rate-limit", "quota", "server"],
)
async def test_a_rejected_setup_is_a_categorized_fatal_error(
    reject: tuple[int, str], category: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with FakeGeminiLive(oracle_turns("apexv1_001"), reject=reject) as fake:
        result, _ = await run_task("apexv1_001", fake, tmp_path)
    errors = agent_errors(result)
    assert [e.category for e in errors] == [category]
    assert reject[1] in errors[0].message and str(reject[0]) in errors[0].message
    end = session_end(result)
    assert end.reason == "agent_error" and end.failure_class == "agent"
    client_logs = [r.getMessage() for r in caplog.records if r.name != "websockets.server"]
    assert any("x-goog-api-key: [redacted]" in m for m in client_logs)
    assert not any(FAKE_KEY in m for m in client_logs)
    assert FAKE_KEY not in (result.run_dir / "events.jsonl").read_text()


async def test_a_wrong_key_is_an_authentication_error(tmp_path: Path) -> None:
    async with FakeGeminiLive(api_key="the-right-key") as fake:
        result, _ = await run_task("apexv1_001", fake, tmp_path,
                                   env=fake.env(GEMINI_API_KEY="a-wrong-key"))
    assert fake.closed_with == BAD_KEY
    assert [e.category for e in agent_errors(result)] == ["authentication"]


async def test_an_unknown_server_message_is_a_protocol_error(tmp_path: Path) -> None:
    turns = [Turn.of(Say("Hello."), Send({"serverContemplation": {"mood": "pensive"}}),
                     after="now")]
    async with FakeGeminiLive(turns) as fake:
        result, _ = await run_task("apexv1_001", fake, tmp_path)
    errors = agent_errors(result)
    assert [e.category for e in errors] == ["protocol"]
    assert "serverContemplation" in errors[0].message
    assert session_end(result).reason == "agent_error"


async def test_outside_strict_mode_an_unknown_message_is_logged_and_counted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default for real campaigns: the run goes on, the log says what was ignored, and
    the grade counts it (diagnostics, never a gate)."""
    from grading.gates import grade_run_dir
    from runtime.core.events import AgentProtocolUnknown
    from tests.conftest import bundled_tasks

    monkeypatch.setenv("APEX_STRICT_PROTOCOL", "0")
    turns = [Turn.of(Say("Hello."), Send({"serverContemplation": {"mood": "pensive"}}),
                     after="now")]
    async with FakeGeminiLive(turns) as fake:
        result, _ = await run_task("apexv1_001", fake, tmp_path)
    assert agent_errors(result) == []
    unknown = [e for e in events_of(result) if isinstance(e, AgentProtocolUnknown)]
    assert [e.event_type for e in unknown] == ["serverContemplation"]
    assert session_end(result).reason != "agent_error"
    grade = grade_run_dir(result.run_dir, {t.id: t for t in bundled_tasks()})
    assert grade.protocol_unknown == {"serverContemplation": 1}


async def test_disconnect_mid_response_is_an_infrastructure_drop(tmp_path: Path) -> None:
    turns = [Turn.of(Say("Hi, thanks for calling the benefits desk.", ms=3000), Drop(),
                     after="now")]
    async with FakeGeminiLive(turns) as fake:
        result, _ = await run_task("apexv1_001", fake, tmp_path)
    end = session_end(result)
    assert end.reason == "infrastructure_error" and end.failure_class == "infrastructure"
    assert "connectivity" in end.detail
    assert agent_errors(result) == []
    assert fake.closed_with == (None, "")


@pytest.mark.parametrize(
    ("close", "logged", "reason"),
    [
        (SERVER_ERROR, ["server"], "infrastructure_error"),
        (RATE_LIMITED, ["rate_limit"], "infrastructure_error"),
        ((1000, ""), [], "infrastructure_error"),
        (QUOTA_EXCEEDED, ["quota"], "agent_error"),
        (BAD_KEY, ["authentication"], "agent_error"),
    ],
    ids=["server", "rate-limit", "clean-close", "quota", "auth"],
)
async def test_a_close_mid_run_is_categorized(
    close: tuple[int, str], logged: list[str], reason: str, tmp_path: Path,
) -> None:
    """A Live session cannot outlive a close: the category is logged, then the run ends as an
    infrastructure drop, or as a fatal error for credentials and quota."""
    turns = [Turn.of(Say("Hi there."), after="now"), Turn.of(Close(*close))]
    async with FakeGeminiLive(turns) as fake:
        result, _ = await run_task("apexv1_001", fake, tmp_path)
    assert [e.category for e in agent_errors(result)] == logged
    end = session_end(result)
    assert end.reason == reason
    assert end.failure_class == ("infrastructure" if reason == "infrastructure_error" else "agent")


async def test_an_unreachable_endpoint_is_an_infrastructure_drop(tmp_path: Path) -> None:
    async with FakeGeminiLive() as fake:
        env = fake.env()
    # The fake is gone: nothing listens on its port any more.
    async with FakeGeminiLive() as other:
        result, _ = await run_task("apexv1_001", other, tmp_path, env=env)
    end = session_end(result)
    assert end.reason == "infrastructure_error" and end.failure_class == "infrastructure"
    assert "connectivity" in end.detail


async def test_a_missing_key_names_the_variables() -> None:
    adapter = make_adapter(None, {})
    with pytest.raises(ProviderConfigError) as info:
        await adapter.connect(AgentSessionConfig(
            task_id="t", instructions="", tools=[], sample_rate=SAMPLE_RATE,
        ))
    assert all(var in str(info.value) for var in KEY_VARIABLES)


async def test_a_missing_certificate_bundle_is_a_config_error(tmp_path: Path) -> None:
    adapter = make_adapter(None, {"GEMINI_API_KEY": "k",
                                  "APEX_GEMINI_LIVE_CA_FILE": str(tmp_path / "none.pem")})
    with pytest.raises(ProviderConfigError, match="APEX_GEMINI_LIVE_CA_FILE"):
        await adapter.connect(AgentSessionConfig(
            task_id="t", instructions="", tools=[], sample_rate=SAMPLE_RATE,
        ))


def test_settings_never_show_the_key_and_reject_a_plain_url() -> None:
    settings = GeminiLiveSettings.from_env(None, {"GOOGLE_API_KEY": "sekrit"})
    assert settings.api_key == "sekrit" and "sekrit" not in repr(settings)
    both = GeminiLiveSettings.from_env(None, {"GOOGLE_API_KEY": "g", "GEMINI_API_KEY": "m"})
    assert both.api_key == "m"
    with pytest.raises(ProviderConfigError, match="APEX_GEMINI_LIVE_URL"):
        GeminiLiveSettings.from_env(None, {"APEX_GEMINI_LIVE_URL": "ws://127.0.0.1:9"})


def test_the_registry_builds_the_adapter_without_io(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    factory = parse_agent_spec("gemini-live:gemini-custom-live")
    adapter = factory.make(find_task("apexv1_001"))
    assert isinstance(adapter, GeminiLiveAdapter)
    assert adapter.name == "gemini-live:gemini-custom-live"


@pytest.mark.parametrize(
    ("code", "message", "status", "category"),
    [
        (429, "You exceeded your current quota, please check your plan.", "RESOURCE_EXHAUSTED",
         "quota"),
        (429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED",
         "rate_limit"),
        (401, "Request had invalid authentication credentials.", "UNAUTHENTICATED",
         "authentication"),
        (503, "The service is currently unavailable.", "UNAVAILABLE", "server"),
        (400, "Request contains an invalid argument.", "INVALID_ARGUMENT", "protocol"),
        (None, "", None, "protocol"),
    ],
)
def test_error_objects_are_categorized(
    code: int | None, message: str, status: str | None, category: str,
) -> None:
    report = ErrorReport(code=code, message=message, status=status)
    assert error_category(report) is ErrorCategory(category)


@pytest.mark.parametrize(
    ("code", "reason", "category"),
    [
        (1007, "API key expired. Please renew the API key.", "authentication"),
        (1008, "Permission denied on resource project.", "authentication"),
        (1011, "You exceeded your current quota, please check your plan and billing details.",
         "quota"),
        (1011, "RESOURCE_EXHAUSTED: Maximum concurrent sessions", "rate_limit"),
        (1011, "Internal error encountered.", "server"),
        (1007, "Request contains an invalid argument.", "protocol"),
        (1008, "Requested entity was not found.", "protocol"),
        (None, "", "connectivity"),
        (1006, "", "connectivity"),
    ],
)
def test_close_frames_are_categorized(code: int | None, reason: str, category: str) -> None:
    assert close_category(code, reason) is ErrorCategory(category)


# ------------------------------------------------------------------ wire models


def test_server_messages_parse_and_unknown_kinds_raise() -> None:
    msg = parse_server_message(b'{"serverContent": {"outputTranscription": {"text": "Hi"},'
                               b' "someNewField": 1}}')
    assert msg.server_content is not None and msg.server_content.output_transcription is not None
    assert parse_server_message('{"usageMetadata": {"totalTokenCount": 3}}').usage_metadata
    # An error object in place of a message (what the SDK raises as APIError), both shapes.
    for raw in ('{"code": 429, "message": "Resource has been exhausted (e.g. check quota).",'
                ' "status": "RESOURCE_EXHAUSTED"}',
                '{"error": {"code": 500, "message": "Internal error encountered.",'
                ' "status": "INTERNAL"}}'):
        report = parse_server_message(raw).error
        assert report is not None
        assert error_category(report) in (ErrorCategory.RATE_LIMIT, ErrorCategory.SERVER)
    for bad, needle in [
        ('{"sessionSummary": {}}', "sessionSummary"),
        ("{}", "empty"),
        ("[1]", "JSON object"),
        ("not json", "not JSON"),
        ('{"toolCall": {"functionCalls": [{"args": {}}]}}', "name"),
    ]:
        with pytest.raises(WireProtocolError, match=needle):
            parse_server_message(bad)


def test_tool_schemas_convert_and_inexpressible_ones_are_refused() -> None:
    for task in bundled_tasks():
        decls = function_declarations(tool_schemas(task))
        assert [d.name for d in decls] == [t.name for t in task.tools]
    nested = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": ["integer", "null"], "minimum": 0}}}}}
    (decl,) = function_declarations([nested])
    assert decl.parameters is not None and decl.parameters.properties is not None
    assert decl.parameters.properties["n"].nullable is True
    with pytest.raises(ToolSchemaError, match=r"tool g: parameters\.x: .*oneOf"):
        function_declarations([{"type": "function", "name": "g", "parameters": {
            "type": "object", "properties": {"x": {"oneOf": [{"type": "string"}]}}}}])


# ------------------------------------------------------------------ resampling


def dominant_hz(pcm: Pcm, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(pcm.astype(np.float64) * np.hanning(len(pcm))))
    return float(np.argmax(spectrum) * rate / len(pcm))


def loud_span_ms(pcm: Pcm, rate: int, threshold: int = 1000) -> float:
    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > threshold)
    return (loud[-1] - loud[0] + 1) * 1000 / rate


async def test_user_audio_reaches_the_server_as_16_khz_with_frequency_and_duration() -> None:
    async with FakeGeminiLive() as fake:
        adapter = await connected(fake)
        drive = Driver(adapter)
        await drive.idle(400)
        await drive.play(frames_of(tone(440.0, 1000, SAMPLE_RATE, amplitude=8000)))
        await drive.idle(800)
        await adapter.close()
    assert {rate for rate, _ in fake.input_chunks} == {16_000}
    heard = fake.input_audio(16_000)
    assert 0 <= drive.t * 16 - len(heard) <= 16 * 40  # all of it, less the filter's delay
    assert abs(loud_span_ms(heard, 16_000) - 1000) <= 3
    start = int(np.flatnonzero(np.abs(heard) > 1000)[0])
    assert abs(dominant_hz(heard[start:start + 16_000], 16_000) - 440.0) <= 1.5


@pytest.mark.parametrize("rate", [24_000, 16_000])
async def test_agent_audio_reaches_the_runtime_at_24_khz_with_frequency_and_duration(
    rate: int,
) -> None:
    turns = [Turn.of(Say("tone", ms=1000, rate=rate, tone_hz=440.0, amplitude=8000),
                     after="now")]
    async with FakeGeminiLive(turns) as fake:
        adapter = await connected(fake)
        drive = Driver(adapter)
        await drive.idle(1200)
        await adapter.close()
    audio = np.concatenate([ev.pcm for ev in drive.of(AudioDelta)])
    assert abs(len(audio) - SAMPLE_RATE) <= 24  # one second at 24 kHz, ± 1 ms
    assert abs(dominant_hz(audio, SAMPLE_RATE) - 440.0) <= 1.5
    assert len(drive.of(ResponseDone)) == 1


async def test_a_clean_session_has_no_error_signal_and_no_violation() -> None:
    turns = [Turn.of(Say("Hello."), after="now")]
    async with FakeGeminiLive(turns) as fake:
        adapter = await connected(fake)
        drive = Driver(adapter)
        await drive.idle(1000)
        await adapter.close()
    assert drive.of(AgentErrorSignal) == []
    assert fake.violations == []
    assert [ev.text for ev in drive.of(TranscriptDone)] == ["Hello."]


async def test_close_is_idempotent_and_ends_the_session() -> None:
    async with FakeGeminiLive() as fake:
        adapter = await connected(fake)
        await adapter.close()
        await adapter.close()
        assert await adapter.poll(0) == []


async def test_live_gemini_runs_a_shipped_task(tmp_path: Path) -> None:  # pragma: no cover
    """One shipped task against the real Live API, in realtime. Gated like
    ``tests/adapters/test_live.py``: a key in the shell alone never spends money."""
    if os.environ.get("APEX_LIVE_TESTS") != "1" or not any(os.environ.get(k)
                                                            for k in KEY_VARIABLES):
        pytest.skip("live test: set APEX_LIVE_TESTS=1 and GEMINI_API_KEY (or GOOGLE_API_KEY)")
    task = find_task("apexv1_001")
    result = await run_one(task, parse_agent_spec("gemini-live"),
                           run_dir_for(tmp_path, task.id, 0), seed=0, repeat=0,
                           clock="realtime")
    assert result.failure_class != "infrastructure", session_end(result).detail
    assert agent_errors(result) == []
    kinds = {e.type for e in events_of(result)}
    assert {"agent.speech.start", "agent.transcript"} <= kinds
