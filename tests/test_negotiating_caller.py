"""The simulated caller weighing an agent's offer for a negotiated field (runtime/user/simulator.py,
``RevealPolicy``; docs/grading.md "The simulated caller").

The shapes below are the ones a blind writer's natural agents used and the caller missed (the
first negotiation held-out set, now a development set: docs/grading.md "Held-out checks"): an
offer in the sentence that restates the caller's ask, an offer that names no field, an amount
said bare or in thousands, a recap that states the agreed amount near the caller's ask.
"""

from __future__ import annotations

import pytest

from runtime.core.spec import Lifecycle
from runtime.session.observer import SemanticActObserver
from runtime.user.simulator import RevealPolicy
from tests.conftest import find_task


def _answer(task_id: str, spoken: list[str], text: str) -> list[str]:
    """The plans the caller speaks after ``text``, having spoken ``spoken`` before."""
    task = find_task(task_id)
    policy = RevealPolicy(task)
    policy.spoken.extend(spoken)
    acts = SemanticActObserver.for_task(task).observe(text)
    return [c.plan.id for c in policy.respond(acts)]


@pytest.mark.parametrize(("task_id", "spoken", "text", "expected"), [
    # the caller's ask and the offer in one sentence: the offer is the figure not the caller's
    ("apexv1_051", ["opening", "ans_goodwill_ask"],
     "You asked for three hundred, and the best I can do on this call is a hundred and fifty "
     "dollars of goodwill credit on your account.", "accept_proposal"),
    ("apexv1_051", ["opening", "ans_goodwill_ask"],
     "Three hundred is above what I can do, and I can offer you a goodwill credit of one "
     "hundred dollars.", "counter_proposal"),
    # an offer that names no field, by its unit and the persona's limits
    ("apexv1_078", ["opening"], "The ballroom is forty-two hundred a day. I can take five "
     "percent off.", "counter_proposal"),
    ("apexv1_078", ["opening"], "I can take ten percent off.", "accept_proposal"),
    ("apexv1_054", ["opening"], "You're right to push. So I can do thirty-three fifty a load.",
     "accept_proposal"),
    # an amount said in thousands, as salaries are
    ("apexv1_060", ["opening", "ans_requested"], "One forty is above the band; the most I can "
     "approve is one twenty-eight base.", "accept_salary"),
    ("apexv1_060", ["opening", "ans_requested"], "I can do one twenty base.", "counter_salary"),
    # another field's figure is no offer: "three free months" is no three percent
    ("apexv1_059", ["opening", "ans_free_rent"], "So three percent a year it is.",
     "accept_escalation"),
])
def test_an_offer_is_weighed(task_id: str, spoken: list[str], text: str, expected: str) -> None:
    assert expected in _answer(task_id, spoken, text)


@pytest.mark.parametrize(("task_id", "spoken", "text", "expected"), [
    ("apexv1_078", ["opening"], "I can take ten percent off. Would that work for you?",
     ["accept_proposal"]),
    ("apexv1_078", ["opening"], "I can take five percent off. Would that work for you?",
     ["counter_proposal"]),
    ("apexv1_051", ["opening", "ans_goodwill_ask"], "The best I can do is a hundred and "
     "fifty dollars of goodwill credit. Would that work for you?", ["accept_proposal"]),
])
def test_would_that_work_after_a_figure_is_that_offer(task_id: str, spoken: list[str],
                                                      text: str, expected: list[str]) -> None:
    """The question after the figure asks about that offer; there is no second, unnamed
    offer to decline ("Not now, thanks" after accepting)."""
    assert _answer(task_id, spoken, text) == expected


@pytest.mark.parametrize(("task_id", "spoken", "text"), [
    # the caller's own figure given back to it is no offer
    ("apexv1_051", ["opening", "ans_goodwill_ask"], "You asked for three hundred. Let me see "
     "what I can do."),
    # a date's day or year is no bare amount
    ("apexv1_054", ["opening"], "The first load would be on January fourth, 2027."),
    # a figure that is another field's known value (the 25 percent deposit) is no discount
    ("apexv1_078", ["opening"], "We take a twenty-five percent deposit."),
])
def test_no_offer_is_heard(task_id: str, spoken: list[str], text: str) -> None:
    task = find_task(task_id)
    proposals = {p.id for p in task.plans if p.when.on == "proposal"}
    assert not proposals & set(_answer(task_id, spoken, text))


