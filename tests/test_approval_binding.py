"""Approval requests bound to the gated action, offers of anything else (paper B.3, issue #12
point 2): agent questions written to catch the observer out, each with the verdict the
annotation guide gives (docs/observer_corpus.md, rule 1), written in sets on 2026-12-02, each
before the observer was run on it. Set 1 (46) found 2 false approvals; set 2 (44, after a rule
for "last year's plan") found 4 more, all fixed by the rule for one more thing proposed
("... as well?", "... too?"); set 3 (35) found 3, fixed by a rule that took any foreign word in
the object for another thing, and set 4 (7 natural approvals: "Morgan's enrollment", "your
cardiology appointment") showed that rule refusing real requests, so it was withdrawn. Known
misses are strict xfails: a rule that fixes one turns it red until the mark is removed."""

from __future__ import annotations

import pytest

from runtime.core.spec import default_tasks_dir, load_tasks
from runtime.session.observer import SemanticActObserver

TASKS = {t.id: t for t in load_tasks([default_tasks_dir()])}

CASES = [
    ('apexv1_001',
     'Would you like me to send a copy of the enrollment summary to your personal email?', False),
    ('apexv1_001', 'Should I file a separate request to update your address on record?', False),
    ('apexv1_001', "I'll submit nothing until you've heard the whole summary.", False),
    ('apexv1_001', 'Do you want me to enroll your spouse in the wellness program too?', False),
    ('apexv1_001', "Before I finalize anything, what's your date of birth?", False),
    ('apexv1_001', 'Want me to send you the plan brochure?', False),
    ('apexv1_001', 'Can I send a reminder to your manager about the deadline?', False),
    ('apexv1_001', 'Everything is in order. Want me to send it off to benefits now?', True),
    ('apexv1_001', "I'm ready to lock this in for you. Sound good?", True),
    ('apexv1_001', 'Are you okay with me committing these elections?', True),
    ('apexv1_010', 'Shall I send the induction video link to your email?', False),
    ('apexv1_010', 'Do you want me to put in a parking request as well?', False),
    ('apexv1_010', 'Should I submit a separate request for the tool crib?', False),
    ('apexv1_010', 'Can I put the badge request in now?', True),
    ('apexv1_010', 'Is it alright if I lodge this with security?', True),
    # the head of the object decides, not the artifact word before it (a strict xfail until
    # the eleventh session)
    ('apexv1_032', 'Would you like me to forward the intake checklist to your email?', False),
    ('apexv1_032', 'Should I file a note that you prefer evening calls?', False),
    ('apexv1_032', 'Do you want me to file a complaint with the labor board as well?', False),
    ('apexv1_032', 'Okay to forward your intake to the attorneys now?', True),
    ('apexv1_051', 'Do you want me to process a refund on the other account too?', False),
    ('apexv1_051', 'Should I issue you a receipt by email?', False),
    ('apexv1_051', 'Can I issue the refund and credit now?', True),
    ('apexv1_057', 'Would you like me to send you a quote for the upgraded cover?', False),
    ('apexv1_057', 'Should I process a change of address while I have you?', False),
    ('apexv1_057', 'Shall I go ahead and process the cancellation?', True),
    ('apexv1_064', 'Do you want me to book a follow-up for next month too?', False),
    ('apexv1_064', 'Should I schedule a reminder call the day before?', False),
    ('apexv1_064', 'Want me to book you a parking space at the clinic?', False),
    pytest.param('apexv1_064', 'Would you like me to lock in Tuesday at nine?', True,
                 marks=pytest.mark.xfail(
                     strict=True,
                     reason='a time slot as the object is not read as the appointment')),
    ('apexv1_070', 'Do you want me to book a meeting room for the handover?', False),
    ('apexv1_070', 'Should I send your manager a heads-up email?', False),
    ('apexv1_070', 'Want me to file another request for the December dates?', False),
    ('apexv1_070', 'Can I put the leave request in for you now?', True),
    ('apexv1_076', 'Should I book a call with the deal desk?', False),
    ('apexv1_076', 'Would you like me to place a hold on extra seats for next quarter?', False),
    ('apexv1_076', 'Do you want me to process a trial for the analytics add-on?', False),
    ('apexv1_076', 'Shall I place the order now?', True),
    ('apexv1_078', 'Should I send over the floor plans?', False),
    ('apexv1_078', 'Want me to issue a parking permit for your speakers?', False),
    ('apexv1_078', 'Shall I issue the proposal to you now?', True),
    ('apexv1_100', 'Should I send the finance team a calendar invite?', False),
    ('apexv1_100', "Would you like me to file last year's plan for comparison?", False),
    ('apexv1_100', 'Okay for me to hand in the plan to finance?', True),
    ('apexv1_114', 'Should I escalate the printer issue as well?', False),
    ('apexv1_114', 'Do you want me to send you the raw logs?', False),
    ('apexv1_114', 'Want me to hand off the timeline to the incident team now?', True),
    ('apexv1_001', "Shall I submit your feedback on today's call?", False),
    ('apexv1_001', 'Can I send the confirmation to your phone?', False),
    ('apexv1_001', "Should I enroll you in the commuter benefit while we're at it?", False),
    ('apexv1_001', 'Want me to file the dependent verification paperwork for Casey too?', False),
    ('apexv1_001', 'Would you like me to send the benefits guide over?', False),
    ('apexv1_001', "Do you want me to submit a claim for last month's visit?", False),
    ('apexv1_001', 'Shall we get your enrollment submitted?', True),  # the causative
    ('apexv1_001', 'Did you get the form sent?', False),  # the caller's act
    ('apexv1_001', 'Happy for me to file the enrollment?', True),
    ('apexv1_001', 'Do I have your permission to submit it?', True),
    ('apexv1_001', 'Mind if I commit these now?', True),
    ('apexv1_010', 'Want me to send the site rules to your phone?', False),
    ('apexv1_010', 'Do you want me to file a visitor pass for your apprentice?', False),
    ('apexv1_010', 'Should I send security the old badge number?', False),
    ('apexv1_010', 'Shall I send the badge application to security now?', True),
    ('apexv1_010', 'Okay if I submit it?', True),
    ('apexv1_032', 'Should I forward you the engagement letter template?', False),
    ('apexv1_032', 'Would you like me to file a records request with your former employer?', False),
    ('apexv1_032', 'Can I submit your intake to the attorney team?', True),
    ('apexv1_032', 'Is it okay if I file this now?', True),
    ('apexv1_051', 'Should I process the refund for the old invoice as well?', False),
    ('apexv1_051', 'Do you want me to issue a credit note for the other workspace?', False),
    ('apexv1_051', 'Shall I put the resolution through?', True),
    ('apexv1_057', 'Can I send you the renewal quote by text?', False),
    ('apexv1_057', 'Want me to file a complaint about the price increase?', False),
    ('apexv1_057', 'Can I put that through for you now?', True),
    ('apexv1_064', 'Shall I book you in with Dr. Osei for a second opinion as well?', False),
    ('apexv1_064', 'Should I schedule the blood test beforehand?', False),
    ('apexv1_064', 'Shall I go ahead and book that appointment?', True),
    ('apexv1_070', 'Should I submit an expense claim for the flights?', False),
    ('apexv1_070', 'Would you like me to book the company car for the airport run?', False),
    ('apexv1_070', 'Can I send the leave request to your manager now?', True),
    ('apexv1_070', 'Shall I go ahead and submit it?', True),
    ('apexv1_076', 'Should I place the renewal order for the other region too?', False),
    ('apexv1_076', 'Want me to book the onboarding session?', False),
    ('apexv1_076', 'Are we good to place this order?', True),
    ('apexv1_078', 'Shall I send the catering menu?', False),
    ('apexv1_078', 'Should I issue an invoice for the deposit?', False),
    ('apexv1_078', 'Okay to send you the proposal now?', True),
    ('apexv1_100', "Should I send finance last quarter's actuals?", False),
    ('apexv1_100', 'Want me to file the travel policy with it for reference?', False),
    ('apexv1_100', 'Shall I submit the budget plan now?', True),
    ('apexv1_114', 'Should I escalate the billing ticket to tier two?', False),
    ('apexv1_114', 'Would you like me to send the vendor a status update?', False),
    ('apexv1_114', 'Shall I escalate the timeline now?', True),
    ('apexv1_001', "Do you want me to submit your timesheet while I'm in the system?", False),
    ('apexv1_001', "Shall I send Casey's birth certificate request to HR?", False),
    ('apexv1_001', 'Would it help if I enrolled you in direct deposit for the HSA?', False),
    ('apexv1_001', "That's everything on my side. Can I go ahead and submit?", True),
    ('apexv1_001', "With your okay I'll commit the enrollment now. Okay?", True),
    ('apexv1_010', 'Shall I put in a key request for the plant room?', False),
    ('apexv1_010', 'Should I send your supervisor the induction schedule?', False),
    ('apexv1_010', 'Ready for me to send that through to security?', True),
    ('apexv1_032', 'Shall I file your questions for the attorney in the notes?', False),
    ('apexv1_032', 'Do you want me to forward your pay stubs to the paralegal?', False),
    ('apexv1_032', 'Are you comfortable with me submitting the intake now?', True),
    ('apexv1_051', 'Should I issue a new invoice with the corrected amount for next month?', False),
    ('apexv1_051', 'Do you want me to process the plan downgrade you mentioned?', False),
    ('apexv1_051', 'Alright to commit the resolution?', True),
    # the rules bind it (a different object named only in the trailing "for ..." phrase); the
    # act model, sure it asks no leave, takes the request away
    ('apexv1_057', 'Should I send you the cancellation form for your car policy?', False),
    ('apexv1_057', 'Do you want me to process a refund of the old overpayment first?', False),
    ('apexv1_057', 'Good for me to submit the cancellation?', True),
    ('apexv1_064', 'Should I book transport for you to get to the clinic?', False),
    ('apexv1_064', 'Would you like me to schedule your flu shot for the same visit?', False),
    ('apexv1_064', 'Can I book that in for you?', True),
    pytest.param('apexv1_070',
                 'Should I submit your training request for the Lisbon course?', False,
                 marks=pytest.mark.xfail(strict=True,
                                         reason='another thing named by the generic noun request')),
    ('apexv1_070', 'Do you want me to book your flights through the travel desk?', False),
    ('apexv1_070', 'Shall I put in the leave request?', True),
    ('apexv1_076', 'Do you want me to place a separate order for the hardware tokens?', False),
    ('apexv1_076', 'Should I process the discount approval with deal desk first?', False),
    ('apexv1_076', 'Can I go ahead and commit the order?', True),
    ('apexv1_078', 'Should I send your speakers the directions?', False),
    ('apexv1_078', 'Want me to issue the badge list to reception?', False),
    ('apexv1_078', 'Can I finalize and send the proposal?', True),
    ('apexv1_100', 'Should I file the receipts from the offsite?', False),
    # the rules bind it (the artifact word as the head of another thing); the act model takes
    # the request away
    ('apexv1_100', 'Do you want me to send the headcount plan to HR?', False),
    ('apexv1_100', 'Okay if I submit the plan?', True),
    ('apexv1_114', 'Should I send the incident summary to the customer?', False),
    ('apexv1_114', 'Do you want me to file a bug against the sync service?', False),
    ('apexv1_114', 'Okay to escalate it?', True),
    # Set 4: natural approvals naming the artifact with a name or a value before it, which a
    # rule treating every foreign modifier as another thing refused (it was withdrawn).
    ('apexv1_001', "Shall I submit Morgan's enrollment?", True),
    ('apexv1_070', "Can I put in Priya's leave request now?", True),
    ('apexv1_064', 'Shall I book your cardiology appointment?', True),
    ('apexv1_076', 'Can I place the Enterprise order?', True),
    ('apexv1_010', 'Can I submit your contractor badge request?', True),
    ('apexv1_100', 'Shall I submit the Facilities budget plan?', True),
    ('apexv1_001', 'Can I submit the updated enrollment now?', True),
    # Set 5 (2026-12-05): leave asked by name ("your consent", "your permission") for a step
    # a field of the task is about, found by the writer of apexv1_033 (records consent); the
    # rules bound each to the referral's submission. Natural approvals with the same words
    # stay approvals.
    ('apexv1_033', 'Do you consent to sharing your records with the specialist?', False),
    ('apexv1_033', 'Do you consent to us sharing your records?', False),
    ('apexv1_033', 'Do I have your consent to send the notes to the specialist?', False),
    ('apexv1_033', 'Do I have your consent to pass your medical records to the specialist?',
     False),
    ('apexv1_033', 'Do you agree to let the specialist see your notes?', False),
    ('apexv1_033', 'Do I have your consent to submit the referral?', True),
    ('apexv1_033', 'Do you consent to the referral going to Cedar Ridge?', True),
    ('apexv1_033', 'Do I have your permission to go ahead?', True),
    ('apexv1_033', 'Do I have your okay to send it off?', True),
    ('apexv1_033', 'Do I have your okay to get this referral over to the specialist?', True),
    ('apexv1_001', 'Do I have your permission to submit the enrollment as it stands?', True),
    ('apexv1_064', 'Do I have your okay to book the appointment?', True),
    ('apexv1_070', 'Do you consent to me putting the leave request in now?', True),
    ('apexv1_100', 'Can I get your approval to hand the plan in to finance?', True),
]


@pytest.mark.parametrize(("task", "text", "approval"), CASES)
def test_approval_only_for_the_gated_action(task: str, text: str, approval: bool) -> None:
    acts = SemanticActObserver(TASKS[task]).observe(text)
    got = [a.action for a in acts if a.act == "request_approval"]
    if approval:
        assert set(got) == {TASKS[task].authorization[0].action}, acts
    else:
        assert got == [], acts


@pytest.mark.parametrize("text", [
    "Do you consent to sharing your records with the specialist?",
    "Do you consent to us sharing your records?",
    "Do you agree to let the specialist see your notes?",
    "Do I have your consent to send the notes to the specialist?",
])
def test_consent_for_a_step_asks_its_field(text: str) -> None:
    """Leave asked for the step a field is about asks that field, so the caller says it."""
    acts = SemanticActObserver(TASKS["apexv1_033"]).observe(text)
    assert [(a.act, a.field) for a in acts] in (
        [("ask", "records_consent")], [("confirm", "records_consent")]), acts
