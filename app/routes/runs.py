"""Run list and replay: stereo trace, event lanes, state at the playhead, gates and fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response

from app.auth import UserDep, verify_csrf
from app.deps import SettingsDep
from app.routes.tasks import catalogue
from app.runindex import (
    OUTCOMES,
    SORT_KEYS,
    RunFileError,
    RunRow,
    check_trace,
    grade_cached,
    peaks,
    run_file,
    run_index,
    sort_rows,
)
from app.templating import page_or_fragment, render, shown
from grading.corrections import (
    DECISIONS,
    Correction,
    CorrectionError,
    read_corrections_checked,
    record_correction,
)
from grading.gates import RunGrade, correction_effect, grade_run_dir
from runtime.core.events import AuthDecisionEvent, Event, read_events
from runtime.core.rundir import RunDir, RunDirError, resolve_run

MAX_REASON = 2000

router = APIRouter()


def _run_dir(settings: SettingsDep, run_path: str) -> Path:
    run_dir = resolve_run(settings.runs_dir, run_path)
    if run_dir is None:
        raise HTTPException(status_code=404, detail=f"No run '{run_path}'.")
    return run_dir


PAGE_SIZE = 50
PAGE_SIZES = (10, 200)
"""The smallest and largest ``?per=`` the run list takes (a value outside is clamped)."""
MAX_QUERY = 200


def _whole(name: str, raw: str) -> int:
    if not (raw.isascii() and raw.lstrip("-").isdigit() and len(raw) <= 9):
        raise HTTPException(status_code=400, detail=f"Bad request: {name} must be a whole "
                            f"number, not '{raw[:40]}'.")
    return int(raw)


@router.get("/runs")
async def run_list(request: Request, user: UserDep, settings: SettingsDep) -> Response:
    """Every run, one page at a time: searched (``q``), filtered (``task``, ``agent``,
    ``study``, ``outcome``), sorted (``sort``, ``dir``) and paged (``page``, ``per``) on the
    server from the cached run index (app/runindex.py). A sort key, direction or outcome it
    does not know, or a page that is not a number, is a 400 that says what is accepted; a page
    or page size out of range is clamped, with a note."""
    tasks = catalogue(request).tasks
    q = request.query_params
    search = q.get("q", "").strip()[:MAX_QUERY]
    task_f, agent_f, outcome_f, study_f = (q.get("task", ""), q.get("agent", ""),
                                           q.get("outcome", ""), q.get("study", ""))
    sort = q.get("sort", "") or "date"
    if sort not in SORT_KEYS:
        raise HTTPException(status_code=400, detail=f"Bad request: unknown sort key "
                            f"'{sort[:40]}'; sort by one of {', '.join(SORT_KEYS)}.")
    default_dir = "desc" if sort in ("date", "duration") else "asc"
    direction = q.get("dir", "") or default_dir
    if direction not in ("asc", "desc"):
        raise HTTPException(status_code=400, detail=f"Bad request: dir must be asc or desc, "
                            f"not '{direction[:40]}'.")
    if outcome_f and outcome_f not in OUTCOMES:
        raise HTTPException(status_code=400, detail=f"Bad request: unknown outcome "
                            f"'{outcome_f[:40]}'; one of {', '.join(OUTCOMES)}.")
    notes: list[str] = []
    per = _whole("per", q.get("per", "") or str(PAGE_SIZE))
    if not PAGE_SIZES[0] <= per <= PAGE_SIZES[1]:
        clamped = min(max(per, PAGE_SIZES[0]), PAGE_SIZES[1])
        notes.append(f"{per} runs a page is out of range ({PAGE_SIZES[0]}–{PAGE_SIZES[1]}): "
                     f"showing {clamped} a page.")
        per = clamped
    page = _whole("page", q.get("page", "") or "1")

    runs, campaigns = run_index(settings.runs_dir, tasks)
    words = search.lower().split()

    def keep(r: RunRow) -> bool:
        if task_f and r.task_id != task_f:
            return False
        if agent_f and r.agent != agent_f:
            return False
        if study_f and r.study != study_f:
            return False
        if outcome_f and r.outcome != outcome_f:
            return False
        text = r.text()
        return all(w in text for w in words)

    matched = sort_rows([r for r in runs if keep(r)], sort, direction == "desc")
    pages = max(1, -(-len(matched) // per))
    if not 1 <= page <= pages:
        clamped = min(max(page, 1), pages)
        notes.append(f"There is no page {page}: {pages} page{'s' if pages != 1 else ''} of "
                     f"results; showing page {clamped}.")
        page = clamped
    shown_rows = matched[(page - 1) * per: page * per]
    params = {"q": search, "task": task_f, "agent": agent_f, "study": study_f,
              "outcome": outcome_f, "sort": sort, "dir": direction, "page": str(page),
              "per": str(per) if per != PAGE_SIZE else ""}

    def url(**changes: str) -> str:
        merged = {**params, **changes}
        return "/runs?" + urlencode({k: v for k, v in merged.items() if v})

    return page_or_fragment(request, "runs.html", "_run_rows.html", {
        "user": user, "runs": shown_rows, "total": len(runs), "matched": len(matched),
        "first_index": (page - 1) * per + 1 if matched else 0,
        "page": page, "pages": pages, "per": per, "sort": sort, "dir": direction,
        "search": search, "notes": notes, "url": url, "sort_keys": SORT_KEYS,
        "filtered": bool(words or task_f or agent_f or outcome_f or study_f),
        "campaigns": campaigns,
        "incomplete": [c for c in campaigns.values() if c.incomplete],
        "tasks": sorted({r.task_id for r in runs} - {""}),
        "agents": sorted({r.agent for r in runs} - {""}),
        "studies": sorted({r.study for r in runs} - {""}),
        "outcomes": OUTCOMES,
        "chosen": {"task": task_f, "agent": agent_f, "outcome": outcome_f, "study": study_f},
        "runs_dir": settings.runs_dir,
    })


def _field_diff(grades: list[RunGrade | None]) -> list[dict[str, Any]]:
    """Each graded field of the task with its gold value and both runs' final values and
    scores (None for a run without a grade)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for side, grade in enumerate(grades):
        for f in grade.fields if grade else []:
            row = rows.setdefault((f.artifact, f.field), {
                "artifact": f.artifact, "field": f.field, "grader": f.grader, "gold": f.gold,
                "sides": [None, None]})
            row["sides"][side] = f
    for row in rows.values():
        a, b = row["sides"]
        row["differs"] = (a is None) != (b is None) or (
            a is not None and b is not None and (a.value != b.value or a.score != b.score))
    return list(rows.values())


