"""Run list and replay: stereo trace, event lanes, state at the playhead, gates and fields."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, Response

from app.auth import UserDep
from app.deps import SettingsDep
from app.routes.tasks import catalogue
from app.runindex import RunInfo, grade_cached, list_runs, outcome_of, peaks, resolve_run
from app.web import page_or_fragment, render
from grading.gates import RunDirError, read_meta
from runtime.events import read_events

router = APIRouter()


def _run_dir(settings: SettingsDep, run_path: str) -> Path:
    run_dir = resolve_run(settings.runs_dir, run_path)
    if run_dir is None:
        raise HTTPException(status_code=404, detail=f"No run '{run_path}'.")
    return run_dir


@router.get("/runs")
async def run_list(request: Request, user: UserDep, settings: SettingsDep) -> Response:
    tasks = catalogue(request).tasks
    runs = list_runs(settings.runs_dir, tasks)
    q = request.query_params
    task_f, agent_f, outcome_f, study_f = (q.get("task", ""), q.get("agent", ""),
                                           q.get("outcome", ""), q.get("study", ""))

    def keep(info: RunInfo) -> bool:
        meta, grade = info.meta, info.grade
        if task_f and meta.get("task_id") != task_f:
            return False
        if agent_f and meta.get("agent") != agent_f:
            return False
        if study_f and meta.get("study", "") != study_f:
            return False
        return not outcome_f or outcome_of(grade) == outcome_f

    shown = [r for r in runs if keep(r)]
    return page_or_fragment(request, "runs.html", "_run_rows.html", {
        "user": user, "runs": shown, "total": len(runs),
        "tasks": sorted({r.meta.get("task_id", "") for r in runs} - {""}),
        "agents": sorted({r.meta.get("agent", "") for r in runs} - {""}),
        "studies": sorted({r.meta.get("study", "") for r in runs} - {""}),
        "chosen": {"task": task_f, "agent": agent_f, "outcome": outcome_f, "study": study_f},
        "runs_dir": settings.runs_dir,
    })


@router.get("/compare")
async def compare(request: Request, user: UserDep, settings: SettingsDep, a: str = "",
                  b: str = "") -> Response:
    """Two runs side by side, aligned on their semantic acts."""
    from app.compare import compare_runs

    run_a, run_b = _run_dir(settings, a), _run_dir(settings, b)
    meta_a, meta_b = read_meta(run_a), read_meta(run_b)
    notices = []
    if meta_a.get("task_id") != meta_b.get("task_id"):
        notices.append(f"These runs are of different tasks ({meta_a.get('task_id')} and "
                       f"{meta_b.get('task_id')}): the alignment is only indicative.")
    rows, first = compare_runs(run_a, run_b)
    tasks = catalogue(request).tasks
    grades = [grade_cached(d, tasks) if str(m.get("task_id")) in tasks else None
              for d, m in ((run_a, meta_a), (run_b, meta_b))]
    return render(request, "compare.html", {
        "user": user, "a": a, "b": b, "meta_a": meta_a, "meta_b": meta_b, "rows": rows,
        "first": first, "grades": grades, "notices": notices,
    })


@router.get("/runs/{run_path:path}/trace.wav")
async def run_trace(run_path: str, user: UserDep, settings: SettingsDep) -> Response:
    trace = _run_dir(settings, run_path) / "trace.wav"
    if not trace.is_file():
        raise HTTPException(status_code=404, detail="This run has no stereo trace.")
    return FileResponse(trace, media_type="audio/wav")


@router.get("/runs/{run_path:path}/peaks.json")
async def run_peaks(run_path: str, user: UserDep, settings: SettingsDep) -> Response:
    run_dir = _run_dir(settings, run_path)
    if not (run_dir / "trace.wav").is_file():
        raise HTTPException(status_code=404, detail="This run has no stereo trace.")
    return JSONResponse(peaks(run_dir))


@router.get("/runs/{run_path:path}/replay")
async def replay(request: Request, run_path: str, user: UserDep,
                 settings: SettingsDep) -> Response:
    run_dir = _run_dir(settings, run_path)
    notices: list[str] = []
    try:
        meta = read_meta(run_dir)
    except RunDirError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from None
    events: list[dict[str, object]] = []
    log = run_dir / "events.jsonl"
    if log.is_file():
        read = read_events(log)
        notices.extend(read.problems)
        events = [e.model_dump(mode="json", exclude={"t_wall"}) for e in read.events]
        if not any(e["type"] == "session.end" for e in events):
            notices.append("The event log has no session.end: the run did not finish; "
                           "showing the events that were written.")
    else:
        notices.append("This run has no events.jsonl: there is nothing to show on the lanes.")
    has_trace = (run_dir / "trace.wav").is_file()
    if not has_trace:
        notices.append("This run has no stereo trace (trace.wav): the lanes and the artifact "
                       "are shown without audio.")
    tasks = catalogue(request).tasks
    grade = None
    task = tasks.get(str(meta.get("task_id", "")))
    if task is None:
        notices.append(f"Task '{meta.get('task_id')}' is not in this suite: no grading.")
    elif log.is_file():
        grade = grade_cached(run_dir, tasks)
    siblings = [r.path for r in list_runs(settings.runs_dir, tasks)
                if r.meta.get("task_id") == meta.get("task_id") and r.path != run_path]
    return render(request, "replay.html", {
        "user": user, "run_path": run_path, "meta": meta, "notices": notices,
        "siblings": siblings,
        "events_json": json.dumps(events), "has_trace": has_trace, "grade": grade,
        "task": task,
    })
