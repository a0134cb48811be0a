"""Provenance of artifact values: the invalid-shortcut check of Process Validity (B.5).

A value the agent writes into a graded field must have come from somewhere the agent could
see before the write: the caller's words (a plan that carried the fact, a fact released on
a live participant's role card, a fact a live participant knew from the start once they
answered the agent's question for it, or the text of anything the caller said), the
agent-visible task
context (with its reference date), or a tool result (a returned knowledge document for a
document-sourced field, a lookup result whose text states the value, or a returned document
whose text states it, for a field that is not the caller's own fact). Writing a hidden value —
one that matches the gold answer or a version of the field's fact — that none of these had
revealed yet is a shortcut: the agent guessed, or read the benchmark, instead of doing the
work. A wrong value is not a shortcut (Artifact Validity already fails it).

Pure: task spec and event log in, one line per shortcut out (with the write behind it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from grading.fields import grade_value, is_empty, value_in_text
from runtime.core.events import (
    AgentAct,
    ArtifactUpdate,
    CardFact,
    Event,
    ToolResult,
    UserPlanEvent,
    UserSpeechEnd,
    UserSpeechStart,
    UserTranscript,
)
from runtime.core.spec import FieldSpec, RevealOnAsk, TaskSpec, spoken_date


def matches(task: TaskSpec, spec: FieldSpec, reference: Any, value: Any) -> bool:
    """Whether ``value`` matches ``reference`` under the field's grader (year-less dates read
    against the task's reference date). A reference the grader cannot read (a superseded
    fact version such as "end of Q1" for a date field) matches nothing."""
    try:
        return grade_value(spec.grader, reference, value, tolerance=spec.tolerance,
                           options=spec.options, reference=task.reference_date).correct
    except ValueError:
        return False


def _hidden_values(task: TaskSpec, spec: FieldSpec) -> list[Any]:
    """What the agent cannot know unless told: the gold value and every version of the
    field's source fact."""
    out: list[Any] = [spec.gold]
    if spec.source.fact is not None:
        fact = task.user.fact(spec.source.fact)
        if fact is not None:
            out += [v.value for v in fact.versions]
    return out


def shortcuts(task: TaskSpec, events: Sequence[Event]) -> list[str]:
    """One line per field first written with a hidden value before anything had revealed
    it (field, value and media time named)."""
    return [line for line, _ in shortcut_writes(task, events)]


def shortcut_writes(task: TaskSpec, events: Sequence[Event]) -> list[tuple[str, ArtifactUpdate]]:
    """:func:`shortcuts`' lines, each with the ``artifact.update`` that wrote the value."""
    revealed: set[tuple[str, int]] = set()
    today = f"Today's date: {spoken_date(task.reference_date)}."
    """Reveals dates (year-less ones resolve against it), not the numbers in it: the 10 of
    "February 10" is not ten days signed off."""
    texts: list[str] = []
    documents: list[str] = []
    """Knowledge documents returned by searches: they reveal what they are about, never the
    caller's own details ("Sheffield" or a "3" in a policy is not this caller's office or
    days at home)."""
    retrieved: set[str] = set()
    specs = {(a.id, f.name): f for a in task.artifacts for f in a.fields}
    flagged: set[tuple[str, str]] = set()
    known: dict[str, int] = {}
    """Live participant: facts on the card from the start, not said yet."""
    asked: set[str] = set()
    out: list[tuple[str, ArtifactUpdate]] = []
    for ev in events:
        if isinstance(ev, UserPlanEvent):
            for ref in ev.facts:
                fact_id, _, version = ref.rpartition("@")
                if version.isdigit():
                    revealed.add((fact_id, int(version)))
        elif isinstance(ev, CardFact):
            if ev.known_at_start:
                # Known from the start is not revealed: the caller has not said it yet.
                known[ev.fact_id] = ev.version
            else:
                revealed.add((ev.fact_id, ev.version))
        elif isinstance(ev, AgentAct) and ev.act == "ask" and ev.field:
            asked.add(ev.field)
        elif isinstance(ev, UserSpeechEnd) and known:
            # A live participant has answered: what they knew from the start and were asked
            # for (or would volunteer) counts as said, whatever the recognizer made of it (an
            # honest agent heard the audio, not our transcript).
            for kid, kversion in list(known.items()):
                fact = task.user.fact(kid)
                rule = fact.reveal if fact is not None else None
                if not isinstance(rule, RevealOnAsk) or asked & set(rule.fields):
                    revealed.add((kid, kversion))
                    del known[kid]
        elif isinstance(ev, UserSpeechStart | UserTranscript) and ev.text:
            texts.append(ev.text)
        elif isinstance(ev, ToolResult) and ev.ok:
            retrieved.update(ev.evidence)
            tool = task.tool(ev.name)
            kind = tool.kind if tool is not None else None
            if kind in ("kb_search", "lookup"):  # an update's receipt ({"version": 4}) tells
                (documents if kind == "kb_search" else texts).append(  # nothing
                    json.dumps(ev.result, default=str))
        elif isinstance(ev, ArtifactUpdate):
            for name in ev.changed:
                key = (ev.artifact_id, name)
                spec = specs.get(key)
                value = ev.fields.get(name)
                if spec is None or key in flagged or is_empty(value):
                    continue
                if spec.source.instruction:
                    continue
                if not any(matches(task, spec, h, value) for h in _hidden_values(task, spec)):
                    continue  # a wrong value, not a hidden one
                seen = _texts_that_reveal(task, spec, value, texts, documents, today)
                if _available(task, spec, value, revealed, seen, retrieved):
                    continue
                flagged.add(key)
                out.append((
                    f"invalid shortcut: {ev.artifact_id}.{name} = {value!r} written at "
                    f"{ev.t_media_ms / 1000:.1f} s before the caller, the task context or a "
                    "tool result had revealed it", ev,
                ))
    return out


