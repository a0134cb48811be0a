"""Study B participant pages in process: the flow (entry with external ids, consent with its
decision and time, microphone check, sessions in order, end page with the completion code and
redirect), declining keeps nothing, every participant URL refuses another participant's token,
no token, an annotator's token and a researcher's login (404), and a gold scan: two sessions
driven on the virtual clock by a robot participant speaking bank audio, with every page,
fragment and Server-Sent-Events message the participant receives scanned for gold values the
card did not show at that moment, for the agent spec and for the run directory."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.live import (
    PARTICIPANT_LABELS,
    BankRobot,
    Captions,
    DbCallStore,
    LiveCallManager,
    card_view,
)
from app.models_study_a import Annotator, StudyA
from app.models_study_b import LiveSession, Participant, StudyB
from app.settings import Settings
from runtime.core.events import AgentSpeechStart, AgentTranscript, AgentTruncated, read_events
from runtime.core.spec import TaskSpec, find_task
from runtime.user.live_user import Cue, LiveParticipant, RoleCard
from study_protocols.visibility import (
    fact_values,
    find_hidden_gold,
    hidden_gold_strings,
    volunteer_facts,
)
from tests.webclient import PASSWORD, WebClient, researcher_app

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

SYSTEM = "scripted:oracle"
CONSENT = "Consent paragraph one about the study.\n\nSecond paragraph: you may stop any time."
CODE = "C0MPL3TE-42"
COMPLETION_URL = "https://app.prolific.example/submissions/complete?cc=C0MPL3TE-42"
BLIND_TERMS = (SYSTEM, "scripted:", "oracle", "openai", "gemini", "grok", "stepfun",
               "gpt-live", "study-b/", "events.jsonl", "trace.wav")
"""The agent's identity and the run directory: never in anything a participant receives."""
RAW_EVENT_TYPES = ("tool.call", "tool.result", "agent.transcript", "artifact.update",
                   "auth.grant", "user.plan")
INTERNAL_STATES = ("waiting", "running", "complete", "incomplete", "failed")
"""Call states by their internal names: never printed on a participant's page."""


@dataclass
class World:
    app: Any
    settings: Settings
    tokens: dict[str, str]
    """Participant label → token."""
    sessions: dict[str, list[int]]
    """Participant label → LiveSession ids in order."""
    tasks: dict[str, list[str]]
    annotator_token: str
    draft_token: str
    study_id: int


def _setup(tmp_path: Path, *, on_disconnect: str = "rejoin") -> World:
    app = researcher_app(tmp_path / "data")
    settings = app.state.settings
    plan = {"P01": ["apexv1_070", "apexv1_051"], "P02": ["apexv1_070"]}
    with Session(app.state.engine) as db:
        study = StudyB(name="live audit", created_by="ada", status="launched", seed=0,
                       task_ids=["apexv1_070", "apexv1_051"], systems=[SYSTEM],
                       consent_text=CONSENT, completion_code=CODE,
                       completion_url=COMPLETION_URL, on_disconnect=on_disconnect)
        draft = StudyB(name="draft", created_by="ada", status="draft")
        db.add(study)
        db.add(draft)
        db.flush()
        assert study.id is not None and draft.id is not None
        tokens: dict[str, str] = {}
        sessions: dict[str, list[int]] = {}
        for n, (label, task_ids) in enumerate(plan.items()):
            person = Participant(study_id=study.id, label=label, token=f"tok{n}-{'x' * 28}")
            db.add(person)
            db.flush()
            assert person.id is not None
            tokens[label] = person.token
            rows = [LiveSession(study_id=study.id, participant_id=person.id, position=k,
                                task_id=t, system=SYSTEM) for k, t in enumerate(task_ids, 1)]
            for row in rows:
                db.add(row)
            db.flush()
            sessions[label] = [r.id for r in rows if r.id is not None]
        ghost = Participant(study_id=draft.id, label="P01", token="draft-" + "y" * 30)
        db.add(ghost)
        db.flush()
        db.add(LiveSession(study_id=draft.id, participant_id=ghost.id or 0, position=1,
                           task_id="apexv1_070", system=SYSTEM))
        study_a = StudyA(name="ratings", created_by="ada")
        db.add(study_a)
        db.flush()
        annotator = Annotator(study_id=study_a.id or 0, label="A1", token="ann-" + "z" * 30)
        db.add(annotator)
        db.commit()
        study_id = study.id
    return World(app, settings, tokens, sessions, plan, "ann-" + "z" * 30,
                 "draft-" + "y" * 30, study_id)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return _setup(tmp_path)