@pytest.mark.parametrize(("task_id", "text", "not_found"), [
    # 3,350 agreed is no misheard ask of 3,600; 4,200 room hire is no misheard budget of 3,500
    ("apexv1_054", "a linehaul of three thousand three hundred and fifty dollars a load, a "
     "fourteen percent fuel surcharge", "requested_rate"),
    ("apexv1_078", "ten percent off the forty-two hundred room hire, a twenty-five percent "
     "deposit", "room_budget"),
    ("apexv1_060", "a base salary of one hundred twenty-eight thousand dollars, a ten thousand "
     "dollar signing bonus", "requested_salary"),
])
def test_a_recap_amount_is_not_the_callers_ask_misheard(task_id: str, text: str,
                                                        not_found: str) -> None:
    observer = SemanticActObserver.for_task(find_task(task_id))
    found = {name for _art, name in observer._recap_fields(text)}
    assert found and not_found not in found


def test_a_recap_that_lowers_the_offer_is_countered_and_not_approved() -> None:
    # the offer was never heard as one; the recap's figure is weighed against the limits
    plans = _answer("apexv1_051", ["opening", "ans_goodwill_ask"],
                    "To recap, twenty-four eighty back to the card ending 8842, plus a one "
                    "hundred dollar goodwill credit. Shall I process it now?")
    assert "counter_proposal" in plans
    assert "approve_commit" not in plans


@pytest.mark.parametrize(("task_id", "spoken", "text", "expected"), [
    # a share said in words, pounds
    ("apexv1_053", ["opening"], "Since it's your first late payment this year I can waive half of "
     "the fee.", "accept_proposal"),
    # a figure turned down is no offer; a day of the month is no figure of the deal
    ("apexv1_057", ["opening", "cancel_acceptance"], "Since you've decided against the fifteen "
     "percent loyalty discount, here's the cancellation: your cover ends May first, with a "
     "twenty-five dollar fee.", None),
])
def test_shares_refusals_and_days(task_id: str, spoken: list[str], text: str,
                                  expected: str | None) -> None:
    task = find_task(task_id)
    proposals = {p.id for p in task.plans if p.when.on == "proposal"}
    heard = proposals & set(_answer(task_id, spoken, text))
    assert heard == ({expected} if expected else set())


def test_an_amount_in_pounds_is_money() -> None:
    plans = _answer("apexv1_080", ["opening"], "The schedule gives a credit of two hundred "
                    "pounds, I'm afraid.")
    assert "counter_proposal" in plans


def _ready_policy(task_id: str, spoken: list[str]) -> tuple[RevealPolicy, SemanticActObserver]:
    """A caller whose artifact is ready for review and was just restated: only the terms can
    hold an approval back."""
    task = find_task(task_id)
    policy = RevealPolicy(task)
    policy.spoken.extend(spoken)
    for art in task.artifacts:
        policy.lifecycles[art.id] = Lifecycle.READY_FOR_REVIEW
    return policy, SemanticActObserver.for_task(task)


def _say(policy: RevealPolicy, observer: SemanticActObserver, text: str) -> list[str]:
    plans = [c.plan.id for c in policy.respond(observer.observe(text))]
    policy.spoken.extend(plans)
    return plans


def test_a_bare_re_ask_after_a_counter_is_no_deal() -> None:
    # the counter stands: the same figure asked again gets the counter, not leave
    policy, observer = _ready_policy("apexv1_051", ["opening", "ans_goodwill_ask"])
    assert "counter_proposal" in _say(policy, observer, "The best I can do is a goodwill "
                                      "credit of one hundred dollars.")
    recap = ("To recap, twenty-four eighty back to the card ending 8842, and the goodwill "
             "credit. ")
    again = _say(policy, observer, recap + "I'm sorry, that's the figure I have for you. Shall "
                 "I process the refund now?")
    assert "counter_proposal" in again and "approve_commit" not in again
    # a better offer accepted, the same request gets leave
    assert "accept_proposal" in _say(policy, observer, "Let me look again. I can do a hundred "
                                     "and fifty dollars of goodwill credit.")
    assert "approve_commit" in _say(policy, observer, recap + "Shall I process the refund now?")
