"""Runtime edges: realtime pacing, infrastructure drops, bank build and verify."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from grading.gates import grade_run_dir
from grading.report import campaign_outcomes
from runtime.agents.base import AgentEvent, AgentSessionConfig, InfrastructureError
from runtime.agents.scripted import ScriptedAgent, load_script
from runtime.core.audio import Pcm, read_mono
from runtime.core.events import SessionEnd, read_events
from runtime.core.spec import find_task, load_task
from runtime.session.campaign import cache_dir
from runtime.session.observer import SemanticActObserver
from runtime.session.orchestrator import MediaClock, Orchestrator
from runtime.speechbank import bank_audio
from runtime.speechbank.bank import (
    BankPlayer,
    EspeakEngine,
    SpeechCache,
    TTSError,
    build_bank,
    verify_bank,
)
from runtime.speechbank.bank_audio import encode_bank_audio
from runtime.speechbank.bank_manifest import load_manifest, save_manifest, sha256_file
from runtime.user.simulator import FrozenSimulator, RevealPolicy
from tests.conftest import bundled_tasks


@pytest.mark.serial
def test_realtime_clock_is_paced_by_the_wall_clock() -> None:
    async def ten_ticks() -> float:
        clock = MediaClock("realtime")
        t0 = time.monotonic()
        for _ in range(10):
            await clock.tick()
        return time.monotonic() - t0

    assert asyncio.run(ten_ticks()) >= 0.39  # 10 × 40 ms of media never runs ahead
    virtual = MediaClock("virtual")
    asyncio.run(virtual.tick())
    assert virtual.t_ms == 40


class DroppingAgent:
    """The oracle until 20 s of media, then the connection is lost."""

    def __init__(self, inner: ScriptedAgent) -> None:
        self.inner = inner
        self.name = "dropping"

    async def connect(self, config: AgentSessionConfig) -> None:
        await self.inner.connect(config)

    async def send_audio(self, frame: Pcm, t_media_ms: int) -> None:
        if t_media_ms >= 20_000:
            raise InfrastructureError("websocket closed by peer (1006) mid-response")
        await self.inner.send_audio(frame, t_media_ms)

    async def send_tool_result(self, call_id: str, output: dict[str, Any]) -> None:
        await self.inner.send_tool_result(call_id, output)

    async def poll(self, t_media_ms: int) -> list[AgentEvent]:
        return await self.inner.poll(t_media_ms)

    async def truncated(self, heard_ms: int) -> None:
        await self.inner.truncated(heard_ms)

    async def close(self) -> None:
        await self.inner.close()


def test_connection_loss_is_an_infrastructure_drop_not_an_agent_failure(tmp_path: Path) -> None:
    task = find_task("apexv1_001")
    speech = SpeechCache(EspeakEngine(), cache_dir() / "agent-speech")
    agent = DroppingAgent(ScriptedAgent(load_script(task.folder / "scripts/oracle.yaml"), speech))
    run_dir = tmp_path / "apexv1_001" / "r0"
    orch = Orchestrator(task, agent, FrozenSimulator(task, 0, BankPlayer(task)), run_dir,
                        agent_spec="dropping", seed=0, meta_extra={"repeat": 0})
    result = asyncio.run(orch.run())
    assert result.end_reason == "infrastructure_error"
    end = read_events(run_dir / "events.jsonl").events[-1]
    assert isinstance(end, SessionEnd) and end.failure_class == "infrastructure"
    assert "1006" in end.detail
    grade = grade_run_dir(run_dir, {t.id: t for t in bundled_tasks()})
    assert grade.infrastructure_failure and grade.problems == []
    (outcome,) = campaign_outcomes(tmp_path, {t.id: t for t in bundled_tasks()})
    assert outcome.infrastructure_failure  # excluded from Pass@k by grading.metrics


@pytest.fixture
def task_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "apexv1_070"
    shutil.copytree(find_task("apexv1_070").folder, dst)
    return dst


def test_bank_build_is_deterministic_and_verifies(task_copy: Path) -> None:
    task = load_task(task_copy)
    before = {i.realization: i.sha256 for i in load_manifest(task_copy).items}  # type: ignore[union-attr]
    build_bank(task, EspeakEngine(), force=True)
    first = {i.realization: i.sha256 for i in load_manifest(task_copy).items}  # type: ignore[union-attr]
    build_bank(task, EspeakEngine(), force=True)
    second = {i.realization: i.sha256 for i in load_manifest(task_copy).items}  # type: ignore[union-attr]
    assert first == second
    assert verify_bank(task) == []
    if load_manifest(task_copy).engine == load_manifest(find_task("apexv1_070").folder).engine:  # type: ignore[union-attr]
        assert first == before  # the committed bank is what this engine builds
    victim = task_copy / "bank" / "opening_r1.ogg"
    victim.write_bytes(victim.read_bytes()[:-100])
    assert verify_bank(task) == [f"{victim}: checksum mismatch (realization opening_r1)"]
    victim.unlink()
    assert verify_bank(task) == [f"{victim}: missing (realization opening_r1)"]


def test_a_file_in_an_older_encoding_is_reencoded_not_resynthesized(task_copy: Path) -> None:
    """The committed banks were Opus level 0.85 before the level was lowered: a build keeps
    each unchanged realization, decodes it and encodes it at today's level (a second
    generation, recorded), and a second build has nothing left to do."""
    task = load_task(task_copy)
    build_bank(task, EspeakEngine(), force=True)
    legacy = load_manifest(task_copy)
    assert legacy is not None
    victim = task_copy / "bank" / "opening_r1.ogg"
    pcm = read_mono(victim)
    old_level = bank_audio.OPUS_COMPRESSION_LEVEL
    victim.write_bytes(encode_bank_audio(pcm, ".ogg", opus_level=0.85))  # as the old level did
    items = [i.model_copy(update={"encoding": None, "sha256": sha256_file(victim)})
             if i.realization == "opening_r1" else i for i in legacy.items]
    save_manifest(task_copy, legacy.model_copy(update={"items": items}))
    old_size = victim.stat().st_size

    class _NoSynthesis(EspeakEngine):
        def synthesize(self, text: str, *, voice: str, rate: float, seed: int) -> Pcm:
            raise AssertionError(f"re-synthesized {text!r}")

    log: list[str] = []
    manifest = build_bank(task, _NoSynthesis(), log=log)
    assert log == [f"{task.id}: re-encoded opening_r1 (Ogg/Opus level 0.85 -> "
                   f"Ogg/Opus level {old_level})"]
    item = manifest.item("opening_r1")
    assert item is not None
    assert (item.encoding, item.reencoded_from) == (f"Ogg/Opus level {old_level}",
                                                    "Ogg/Opus level 0.85")
    assert victim.stat().st_size < old_size
    assert len(read_mono(victim)) == len(pcm) and verify_bank(task) == []
    assert all(i.reencoded_from is None for i in manifest.items if i is not item)
    again: list[str] = []
    assert build_bank(task, _NoSynthesis(), log=again) == manifest and again == []


def test_bank_build_names_a_missing_voice_and_engine(task_copy: Path) -> None:
    task = load_task(task_copy)
    bad_voice = task.model_copy(update={"user": task.user.model_copy(update={
        "persona": task.user.persona.model_copy(update={"voice": "xx-nonexistent"})})})
    with pytest.raises(TTSError, match="voice 'xx-nonexistent'"):
        build_bank(bad_voice, EspeakEngine(), force=True)
    with pytest.raises(TTSError, match="'no-such-tts' not found"):
        build_bank(task, EspeakEngine(binary="no-such-tts"), force=True)


def test_unparsable_superseded_version_never_crashes_grading() -> None:
    from grading.gates import FinalState, grade_fields
    from runtime.core.spec import FactVersion, Lifecycle

    task = find_task("apexv1_070")
    fact = task.user.fact("end_date")
    assert fact is not None
    odd = fact.model_copy(update={"versions": [FactVersion(value="end of Q2"),
                                               *fact.versions[1:]]})
    user = task.user.model_copy(update={"facts": [odd if f.id == "end_date" else f
                                                  for f in task.user.facts]})
    task = task.model_copy(update={"user": user})
    state = FinalState(fields={"lr_1": {"end_date": "June 11, 2027"}},
                       lifecycle={"lr_1": Lifecycle.COMMITTED})
    (end,) = [f for f in grade_fields(task, state, None) if f.field == "end_date"]
    assert end.correct and not end.stale


def test_a_broken_bank_file_ends_that_run_only(tmp_path: Path) -> None:
    import asyncio as aio

    from runtime.session.campaign import run_campaign

    folder = tmp_path / "apexv1_070"
    shutil.copytree(find_task("apexv1_070").folder, folder)
    broken = load_task(folder)
    opening = folder / broken.plans[0].realizations[0].audio
    for real in broken.plans[0].realizations:
        (folder / real.audio).write_bytes(b"not audio")
    good = find_task("apexv1_001")
    summary = aio.run(run_campaign([broken, good], "scripted:oracle", tmp_path / "out"))
    by_task = {r.run_dir.parent.name: r for r in summary.ran}
    assert by_task["apexv1_070"].end_reason == "infrastructure_error"
    assert by_task["apexv1_001"].end_reason == "agent_hangup"
    end = read_events(by_task["apexv1_070"].run_dir / "events.jsonl").events[-1]
    assert isinstance(end, SessionEnd) and "harness error" in end.detail
    assert str(opening) in end.detail or "unreadable audio" in end.detail


def test_the_observer_is_built_once_per_task_object() -> None:
    """The simulated caller and the orchestrator share one observer per task object (it is
    never changed after it is built); another task object, even with the same id, gets its
    own, so a task edited between runs is observed as edited."""
    task = find_task("apexv1_001")
    shared = SemanticActObserver.for_task(task)
    assert SemanticActObserver.for_task(task) is shared
    assert RevealPolicy(task)._observer is shared
    edited = task.model_copy(update={"title": task.title + " (edited)"})
    assert SemanticActObserver.for_task(edited) is not shared
    assert [a.act for a in SemanticActObserver.for_task(edited).observe("Hi there.")] == [
        a.act for a in shared.observe("Hi there.")]
