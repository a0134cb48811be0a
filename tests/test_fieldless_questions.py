"""Questions that name no field of the record, the way people ask them ("When did this start?",
"Who's your line manager?", "Laptop or desktop?"): the simulated caller answers the one field
it has not given yet that the question's kind of answer (a date, a time, a number, a person, a
place) or its choices fit, and asks back when none or several fit; it never answers another
field. Written on 2026-12-02 in two sets: the first before the rule (28 of 47 answered by the
field lexicons alone, 35 with the rule), the second after it (11 of 25 -> 18 of 25). The caller
has answered the fields before the asked one in the record's order, as an agent working down
the form would have asked them. ``asks back`` rows are known misses (a noun only world
knowledge ties to the field: "Which truck is it?", or several fields of the kind still open).
On 2026-12-02 (seventh session) the observer binds a wh-question that names no field phrase to
the one field sharing the most content words of its label and synonyms, of the kind the
question word asks for (runtime/session/observer.py, ``_vocabulary_field``): 9 more rows answer (62
of
72); "Who did the inspection?" still asks back (only the inspection date's words match, and a
"who" question asks for no date).
"""

from __future__ import annotations

import pytest

from runtime.core.spec import TriggerAsk, default_tasks_dir, load_tasks
from runtime.session.observer import SemanticActObserver
from runtime.user.simulator import RevealPolicy

TASKS = {t.id: t for t in load_tasks([default_tasks_dir()])}
CASES = [
    ('apexv1_001', 'What name is on your paycheck?', ['legal_name'], 'asks back'),
    ('apexv1_001', "When's your birthday?", ['date_of_birth'], 'answers'),
    ('apexv1_001', 'And for teeth, standard or enhanced?', ['dental_plan'], 'answers'),
    ('apexv1_001', 'Who gets the life insurance if something happens to you?',
     ['beneficiary'], 'answers'),
    ('apexv1_001', 'How much are you putting into the health savings account this year?',
     ['hsa_contribution'], 'answers'),
    ('apexv1_001', 'Which doctor do you usually see?', ['pcp'], 'answers'),
    ('apexv1_001', 'Who are you covering on the plan, and how many of them?',
     ['dependent_count', 'dependent_names'], 'asks back'),
    ('apexv1_010', 'What company are you with?', ['company'], 'answers'),
    ('apexv1_010', "Who's sponsoring you on site?", ['sponsor_name'], 'answers'),
    ('apexv1_010', 'Which building will you be working in?', ['building'], 'answers'),
    ('apexv1_010', 'What hours do you need to be on site?', ['access_hours'], 'answers'),
    ('apexv1_010', 'When do you start, and when do you finish up?',
     ['end_date', 'start_date'], 'answers'),
    ('apexv1_010', "What's the best number to reach you on?", ['contact_phone'], 'answers'),
    ('apexv1_041', 'What email do you use to sign in?', ['login_email'], 'answers'),
    ('apexv1_041', 'Is this happening to just you or the whole team?', ['scope'], 'answers'),
    ('apexv1_041', 'Are you on a laptop or a desktop?', ['device'], 'answers'),
    ('apexv1_041', 'Which browser are you using?', ['browser'], 'answers'),
    ('apexv1_041', 'How do you normally get your sign-in code?', ['mfa_method'], 'answers'),
    ('apexv1_041', 'What does the error say exactly?', ['error_code'], 'answers'),
    ('apexv1_064', "What's the member number on your insurance card?", ['member_id'], 'answers'),
    ('apexv1_064', 'Who referred you to us?', ['referring_physician'], 'answers'),
    ('apexv1_064', "What's the referral number?", ['referral_number'], 'answers'),
    ('apexv1_064', "What's bringing you in?", ['reason_for_visit'], 'answers'),
    ('apexv1_064', 'Which day works best for you?', ['appointment_date'], 'answers'),
    ('apexv1_064', 'Morning or afternoon?', ['appointment_time'], 'answers'),
    ('apexv1_070', 'What kind of leave is it?', ['leave_type'], 'asks back'),
    ('apexv1_070', "Who's covering for you while you're out?", ['covering_colleague'], 'answers'),
    ('apexv1_070', 'Who do you report to?', ['manager'], 'answers'),
    ('apexv1_070', "What's the leave for?", ['reason'], 'answers'),
    ('apexv1_070', 'Which days are you taking off?', ['end_date', 'start_date'], 'answers'),
    ('apexv1_106', 'Which truck is it?', ['unit_number'], 'asks back'),
    ('apexv1_106', "What's the mileage on it?", ['odometer'], 'answers'),
    ('apexv1_106', 'What did the driver say was wrong?', ['driver_complaint'], 'answers'),
    ('apexv1_106', 'How much tread is left on the worst tire?', ['tire_tread_min'], 'answers'),
    ('apexv1_106', 'How thick are the brake pads?', ['brake_pad_mm'], 'answers'),
    ('apexv1_106', "Where's the oil sitting?", ['oil_level'], 'answers'),
    ('apexv1_022', "Who am I talking to, and what's your role there?",
     ['contact_name', 'contact_title'], 'answers'),
    ('apexv1_022', 'How many identities are we talking about?', ['identities_in_scope'], 'answers'),
    ('apexv1_022', "What's the main problem you're trying to solve?", ['pain_point'], 'answers'),
    ('apexv1_022', 'Is there an audit or regulation pushing this?',
     ['compliance_driver'], 'asks back'),
    ('apexv1_022', 'When do you need this up and running?', ['target_go_live'], 'answers'),
    ('apexv1_022', 'What kind of money have you set aside for this?', ['budget'], 'asks back'),
    ('apexv1_045', 'Which app are you having trouble with?', ['meeting_app'], 'answers'),
    ('apexv1_045', 'What exactly is going wrong?', ['symptom'], 'answers'),
    ('apexv1_045', 'What machine are you on?', ['computer'], 'answers'),
    ('apexv1_045', 'What are you talking into?', ['microphone'], 'answers'),
    ('apexv1_045', 'When did this start?', ['started_date'], 'answers'),
    ('apexv1_010', "When's your first day on site?", ['start_date'], 'answers'),
    ('apexv1_010', 'And when does the job wrap up?', ['end_date'], 'answers'),
    ('apexv1_010', "Who's your point of contact at the plant?", ['sponsor_name'], 'answers'),
    ('apexv1_010', 'Where will you be based?', ['building'], 'answers'),
    ('apexv1_064', 'When were you born?', ['date_of_birth'], 'answers'),
    ('apexv1_064', 'Who sent you our way?', ['referring_physician'], 'asks back'),
    ('apexv1_064', 'What time suits you?', ['appointment_time'], 'answers'),
    ('apexv1_070', 'When are you heading off?', ['end_date', 'start_date'], 'answers'),
    ('apexv1_070', "Who's your line manager?", ['manager'], 'answers'),
    ('apexv1_070', "Who'll pick up your work while you're away?",
     ['covering_colleague'], 'answers'),
    ('apexv1_106', 'When was the inspection done?', ['inspection_date'], 'answers'),
    ('apexv1_106', 'Who did the inspection?', ['technician'], 'asks back'),
    ('apexv1_106', 'How many miles are on it?', ['odometer'], 'asks back'),
    ('apexv1_022', 'How many users would this cover?', ['identities_in_scope'], 'answers'),
    ('apexv1_022', 'When are you hoping to go live?', ['target_go_live'], 'answers'),
    ('apexv1_022', 'How much are you looking to spend?', ['budget'], 'answers'),
    ('apexv1_045', 'When did you first notice it?', ['started_date'], 'answers'),
    ('apexv1_045', 'Who am I speaking with?', ['caller_name'], 'answers'),
    ('apexv1_001', 'How many people are you covering?', ['dependent_count'], 'asks back'),
    ('apexv1_001', 'How much do you want in the HSA?', ['hsa_contribution'], 'answers'),
    ('apexv1_001', "Who's your doctor?", ['pcp'], 'answers'),
    ('apexv1_001', 'When were you born?', ['date_of_birth'], 'answers'),
    ('apexv1_041', 'Who am I speaking with today?', ['requester_name'], 'answers'),
    ('apexv1_041', 'Laptop or desktop?', ['device'], 'answers'),
    ('apexv1_041', 'Chrome, Edge, Safari?', ['browser'], 'answers'),
]


