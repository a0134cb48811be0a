"""Study A, researcher side (login required, CSRF on every POST): create a study from the
sampler, hand out annotator links, add calibration items, monitor progress, close the study,
read the agreement report (the paper's Table 9) and export ratings and results."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from pydantic import ValidationError
from starlette.datastructures import UploadFile as FormFile

from app import study_a as svc
from app.auth import UserDep, current_user, verify_csrf
from app.deps import DbId, SessionDep, SettingsDep
from app.models_study_a import StudyA, StudyAItem
from app.routes.tasks import catalogue
from app.templating import page_or_fragment, render
from runtime.core.spec import TaskSpec

router = APIRouter()
CSRF = [Depends(current_user), Depends(verify_csrf)]
"""The login is checked first, then the CSRF token: nobody logged out gets a body read."""


def _study(session: SessionDep, study_id: int) -> StudyA:
    study = svc.get_study(session, study_id)
    if study is None:
        raise HTTPException(status_code=404, detail=f"No Study A with id {study_id}.")
    return study


def _item_rows(items: list[StudyAItem], tasks: dict[str, TaskSpec]) -> list[dict[str, Any]]:
    rows = []
    for item in items:
        task = tasks.get(item.task_id)
        plan = task.plan(item.plan_id) if task is not None else None
        text = item.calibration_text or ""
        if plan is not None and not item.calibration:
            text = next((r.text for r in plan.realizations if r.id == item.realization_id), "")
        rows.append({
            "item": item, "task": task, "intent": plan.intent if plan else "?",
            "archetype": task.taxonomy.archetype if task else "?", "text": text,
            "missing": task is None or plan is None,
        })
    return rows


def _annotator_rows(request: Request, session: SessionDep, study: StudyA) -> list[dict[str, Any]]:
    assert study.id is not None
    base = str(request.base_url).rstrip("/")
    return [{"a": a, "link": f"{base}/annotate/{a.token}", "p": svc.progress(session, a)}
            for a in svc.study_annotators(session, study.id)]


def _study_context(request: Request, session: SessionDep, study: StudyA,
                   error: str | None = None, notice: str | None = None) -> dict[str, Any]:
    assert study.id is not None
    tasks = catalogue(request).tasks
    items = svc.study_items(session, study.id)
    contexts = sorted({(i.task_id, i.plan_id) for i in items if not i.calibration})
    return {
        "study": study, "items": _item_rows(items, tasks),
        "n_items": sum(1 for i in items if not i.calibration),
        "n_calibration": sum(1 for i in items if i.calibration),
        "annotators": _annotator_rows(request, session, study),
        "report": study.sample_report or {}, "contexts": contexts, "error": error,
        "notice": notice, "formats": ", ".join(sorted(svc.AUDIO_FORMATS)),
        "max_mib": svc.CALIBRATION_MAX_BYTES // 2**20,
    }


@router.get("/studies/a")
async def study_list(request: Request, user: UserDep, session: SessionDep) -> Response:
    defaults = svc.StudyACreate.model_fields
    form = {k: (f.default if k != "name" else "") for k, f in defaults.items()}
    return _list_page(request, user, session, form, None)


def _list_page(request: Request, user: Any, session: SessionDep, form: dict[str, Any],
               error: str | None, status: int = 200) -> Response:
    studies = []
    for s in svc.list_studies(session):
        assert s.id is not None
        people = svc.study_annotators(session, s.id)
        progress = [svc.progress(session, a) for a in people]
        studies.append({"s": s, "n_items": len(svc.study_items(session, s.id)),
                        "annotators": len(people),
                        "submitted": sum(1 for p in progress if p.submitted),
                        "done": sum(p.done for p in progress),
                        "total": sum(p.total for p in progress)})
    return render(request, "study_a_list.html", {
        "user": user, "studies": studies, "form": form, "error": error,
        "pool": len(catalogue(request).audit_tasks()),
    }, status=status)


@router.post("/studies/a", dependencies=CSRF)
async def study_create(
    request: Request, user: UserDep, session: SessionDep,
    name: Annotated[str, Form()] = "", seed: Annotated[str, Form()] = "0",
    n_tasks: Annotated[str, Form()] = "24", plans_per_task: Annotated[str, Form()] = "3",
    n_annotators: Annotated[str, Form()] = str(svc.DEFAULT_ANNOTATORS),
) -> Response:
    raw = {"name": name, "seed": seed, "n_tasks": n_tasks, "plans_per_task": plans_per_task,
           "n_annotators": n_annotators}
    try:
        params = svc.StudyACreate.model_validate(raw)
    except ValidationError as exc:
        return _list_page(request, user, session, dict(raw), svc.validation_message(exc), 400)
    try:
        study = svc.create_study(session, catalogue(request).audit_tasks(), params,
                                 created_by=user.username)
    except svc.StudyAError as exc:
        return _list_page(request, user, session, params.model_dump(), str(exc), 400)
    return RedirectResponse(f"/studies/a/{study.id}", status_code=303)


@router.get("/studies/a/{study_id}")
async def study_page(request: Request, study_id: DbId, user: UserDep,
                     session: SessionDep) -> Response:
    study = _study(session, study_id)
    return render(request, "study_a.html", {"user": user,
                                            **_study_context(request, session, study)})


@router.get("/studies/a/{study_id}/annotators")
async def study_annotators(request: Request, study_id: DbId, user: UserDep,
                           session: SessionDep) -> Response:
    """The annotator table (links and progress); HTMX polls it to monitor a running study."""
    study = _study(session, study_id)
    return page_or_fragment(request, "study_a.html", "_study_a_annotators.html", {
        "user": user, **_study_context(request, session, study)})


@router.post("/studies/a/{study_id}/annotators", dependencies=CSRF)
async def study_add_annotator(request: Request, study_id: DbId, user: UserDep,
                              session: SessionDep,
                              label: Annotated[str, Form()] = "") -> Response:
    study = _study(session, study_id)
    try:
        svc.add_annotator(session, study, label)
    except svc.StudyAError as exc:
        return render(request, "study_a.html", {
            "user": user, **_study_context(request, session, study, error=str(exc))}, 400)
    return RedirectResponse(f"/studies/a/{study_id}#annotators", status_code=303)


@router.post("/studies/a/{study_id}/calibration", dependencies=CSRF)
async def study_add_calibration(
    request: Request, study_id: DbId, user: UserDep, session: SessionDep,
    settings: SettingsDep,
) -> Response:
    """The upload form (audio, context, text, note, name) is read here, after the login and
    CSRF checks: as route parameters FastAPI would parse it before any check. The audio is
    decoded whole (in a worker thread, off the event loop) before it is accepted."""
    study = _study(session, study_id)
    try:
        form = await request.form(max_files=1, max_fields=10)
        audio = form.get("audio")
        if not isinstance(audio, FormFile) or not audio.filename:
            raise svc.StudyAError("choose an audio file (WAV, Ogg/Opus, MP3 or FLAC)")
        data = await audio.read(svc.CALIBRATION_MAX_BYTES + 1)
        fields = {k: str(form.get(k) or "") for k in ("context", "text", "note", "name")}
        await asyncio.to_thread(
            svc.add_calibration_item, session, study, catalogue(request).tasks,
            data_dir=settings.data_dir, filename=audio.filename,
            content_type=audio.content_type or "", audio=data, **fields)
    except svc.StudyAError as exc:
        return render(request, "study_a.html", {
            "user": user, **_study_context(request, session, study, error=str(exc))}, 400)
    return RedirectResponse(f"/studies/a/{study_id}#items", status_code=303)


@router.get("/studies/a/{study_id}/items/{item_id}/audio")
async def study_item_audio(request: Request, study_id: DbId, item_id: DbId, user: UserDep,
                           session: SessionDep, settings: SettingsDep) -> Response:
    """Any item's audio for the researcher (calibration uploads included)."""
    item = session.get(StudyAItem, item_id)
    if item is None or item.study_id != study_id:
        raise HTTPException(status_code=404, detail="No such item in this study.")
    found = svc.item_audio(item, catalogue(request).tasks, settings.data_dir)
    if found is None:
        raise HTTPException(status_code=404, detail="This item's audio file is missing.")
    return FileResponse(found[0], media_type=found[1], headers=svc.UPLOAD_HEADERS)


