"""Delivery-quality diagnostic (appendix H.4): ASR word error rate of the agent channel.

For every agent turn in a run directory, the agent's own transcript (what it meant to say,
``agent.transcript`` events) is compared with what the offline recognizer hears in the agent
channel of the stereo trace over that turn's playout (``agent.speech.start`` to
``agent.speech.end``). Reported separately from Workflow Success and AFA, as in the paper.
Turns cut short by a barge-in are listed but left out of the aggregate: their transcript
holds words that were never played.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from grading.wer import WerCounts, wer_counts
from runtime.core.audio import SAMPLE_RATE, AudioFileError, resample
from runtime.core.events import (
    AgentSpeechEnd,
    AgentSpeechStart,
    AgentTranscript,
    AgentTruncated,
    read_events,
)
from runtime.speech.asr import ASR, shared_asr

TAIL_MS = 120
"""Audio kept after a turn's last played frame (the recognizer needs a little silence)."""


@dataclass(frozen=True)
class TurnDelivery:
    turn: int
    transcript: str
    heard: str
    played_ms: int
    truncated: bool
    counts: WerCounts

    @property
    def wer(self) -> float:
        return self.counts.wer


@dataclass(frozen=True)
class DeliveryReport:
    run_dir: Path
    turns: list[TurnDelivery]

    @property
    def scored(self) -> list[TurnDelivery]:
        return [t for t in self.turns if not t.truncated]

    @property
    def wer(self) -> float:
        """Micro-averaged WER over fully played turns (0.0 when there are none)."""
        words = sum(t.counts.reference_words for t in self.scored)
        errors = sum(t.counts.errors for t in self.scored)
        return errors / words if words else 0.0


def _agent_channel(run_dir: Path) -> tuple[np.ndarray, int]:
    for name in ("trace.wav", "trace.flac"):
        path = run_dir / name
        if path.is_file():
            try:
                data, rate = sf.read(str(path), dtype="int16", always_2d=True)
            except (sf.LibsndfileError, RuntimeError) as exc:
                raise AudioFileError(f"{path}: unreadable trace ({exc})") from None
            if data.shape[1] < 2:
                raise AudioFileError(f"{path}: trace has no agent channel (mono)")
            return np.ascontiguousarray(data[:, 1]), int(rate)
    raise AudioFileError(f"{run_dir}: no trace.wav or trace.flac")


def agent_channel_wer(run_dir: Path, asr: ASR | None = None) -> DeliveryReport:
    """Per-turn WER of the agent channel against the agent's transcript (see module doc)."""
    log = read_events(run_dir / "events.jsonl")
    audio, rate = _agent_channel(run_dir)
    if rate != SAMPLE_RATE:
        audio = resample(audio, rate, SAMPLE_RATE)
    recognizer = asr or shared_asr()
    starts: dict[int, int] = {}
    played: dict[int, int] = {}
    texts: dict[int, list[str]] = {}
    truncated: set[int] = set()
    for ev in log.events:
        if isinstance(ev, AgentSpeechStart):
            starts.setdefault(ev.turn, ev.t_media_ms)
        elif isinstance(ev, AgentSpeechEnd):
            played[ev.turn] = ev.played_ms
        elif isinstance(ev, AgentTranscript):
            texts.setdefault(ev.turn, []).append(ev.text)
        elif isinstance(ev, AgentTruncated):
            truncated.add(ev.turn)
    turns: list[TurnDelivery] = []
    for turn in sorted(starts):
        start_ms = starts[turn]
        length_ms = played.get(turn, 0)
        a = start_ms * SAMPLE_RATE // 1000
        b = (start_ms + length_ms + TAIL_MS) * SAMPLE_RATE // 1000
        heard = recognizer.transcribe(audio[a:b], SAMPLE_RATE) if length_ms > 0 else ""
        transcript = " ".join(texts.get(turn, []))
        turns.append(TurnDelivery(
            turn=turn, transcript=transcript, heard=heard, played_ms=length_ms,
            truncated=turn in truncated, counts=wer_counts(transcript, heard),
        ))
    return DeliveryReport(run_dir=run_dir, turns=turns)