@pytest.mark.parametrize(("task", "text", "fields", "outcome"), CASES)
def test_a_question_naming_no_field(task: str, text: str, fields: list[str],
                                    outcome: str) -> None:
    spec = TASKS[task]
    order = [f.name for a in spec.artifacts for f in a.fields]
    first = min(order.index(f) for f in fields)
    policy = RevealPolicy(spec)
    policy.spoken.extend(p.id for p in spec.plans if isinstance(p.when, TriggerAsk) and all(
        order.index(f) < first for f in p.when.fields if f in order))
    chosen = policy.respond(SemanticActObserver(spec).observe(text))
    answered = {f for c in chosen if isinstance(c.plan.when, TriggerAsk)
                for f in c.plan.when.fields}
    if outcome == "answers":
        assert set(fields) <= answered, [c.plan.id for c in chosen]
    else:
        assert answered == set(), [c.plan.id for c in chosen]  # never another field


def test_the_name_of_a_thing_is_no_answer_to_who() -> None:
    """apexv1_091: the team's name still open does not take "Who's on the hook for that?"
    from the action's owner (a field called a name is a person's unless it names a thing)."""
    spec = TASKS["apexv1_091"]
    policy = RevealPolicy(spec)
    policy.spoken.extend(p.id for p in spec.plans if isinstance(p.when, TriggerAsk)
                         and not {"team_name", "action_owner"} & set(p.when.fields))
    chosen = policy.respond(SemanticActObserver(spec).observe("Who's on the hook for that?"))
    answered = {f for c in chosen if isinstance(c.plan.when, TriggerAsk)
                for f in c.plan.when.fields}
    assert answered == {"action_owner"}, [c.plan.id for c in chosen]
