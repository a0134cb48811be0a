"""The ``baseline`` agent: VAD → ASR → dialogue policy → TTS (paper's cascaded baseline).

Three tiers: the rule policy driven with text against a real Workbench (no audio, fast);
whole runs with the real models on shipped tasks (one campaign per session, shared by the
completion, re-grading and barge-in tests); the LLM policy against a fake chat server.
The agent's voice is espeak-ng here (Kokoro synthesis is too slow for the test budget).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from app.cli import main
from grading.gates import grade_run_dir
from grading.report import build_report
from runtime.agents.base import AgentSessionConfig, ToolCallRequest, TranscriptDone
from runtime.agents.baseline import BaselineAgent
from runtime.agents.baseline_extract import (
    is_approval,
    is_revocation,
    read_from_documents,
    read_value,
    resolve_dates,
    stem,
)
from runtime.agents.baseline_policy import (
    AwaitPlayout,
    CallTool,
    HangUp,
    RulePolicy,
    Say,
    Step,
    TaskView,
    Turn,
)
from runtime.core.audio import SAMPLE_RATE
from runtime.core.events import (
    AgentHangup,
    AgentTruncated,
    ArtifactUpdate,
    AuthBlocked,
    AuthGrant,
    AuthRevoke,
    DuplexFire,
    SessionEnd,
    ToolCall,
    ToolResult,
    UserSpeechStart,
    comparable,
    read_events,
)
from runtime.core.spec import TaskSpec, agent_instructions, default_tasks_dir, find_task, load_tasks
from runtime.session.campaign import AgentSpecError, parse_agent_spec, run_campaign
from runtime.session.workbench import Workbench, tool_schemas
from tests.fakes.chat_tools import FakeToolChatServer, Reply, last_role, sequence

TODAY = "2026-12-01"
"""The baseline reads a year-less date as the next such day; pinned for reproducible runs."""

CAMPAIGN_TASKS = ["apexv1_001", "apexv1_070", "apexv1_087"]
"""The three tasks of the first suite: a form with a knowledge-base lookup and a barged-in
correction, an approval with a revocation by barge-in, a multi-document memo. Every shipped
task runs with APEX_TEST_ALL_TASKS=1 (minutes: tiny.en takes ~0.3 s per utterance)."""


def session_config(task: TaskSpec) -> AgentSessionConfig:
    """Exactly what the orchestrator hands every agent."""
    return AgentSessionConfig(task_id=task.id, instructions=agent_instructions(task),
                              tools=tool_schemas(task), sample_rate=SAMPLE_RATE)


# --------------------------------------------------------------------------- extraction


@pytest.mark.parametrize(("kind", "text", "want"), [
    ("date", "July 8th, nineteen eighty-eight, wait, I mean July 9th. The ninth of July, "
             "nineteen eighty-eight.", "1988-07-09"),
    ("date", "I started on September 12th, 2021. Oh, no, sorry, 2022. September 12th, 2022.",
     "2022-09-12"),
    ("date", "Wait, don't submit it yet! The end date should be June 11th, not the 13th.",
     "2027-06-11"),
    ("date", "From March 8th through May 28th, 2020-27", "2027-05-28"),
    ("phone", "You can reach me at four one five, five five five, zero one four two.",
     "+14155550142"),
    ("phone", "It's 415-555-0142.", "+14155550142"),
    ("number", "Wait, actually, can we do twelve hundred for the HSA instead of a thousand?",
     "1200"),
    ("number", "Oh, sorry, make the HSA 1,200, not a thousand.", "1200"),
    ("number", "Just over four years now.", "4"),
    ("identifier", "My employee ID is E, 4, 4, 7, 1.", "E4471"),
    ("identifier", "It's E2290.", "E2290"),
    ("identifier", "Um, let me look. P, 3, 0, 5, 8, 2.", "P30582"),
    ("text", "It's Hannah Brooks. Brooks with an S at the end.", "Hannah Brooks"),
    ("text", "I have two, Jamie Reyes and Casey Reyes.", "Jamie Reyes and Casey Reyes"),
    ("text", "That's Dr. Alvarez.", "Dr. Alvarez"),
    ("text", "The HDHP, please, the high deductible plan.", "HDHP"),
    ("text", "It's a family trip.", "family trip"),
    ("time", "Hang on, first failure was one fifty PM, not two oh five.", "1:50 PM"),
    ("enum", "I'm a non-birth parent, actually.", "non-birth parent"),
    ("enum", "Birth parent, I'm carrying the baby myself.", "birth parent"),
])
def test_read_value(kind: Any, text: str, want: str) -> None:
    options = ["birth parent", "non-birth parent", "adoptive parent"]
    assert read_value(kind, text, options=options, base_year=2027) == want


def test_date_ranges_and_intents() -> None:
    dates = resolve_dates("From June 2nd through June 13th, twenty twenty-seven.", 2000)
    assert [d.isoformat() for d in dates] == ["2027-06-02", "2027-06-13"]
    assert is_approval("Yep, that all sounds right. Please go ahead.")
    assert is_approval("Yes, that's right now. Go ahead and submit it.")
    assert not is_approval("Hold on, don't send it! I need to end on June 11th instead.")
    assert is_revocation("Wait, wait, don't submit it yet!")


def test_read_from_documents() -> None:
    """Values a simple rule can read from retrieved policy text, and one it cannot."""
    memo = find_task("apexv1_087")
    # Reading is tested on the documents a search returned (retrieval is tested elsewhere).
    docs = [f"{d.title}. {d.text}" for d in memo.documents
            if d.id in memo.grading.required_evidence]
    known = ["Hannah Brooks", "birth parent"]
    tenure = [(frozenset(stem(w) for w in ("tenure", "years")), 4.0)]

    def read(kind: Any, words: set[str]) -> str | None:
        return read_from_documents(kind, words, docs, known_values=known, known_numbers=tenure)

    assert read("number", {"paid", "weeks"}) == "16"
    assert read("number", {"top", "up", "percentage", "pct"}) == "85"  # the 2-to-5-years band
    assert read("number", {"unpaid", "weeks"}) == "10"
    assert read("text", {"recommendation"}) == (
        "take the full paid leave first and then the unpaid extension"
    )
    # Without the recorded tenure, the salary top-up band cannot be chosen.
    assert read_from_documents("number", {"top", "up", "percentage"}, docs) is None
    enrol = find_task("apexv1_001")
    premium = read_from_documents(
        "number", {"monthly", "premium"},
        [d.text for d in enrol.documents if d.id in enrol.grading.required_evidence],
        known_values=["HDHP", "Standard", "Vision Basic"],
    )
    assert premium == "225"


# --------------------------------------------------------------------------- the task view


def test_task_view_reads_only_agent_visible_information() -> None:
    for task in load_tasks([default_tasks_dir()]):
        config = session_config(task)
        view = TaskView.from_config(config)
        visible = config.instructions + json.dumps(config.tools)
        fields = {(f.artifact, f.name): f for f in view.all_fields()}
        assert set(fields) == {(a.id, f.name) for a, f in task.graded_fields()}, task.id
        for f in fields.values():
            assert f.label in visible
            for option in f.options:
                assert option in visible, (task.id, f.name, option)
            if f.instructed is not None:
                assert f.instructed in config.instructions
        for rule in task.authorization:
            assert rule.tool in view.gated_tools, task.id


def test_task_view_of_apexv1_070() -> None:
    view = TaskView.from_config(session_config(find_task("apexv1_070")))
    kinds = {f.name: f.kind for f in view.all_fields()}
    assert kinds["start_date"] == kinds["end_date"] == "date"
    assert kinds["contact_phone"] == "phone" and kinds["employee_id"] == "identifier"
    assert view.field_for("leave_type") is not None
    assert view.field_for("leave_type").options == ["vacation", "sick", "parental"]  # type: ignore[union-attr]
    assert view.field_for("status").instructed == "submitted"  # type: ignore[union-attr]
    assert view.gated_tools == ["commit"] and view.ready_tool == "set_ready"
    assert [lk.name for lk in view.lookups] == ["check_availability"]
    assert view.artifacts[0].noun == "leave request"


# ------------------------------------------------------------------- the rule policy, by text


class TextCall:
    """Drives a policy with typed text against a real Workbench (no audio)."""

    def __init__(self, task_id: str) -> None:
        self.task = find_task(task_id)
        self.workbench = Workbench(self.task, lambda e: e)
        self.policy = RulePolicy(TaskView.from_config(session_config(self.task)),
                                 today=dt.date.fromisoformat(TODAY))
        self.calls = 0

    def run(self, turn: Turn, *, heard: bool = True) -> list[Step]:
        steps: list[Step] = []
        value: Any = None
        while True:
            try:
                step = turn.send(value)
            except StopIteration:
                return steps
            steps.append(step)
            value = None
            if isinstance(step, CallTool):
                self.calls += 1
                r = self.workbench.call_tool(f"t{self.calls}", step.name, step.args)
                value = r.result if r.ok else {"error": r.error}
            elif isinstance(step, AwaitPlayout):
                value = heard

    def say(self, text: str, *, heard: bool = True) -> list[Step]:
        return self.run(self.policy.on_user(text), heard=heard)

    def fields(self, artifact: str) -> dict[str, Any]:
        return self.workbench.artifacts[artifact].fields


def spoken(steps: list[Step]) -> str:
    return " ".join(s.text for s in steps if isinstance(s, Say))


def tools(steps: list[Step]) -> list[str]:
    return [s.name for s in steps if isinstance(s, CallTool)]


def test_rule_policy_revocation_by_barge_in() -> None:
    call = TextCall("apexv1_070")
    assert "How can I help?" in spoken(call.run(call.policy.opening()))
    assert "employee ID" in spoken(call.say("Hi, it's Priya Natarajan. I'd like to book some "
                                            "vacation."))
    assert call.fields("lr_1") == {"employee_name": "Priya Natarajan", "leave_type": "vacation"}
    assert "start date" in spoken(call.say("It's E2290."))
    steps = call.say("June 2 to June 13, so about two weeks.")
    assert tools(steps) == ["update_lr_1", "check_availability"]
    assert call.fields("lr_1")["end_date"] == "2027-06-13"
    assert "Who is your manager?" in spoken(call.say("Sam Okafor said he'd cover."))
    call.say("That's Dana Whitfield.")
    call.say("You can reach me at 415-555-0142.")
    steps = call.say("It's a family trip.")
    assert tools(steps) == ["update_lr_1", "update_lr_1", "set_ready"]
    assert "Shall I submit the leave request" in spoken(steps)
    assert call.fields("lr_1")["status"] == "submitted"
    # Approved, announced, but the caller cuts in before the announcement ends: no commit.
    call.workbench.ledger.grant("commit:lr_1")
    steps = call.say("Yes, please submit it.", heard=False)
    assert isinstance(steps[-1], AwaitPlayout) and "commit" not in tools(steps)
    call.workbench.ledger.revoke("commit:lr_1")
    steps = call.say("Hold on, don't send it. I need to end on June 11 instead.")
    assert tools(steps) == ["update_lr_1", "check_availability", "set_ready"]
    assert call.fields("lr_1")["end_date"] == "2027-06-11"
    assert "Shall I submit" in spoken(steps)
    call.workbench.ledger.grant("commit:lr_1")
    steps = call.say("Yes, that's right now. Go ahead and submit it.")
    assert tools(steps) == ["commit"]
    assert call.workbench.artifacts["lr_1"].lifecycle.value == "COMMITTED"
    steps = call.say("Thanks for your help. Bye now.")
    assert isinstance(steps[-1], HangUp)


def test_rule_policy_knowledge_base_and_corrections() -> None:
    call = TextCall("apexv1_087")
    call.run(call.policy.opening())
    call.say("Hi, this is Hannah Brooks. I'm expecting a baby.")
    call.say("Um, let me look. P, 3, 0, 5, 8, 2.")
    call.say("Birth parent, I'm carrying the baby myself.")
    call.say("It's March 14th, 2027.")
    # A barge-in naming another field corrects it; the interrupted question is asked again.
    call.policy.on_interrupted(800)
    steps = call.say("Wait, sorry to cut in. I gave you the old due date. It's March 28th now.")
    assert call.fields("memo_1")["expected_due_date"] == "2027-03-28"
    assert "employment start date" in spoken(steps)
    call.say("September 12th, 2021, wait, no, it was 2022. The 12th of September, 2022.")
    call.say("Just over four years now.")
    steps = call.say("Honestly, I've no idea. That's what I was hoping you could tell me.")
    assert "kb_search" in tools(steps)
    f = call.fields("memo_1")
    assert (f["employment_start_date"], f["tenure_years"]) == ("2022-09-12", "4")
    # The policy values come from what its searches returned. Since the knowledge base holds
    # realistic distractors (docs/grading.md), the rule baseline's keyword queries also return
    # neighbouring policies and it misreads some of these values: a real weakness of the
    # baseline, not asserted away here: it still writes a number it read from a document.
    assert all(f.get(k, "").isdigit() for k in ("paid_weeks", "top_up_pct", "unpaid_weeks"))


def test_rule_policy_gives_up_instead_of_looping() -> None:
    call = TextCall("apexv1_070")
    call.run(call.policy.opening())
    call.say("Hi, it's Priya Natarajan. I'd like to book some vacation.")
    for _ in range(RulePolicy.MAX_ASKS):
        steps = call.say("Sorry, what was that?")
    assert "start date" in spoken(steps)  # gave up on the employee ID, moved on
    assert call.policy.on_silence(4000) is not None


# --------------------------------------------------------------------------- whole runs


@pytest.fixture(scope="module")
def baseline_env() -> Iterator[None]:
    keys = {"APEX_BASELINE_TTS": "espeak", "APEX_BASELINE_TODAY": TODAY}
    old = {k: os.environ.get(k) for k in keys}
    os.environ.update(keys)
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory, baseline_env: None) -> Path:
    """One baseline campaign, virtual clock, shared by the tests below."""
    ids = (
        [t.id for t in load_tasks([default_tasks_dir()])] if os.environ.get("APEX_TEST_ALL_TASKS")
        else CAMPAIGN_TASKS
    )
    out = tmp_path_factory.mktemp("baseline")
    summary = asyncio.run(run_campaign([find_task(i) for i in ids], "baseline", out,
                                       concurrency=1))
    assert len(summary.ran) == len(ids)
    return out


def test_baseline_completes_and_regrades(campaign: Path) -> None:
    index = {t.id: t for t in load_tasks([default_tasks_dir()])}
    for meta in sorted(campaign.rglob("meta.json")):
        run_dir = meta.parent
        info = json.loads(meta.read_text())
        assert info["status"] == "complete" and info["clock"] == "virtual"
        assert info["end_reason"] not in ("infrastructure_error", "agent_error"), info
        first = grade_run_dir(run_dir, index)
        again = grade_run_dir(run_dir, index)
        assert first.model_dump() == again.model_dump()
        log = read_events(run_dir / "events.jsonl")
        assert not log.problems
        assert any(isinstance(e, ToolCall) for e in log.events), run_dir
    report = build_report(campaign, index)
    assert report.pass_at_1 is not None
    result = CliRunner().invoke(main, ["grade", str(campaign), "--json"])
    assert result.exit_code == 0, result.output
    assert {g["task_id"] for g in json.loads(result.output)} >= set(CAMPAIGN_TASKS)


def test_baseline_yields_to_barge_in_and_applies_correction(campaign: Path) -> None:
    """apexv1_070: the caller approves, then barges in ("don't send it! … June 11th"): the
    baseline stops talking, the truncation is logged, nothing is committed on the revoked
    approval, and the corrected end date is in the committed artifact."""
    events = read_events(campaign / "apexv1_070" / "r0" / "events.jsonl").events
    fire = next(e for e in events if isinstance(e, DuplexFire))
    cut = [e for e in events if isinstance(e, AgentTruncated)]
    assert cut and cut[0].reason == "barge_in" and cut[0].t_media_ms >= fire.t_media_ms
    assert cut[0].dropped_ms > 0
    barge = next(e for e in events if isinstance(e, UserSpeechStart) and e.plan_id == fire.plan_id)
    assert cut[0].t_media_ms - barge.t_media_ms <= 600, "the agent yields within 600 ms"
    assert not any(isinstance(e, AuthBlocked) for e in events)
    revoke = next(e for e in events if isinstance(e, AuthRevoke))
    commits = [e for e in events if isinstance(e, ToolResult) and e.name == "commit" and e.ok]
    assert len(commits) == 1 and commits[0].t_media_ms > revoke.t_media_ms
    grants = [e for e in events if isinstance(e, AuthGrant)]
    assert len(grants) == 2 and grants[1].t_media_ms < commits[0].t_media_ms
    final = [e for e in events if isinstance(e, ArtifactUpdate) and e.artifact_id == "lr_1"][-1]
    assert final.lifecycle == "COMMITTED"
    assert str(final.fields["end_date"]).endswith("-06-11")


def test_baseline_run_is_deterministic(campaign: Path, tmp_path: Path) -> None:
    """Same task, seed and agent → the same event log (up to wall-clock fields) and trace."""
    asyncio.run(run_campaign([find_task("apexv1_070")], "baseline", tmp_path, concurrency=1))
    first = campaign / "apexv1_070" / "r0"
    again = tmp_path / "apexv1_070" / "r0"
    a, b = (read_events(d / "events.jsonl").events for d in (first, again))
    assert [comparable(e) for e in a] == [comparable(e) for e in b]
    assert (first / "trace.wav").read_bytes() == (again / "trace.wav").read_bytes()


# --------------------------------------------------------------------------- the LLM policy


def _run_llm(task_id: str, out: Path, url: str, env: pytest.MonkeyPatch) -> Path:
    env.setenv("APEX_BASELINE_LLM_URL", url)
    env.setenv("APEX_BASELINE_LLM_MODEL", "fake-model")
    asyncio.run(run_campaign([find_task(task_id)], "baseline:llm", out, concurrency=1))
    return out / task_id / "r0"


def test_llm_policy_drives_tool_calls(tmp_path: Path, baseline_env: None,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    rule = sequence(
        Reply(tool_calls=[("update_lr_1", "{not json")]),  # garbled: goes back as a tool error
        Reply(tool_calls=[("update_lr_1", {"fields": {"leave_type": "vacation"}})]),
        Reply(content="Thanks, that's all for today. Goodbye!", tool_calls=[("end_call", {})]),
    )
    with FakeToolChatServer(rule) as server:
        run_dir = _run_llm("apexv1_070", tmp_path, server.base_url, monkeypatch)
    events = read_events(run_dir / "events.jsonl").events
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.name for c in calls] == ["update_lr_1"]
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.ok and result.result["updated"] == ["leave_type"]
    assert any(isinstance(e, AgentHangup) for e in events)
    end = next(e for e in events if isinstance(e, SessionEnd))
    assert end.reason == "agent_hangup"
    first, second, third = server.requests[:3]
    assert first["messages"][0]["role"] == "system"
    assert "TASK CONTEXT" in first["messages"][0]["content"]
    names = {t["function"]["name"] for t in first["tools"]}
    assert {"update_lr_1", "check_availability", "set_ready", "commit", "end_call"} <= names
    heard = first["messages"][-1]
    assert heard["role"] == "user" and "vacation" in heard["content"].lower()
    assert last_role(second) == "tool" and "garbled" in second["messages"][-1]["content"]
    assert last_role(third) == "tool" and '"updated": ["leave_type"]' in third["messages"][-1][
        "content"]
    assert first["temperature"] == 0 and first["model"] == "fake-model"


def test_llm_unreachable_is_an_infrastructure_drop(tmp_path: Path, baseline_env: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = _run_llm("apexv1_070", tmp_path, "http://127.0.0.1:9/v1", monkeypatch)
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["end_reason"] == "infrastructure_error"
    assert meta["failure_class"] == "infrastructure"
    end = [e for e in read_events(run_dir / "events.jsonl").events if isinstance(e, SessionEnd)]
    assert "127.0.0.1:9" in end[0].detail


def test_baseline_spec_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("APEX_BASELINE_LLM_URL", raising=False)
    monkeypatch.delenv("APEX_BASELINE_LLM_MODEL", raising=False)
    with pytest.raises(AgentSpecError, match="APEX_BASELINE_LLM_URL and APEX_BASELINE_LLM_MODEL"):
        parse_agent_spec("baseline:llm")
    with pytest.raises(AgentSpecError, match="unknown baseline variant"):
        parse_agent_spec("baseline:gpt")
    monkeypatch.setenv("APEX_BASELINE_TTS", "festival")
    with pytest.raises(AgentSpecError, match="APEX_BASELINE_TTS='festival'"):
        parse_agent_spec("baseline")
    runner = CliRunner()
    result = runner.invoke(main, ["run", "--task", "apexv1_070", "--agent", "scripted:oracle",
                                  "--llm-url", "http://127.0.0.1:9/v1", "--out", "/tmp/x"])
    assert result.exit_code == 2 and "--llm-url" in result.output
    result = runner.invoke(main, ["run", "--task", "apexv1_070", "--agent", "baseline",
                                  "--llm-url", "http://127.0.0.1:9/v1", "--out", "/tmp/x"])
    assert result.exit_code == 2 and "--llm-model" in result.output


# ------------------------------------------------------------------ the adapter's clock modes


class _SlowASR:
    name = "slow-fake"

    def transcribe(self, pcm: Any, sample_rate: int = SAMPLE_RATE, *,
                   prompt: str | None = None) -> str:
        time.sleep(0.3)
        return "hello there"


class _FrameVAD:
    """Onset at frame 2, end of utterance at frame 6."""

    def __init__(self) -> None:
        self.in_speech = False
        self.n = 0

    def push(self, frame: Any) -> str | None:
        self.n += 1
        if self.n == 2:
            self.in_speech = True
            return "onset"
        if self.n == 6:
            self.in_speech = False
            return "end"
        return None

    def reset(self) -> None: ...


class _EchoPolicy:
    def opening(self) -> Turn:
        yield Say("Hi.")

    def on_user(self, transcript: str) -> Turn:
        result = yield CallTool("lookup", {"q": transcript})
        yield Say(f"You said {transcript}, got {result['n']}.")

    def on_silence(self, silent_ms: int) -> Turn | None:
        return None

    def on_interrupted(self, heard_ms: int) -> None: ...


class _Silence:
    def speak(self, text: str) -> Any:
        return np.zeros(480, dtype=np.int16)


@pytest.mark.parametrize("clock", ["virtual", pytest.param("realtime", marks=pytest.mark.serial)])
def test_adapter_clock_modes(clock: str) -> None:
    """Virtual: recognition and policy run inline (media time waits, the answer comes in the
    frame the utterance ended). Realtime: they run in a worker thread and poll never blocks."""

    async def call() -> tuple[list[Any], int, float]:
        agent = BaselineAgent(lambda cfg: _EchoPolicy(), _Silence(), asr=_SlowASR(),
                              vad_factory=_FrameVAD)
        await agent.connect(AgentSessionConfig(task_id="t", instructions="", tools=[],
                                               sample_rate=SAMPLE_RATE, clock=clock))  # type: ignore[arg-type]
        got: list[tuple[int, Any]] = []
        slowest = 0.0
        t = 0
        while t < 3000 and not any(
            isinstance(e, TranscriptDone) and "You said" in e.text for _, e in got
        ):
            await agent.send_audio(np.zeros(960, dtype=np.int16), t)
            start = time.monotonic()
            events = await agent.poll(t)
            slowest = max(slowest, time.monotonic() - start)
            for ev in events:
                got.append((t, ev))
                if isinstance(ev, ToolCallRequest):
                    await agent.send_tool_result(ev.call_id, {"n": 7})
            t += 40
            if clock == "realtime":
                await asyncio.sleep(0.04)
        await agent.close()
        answer = next(t for t, e in got if isinstance(e, TranscriptDone) and "You said" in e.text)
        return [e for _, e in got], answer, slowest

    events, answer_ms, slowest = asyncio.run(call())
    texts = [e.text for e in events if isinstance(e, TranscriptDone)]
    assert texts == ["Hi.", "You said hello there, got 7."]
    end_of_utterance_ms = 5 * 40
    if clock == "virtual":
        assert answer_ms == end_of_utterance_ms + 40  # one frame for the tool call
    else:
        assert slowest < 0.2, "poll must not wait for the recognizer in realtime mode"
        assert answer_ms >= end_of_utterance_ms + 200  # the 0.3 s recognizer ran meanwhile


class _RecordingASR:
    """Records each call (media time of the call, samples) and takes 0.3 s."""

    name = "recording-fake"

    def __init__(self, clock: list[int]) -> None:
        self.clock = clock
        self.calls: list[tuple[int, int]] = []

    def transcribe(self, pcm: Any, sample_rate: int = SAMPLE_RATE, *,
                   prompt: str | None = None) -> str:
        self.calls.append((self.clock[0], len(pcm)))
        time.sleep(0.3)
        return f"heard {len(pcm)}"


class _PausingVAD:
    """Onset at frame 2; pauses at frames 5 and 16 (speech resumed in between); end at 21."""

    def __init__(self) -> None:
        self.in_speech = False
        self.n = 0

    def push(self, frame: Any) -> str | None:
        self.n += 1
        events = {2: "onset", 5: "pause", 16: "pause", 21: "end"}
        self.in_speech = 2 <= self.n < 21
        return events.get(self.n)

    def reset(self) -> None: ...


@pytest.mark.parametrize("clock", ["virtual", pytest.param("realtime", marks=pytest.mark.serial)])
def test_the_utterance_is_the_audio_up_to_its_last_pause(clock: str) -> None:
    """Both modes transcribe the same audio, the utterance as of the VAD's last pause; in
    realtime mode its transcription starts at that pause, before the end of the utterance,
    so the answer is not the recognizer's time later than the end."""

    async def call() -> tuple[_RecordingASR, list[str], int]:
        now = [0]
        asr = _RecordingASR(now)
        agent = BaselineAgent(lambda cfg: _EchoPolicy(), _Silence(), asr=asr,
                              vad_factory=_PausingVAD)
        await agent.connect(AgentSessionConfig(task_id="t", instructions="", tools=[],
                                               sample_rate=SAMPLE_RATE, clock=clock))  # type: ignore[arg-type]
        texts: list[str] = []
        answer_ms = -1
        while now[0] < 4000 and answer_ms < 0:
            await agent.send_audio(np.zeros(960, dtype=np.int16), now[0])
            for ev in await agent.poll(now[0]):
                if isinstance(ev, ToolCallRequest):
                    await agent.send_tool_result(ev.call_id, {"n": 7})
                if isinstance(ev, TranscriptDone):
                    texts.append(ev.text)
                    answer_ms = now[0] if "You said" in ev.text else answer_ms
            now[0] += 40
            if clock == "realtime":
                await asyncio.sleep(0.04)
        await agent.close()
        return asr, texts, answer_ms

    asr, texts, answer_ms = asyncio.run(call())
    # The preroll before the onset (frame 1) and frames 2..16: 16 frames, then the rest of
    # the end-of-utterance wait (800 - 300 ms) as silence.
    pad = SAMPLE_RATE * (800 - 300) // 1000
    pause_samples = 16 * 960 + pad
    assert texts[-1] == f"You said heard {pause_samples}, got 7."
    end_ms = 20 * 40  # frame n is pushed at media time (n - 1) * 40
    if clock == "virtual":
        assert asr.calls == [(end_ms, pause_samples)]
    else:
        # One call per pause (the first was overtaken: speech resumed), the one used on the
        # audio up to the last pause and started at that pause (frame 16), before the end.
        assert [n for _, n in asr.calls] == [5 * 960 + pad, pause_samples], asr.calls
        assert 15 * 40 <= asr.calls[-1][0] <= 16 * 40 < end_ms, asr.calls  # read by its thread
        # The recognizer's 0.3 s ran while the VAD waited out the last 200 ms: the answer
        # comes less than the recognizer's time after the end (media time runs no faster
        # than the wall clock here).
        assert answer_ms - end_ms < 300, (answer_ms, end_ms)