@router.get("/compare")
async def compare(request: Request, user: UserDep, settings: SettingsDep) -> Response:
    """Two runs side by side: their events aligned on the user simulator's plans and the
    observer's semantic acts, both stereo traces, and the final field values against gold.
    The runs come as ``a`` and ``b``, or as two ``run`` values (the run list's checkboxes)."""
    from app.compare import compare_runs

    q = request.query_params
    picked = [p for p in q.getlist("run") if p]
    if picked:
        if len(picked) != 2:
            raise HTTPException(status_code=400, detail=f"Pick exactly two runs to compare "
                                f"(you picked {len(picked)}).")
        a, b = picked
    else:
        a, b = q.get("a", ""), q.get("b", "")
        if not a or not b:
            raise HTTPException(status_code=400, detail="Name two runs to compare: "
                                "/compare?a=RUN&b=RUN, or tick two runs in the run list.")
    run_a, run_b = _run_dir(settings, a), _run_dir(settings, b)
    try:
        meta_a, meta_b = RunDir(run_a).read_meta(), RunDir(run_b).read_meta()
    except RunDirError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from None
    notices = []
    if meta_a.task_id != meta_b.task_id:
        notices.append(f"These runs are of different tasks ({meta_a.task_id} and "
                       f"{meta_b.task_id}): the alignment is only indicative.")
    rows, first = compare_runs(run_a, run_b)
    tasks = catalogue(request).tasks
    grades = [grade_cached(d, tasks) if m.task_id in tasks else None
              for d, m in ((run_a, meta_a), (run_b, meta_b))]
    traces = []
    for side, d in ((a, run_a), (b, run_b)):
        try:
            traces.append(run_file(d, "trace.wav") is not None)
        except RunFileError as exc:
            traces.append(False)
            notices.append(f"{side}: {exc}")
    return render(request, "compare.html", {
        "user": user, "a": a, "b": b, "meta_a": meta_a, "meta_b": meta_b, "rows": rows,
        "first": first, "grades": grades, "notices": [shown(request, n) for n in notices],
        "traces": traces, "fields": _field_diff(grades),
        "shared_plans": sum(1 for r in rows if r.is_plan and r.kind == "same"),
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
        meta = RunDir(run_dir).read_meta()
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
    task = tasks.get(meta.task_id)
    if task is None:
        notices.append(f"Task '{meta.task_id}' is not in this suite: no grading.")
    elif log.is_file():
        grade = grade_cached(run_dir, tasks)
    siblings = [r.path for r in run_index(settings.runs_dir, tasks)[0]
                if r.task_id == meta.task_id and r.path != run_path]
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
    meta = RunDir(run_dir).read_meta_or_none()
    if meta is not None and meta.task_id in tasks:
        grade_cached(run_dir, tasks)  # re-grade now, so the replay shows the new grade
    return RedirectResponse(f"/runs/{run_path}/replay#corrections", status_code=303)
