"""A live call keeps the participant's microphone queue short (app/live.py, ``_push_mic`` and
``_watch_mic_queue``): the latency a burst or a stall left behind is taken back from quiet
microphone audio, never cut out of the participant's voice, and measured again only once the
last trim has been taken (no double count while it waits for quiet)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from app.live import MIC_QUEUE_TARGET, CallPlan, LiveCallManager
from runtime.core.audio import FRAME_MS, SAMPLE_RATE, Pcm
from runtime.core.spec import find_task
from runtime.session.campaign import parse_agent_spec

CHUNK = SAMPLE_RATE * 20 // 1000
"""20 ms, as aiortc hands microphone audio over."""


def _voice(n: int = CHUNK) -> Pcm:
    return (4000 * np.sin(2 * np.pi * 220 * np.arange(n) / SAMPLE_RATE)).astype(np.int16)


def _quiet(n: int = CHUNK) -> Pcm:
    return (40 * np.sin(2 * np.pi * 50 * np.arange(n) / SAMPLE_RATE)).astype(np.int16)


async def test_a_standing_queue_is_trimmed_in_quiet_never_from_voice(tmp_path: Path) -> None:
    task = find_task("apexv1_051")
    rel = f"study-b/1/P01/1-{task.id}"
    manager = LiveCallManager(tmp_path / "runs", reap_every_s=3600)
    try:
        call = await manager.open(CallPlan(
            key=1, task=task, factory=parse_agent_spec("scripted:oracle"),
            run_dir=tmp_path / "runs" / rel, run_rel=rel, seed=0, meta={}))
        call.state = "running"  # as once the browser is connected (no clock takes frames here)
        standing = 10 * CHUNK  # 200 ms left waiting by a burst at connect
        call._push_mic(_voice(standing))
        buffered = call.participant.stats["buffered_samples"]
        assert buffered == standing
        for _ in range(1000 // FRAME_MS):  # a second in which the queue never fell
            call._watch_mic_queue()
        excess = standing - MIC_QUEUE_TARGET
        assert call._mic_trim == excess

        # The participant is talking: nothing of their voice is skipped, and the queue is not
        # measured again (the same excess would be counted twice).
        for _ in range(5):
            call._push_mic(_voice())
        for _ in range(3 * 1000 // FRAME_MS):
            call._watch_mic_queue()
        assert call.mic_trimmed == 0 and call._mic_trim == excess
        assert call.participant.stats["buffered_samples"] == standing + 5 * CHUNK

        # They pause: the excess comes out of the quiet, and only the excess.
        for _ in range(10):
            call._push_mic(_quiet())
        assert call.mic_trimmed == excess and call._mic_trim == 0
        assert call.participant.stats["buffered_samples"] == (
            standing + 5 * CHUNK + 10 * CHUNK - excess)
    finally:
        await manager.close()