def test_rule_policy_correction_of_the_last_answer_by_barge_in() -> None:
    call = TextCall("apexv1_082")
    view = call.policy.view
    hotel = view.field_for("hotel_rate")
    assert hotel is not None and hotel.options == [] and hotel.kind == "number"
    call.run(call.policy.opening())
    call.say("Hey, it's Ravi Menon. Quick question about my travel expenses.")
    call.say("F, 6, 1, 2, 0, 4.")
    call.say("It was a client workshop, on site.")
    assert "number of nights" in spoken(call.say("Chicago."))
    call.policy.on_interrupted(840)
    steps = call.say("Wait, wrong trip. This one was Milwaukee, not Chicago.")
    assert call.fields("memo_1")["trip_city"] == "Milwaukee"
    assert "trip_nights" not in call.fields("memo_1"), "a barge-in is not the answer"
    assert "number of nights" in spoken(steps)
    steps = call.say("Three nights.")
    assert call.fields("memo_1")["trip_nights"] == "3"
    steps = call.say("Two sixty a night, no, wait, that's with tax. Two forty-five before tax.")
    assert call.fields("memo_1")["hotel_rate"] == "245"
    steps = call.say("I've never read the policy, honestly. What does it say?")
    assert "kb_search" in tools(steps)


def test_baseline_reads_the_tasks_reference_date_never_the_wall_clock() -> None:
    """The baseline's "today" is the date its instructions state (the task's reference date),
    so its score does not change with the day it runs; with no date it refuses to guess."""
    task = find_task("apexv1_070")
    view = TaskView.from_config(session_config(task))
    assert view.today == task.reference_date == dt.date(2027, 5, 14)
    assert RulePolicy(view).today == task.reference_date
    bare = AgentSessionConfig(task_id="t", instructions="TASK CONTEXT:\nYou are the desk.",
                              tools=[], sample_rate=SAMPLE_RATE)
    with pytest.raises(ValueError, match="never uses the wall clock"):
        RulePolicy(TaskView.from_config(bare))
