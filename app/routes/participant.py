"""Study B participant pages (paper appendix F.1/F.3): every ``/p/{token}…`` route.

The token in the link is the participant's only credential: it opens this participant's own
consent, microphone check, sessions and end page, nothing else (another participant's
sessions, an annotator's token, a missing token and a researcher's login all get 404). The flow:
``/p/{token}`` records external ids from the link (Prolific's ``PROLIFIC_PID``, ``STUDY_ID``,
``SESSION_ID`` or the generic ``pid``, ``study``, ``session``) and sends the participant to
their next step: consent → microphone check → sessions, one after the other → end page (the
study's completion code and/or completion URL).

A session page shows the private role card, the cue box, the elapsed time and Start/End call;
the browser's microphone talks to the agent over WebRTC (``…/offer``) and the page follows the
card over Server-Sent Events (``…/events``), which carry role-card snapshots, call state and
elapsed time only, never the event log, the agent spec or the run directory.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Form, HTTPException, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from sqlalchemy import update
from sqlmodel import Session, col, select

from app.auth import verify_csrf
from app.deps import DbId, SessionDep, is_htmx
from app.live import (
    CallPlan,
    DbCallStore,
    LiveCall,
    LiveCallError,
    LiveCallManager,
    now_utc,
    participant_status,
    recover_interrupted,
)
from app.live_run import closing_manager, read_offer
from app.models_study_b import LiveSession, Participant, StudyB
from app.routes.tasks import catalogue
from app.security import event_stream
from app.settings import Settings
from app.study_b import StudyFull, claim_participant, claim_proof, holder_of, session_run_rel
from app.templating import render, templates
from app.throttle import client_key, throttle_for
from runtime.core.rundir import study_b_label
from runtime.session.campaign import AgentSpecError, parse_agent_spec

KEEPALIVE_S = 15.0
TICK_S = 1.0
"""How often the event stream sends the elapsed time while a call runs."""
MAX_TOKEN_CHARS = 64
MAX_EXTERNAL_ID_CHARS = 128
EXTERNAL_IDS = (
    ("external_pid", ("PROLIFIC_PID", "pid")),
    ("external_study_id", ("STUDY_ID", "study")),
    ("external_session_id", ("SESSION_ID", "session")),
)
"""Participant columns and the query parameters (Prolific's, then generic) that fill them."""
FINISHED = frozenset({"complete", "incomplete", "failed"})
OPEN_STUDY = frozenset({"launched", "closed"})
NOT_FOUND = "This link is not valid. Check that you copied the whole link you were given."
JOIN_PROOFS = "join_claims"
"""Session-cookie entry: digests of the places this browser claimed through shared links."""
MAX_JOIN_PROOFS = 20


def _manager_for(app: FastAPI) -> LiveCallManager:
    manager: LiveCallManager | None = getattr(app.state, "live", None)
    if manager is None:
        settings: Settings = app.state.settings
        recover_interrupted(app.state.engine, settings.runs_dir)
        manager = LiveCallManager(settings.runs_dir, store=DbCallStore(app.state.engine))
        app.state.live = manager
    return manager


# At start-up the manager marks sessions cut off by a previous stop incomplete.
router = APIRouter(lifespan=closing_manager("live", start=_manager_for))


async def live_manager(request: Request) -> LiveCallManager:
    """The app's live-call manager (created, after crash recovery, at start-up or on first use;
    tests may put their own on ``app.state.live``). Async, like :func:`_invitee`: no thread
    hop (a wait for a worker thread) while the request holds a database connection."""
    return _manager_for(request.app)


ManagerDep = Annotated[LiveCallManager, Depends(live_manager)]


# --------------------------------------------------------------------------- the token


class Invitee:
    """The participant a token opens, with their study."""

    def __init__(self, person: Participant, study: StudyB) -> None:
        self.person = person
        self.study = study

    @property
    def token(self) -> str:
        return self.person.token

    @property
    def base(self) -> str:
        return f"/p/{self.person.token}"


async def _invitee(db: SessionDep, token: str) -> Invitee:
    if not token or len(token) > MAX_TOKEN_CHARS:
        raise HTTPException(status_code=404, detail=NOT_FOUND)
    person = db.exec(select(Participant).where(Participant.token == token)).first()
    if person is None:
        raise HTTPException(status_code=404, detail=NOT_FOUND)
    study = db.get(StudyB, person.study_id)
    if study is None or study.status not in OPEN_STUDY:
        raise HTTPException(status_code=404, detail=NOT_FOUND)
    return Invitee(person, study)


InviteeDep = Annotated[Invitee, Depends(_invitee)]
CsrfDep = [Depends(verify_csrf)]


def _sessions(db: Session, person: Participant) -> list[LiveSession]:
    return list(db.exec(select(LiveSession).where(LiveSession.participant_id == person.id)
                        .order_by(col(LiveSession.position))).all())


def _next_step(db: Session, who: Invitee) -> str:
    if who.person.consent == "declined":
        return f"{who.base}/done"
    if who.person.consent != "given":
        return f"{who.base}/consent"
    if who.person.mic_checked_at is None:
        return f"{who.base}/mic"
    rows = _sessions(db, who.person)
    if rows and all(r.state in FINISHED for r in rows):
        return f"{who.base}/done"
    return f"{who.base}/sessions"


def _require_consent(who: Invitee) -> Response | None:
    if who.person.consent != "given":
        target = "done" if who.person.consent == "declined" else "consent"
        return RedirectResponse(f"{who.base}/{target}", status_code=303)
    return None


def _clean_external(value: str) -> str | None:
    """A query value fit to store as an external id (printable, bounded, not one of
    Prolific's unreplaced ``{{%…%}}`` placeholders)."""
    text = "".join(ch for ch in value if ch.isprintable()).strip()[:MAX_EXTERNAL_ID_CHARS]
    if not text or "{{%" in text:
        return None
    return text


def _record_external_ids(db: Session, who: Invitee, request: Request) -> None:
    changed = False
    for column, names in EXTERNAL_IDS:
        if getattr(who.person, column) is not None:
            continue  # the first visit's ids stay
        raw = next((request.query_params[n] for n in names if n in request.query_params), None)
        value = _clean_external(raw) if raw is not None else None
        if value is not None:
            setattr(who.person, column, value)
            changed = True
    if changed:
        db.add(who.person)
        db.commit()
        db.refresh(who.person)


def _external(request: Request, column: str) -> str | None:
    names = next(n for c, n in EXTERNAL_IDS if c == column)
    raw = next((request.query_params[n] for n in names if n in request.query_params), None)
    return _clean_external(raw) if raw is not None else None


def _ctx(request: Request, who: Invitee, **extra: Any) -> dict[str, Any]:
    return {"request": request, "base": who.base, "person": who.person, **extra}


# --------------------------------------------------------------------------- entry, consent


@router.get("/p/{token}")
async def p_entry(request: Request, db: SessionDep, who: InviteeDep) -> Response:
    _record_external_ids(db, who, request)
    return RedirectResponse(_next_step(db, who), status_code=303)


@router.get("/p/join/{join_token}")
async def p_join(request: Request, db: SessionDep, join_token: str) -> Response:
    """The study's shared link (one URL for a whole recruitment platform study): the external
    participant id it carries (``PROLIFIC_PID`` or ``pid``) gets the participant it claimed
    before, or the next unclaimed one; then the ordinary flow under that participant's link."""
    study = None
    if join_token and len(join_token) <= MAX_TOKEN_CHARS:
        study = db.exec(select(StudyB).where(StudyB.join_token == join_token)).first()
    if study is None or study.status != "launched":
        raise HTTPException(status_code=404, detail=NOT_FOUND)
    pid = _external(request, "external_pid")
    if pid is None:
        raise HTTPException(status_code=400, detail=(
            "This shared study link needs your participant id. Open it from the recruitment "
            "platform's study page (it adds your id to the link), or use the personal link "
            "you were sent."))
    # Hardening (docs/security.md): a place is reopened only by the browser that claimed it
    # (a participant id alone is no credential); new claims are rate limited per link and per
    # client address; a claim expires when its participant never answers the consent page.
    proofs = request.session.get(JOIN_PROOFS)
    proofs = [p for p in proofs if isinstance(p, str)] if isinstance(proofs, list) else []
    holder = holder_of(db, study, pid)
    if holder is not None and claim_proof(holder) in proofs:
        return RedirectResponse(f"/p/{holder.token}", status_code=303)
    settings: Settings = request.app.state.settings
    throttle = throttle_for(request.app)
    limits = ((throttle.join_link, f"join:{study.id}"),
              (throttle.join_client, f"join-{client_key(request)}"))
    verdict = throttle.check(*limits)
    if not verdict.allowed:
        minutes = max(1, round(verdict.retry_after_s / 60))
        page = render(request, "error.html", {
            "status": 429, "message": "Too many people are joining through this link right "
            f"now. Please try again in {minutes} minute{'s' if minutes != 1 else ''}."},
            status=429)
        page.headers["Retry-After"] = str(verdict.retry_after_s)
        return page
    throttle.hit(*limits)
    if holder is not None:
        return render(request, "error.html", {
            "status": 403, "message": "This participant id has already joined this study. "
            "Continue with your personal link (the address your browser went to when you "
            "first joined), in the browser you joined with. If you lost it, contact the "
            "researcher through the recruitment platform."}, status=403)
    try:
        person = claim_participant(
            db, study, pid, _external(request, "external_study_id"),
            _external(request, "external_session_id"),
            expire_after=timedelta(minutes=settings.join_claim_expiry_minutes))
    except StudyFull:
        return render(request, "error.html", {
            "status": 409, "message": "This study has no free places left. Thank you for your "
            "interest; please return the study on the recruitment platform."}, status=409)
    request.session[JOIN_PROOFS] = [*proofs, claim_proof(person)][-MAX_JOIN_PROOFS:]
    return RedirectResponse(f"/p/{person.token}", status_code=303)


@router.get("/p/{token}/consent")
async def p_consent(request: Request, db: SessionDep, who: InviteeDep) -> Response:
    if who.person.consent != "pending":
        return RedirectResponse(_next_step(db, who), status_code=303)
    paragraphs = [p.strip() for p in who.study.consent_text.split("\n\n") if p.strip()]
    return render(request, "participant_consent.html", _ctx(
        request, who, paragraphs=paragraphs, n_sessions=len(_sessions(db, who.person))))


@router.post("/p/{token}/consent", dependencies=CsrfDep)
async def p_consent_post(request: Request, db: SessionDep, who: InviteeDep,
                         decision: Annotated[str, Form()] = "") -> Response:
    if decision not in ("agree", "decline"):
        raise HTTPException(status_code=400, detail="choose “I agree” or “I do not agree”")
    if who.person.consent == "pending":  # a decision, once made, stays
        # Conditional on the token: a join-link claim that expired at this very moment (its
        # place handed on, with a new token) must not get this visitor's consent.
        token = who.person.token
        db.execute(
            update(Participant)
            .where(col(Participant.id) == who.person.id, col(Participant.token) == token,
                   col(Participant.consent) == "pending")
            .values(consent="given" if decision == "agree" else "declined",
                    consent_at=now_utc())
            .execution_options(synchronize_session=False))
        db.commit()
        db.refresh(who.person)
        if who.person.token != token:
            raise HTTPException(status_code=404, detail=NOT_FOUND)
    return RedirectResponse(_next_step(db, who), status_code=303)


# --------------------------------------------------------------------------- microphone check


@router.get("/p/{token}/mic")
async def p_mic(request: Request, who: InviteeDep) -> Response:
    blocked = _require_consent(who)
    if blocked is not None:
        return blocked
    return render(request, "participant_mic.html", _ctx(request, who))


HEADPHONES_MISSING = ("Please play the test sound and confirm that you heard it and are "
                      "wearing headphones before you continue.")


@router.post("/p/{token}/mic", dependencies=CsrfDep)
async def p_mic_post(request: Request, db: SessionDep, who: InviteeDep,
                     headphones: Annotated[str, Form()] = "") -> Response:
    """Continuing records the microphone check and the headphone confirmation (the test sound
    heard, headphones on: speakers would let the agent hear its own voice)."""
    blocked = _require_consent(who)
    if blocked is not None:
        return blocked
    if headphones != "yes":
        return render(request, "participant_mic.html",
                      _ctx(request, who, error=HEADPHONES_MISSING), status=400)
    now = now_utc()
    who.person.mic_checked_at = now
    who.person.headphones_checked_at = now
    db.add(who.person)
    db.commit()
    return RedirectResponse(f"{who.base}/sessions", status_code=303)


# --------------------------------------------------------------------------- sessions


def _session_views(rows: list[LiveSession]) -> list[dict[str, Any]]:
    """Sessions as the participant sees them: number, state, whether it is open now. Never
    the task id or the system."""
    out: list[dict[str, Any]] = []
    open_found = False
    for k, row in enumerate(rows, start=1):
        finished = row.state in FINISHED
        available = not finished and not open_found
        if available:
            open_found = True
        out.append({"k": k, "n": len(rows), "id": row.id, "state": row.state,
                    "finished": finished, "available": available})
    return out


@router.get("/p/{token}/sessions")
async def p_sessions(request: Request, db: SessionDep, who: InviteeDep) -> Response:
    blocked = _require_consent(who)
    if blocked is not None:
        return blocked
    if who.person.mic_checked_at is None:
        return RedirectResponse(f"{who.base}/mic", status_code=303)
    views = _session_views(_sessions(db, who.person))
    return render(request, "participant_sessions.html", _ctx(
        request, who, sessions=views, all_done=bool(views) and all(v["finished"] for v in views),
    ))


def _own_session(db: Session, who: Invitee, session_id: int) -> tuple[LiveSession, int, int]:
    """This participant's session ``session_id`` with its number k of n; 404 for any other."""
    rows = _sessions(db, who.person)
    for k, row in enumerate(rows, start=1):
        if row.id == session_id:
            return row, k, len(rows)
    raise HTTPException(status_code=404, detail=NOT_FOUND)


async def _call_for(request: Request, db: Session, who: Invitee, row: LiveSession,
                    manager: LiveCallManager) -> LiveCall | None:
    """The live call of a session that has not finished (opened on first use); None when it
    has finished or cannot run (then the row says why)."""
    assert row.id is not None
    call = manager.get(row.id)
    if call is not None:
        return call
    if row.state in FINISHED or row.state == "running":
        # ``running`` without a call here: this server did not start it (recovery marks it
        # incomplete at start-up); nothing to rejoin.
        return None
    task = catalogue(request).tasks.get(row.task_id)
    problem = None
    factory = None
    if task is None:
        problem = f"task '{row.task_id}' is not in this server's suite"
    else:
        try:
            factory = parse_agent_spec(row.system)
        except (AgentSpecError, ImportError) as exc:
            problem = f"agent spec cannot run: {exc}"
    if problem is not None or task is None or factory is None:
        row.state, row.detail = "failed", problem or "cannot run"
        db.add(row)
        db.commit()
        return None
    settings: Settings = request.app.state.settings
    rel = session_run_rel(who.study.id or 0, who.person.label, row.position, row.task_id)
    run_dir = settings.runs_dir / rel
    if (run_dir / "events.jsonl").exists():  # a start that never reached the database
        run_dir.rename(run_dir.with_name(f"{run_dir.name}.stale-{int(time.time())}"))
    plan = CallPlan(
        key=row.id, task=task, factory=factory, run_dir=run_dir, run_rel=rel,
        seed=who.study.seed,
        on_disconnect="incomplete" if who.study.on_disconnect == "incomplete" else "rejoin",
        meta={"study": study_b_label(who.study.id or 0), "study_b_id": who.study.id,
              "participant": who.person.label,
              "position": row.position, "anchor": row.anchor, "captions": who.study.captions},
        captions=who.study.captions,
    )
    _release(db)  # opening a call loads models in threads: no connection is held meanwhile
    return await manager.open(plan)


def _release(db: Session) -> None:
    """Hand the session's connection back to the pool before a long wait (opening a call, a
    WebRTC answer, hanging up); the rows already read stay readable, and the session opens a
    new connection only if it is used again."""
    db.close()


def _card_html(card: dict[str, Any]) -> str:
    return templates.get_template("_participant_card.html").render(card=card)


@router.get("/p/{token}/s/{session_id}")
async def p_session(request: Request, db: SessionDep, who: InviteeDep, session_id: DbId,
                    manager: ManagerDep) -> Response:
    blocked = _require_consent(who)
    if blocked is not None:
        return blocked
    if who.person.mic_checked_at is None:
        return RedirectResponse(f"{who.base}/mic", status_code=303)
    row, k, n = _own_session(db, who, session_id)
    views = _session_views(_sessions(db, who.person))
    if not views[k - 1]["available"] and row.state not in FINISHED:
        return RedirectResponse(f"{who.base}/sessions", status_code=303)
    call = await _call_for(request, db, who, row, manager)
    card = call.card() if call is not None else None
    status = call.status() if call is not None else _ended_status(row.state)
    context = _ctx(request, who, k=k, n=n, session_id=row.id, card=card, status=status,
                   on_disconnect=who.study.on_disconnect, is_last=k == n)
    if is_htmx(request):
        return render(request, "_participant_card.html", context)
    return render(request, "participant_session.html", context)


def _ended_status(state: str) -> dict[str, Any]:
    return participant_status(state)


async def _live_call(request: Request, db: Session, who: Invitee, session_id: int,
                     manager: LiveCallManager) -> LiveCall:
    blocked = _require_consent(who)
    if blocked is not None or who.person.mic_checked_at is None:
        raise HTTPException(status_code=404, detail=NOT_FOUND)
    row, k, _ = _own_session(db, who, session_id)
    if not _session_views(_sessions(db, who.person))[k - 1]["available"]:
        raise HTTPException(status_code=404, detail=NOT_FOUND)
    call = await _call_for(request, db, who, row, manager)
    if call is None:
        raise HTTPException(status_code=404, detail=NOT_FOUND)
    _release(db)
    return call


@router.post("/p/{token}/s/{session_id}/offer", dependencies=CsrfDep)
async def p_offer(request: Request, db: SessionDep, who: InviteeDep, session_id: DbId,
                  manager: ManagerDep) -> Response:
    call = await _live_call(request, db, who, session_id, manager)
    if who.study.status != "launched":
        return JSONResponse({"error": "this study is closed"}, status_code=409)
    offer = await read_offer(request)
    if offer is None:
        return JSONResponse({"error": "expected JSON {sdp, type}"}, status_code=400)
    try:
        manager.check_capacity(call)
        answer = await call.answer(*offer)
    except LiveCallError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    call.last_seen = time.monotonic()
    return JSONResponse(answer)


@router.post("/p/{token}/s/{session_id}/end", dependencies=CsrfDep)
async def p_end(request: Request, db: SessionDep, who: InviteeDep, session_id: DbId,
                manager: ManagerDep) -> Response:
    call = await _live_call(request, db, who, session_id, manager)
    await call.hang_up()
    if is_htmx(request) or request.headers.get("X-Requested-With") == "fetch":
        return Response(status_code=204)
    return RedirectResponse(f"{who.base}/s/{session_id}", status_code=303)


def _sse(event: str, data: str) -> str:
    return f"event: {event}\ndata: {data}\n\n"


@router.get("/p/{token}/s/{session_id}/events")
async def p_events(request: Request, db: SessionDep, who: InviteeDep, session_id: DbId,
                   manager: ManagerDep) -> Response:
    """Server-Sent Events: ``card`` (the role card as HTML and as data, whenever it changes),
    ``state`` (call state and elapsed time, at most once a second) and a final ``end``. The
    stream reads the call's in-memory state only (the database session is closed when this
    function returns); a link holds at most ``MAX_STREAMS_PER_LINK`` streams (429 beyond)."""
    call = await _live_call(request, db, who, session_id, manager)

    async def stream() -> AsyncIterator[str]:
        call.subscribers += 1
        call.page_seen = True
        call.last_seen = time.monotonic()
        try:
            yield "retry: 2000\n\n"
            sent_card: dict[str, Any] | None = None
            sent_status: dict[str, Any] | None = None
            while True:
                changed = call.signal.changed()
                # Read before the status: a call that ends in between must not end the stream
                # with the status of a running call (the page would keep "End call" and hide
                # the link to the next session).
                done = call.done
                card = call.card()
                if card != sent_card:
                    sent_card = card
                    yield _sse("card", json.dumps({"card": card, "html": _card_html(card)}))
                status = call.status()
                if status != sent_status:
                    sent_status = status
                    yield _sse("state", json.dumps(status))
                if done:
                    yield _sse("end", json.dumps(status))
                    return
                try:
                    await asyncio.wait_for(changed.wait(),
                                           TICK_S if call.state == "running" else KEEPALIVE_S)
                except TimeoutError:
                    if call.state != "running":
                        yield ": keepalive\n\n"
        finally:
            call.subscribers -= 1
            call.last_seen = time.monotonic()

    return event_stream(request.app.state.streams, f"participant:{who.person.id}", stream,
                        STREAMS_TAKEN)


STREAMS_TAKEN = ("This session is already open in other tabs or windows. Close the other tabs "
                 "of this study, then reload this page.")


# --------------------------------------------------------------------------- the end


@router.get("/p/{token}/done")
async def p_done(request: Request, db: SessionDep, who: InviteeDep) -> Response:
    declined = who.person.consent == "declined"
    if not declined:
        blocked = _require_consent(who)
        if blocked is not None:
            return blocked
        rows = _sessions(db, who.person)
        if not rows or not all(r.state in FINISHED for r in rows):
            return RedirectResponse(f"{who.base}/sessions", status_code=303)
    url = who.study.completion_url.strip()
    if not url.startswith(("https://", "http://")):
        url = ""
    return render(request, "participant_done.html", _ctx(
        request, who, declined=declined, code=who.study.completion_code.strip(),
        completion_url=url))
