"""Demo mode: pick a task and an agent, run it live on the realtime clock, listen over WebRTC
(or, in mic mode, take the caller's part with your microphone and the role card) and watch the
transcript, tools, artifact, authorization and duplex events arrive; the four gates, AFA and
the field table at the end."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from app.auth import UserDep, verify_csrf
from app.demo import (
    MODES,
    DemoBusy,
    DemoError,
    DemoManager,
    DemoMode,
    DemoSession,
    agent_choices,
    resolve_agent,
)
from app.deps import is_htmx
from app.live_run import closing_manager, read_offer
from app.routes.tasks import catalogue, get_task
from app.runindex import grade_cached
from app.security import event_stream
from app.settings import Settings
from app.templating import page_or_fragment, render, shown, templates
from grading.gates import RunGrade
from runtime.core.rundir import RunDir, RunDirError
from runtime.core.spec import TaskSpec

KEEPALIVE_S = 15.0


router = APIRouter(lifespan=closing_manager("demo"))


def demo_manager(request: Request) -> DemoManager:
    """The app's demo manager (created on first use; tests may put their own on app.state)."""
    manager: DemoManager | None = getattr(request.app.state, "demo", None)
    if manager is None:
        settings: Settings = request.app.state.settings
        manager = DemoManager(settings.runs_dir)
        request.app.state.demo = manager
    return manager


ManagerDep = Annotated[DemoManager, Depends(demo_manager)]


def _session(manager: DemoManager, session_id: str, user_name: str) -> DemoSession:
    session = manager.get(session_id)
    if session is None or session.owner != user_name:
        raise HTTPException(status_code=404, detail=f"No live demo '{session_id}'.")
    return session


def _task_context(task: TaskSpec) -> list[dict[str, Any]]:
    """The artifact schema the live page fills in (names and labels only)."""
    return [{"id": a.id, "title": a.title, "fields": [f.name for f in a.fields]}
            for a in task.artifacts]


@router.get("/demo")
async def demo_picker(request: Request, user: UserDep, manager: ManagerDep) -> Response:
    tasks = catalogue(request).tasks
    task_id = request.query_params.get("task") or ("apexv1_070" if "apexv1_070" in tasks
                                                  else next(iter(sorted(tasks)), ""))
    task = get_task(request, task_id) if task_id else None
    choices = agent_choices(task, os.environ) if task is not None else []
    mine = [s for s in manager.sessions.values() if s.owner == user.username]
    return page_or_fragment(request, "demo.html", "_demo_agents.html", {
        "user": user, "tasks": sorted(tasks.values(), key=lambda t: t.id), "task": task,
        "choices": choices, "sessions": mine, "error": None, "modes": MODES,
    })


@router.post("/demo", dependencies=[Depends(verify_csrf)])
async def demo_create(
    request: Request, user: UserDep, manager: ManagerDep, task: Annotated[str, Form()] = "",
    agent: Annotated[str, Form()] = "", seed: Annotated[str, Form()] = "0",
    mode: Annotated[str, Form()] = "listen",
) -> Response:
    spec = get_task(request, task)
    if mode not in MODES:
        raise HTTPException(status_code=400,
                            detail=f"mode '{mode}' is not one of: {', '.join(MODES)}")
    demo_mode: DemoMode = "mic" if mode == "mic" else "listen"
    try:
        seed_value = int(seed)
        if not 0 <= seed_value < 2**31:
            raise ValueError
    except ValueError:
        raise HTTPException(
            status_code=400, detail=f"seed '{seed}' is not a whole number from 0 to 2^31−1"
        ) from None
    try:
        factory = resolve_agent(spec, agent, os.environ)
        session = await manager.open(spec, factory, owner=user.username, seed=seed_value,
                                     mode=demo_mode)
    except DemoBusy as exc:
        return render(request, "error.html", {"status": 429, "message": str(exc)}, status=429)
    except DemoError as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from None
    return RedirectResponse(f"/demo/{session.id}", status_code=303)


@router.get("/demo/{session_id}")
async def demo_page(request: Request, session_id: str, user: UserDep,
                    manager: ManagerDep) -> Response:
    session = manager.get(session_id)
    if session is None or session.owner != user.username:
        run_dir = manager.find_run_dir(session_id)
        if run_dir is not None:  # the server forgot the session; its run replays
            rel = run_dir.relative_to(manager.runs_dir)
            return RedirectResponse(f"/runs/{rel}/replay", status_code=303)
        raise HTTPException(status_code=404, detail=f"No live demo '{session_id}'.")
    return page_or_fragment(request, "demo_live.html", "_demo_status.html", {
        "user": user, "s": session, "artifacts": _task_context(session.task),
        "card": session.card(), **_result_context(request, manager, session_id, session),
    })


@router.post("/demo/{session_id}/offer", dependencies=[Depends(verify_csrf)])
async def demo_offer(request: Request, session_id: str, user: UserDep,
                     manager: ManagerDep) -> Response:
    session = _session(manager, session_id, user.username)
    offer = await read_offer(request)
    if offer is None:
        return JSONResponse({"error": "expected JSON {sdp, type}"}, status_code=400)
    try:
        answer = await session.answer(*offer)
    except DemoError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    session.last_seen = time.monotonic()
    return JSONResponse(answer)


