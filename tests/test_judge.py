"""Two-tier semantic escalation (grading.judge) against a local fake OpenAI-compatible server.

No network beyond 127.0.0.1: the fake (tests/fakes/openai_chat.py) records every request
and answers from a scripted rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grading.judge import (
    DEFAULT_BASE_URL,
    DEFAULT_MODEL,
    JUDGE_VERSION,
    FieldScore,
    JudgeCache,
    JudgeConfigError,
    JudgeError,
    JudgeVerdict,
    OpenAIJudge,
    build_prompt,
    judge_from_env,
    parse_verdict,
    score_field,
)
from runtime.core.spec import FieldSource, FieldSpec
from tests.fakes.openai_chat import FakeChatServer, accept_pairs, gold_pred_of, prompt_of
from tests.test_field_graders import J5_ARTIFACT, J5_ROWS, j5_field

MODEL = "judge-test-model"
ESCALATED = ["legal_name", "vision_plan", "dependent_names", "beneficiary"]


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def fake() -> Iterator[FakeChatServer]:
    with FakeChatServer(accept_pairs([("Vision Basic", "Basic"), (2, "a couple")])) as server:
        yield server


def make_judge(server: FakeChatServer, cache_path: Path) -> OpenAIJudge:
    return OpenAIJudge(
        base_url=server.base_url,
        api_key="test-key",
        model=MODEL,
        cache=JudgeCache(cache_path),
        timeout_s=10,
        max_retries=0,
    )


def score_j5(judge: OpenAIJudge | None) -> dict[str, FieldScore]:
    return {
        name: score_field(j5_field(name, grader, gold), pred, judge=judge, context=J5_ARTIFACT)
        for name, grader, gold, pred, _ in J5_ROWS
    }


# --------------------------------------------------------------------------- J.5 end to end

def test_j5_without_judge_is_nine_of_fourteen() -> None:
    scores = score_j5(None)
    assert sum(s.correct for s in scores.values()) == 9
    assert not any(s.judged for s in scores.values())
    assert scores["vision_plan"] == FieldScore(0.0, False, False)


def test_j5_with_judge_matches_paper(fake: FakeChatServer, tmp_path: Path) -> None:
    cache_path = tmp_path / "nested" / "judge.sqlite"
    scores = score_j5(make_judge(fake, cache_path))

    assert sum(s.correct for s in scores.values()) == 10
    paper = {name: score for name, *_, score in J5_ROWS}
    assert {name: int(s.score) for name, s in scores.items()} == paper
    assert sorted(n for n, s in scores.items() if s.judged) == sorted(ESCALATED)
    assert scores["vision_plan"] == FieldScore(1.0, True, True)
    assert scores["monthly_premium"] == FieldScore(0.0, False, False)  # 360 vs 225: strict

    # The judge saw exactly the escalation-eligible failing rows, once each, in row order.
    assert len(fake.requests) == 4
    assert set(fake.paths) == {"/v1/chat/completions"}
    assert all(h["authorization"] == "Bearer test-key" for h in fake.headers)
    rows = {name: (gold, pred) for name, _, gold, pred, _ in J5_ROWS}
    for name, body in zip(ESCALATED, fake.requests, strict=True):
        assert body["temperature"] == 0
        assert body["model"] == MODEL
        prompt = prompt_of(body)
        gold, pred = rows[name]
        assert f"Field: {name}\n" in prompt
        assert f"Reference (gold): {gold!r}\n" in prompt
        assert f"Agent wrote: {pred!r}\n" in prompt
        assert "Morgan Ray" in prompt  # the whole artifact is the context
        assert "Numeric target" not in prompt
        assert gold_pred_of(body) == (gold, pred)

    # A fresh judge on the same cache file: zero HTTP requests, same result.
    before = len(fake.requests)
    again = score_j5(make_judge(fake, cache_path))
    assert len(fake.requests) == before
    assert again == scores
    assert len(JudgeCache(cache_path)) == 4


def test_verdict_cached_flag(fake: FakeChatServer, tmp_path: Path) -> None:
    judge = make_judge(fake, tmp_path / "c.sqlite")
    first = judge.judge("vision_plan", {}, "Vision Basic", "Basic")
    second = judge.judge("vision_plan", {"other": 1}, "Vision Basic", "Basic")
    assert first == JudgeVerdict(True, "scripted accept", cached=False)
    assert second == JudgeVerdict(True, "scripted accept", cached=True)
    assert len(fake.requests) == 1
    # Different field, gold or pred are different keys.
    judge.judge("plan", {}, "Vision Basic", "Basic")
    judge.judge("vision_plan", {}, "Vision Basic", "basic plan")
    assert len(fake.requests) == 3


# --------------------------------------------------------------------------- escalation rules

@pytest.mark.parametrize(
    ("grader", "gold"),
    [
        ("exact", "E4471"), ("casefold_exact", "Morgan"), ("normalized_date", "1988-07-09"),
        ("normalized_phone", "+14155550199"), ("normalized_address", "1 Main St, Austin TX"),
        ("enum", "submitted"), ("numeric_tolerance", 2), ("set_f1", ["a"]),
        ("ordered_list", ["a"]), ("interval_overlap", [0, 1]), ("semantic", "Basic"),
    ],
)
@pytest.mark.parametrize("pred", [None, "", "   ", [], ["", " "]])
def test_empty_values_never_reach_the_server(
    fake: FakeChatServer, tmp_path: Path, grader: Any, gold: Any, pred: Any
) -> None:
    judge = make_judge(fake, tmp_path / "c.sqlite")
    field = FieldSpec(name="f", label="f", grader=grader, gold=gold, source=FieldSource(fact="f"))
    assert score_field(field, pred, judge=judge, context={}) == FieldScore(0.0, False, False)
    assert judge.judge("f", {}, gold, pred) == JudgeVerdict(False, "empty value", cached=False)
    assert fake.requests == []


@pytest.mark.parametrize(
    ("grader", "gold", "pred"),
    [
        ("normalized_date", "1988-07-09", "July 10, 1988"),
        ("normalized_phone", "+14155550199", "415 555 0198"),
        ("normalized_address", "1 Main St, Austin, TX 78701", "2 Main St, Austin, TX 78701"),
        ("set_f1", ["a", "b"], "a"),
        ("ordered_list", ["a", "b"], "b, a"),
        ("interval_overlap", [0, 10], "20 to 30"),
        ("numeric_tolerance", 225, "three sixty"),
    ],
)
def test_strict_graders_never_escalate(
    fake: FakeChatServer, tmp_path: Path, grader: Any, gold: Any, pred: Any
) -> None:
    judge = make_judge(fake, tmp_path / "c.sqlite")
    field = FieldSpec(name="f", label="f", grader=grader, gold=gold, source=FieldSource(fact="f"))
    result = score_field(field, pred, judge=judge, context={})
    assert not result.correct and not result.judged
    assert fake.requests == []


def test_deterministic_pass_short_circuits(fake: FakeChatServer, tmp_path: Path) -> None:
    judge = make_judge(fake, tmp_path / "c.sqlite")
    field = j5_field("employee_id", "exact", "E4471")
    assert score_field(field, "e forty-four seventy-one", judge=judge, context={}) == FieldScore(
        1.0, True, False
    )
    assert fake.requests == []


def test_numeric_without_number_goes_to_judge_with_hint(
    fake: FakeChatServer, tmp_path: Path
) -> None:
    judge = make_judge(fake, tmp_path / "c.sqlite")
    field = FieldSpec(
        name="dependent_count", label="Dependents", grader="numeric_tolerance", gold=2,
        source=FieldSource(fact="deps"),
    )
    assert score_field(field, "a couple", judge=judge, context={}) == FieldScore(1.0, True, True)
    (body,) = fake.requests
    assert "Numeric target: 2 (tolerance +/-0)" in prompt_of(body)
    # A rejected escalation scores 0, judged.
    assert score_field(field, "several", judge=judge, context={}) == FieldScore(0.0, False, True)


# --------------------------------------------------------------------------- replies

def test_non_json_reply_raises_judge_error(tmp_path: Path) -> None:
    with FakeChatServer(lambda body: "Yes, they match.") as server:
        judge = make_judge(server, tmp_path / "c.sqlite")
        field = j5_field("vision_plan", "semantic", "Vision Basic")
        with pytest.raises(JudgeError, match=r"vision_plan.*Yes, they match\."):
            score_field(field, "Basic", judge=judge, context={})
        assert len(server.requests) == 1
    assert len(JudgeCache(tmp_path / "c.sqlite")) == 0  # failures are not cached


def test_code_fenced_reply_is_accepted(tmp_path: Path) -> None:
    reply = '```json\n{"pass": false, "why": "different plan"}\n```'
    with FakeChatServer(lambda body: reply) as server:
        judge = make_judge(server, tmp_path / "c.sqlite")
        verdict = judge.judge("vision_plan", {}, "Vision Basic", "Premium")
    assert verdict == JudgeVerdict(False, "different plan", cached=False)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"pass": true, "why": "same"}', (True, "same")),
        ('```\n{"pass": false, "why": "x"}\n```', (False, "x")),
        ('{"pass": true}', (True, "")),
    ],
)
def test_parse_verdict(reply: str, expected: tuple[bool, str]) -> None:
    assert parse_verdict("f", reply) == expected


@pytest.mark.parametrize("reply", ["PASS", '{"pass": "yes"}', "[true]", "", None])
def test_parse_verdict_rejects(reply: str | None) -> None:
    with pytest.raises(JudgeError, match="'field_x'"):
        parse_verdict("field_x", reply)


def test_http_error_becomes_judge_error(tmp_path: Path) -> None:
    with FakeChatServer(lambda body: "{}") as server:
        judge = OpenAIJudge(
            base_url=server.base_url.removesuffix("/v1") + "/wrong", api_key="k", model=MODEL,
            cache=None, timeout_s=10, max_retries=0,
        )
        with pytest.raises(JudgeError, match="'pcp'"):
            judge.judge("pcp", {}, "Dr. Alvarez", "Dr Al")


# --------------------------------------------------------------------------- prompt

def test_prompt_is_the_e2_text() -> None:
    prompt = build_prompt("vision_plan", {"vision_plan": "Basic"}, "Vision Basic", "Basic")
    assert prompt.startswith("You grade ONE field of a professional work artifact")
    assert "'HVAC-007'=='HVAC-7', '2201'=='JOB-2201'." in prompt
    assert "Field: vision_plan\nContext: {\"vision_plan\": \"Basic\"}\n" in prompt
    assert "Reference (gold): 'Vision Basic'\nAgent wrote: 'Basic'\n" in prompt
    assert prompt.endswith('Return strict JSON: {"pass": true|false, "why": "<short>"}')
    hinted = build_prompt("n", {}, 8, "about eight", "Numeric target: 8 (tolerance +/-0)")
    assert "Agent wrote: 'about eight'\nNumeric target: 8 (tolerance +/-0)\nReturn" in hinted
    assert JUDGE_VERSION == "artifact-aware-3"


# --------------------------------------------------------------------------- cache

def test_cache_first_verdict_wins_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "cache.sqlite"
    one, two = JudgeCache(path), JudgeCache(path)
    assert not path.exists()  # lazy
    assert one.get("v", "f", '"p"', '"g"') is None
    one.put("v", "f", '"p"', '"g"', True, "first")
    two.put("v", "f", '"p"', '"g"', False, "second")
    assert two.get("v", "f", '"p"', '"g"') == (True, "first")
    assert one.get("v2", "f", '"p"', '"g"') is None
    assert len(two) == 1


# --------------------------------------------------------------------------- configuration

def test_judge_from_env_requires_a_key(tmp_path: Path) -> None:
    with pytest.raises(JudgeConfigError, match="APEX_JUDGE_API_KEY"):
        judge_from_env({"APEX_JUDGE_MODEL": "m"}, tmp_path / "c.sqlite")
    with pytest.raises(JudgeConfigError, match="OPENAI_API_KEY"):
        judge_from_env({"APEX_JUDGE_API_KEY": ""}, None)


def test_judge_from_env_defaults_and_no_io(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "sk-test", "HOME": str(tmp_path)}
    judge = judge_from_env(env, None)
    assert (judge.base_url, judge.model) == (DEFAULT_BASE_URL, DEFAULT_MODEL)
    assert DEFAULT_BASE_URL == "https://api.openai.com/v1" and DEFAULT_MODEL == "gpt-4o"
    assert judge.cache is not None
    assert judge.cache.path == tmp_path / ".cache" / "apex-voice" / "judge-cache.sqlite"
    assert not (tmp_path / ".cache").exists()
    assert "sk-test" not in repr(judge)

    custom = judge_from_env(
        {
            "APEX_JUDGE_API_KEY": "k",
            "OPENAI_API_KEY": "other",
            "APEX_JUDGE_BASE_URL": "http://127.0.0.1:9/v1",
            "APEX_JUDGE_MODEL": "m",
            "APEX_JUDGE_CACHE": str(tmp_path / "env.sqlite"),
        },
        None,
    )
    assert (custom.base_url, custom.model) == ("http://127.0.0.1:9/v1", "m")
    assert custom.cache is not None and custom.cache.path == tmp_path / "env.sqlite"
    explicit = judge_from_env({"APEX_JUDGE_API_KEY": "k"}, tmp_path / "x.sqlite")
    assert explicit.cache is not None and explicit.cache.path == tmp_path / "x.sqlite"


def test_judge_from_env_end_to_end(fake: FakeChatServer, tmp_path: Path) -> None:
    judge = judge_from_env(
        {"APEX_JUDGE_API_KEY": "env-key", "APEX_JUDGE_BASE_URL": fake.base_url,
         "APEX_JUDGE_MODEL": MODEL},
        tmp_path / "c.sqlite",
    )
    assert judge.judge("vision_plan", {}, "Vision Basic", "Basic").passed
    assert fake.headers[0]["authorization"] == "Bearer env-key"
    assert json.loads(json.dumps(fake.requests[0]))["model"] == MODEL
