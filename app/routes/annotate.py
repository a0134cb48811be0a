"""Study A, annotator side. No login: the invitation token in the URL is the credential and
opens that annotator's queue only. An unknown token, or a position outside the queue, gets the
same plain 404 page.

Every page is rendered from :class:`app.study_a.ItemView` (the user's side of the task), never
from the task spec itself. Ratings are saved one at a time by JSON POSTs carrying the session's
CSRF header; opening an item records the position. The invitation link opens the first item
not yet fully rated, on any device. A rating is accepted only after the page has reported the
item's clip played to the end (``POST …/played``); first open, first play-through and first
complete rating are timestamped on the server (:class:`app.models_study_a.ItemVisit`).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response
from pydantic import ValidationError

from app import study_a as svc
from app.auth import verify_csrf
from app.deps import SessionDep, SettingsDep
from app.models_study_a import Annotator, StudyA, StudyAItem
from app.routes.tasks import catalogue
from app.templating import page_or_fragment, render

router = APIRouter()

NOT_FOUND = ("This annotation link is not valid. Check that you copied the whole link, or ask "
             "the researcher for a new one.")
NO_ITEM = "There is no such item in your queue."
PRIVATE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
           "X-Robots-Tag": "noindex, nofollow"}
"""Annotator responses are never cached or indexed, and the token never leaves in a Referer."""


def _annotator(session: SessionDep, token: str) -> Annotator:
    annotator = svc.annotator_by_token(session, token)
    if annotator is None:
        raise HTTPException(status_code=404, detail=NOT_FOUND)
    return annotator


def _item(session: SessionDep, annotator: Annotator, n: int) -> StudyAItem:
    if not 1 <= n <= len(annotator.order):
        raise HTTPException(status_code=404, detail=NO_ITEM)
    item = session.get(StudyAItem, annotator.order[n - 1])
    if item is None or item.study_id != annotator.study_id:
        raise HTTPException(status_code=404, detail=NO_ITEM)
    return item


def _private(response: Response) -> Response:
    response.headers.update(PRIVATE)
    return response


def _json(body: dict[str, Any], status: int = 200) -> Response:
    return _private(JSONResponse(body, status_code=status))


def _rating_json(rating: Any) -> dict[str, Any]:
    if rating is None:
        return {"fidelity": None, "naturalness": None, "leakage": None, "comment": ""}
    return {"fidelity": rating.fidelity, "naturalness": rating.naturalness,
            "leakage": rating.leakage, "comment": rating.comment}


def _locked_reason(session: SessionDep, annotator: Annotator) -> str | None:
    if annotator.submitted_at is not None:
        return ("Your ratings are handed in. Thank you! They are locked now; you can still "
                "look through the items.")
    study = session.get(StudyA, annotator.study_id)
    if study is None or study.status != "open":
        return "This study is closed; ratings can no longer be changed."
    return None


@router.get("/annotate/{token}")
async def annotate_start(token: str, session: SessionDep) -> Response:
    annotator = _annotator(session, token)
    n = svc.first_unrated(session, annotator) if annotator.submitted_at is None else None
    if n is None:  # nothing left to rate (or handed in): the overview, to submit or browse
        return _private(RedirectResponse(f"/annotate/{token}/overview", status_code=303))
    return _private(RedirectResponse(f"/annotate/{token}/item/{n}", status_code=303))


@router.get("/annotate/{token}/item/{n}")
async def annotate_item(request: Request, token: str, n: int, session: SessionDep) -> Response:
    annotator = _annotator(session, token)
    item = _item(session, annotator, n)
    task = catalogue(request).tasks.get(item.task_id)
    if task is None:
        raise HTTPException(status_code=404, detail=NO_ITEM)
    svc.set_position(session, annotator, n)
    svc.mark_opened(session, annotator, item)
    rating = svc.ratings_of(session, annotator).get(int(item.id or 0))
    total = len(annotator.order)
    context = {
        "user": None, "token": token, "n": n, "total": total, "v": svc.item_view(task, item),
        "p": svc.progress(session, annotator), "r": _rating_json(rating),
        "r_json": json.dumps(_rating_json(rating)),
        "locked": _locked_reason(session, annotator),
        "prev_url": f"/annotate/{token}/item/{n - 1}" if n > 1 else "",
        "next_url": f"/annotate/{token}/item/{n + 1}" if n < total else "",
        "first_visit": rating is None and n == 1,
        "played": svc.has_played(session, annotator, item),
    }
    return _private(page_or_fragment(request, "annotate.html", "_annotate_item.html", context))


async def _posted_item(request: Request, token: str, n: int,
                       session: SessionDep) -> tuple[Annotator, StudyAItem] | Response:
    """The annotator and item ``n`` of a JSON POST, or the JSON error to answer with: an unknown
    link or item (404), a failed CSRF check (403)."""
    annotator = svc.annotator_by_token(session, token)
    if annotator is None:
        return _json({"error": NOT_FOUND}, 404)
    if not 1 <= n <= len(annotator.order):
        return _json({"error": NO_ITEM}, 404)
    try:
        await verify_csrf(request)
    except HTTPException as exc:
        return _json({"error": str(exc.detail)}, 403)
    item = session.get(StudyAItem, annotator.order[n - 1])
    if item is None:
        return _json({"error": NO_ITEM}, 404)
    return annotator, item


@router.post("/annotate/{token}/item/{n}/rating")
async def annotate_rate(request: Request, token: str, n: int, session: SessionDep) -> Response:
    found = await _posted_item(request, token, n, session)
    if isinstance(found, Response):
        return found
    annotator, item = found
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _json({"error": "expected a JSON object such as {\"fidelity\": 4}"}, 400)
    if not isinstance(body, dict) or not body:
        return _json({"error": "expected a JSON object with fidelity (1–5), naturalness (1–5), "
                               "leakage (0 or 1) and/or comment"}, 400)
    try:
        change = svc.RatingUpdate.model_validate(body)
    except ValidationError as exc:
        return _json({"error": svc.validation_message(exc)}, 400)
    try:
        row = svc.save_rating_after_listening(session, annotator, item, change)
    except svc.RatingLocked as exc:
        return _json({"error": str(exc), "locked": True}, 409)
    except svc.NotPlayed as exc:
        return _json({"error": str(exc), "not_played": True}, 409)
    except svc.StudyAError as exc:
        return _json({"error": str(exc)}, 400)
    p = svc.progress(session, annotator)
    return _json({"saved": True, "position": n, "rating": _rating_json(row),
                  "complete": svc.is_complete(row), "done": p.done, "total": p.total,
                  "updated_at": row.updated_at.isoformat()})


@router.post("/annotate/{token}/item/{n}/played")
async def annotate_played(request: Request, token: str, n: int, session: SessionDep) -> Response:
    """The page's report that the item's clip played to the end: its ratings open."""
    found = await _posted_item(request, token, n, session)
    if isinstance(found, Response):
        return found
    annotator, item = found
    try:
        svc.mark_played(session, annotator, item)
    except svc.RatingLocked as exc:
        return _json({"error": str(exc), "locked": True}, 409)
    except svc.StudyAError as exc:
        return _json({"error": str(exc)}, 400)
    return _json({"played": True, "position": n})


@router.get("/annotate/{token}/audio/{n}")
async def annotate_audio(request: Request, token: str, n: int, session: SessionDep,
                         settings: SettingsDep) -> Response:
    annotator = _annotator(session, token)
    item = _item(session, annotator, n)
    found = svc.item_audio(item, catalogue(request).tasks, settings.data_dir)
    if found is None:
        raise HTTPException(status_code=404, detail="The audio of this item is missing; "
                                                    "please tell the researcher.")
    response = FileResponse(found[0], media_type=found[1], headers=svc.UPLOAD_HEADERS)
    response.headers.update({**PRIVATE, "Cache-Control": "private, max-age=3600"})
    return response


def _overview_context(request: Request, session: SessionDep, annotator: Annotator,
                      token: str, error: str | None = None) -> dict[str, Any]:
    ratings = svc.ratings_of(session, annotator)
    tasks = catalogue(request).tasks
    rows = []
    for n, item in enumerate(svc.queue(session, annotator), start=1):
        rating = ratings.get(int(item.id or 0))
        task = tasks.get(item.task_id)
        rows.append({"n": n, "scenario": svc.scenario_title(task) if task else "",
                     "r": _rating_json(rating),
                     "complete": svc.is_complete(rating),
                     "started": rating is not None})
    return {"user": None, "token": token, "rows": rows, "p": svc.progress(session, annotator),
            "locked": _locked_reason(session, annotator), "error": error,
            "next_unrated": svc.first_unrated(session, annotator)}


@router.get("/annotate/{token}/overview")
async def annotate_overview(request: Request, token: str, session: SessionDep) -> Response:
    annotator = _annotator(session, token)
    return _private(render(request, "annotate_overview.html",
                           _overview_context(request, session, annotator, token)))


@router.post("/annotate/{token}/submit", dependencies=[Depends(verify_csrf)])
async def annotate_submit(request: Request, token: str, session: SessionDep) -> Response:
    annotator = _annotator(session, token)
    try:
        svc.submit(session, annotator)
    except svc.StudyAError as exc:
        return _private(render(request, "annotate_overview.html",
                               _overview_context(request, session, annotator, token,
                                                 error=str(exc)), status=409))
    return _private(RedirectResponse(f"/annotate/{token}/overview", status_code=303))


@router.get("/annotate/{token}/state.json")
async def annotate_state(token: str, session: SessionDep) -> Response:
    """Progress and the saved ratings by position (what a second device needs to resume)."""
    annotator = _annotator(session, token)
    ratings = svc.ratings_of(session, annotator)
    p = svc.progress(session, annotator)
    return _json({
        "position": p.position, "done": p.done, "total": p.total, "finished": p.submitted,
        "items": [{"n": n, **_rating_json(ratings.get(i)),
                   "complete": svc.is_complete(ratings.get(i))}
                  for n, i in enumerate(annotator.order, start=1)],
    })
