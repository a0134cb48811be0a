"""Word error rate, for the delivery-quality diagnostic of appendix H.4.

The paper reports the ASR word error rate of the agent channel's audio against the agent's own
transcript (what it meant to say versus what a recognizer hears), separately from Workflow
Success. This module is the pure half: text normalization and the edit-distance count. It
imports no audio library; :mod:`grading.delivery` runs the recognizer over a trace.

Normalization (applied identically to both sides): Unicode NFKC, case folding, apostrophes
dropped, number words to digits (``text2num``, so "twelve hundred" = "1,200" = "1200"),
digit runs split into single digits (so "E4471", "E-4471" and "E, 4, 4, 7, 1" all read
``e 4 4 7 1``), every other symbol or punctuation mark a word break.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein
from text_to_num import alpha2digit

__all__ = ["WerCounts", "normalize_words", "wer_counts", "word_error_rate"]

_APOSTROPHES = re.compile(r"['\u2018\u2019\u02bc`]")


def normalize_words(text: str) -> list[str]:
    """The comparable word tokens of ``text`` (see the module docstring)."""
    t = unicodedata.normalize("NFKC", text)
    t = re.sub(r"(?<=\d),(?=\d{3}\b)", "", t)  # thousands separators: "1,200"
    t = alpha2digit(t, "en", threshold=0)
    t = _APOSTROPHES.sub("", t.casefold())
    t = re.sub(r"(?<=[a-z])(?=\d)|(?<=\d)(?=[a-z])", " ", t)  # "e4471" -> "e 4471"
    t = re.sub(r"\d+", lambda m: " ".join(m.group(0)), t)
    t = "".join(ch if ch.isalnum() else " " for ch in t)
    return t.split()


@dataclass(frozen=True)
class WerCounts:
    """Word-level edit counts of a hypothesis against a reference."""

    substitutions: int
    deletions: int
    insertions: int
    reference_words: int

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def wer(self) -> float:
        """errors / reference words. An empty reference scores 0.0 against an empty
        hypothesis and 1.0 against anything else (every word is an insertion)."""
        if self.reference_words == 0:
            return 0.0 if self.insertions == 0 else 1.0
        return self.errors / self.reference_words


def wer_counts(reference: str, hypothesis: str) -> WerCounts:
    """Minimum-edit substitution/deletion/insertion counts over normalized words."""
    ref = normalize_words(reference)
    hyp = normalize_words(hypothesis)
    subs = dels = ins = 0
    for op in Levenshtein.editops(ref, hyp):
        if op.tag == "replace":
            subs += 1
        elif op.tag == "delete":
            dels += 1
        else:
            ins += 1
    return WerCounts(subs, dels, ins, len(ref))


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(S + D + I) / N over normalized words; may exceed 1.0 with many insertions."""
    return wer_counts(reference, hypothesis).wer
