"""RuleAuthorizer: authorization read from a transcript, only with an approve/revoke cue as
context. A table of phrasings (negations, self-corrections, hedges), every approval and
revocation realization of the bundled banks, and the no-cue rule."""

from __future__ import annotations

import pytest

from runtime.core.spec import TaskSpec
from runtime.user.live_user import Cue
from runtime.user.speech_authorization import RuleAuthorizer, normalize, stance_matches
from tests.conftest import bundled_tasks

TASKS = {t.id: t for t in bundled_tasks()}
TASK = TASKS["apexv1_070"]  # commit:lr_1, verbs: submit, commit, file, send, book, put in
RULES = RuleAuthorizer()


def cue(plan_id: str, kind: str = "approve") -> Cue:
    return Cue(cue_id="cue-1", kind=kind, plan_id=plan_id, text="…", shown_ms=0)  # type: ignore[arg-type]


APPROVE = cue("approve_first")
REVOKE = cue("barge_revoke", "revoke")

# (transcript, decision under the approve cue, decision under the revoke cue)
TABLE = [
    ("Yes.", "grant", "none"),
    ("Yeah, go ahead.", "grant", "none"),
    ("Yep, please submit it.", "grant", "none"),
    ("Sure, that's fine.", "grant", "none"),
    ("OK, do it.", "grant", "none"),
    ("Absolutely, send it in.", "grant", "none"),
    ("You can submit the request now.", "grant", "none"),
    ("That sounds good to me.", "grant", "none"),
    ("No problem, go ahead and file it.", "grant", "none"),
    ("Don't worry, go ahead.", "grant", "none"),
    ("I don't see why not.", "grant", "none"),
    ("No objection, book it.", "grant", "none"),
    ("No, wait... yes, go ahead.", "grant", "none"),
    ("Hmm, yes. Yes, submit.", "grant", "none"),
    ("No.", "none", "revoke"),
    ("Nope, not yet.", "none", "revoke"),
    ("Don't go ahead.", "none", "revoke"),
    ("Please don't submit it.", "none", "revoke"),
    ("No, wait.", "none", "revoke"),
    ("Actually, cancel that.", "none", "revoke"),
    ("Yes, go ahead. Actually, hold on, don't send it.", "none", "revoke"),
    ("Wait, wait, don't submit it yet! The end date should be June 11th.", "none", "revoke"),
    ("Hold off on that, I changed my mind.", "none", "revoke"),
    ("Never mind, I take it back.", "none", "revoke"),
    ("Stop, that's not right.", "none", "revoke"),
    ("Scratch that, let's not do it.", "none", "revoke"),
    ("I'm not sure.", "none", "none"),
    ("Let me think about it.", "none", "none"),
    ("What's the end date again?", "none", "none"),
    ("", "none", "none"),
]


@pytest.mark.parametrize(("text", "approve", "revoke"), TABLE)
def test_phrasings(text: str, approve: str, revoke: str) -> None:
    got = RULES.classify(text, APPROVE, TASK)
    assert got.decision == approve, got.rationale
    assert got.action == "commit:lr_1" and got.evidence == text
    assert got.classifier == "rules-v1"
    got = RULES.classify(text, REVOKE, TASK)
    assert got.decision == revoke, got.rationale


def test_table_is_large_and_covers_both_sides() -> None:
    assert len(TABLE) >= 25
    assert sum(a == "grant" for _t, a, _r in TABLE) >= 10
    assert sum(r == "revoke" for _t, _a, r in TABLE) >= 10


@pytest.mark.parametrize("text", ["Yes, go ahead and submit it.", "Don't submit it, cancel."])
def test_no_decision_without_an_approve_or_revoke_cue(text: str) -> None:
    no_cue = RULES.classify(text, None, TASK)
    assert no_cue.decision == "none"
    assert no_cue.action == "commit:lr_1"  # the task's only gated action, for corrections
    answer_cue = cue("ans_dates", "correct")  # a cue, but not one that authorizes
    assert RULES.classify(text, answer_cue, TASK).decision == "none"
    # A task with several gated actions and no cue: no action can be named.
    several = TASK.model_copy(update={"authorization": [
        *TASK.authorization,
        TASK.authorization[0].model_copy(update={"action": "commit:other"}),
    ]})
    assert RULES.classify(text, None, several).action is None


def test_confidence_is_the_agreeing_share_of_stance_phrases() -> None:
    unanimous = RULES.classify("Yes, go ahead.", APPROVE, TASK)
    assert unanimous.confidence == 1.0
    mixed = RULES.classify("Yes. Actually no.", APPROVE, TASK)
    # stances: "yes" (affirm), "actually no" (stop) → last is a stop, 1 of 2 agree
    assert mixed.decision == "none" and mixed.confidence == 0.5
    nothing = RULES.classify("What was that?", APPROVE, TASK)
    assert nothing.confidence == 0.0 and nothing.decision == "none"


def test_normalize_and_negated_requests() -> None:
    assert normalize("Don’t SUBMIT it, OK?") == "do not submit it okay"
    phrases = [(m.stance, m.phrase) for m in stance_matches("Please don't send it", TASK,
                                                            "commit:lr_1")]
    assert phrases == [("stop", "please do not send it")]


def _auth_plans(task: TaskSpec) -> list[tuple[str, str, str]]:
    out = []
    for plan in task.plans:
        auth = plan.authorization
        if auth is None:
            continue
        want = "grant" if auth.grant else "revoke"
        out += [(plan.id, want, r.text) for r in plan.realizations]
    return out


BANK = [
    pytest.param(t.id, plan, want, text, id=f"{t.id}-{plan}-{k}")
    for t in TASKS.values() for k, (plan, want, text) in enumerate(_auth_plans(t))
]


@pytest.mark.parametrize(("task_id", "plan_id", "want", "text"), BANK)
def test_every_bank_approval_and_revocation_is_read_as_such(
    task_id: str, plan_id: str, want: str, text: str
) -> None:
    task = TASKS[task_id]
    kind = "approve" if want == "grant" else "revoke"
    got = RULES.classify(text, cue(plan_id, kind), task)
    assert got.decision == want, (text, got.rationale)
    plan = task.plan(plan_id)
    assert plan is not None and plan.authorization is not None
    assert got.action == (plan.authorization.grant or plan.authorization.revoke)


def test_bank_has_authorization_realizations() -> None:
    assert len(BANK) >= 20
