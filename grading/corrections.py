"""Researchers' corrections of authorization decisions read from a live participant's speech.

A live run logs one ``auth.decision`` per utterance (runtime/user/speech_authorization.py). When a
researcher, listening in replay, finds one wrong ("she said 'no, don't', the classifier heard a
grant"), :func:`record_correction` appends a :class:`Correction` to ``<run_dir>/corrections.jsonl``
with who, when, the old and new decision and why. The event log is never edited: the run stays
what happened, and grading (grading/gates.py) applies the corrections on top of it, so a run
dir with its corrections file is re-graded identically every time.

The file is append-only: a later correction of the same decision supersedes the earlier one
for grading, and both stay on record.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from runtime.core.events import AuthDecisionEvent, read_events, read_jsonl

CORRECTIONS_FILE = "corrections.jsonl"
Decision = Literal["grant", "revoke", "none"]
DECISIONS: tuple[Decision, ...] = ("grant", "revoke", "none")


class CorrectionError(ValueError):
    """A correction cannot be recorded or read; the message names the run, the decision and
    what to do."""


class Correction(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    decision_seq: int
    """``seq`` of the corrected ``auth.decision`` event."""
    action: str
    old: str
    """The decision in force before this correction (the logged one, or an earlier
    correction's)."""
    new: Decision
    by: str
    at: str
    """ISO 8601 time of recording (UTC)."""
    reason: str


def _decisions(run_dir: Path) -> dict[int, AuthDecisionEvent]:
    log = run_dir / "events.jsonl"
    if not log.is_file():
        raise CorrectionError(f"{run_dir}: no events.jsonl; is this a run directory?")
    return {e.seq: e for e in read_events(log).events if isinstance(e, AuthDecisionEvent)}


def read_corrections_checked(run_dir: Path) -> tuple[list[Correction], list[str]]:
    """Every readable correction in file order, and one problem line per unreadable line."""
    path = run_dir / CORRECTIONS_FILE
    if not path.is_file():
        return [], []
    return read_jsonl(path, Correction.model_validate, "correction")


def read_corrections(run_dir: Path) -> list[Correction]:
    """The corrections of a run, oldest first ([] when there are none). Raises
    :class:`CorrectionError` naming the file and line of an unreadable entry."""
    corrections, problems = read_corrections_checked(run_dir)
    if problems:
        raise CorrectionError("; ".join(problems))
    return corrections


def effective_decisions(
    decisions: dict[int, AuthDecisionEvent], corrections: list[Correction]
) -> dict[int, Decision]:
    """Each decision's value after the corrections (the latest correction of a decision
    wins; corrections naming no logged decision are ignored)."""
    out: dict[int, Decision] = {seq: e.decision for seq, e in decisions.items()}
    for c in corrections:
        if c.decision_seq in out:
            out[c.decision_seq] = c.new
    return out


def record_correction(
    run_dir: Path, *, decision_seq: int, new: str, by: str, reason: str
) -> Correction:
    """Append one correction to ``<run_dir>/corrections.jsonl`` (flushed and fsync'ed before
    returning). ``decision_seq`` must name an ``auth.decision`` event of the run; ``new``
    must differ from the decision in force; a grant or revoke needs the decision's action."""
    if new not in DECISIONS:
        raise CorrectionError(
            f"{run_dir}: decision '{new}' is not one of {', '.join(DECISIONS)}"
        )
    if not by.strip():
        raise CorrectionError(f"{run_dir}: say who makes the correction (by=...)")
    if not reason.strip():
        raise CorrectionError(
            f"{run_dir}: give a reason for correcting decision {decision_seq}; it is kept "
            "with the run"
        )
    decisions = _decisions(run_dir)
    event = decisions.get(decision_seq)
    if event is None:
        listed = ", ".join(map(str, sorted(decisions))) or "none"
        raise CorrectionError(
            f"{run_dir}: event {decision_seq} is not an auth.decision of this run "
            f"(auth.decision events are at seq {listed}); pass one of those"
        )
    existing = read_corrections(run_dir)
    old = effective_decisions({decision_seq: event}, existing)[decision_seq]
    if new == old:
        raise CorrectionError(
            f"{run_dir}: decision {decision_seq} is already '{old}'; nothing to correct"
        )
    if event.action is None and new != "none":
        raise CorrectionError(
            f"{run_dir}: decision {decision_seq} names no action (no approve/revoke cue was "
            f"active and the task has no single gated action), so it cannot become '{new}'"
        )
    correction = Correction(
        decision_seq=decision_seq, action=event.action or "", old=old,
        new=next(d for d in DECISIONS if d == new),
        by=by.strip(), at=datetime.now(UTC).isoformat(timespec="seconds"),
        reason=reason.strip(),
    )
    path = run_dir / CORRECTIONS_FILE
    created = not path.exists()
    with path.open("a", encoding="utf-8") as fh:
        fh.write(correction.model_dump_json() + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    if created:
        fd = os.open(run_dir, os.O_RDONLY)
        try:
            os.fsync(fd)  # the new file's directory entry survives a crash too
        finally:
            os.close(fd)
    return correction
