"""Offline ASR (faster-whisper tiny.en) and VAD (silero ONNX), and the delivery-quality WER.

The models load once per test session (``shared_asr`` / ``shared_silero_session``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from grading.delivery import agent_channel_wer
from grading.wer import normalize_words, wer_counts, word_error_rate
from runtime.core.audio import FRAME_MS, SAMPLE_RATE, frames, silence
from runtime.speech.asr import ASRError, WhisperASR, collapse_repeats, shared_asr
from runtime.speech.vad import SileroVAD, VADError, silero_onnx_path
from runtime.speechbank.bank import EspeakEngine, TTSEngine, TTSError
from runtime.speechbank.kokoro_assets import default_cache_dir
from runtime.speechbank.tts_kokoro import KokoroEngine
from tests.conftest import run_script

SENTENCE = "My employee ID is E, 4, 4, 7, 1, and my name is Morgan Reyes."
"""Written the way it is said (an identifier letter by letter), as bank texts are."""

# Resolved at import, before conftest points APEX_VOICE_CACHE_DIR at a per-session temp
# folder: the real Kokoro cache that `make speech-assets` prepared, if any.
KOKORO_DIR = default_cache_dir()


def _kokoro() -> TTSEngine | None:
    engine = KokoroEngine(KOKORO_DIR)
    try:
        engine.describe()
    except TTSError:
        return None
    return engine


@pytest.fixture(scope="module")
def asr() -> WhisperASR:
    return shared_asr()


# --------------------------------------------------------------------------- WER (pure)

@pytest.mark.parametrize(("ref", "hyp", "subs", "dels", "ins", "wer"), [
    ("the cat sat", "the cat sat", 0, 0, 0, 0.0),
    ("the cat sat", "the cat sit", 1, 0, 0, 1 / 3),
    ("the cat sat on the mat", "the cat sat on mat", 0, 1, 0, 1 / 6),
    ("yes go ahead", "yes please go ahead", 0, 0, 1, 1 / 3),
    ("a b c d", "", 0, 4, 0, 1.0),
    ("", "", 0, 0, 0, 0.0),
    ("", "hello", 0, 0, 1, 1.0),
    # normalization: case, punctuation, number words, digit runs, thousands separators
    ("My employee ID is E, 4, 4, 7, 1.", "my employee id is E-4471", 0, 0, 0, 0.0),
    ("Twelve hundred dollars.", "$1,200 dollars", 0, 0, 0, 0.0),
    ("It's Dr. Alvarez.", "its dr alvarez", 0, 0, 0, 0.0),
])
def test_wer_hand_computed(ref: str, hyp: str, subs: int, dels: int, ins: int,
                           wer: float) -> None:
    counts = wer_counts(ref, hyp)
    assert (counts.substitutions, counts.deletions, counts.insertions) == (subs, dels, ins)
    assert word_error_rate(ref, hyp) == pytest.approx(wer)


def test_wer_normalization_and_purity() -> None:
    assert normalize_words("Nineteen eighty-eight") == ["1", "9", "8", "8"]
    # More insertions than reference words: WER above 1 is allowed.
    assert word_error_rate("hi", "hi there you all") == pytest.approx(3.0)
    probe = (
        "import sys, grading.wer; "
        "print(sorted(m for m in ('soundfile', 'soxr', 'faster_whisper', 'onnxruntime', "
        "'runtime.core.audio', 'runtime.speech') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parent.parent)
    assert out.stdout.strip() == "[]", "grading.wer must not load the audio stack"


# --------------------------------------------------------------------------- ASR


PLAIN = "I would like to book some vacation in June. Please submit the request today."


@pytest.mark.parametrize(("name", "voice", "sentence", "must_hear"), [
    # espeak-ng reads spelled-out identifiers badly enough to defeat tiny.en: plain words.
    ("espeak", "en-us", PLAIN, {"book", "vacation", "june", "submit", "request"}),
    ("kokoro", "af_heart", SENTENCE, {"employee", "e", "4", "7", "1", "name", "morgan"}),
])
def test_asr_recovers_synthesized_sentence(
    asr: WhisperASR, name: str, voice: str, sentence: str, must_hear: set[str]
) -> None:
    engine: TTSEngine | None = EspeakEngine() if name == "espeak" else _kokoro()
    if engine is None:
        pytest.skip("Kokoro assets are not set up on this machine (make speech-assets)")
    audio = engine.synthesize(sentence, voice=voice, rate=1.0, seed=7)
    text = asr.transcribe(audio, SAMPLE_RATE)
    counts = wer_counts(sentence, text)
    # tiny.en mishears a surname now and then ("Raze"); the rest must come through.
    assert counts.wer <= 0.2, f"{name}: heard {text!r} for {sentence!r} (WER {counts.wer:.2f})"
    assert must_hear <= set(normalize_words(text)), text


def test_asr_is_deterministic_and_shared(asr: WhisperASR) -> None:
    audio = EspeakEngine().synthesize("Shall I submit the leave request?", voice="en-us",
                                      rate=1.0, seed=0)
    assert asr.transcribe(audio) == asr.transcribe(audio)
    assert shared_asr() is asr
    assert asr.transcribe(np.zeros(0, dtype=np.int16)) == ""


def test_asr_missing_weights_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setenv("APEX_WHISPER_MODEL_DIR", str(tmp_path))
    with pytest.raises(ASRError, match=r"missing model\.bin, tokenizer\.json, vocabulary\.txt"):
        WhisperASR().load()


def test_collapse_repeats_keeps_numbers() -> None:
    assert collapse_repeats("Right, right, right, right, right, right,") == "Right,"
    assert collapse_repeats("five five five five zero one") == "five five five five zero one"
    assert collapse_repeats("yes yes yes") == "yes yes yes"


# --------------------------------------------------------------------------- VAD


def _speech(text: str) -> np.ndarray:
    return EspeakEngine().synthesize(text, voice="en-us", rate=1.0, seed=0)


def test_vad_finds_each_utterance_end() -> None:
    a, b = _speech("What is your employee ID?"), _speech("It is E 4 4 7 1.")
    gap = silence(SAMPLE_RATE)
    signal = np.concatenate([gap, a, gap, b, gap])
    vad = SileroVAD(min_silence_ms=600)
    events: list[tuple[int, str]] = []
    for i, frame in enumerate(frames(signal)):
        change = vad.push(frame)
        if change is not None:
            events.append((i * FRAME_MS, change))
    assert [e for _, e in events] == ["onset", "end", "onset", "end"]
    a_end_ms = (len(gap) + len(a)) * 1000 // SAMPLE_RATE
    assert 1000 <= events[0][0] <= 1400, events
    # The end comes after 600 ms of silence, not before the speech is over.
    assert a_end_ms < events[1][0] <= a_end_ms + 1000, events
    assert not vad.in_speech


def test_vad_reports_the_pause_before_the_end_only_when_asked() -> None:
    a, b = _speech("What is your employee ID?"), _speech("It is E 4 4 7 1.")
    gap = silence(SAMPLE_RATE)
    signal = np.concatenate([gap, a, gap, b, gap])

    def events(vad: SileroVAD) -> list[tuple[int, str]]:
        out = []
        for i, frame in enumerate(frames(signal)):
            change = vad.push(frame)
            if change is not None:
                out.append((i * FRAME_MS, change))
        return out

    plain = events(SileroVAD(min_silence_ms=800))
    paused = events(SileroVAD(min_silence_ms=800, pause_ms=300))
    assert [e for _, e in plain] == ["onset", "end", "onset", "end"]
    assert [e for _, e in paused] == ["onset", "pause", "end", "onset", "pause", "end"]
    # Same onsets and ends; each pause comes 500 ms (the two silences' difference, to a
    # 32 ms model chunk and a 40 ms frame) before its end.
    assert [x for x in paused if x[1] != "pause"] == plain
    for (t_pause, _), (t_end, _) in zip(paused[1::3], paused[2::3], strict=True):
        assert 500 - 80 <= t_end - t_pause <= 500 + 80, paused


def test_vad_ignores_silence_and_shares_model(monkeypatch: pytest.MonkeyPatch) -> None:
    vad = SileroVAD()
    assert all(vad.push(silence()) is None for _ in range(50))
    assert SileroVAD()._session is vad._session  # one ONNX session per process
    monkeypatch.setenv("APEX_SILERO_VAD_ONNX", "/nonexistent/silero_vad.onnx")
    with pytest.raises(VADError, match="no such file"):
        silero_onnx_path()


# --------------------------------------------------------------------------- delivery (H.4)


def test_agent_channel_wer_on_a_run(tmp_path: Path, asr: WhisperASR) -> None:
    run_dir = run_script("apexv1_070", "oracle", tmp_path)
    report = agent_channel_wer(run_dir, asr)
    assert len(report.turns) >= 8
    truncated = [t for t in report.turns if t.truncated]
    assert truncated, "the oracle run of apexv1_070 holds a barge-in"
    assert all(t not in report.scored for t in truncated)
    # espeak-ng through tiny.en: understandable, not perfect. 0.355 on 2026-12-02 (espeak-ng
    # 1.51+dfsg-10+deb12u2), just over the 0.35 this bound had been, on code that had passed
    # it the day before: the bound checks that the agent channel holds the agent's words turn
    # by turn, it is not a quality bar (bench/bench_speech.py measures that). The same
    # recognition scored against the wrong turns (each heard text against the next turn's
    # words) is far above it (1.11 that day): the bound tells a working channel from a broken
    # one.
    assert report.wer < 0.45, [(t.transcript, t.heard) for t in report.scored]
    scored = report.scored
    shifted = [wer_counts(a.transcript, b.heard) for a, b in zip(scored, scored[1:] + scored[:1],
                                                                   strict=True)]
    wrong = sum(c.errors for c in shifted) / sum(c.reference_words for c in shifted)
    assert wrong > 0.8, wrong
    first = report.turns[0]
    assert first.heard and first.counts.reference_words == len(normalize_words(first.transcript))
