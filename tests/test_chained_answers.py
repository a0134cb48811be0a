"""Two answers the caller gives in one reply are a breath apart, not an end-of-turn silence
(runtime/user/simulator.py, CHAIN_SILENCE_MS): the quiet at each file's edges counts. The
end-to-end case is tests/probes/natural_two_numbers_in_one_question_006.yaml."""

from __future__ import annotations

import numpy as np

from runtime.agents.scripted import EnergyVAD
from runtime.core.audio import FRAME_MS, FRAME_SAMPLES, quiet_edges_ms
from runtime.speechbank.bank_audio import MAX_TURN_PAUSE_MS
from runtime.user.simulator import CHAIN_SILENCE_MS


def _clip(quiet_frames_before: int, loud_frames: int, quiet_frames_after: int) -> np.ndarray:
    loud = (3000 * np.sin(np.arange(loud_frames * FRAME_SAMPLES) / 5)).astype(np.int16)
    return np.concatenate([np.zeros(quiet_frames_before * FRAME_SAMPLES, np.int16), loud,
                           np.zeros(quiet_frames_after * FRAME_SAMPLES + 7, np.int16)])


def test_quiet_edges_are_whole_quiet_frames_at_each_end() -> None:
    assert quiet_edges_ms(_clip(3, 10, 5)) == (3 * FRAME_MS, 5 * FRAME_MS)
    assert quiet_edges_ms(_clip(0, 4, 0)) == (0, 0)
    # A hum under the threshold is quiet; a recording quiet throughout is all lead-in.
    hum = np.full(6 * FRAME_SAMPLES, 200, np.int16)
    assert quiet_edges_ms(hum) == (6 * FRAME_MS, 0)


def test_the_chain_silence_is_a_breath_not_an_end_of_turn() -> None:
    # Shorter than the longest pause allowed inside one realization, and than the scripted
    # agent's end-of-turn silence, so a multi-ask's answers read as one reply.
    assert CHAIN_SILENCE_MS <= MAX_TURN_PAUSE_MS
    assert EnergyVAD().hangover * FRAME_MS > CHAIN_SILENCE_MS + FRAME_MS
