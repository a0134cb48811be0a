"""The simulated caller's check of a read-back (runtime/user/simulator.py ``check_restatement``):
a right value said the way people say it is confirmed, a wrong one corrected, a choice said
in other words is not judged. Bundled tasks, the caller's facts as last corrected."""

from __future__ import annotations

import pytest

from runtime.core.spec import TaskSpec, default_tasks_dir, load_tasks
from runtime.session.observer import SemanticActObserver
from runtime.user.simulator import RevealPolicy

TASKS = {t.id: t for t in load_tasks([default_tasks_dir()])}


def _verdict(task: TaskSpec, field: str, text: str) -> str:
    policy = RevealPolicy(task)
    policy.spoken.extend(p.id for p in task.plans)  # every answer and correction said
    acts = [a for a in SemanticActObserver(task).observe(text)
            if a.field == field and a.act in ("read_back", "confirm")]
    assert acts, f"the observer finds no restatement of {field} in {text!r}"
    return policy.check_restatement(acts[0])


@pytest.mark.parametrize(("task", "field", "text", "verdict"), [
    ("apexv1_011", "salary_expectation", "Got it, one eighty-five base.", "match"),
    ("apexv1_011", "salary_expectation", "Got it, one eighty base.", "mismatch"),
    ("apexv1_045", "microphone", "So it's the MacBook's built-in mic.", "match"),
    ("apexv1_045", "microphone", "So it's the USB headset.", "mismatch"),
    ("apexv1_057", "policy_number", "Policy H O five five two nine zero seven, thanks.",
     "match"),
    ("apexv1_057", "policy_number", "Policy H O five five two nine zero one, thanks.",
     "mismatch"),
    ("apexv1_015", "employment_end_date", "Her last day was May thirty-first, got it.",
     "match"),
    ("apexv1_015", "employment_end_date", "Her last day was March thirty-first, got it.",
     "mismatch"),
    # a yes/no choice restated by naming it, affirmed or negated (the letter was withdrawn)
    ("apexv1_032", "letter_requested",
     "Here is the draft: an employment matter with a preservation letter, video consultation.",
     "mismatch"),
    ("apexv1_032", "letter_requested",
     "Here is the draft: an employment matter with no preservation letter, video consultation.",
     "match"),
    ("apexv1_102", "isolation_verified", "Let me read back what I have. Work order WO-55102, "
     "pump house two, crew of four, permit SWP-7719, and isolation verified.", "match"),
    ("apexv1_102", "isolation_verified", "Let me read back what I have. Work order WO-55102, "
     "pump house two, crew of four, permit SWP-7719, and isolation not verified.", "mismatch"),
    # a code spelled out is no count: its 4 is not the household of four
    ("apexv1_077", "household_size",
     "So that's assignment M V 3 0 4 1 8 to Rotterdam, three people moving.", "mismatch"),
    ("apexv1_077", "household_size",
     "So that's assignment M V three oh four one eight to Rotterdam, three people moving.",
     "mismatch"),
    ("apexv1_077", "household_size",
     "So that's assignment M V 3 0 4 1 8 to Rotterdam, four people moving.", "match"),
    # the day of a date is no count: "October eleventh" does not confirm eleven attendees
    ("apexv1_092", "attendee_count",
     "So attendance was four, and the action is due October eleventh.", "mismatch"),
    ("apexv1_092", "action_due_date", "Due October eleventh, got it.", "mismatch"),
    ("apexv1_092", "action_due_date", "Due October first, got it.", "match"),
    # a list read back with an item the caller cancelled is not the caller's list
    ("apexv1_028", "services",
     "So the services are mental health support, physiotherapy and health checks.",
     "mismatch"),
    ("apexv1_028", "services", "So the services are mental health support and physiotherapy.",
     "match"),
    ("apexv1_028", "services",
     "So that's mental health support and physiotherapy, no health checks.", "match"),
    ("apexv1_095", "new_medications",
     "So new meds are apixaban and bisoprolol, with the furosemide stopped.", "match"),
    ("apexv1_095", "new_medications", "So new meds are apixaban, bisoprolol and furosemide.",
     "mismatch"),
])
def test_read_backs_in_spoken_forms(task: str, field: str, text: str, verdict: str) -> None:
    assert _verdict(TASKS[task], field, text) == verdict


def test_a_choice_said_in_other_words_is_not_corrected() -> None:
    """'the whole office' for the option 'whole organization' names no option: the caller
    cannot tell it is wrong, so it neither confirms nor corrects it."""
    task = TASKS["apexv1_041"]
    policy = RevealPolicy(task)
    policy.spoken.extend(p.id for p in task.plans)
    act = next(a for a in SemanticActObserver(task).observe(
        "I'll put the whole office down as the scope of the outage.") if a.field == "scope")
    assert act.act == "read_back"
    assert policy.check_restatement(act) == "unknown"