@router.post("/studies/a/{study_id}/close", dependencies=CSRF)
async def study_close(study_id: DbId, user: UserDep, session: SessionDep) -> Response:
    svc.close_study(session, _study(session, study_id))
    return RedirectResponse(f"/studies/a/{study_id}", status_code=303)


def _report(request: Request, session: SessionDep, study: StudyA) -> dict[str, Any]:
    submitted_only = request.query_params.get("scope") == "submitted"
    return svc.study_report(session, study, catalogue(request).tasks,
                            submitted_only=submitted_only)


@router.get("/studies/a/{study_id}/results")
async def study_results(request: Request, study_id: DbId, user: UserDep,
                        session: SessionDep) -> Response:
    study = _study(session, study_id)
    assert study.id is not None
    report = _report(request, session, study)
    items = {i.item_key: i for i in svc.study_items(session, study.id)}
    notes = {k: i.calibration_note for k, i in items.items() if i.calibration}
    return render(request, "study_a_results.html", {
        "user": user, "study": study, "r": report, "calibration_notes": notes,
        "annotators": _annotator_rows(request, session, study),
    })


@router.get("/studies/a/{study_id}/ratings.csv")
async def study_ratings_csv(request: Request, study_id: DbId, user: UserDep,
                            session: SessionDep) -> Response:
    study = _study(session, study_id)
    submitted_only = request.query_params.get("scope") == "submitted"
    body = svc.ratings_csv(svc.collect_ratings(session, study, submitted_only=submitted_only),
                           svc.item_seconds(session, study))
    return _download(body, "text/csv", f"study_a_{study_id}_ratings.csv")


@router.get("/studies/a/{study_id}/comments.csv")
async def study_comments_csv(study_id: DbId, user: UserDep, session: SessionDep) -> Response:
    study = _study(session, study_id)
    return _download(svc.comments_csv(session, study), "text/csv",
                     f"study_a_{study_id}_comments.csv")


@router.get("/studies/a/{study_id}/agreement.json")
async def study_agreement_json(request: Request, study_id: DbId, user: UserDep,
                               session: SessionDep) -> Response:
    study = _study(session, study_id)
    return JSONResponse(_report(request, session, study),
                        headers=_attachment(f"study_a_{study_id}_agreement.json"))


@router.get("/studies/a/{study_id}/table9.csv")
async def study_table9_csv(request: Request, study_id: DbId, user: UserDep,
                           session: SessionDep) -> Response:
    study = _study(session, study_id)
    return _download(svc.table9_csv(_report(request, session, study)), "text/csv",
                     f"study_a_{study_id}_table9.csv")


def _attachment(filename: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{filename}"'}


def _download(body: str, media_type: str, filename: str) -> Response:
    return PlainTextResponse(body, media_type=media_type, headers=_attachment(filename))
