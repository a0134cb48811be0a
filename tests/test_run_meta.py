"""The run record (runtime/core/rundir.py, issue 16): ``meta.json`` through :class:`RunMeta`,
runs written before its ``format`` existed still list, replay and grade, the study filter works,
and a run that stops on an exception leaves a closed, readable record."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from grading.gates import grade_run_dir
from runtime.agents.base import AgentEvent, AgentSessionConfig
from runtime.agents.errors import ProviderConfigError
from runtime.core.audio import Pcm
from runtime.core.events import SessionEnd, read_events
from runtime.core.rundir import (
    RUN_META_FORMAT,
    RunDir,
    RunDirError,
    RunMeta,
    migrate_meta,
    repair_run_dir,
    unless_being_written,
)
from runtime.core.spec import find_task
from runtime.session.orchestrator import Orchestrator
from runtime.speechbank.bank import BankPlayer
from runtime.user.simulator import FrozenSimulator
from tests.conftest import bundled_tasks
from tests.webclient import WebClient

FIXTURE = Path(__file__).parent / "fixtures" / "runs_v1"
CAMPAIGN_RUN = Path("campaign") / "apexv1_070" / "r0"
STUDY_RUN = Path("studies") / "b3" / "p01-1"


@pytest.fixture
def v1_runs(tmp_path: Path) -> Path:
    """A runs folder as a format-1 server left it: a campaign run and a Study B call."""
    runs = tmp_path / "runs"
    shutil.copytree(FIXTURE / "campaign", runs / "campaign")
    study = runs / STUDY_RUN
    shutil.copytree(runs / CAMPAIGN_RUN, study)
    shutil.copy(FIXTURE / "study_b_meta.json", study / "meta.json")
    return runs


def _raw(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def test_a_format_1_record_reads_as_the_current_format(v1_runs: Path) -> None:
    raw = _raw(v1_runs / CAMPAIGN_RUN / "meta.json")
    assert "format" not in raw  # written before the format existed
    meta = RunDir(v1_runs / CAMPAIGN_RUN).read_meta()
    assert meta.format == RUN_META_FORMAT == 2
    for key, value in raw.items():
        assert getattr(meta, key) == value, key
    assert meta.study is None and not meta.demo and not meta.live
    study = RunDir(v1_runs / STUDY_RUN).read_meta()
    assert study.study == "Study B #3" and study.study_b_id == 3 and study.live
    assert study.participant == "P01" and study.clock == "realtime"


def test_migration_of_format_1() -> None:
    assert migrate_meta({"task_id": "t"}, "r4") == {"task_id": "t", "run_id": "r4",
                                                    "format": 2}
    assert migrate_meta({"task_id": "t", "study_b_id": 12}, "x")["study"] == "Study B #12"
    current = {"format": 2, "task_id": "t", "run_id": "a"}
    assert migrate_meta(current, "x") == current  # the current format is left as it is


@pytest.mark.parametrize(("content", "message"), [
    ({"format": 99, "task_id": "t"}, r"format 99 is newer than this version reads \(2\)"),
    ({"format": "two", "task_id": "t"}, r"format 'two' is not a meta.json format number"),
    ({"task_id": "t", "seed": "abc"}, r"seed: Input should be a valid integer"),
    ({"agent": "x"}, r"task_id: Field required"),
    ({"task_id": "t", "status": "paused"}, r"status: Input should be 'running'"),
    (["not", "an", "object"], r"not a JSON object"),
])
def test_a_bad_record_is_an_error_naming_the_file_and_field(
        tmp_path: Path, content: Any, message: str) -> None:
    (tmp_path / "meta.json").write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(RunDirError, match=message) as caught:
        RunDir(tmp_path).read_meta()
    assert str(tmp_path / "meta.json") in str(caught.value)


def test_a_missing_or_broken_record(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match=r"no meta\.json; is this a run directory"):
        RunDir(tmp_path).read_meta()
    (tmp_path / "meta.json").write_text("{", encoding="utf-8")
    with pytest.raises(RunDirError, match="not valid JSON"):
        RunDir(tmp_path).read_meta()
    assert RunDir(tmp_path).read_meta_or_none() is None
    assert not RunDir(tmp_path).is_complete()


def test_writing_keeps_what_was_set_and_unknown_keys(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.write_meta(RunMeta(task_id="t", agent="a", seed=3, repeat=0))
    written = _raw(tmp_path / "meta.json")
    assert written == {"format": 2, "task_id": "t", "agent": "a", "seed": 3, "repeat": 0}
    assert not (tmp_path / "meta.json.tmp").exists()
    # A key from a newer tool survives a rewrite by this one.
    (tmp_path / "meta.json").write_text(json.dumps({**written, "reviewed_by": "ada"}))
    updated = run.update_meta(status="complete")
    assert updated.status == "complete" and _raw(tmp_path / "meta.json")["reviewed_by"] == "ada"
    assert run.is_complete()


def test_format_1_runs_grade(v1_runs: Path) -> None:
    tasks = {t.id: t for t in bundled_tasks()}
    for rel in (CAMPAIGN_RUN, STUDY_RUN):
        grade = grade_run_dir(v1_runs / rel, tasks)
        assert grade.problems == [] and grade.WS, rel  # the oracle's run passes
    assert grade_run_dir(v1_runs / CAMPAIGN_RUN, tasks).run_id == "apexv1_070.r0"


def _runs(html: str) -> list[str]:
    return re.findall(r'<tr data-run="([^"]+)"', html)


@pytest.mark.database
def test_format_1_runs_list_replay_and_filter_by_study(web_client: WebClient,
                                                      v1_runs: Path) -> None:
    client = web_client(v1_runs)
    page = client.get("/runs")
    assert page.status_code == 200
    assert sorted(_runs(page.text)) == sorted([str(CAMPAIGN_RUN), str(STUDY_RUN)])
    assert "Study B #3</option>" in page.text  # offered in the study filter
    chosen = client.get("/runs", params={"study": "Study B #3"})
    assert chosen.status_code == 200 and _runs(chosen.text) == [str(STUDY_RUN)]
    assert _runs(client.get("/runs", params={"study": "Study B #4"}).text) == []
    for rel in (CAMPAIGN_RUN, STUDY_RUN):
        replay = client.get(f"/runs/{rel}/replay")
        assert replay.status_code == 200, rel
        assert "apexv1_070" in replay.text and "agent_hangup" in replay.text


class _MisconfiguredAgent:
    """An adapter whose connect finds no API key, as a provider adapter does."""

    name = "misconfigured"

    async def connect(self, config: AgentSessionConfig) -> None:
        raise ProviderConfigError("OPENAI_API_KEY is not set")

    async def send_audio(self, frame: Pcm, t_media_ms: int) -> None:
        raise AssertionError("never connected")

    async def send_tool_result(self, call_id: str, output: dict[str, Any]) -> None:
        raise AssertionError("never connected")

    async def poll(self, t_media_ms: int) -> list[AgentEvent]:
        raise AssertionError("never connected")

    async def truncated(self, heard_ms: int) -> None:
        raise AssertionError("never connected")

    async def close(self) -> None:
        return None


def test_a_configuration_error_at_connect_leaves_a_closed_finished_record(
        tmp_path: Path) -> None:
    task = find_task("apexv1_070")
    run_dir = tmp_path / "r0"
    orch = Orchestrator(task, _MisconfiguredAgent(), FrozenSimulator(task, 0, BankPlayer(task)),
                        run_dir, agent_spec="openai-realtime", seed=0, meta_extra={"repeat": 0})
    with pytest.raises(ProviderConfigError, match="OPENAI_API_KEY"):
        asyncio.run(orch.run())
    meta = RunDir(run_dir).read_meta()
    assert meta.status == "incomplete" and meta.end_reason == "infrastructure_error"
    assert meta.recovered is not None and "OPENAI_API_KEY" in meta.recovered
    end = read_events(run_dir / "events.jsonl").events[-1]
    assert isinstance(end, SessionEnd) and end.failure_class == "infrastructure"
    with unless_being_written(run_dir) as free:
        assert free  # the event log's writer let go of it
    assert orch.trace._closed


def test_a_failed_call_repaired_reads_back(v1_runs: Path) -> None:
    """A Study B call whose harness failed is repaired ``failed`` (app/live.py): its record
    still reads, lists and grades as an infrastructure failure."""
    run_dir = v1_runs / STUDY_RUN
    raw = _raw(run_dir / "meta.json")
    (run_dir / "meta.json").write_text(json.dumps({**raw, "status": "running"}))
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    (run_dir / "events.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # no session.end
    assert repair_run_dir(run_dir, "harness error: boom", status="failed")
    meta = RunDir(run_dir).read_meta()
    assert meta.status == "failed" and meta.recovered == "harness error: boom"
    assert meta.end_reason == "infrastructure_error" and meta.participant == "P01"
    grade = grade_run_dir(run_dir, {t.id: t for t in bundled_tasks()})
    assert grade.infrastructure_failure


def test_a_change_of_the_wrong_kind_is_refused_before_writing(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.write_meta(RunMeta(task_id="t"))
    with pytest.raises(ValueError, match="status"):
        run.update_meta(status="paused")
    assert run.read_meta().status == "running"  # the record on disk is untouched