@router.post("/demo/{session_id}/start", dependencies=[Depends(verify_csrf)])
async def demo_start(request: Request, session_id: str, user: UserDep,
                     manager: ManagerDep) -> Response:
    """Start without (or before) the audio connection."""
    _session(manager, session_id, user.username).start()
    if is_htmx(request):
        return Response(status_code=204)
    return RedirectResponse(f"/demo/{session_id}", status_code=303)


@router.post("/demo/{session_id}/stop", dependencies=[Depends(verify_csrf)])
async def demo_stop(request: Request, session_id: str, user: UserDep,
                    manager: ManagerDep) -> Response:
    _session(manager, session_id, user.username).request_stop("stopped by the researcher")
    if is_htmx(request):
        return Response(status_code=204)
    return RedirectResponse(f"/demo/{session_id}", status_code=303)


def _card_html(card: dict[str, Any]) -> str:
    """The role card as the Study B participant page renders it."""
    return templates.get_template("_participant_card.html").render(card=card)


def _sse(event: str, data: str, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {data}\n\n"


@router.get("/demo/{session_id}/events")
async def demo_events(request: Request, session_id: str, user: UserDep,
                      manager: ManagerDep) -> Response:
    """Server-Sent Events: ``log`` (each event-log entry, id = seq), ``state`` (its
    ``state`` leaves ``running`` as soon as the run logs ``session.end``), ``card`` in mic
    mode (the caller's role card, as HTML and data, whenever it changes) and a final ``end``
    once the run is graded. A reconnecting browser sends Last-Event-ID and gets only what it
    missed. The stream holds no database connection; a demo holds at most
    ``MAX_STREAMS_PER_LINK``."""
    session = _session(manager, session_id, user.username)
    try:
        after = int(request.headers.get("Last-Event-ID", "0"))
    except ValueError:
        after = 0

    async def stream() -> AsyncIterator[str]:
        session.subscribers += 1
        try:
            yield "retry: 2000\n\n"
            index = next((i for i, (seq, _) in enumerate(session.events) if seq > after),
                         len(session.events))
            sent_status: dict[str, Any] | None = None
            sent_card: dict[str, Any] | None = None
            while True:
                changed = session.changed()
                # Read first: the last events, card and status sent are never older than it.
                finished = session.done and session.graded
                while index < len(session.events):
                    seq, data = session.events[index]
                    index += 1
                    yield _sse("log", data, seq)
                card = session.card()
                if card is not None and card != sent_card:
                    sent_card = card
                    yield _sse("card", json.dumps({"card": card, "html": _card_html(card)}))
                status = session.status()
                if status != sent_status:
                    sent_status = status
                    yield _sse("state", json.dumps(status))
                if finished and index >= len(session.events):
                    yield _sse("end", json.dumps(status))
                    return
                try:
                    await asyncio.wait_for(changed.wait(), KEEPALIVE_S)
                except TimeoutError:
                    yield ": keepalive\n\n"
        finally:
            session.subscribers -= 1
            session.last_seen = time.monotonic()

    return event_stream(request.app.state.streams, f"demo:{session.id}", stream, (
        "This demo is already open in other tabs or windows. Close the other tabs of this "
        "demo, then reload this page."))


def _result_context(request: Request, manager: DemoManager, session_id: str,
                    session: DemoSession | None) -> dict[str, Any]:
    grade: RunGrade | None = None
    problem: str | None = None
    run_dir: Path | None = None
    if session is not None:
        run_dir, grade, problem = session.run_dir, session.grade, session.grade_problem
        if not (session.done and session.graded):
            return {"grade": None, "grade_problem": None, "replay": None, "ended": False,
                    "grading": session.done}
    else:
        run_dir = manager.find_run_dir(session_id)
        if run_dir is None:
            raise HTTPException(status_code=404, detail=f"No live demo '{session_id}'.")
        try:
            grade = grade_cached(run_dir, catalogue(request).tasks)
        except RunDirError as exc:
            problem = str(exc)
    replay = None
    if run_dir is not None and RunDir(run_dir).exists():
        replay = f"/runs/{run_dir.relative_to(manager.runs_dir)}/replay"
    return {"grade": grade, "grade_problem": shown(request, problem) if problem else None,
            "replay": replay, "ended": True, "grading": False}


@router.get("/demo/{session_id}/result")
async def demo_result(request: Request, session_id: str, user: UserDep,
                      manager: ManagerDep) -> Response:
    """The four gates, WS, AFA and the field table once the run has ended."""
    session = manager.get(session_id)
    if session is not None and session.owner != user.username:
        session = None
    context = _result_context(request, manager, session_id, session)
    return page_or_fragment(request, "demo_result.html", "_demo_result.html", {
        "user": user, "session_id": session_id, "s": session, **context,
    })
