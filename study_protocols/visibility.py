"""What a study participant or annotator may see of a task, and the scan that proves a page
shows nothing more.

People in the studies see the user's side of a task: the persona, goals and constraints, and
the facts the user knows at that moment (paper appendix F.1/F.2). They never see grader state:
field gold values the user does not know (values the agent must derive from documents, tools or
instructions), grader names, required actions or the reference trajectory.

:func:`hidden_gold_strings` lists the gold values a viewer must not be shown given the fact
values they are shown; :func:`find_hidden_gold` scans a response body for them. Tests run the
scan over every page, fragment and JSON answer an annotator or participant can reach.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from runtime.core.spec import RevealVolunteer, TaskSpec, UserPlan

MIN_SCAN_CHARS = 4
"""Gold values shorter than this (``8``, ``yes``) are too common to scan for meaningfully."""


def value_strings(value: Any) -> list[str]:
    """The strings a value shows as: itself, or each element of a list / each value of a map."""
    if value is None or isinstance(value, bool):
        return []
    if isinstance(value, list | tuple | set):
        return [s for v in value for s in value_strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in value_strings(v)]
    text = str(value).strip()
    return [text] if text else []


def volunteer_facts(task: TaskSpec) -> list[tuple[str, int]]:
    """Facts the user knows from the start: (fact id, version 1) of every ``volunteer`` fact."""
    return [(f.id, 1) for f in task.user.facts if isinstance(f.reveal, RevealVolunteer)]


def plan_visible_facts(task: TaskSpec, plan: UserPlan) -> list[tuple[str, int]]:
    """The facts the user state shows alongside ``plan``: the volunteer facts and the fact
    versions the plan carries (a carried later version replaces version 1)."""
    shown = dict(volunteer_facts(task))
    for ref in plan.facts:
        shown[ref.fact] = ref.version
    return sorted(shown.items())


def fact_values(task: TaskSpec, facts: Iterable[tuple[str, int]]) -> list[Any]:
    """The values of the given (fact id, version) pairs; unknown ones are skipped."""
    out: list[Any] = []
    for fact_id, version in facts:
        fact = task.user.fact(fact_id)
        if fact is not None and 1 <= version <= len(fact.versions):
            out.append(fact.versions[version - 1].value)
    return out


def user_state_text(task: TaskSpec) -> str:
    """The user's own words about themselves (persona, goals, constraints): always visible."""
    persona = task.user.persona
    return "\n".join([persona.name, persona.role, persona.speaking_style,
                      *task.user.goals, *task.user.constraints])


def hidden_gold_strings(task: TaskSpec, shown_values: Iterable[Any]) -> set[str]:
    """Field gold strings (at least :data:`MIN_SCAN_CHARS` long) that are not among, or inside,
    the values shown to the viewer or the user-state text (:func:`user_state_text`)."""
    shown = [s.casefold() for v in shown_values for s in value_strings(v)]
    shown.append(user_state_text(task).casefold())
    hidden: set[str] = set()
    for _, spec in task.graded_fields():
        for text in value_strings(spec.gold):
            folded = text.casefold()
            if len(folded) < MIN_SCAN_CHARS:
                continue
            if any(folded == s or folded in s for s in shown):  # known to the user
                continue
            hidden.add(text)
    return hidden


def find_hidden_gold(body: str, hidden: Iterable[str]) -> list[str]:
    """The hidden gold strings that occur in ``body`` as whole words (case-insensitive)."""
    found = []
    for text in sorted(hidden):
        pattern = r"(?<![\w])" + re.escape(text) + r"(?![\w])"
        if re.search(pattern, body, flags=re.IGNORECASE):
            found.append(text)
    return found


def grader_terms(task: TaskSpec) -> Sequence[str]:
    """Names that only grader state carries (grader kinds of the task's fields), for scans."""
    return sorted({spec.grader for _, spec in task.graded_fields()})
