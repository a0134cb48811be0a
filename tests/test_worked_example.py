"""The paper's worked grading example (appendix J.5, Table 21) as a scripted run.

The run writes the "Agent wrote" column, gets approval, commits and never calls kb_search:
TS pass, PV pass, AC fail, AV fail. Without a judge AFA is 9/14 ("Basic" ≠ "Vision Basic" by
case-folded equality); with a judge that accepts "Basic" = "Vision Basic" it is 10/14, and a
second grading is answered from the on-disk cache without any request.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from grading.gates import grade_run_dir
from grading.judge import JudgeCache, OpenAIJudge
from tests.conftest import bundled_tasks, run_script
from tests.fakes.openai_chat import FakeChatServer, accept_pairs

TABLE_21 = {  # field: (agent wrote, score in the paper)
    "employee_id": ("E4471", 1), "legal_name": ("Morgan Ray", 0),
    "date_of_birth": ("July 9, 1988", 1), "medical_plan": ("HDHP", 1),
    "dental_plan": ("Standard", 1), "vision_plan": ("Basic", 1),
    "dependent_count": ("2", 1), "dependent_names": ("Jamie Ray", 0),
    "hsa_contribution": ("1200", 1), "beneficiary": ("Jamie Ray", 0),
    "beneficiary_pct": ("100", 1), "pcp": ("Dr. Alvarez", 1),
    "monthly_premium": ("360", 0), "status": ("submitted", 1),
}


def _run(tmp_path: Path) -> Path:
    return run_script("apexv1_001", "scenario_paper_table21", tmp_path)


def test_table21_without_judge(tmp_path: Path) -> None:
    grade = grade_run_dir(_run(tmp_path), {t.id: t for t in bundled_tasks()})
    assert grade.gates == {"TS": True, "PV": True, "AC": False, "AV": False}
    assert not grade.WS
    assert grade.afa == {"correct": 9, "total": 14}
    values = {f.field: f.value for f in grade.fields}
    assert values == {k: v for k, (v, _) in TABLE_21.items()}
    scores = {f.field: int(f.correct) for f in grade.fields}
    expected = {k: s for k, (_, s) in TABLE_21.items()}
    expected["vision_plan"] = 0  # no judge: semantic degrades to case-folded equality
    assert scores == expected
    assert not any(f.judged for f in grade.fields)


def test_table21_with_judge_and_cache(tmp_path: Path) -> None:
    run_dir = _run(tmp_path / "runs")
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    tasks = {t.id: t for t in bundled_tasks()}
    cache = tmp_path / "judge.sqlite"
    with FakeChatServer(accept_pairs([("Vision Basic", "Basic")])) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key="test-key", model="fake-judge",
                            cache=JudgeCache(cache))
        first = grade_run_dir(run_dir, tasks, judge=judge)
        asked = len(server.requests)
        judge2 = OpenAIJudge(base_url=server.base_url, api_key="test-key", model="fake-judge",
                             cache=JudgeCache(cache))
        second = grade_run_dir(copy, tasks, judge=judge2)
        assert len(server.requests) == asked  # every verdict came from the cache
    assert first.afa == {"correct": 10, "total": 14}
    assert {f.field: int(f.correct) for f in first.fields} == {
        k: s for k, (_, s) in TABLE_21.items()
    }
    assert first.gates == {"TS": True, "PV": True, "AC": False, "AV": False}
    # Judged: the identifier-like/semantic failures; never the strict numeric miss (360≠225).
    judged = {f.field for f in first.fields if f.judged}
    assert judged == {"legal_name", "vision_plan", "dependent_names", "beneficiary"}
    assert asked == 4
    assert all(b["temperature"] == 0 and b["model"] == "fake-judge" for b in server.requests)
    assert second.model_dump(exclude={"run_id"}) == first.model_dump(exclude={"run_id"})
