"""Task catalogue: browse and filter workflows; a task page with its reveal graph and audio."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, Response

from app.auth import UserDep
from app.catalogue import Catalogue
from app.templating import page_or_fragment, render
from runtime.core.spec import TaskSpec
from runtime.suite.composition import composition_table

router = APIRouter()
FILTERS = ("archetype", "industry", "artifact_class", "autonomy", "knowledge", "tool_burden",
           "user_behavior", "risk")


def catalogue(request: Request) -> Catalogue:
    cat: Catalogue = request.app.state.catalogue
    return cat


def get_task(request: Request, task_id: str) -> TaskSpec:
    task = catalogue(request).tasks.get(task_id)
    if task is None:
        raise HTTPException(status_code=404, detail=f"No task '{task_id}' in this suite.")
    return task


@router.get("/tasks")
async def task_list(request: Request, user: UserDep) -> Response:
    cat = catalogue(request)
    chosen = {k: v for k in FILTERS if (v := request.query_params.get(k))}
    query = request.query_params.get("q", "").strip().lower()
    rows = [
        t for t in sorted(cat.tasks.values(), key=lambda t: t.id)
        if all(str(getattr(t.taxonomy, k)) == v for k, v in chosen.items())
        and (not query or query in f"{t.id} {t.title}".lower())
    ]
    options = {k: sorted({str(getattr(t.taxonomy, k)) for t in cat.tasks.values()})
               for k in FILTERS}
    return page_or_fragment(request, "tasks.html", "_task_rows.html", {
        "user": user, "tasks": rows, "filters": options, "chosen": chosen, "q": query,
        "problems": cat.problems, "composition": composition_table(list(cat.tasks.values())),
        "total": len(cat.tasks),
    })


@router.get("/tasks/{task_id}")
async def task_page(request: Request, task_id: str, user: UserDep) -> Response:
    task = get_task(request, task_id)
    triggered_by = {e.plan: e for e in task.duplex_events}
    return render(request, "task.html", {"user": user, "task": task,
                                         "duplex_for": triggered_by})


@router.get("/tasks/{task_id}/audio/{realization_id}")
async def realization_audio(request: Request, task_id: str, realization_id: str,
                            user: UserDep) -> Response:
    task = get_task(request, task_id)
    for plan in task.plans:
        for real in plan.realizations:
            if real.id == realization_id:
                path = (task.folder / real.audio).resolve()
                if task.folder.resolve() not in path.parents or not path.is_file():
                    break
                return FileResponse(path)
    raise HTTPException(status_code=404, detail=f"No audio for realization '{realization_id}'.")