@pytest.fixture
def client(world: World, web_client: WebClient) -> TestClient:
    return web_client(app=world.app, next_url=None)


def _csrf(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, html[:400]
    return match.group(1)


def _person(world: World, label: str) -> Participant:
    with Session(world.app.state.engine) as db:
        person = db.exec(select(Participant).where(Participant.token == world.tokens[label]))
        found = person.first()
        assert found is not None
        return found


def _rows(world: World, label: str) -> list[LiveSession]:
    with Session(world.app.state.engine) as db:
        return [db.get(LiveSession, sid) for sid in world.sessions[label]]  # type: ignore[misc]


def _consent_and_mic(client: TestClient, token: str) -> None:
    page = client.get(f"/p/{token}/consent")
    assert page.status_code == 200
    r = client.post(f"/p/{token}/consent", data={"csrf_token": _csrf(page.text),
                                                 "decision": "agree"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/p/{token}/mic"
    page = client.get(f"/p/{token}/mic")
    r = client.post(f"/p/{token}/mic", data={"csrf_token": _csrf(page.text),
                                             "headphones": "yes"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/p/{token}/sessions"


def _set_state(world: World, session_id: int, state: str) -> None:
    with Session(world.app.state.engine) as db:
        row = db.get(LiveSession, session_id)
        assert row is not None
        row.state = state
        db.add(row)
        db.commit()


# --------------------------------------------------------------------------- the flow


def test_entry_records_external_ids_once_then_walks_the_steps(world: World,
                                                              client: TestClient) -> None:
    a, b = world.tokens["P01"], world.tokens["P02"]
    r = client.get(f"/p/{a}?PROLIFIC_PID=5f1e2d&STUDY_ID=st-9&SESSION_ID=se-1",
                   follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/p/{a}/consent"
    client.get(f"/p/{a}?PROLIFIC_PID=other&STUDY_ID=other&SESSION_ID=other")
    person = _person(world, "P01")
    assert (person.external_pid, person.external_study_id, person.external_session_id) == (
        "5f1e2d", "st-9", "se-1")
    # Generic names, Prolific's unreplaced placeholders skipped, long values cut.
    client.get(f"/p/{b}?pid={'q' * 300}&study={{{{%STUDY_ID%}}}}&session=s2")
    other = _person(world, "P02")
    assert other.external_pid == "q" * 128 and other.external_study_id is None
    assert other.external_session_id == "s2"
    assert person.consent == "pending" and person.consent_at is None

    page = client.get(f"/p/{a}/consent")
    assert "Consent paragraph one about the study." in page.text
    assert "Second paragraph: you may stop any time." in page.text
    assert "2 short sessions" in page.text
    no_csrf = client.post(f"/p/{a}/consent", data={"decision": "agree"})
    assert no_csrf.status_code == 403
    assert _person(world, "P01").consent == "pending"
    # The microphone check and the sessions wait for consent.
    assert client.get(f"/p/{a}/mic", follow_redirects=False).headers["location"] == (
        f"/p/{a}/consent")
    assert client.get(f"/p/{a}/sessions", follow_redirects=False).headers["location"] == (
        f"/p/{a}/consent")
    _consent_and_mic(client, a)
    person = _person(world, "P01")
    assert person.consent == "given" and person.consent_at is not None
    assert person.mic_checked_at is not None
    mic = client.get(f"/p/{a}/mic").text
    assert "/static/js/miccheck.js" in mic and "never sent anywhere" in mic
    listing = client.get(f"/p/{a}/sessions").text
    assert "Session 1 of 2" in listing and "Session 2 of 2" in listing
    sid1, sid2 = world.sessions["P01"]
    assert f"/p/{a}/s/{sid1}" in listing and f"/p/{a}/s/{sid2}" not in listing
    assert "apexv1_" not in listing and SYSTEM not in listing
    # Sessions go in order: the second waits for the first.
    r = client.get(f"/p/{a}/s/{sid2}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/p/{a}/sessions"
    # A later consent decision does not overwrite the first.
    page = client.get(f"/p/{b}/consent")
    client.post(f"/p/{a}/consent", data={"csrf_token": _csrf(page.text), "decision": "decline"})
    assert _person(world, "P01").consent == "given"


def test_the_session_page_shows_the_role_card_and_its_fragment(world: World,
                                                               client: TestClient) -> None:
    a = world.tokens["P01"]
    _consent_and_mic(client, a)
    sid = world.sessions["P01"][0]
    page = client.get(f"/p/{a}/s/{sid}")
    assert page.status_code == 200
    task = find_task("apexv1_070")
    html = page.text
    assert task.user.persona.name in html and "Session 1 of 2" in html
    assert 'id="cue-box"' in html and 'id="elapsed"' in html and "Start call" in html
    assert "do not read this card aloud" in html
    for fact_id, _ in volunteer_facts(task):
        assert f'data-fact="{fact_id}"' in html
    # What she knows before the call is on the card from the start (given when asked);
    # the corrected end date is not, and the goal names the end date she believes.
    on_ask = [f.id for f in task.user.facts if f.reveal.rule == "on_ask"]
    assert on_ask and all(f'data-fact="{f}"' in html for f in on_ask)
    assert "(when asked)" in html and "June 13, 2027" in html and "June 11" not in html
    # Captions are a study option, off here: no caption box, no captions in the card data.
    assert 'id="captions"' not in html
    call = world.app.state.live.get(sid)
    assert call is not None and "captions" not in call.card()
    fragment = client.get(f"/p/{a}/s/{sid}", headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and "<html" not in fragment.text
    assert 'id="role-card"' in fragment.text and task.user.persona.name in fragment.text


def test_declining_ends_the_flow_and_keeps_nothing(world: World, client: TestClient) -> None:
    a = world.tokens["P01"]
    client.get(f"/p/{a}?PROLIFIC_PID=pp1")
    page = client.get(f"/p/{a}/consent")
    r = client.post(f"/p/{a}/consent", data={"csrf_token": _csrf(page.text),
                                             "decision": "decline"}, follow_redirects=False)
    assert r.headers["location"] == f"/p/{a}/done"
    done = client.get(f"/p/{a}/done")
    assert "Nothing was recorded" in done.text and CODE not in done.text
    person = _person(world, "P01")
    assert person.consent == "declined" and person.consent_at is not None
    assert person.external_pid == "pp1"  # recorded with the decision
    sid = world.sessions["P01"][0]
    for path in (f"/p/{a}", f"/p/{a}/mic", f"/p/{a}/sessions", f"/p/{a}/s/{sid}"):
        r = client.get(path, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == f"/p/{a}/done", path
    token = _csrf(page.text)
    for path in (f"/p/{a}/s/{sid}/offer", f"/p/{a}/s/{sid}/end"):
        assert client.post(path, json={"sdp": "v=0", "type": "offer"},
                           headers={"X-CSRF-Token": token}).status_code == 404
    assert client.get(f"/p/{a}/s/{sid}/events").status_code == 404
    assert all(r.state == "pending" and r.run_dir is None for r in _rows(world, "P01"))
    assert not (world.settings.runs_dir / "study-b").exists()
    assert world.app.state.live.calls == {}


def test_the_end_page_shows_the_completion_code_and_redirect(world: World,
                                                             client: TestClient) -> None:
    a = world.tokens["P01"]
    _consent_and_mic(client, a)
    r = client.get(f"/p/{a}/done", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/p/{a}/sessions"
    sid1, sid2 = world.sessions["P01"]
    _set_state(world, sid1, "complete")
    listing = client.get(f"/p/{a}/sessions").text
    assert f"/p/{a}/s/{sid2}" in listing and "done" in listing
    _set_state(world, sid2, "incomplete")
    r = client.get(f"/p/{a}", follow_redirects=False)
    assert r.headers["location"] == f"/p/{a}/done"
    done = client.get(f"/p/{a}/done").text
    assert f'<code id="completion-code">{CODE}</code>' in done
    assert f'href="{COMPLETION_URL}"' in done
    assert f'http-equiv="refresh" content="8; url={COMPLETION_URL}"' in done
    assert "ended early" in client.get(f"/p/{a}/sessions").text


def test_a_closed_study_refuses_new_calls(world: World, client: TestClient) -> None:
    a = world.tokens["P01"]
    _consent_and_mic(client, a)
    token = _csrf(client.get(f"/p/{a}/mic").text)
    with Session(world.app.state.engine) as db:
        study = db.get(StudyB, world.study_id)
        assert study is not None
        study.status = "closed"
        db.add(study)
        db.commit()
    sid = world.sessions["P01"][0]
    r = client.post(f"/p/{a}/s/{sid}/offer", json={"sdp": "v=0", "type": "offer"},
                    headers={"X-CSRF-Token": token})
    assert r.status_code == 409 and r.json() == {"error": "this study is closed"}


def test_a_bad_offer_is_refused_with_a_message(world: World, client: TestClient) -> None:
    a = world.tokens["P01"]
    _consent_and_mic(client, a)
    token = _csrf(client.get(f"/p/{a}/mic").text)
    sid = world.sessions["P01"][0]
    r = client.post(f"/p/{a}/s/{sid}/offer", content=b"not json",
                    headers={"X-CSRF-Token": token, "Content-Type": "application/json"})
    assert r.status_code == 400 and "sdp" in r.json()["error"]
    r = client.post(f"/p/{a}/s/{sid}/offer", json={"sdp": "v=0", "type": "answer"},
                    headers={"X-CSRF-Token": token})
    assert r.status_code == 400 and "offer" in r.json()["error"]
    r = client.post(f"/p/{a}/s/{sid}/offer", json={"sdp": "garbage", "type": "offer"},
                    headers={"X-CSRF-Token": token})
    assert r.status_code == 400 and "0 audio transceivers" in r.json()["error"]
    r = client.post(f"/p/{a}/s/{sid}/offer", json={"sdp": "v=0\r\nm=audio x y\r\n",
                                                   "type": "offer"},
                    headers={"X-CSRF-Token": token})
    assert r.status_code == 400 and r.json()["error"]
    call = world.app.state.live.get(sid)
    assert call is not None and call.state == "waiting" and call.pc is None


def test_the_microphone_check_needs_the_headphone_check(world: World,
                                                       client: TestClient) -> None:
    a = world.tokens["P01"]
    page = client.get(f"/p/{a}/consent")
    client.post(f"/p/{a}/consent", data={"csrf_token": _csrf(page.text), "decision": "agree"})
    mic = client.get(f"/p/{a}/mic").text
    assert 'id="sound-play"' in mic and "Play the test sound" in mic
    box = re.search(r'<input type="checkbox" name="headphones" value="yes"[^>]*>', mic)
    assert box and "required" in box.group(0)
    assert "I am wearing headphones (not speakers)" in mic
    # Without the confirmation nothing is recorded and the sessions stay closed.
    r = client.post(f"/p/{a}/mic", data={"csrf_token": _csrf(mic)}, follow_redirects=False)
    assert r.status_code == 400 and "confirm that you heard it" in r.text
    person = _person(world, "P01")
    assert person.mic_checked_at is None and person.headphones_checked_at is None
    assert client.get(f"/p/{a}/sessions", follow_redirects=False).headers["location"] == (
        f"/p/{a}/mic")
    r = client.post(f"/p/{a}/mic", data={"csrf_token": _csrf(mic), "headphones": "no"},
                    follow_redirects=False)
    assert r.status_code == 400
    r = client.post(f"/p/{a}/mic", data={"csrf_token": _csrf(mic), "headphones": "yes"},
                    follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/p/{a}/sessions"
    person = _person(world, "P01")
    assert person.mic_checked_at is not None and person.headphones_checked_at is not None
    # The test sound is made in the browser (WebAudio), not fetched.
    script = client.get("/static/js/miccheck.js").text
    assert "createOscillator" in script and "headphones-confirm" in script


def _state_tag(page: str) -> str:
    match = re.search(r'<span class="tag" id="call-state" data-state="([a-z]+)">([^<]*)</span>',
                      page)
    assert match, page[:400]
    return match.group(2)


@pytest.mark.parametrize("state", ["complete", "incomplete", "failed"])
def test_the_call_state_reads_in_plain_words(world: World, client: TestClient,
                                             state: str) -> None:
    a = world.tokens["P01"]
    _consent_and_mic(client, a)
    sid = world.sessions["P01"][0]
    waiting = client.get(f"/p/{a}/s/{sid}").text
    assert _state_tag(waiting) == PARTICIPANT_LABELS["waiting"] == "Not started"
    _set_state(world, sid, state)
    world.app.state.live.calls.clear()  # the row decides once the call is gone
    page = client.get(f"/p/{a}/s/{sid}").text
    label = _state_tag(page)
    assert label == {"complete": "Call finished – thank you", "incomplete": "Ended early",
                     "failed": "Ended early"}[state]
    message = re.search(r'<p id="call-message"[^>]*>([^<]*)</p>', page)
    assert message
    shown = f"{label} {message.group(1)}".lower()
    assert not any(re.search(rf"\b{word}\b", shown) for word in INTERNAL_STATES), shown
    assert not any(re.search(rf"\b{w}\b", label.lower()) for w in INTERNAL_STATES)
    # The script prints the server's label (or "Connecting…"), never the state name.
    script = client.get("/static/js/participant.js").text
    assert "textContent = s.state" not in script and "Connecting…" in script


def _role_card(cues: list[Cue]) -> RoleCard:
    active = next((c for c in reversed(cues) if c.done_ms is None), None)
    return RoleCard(persona_name="Priya", persona_role="engineer", speaking_style="calm",
                    goals=[], constraints=[], objective_for_user="You are Priya.", facts=[],
                    cues=cues, active_cue=active, elapsed_ms=9000, guidance="Speak naturally.")


def test_a_done_cue_stays_visible_until_a_newer_one_replaces_it() -> None:
    from app.templating import templates

    def render(card: dict[str, Any]) -> str:
        return templates.get_template("_participant_card.html").render(card=card)

    first = Cue(cue_id="cue-1", kind="approve", plan_id="approve_submit",
                text="If you agree, give it now.", shown_ms=1000)
    view = card_view(_role_card([first]))
    assert view["active_cue"]["id"] == "cue-1" and view["shown_cue"]["done"] is False
    html = render(view)
    assert 'class="cue active"' in html and "If you agree, give it now." in html
    # Acted on: no active cue, but the box keeps it, greyed and marked done.
    first.done_ms = 4000
    view = card_view(_role_card([first]))
    assert view["active_cue"] is None
    assert view["shown_cue"] == {"id": "cue-1", "kind": "approve",
                                 "text": "If you agree, give it now.", "shown_ms": 1000,
                                 "done": True}
    html = render(view)
    assert 'class="cue done"' in html and "If you agree, give it now." in html
    assert '<small class="tag cue-done">done</small>' in html
    assert "approve_submit" not in json.dumps(view) + html  # never the plan id
    # A newer cue replaces it.
    second = Cue(cue_id="cue-2", kind="revoke", plan_id="revoke_submit",
                 text="Take back your approval.", shown_ms=6000)
    view = card_view(_role_card([first, second]))
    html = render(view)
    assert view["shown_cue"]["id"] == "cue-2" and view["shown_cue"]["done"] is False
    assert "Take back your approval." in html and "If you agree" not in html
    # No cue yet: the hint.
    assert "Private cues appear here" in render(card_view(_role_card([])))


def test_captions_show_a_turn_once_it_is_spoken_and_cut_where_it_was_cut() -> None:
    captions = Captions()
    assert captions.view() == []
    # Text before audio: not shown until that turn's speech starts.
    assert captions.on_event(AgentTranscript(turn=1, text="Hello, how can I help?",
                                             seq=1, t_media_ms=0, t_wall=0.0))
    assert captions.view() == []
    captions.on_event(AgentSpeechStart(turn=1, seq=2, t_media_ms=40, t_wall=0.0))
    assert captions.view() == [{"turn": 1, "text": "Hello, how can I help?", "cut": False}]
    # Cut after half of it was played: half the words remain.
    captions.on_event(AgentSpeechStart(turn=2, seq=3, t_media_ms=4000, t_wall=0.0))
    captions.on_event(AgentTranscript(turn=2, text="one two three four five six seven eight",
                                      seq=4, t_media_ms=4000, t_wall=0.0))
    captions.on_event(AgentTruncated(turn=2, heard_ms=1000, dropped_ms=1000, reason="barge-in",
                                     seq=5, t_media_ms=5000, t_wall=0.0))
    assert captions.view()[-1] == {"turn": 2, "text": "one two three four…", "cut": True}
    for turn in range(3, 6):
        captions.on_event(AgentSpeechStart(turn=turn, seq=6, t_media_ms=9000, t_wall=0.0))
        captions.on_event(AgentTranscript(turn=turn, text=f"turn {turn}", seq=7,
                                          t_media_ms=9000, t_wall=0.0))
    assert [c["turn"] for c in captions.view()] == [3, 4, 5]  # the last three turns


async def _agree_and_pass_the_mic_check(http: httpx.AsyncClient, token: str) -> None:
    """The participant's steps before the sessions: consent, then the microphone check."""
    page = (await http.get(f"/p/{token}/consent")).text
    await http.post(f"/p/{token}/consent", data={"csrf_token": _csrf(page), "decision": "agree"})
    page = (await http.get(f"/p/{token}/mic")).text
    await http.post(f"/p/{token}/mic", data={"csrf_token": _csrf(page), "headphones": "yes"})


def _robot_calls(world: World) -> LiveCallManager:
    """Live calls on the virtual clock whose participant is a BankRobot: it speaks the bank
    realization of each plan the policy expects, and its ASR returns that text."""
    robots: dict[str, BankRobot] = {}

    def participant(task: TaskSpec, seed: int, asr: Any) -> LiveParticipant:
        robot = robots.setdefault(task.id, BankRobot(task, seed))
        return LiveParticipant(task, seed=seed, asr=robot.asr(), transcribe_inline=True)

    return LiveCallManager(
        world.settings.runs_dir, clock="virtual", asr_factory=lambda: None,
        participant_factory=participant, feeder_factory=lambda plan: robots[plan.task.id],
        reap_every_s=3600, store=DbCallStore(world.app.state.engine),
    )


async def test_captions_show_the_agents_words_and_nothing_else(tmp_path: Path) -> None:
    """A study with captions on: P02's session runs on the virtual clock with the scripted
    oracle and a robot participant. Every caption the page receives is the start of what the
    agent said in that turn (its ``agent.transcript``), and nothing in them names a plan, an
    event type, the agent or the run directory; the rest of the card passes the gold scan."""
    world = _setup(tmp_path)
    app = world.app
    with Session(app.state.engine) as db:
        study = db.get(StudyB, world.study_id)
        assert study is not None
        study.captions = True
        db.add(study)
        db.commit()
    app.state.live = _robot_calls(world)
    b = world.tokens["P02"]
    sid = world.sessions["P02"][0]
    task = find_task(world.tasks["P02"][0])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        await _agree_and_pass_the_mic_check(http, b)
        base = f"/p/{b}/s/{sid}"
        first = await http.get(base)
        assert 'id="captions"' in first.text
        assert "The assistant's words appear here" in first.text
        call = app.state.live.get(sid)
        assert call is not None and call.plan.captions
        stream = asyncio.ensure_future(http.get(f"{base}/events"))
        await asyncio.sleep(0.2)
        assert call.start()
        while not call.done:
            await asyncio.sleep(0.05)
        messages = _sse_messages((await asyncio.wait_for(stream, 60)).text)
    assert call.state == "complete", call.detail
    rows = _rows(world, "P02")
    run_dir = world.settings.runs_dir / (rows[0].run_dir or "")
    events = read_events(run_dir / "events.jsonl").events
    said: dict[int, str] = {}
    for e in events:
        if e.type == "agent.transcript":
            said[e.turn] = f"{said[e.turn]} {e.text.strip()}" if e.turn in said else e.text.strip()
    spoken = {e.turn for e in events if e.type == "agent.speech.start"}
    cards = [d for k, d in messages if k == "card"]
    seen: dict[int, str] = {}
    plan_ids = {p.id for p in task.plans}
    for data in cards:
        card = data["card"]
        for c in card["captions"]:
            assert set(c) == {"turn", "text", "cut"}
            assert c["turn"] in spoken, c
            words = c["text"].removesuffix("…").split()
            assert said[c["turn"]].split()[:len(words)] == words, (c, said[c["turn"]])
            seen[c["turn"]] = c["text"]
        blob = json.dumps(card["captions"]).lower()
        for term in (*BLIND_TERMS, *RAW_EVENT_TYPES):
            assert term.lower() not in blob, term
        assert not [p for p in plan_ids if re.search(rf'"{re.escape(p)}"', blob)]
        rest = {k: v for k, v in card.items() if k != "captions"}
        _scan(json.dumps(rest), task, [f["value"] for f in card["facts"]], f"{base} card")
        for c in card["captions"]:
            assert c["text"] in data["html"].replace("&#39;", "'").replace("&amp;", "&")
    # Every spoken turn with words reached the page (the last three at most at once).
    assert seen and set(seen) == {t for t in said if t in spoken}
    assert len(cards[-1]["card"]["captions"]) <= 3
    meta = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
    assert meta["captions"] is True
    # The run belongs to its study: the run list's study filter finds it (issue 16).
    assert meta["format"] == 2 and meta["study"] == f"Study B #{meta['study_b_id']}"
    await app.state.live.close()


# --------------------------------------------------------------------------- access


def _participant_urls(token: str, sid: int) -> list[tuple[str, str]]:
    """Every participant URL: pages, the card fragment, the event stream, the WebRTC offer,
    End call, and the consent / microphone forms. (No participant URL serves a file.)"""
    return [
        ("GET", f"/p/{token}"), ("GET", f"/p/{token}/consent"), ("POST", f"/p/{token}/consent"),
        ("GET", f"/p/{token}/mic"), ("POST", f"/p/{token}/mic"),
        ("GET", f"/p/{token}/sessions"), ("GET", f"/p/{token}/s/{sid}"),
        ("HX", f"/p/{token}/s/{sid}"), ("GET", f"/p/{token}/s/{sid}/events"),
        ("POST", f"/p/{token}/s/{sid}/offer"), ("POST", f"/p/{token}/s/{sid}/end"),
        ("GET", f"/p/{token}/done"),
    ]


def _request(client: TestClient, method: str, path: str, csrf: str) -> httpx.Response:
    if method == "GET":
        return client.get(path, follow_redirects=False)
    if method == "HX":
        return client.get(path, headers={"HX-Request": "true"}, follow_redirects=False)
    return client.post(path, data={"csrf_token": csrf, "decision": "agree", "headphones": "yes"},
                       headers={"X-CSRF-Token": csrf}, follow_redirects=False)


def test_every_participant_url_refuses_everyone_but_its_participant(world: World,
                                                                   client: TestClient) -> None:
    a, b = world.tokens["P01"], world.tokens["P02"]
    _consent_and_mic(client, a)
    _consent_and_mic(client, b)
    csrf = _csrf(client.get(f"/p/{a}/mic").text)
    a_sid = world.sessions["P01"][0]
    urls = _participant_urls(a, a_sid)
    # Its own participant gets through (a page, a redirect or the stream's end).
    own = {path: _request(client, m, path, csrf).status_code for m, path in urls
           if not path.endswith(("/offer", "/end", "/events"))}
    assert all(code in (200, 303) for code in own.values()), own
    # Researcher logged in: the login opens nothing here.
    login_page = client.get("/login").text
    client.post("/login", data={"csrf_token": _csrf(login_page), "username": "ada",
                                "password": PASSWORD, "next": "/tasks"})
    csrf = _csrf(client.get("/tasks").text)
    intruders = {
        "another participant": b, "an annotator": world.annotator_token,
        "a draft study's participant": world.draft_token, "a made-up token": "n0t-a-t0ken",
        "a too-long token": "x" * 65,
    }
    for who, token in intruders.items():
        for method, path in _participant_urls(token, a_sid):
            if token == b and "/s/" not in path:
                continue  # the token is the identity: these are P02's own pages
            r = _request(client, method, path, csrf)
            assert r.status_code == 404, (who, method, path, r.status_code)
    # No token at all.
    for method, path in _participant_urls("", a_sid):
        r = _request(client, method, path, csrf)
        assert r.status_code in (404, 405), (method, path, r.status_code)
    # Session ids are not guessable into: P02's session with P01's token, and nonsense ids.
    b_sid = world.sessions["P02"][0]
    for sid in (b_sid, 0, 10**6):
        for method, path in _participant_urls(a, sid):
            if "/s/" in path:
                assert _request(client, method, path, csrf).status_code == 404, (path, sid)
    # P02 with their own token sees their own pages, none of P01's data.
    own_b = client.get(f"/p/{b}/s/{b_sid}")
    assert own_b.status_code == 200
    assert f"/p/{a}" not in own_b.text


# --------------------------------------------------------------------------- gold scan


def _hidden(task: TaskSpec, shown: list[Any]) -> set[str]:
    return hidden_gold_strings(task, shown)


def _scan(body: str, task: TaskSpec, shown: list[Any], where: str) -> None:
    leaked = find_hidden_gold(body, _hidden(task, shown))
    assert not leaked, f"{where}: gold values {leaked} reach the participant"
    lowered = body.lower()
    for term in BLIND_TERMS:
        assert term.lower() not in lowered, f"{where}: '{term}' reaches the participant"


def _sse_messages(body: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in body.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines()
                     if ": " in line and not line.startswith(":"))
        if "event" in lines:
            out.append((lines["event"], json.loads(lines["data"])))
    return out


async def test_gold_scan_of_two_sessions_driven_by_a_robot_participant(tmp_path: Path) -> None:
    """Both of P01's sessions run on the virtual clock with the scripted oracle; a robot
    participant speaks the bank realization of each plan the policy expects (its ASR returns
    that text). Every response and stream message is scanned against the card it carried (or
    the card at that moment)."""
    world = _setup(tmp_path)
    app = world.app
    app.state.live = _robot_calls(world)
    a = world.tokens["P01"]
    scanned = 0
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        for task_id in world.tasks["P01"]:
            task = find_task(task_id)
            volunteer = fact_values(task, volunteer_facts(task))
            for path in (f"/p/{a}", f"/p/{a}/consent", f"/p/{a}/mic", f"/p/{a}/sessions"):
                r = await http.get(path, follow_redirects=True)
                _scan(r.text, task, volunteer, path)
                scanned += 1
        await _agree_and_pass_the_mic_check(http, a)
        for sid, task_id in zip(world.sessions["P01"], world.tasks["P01"], strict=True):
            task = find_task(task_id)
            base = f"/p/{a}/s/{sid}"
            first = await http.get(base)
            assert first.status_code == 200, first.text[:300]
            call = app.state.live.get(sid)
            assert call is not None and call.state == "waiting"

            def shown_now(call: Any = call) -> list[Any]:
                return [f["value"] for f in call.card()["facts"]]

            _scan(first.text, task, shown_now(), base)
            stream = asyncio.ensure_future(http.get(f"{base}/events"))
            await asyncio.sleep(0.2)
            assert call.start()
            polled = 0
            while not call.done:
                shown = shown_now()
                for headers in ({}, {"HX-Request": "true"}):
                    r = await http.get(base, headers=headers)
                    _scan(r.text, task, shown + shown_now(), f"{base} {headers}")
                    polled += 1
                await asyncio.sleep(0.05)
            body = (await asyncio.wait_for(stream, 60)).text
            messages = _sse_messages(body)
            kinds = [k for k, _ in messages]
            assert kinds.count("card") >= 3 and "state" in kinds and kinds[-1] == "end"
            card: dict[str, Any] = {}
            for kind, data in messages:
                if kind == "card":
                    card = data["card"]
                shown = [f["value"] for f in card.get("facts", [])]
                # the call's clock is no task value: 2480 ms elapsed is not the $2,480 charge
                untimed = {k: v for k, v in data.items() if k != "elapsed_ms"}
                _scan(json.dumps(untimed), task, shown, f"{base}/events {kind}")
                for raw in RAW_EVENT_TYPES:
                    assert f'"{raw}"' not in json.dumps(data)
                scanned += 1
            # The stream revealed facts as they became available and showed the cues.
            final = [d["card"] for k, d in messages if k == "card"][-1]
            # The last cue stays in the box (done) until a newer one replaces it.
            assert final["shown_cue"] and final["shown_cue"]["id"] == final["cues"][-1]["id"]
            states = [d for k, d in messages if k in ("state", "end")]
            assert all(d["label"] == PARTICIPANT_LABELS[d["state"]] for d in states)
            first_card = next(d["card"] for k, d in messages if k == "card")
            assert not any(f["released"] for f in first_card["facts"])
            assert any(f["released"] for f in final["facts"])
            assert final["cues"], "no cue reached the participant"
            assert call.state == "complete", call.detail
            after = await http.get(base)
            _scan(after.text, task, shown_now(), f"{base} after")
            assert "This session is finished" in after.text
            assert _state_tag(after.text) == "Call finished – thank you"
            scanned += polled
        done = await http.get(f"/p/{a}/done")
        assert CODE in done.text
        for task_id in world.tasks["P01"]:
            _scan(done.text, find_task(task_id), [], "/done")
    assert scanned > 20
    rows = _rows(world, "P01")
    assert [r.state for r in rows] == ["complete", "complete"]
    assert all(r.run_dir and (world.settings.runs_dir / r.run_dir / "events.jsonl").is_file()
               for r in rows)
    assert rows[0].run_dir == f"study-b/{world.study_id}/P01/1-apexv1_070"
    assert _person(world, "P01").finished_at is not None
    await app.state.live.close()


async def test_the_stream_never_ends_with_the_status_of_a_running_call(tmp_path: Path) -> None:
    """The call ends between the stream reading its status and checking whether it is done:
    the final ``end`` still carries the ended state (the page shows the link to the next
    session only then; a stale "running" left it hidden, seen in the browser test)."""
    world = _setup(tmp_path)
    app = world.app
    app.state.live = _robot_calls(world)
    a = world.tokens["P01"]
    sid = world.sessions["P01"][0]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        await _agree_and_pass_the_mic_check(http, a)
        base = f"/p/{a}/s/{sid}"
        assert (await http.get(base)).status_code == 200
        call = app.state.live.get(sid)
        assert call is not None and call.state == "waiting"
        real_status = call.status

        def status_then_end() -> dict[str, Any]:
            status = real_status()
            if call.state == "waiting":
                call.state = "incomplete"  # the call ends right after its status was read
                call.signal.notify()
            return status

        call.status = status_then_end  # type: ignore[method-assign]
        body = (await asyncio.wait_for(http.get(f"{base}/events"), 30)).text
    messages = _sse_messages(body)
    assert messages[-1][0] == "end"
    assert messages[-1][1]["state"] == "incomplete"
