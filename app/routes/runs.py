"""Run list and replay: stereo trace, event lanes, state at the playhead, gates and fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response

from app.auth import UserDep, verify_csrf
from app.deps import SettingsDep
from app.routes.tasks import catalogue
from app.runindex import (
    RunFileError,
    RunInfo,
    check_trace,
    grade_cached,
    list_runs,
    outcome_of,
    peaks,
    resolve_run,
    run_file,
)
from app.web import page_or_fragment, render, shown
from grading.corrections import (
    DECISIONS,
    Correction,
    CorrectionError,
    read_corrections_checked,
    record_correction,
)
from grading.gates import RunDirError, correction_effect, grade_run_dir, read_meta
from runtime.events import AuthDecisionEvent, Event, read_events

MAX_REASON = 2000

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
    try:
        trace = run_file(_run_dir(settings, run_path), "trace.wav")
    except RunFileError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from None
    if trace is None:
        raise HTTPException(status_code=404, detail="This run has no stereo trace.")
    try:
        check_trace(trace)
    except RunFileError as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from None
    return FileResponse(trace, media_type="audio/wav")


@router.get("/runs/{run_path:path}/peaks.json")
async def run_peaks(run_path: str, user: UserDep, settings: SettingsDep) -> Response:
    """The trace's envelope, or ``{"error": …}``: 404 without a trace (or with a link in its
    place), 422 when it is not readable audio."""
    run_dir = _run_dir(settings, run_path)
    try:
        trace = run_file(run_dir, "trace.wav")
        if trace is None:
            return JSONResponse({"error": "This run has no stereo trace."}, status_code=404)
    except RunFileError as exc:
        return JSONResponse({"error": str(exc)}, status_code=404)
    try:
        return JSONResponse(peaks(run_dir))
    except RunFileError as exc:
        return JSONResponse({"error": str(exc)}, status_code=422)


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
    log_events: list[Event] = []
    log = run_dir / "events.jsonl"
    if log.is_file():
        read = read_events(log)
        notices.extend(read.problems)
        log_events = read.events
        events = [e.model_dump(mode="json", exclude={"t_wall"}) for e in read.events]
        if not any(e["type"] == "session.end" for e in events):
            notices.append("The event log has no session.end: the run did not finish; "
                           "showing the events that were written.")
    else:
        notices.append("This run has no events.jsonl: there is nothing to show on the lanes.")
    try:
        has_trace = run_file(run_dir, "trace.wav") is not None
        if not has_trace:
            notices.append("This run has no stereo trace (trace.wav): the lanes and the "
                           "artifact are shown without audio.")
    except RunFileError as exc:
        has_trace = False
        notices.append(f"{exc} The lanes and the artifact are shown without audio.")
    tasks = catalogue(request).tasks
    grade = None
    task = tasks.get(str(meta.get("task_id", "")))
    if task is None:
        notices.append(f"Task '{meta.get('task_id')}' is not in this suite: no grading.")
    elif log.is_file():
        grade = grade_cached(run_dir, tasks)
    siblings = [r.path for r in list_runs(settings.runs_dir, tasks)
                if r.meta.get("task_id") == meta.get("task_id") and r.path != run_path]
    decisions, corrections, problems = _decisions(run_dir, log_events)
    notices.extend(problems)
    effect = None
    if grade is not None and grade.corrections:
        before = grade_run_dir(run_dir, tasks, apply_corrections=False)
        effect = correction_effect(before, grade, log_events)
    return render(request, "replay.html", {
        "user": user, "run_path": run_path, "meta": meta,
        "notices": [shown(request, n) for n in notices],
        "siblings": siblings,
        "events_json": _script_json(events), "has_trace": has_trace, "grade": grade,
        "task": task, "decisions": decisions, "corrections": corrections, "effect": effect,
        "corrections_json": _script_json([c.model_dump(mode="json") for c in corrections]),
        "decision_values": DECISIONS,
        "correction_error": request.query_params.get("correction_error"),
    })


def _script_json(value: object) -> str:
    """JSON for an inline ``<script type="application/json">``: ``<`` is escaped so a
    transcript or a reason holding ``</script>`` cannot end the element."""
    return json.dumps(value).replace("<", "\\u003c")


def _decisions(run_dir: Path, events: list[Event]
               ) -> tuple[list[dict[str, Any]], list[Correction], list[str]]:
    """Each ``auth.decision`` of the log with its effective (latest corrected) value, the
    correction history (oldest first) and a line per unreadable correction."""
    try:
        corrections, problems = read_corrections_checked(run_dir)
    except OSError as exc:
        return [], [], [f"The corrections file cannot be read: {exc}"]
    latest: dict[int, Correction] = {}
    for c in corrections:
        latest[c.decision_seq] = c
    rows = []
    for e in events:
        if isinstance(e, AuthDecisionEvent):
            fix = latest.get(e.seq)
            rows.append({"event": e, "effective": fix.new if fix else e.decision,
                         "corrected": fix is not None})
    return rows, corrections, problems


@router.post("/runs/{run_path:path}/corrections", dependencies=[Depends(verify_csrf)])
async def correct_decision(request: Request, run_path: str, user: UserDep,
                           settings: SettingsDep) -> Response:
    """A researcher corrects one authorization decision: recorded with who, when, old → new
    and why beside the log (never in it); the run is re-graded at once."""
    run_dir = _run_dir(settings, run_path)
    form = await request.form()
    raw_seq = str(form.get("decision_seq", "")).strip()
    new = str(form.get("new", "")).strip()
    reason = str(form.get("reason", "")).strip()
    log = run_dir / "events.jsonl"
    decisions = {e.seq: e for e in (read_events(log).events if log.is_file() else [])
                 if isinstance(e, AuthDecisionEvent)}
    problem = None
    if not (raw_seq.isascii() and raw_seq.isdigit() and len(raw_seq) <= 18) \
            or int(raw_seq) not in decisions:
        problem = (f"event {raw_seq or '(none)'} is not an auth.decision of this run; "
                   f"decisions are at seq {', '.join(map(str, decisions)) or 'none'}")
    elif new not in DECISIONS:
        problem = f"decision '{new}' is not one of {', '.join(DECISIONS)}"
    elif not reason:
        problem = "give a reason for the correction (it is kept with the run)"
    elif len(reason) > MAX_REASON:
        problem = f"the reason is longer than {MAX_REASON} characters"
    if problem is None:
        try:
            record_correction(run_dir, decision_seq=int(raw_seq), new=new,
                              by=user.username, reason=reason)
        except CorrectionError as exc:
            problem = str(exc)
    if problem is not None:
        raise HTTPException(status_code=400, detail=f"Correction not recorded: {problem}")
    tasks = catalogue(request).tasks
    if str(read_meta(run_dir).get("task_id", "")) in tasks:
        grade_cached(run_dir, tasks)  # re-grade now, so the replay shows the new grade
    return RedirectResponse(f"/runs/{run_path}/replay#corrections", status_code=303)
