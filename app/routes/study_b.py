"""Study B researcher pages: set up a live-human audit, edit and export its plan, launch it,
monitor participants and sessions, and compute Table 10 (paper appendix F.3)."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from sqlmodel import col, select
from starlette.datastructures import FormData, UploadFile

from app import study_b as svc
from app.auth import UserDep, current_user, verify_csrf
from app.deps import DbId, SessionDep, SettingsDep
from app.models_study_b import Participant, StudyB
from app.routes.tasks import catalogue
from app.templating import page_or_fragment, render
from runtime.core import csv_safe
from runtime.core.spec import TaskSpec
from study_protocols.study_b import balance_table, check_plan, table10_csv

router = APIRouter()
CsrfDep = [Depends(current_user), Depends(verify_csrf)]
"""The login is checked first, then the CSRF token: nobody logged out gets a body read."""
MAX_PLAN_CSV = 2_000_000


def _tasks(request: Request) -> dict[str, TaskSpec]:
    return dict(catalogue(request).tasks)


def _study(db: SessionDep, study_id: DbId) -> StudyB:
    study = db.get(StudyB, study_id)
    if study is None:
        raise HTTPException(status_code=404, detail=f"No Study B with id {study_id}.")
    return study


StudyDep = Annotated[StudyB, Depends(_study)]


# --------------------------------------------------------------------------- list + create


def _form_defaults(tasks: Mapping[str, TaskSpec], audit: list[str]) -> dict[str, Any]:
    """A new study's form: the audit subset's tasks ticked."""
    return {"name": "", "systems": [], "systems_extra": "",
            "task_ids": sorted(t for t in audit if t in tasks) or sorted(tasks),
            "n_anchor": "6", "sessions_per_participant": "", "seed": "0",
            "consent_text": svc.DEFAULT_CONSENT, "completion_code": "", "completion_url": "",
            "on_disconnect": "rejoin", "captions": False}


def _list_page(request: Request, db: SessionDep, user: Any, *, form: dict[str, Any],
               error: svc.StudyBInputError | None = None, status: int = 200) -> Response:
    tasks = _tasks(request)
    studies = db.exec(select(StudyB).order_by(col(StudyB.id).desc())).all()
    counts = {s.id: (len(svc.plan_of(s).participants()), len(svc.plan_of(s).sessions))
              for s in studies}
    choices = svc.system_choices([tasks[t] for t in sorted(tasks)], os.environ)
    return render(request, "study_b_list.html", {
        "user": user, "studies": studies, "counts": counts, "tasks": tasks,
        "choices": choices, "form": form, "error": error,
        "disconnect_options": svc.ON_DISCONNECT,
    }, status=status)


@router.get("/studies/b")
async def study_list(request: Request, user: UserDep, db: SessionDep) -> Response:
    form = _form_defaults(_tasks(request), catalogue(request).audit)
    return _list_page(request, db, user, form=form)


def _int(form: dict[str, Any], name: str, *, blank: int | None = None,
         low: int = 0, high: int = 2**31 - 1) -> int | None:
    raw = str(form.get(name, "")).strip()
    if not raw and blank is not None:
        return blank
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise svc.StudyBInputError(name, raw, f"{name.replace('_', ' ')} '{raw}' is not a "
                                   "whole number") from None
    if not low <= value <= high:
        raise svc.StudyBInputError(name, raw, f"{name.replace('_', ' ')} must be from {low} "
                                   f"to {high}, got {value}")
    return value


def _extra_specs(text: str) -> list[str]:
    """Free-text specs: one per line or comma-separated; an empty item between commas is an
    error (it is usually a typo), wholly empty lines are not."""
    out: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        for item in line.split(","):
            if not item.strip():
                raise svc.StudyBInputError("systems", line.strip(),
                                           f"a blank agent spec in '{line.strip()}'; write one "
                                           "spec per line (e.g. scripted:oracle)")
            out.append(item.strip())
    return out


def _read_form(data: FormData) -> dict[str, Any]:
    return {
        "name": str(data.get("name", "")),
        "systems": [str(v) for v in data.getlist("systems")],
        "systems_extra": str(data.get("systems_extra", "")),
        "task_ids": [str(v) for v in data.getlist("task_ids")],
        "n_anchor": str(data.get("n_anchor", "6")),
        "sessions_per_participant": str(data.get("sessions_per_participant", "")),
        "seed": str(data.get("seed", "0")),
        "consent_text": str(data.get("consent_text", "")),
        "completion_code": str(data.get("completion_code", "")),
        "completion_url": str(data.get("completion_url", "")),
        "on_disconnect": str(data.get("on_disconnect", "rejoin")),
        "captions": str(data.get("captions", "")).strip().lower() in ("1", "on", "true", "yes"),
    }


def _new_study(form: dict[str, Any]) -> svc.NewStudy:
    systems = [s for s in form["systems"] if s.strip()] + _extra_specs(form["systems_extra"])
    n_anchor = _int(form, "n_anchor", blank=6)
    seed = _int(form, "seed", blank=0)
    assert n_anchor is not None and seed is not None
    return svc.NewStudy(
        name=form["name"], systems=tuple(systems), task_ids=tuple(form["task_ids"]),
        n_anchor=n_anchor, sessions_per_participant=_int(form, "sessions_per_participant",
                                                         low=1),
        seed=seed, consent_text=form["consent_text"].replace("\r\n", "\n"),
        completion_code=form["completion_code"], completion_url=form["completion_url"],
        on_disconnect=form["on_disconnect"], captions=bool(form.get("captions")),
    )


@router.post("/studies/b", dependencies=CsrfDep)
async def study_create(request: Request, user: UserDep, db: SessionDep) -> Response:
    form = _read_form(await request.form())
    try:
        study = svc.create_study(db, _new_study(form), tasks=_tasks(request), by=user.username)
    except svc.StudyBInputError as exc:
        return _list_page(request, db, user, form=form, error=exc, status=400)
    return RedirectResponse(f"/studies/b/{study.id}", status_code=303)


# --------------------------------------------------------------------------- study page


def _grid(study: StudyB) -> dict[str, Any]:
    plan = svc.plan_of(study)
    positions = sorted({s.position for s in plan.sessions})
    cells = {(s.participant, s.position): s for s in plan.sessions}
    balance = balance_table(plan)
    return {"plan": plan, "positions": positions, "cells": cells, "balance": balance,
            "plan_problems": check_plan(plan)}


def _study_context(request: Request, db: SessionDep, settings: SettingsDep, study: StudyB,
                   user: Any) -> dict[str, Any]:
    views = svc.monitor(db, study, settings.runs_dir, _tasks(request)) \
        if study.status != "draft" else []
    base = str(request.base_url)
    return {"user": user, "study": study, **_grid(study), "views": views,
            "links": {v.person.label: (svc.invitation_link(base, v.person.token),
                                       svc.prolific_link(base, v.person.token))
                      for v in views},
            "join": svc.join_link(base, study.join_token) if study.join_token else None,
            "prolific_query": svc.PROLIFIC_QUERY, "edit_errors": [], "notice": None}


@router.get("/studies/b/{study_id}")
async def study_page(request: Request, user: UserDep, db: SessionDep, settings: SettingsDep,
                     study: StudyDep) -> Response:
    ctx = _study_context(request, db, settings, study, user)
    ctx["notice"] = request.query_params.get("done")
    return page_or_fragment(request, "study_b.html", "_study_b_monitor.html", ctx)


def _edit_refused(request: Request, db: SessionDep, settings: SettingsDep, study: StudyB,
                  user: Any, problems: list[str], status: int = 400) -> Response:
    db.refresh(study)
    ctx = _study_context(request, db, settings, study, user)
    ctx["edit_errors"] = problems
    return render(request, "study_b.html", ctx, status=status)


def _slot(form: FormData, prefix: str) -> tuple[str, int]:
    label = str(form.get(f"{prefix}_participant", "")).strip()
    raw = str(form.get(f"{prefix}_position", "")).strip()
    try:
        return label, int(raw)
    except ValueError:
        raise svc.PlanRejected([f"position '{raw}' of session {prefix.upper()} is not a whole "
                                "number"]) from None


@router.post("/studies/b/{study_id}/swap", dependencies=CsrfDep)
async def plan_swap(request: Request, user: UserDep, db: SessionDep, settings: SettingsDep,
                    study: StudyDep) -> Response:
    form = await request.form()
    try:
        a, b = _slot(form, "a"), _slot(form, "b")
        svc.swap(db, study, a, b)
    except svc.PlanRejected as exc:
        return _edit_refused(request, db, settings, study, user,
                             ["The swap was refused; the plan is unchanged.", *exc.problems])
    except svc.StudyStateError as exc:
        return _edit_refused(request, db, settings, study, user, [str(exc)], status=409)
    return RedirectResponse(
        f"/studies/b/{study.id}?done=Swapped {a[0]} #{a[1]} and {b[0]} #{b[1]}.",
        status_code=303)


@router.post("/studies/b/{study_id}/import", dependencies=CsrfDep)
async def plan_import(request: Request, user: UserDep, db: SessionDep, settings: SettingsDep,
                      study: StudyDep) -> Response:
    form = await request.form()
    upload = form.get("plan_file")
    text = str(form.get("plan_csv", ""))
    if isinstance(upload, UploadFile) and upload.filename:
        raw = await upload.read(MAX_PLAN_CSV + 1)
        if len(raw) > MAX_PLAN_CSV:
            return _edit_refused(request, db, settings, study, user,
                                 [f"{upload.filename}: larger than {MAX_PLAN_CSV} bytes"])
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            return _edit_refused(request, db, settings, study, user,
                                 [f"{upload.filename}: not UTF-8 text; export the plan "
                                  "again and edit it as CSV"])
    try:
        svc.import_plan_csv(db, study, text)
    except svc.PlanRejected as exc:
        return _edit_refused(request, db, settings, study, user,
                             ["The imported plan was refused; the plan is unchanged.",
                              *exc.problems])
    except svc.StudyStateError as exc:
        return _edit_refused(request, db, settings, study, user, [str(exc)], status=409)
    return RedirectResponse(f"/studies/b/{study.id}?done=Imported the edited plan.",
                            status_code=303)


@router.post("/studies/b/{study_id}/regenerate", dependencies=CsrfDep)
async def plan_regenerate(request: Request, user: UserDep, db: SessionDep,
                          settings: SettingsDep, study: StudyDep) -> Response:
    form = await request.form()
    try:
        seed = _int({"seed": form.get("seed", "")}, "seed")
        if seed is None:
            raise svc.StudyBInputError("seed", "", "give a seed")
        svc.regenerate(db, study, seed)
    except svc.StudyBInputError as exc:
        return _edit_refused(request, db, settings, study, user, [str(exc)])
    except svc.StudyStateError as exc:
        return _edit_refused(request, db, settings, study, user, [str(exc)], status=409)
    return RedirectResponse(f"/studies/b/{study.id}?done=New plan from seed {seed}.",
                            status_code=303)


@router.post("/studies/b/{study_id}/launch", dependencies=CsrfDep)
async def study_launch(request: Request, user: UserDep, db: SessionDep, settings: SettingsDep,
                       study: StudyDep) -> Response:
    try:
        svc.launch(db, study)
    except svc.PlanRejected as exc:
        return _edit_refused(request, db, settings, study, user,
                             ["The plan breaks the design; fix it before launching.",
                              *exc.problems])
    except svc.StudyStateError as exc:
        return _edit_refused(request, db, settings, study, user, [str(exc)], status=409)
    return RedirectResponse(f"/studies/b/{study.id}?done=Launched: the invitation links "
                            "below now work.", status_code=303)


@router.post("/studies/b/{study_id}/close", dependencies=CsrfDep)
async def study_close(request: Request, user: UserDep, db: SessionDep, settings: SettingsDep,
                      study: StudyDep) -> Response:
    try:
        svc.close(db, study)
    except svc.StudyStateError as exc:
        return _edit_refused(request, db, settings, study, user, [str(exc)], status=409)
    return RedirectResponse(f"/studies/b/{study.id}?done=Closed: invitation links no longer "
                            "start sessions.", status_code=303)


# --------------------------------------------------------------------------- exports


def _download(body: str, media: str, filename: str) -> Response:
    return PlainTextResponse(body, media_type=media, headers={
        "Content-Disposition": f'attachment; filename="{filename}"'})


@router.get("/studies/b/{study_id}/plan.csv")
async def plan_csv(user: UserDep, study: StudyDep) -> Response:
    fh = io.StringIO()
    svc.plan_of(study).to_csv(fh)
    return _download(fh.getvalue(), "text/csv", f"study-b-{study.id}-plan.csv")


@router.get("/studies/b/{study_id}/plan.json")
async def plan_json(user: UserDep, study: StudyDep) -> Response:
    body = json.dumps(svc.plan_of(study).to_json(), indent=2) + "\n"
    return _download(body, "application/json", f"study-b-{study.id}-plan.json")


@router.get("/studies/b/{study_id}/links.csv")
async def links_csv(request: Request, user: UserDep, db: SessionDep, study: StudyDep) -> Response:
    people = db.exec(select(Participant).where(Participant.study_id == study.id)
                     .order_by(col(Participant.label))).all()
    fh = io.StringIO()
    out = csv_safe.writer(fh, lineterminator="\n")
    out.writerow(["participant", "link", "prolific_link"])
    base = str(request.base_url)
    for p in people:
        out.writerow([p.label, svc.invitation_link(base, p.token),
                      svc.prolific_link(base, p.token)])
    return _download(fh.getvalue(), "text/csv", f"study-b-{study.id}-links.csv")


# --------------------------------------------------------------------------- Table 10


def _chosen(request: Request, study: StudyB) -> dict[str, str]:
    """System → campaign from the query (``s0``, ``s1``… by the system's index)."""
    out: dict[str, str] = {}
    for i, system in enumerate(study.systems):
        value = request.query_params.get(f"s{i}", "").strip()
        if value:
            out[system] = value
    return out


def _results(request: Request, db: SessionDep, settings: SettingsDep,
             study: StudyB) -> svc.Table10Page:
    tasks = _tasks(request)
    views = svc.monitor(db, study, settings.runs_dir, tasks)
    return svc.results(views, study, settings.runs_dir, tasks, _chosen(request, study),
                       seed=study.seed)


def _picker(runs_dir: Path, study: StudyB, i: int, system: str, asked: str,
            page: svc.Table10Page, campaigns: list[tuple[str, str | None]]) -> dict[str, Any]:
    """One system's campaign picker: its campaigns that fit (the same agent, the study's
    tasks for it listed), then the others, each with why it would be refused."""
    needed = svc.system_tasks(study, system)
    options = []
    for rel, agent in campaigns:
        why = svc.campaign_mismatch(runs_dir, rel, system, needed)
        options.append({"value": rel, "agent": agent, "refused": why})
    return {"name": f"s{i}", "system": system, "asked": asked,
            "refused": page.refused.get(system),
            "fit": [o for o in options if o["refused"] is None],
            "other": [o for o in options if o["refused"] is not None]}


@router.get("/studies/b/{study_id}/results")
async def results_page(request: Request, user: UserDep, db: SessionDep, settings: SettingsDep,
                       study: StudyDep) -> Response:
    page = _results(request, db, settings, study)
    campaigns = [(c, svc.campaign_agent(settings.runs_dir, c))
                 for c in svc.campaign_choices(settings.runs_dir)]
    reasons: dict[str, str] = {}
    ci_reasons: dict[str, str] = {}
    for system, row in page.result["systems"].items():
        notes: list[str] = row["notes"]
        if system in page.refused:
            reasons[system] = f"synthetic condition refused: {page.refused[system]}"
        else:
            reasons[system] = next((n for n in notes if n.startswith("undefined")),
                                   next((n for n in notes if "not chosen" in n),
                                        "; ".join(notes) or "no data"))
        ci_reasons[system] = next((n.removeprefix("diff_ci undefined: ") for n in notes
                                   if n.startswith("diff_ci undefined")), reasons[system])
    asked = _chosen(request, study)
    pickers = [_picker(settings.runs_dir, study, i, system, asked.get(system, ""), page,
                       campaigns)
               for i, system in enumerate(study.systems)]
    return render(request, "study_b_results.html", {
        "user": user, "study": study, "page": page, "campaigns": campaigns, "pickers": pickers,
        "query": request.url.query, "reasons": reasons, "ci_reasons": ci_reasons,
    })


@router.get("/studies/b/{study_id}/results.csv")
async def results_csv(request: Request, user: UserDep, db: SessionDep, settings: SettingsDep,
                      study: StudyDep) -> Response:
    page = _results(request, db, settings, study)
    fh = io.StringIO()
    table10_csv(page.result, fh)
    return _download(fh.getvalue(), "text/csv", f"study-b-{study.id}-table10.csv")


@router.get("/studies/b/{study_id}/results.json")
async def results_json(request: Request, user: UserDep, db: SessionDep, settings: SettingsDep,
                       study: StudyDep) -> Response:
    page = _results(request, db, settings, study)
    body = {"study": {"id": study.id, "name": study.name, "task_ids": study.task_ids,
                      "systems": study.systems, "anchor_task_ids": study.anchor_task_ids},
            "synthetic_campaigns": page.chosen,
            "human_sessions": {"graded": page.counts.graded,
                               "incomplete": page.counts.incomplete,
                               "pending": page.counts.pending, "notes": page.counts.notes},
            "refused": page.refused, "problems": page.problems, "table10": page.result}
    return JSONResponse(body, headers={
        "Content-Disposition": f'attachment; filename="study-b-{study.id}-table10.json"'})

