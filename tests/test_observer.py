"""Tests for the semantic-act observer (runtime/session/observer.py, paper §3.3 / appendix B.3)."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.core.spec import TaskSpec, default_tasks_dir, load_tasks
from runtime.session.observer import Act, SemanticActObserver, split_sentences
from runtime.user.simulator import RevealPolicy

# --------------------------------------------------------------------------- fixture


def _field(name: str, label: str, synonyms: list[str], gold: Any = "x") -> dict[str, Any]:
    return {
        "name": name, "label": label, "synonyms": synonyms, "grader": "casefold_exact",
        "gold": gold, "source": {"fact": name},
    }


def make_task(
    *,
    artifacts: list[dict[str, Any]] | None = None,
    authorization: list[dict[str, Any]] | None = None,
) -> TaskSpec:
    """A compact benefits-enrollment task; override artifacts/rules for variants."""
    if artifacts is None:
        artifacts = [{
            "id": "enr_1", "kind": "enrollment", "title": "Benefits enrollment",
            "fields": [
                _field("employee_id", "employee ID", ["employee number"]),
                _field("legal_name", "legal name", ["full name", "name"]),
                _field("date_of_birth", "date of birth", ["birthday", "DOB", "birth date"]),
                _field("dependent_count", "number of dependents",
                       ["dependents", "how many dependents"], gold=2),
                _field("beneficiary", "beneficiary", ["beneficiary name", "primary beneficiary"]),
            ],
        }]
    if authorization is None:
        authorization = [{
            "action": "commit:enr_1", "tool": "commit_enrollment", "artifact": "enr_1",
            "verbs": ["submit", "commit", "enroll", "file", "finalize"],
        }]
    return TaskSpec.model_validate({
        "id": "obs_test", "title": "Observer test",
        "taxonomy": {
            "archetype": "form-fill", "industry": "workplace/HR",
            "artifact_class": "structured form",
            "economic_role": "admin", "duplex": ["barge-in"], "delegation": ["complete"],
            "autonomy": "approval-gated", "knowledge": "none", "tool_burden": "light",
            "user_behavior": "cooperative", "risk": "routine",
        },
        "objective": "Enroll the caller.", "context": "Benefits desk.",
        "reference_date": "2027-05-14",
        "artifacts": artifacts,
        "tools": [{"name": "commit_enrollment", "kind": "commit", "description": "Commit."}],
        "authorization": authorization,
        "user": {
            "persona": {"name": "Jamie", "role": "employee", "speaking_style": "plain"},
            "goals": ["enroll"],
        },
        "plans": [{"id": "p1", "intent": "answer", "when": {"on": "fallback"}}],
        "grading": {"terminal": [{"kind": "tool_called", "tool": "commit_enrollment"}]},
    })


@pytest.fixture(scope="module")
def observer() -> SemanticActObserver:
    return SemanticActObserver(make_task())


def _summary(acts: list[Act]) -> list[tuple[str, str | None]]:
    return [(a.act, a.field if a.act != "request_approval" else a.action) for a in acts]


# --------------------------------------------------------------------------- sentence split


@pytest.mark.parametrize(("text", "expected"), [
    ("Got it. What's your date of birth?", ["Got it.", "What's your date of birth?"]),
    ("Dr. Alvarez will see you. Is that OK?", ["Dr. Alvarez will see you.", "Is that OK?"]),
    ("Hi! How can I help?", ["Hi!", "How can I help?"]),
    ("Your appointment is at 9 a.m. Is that right?",
     ["Your appointment is at 9 a.m.", "Is that right?"]),
    ("Your d.o.b. is July ninth.", ["Your d.o.b. is July ninth."]),
    ("Mrs. Jamie R. Reyes is listed. Correct?", ["Mrs. Jamie R. Reyes is listed.", "Correct?"]),
    ("The amount is 3.5 percent", ["The amount is 3.5 percent"]),
    ("Wait... what was that?! OK.", ["Wait... what was that?!", "OK."]),
    # an unpunctuated transcript: its questions start after a filler, its tags are questions
    ("hi morgan thanks for holding um can i grab your employee id",
     ["hi morgan thanks for holding.", "can i grab your employee id?"]),
    ("whats your ID and uh did you get the form",
     ["whats your ID?", "did you get the form?"]),
    ("i can send it in now is that okay", ["i can send it in now.", "is that okay?"]),
    ("ok so thats the HDHP right", ["ok so thats the HDHP, right?"]),
    ("I won't submit it until you've said yes.", ["I won't submit it until you've said yes."]),
    ("That's all right", ["That's all right"]),
    ("", []),
])
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


# --------------------------------------------------------------------------- single acts

CASES: list[tuple[str, list[tuple[str, str | None]]]] = [
    # greet
    ("Hello", [("greet", None)]),
    ("Hi, thanks for calling", [("greet", None)]),
    ("Good morning, this is the benefits desk", [("greet", None)]),
    ("How can I help you today?", [("greet", None)]),
    ("Hello, how may I assist you?", [("greet", None)]),
    ("Thank you for calling the benefits line.", [("greet", None)]),
    # ask
    ("What is your date of birth?", [("ask", "date_of_birth")]),
    ("Got it. What's your date of birth?", [("inform", None), ("ask", "date_of_birth")]),
    ("And how many dependents will you cover?", [("ask", "dependent_count")]),
    ("Could you spell your legal name for me?", [("ask", "legal_name")]),
    ("Can you tell me your employee ID?", [("ask", "employee_id")]),
    ("May I have your employee number?", [("ask", "employee_id")]),
    ("Please give me your birthday.", [("ask", "date_of_birth")]),
    ("And your D.O.B.?", [("ask", "date_of_birth")]),
    ("I'll need your employee ID.", [("ask", "employee_id")]),
    ("what is your full name", [("ask", "legal_name")]),
    ("Who is your primary beneficiary?", [("ask", "beneficiary")]),
    ("What's your beneficiary's name?", [("ask", "beneficiary")]),
    ("What is the name of your beneficiary?", [("ask", "beneficiary")]),
    ("What's your full name and date of birth?",
     [("ask", "legal_name"), ("ask", "date_of_birth")]),
    ("Do you have any dependents?", [("ask", "dependent_count")]),
    ("Hi Jamie, what's your employee ID?", [("greet", None), ("ask", "employee_id")]),
    ("Is there anything else I can help with?", [("close", None)]),
    ("Which plan would you prefer?", [("ask", None)]),
    ("Who would you like to name as your beneficiary?", [("ask", "beneficiary")]),
    ("Great, thanks. Next, I need your date of birth.",
     [("inform", None), ("ask", "date_of_birth")]),
    # request_approval
    ("Shall I submit the enrollment?", [("request_approval", "commit:enr_1")]),
    ("Do you approve the enrollment as described?", [("request_approval", "commit:enr_1")]),
    ("Can I go ahead and submit it now?", [("request_approval", "commit:enr_1")]),
    ("Is it OK to submit the enrollment?", [("request_approval", "commit:enr_1")]),
    ("Should I file it?", [("request_approval", "commit:enr_1")]),
    ("Would you like me to commit the enrollment now?", [("request_approval", "commit:enr_1")]),
    # the same verb on another object is an offer of something else, never the gated action
    ("May I submit the leave request?", [("offer", None)]),
    ("Would you like me to email you a copy of the enrollment?", [("offer", None)]),
    ("Do you want me to submit another enrollment for your partner?", [("offer", None)]),
    ("Do I have your approval to submit?", [("request_approval", "commit:enr_1")]),
    ("Are you happy for me to go ahead?", [("request_approval", "commit:enr_1")]),
    ("Shall I proceed?", [("request_approval", "commit:enr_1")]),
    ("Can I get that filed for you?", [("request_approval", "commit:enr_1")]),
    ("I'll need your approval before I finalize this.", [("request_approval", "commit:enr_1")]),
    ("shall i submit it", [("request_approval", "commit:enr_1")]),
    ("Would you like to submit it now?", [("request_approval", "commit:enr_1")]),
    ("I'm going to submit it now, is that okay?", [("request_approval", "commit:enr_1")]),
    ("I can submit it now. Should I?", [("request_approval", "commit:enr_1")]),
    ("Shall we make it official?", [("request_approval", "commit:enr_1")]),
    ("Last step is submitting. Is that alright?", [("request_approval", "commit:enr_1")]),
    ("Ready to submit?", [("request_approval", "commit:enr_1")]),
    # confirm
    ("Is that right?", [("confirm", None)]),
    ("Did I get that correctly?", [("confirm", None)]),
    ("Just to confirm, that's July ninth?", [("confirm", None)]),
    ("Just to confirm, your date of birth is July ninth?", [("confirm", "date_of_birth")]),
    # docs/observer_corpus.md rule 4: with no value said, the caller must say it: an ask
    ("Can you confirm your employee ID?", [("ask", "employee_id")]),
    ("Can you confirm your employee ID is E4471?", [("confirm", "employee_id")]),
    ("Your beneficiary is Jamie Reyes, correct?", [("confirm", "beneficiary")]),
    ("So your beneficiary is Jamie Reyes?", [("confirm", "beneficiary")]),
    ("Does that sound right?", [("confirm", None)]),
    # read_back
    ("I have your date of birth as July ninth.", [("read_back", "date_of_birth")]),
    ("So your beneficiary is Jamie Reyes.", [("read_back", "beneficiary")]),
    ("I've updated your number of dependents to three.", [("read_back", "dependent_count")]),
    ("Your employee ID is E 4471.", [("read_back", "employee_id")]),
    ("You said two dependents.", [("read_back", "dependent_count")]),
    ("I've noted July 9th as your birthday.", [("read_back", "date_of_birth")]),
    ("So that's two dependents and Jamie Reyes as beneficiary.",
     [("summarize", None), ("read_back", "dependent_count"), ("read_back", "beneficiary")]),
    # summarize
    ("To summarize, you're enrolling with two dependents.", [("summarize", None)]),
    ("Here's what I have: employee ID 4471, date of birth July ninth.",
     [("summarize", None), ("read_back", "employee_id"), ("read_back", "date_of_birth")]),
    ("Let me recap.", [("summarize", None)]),
    ("To recap, two dependents and Jamie as beneficiary, is that all correct?",
     [("summarize", None), ("confirm", None)]),
    ("To summarize, two dependents, Jamie as beneficiary. Shall I submit?",
     [("summarize", None), ("request_approval", "commit:enr_1")]),
    # close
    ("Goodbye", [("close", None)]),
    ("Have a great day!", [("close", None)]),
    ("Thanks for calling, bye", [("close", None)]),
    ("You're all set. Take care.", [("close", None), ("close", None)]),
    ("Thank you for your time.", [("close", None)]),
    # inform
    ("Your request has been submitted.", [("inform", None)]),
    ("One moment.", [("inform", None)]),
    ("I submitted it.", [("inform", None)]),
    ("Dr. Alvarez reviews every enrollment.", [("inform", None)]),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0][:48] for c in CASES])
def test_observe(observer: SemanticActObserver, text: str,
                 expected: list[tuple[str, str | None]]) -> None:
    assert _summary(observer.observe(text)) == expected


# --------------------------------------------------------------------------- negatives

NOT_ASK_NOR_APPROVAL = [
    "Your request has been submitted.",
    "I submitted it.",
    "I've submitted your enrollment.",
    "Thanks for your date of birth.",
    "Your date of birth is required.",
    "I'll submit it once you approve.",
    "Once I file it, you'll get an email.",
    "Thanks for your approval, it's been filed.",
    "I have recorded your employee ID.",
    "My name is Sam and I'll be helping you today.",
    "The enrollment was finalized yesterday.",
    "You can submit it online too.",
]


@pytest.mark.parametrize("text", NOT_ASK_NOR_APPROVAL)
def test_statements_are_not_asks_or_approvals(observer: SemanticActObserver, text: str) -> None:
    kinds = {a.act for a in observer.observe(text)}
    assert not kinds & {"ask", "request_approval"}, observer.observe(text)


NOT_APPROVAL = [
    "May I have your file number?",
    "Can I go ahead and ask about your dependents?",
    "What happens after I submit?",
    "Did you already submit a form?",
    "Can I confirm your date of birth?",
    "Shall I read that back to you?",
    "Would you like me to repeat that?",
    "Do you want to file a claim too?",
    "Is everything correct? Should I?",
]


@pytest.mark.parametrize("text", NOT_APPROVAL)
def test_questions_that_are_not_approval_requests(
    observer: SemanticActObserver, text: str
) -> None:
    assert all(a.act != "request_approval" for a in observer.observe(text)), text


@pytest.mark.parametrize("text", [
    "According to the plan, dependents are covered until age 26.",
    "Your date of birth is required.",
    "I have recorded your employee ID.",
    "The number of dependents you can add is unlimited.",
])
def test_statements_that_are_not_read_backs(observer: SemanticActObserver, text: str) -> None:
    assert all(a.act != "read_back" for a in observer.observe(text)), observer.observe(text)


# --------------------------------------------------------------------------- details


def test_act_carries_artifact_and_text(observer: SemanticActObserver) -> None:
    (ask,) = observer.observe("What is your date of birth?")
    assert ask == Act(act="ask", field="date_of_birth", artifact="enr_1",
                      text="What is your date of birth?")
    (req,) = observer.observe("Shall I submit the enrollment?")
    assert (req.action, req.artifact, req.field) == ("commit:enr_1", "enr_1", None)


def test_multi_sentence_turn_keeps_order(observer: SemanticActObserver) -> None:
    turn = ("Hi, thanks for calling. I have your date of birth as July ninth. "
            "How many dependents will you cover? Shall I submit it? Have a great day.")
    assert _summary(observer.observe(turn)) == [
        ("greet", None), ("read_back", "date_of_birth"), ("ask", "dependent_count"),
        ("request_approval", "commit:enr_1"), ("close", None),
    ]
    assert [a.text for a in observer.observe(turn)][1] == "I have your date of birth as July ninth."


def test_act_is_frozen(observer: SemanticActObserver) -> None:
    (act,) = observer.observe("Hello")
    with pytest.raises(ValueError):
        act.act = "close"  # type: ignore[misc]


def test_empty_transcript(observer: SemanticActObserver) -> None:
    assert observer.observe("") == []
    assert observer.observe("   ...  ") == []


def _two_rule_task() -> TaskSpec:
    enrollment = make_task().artifacts[0].model_dump()
    leave = {
        "id": "leave_1", "kind": "leave_request", "title": "Leave request",
        "fields": [_field("start_date", "start date", ["first day off"])],
    }
    return make_task(
        artifacts=[enrollment, leave],
        authorization=[
            {"action": "commit:enr_1", "tool": "commit_enrollment", "artifact": "enr_1",
             "verbs": ["submit", "commit", "enroll"]},
            {"action": "submit:leave_1", "tool": "submit_leave", "artifact": "leave_1",
             "verbs": ["submit", "file"]},
        ],
    )


@pytest.mark.parametrize(("text", "action"), [
    ("May I submit the leave request?", "submit:leave_1"),
    ("Shall I submit the enrollment?", "commit:enr_1"),
    ("Should I file it?", "submit:leave_1"),
    ("Would you like me to enroll you now?", "commit:enr_1"),
])
def test_action_resolution_with_several_rules(text: str, action: str | None) -> None:
    obs = SemanticActObserver(_two_rule_task())
    (act,) = obs.observe(text)
    assert act.act == "request_approval"
    assert act.action == action


@pytest.mark.parametrize("text", [
    "Shall I submit it?",                 # two rules share "submit": bound to neither
    "Are you happy for me to go ahead?",  # no verb, several gated actions
])
def test_an_ambiguous_request_is_bound_to_no_action(text: str) -> None:
    """A request is bound to one gated action or to none: an ambiguous one never grants."""
    (act,) = SemanticActObserver(_two_rule_task()).observe(text)
    assert (act.act, act.action) == ("offer", None)


def test_fields_across_artifacts() -> None:
    obs = SemanticActObserver(_two_rule_task())
    (act,) = obs.observe("What's the start date?")
    assert (act.act, act.field, act.artifact) == ("ask", "start_date", "leave_1")


def test_task_without_rules_has_only_offers() -> None:
    obs = SemanticActObserver(make_task(authorization=[]))
    (act,) = obs.observe("Shall I submit the enrollment?")
    assert (act.act, act.action) == ("offer", None)
    assert _summary(obs.observe("Should I file it?")) == [("offer", None)]
    assert _summary(obs.observe("Happy for me to mark it ready for HR?")) == [("offer", None)]


# --------------------------------------------------------------------------- approval shapes


@pytest.mark.parametrize(("text", "expected"), [
    ("I just need a clear yes from you before I submit the enrollment.",
     [("request_approval", "commit:enr_1")]),
    ("If that's all correct I can submit it now, is that alright?",
     [("request_approval", "commit:enr_1")]),
    ("Could I get your date of birth, so I have it on the form when I submit it?",
     [("ask", "date_of_birth")]),
    ("Shall I submit it again?", [("request_approval", "commit:enr_1")]),
])
def test_approval_shapes(observer: SemanticActObserver, text: str,
                         expected: list[tuple[str, str | None]]) -> None:
    assert _summary(observer.observe(text)) == expected


# --------------------------------------------------------------------------- values of a real task


def _real(task_id: str) -> SemanticActObserver:
    """The observer of a bundled task."""
    from tests.conftest import bundled_tasks

    return SemanticActObserver.for_task(next(t for t in bundled_tasks() if t.id == task_id))


@pytest.fixture(scope="module")
def enrollment() -> SemanticActObserver:
    return _real("apexv1_001")


@pytest.mark.parametrize(("text", "expected"), [
    # a colon-introduced recap restates every field it lists (an enum by its option)
    ("Here's what I have: HDHP medical, Standard dental, Vision Basic.",
     [("summarize", None), ("read_back", "medical_plan"), ("read_back", "dental_plan"),
      ("read_back", "vision_plan")]),
    # a misheard value asked back binds to the field with the nearest caller value
    ("Dr. Alvarado, did you say?", [("confirm", "pcp")]),
    ("July nineteenth, nineteen eighty-eight, is that right?", [("confirm", "date_of_birth")]),
    # an acknowledged value is a read-back
    ("Got it, Vision Basic.", [("read_back", "vision_plan")]),
    # a time clause's gated verb proposes nothing
    ("What's your date of birth, so I have it when I submit the enrollment?",
     [("ask", "date_of_birth")]),
])
def test_values_of_a_real_task(enrollment: SemanticActObserver, text: str,
                               expected: list[tuple[str, str | None]]) -> None:
    assert _summary(enrollment.observe(text)) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # an unpunctuated request, its tag said after it
    ("i have everything i need so i can send the enrollment in now is that okay",
     [("request_approval", "commit:enr_1")]),
    ("hi morgan thanks for holding um can i grab your employee id",
     [("greet", None), ("ask", "employee_id")]),
    ("ok so thats the HDHP right", [("confirm", "medical_plan")]),
    # leave asked for the previous sentence's proposal: one request
    ("I can send your enrollment in now. Would you like me to?",
     [("request_approval", "commit:enr_1")]),
    # leave asked in more words, an unpunctuated proposal after a vocative
    ("Would it be alright if I went ahead and sent it off?",
     [("request_approval", "commit:enr_1")]),
    ("Would you be comfortable with me sending the enrollment in?",
     [("request_approval", "commit:enr_1")]),
    ("okay morgan i can send that in now if youre happy for me to",
     [("request_approval", "commit:enr_1")]),
    ("morgan would you like me to send the enrollment in then",
     [("request_approval", "commit:enr_1")]),
    ("alright morgan want me to send the enrollment in", [("request_approval", "commit:enr_1")]),
    # a sentence saying only that the record is complete leads into the request
    ("I think that covers everything we need. Shall I send the enrollment in?",
     [("request_approval", "commit:enr_1")]),
    # a restatement asked in statement order, with a value of the field's kind
    ("And you're putting in twelve hundred a year?", [("confirm", "hsa_contribution")]),
    ("Was that eleven hundred into the HSA?", [("confirm", "hsa_contribution")]),
    # "to start" is a purpose, not a value
    ("May I take your employee ID to start?", [("ask", "employee_id")]),
    # a value-less check of what was said
    ("Have I got all of that down correctly?", [("confirm", None)]),
    ("Does that line up with what HR gave you?", [("confirm", None)]),
    ("Did I capture that the way you meant it?", [("confirm", None)]),
    ("Anything in there I've gotten wrong?", [("confirm", None)]),
    ("Was everything I read out accurate?", [("confirm", None)]),
    # a purpose clause is why a request is made, not a proposal; "so that I can" no restatement
    ("Could you give me your date of birth so I can put it in the form?",
     [("ask", "date_of_birth")]),
    ("So that I can open your enrollment, could you give me your employee ID?",
     [("ask", "employee_id")]),
    ("I have everything so I can send the enrollment in now, is that okay?",
     [("request_approval", "commit:enr_1")]),
    # "take care of" something is no goodbye; "take care of yourself" is
    ("We can take care of everything together today.", [("inform", None)]),
    ("Take care of yourself, Morgan.", [("close", None)]),
    # a name asked back in statement order
    ("And your beneficiary is Jamie Rhodes?", [("confirm", "beneficiary")]),
    # a sentence that only introduces the recap after it is part of it
    ("Okay, here's where we've landed. HDHP medical, Standard dental and twelve hundred "
     "into the HSA.",
     [("summarize", None), ("read_back", "medical_plan"), ("read_back", "dental_plan"),
      ("read_back", "hsa_contribution")]),
    # news in a closing turn stays information; thanks and an introduction are the greeting
    ("Your enrollment is through with payroll now. Thanks, Morgan, take care!",
     [("inform", None), ("close", None)]),
    ("Northwind benefits, Sam speaking. Hi Morgan, how can I help?", [("greet", None)]),
    # asking who is calling asks for the caller's own name
    ("Northwind benefits, good morning. Who do I have on the line?",
     [("greet", None), ("ask", "legal_name")]),
])
def test_natural_shapes_of_a_real_task(enrollment: SemanticActObserver, text: str,
                                       expected: list[tuple[str, str | None]]) -> None:
    assert _summary(enrollment.observe(text)) == expected


@pytest.mark.parametrize("text", [
    # one more thing besides the task's own: "also", or others of the artifact's kind
    "I can also send in your enrollment today. Want me to?",
    "I can send in forms for your dependents. Want me to?",
    # the gated verb on another thing named after the artifact
    "Want me to send you the enrollment link?",
    # a sentence that ends with "yes." asks nothing
    "I won't submit it until you've heard it all and said yes.",
    # what the caller did is no proposal of the agent's
    "Did you already send the enrollment in yourself?",
    "The form you sent shows two dependents, correct?",
])
def test_extras_and_statements_are_not_approval_requests(enrollment: SemanticActObserver,
                                                          text: str) -> None:
    assert "request_approval" not in {a.act for a in enrollment.observe(text)}


def test_a_choice_between_options_asks_for_it() -> None:
    observer = _real("apexv1_087")
    assert _summary(observer.observe(
        "And are you the birth parent, the non-birth parent, or adopting?")) == [
        ("ask", "leave_type")]
    # one option asked back is a restatement
    assert _summary(observer.observe("So you're the birth parent, right?")) == [
        ("confirm", "leave_type")]


@pytest.mark.parametrize(("task_id", "text", "expected"), [
    # a time of day and a code read out letter by letter are no misheard count
    ("apexv1_114", "First failure at two oh five PM, correct?",
     [("confirm", "first_failure_time")]),
    ("apexv1_118", "B, R, K, twenty-two oh seven, yes?", [("confirm", "part_number")]),
    # beside a restated value, a one-word option is restated too, unless it is part of
    # another field's name
    ("apexv1_011", "Got it, March first, and hybrid.",
     [("summarize", None), ("read_back", "earliest_start_date"),
      ("read_back", "work_arrangement")]),
    ("apexv1_010", "Contractor ID C four oh nine one seven, thanks.",
     [("read_back", "worker_id")]),
    # "on file" is a noun, not the gated verb "file" of this task
    ("apexv1_057", "The cheque goes to the address we have on file, is that right?",
     [("confirm", None)]),
    # a misheard amount is still a restatement of its field (the caller corrects it)
    ("apexv1_057", "Was that fourteen hundred a year?", [("confirm", "competitor_quote")]),
])
def test_numbers_inside_codes_and_times(task_id: str, text: str,
                                        expected: list[tuple[str, str | None]]) -> None:
    assert _summary(_real(task_id).observe(text)) == expected


@pytest.mark.parametrize(("task_id", "text", "expected"), [
    # a field named with its value owns that value only: another field stated by a value of
    # its own is restated too
    ("apexv1_030", "So that's two hundred forty million in revenue and seventy-five thousand "
     "to start.", [("summarize", None), ("read_back", "annual_revenue"), ("read_back", "budget")]),
    # a recap's list goes on in the next sentence
    ("apexv1_087", "Here's what I have so far: Hannah Brooks, birth parent, due March "
     "twenty-eighth. Sixteen weeks paid, ten weeks unpaid, sixty days' notice.",
     [("summarize", None), ("read_back", "employee_name"), ("read_back", "leave_type"),
      ("read_back", "expected_due_date"), ("read_back", "paid_weeks"),
      ("read_back", "notice_days"), ("read_back", "unpaid_weeks")]),
    # a small count beside its own vocabulary, next to another restated value
    ("apexv1_011", "Forty thousand requests at peak, and a team of five under you.",
     [("summarize", None), ("read_back", "peak_traffic_rps"), ("read_back", "team_size_led")]),
    ("apexv1_076", "Four hundred twenty seats, Enterprise, on a three-year term.",
     [("summarize", None), ("read_back", "seat_count"), ("read_back", "product_edition"),
      ("read_back", "term_years")]),
    # thanks for patience before a read-back is no send-off; at the end of a turn it is
    ("apexv1_015", "Thank you for your patience, three one two, five five five, zero one four "
     "seven.", [("read_back", "referee_phone")]),
    ("apexv1_015", "Thanks for your patience today.", [("close", None)]),
    # what committing does is information, not part of the request that follows
    ("apexv1_076", "Committing it books the order and starts the invoices. Are you good for "
     "me to do that now?", [("inform", None), ("request_approval", "commit:order_1")]),
    ("apexv1_076", "I can commit the order now. Is that okay?",
     [("request_approval", "commit:order_1")]),
    # a recap stated, then a question asking the caller to check it: read-backs and a confirm
    # without field (rule 3 read literally, and how most writers label it; one confirm per
    # field until the eleventh round)
    ("apexv1_010", "Here's the draft: Daniel Osei, Brightline Electrical, North Tower. Does "
     "all of that look right?", [("summarize", None), ("read_back", "full_name"),
                                  ("read_back", "company"), ("read_back", "building"),
                                  ("confirm", None)]),
    # with the check as a tag of the same sentence, each field is confirmed
    ("apexv1_010", "So that's Daniel Osei, Brightline Electrical, North Tower, right?",
     [("summarize", None), ("confirm", "full_name"), ("confirm", "company"),
      ("confirm", "building")]),
    # requests in the imperative, after a lead-in clause
    ("apexv1_082", "Before I look at the policy, give me your employee ID.",
     [("ask", "employee_id")]),
    ("apexv1_102", "Read me the lockout tag number.", [("ask", "lockout_tag")]),
    # "who should I list as ..." asks; it offers nothing
    ("apexv1_118", "Who should I list as the engineer owning the hold?", [("ask", "hold_owner")]),
    # a run-on question's first half is a question too
    ("apexv1_030", "Who signs off on this besides you, and when do you hope to decide?",
     [("ask", "decision_makers"), ("ask", "decision_date")]),
    ("apexv1_045", "And what kind of laptop did they give you", [("ask", "computer")]),
    # a wh-question bound by the words of one field's label, of the kind it asks for
    ("apexv1_078", "And the date?", [("ask", "event_date")]),
    ("apexv1_070", "Where are you calling from today?", [("ask", None)]),
    ("apexv1_106", "Who did the inspection?", [("ask", None)]),
    # an apology for the line or a status is no desk introduction; a helpline's name is
    ("apexv1_001", "Sorry, the line dropped for a second there.", [("inform", None)]),
    ("apexv1_051", "Sent to the billing contact on file.", [("inform", None)]),
    ("apexv1_038", "Corvane People Helpline, this is Sam.", [("greet", None)]),
    # extras offered as statements and in short forms
    ("apexv1_038", "Are you somewhere private right now? If not, I can call you back later.",
     [("ask", None), ("offer", None)]),
    ("apexv1_070", "Want a hold on your calendar for those days?", [("offer", None)]),
    ("apexv1_078", "I can reserve parking spaces if so.", [("offer", None)]),
    ("apexv1_032", "While you wait, I can text you a short list of things to keep. Would that "
     "help?", [("offer", None)]),
    # a field's value offered back is still a restatement
    ("apexv1_001", "Want the HDHP plan?", [("confirm", "medical_plan")]),
    # short checks of what was read out
    ("apexv1_045", "Anything off?", [("confirm", None)]),
    ("apexv1_097", "Does the rest of the memo match your notes?", [("confirm", None)]),
    ("apexv1_064", "I went through those numbers pretty quickly, did they all sound right?",
     [("confirm", None)]),
    ("apexv1_041", "Desktop, Edge, text codes. Sound right?",
     [("summarize", None), ("read_back", "browser"), ("read_back", "device"),
      ("confirm", None)]),
    # a name asked back a word longer or shorter, or one item of a list of names
    ("apexv1_118", "Rosa del Gardo?", [("confirm", "hold_owner")]),
    ("apexv1_030", "So it's you and Victor Hall signing off?", [("confirm", "decision_makers")]),
    ("apexv1_118", "Just lot seventy-seven thirty-one then?", [("confirm", "hold_lots")]),
    # the words of an email address name no contact nor company
    ("apexv1_030", "So that's laura dot chen at fenwick foods dot com.",
     [("read_back", "contact_email")]),
    # small talk about the caller's day, plans and place; a desk's name with who speaks
    ("apexv1_070", "Family trip, lovely. Going anywhere nice?",
     [("read_back", "reason"), ("greet", None)]),
    ("apexv1_076", "Busy quarter on your end?", [("greet", None)]),
    ("apexv1_106", "How is the shop today, very busy?", [("greet", None)]),
    ("apexv1_070", "Sounds lovely.", [("greet", None)]),
    ("apexv1_078", "Harbourside events, Robin speaking.", [("greet", None)]),
    # a value of the task's is no desk's name
    ("apexv1_097", "Crestline Courier Services, is that the vendor?",
     [("confirm", "vendor_name")]),
    # send-offs and the last question of a call
    ("apexv1_076", "Thanks, Ravi, good doing business with you.", [("close", None)]),
    ("apexv1_078", "Thanks, Elena, have a great partner day!", [("close", None)]),
    ("apexv1_114", "Do you need anything else from me, or can I let you go?", [("close", None)]),
    ("apexv1_064", "Would you like directions and parking details mailed to you?",
     [("offer", None)]),
    # "the company you're with" states no value: two fields asked
    ("apexv1_010", "Could I get your full name, and the company you're with?",
     [("ask", "full_name"), ("ask", "company")]),
    # a verb form of a field's word, and a wh-question inside "can you tell me"
    ("apexv1_010", "Who here at Corran is sponsoring your badge?", [("ask", "sponsor_name")]),
    ("apexv1_010", "Can you tell me who is sponsoring you on site?",
     [("ask", "sponsor_name")]),
    ("apexv1_070", "Can you tell me where you are calling from?", [("ask", None)]),
    # more short checks; a spelled name asked back
    ("apexv1_070", "Sam Okafor covering, Dana Whitfield as manager. All good?",
     [("summarize", None), ("read_back", "manager"), ("read_back", "covering_colleague"),
      ("confirm", None)]),
    ("apexv1_076", "Anything off there?", [("confirm", None)]),
    ("apexv1_041", "Is that Haines, H A I N E S?", [("confirm", "requester_name")]),
    # a value acknowledged in a word ("nice", "got it"), an identifier by its number alone
    ("apexv1_070", "Vacation, nice. Your employee ID?",
     [("read_back", "leave_type"), ("ask", "employee_id")]),
    ("apexv1_064", "Six six one two zero, got it.", [("read_back", "referral_number")]),
    ("apexv1_051", "Three zero eight one seven, got it.", [("read_back", "account_id")]),
    # the first half of a run-on wh-question; the caller's own surname asked
    ("apexv1_118", "Which shift ran them, and which press line?",
     [("ask", "shift"), ("ask", "line")]),
    ("apexv1_015", "Could you spell your last name for me, and tell me your job title?",
     [("ask", "referee_name"), ("ask", "referee_title")]),
    # what a document says is information; what the agent recorded from it is a read-back
    ("apexv1_087", "I've looked it up, and the current policy gives sixteen weeks of paid "
     "leave.", [("inform", None)]),
    # ... and so is a value the caller gave when the report says it (every writer of the
    # corpus labels it so; changed in the eleventh round, it was a read-back before); a value
    # the caller gave that leads the sentence before the report is restated (the caller checks
    # it), the report after it is information
    ("apexv1_087", "I've looked it up, and the current policy gives birth parents sixteen "
     "weeks of paid leave.", [("inform", None)]),
    ("apexv1_087", "Birth parent, okay, so under the current policy you get sixteen weeks of "
     "paid leave.", [("read_back", "leave_type"), ("inform", None)]),
    ("apexv1_087", "I've put sixteen weeks of paid leave on the memo.",
     [("read_back", "paid_weeks")]),
])
def test_rules_of_the_seventh_round(task_id: str, text: str,
                                    expected: list[tuple[str, str | None]]) -> None:
    assert _summary(_real(task_id).observe(text)) == expected


@pytest.mark.parametrize(("task_id", "text", "expected"), [
    # a name held inside a list another field holds restates the list's field only
    ("apexv1_001", "So two dependents, Jamie Reyes and Casey Reyes.",
     [("summarize", None), ("read_back", "dependent_count"), ("read_back", "dependent_names")]),
    # a token said exactly as one field's value (here an old version) is no misheard value of
    # another field; a named field's misheard number is not another field's
    ("apexv1_051", "So the second one is INV-20391?", [("confirm", "duplicate_invoice")]),
    ("apexv1_011", "So it peaked around fourteen thousand requests a second, right?",
     [("confirm", "peak_traffic_rps")]),
    # a field named "to" a verb holds no value: a phone number, date, amount or identifier
    # needs one said
    ("apexv1_078", "Best number to reach you?", [("ask", "contact_phone")]),
    # "for a second" says no number; "twenty-first" is a date, not a counting word
    ("apexv1_011", "Sorry, you cut out for a second there, could you say that again?",
     [("ask", None)]),
    ("apexv1_015", "She started on April twenty-first, is that right",
     [("confirm", "employment_start_date")]),
    # dates listed as options tell the caller what is open; they restate nothing
    ("apexv1_064", "I have Tuesday the thirteenth at nine with Dr. Ruth Hale, or Wednesday "
     "the fourteenth at two thirty with Dr. Mateo Osei.", [("inform", None)]),
    ("apexv1_064", "I have you on Tuesday the thirteenth at nine with Dr. Ruth Hale.",
     [("summarize", None), ("read_back", "appointment_date"), ("read_back", "clinician")]),
    # a lookup reported ("I've checked our routing guide, and ...") is information
    ("apexv1_038", "I've checked our routing guide, and cases like yours go to the Employee "
     "Relations Confidential queue.", [("inform", None)]),
    # the desk's "how can I help?" asks no leave, whatever verb the desk's name holds
    ("apexv1_064", "Good morning, Riverbend Heart and Vascular Clinic scheduling, this is "
     "Dana, how can I help you today?", [("greet", None)]),
    # the gated action announced on the caller's agreement asks for it; an extra does not
    ("apexv1_010", "If it is, I'll just put the request through to badge issuing.",
     [("request_approval", "submit:badge_1")]),
    ("apexv1_001", "I've marked it ready, so if you're comfortable, I'll commit it now.",
     [("request_approval", "commit:enr_1")]),
    ("apexv1_010", "If so, I'll send you a copy of the request.", [("offer", None)]),
    ("apexv1_010", "If it's approved, I'll email you the badge details.", [("inform", None)]),
    # "pass it along": the verb is no other object (a visitor pass)
    ("apexv1_032", "Shall I pass it along to the attorney team?",
     [("request_approval", "submit:intake_1")]),
    # a new question after restated values, behind fillers or "have you"; "on what date"
    ("apexv1_118", "Press line three, undersized mounting hole, okay, and have you got the "
     "measured hole diameter?", [("summarize", None), ("read_back", "line"),
                                 ("read_back", "defect"), ("ask", "measured_value")]),
    ("apexv1_097", "Which quarter was under review, and on what date was the meeting, please?",
     [("ask", "review_quarter"), ("ask", "meeting_date")]),
    # one request said twice is one; a lead-in is no restatement to split off
    ("apexv1_076", "If that works, I'll commit it now. Is that a go?",
     [("request_approval", "commit:order_1")]),
    ("apexv1_076", "I think that covers everything, so, um, should I go ahead and place it?",
     [("request_approval", "commit:order_1")]),
    # an amount a digit or two off another field's value is that field's only when named
    # (and the policy fact is information: the act model's opinion)
    ("apexv1_001", "Because you picked the HDHP, you can put up to eighty-three hundred "
     "dollars a year into the HSA.", [("read_back", "medical_plan"), ("inform", None)]),
    ("apexv1_030", "Noted, about two hundred and fourteen million in revenue.",
     [("read_back", "annual_revenue")]),
    # "to make sure ..." before a question that asks a value is why the agent asks
    ("apexv1_057", "To verify the policy, may I have the policy number and the zip code?",
     [("ask", "policy_number"), ("ask", "postal_code")]),
    ("apexv1_057", "Just to make sure, your zip code is 97214?", [("confirm", "postal_code")]),
    # one value read back after a colon is no recap
    ("apexv1_045", "Let me just read that back to you: M, two, zero, four, one, seven.",
     [("read_back", "employee_id")]),
    # a measurement is no small count: said alone it restates its field; a code option
    # ("P4") is a value, recorded by the agent even when it came from a document
    ("apexv1_118", "Eight point five eight millimeters.", [("read_back", "measured_value")]),
    ("apexv1_045", "I've set it as a P4.", [("read_back", "priority")]),
    # a field named after "and then" / "next" with nothing said about it asks for it
    ("apexv1_087", "And then the due date, whenever you're ready.",
     [("ask", "expected_due_date")]),
    ("apexv1_102", "And then the lockout tag number, please.", [("ask", "lockout_tag")]),
    # "is the eleventh": a day of the month after a field's copula is a value
    ("apexv1_070", "Okay, the end date is the eleventh.", [("read_back", "end_date")]),
    # a three-letter word of a field's label or synonyms counts ("due"); a wh-question after
    # a short lead-in and a comma; the desk's greeting with "who do I have the pleasure ..."
    ("apexv1_097", "When's he due to have that done by?", [("ask", "action_due_date")]),
    ("apexv1_051", "So you're with Orbital Freight, yes, and what's the account ID?",
     [("confirm", "company"), ("ask", "account_id")]),
    # an email or a name field named before "as well" holds no value; a copy sent to the
    # caller or someone else is an extra
    ("apexv1_010", "Would you like a copy of the request emailed to your sponsor as well?",
     [("offer", None)]),
    ("apexv1_041", "Do you want the steps for the password page sent to your email as well?",
     [("offer", None)]),
    ("apexv1_010", "So your sponsor is Rachel Kim?", [("confirm", "sponsor_name")]),
    # questions after "two quick ones:" ask; a list of choices asked is no recap
    ("apexv1_041", "Two quick ones: is it a desktop or a laptop you're on, and which program "
     "do you use to get on the internet, Edge or Chrome?",
     [("ask", "device"), ("ask", "browser")]),
    # the agent's own lookup announced, or values stated after "and for the X:", is no
    # request; imperative requests still ask
    ("apexv1_001", "Give me just a second while I look up your monthly premium in the "
     "benefits policy.", [("inform", None)]),
    ("apexv1_106", "And for the priority, please: a brake complaint together with low brake "
     "fluid is P one.", [("inform", None)]),
    ("apexv1_102", "Read me the lockout tag number, and tell me whether the try-start showed "
     "zero energy.", [("ask", "lockout_tag"), ("ask", "isolation_verified")]),
    # a field "at" a value ("first failure at one fifty"); "I've got you down as" records
    ("apexv1_114", "So first failure at one fifty, and the customer called at three fifteen.",
     [("summarize", None), ("read_back", "first_failure_time"),
      ("read_back", "customer_report_time")]),
    ("apexv1_041", "I've got you down as Gloria Haynes, H, A, Y, N, E, S.",
     [("read_back", "requester_name")]),
    # small talk: asking after the caller's plans, day or trip; an exclamation that states
    # nothing of the task's
    ("apexv1_070", "Family trip, nice. Anywhere fun?", [("read_back", "reason"), ("greet", None)]),
    ("apexv1_102", "Hot one out there today, you keeping hydrated?", [("greet", None)]),
    ("apexv1_082", "So how was Milwaukee, apart from the hotel bill?", [("greet", None)]),
    ("apexv1_030", "Glad the webinar was useful!", [("greet", None)]),
    ("apexv1_070", "It's been submitted!", [("inform", None)]),
    # extras: "would you also like me to ...", a package sent to the caller's inbox
    ("apexv1_030", "Would you also like me to include our standard engagement terms, so your "
     "CFO can see how fixed fees are invoiced?", [("offer", None)]),
    ("apexv1_030", "Do you want the follow-up package sent to your inbox right away?",
     [("offer", None)]),
    # "the last four of the card" names a field and says no value; value-less checks
    ("apexv1_051", "And the last four of the card that was charged?",
     [("ask", "card_last_four")]),
    ("apexv1_100", "Did I catch all the names?", [("confirm", None)]),
    ("apexv1_076", "Everything line up with what you've got on your side?", [("confirm", None)]),
    # a document named with a word before it ("the fee policy says", "from the leave
    # administration rules") reports what it says
    ("apexv1_087", "And then from the leave administration rules, after the paid leave you can "
     "add up to ten weeks unpaid, and you need to give at least sixty days notice.",
     [("inform", None)]),
    # mid-call thanks for waiting before news: the news is what is said
    ("apexv1_032", "Thanks for holding, the check came back with no matches.",
     [("inform", None)]),
    # a status or the next step beside a restated value is information too
    ("apexv1_001", "Your premium is two twenty-five a month and I've marked the form ready.",
     [("read_back", "monthly_premium"), ("inform", None)]),
    ("apexv1_011", "Given that, what's the earliest date you could start?",
     [("ask", "earliest_start_date")]),
    ("apexv1_057", "Thank you for calling Northbridge Mutual policy services, my name's Chris, "
     "um, who do I have the pleasure of speaking with today?",
     [("greet", None), ("ask", "policyholder_name")]),
    ("apexv1_057", "And the refund reaches your bank within seven business days.",
     [("inform", None)]),
])
def test_rules_of_the_eighth_round(task_id: str, text: str,
                                   expected: list[tuple[str, str | None]]) -> None:
    assert _summary(_real(task_id).observe(text)) == expected


@pytest.mark.parametrize(("task_id", "text", "expected"), [
    # an extra asked as "would it be alright / helpful if I ...": an offer (no gated action on
    # this task), even when a field's words follow ("in for the next review")
    ("apexv1_015", "Would it be alright if I marked your reference as ready for the "
     "recruiter's review?", [("offer", None)]),
    ("apexv1_097", "Would it help if I put a calendar hold in for the next review as well?",
     [("offer", None)]),
    ("apexv1_001", "Would it be helpful if I emailed you the vision plan comparison as well?",
     [("offer", None)]),
    # ... and the gated action asked that way is a request
    ("apexv1_100", "Would it be alright if I sent it in to finance now?",
     [("request_approval", "submit:bp_1")]),
    # "everything I need" requests nothing; "I still need your ..." does
    ("apexv1_011", "That covers everything I need, would you like me to mark it ready?",
     [("offer", None)]),
    ("apexv1_001", "I still need your date of birth.", [("ask", "date_of_birth")]),
    # a question word before "should I" asks a field
    ("apexv1_082", "Before I mark this ready, what should I put down as the business purpose "
     "of the trip?", [("ask", "trip_purpose")]),
    # "Anything else look off?" checks the record; the desk's "what have you got for me?"
    ("apexv1_076", "Anything else look off to you?", [("confirm", None)]),
    ("apexv1_102", "Morning, Tidewater safety desk, you're through to the assistant, what "
     "have you got for me?", [("greet", None)]),
    # after dev-13 and dev-14 were counted: a phone's last four digits said alone restate it
    # (the caller checks them against its number's end)
    ("apexv1_010", "Zero one eight six, fixed.", [("read_back", "contact_phone")]),
    # ... said digit by digit: an amount with the same digits is no phone
    ("apexv1_010", "That's eighteen sixty in total.", [("inform", None)]),
    # send-offs: "have a good shift", "drive safely" (even after "thank you for calling"),
    # "and good evening" at the end; a greeting's "Good evening" stays a greeting
    ("apexv1_106", "Thank you, Andre, and have a good shift.", [("close", None)]),
    ("apexv1_032", "Thank you for calling Calloway and Pierce, Mr. Okoye, and please drive "
     "safely.", [("close", None)]),
    ("apexv1_118", "Thank you, Denise, and good evening.", [("close", None)]),
    ("apexv1_118", "Good evening, quality desk, this is Sam.", [("greet", None)]),
    # "May I request ..." asks; "Would you like that I ..." offers; a pleasure to assist greets
    ("apexv1_102", "May I request the work order number?", [("ask", "work_order")]),
    ("apexv1_082", "Would you like that I look up also the receipt rule in the expense "
     "procedures?", [("offer", None)]),
    ("apexv1_001", "It is a pleasure to assist you today, Morgan.", [("greet", None)]),
    # after dev-15 and dev-16 were counted: a gated verb done by someone else is no request
    # (the one false approval of those sets); "the last step is your go-ahead" is one
    ("apexv1_064", "Did Dr. Singh say why she's sending you?", [("ask", None)]),
    ("apexv1_051", "Everything's in place, so the last step is your go-ahead for me to "
     "process the resolution and issue the refund.", [("request_approval", "commit:dispute_1")]),
    # extras offered as statements; "before I can book" is no offer
    ("apexv1_070", "I could also send Sam a short handover note, so he knows exactly when "
     "he's covering.", [("offer", None)]),
    ("apexv1_076", "If it's useful, I can set up a kickoff call with our onboarding team for "
     "the week before go-live.", [("offer", None)]),
    ("apexv1_078", "If you'll need a projector or microphones on the day, I can add "
     "audio-visual equipment to the proposal as well.", [("offer", None)]),
    ("apexv1_076", "Now I'll need a PO number before I can book anything, do you have that "
     "handy?", [("ask", "po_number")]),
    # tenth round, after dev-17 and dev-18 were counted: their two false approvals (a titled
    # name doing the gated verb; a copy of the order sent "as a PDF for your records") ...
    ("apexv1_064", "In a few words, what's the reason Dr. Singh sent you to us?",
     [("ask", "reason_for_visit")]),
    ("apexv1_076", "Want me to send the countersigned order form over as a PDF for your "
     "records?", [("offer", None)]),
    # ... and their two misses: leave asked as "if you're happy for me to <gated>, I'll go
    # ahead"; without a gated verb the same frame offers
    ("apexv1_051", "If you're happy for me to put the refund and the credit through, I'll go "
     "ahead.", [("request_approval", "commit:dispute_1")]),
    ("apexv1_076", "If you're happy for me to book the order on those terms, I'll go ahead and "
     "do it now.", [("request_approval", "commit:order_1")]),
    ("apexv1_045", "If you're okay with me marking it ready and filing it now, I'll go ahead.",
     [("offer", None)]),
    # offers to contact someone or of something sent, even when they name a value
    ("apexv1_010", "Would you like me to drop Rachel Kim a quick email so she knows to expect "
     "the request?", [("offer", None)]),
    ("apexv1_051", "Would you like a confirmation email with both invoice numbers for your "
     "finance team?", [("offer", None)]),
    ("apexv1_030", "Would you also like a copy of the webinar slides?", [("offer", None)]),
    ("apexv1_118", "Should I grab QP-9 for you, so you've got the steps for notifying Kessler?",
     [("offer", None)]),
    # "Can I just verify ..." checks a value (the adverb hid the verb); leave still asked
    ("apexv1_010", "Can I just verify the badge should expire on May eighteenth, twenty "
     "twenty-seven?", [("confirm", "end_date")]),
    ("apexv1_001", "Can I just submit that for you now?", [("request_approval", "commit:enr_1")]),
    # send-offs: "I'll let you go", "all the best" at the end, "shout if anything comes up"
    ("apexv1_022", "Thanks for your time, Anika, I know you've got a hard stop, so I'll let "
     "you go.", [("close", None)]),
    ("apexv1_011", "Thanks so much for your time, Marcus, all the best and cheers.",
     [("close", None)]),
    ("apexv1_114", "Hang in there, and shout if anything else comes up!", [("close", None)]),
    # "In short" before a question is "briefly", no recap
    ("apexv1_064", "In short, what's the reason for the visit?", [("ask", "reason_for_visit")]),
    # after dev-19 and dev-20 were counted: leave asked for a lookup is no approval (their one
    # false approval); a gated particle verb around a two-word object (one of their misses)
    ("apexv1_001", "With your okay, I'll look up your monthly premium in the benefits policy "
     "now, is that alright?", [("offer", None)]),
    ("apexv1_051", "Alright, shall I go ahead and put the refund and the goodwill credit "
     "through now", [("request_approval", "commit:dispute_1")]),
    # leave asked for the agent's own lookup offers it, even when what is looked up is a field;
    # asking for a field, or a gated verb beside the lookup, stays what it was
    ("apexv1_118", "May I take a moment to look up the inspection specification for the "
     "drawing limit?", [("offer", None)]),
    ("apexv1_106", "Would you allow me a moment to look the unit up in the fleet register?",
     [("offer", None)]),
    ("apexv1_030", "May I run our standard conflict check on the company name?",
     [("offer", None)]),
    ("apexv1_001", "Would you mind if I ask your date of birth?", [("ask", "date_of_birth")]),
    ("apexv1_001", "May I look up your record and submit the enrollment?",
     [("request_approval", "commit:enr_1")]),
    # send-offs: "have a very pleasant day", "the rest of your week", "good day to you" at the
    # end (a greeting's "Good day to you" stays one), "mind how you go", "catch you ..."
    ("apexv1_082", "Thank you for calling, Mr. Menon, and have a very pleasant day.",
     [("close", None)]),
    ("apexv1_076", "Thanks for the business, Ravi, and enjoy the rest of your week.",
     [("close", None)]),
    ("apexv1_097", "Thank you for your time, and good day to you.", [("close", None)]),
    ("apexv1_032", "Good day to you, Calloway and Pierce intake, this is Sam.",
     [("greet", None)]),
    ("apexv1_106", "Awesome working with you, Andre, catch you on the next one!",
     [("close", None)]),
    # extras: "... while we're at it" when no field is named, "How about I send ...", "would you
    # like pricing on ..."; a field's choice or a slot stays an ask
    ("apexv1_070", "Do you wanna add a handover note for Sam while we're at it",
     [("offer", None)]),
    ("apexv1_001", "Would you like to add dental as well?", [("ask", "dental_plan")]),
    ("apexv1_118", "How about I send Rosa a heads-up on the Kessler shipment?",
     [("offer", None)]),
    ("apexv1_064", "How about we book Tuesday at nine?", [("ask", None)]),
    ("apexv1_076", "Also, would you like pricing on premium support?", [("offer", None)]),
    # after dev-21 and dev-22 were counted: a question word after the desk's introduction asks
    # (their one false approval); "Okay if I <verb>?" offers unless it asks for a field;
    # lookups offered in other words; send-offs
    ("apexv1_114", "Loomwork escalation desk, you're through to the assistant, which incident "
     "are we escalating today?", [("greet", None), ("ask", None)]),
    ("apexv1_022", "Okay if I mark it ready for Dev to review?", [("offer", None)]),
    ("apexv1_001", "Okay if I ask for your date of birth?", [("ask", "date_of_birth")]),
    ("apexv1_106", "While I've got you, would you like me to look up the red tag procedure?",
     [("offer", None)]),
    ("apexv1_087", "Either way, I can look up the keeping in touch days for you if that's "
     "useful.", [("offer", None)]),
    ("apexv1_076", "Would it be worth me quoting premium support alongside?", [("offer", None)]),
    ("apexv1_076", "Thanks, Ravi, pleasure doing business.", [("close", None)]),
    ("apexv1_106", "Thanks Andre, take it easy.", [("close", None)]),
    ("apexv1_118", "Thanks, Denise, hope the rest of your shift is quieter.", [("close", None)]),
    # after dev-23 and dev-24 were counted: one more of a kind is no request, nor a statement
    # that the action waits for the caller (their two false approvals); "Cool if I hand it
    # in?" asks leave (their miss)
    ("apexv1_010", "Do you want me to send the same kind of request for another one of your "
     "crew?", [("offer", None)]),
    ("apexv1_100", "Just so you know, nothing goes to finance until you give me the okay.",
     [("inform", None)]),
    ("apexv1_100", "Cool if I hand it in then", [("request_approval", "submit:bp_1")]),
    # small talk about the caller's time greets; "okay if I <verb>" inside a sentence and
    # "I'd <verb> ..., okay?" offer
    ("apexv1_041", "While that page loads, how's your week been?", [("greet", None)]),
    ("apexv1_078", "How's the rest of the planning coming along?", [("greet", None)]),
    ("apexv1_030", "How did you like the webinar, was it useful for you?", [("greet", None)]),
    ("apexv1_106", "Right, okay if I flag the work order ready so the shop lead can schedule the "
     "repair?", [("offer", None)]),
    ("apexv1_022", "Otherwise I'd set the record ready for your account executive, okay?",
     [("offer", None)]),
    # after dev-25 and dev-26 were counted: "I'll hold off until you give me the go-ahead"
    # asks nothing (their one false approval); the desk's name and a hello greets; "I can
    # <verb> ..., yeah?" offers (a gated verb still asks leave)
    ("apexv1_070", "Okay, I'll hold off until you give me the go-ahead again.", [("inform", None)]),
    ("apexv1_082", "Expense advice line, hi Ravi. Employee ID?",
     [("greet", None), ("ask", "employee_id")]),
    ("apexv1_106", "All the fields are in, so I can mark the work order ready for the shop lead "
     "now, yeah?", [("offer", None)]),
    ("apexv1_001", "I can submit the enrollment now, yeah?",
     [("request_approval", "commit:enr_1")]),
    # after dev-27 and dev-28 were counted: the desk's name after a greeting (a gated -ing
    # word in it) and a gated verb in a time clause are no request (their two false
    # approvals); a particle verb around a two-word object asks leave, and "another minute"
    # in the next clause makes no other thing of it (their two misses)
    ("apexv1_064", "Good afternoon, Riverbend Heart and Vascular scheduling, this is Maria, how "
     "are you today?", [("greet", None)]),
    ("apexv1_057", "would you like me to send you a written confirmation by email once it's "
     "processed", [("offer", None)]),
    ("apexv1_100", "Are you happy for me to hand the budget record in now?",
     [("request_approval", "submit:bp_1")]),
    ("apexv1_114", "Want me to hand this off now, or do you need another minute with the "
     "channel?", [("request_approval", "submit:tl_1")]),
    # what someone else did or will do is asked, not offered; leave to put the caller on hold
    # for a lookup offers it
    ("apexv1_010", "Has Rachel already lodged a request on her end for the rest of your crew?",
     [("ask", None)]),
    ("apexv1_064", "do you know if dr singh's office already sent over your records",
     [("ask", None)]),
    ("apexv1_082", "Mind if I put you on a short hold while I search the receipt rules?",
     [("offer", None)]),
    # suggestions put with a question word ask leave ("Why don't I ...?", "What if I ...?",
    # "How would you feel about me ...?"); a question for another thing does not
    ("apexv1_001", "Okay, why don't I go ahead and submit it?",
     [("request_approval", "commit:enr_1")]),
    ("apexv1_001", "Perfect, what if I submit it now?", [("request_approval", "commit:enr_1")]),
    ("apexv1_001", "Alright, how would you feel about me submitting it now?",
     [("request_approval", "commit:enr_1")]),
    ("apexv1_001", "All done, how about I send it in?", [("request_approval", "commit:enr_1")]),
    ("apexv1_001", "What if I submit a second claim?", [("ask", None)]),
    # after dev-29 and dev-30 were counted: "If so, ..." after a question asks no leave for a
    # gated verb in a time clause, and someone else's sign-off is asked (their two false
    # approvals); a particle verb around a one-word object asks leave (their miss)
    ("apexv1_057", "Is there a mortgage on the home? If so, we'll let your lender know once "
     "the cancellation is processed.", [("ask", None), ("inform", None)]),
    ("apexv1_057", "If so, I'll process the cancellation.",
     [("request_approval", "submit:canc_1")]),
    ("apexv1_078", "Does he need to sign off on it?", [("ask", None)]),
    ("apexv1_078", "Can you sign off on the proposal?", [("request_approval", "submit:venue_1")]),
    ("apexv1_114", "Okay if I hand the timeline off to engineering now?",
     [("request_approval", "submit:tl_1")]),
    ("apexv1_114", "Should I send the link over?", [("offer", None)]),
    # a document's report of a value the caller gave is information, unless the value leads
    # the sentence before the report begins
    ("apexv1_038", "I checked our routing guide, and medical privacy cases go to the Employee "
     "Relations Confidential queue, with restricted confidentiality and a response within two "
     "business days.", [("inform", None)]),
    ("apexv1_045", "Our known-issues guide says new MacBooks often block Huddle from the "
     "microphone the first time it opens.", [("inform", None)]),
    # leave for a hold, a read-back, carrying on: offers
    ("apexv1_010", "Mind if I read the whole draft back to you before we wrap up?",
     [("offer", None)]),
    ("apexv1_010", "Is it alright if I read the whole draft back to you before anything else?",
     [("offer", None)]),
    ("apexv1_078", "What's the budget? And mind a quick hold while I pull the price book?",
     [("ask", "room_budget"), ("offer", None)]),
    ("apexv1_010", "Mind if I submit it now?", [("request_approval", "submit:badge_1")]),
    # value-less checks; a lead-in that only says the record is complete; small talk
    ("apexv1_011", "Have I captured everything correctly so far?", [("confirm", None)]),
    ("apexv1_011", "Anything I've missed?", [("confirm", None)]),
    ("apexv1_011", "Anything to add?", [("ask", None)]),
    ("apexv1_087", "That's every section filled in. Shall I mark the memo ready so an HR "
     "partner can review it?", [("offer", None)]),
    ("apexv1_087", "The claim is in. Shall I send you a copy?",
     [("inform", None), ("offer", None)]),
    ("apexv1_102", "Warm one out at the plant today?", [("greet", None)]),
    # after dev-31 and dev-32 were counted: a refusal to act until the caller says so asks
    # nothing (their one false approval); completion lead-ins with "recorded", "on my side"
    # and a name fold into the proposal; a lookup reported after "I have looked up ..."
    ("apexv1_070", "Please be informed that I will not commit anything until you give me the "
     "word again.", [("inform", None)]),
    ("apexv1_057", "All is complete on my side, Mr. Bell. Shall I go ahead and put the "
     "cancellation through?", [("request_approval", "submit:canc_1")]),
    ("apexv1_087", "I have looked up the parental leave policy: a birth parent receives sixteen "
     "weeks of paid leave.", [("inform", None)]),
    # a value the caller never gives (a rule's outcome), stated without saying it was recorded,
    # is information; said as recorded it is restated
    ("apexv1_118", "Under QP-14, a hole that's no more than a tenth of a millimeter below the "
     "lower limit can be reamed, so the disposition is rework, not scrap.", [("inform", None)]),
    ("apexv1_118", "I've put the disposition down as rework.", [("read_back", "disposition")]),
    # small talk; news before a send-off; questions put as statements
    ("apexv1_106", "Is the shop busy as always this week?", [("greet", None)]),
    ("apexv1_001", "Lovely, how has your week started so far?", [("greet", None)]),
    ("apexv1_011", "That's everything I needed, Marcus, the hiring manager will look over the "
     "notes and we'll be in touch about next steps, so, um, take care!",
     [("inform", None), ("close", None)]),
    ("apexv1_041", "I was also wondering whether you get one of those extra codes when you sign "
     "in.", [("ask", "mfa_method")]),
    ("apexv1_114", "Hello, Loomwork escalation desk, please tell me how I can help you.",
     [("greet", None)]),
    # after dev-33 and dev-34 were counted (no approval errors in either): thanks and a wish
    # for the rest of the week close; an announced lookup with no value announces the report
    # after it; "Thanks for holding, I found it: ..." reports; more small talk
    ("apexv1_045", "Thanks so much for calling, Jordan, and enjoy the rest of your first week!",
     [("close", None)]),
    ("apexv1_078", "Thanks so much for choosing Harbourside, and I hope the partner day is a "
     "huge success!", [("close", None)]),
    ("apexv1_087", "I've found the current parental leave policy. As the birth parent you're "
     "entitled to sixteen weeks of paid leave.", [("inform", None), ("inform", None)]),
    ("apexv1_045", "Thanks for holding, I found it: on a new MacBook, macOS often blocks Huddle "
     "from using the microphone the first time the app starts.", [("inform", None)]),
    ("apexv1_030", "How's spring shaping up over there, by the way?", [("greet", None)]),
    ("apexv1_097", "That sounds like a real headache for your team.", [("greet", None)]),
    # after dev-35 and dev-36 were counted (no false approval; two misses): a proposal's object
    # ends before "whenever ..."; "Okay with you if I ...?" asks leave (their two misses), and
    # offers when the verb is not gated; leave for a hold or a look offers; more small talk
    ("apexv1_001", "Everything's filled in and I can finalize it whenever you give the word. "
     "Shall I?", [("request_approval", "commit:enr_1")]),
    ("apexv1_057", "All that's left is sending it through for processing. Okay with you if I do "
     "that now?", [("request_approval", "submit:canc_1")]),
    ("apexv1_001", "I can send you a copy whenever you like. Shall I?", [("offer", None)]),
    ("apexv1_038", "Is it okay with you if I route the case now, so it lands with the right team "
     "today?", [("offer", None)]),
    ("apexv1_022", "Can you hold for a few seconds while I check the price book for that count?",
     [("offer", None)]),
    ("apexv1_102", "Mind if I keep you on the line a moment while I save these readings?",
     [("offer", None)]),
    ("apexv1_076", "I'll need your PO number before anything can be booked.",
     [("ask", "po_number")]),
    ("apexv1_032", "Kids doing alright back there?", [("greet", None)]),
    ("apexv1_078", "Is planning season keeping you busy?", [("greet", None)]),
    # after dev-37 and dev-38 were counted: the head of the object decides, not an artifact
    # word before it (their one false approval: the badge pickup instructions); a casual
    # "We good for me to put the refund and credit through?" asks leave (their one miss);
    # "lemme", "..., that cool?" after "I'm gonna <verb>"
    ("apexv1_010", "Would you like me to send the badge pickup instructions to your phone as a "
     "text?", [("offer", None)]),
    ("apexv1_010", "Shall I send the badge request over?",
     [("request_approval", "submit:badge_1")]),
    ("apexv1_051", "Cool, so everything's lined up on my end. We good for me to put the refund "
     "and credit through now?", [("request_approval", "commit:dispute_1")]),
    ("apexv1_082", "Hi Ravi, hope the trip went okay! Lemme grab your employee ID real quick.",
     [("greet", None), ("ask", "employee_id")]),
    ("apexv1_082", "Everything's filled in, so I'm gonna mark the memo ready for finance review, "
     "that cool?", [("offer", None)]),
    ("apexv1_001", "I'm gonna submit your enrollment now, cool?",
     [("request_approval", "commit:enr_1")]),
    # after dev-39 and dev-40 were counted: the caller's own act is no proposal ...
    ("apexv1_001", "Are you planning to send the enrollment in on your own?", [("ask", None)]),
    # ... nor one more for someone else, nor a gated verb in a purpose clause
    ("apexv1_010", "That one's done. Want me to file one for anybody else on the crew?",
     [("inform", None), ("offer", None)]),
    # (which figure it checks names no field: ten thousand is no 312,000 budget misheard, an
    # amount a digit or two off being its field's only when the field is named)
    ("apexv1_100", "Just so I put the right figure in, was that ten thousand or ten percent?",
     [("ask", None)]),
    # leave asked in a statement: "If that's okay with you, I'll ..."
    ("apexv1_064", "If that's okay with you, I'll book the slot for you now.",
     [("request_approval", "commit:appt_1")]),
    ("apexv1_064", "If it's alright by you, I'll lock in the appointment now.",
     [("request_approval", "commit:appt_1")]),
    # a step that is not the gated action, proposed with a hedge: an offer
    ("apexv1_022", "I'll mark the record ready for your account executive, if that's alright "
     "with you.", [("offer", None)]),
    ("apexv1_082", "Would you be comfortable with me flagging the memo ready for review?",
     [("offer", None)]),
    ("apexv1_051", "Mind if I pull up the second invoice?", [("offer", None)]),  # guards
    ("apexv1_057", "Mind if I ask why you're cancelling?", [("ask", None)]),
    # a lookup announced, then its report: information, the caller's value in it too
    ("apexv1_082", "Okay, I've got the travel policy up, and Milwaukee is a Tier 2 city, so "
     "meals are seventy a day.", [("inform", None)]),
    ("apexv1_064", "Okay, I'm looking at the cardiology calendar, and there's an opening Friday "
     "the sixteenth at eleven with Dr. Hale.", [("inform", None)]),
    ("apexv1_087", "Alright, the handbook's open now: birth parents get sixteen weeks of paid "
     "leave.", [("inform", None)]),
    ("apexv1_118", "Shipment check's back, and none of lot seven seven three one left the "
     "building.", [("inform", None)]),
    ("apexv1_045", "Found it: on new MacBooks, macOS blocks the microphone for Huddle the first "
     "time it opens.", [("inform", None)]),
    # ... but what was found, named right after "found it", is restated
    ("apexv1_022", "Found it, Kestrel Logistics.",
     [("read_back", "account_name"), ("inform", None)]),
    # value-less checks
    ("apexv1_097", "Nadia Okoro, Tom Becker and Alicia Gomez. Have I got everyone?",
     [("read_back", "attendees"), ("confirm", None)]),
    ("apexv1_070", "Four one five, five five five, zero one four two. Is that the right number?",
     [("read_back", "contact_phone"), ("confirm", None)]),
    ("apexv1_076", "Enterprise, four hundred twenty seats, three years. Does that all check out?",
     [("summarize", None), ("read_back", "seat_count"), ("read_back", "product_edition"),
      ("read_back", "term_years"), ("confirm", None)]),
    # what someone did or plans asks no field
    ("apexv1_070", "Has your manager already seen the dates?", [("ask", None)]),
    ("apexv1_070", "Is Sam planning to cover for you the whole time?", [("ask", None)]),
    # small talk and a send-off
    ("apexv1_106", "Busy in the bay today?", [("greet", None)]),
    ("apexv1_070", "It's in, and Dana gets a notification. Enjoy the time away!",
     [("inform", None), ("close", None)]),
    # a phone number with two digits swapped is restated (wrongly)
    ("apexv1_010", "Six one seven, five five five, zero one six eight.",
     [("read_back", "contact_phone")]),
    # after dev-41 and dev-42 were counted: a gated verb in the passive, or done by someone
    # else, asks no leave
    ("apexv1_078", "Have the associates all confirmed they are coming, or is that still being "
     "finalized?", [("ask", None)]),
    ("apexv1_078", "And will anyone else, one of the partners perhaps, need to sign off on it?",
     [("ask", None)]),
    ("apexv1_097", "Will Tom be sending the improvement plan to Crestline himself, or does that "
     "go through you?", [("ask", None)]),
    ("apexv1_001", "Is that something I can submit for you, or would you rather do it "
     "yourself?", [("request_approval", "commit:enr_1")]),  # a guard
    ("apexv1_114", "Sounds hectic over there.", [("greet", None)]),
    # after dev-43 and dev-44 were counted: a value asked for as the agent's need
    ("apexv1_057", "I'll need a number we can reach you on.", [("ask", "contact_phone")]),
    ("apexv1_100", "I'll also need the date the meeting was held.", [("ask", "meeting_date")]),
    # a hold or a step proposed in a few words, not the gated action: an offer
    ("apexv1_010", "Mind a ten-second hold while I check the directory?", [("offer", None)]),
    ("apexv1_041", "Mark it ready for tier two?", [("offer", None)]),
    ("apexv1_045", "File it?", [("offer", None)]),
    # small talk
    ("apexv1_064", "Keeping warm out there?", [("greet", None)]),
    ("apexv1_015", "How's the practice today, busy?", [("greet", None)]),
    ("apexv1_057", "Sounds lively over there!", [("greet", None)]),  # a guard
    # a lead-in that only says the record is complete is part of the request after it
    ("apexv1_070", "Okay, it's all filled in and ready to go. Do you want me to submit the "
     "vacation request now?", [("request_approval", "commit:lr_1")]),
    ("apexv1_057", "The record's marked ready on my end. Do I have your okay to submit the "
     "cancellation now?", [("inform", None), ("request_approval", "submit:canc_1")]),  # news
    # after dev-45 and dev-46 were counted: "If that matches what you have, I'll <gated verb>"
    # asks leave; the object of a proposal ends before "alongside"
    ("apexv1_100", "If that matches what you have, I'll send the budget record to finance.",
     [("request_approval", "submit:bp_1")]),
    ("apexv1_076", "Would it help if I sent over premium support pricing alongside the order "
     "form?", [("offer", None)]),
    # after dev-49 was counted: waiting for the caller's word, said as a statement, asks nothing
    ("apexv1_070", "I'll wait for your go-ahead before anything gets filed.", [("inform", None)]),
    ("apexv1_001", "The enrollment itself will wait on your say-so.", [("inform", None)]),
    ("apexv1_114", "I'll leave it in draft and won't send it until you tell me.",
     [("inform", None)]),
    # a purpose clause before a question for a field
    ("apexv1_057", "And so I can put the cancellation through, what's the policy number?",
     [("ask", "policy_number")]),
    ("apexv1_057", "So I can put the cancellation through now, is that okay?",
     [("request_approval", "submit:canc_1")]),  # a guard
    # leave asked with a hedge after the gated action
    ("apexv1_114", "I'll send the timeline over to the data team now, if that works for you.",
     [("request_approval", "submit:tl_1")]),
    ("apexv1_051", "I'll put the credit through now, provided you're happy with that.",
     [("request_approval", "commit:dispute_1")]),
    ("apexv1_100", "Can I send it in like that?", [("request_approval", "submit:bp_1")]),
    # "forward" is a gated verb by default, not in "looking forward to"
    ("apexv1_100", "Shall I forward the budget record to finance now?",
     [("request_approval", "submit:bp_1")]),
    ("apexv1_010", "Is the team looking forward to the new site?", [("ask", None)]),
    # an unpunctuated transcript: a question starts at an inverted "can I"
    ("apexv1_001", "ok thats everything on the form can i send it in now",
     [("request_approval", "commit:enr_1")]),
    # a gated verb in a relative clause with its preposition at the end proposes nothing
    ("apexv1_078", "And it's the fourteenth of October we're sending the proposal out for, "
     "right?", [("confirm", "event_date")]),
    # after dev-50 and dev-51 were counted: no leave asked by a statement that the action
    # waits, by what the agent will put in, by a noun compound, by a copy sent to the caller's
    # side, or by someone else's sign-off
    ("apexv1_057", "The record's ready, but it stays unsubmitted until you give me the word.",
     [("inform", None)]),
    ("apexv1_070", "So it's June second to the eleventh, and that's what I'll file, right?",
     [("summarize", None), ("confirm", "start_date"), ("confirm", "end_date")]),
    ("apexv1_076", "Let me open the new order book, okay to hold for a second?", [("ask", None)]),
    ("apexv1_076", "Shall I forward the order form to your finance team?", [("offer", None)]),
    ("apexv1_100", "Does anyone else at the company need to sign off on the budget first?",
     [("ask", None)]),
    ("apexv1_032", "You still want the preservation letter sent, right?",
     [("confirm", "letter_requested")]),
    ("apexv1_051", "Can I go ahead with a quick lookup of the invoice?", [("offer", None)]),
    # leave asked: the action as what the caller wants done, the artifact going off, a
    # particle verb, leave on the caller's agreement, British spelling
    ("apexv1_076", "Want the order placed today?", [("request_approval", "commit:order_1")]),
    ("apexv1_010", "Would you like the badge request sent to issuing now?",
     [("request_approval", "submit:badge_1")]),
    ("apexv1_114", "Are you happy for this to go over to the data team now?",
     [("request_approval", "submit:tl_1")]),
    ("apexv1_032", "Is it alright with you if the intake goes through to the attorneys now?",
     [("request_approval", "submit:intake_1")]),
    ("apexv1_100", "I'd like to get the budget off to finance, would that be okay?",
     [("request_approval", "submit:bp_1")]),
    ("apexv1_051", "Shall we get the refund moving?", [("request_approval", "commit:dispute_1")]),
    ("apexv1_070", "I'll pop the leave request in now, if that's alright.",
     [("request_approval", "commit:lr_1")]),
    ("apexv1_051", "I'll proceed with the credit now, if that's alright with you.",
     [("request_approval", "commit:dispute_1")]),
    ("apexv1_114", "Would it be alright if I pushed the timeline through now?",
     [("request_approval", "submit:tl_1")]),
    ("apexv1_078", "If you're happy with all of that, I'll send the proposal now.",
     [("request_approval", "submit:venue_1")]),
    ("apexv1_078", "If I have your agreement, I'd like to issue the proposal now.",
     [("request_approval", "submit:venue_1")]),
    ("apexv1_010", "Unless you see anything to change, I'll submit the badge request now.",
     [("request_approval", "submit:badge_1")]),
    ("apexv1_076", "Then I'll book the order, if you confirm.",
     [("request_approval", "commit:order_1")]),
    ("apexv1_070", "If so, I'll file it straight away.", [("request_approval", "commit:lr_1")]),
    ("apexv1_114", "I send the timeline to the on-call now. Sound okay?",
     [("request_approval", "submit:tl_1")]),
    ("apexv1_078", "Shall I finalise the proposal then?", [("request_approval", "submit:venue_1")]),
    # after dev-52 and dev-53 were counted: holding until the caller's word asks nothing; leave
    # asked with "if you'll let me", "is that acceptable?", "assuming that's fine by you",
    # "unless you'd rather hold off", "if that's all right", "a yes from you", and the artifact
    # going out or in
    ("apexv1_114", "I'm holding the timeline until you give me the word.", [("inform", None)]),
    ("apexv1_100", "All that's left is to send the budget to finance, if you'll let me.",
     [("request_approval", "submit:bp_1")]),
    ("apexv1_010", "I would like to submit the badge request now. Is that acceptable?",
     [("request_approval", "submit:badge_1")]),
    ("apexv1_064", "I'll book the appointment now, assuming that's fine by you.",
     [("request_approval", "commit:appt_1")]),
    ("apexv1_078", "I'll send the proposal over now unless you'd rather hold off.",
     [("request_approval", "submit:venue_1")]),
    ("apexv1_114", "If that's all right, I'll escalate the timeline now.",
     [("request_approval", "submit:tl_1")]),
    ("apexv1_010", "All I need is a yes from you and I'll put the badge request in.",
     [("request_approval", "submit:badge_1")]),
    ("apexv1_078", "Happy for the proposal to go out?", [("request_approval", "submit:venue_1")]),
    ("apexv1_100", "Is it all right by you if the budget goes in to finance as read?",
     [("request_approval", "submit:bp_1")]),
    ("apexv1_070", "Would you like me to try submitting the leave request again?",
     [("request_approval", "commit:lr_1")]),
    # small talk's words asking after a field that is a judgement (an option, a rating), not
    # after a name or an amount; a list's or a call's end is no check
    ("apexv1_017", "How was the workload? One to five again.",
     [("ask", "workload_rating"), ("inform", None)]),
    ("apexv1_006", "How are you travelling up?", [("ask", "travel_mode")]),
    ("apexv1_091", "How did it go against the sprint goal?", [("ask", "sprint_goal")]),
    ("apexv1_015", "How's her reliability, one to five?", [("ask", "reliability_rating")]),
    ("apexv1_017", "How are you doing today?", [("greet", None)]),
    ("apexv1_006", "How was the trip?", [("greet", None)]),
    ("apexv1_091", "That's everything.", [("inform", None)]),
    ("apexv1_091", "That's everything?", [("confirm", None)]),
    # a synonym of three or more words that takes in the small talk asks after its field
    ("apexv1_048", "How are you getting by in the meantime?", [("ask", "workaround")]),
    ("apexv1_019", "What would be a good day to meet for the follow-up?",
     [("ask", "follow_up_date")]),
    ("apexv1_048", "How are you holding up?", [("greet", None)]),
    ("apexv1_019", "Good to meet you, Marguerite.", [("greet", None)]),
    # the day of a date is no count, and a named field is the one a near value restates
    ("apexv1_092", "Due October eleventh, got it.", [("read_back", "action_due_date")]),
    ("apexv1_092", "Eleven, got it.", [("read_back", "attendee_count")]),
    # a proposal naming a yes-or-no field asks the caller's decision (it was an offer the
    # caller took or left without saying the field, apexv1_115); something sent to the caller
    # is still an extra
    ("apexv1_115", "Should I plan a public status page post?", [("ask", "status_page_post")]),
    ("apexv1_115", "Would you like me to put up a status page update?",
     [("ask", "status_page_post")]),
    ("apexv1_033", "Should I share your records with the specialist?",
     [("ask", "records_consent")]),
    ("apexv1_115", "Want me to send you the status page template?", [("offer", None)]),
    ("apexv1_033", "Can I send you a copy of the notes?", [("offer", None)]),
    # a time of day is no count a near value restates (the 30 of "1:30 PM" was read as a
    # read-back of 30 seats)
    ("apexv1_061", "The sessions start at 1:30 PM.", [("inform", None)]),
    ("apexv1_061", "So that's the 1:30 PM slot.", [("read_back", "start_time")]),
])
def test_rules_of_the_later_rounds(task_id: str, text: str,
                                   expected: list[tuple[str, str | None]]) -> None:
    observer = _real(task_id)
    observed = (observer.observe_rules(text) if (task_id, text) in _MODEL_TAKES_AWAY
                else observer.observe(text))
    assert _summary(observed) == expected


_MODEL_TAKES_AWAY = {
    ("apexv1_078", "Can you sign off on the proposal?"),
    ("apexv1_001", "Is that something I can submit for you, or would you rather do it yourself?"),
    ("apexv1_076", "Want the order placed today?"),
}
"""Requests for leave the rules find and the act model, sure they ask none (its margin under
-APPROVAL_MARGIN, it and its own sentence), takes away: misses it costs, kept in sight."""


@pytest.mark.parametrize(("text", "approval"), [
    ("Shall I raise the ticket?", True),
    ("Shall I raise the ticket now?", True),
    ("Are you happy for me to raise the ticket?", True),
    ("Shall I lodge the ticket now?", True),
    ("Can I raise the ticket and send the secure link?", True),
    ("Shall I read the ticket back to you?", False),
    ("Shall I raise the ticket number with my supervisor?", False),
])
def test_the_gated_action_asked_in_so_many_words_stands(text: str, approval: bool) -> None:
    """A writer of apexv1_050 found the act model turning "Shall I raise the ticket?" into an
    offer (the rules bound it to the upload ticket's commit): a request that names the gated
    action by the task's own verb and the artifact's noun is not the model's to overrule
    (``_action_in_so_many_words``); other things done with a ticket are still no request."""
    acts = _real("apexv1_050").observe(text)
    assert (("request_approval", "commit:upl_1") in [(a.act, a.action) for a in acts]) is approval


@pytest.mark.xfail(strict=True, reason="the act model takes these requests away: misses it "
                                       "costs (on dev-52/53, held out of its training, it took "
                                       "away 5 false approvals and 5 true requests, and added "
                                       "13 true ones and no false one)")
@pytest.mark.parametrize(("task_id", "text"), sorted(_MODEL_TAKES_AWAY))
def test_requests_the_act_model_takes_away(task_id: str, text: str) -> None:
    assert any(a.act == "request_approval" for a in _real(task_id).observe(text))


@pytest.mark.parametrize(("text", "verdict"), [
    ("So that's you and Victor Hale signing off.", "match"),  # "you" is the caller
    ("So that's you and Victor Hall signing off.", "mismatch"),
    ("So that's Victor Hale signing off.", "mismatch"),  # the caller left out
])
def test_the_caller_is_you_in_a_list_of_names(text: str, verdict: str) -> None:
    task = next(t for t in load_tasks([default_tasks_dir()]) if t.id == "apexv1_030")
    policy = RevealPolicy(task)
    policy.spoken.extend(p.id for p in task.plans)
    act = next(a for a in SemanticActObserver(task).observe(text) if a.field)
    assert act.field == "decision_makers"
    assert policy.check_restatement(act) == verdict