def _texts_that_reveal(task: TaskSpec, spec: FieldSpec, value: Any, texts: list[str],
                      documents: list[str], today: str) -> list[str]:
    """The texts seen so far that may reveal ``value`` for the field: the caller's words and
    lookups, the context (its reference date for a date field) and, for a field that is not
    the caller's own, the documents returned."""
    # The context lists an enum's options ("P1, P2 or P3"): naming every option reveals none
    # of them.
    dated = spec.type == "date" or "date" in spec.grader
    seen = texts if spec.grader == "enum" else [
        *_context_for(task, spec), *([today] if dated else []), *texts]
    if _polar(spec, value):
        # "Yes" answers whatever was asked: a caller's yes or no reveals this field only in
        # words that name it ("yes, the call button passed")
        seen = [t for t in seen if _names_field(spec, t)]
    if spec.source.fact is None:
        seen = [*seen, *documents]
    return seen


_POLAR = frozenset({"yes", "no"})


def _polar(spec: FieldSpec, value: Any) -> bool:
    """A yes-or-no enum field: its value is said in any answer to any question."""
    return spec.grader == "enum" and str(value).strip().lower() in _POLAR and set(
        o.strip().lower() for o in spec.options) <= _POLAR | {"not sure", "unknown"}


def _names_field(spec: FieldSpec, text: str) -> bool:
    """``text`` names the field: its label, a synonym or its name, as whole words (a
    plural too)."""
    said = " " + " ".join(re.findall(r"[a-z0-9']+", text.lower().replace("_", " "))) + " "
    for phrase in (spec.label, spec.name.replace("_", " "), *spec.synonyms):
        words = re.findall(r"[a-z0-9']+", phrase.lower())
        if words and re.search(r"\b" + r" ".join(map(re.escape, words)) + r"s?\b", said):
            return True
    return False


def _context_for(task: TaskSpec, spec: FieldSpec) -> list[str]:
    """What of the task context can reveal the field: all of it, except for a number, only
    the clauses that name the field ("room ids look like two letters and a number" tells
    nobody the recheck time is 2 hours)."""
    if spec.grader != "numeric_tolerance":
        return [task.context]
    return [c for c in re.split(r"[.;:()\n]|, ", task.context) if _names_field(spec, c)]


def _available(
    task: TaskSpec, spec: FieldSpec, value: Any, revealed: set[tuple[str, int]],
    texts: list[str], retrieved: set[str],
) -> bool:
    for fact_id, version in revealed:
        fact = task.user.fact(fact_id)
        if fact is not None and version <= len(fact.versions) and matches(
                task, spec, fact.versions[version - 1].value, value):
            return True
    if spec.source.document is not None and spec.source.document in retrieved and matches(
            task, spec, spec.gold, value):
        return True
    return any(
        value_in_text(spec.grader, value, text, tolerance=spec.tolerance, options=spec.options,
                      reference=task.reference_date) == "match"
        for text in texts
    )
