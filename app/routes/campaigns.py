"""Campaign dashboard: scorecard with CIs, gates, AFA, correction uptake, floor control, tool
efficiency, the reliability–latency frontier and per-taxonomy heatmaps; CSV/JSON downloads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from app.auth import UserDep
from app.deps import SettingsDep
from app.routes.tasks import catalogue
from app.templating import render
from grading.dashboard import Dashboard, build_dashboard, runs_csv, slices_csv

router = APIRouter()


def campaign_dirs(runs_dir: Path) -> list[Path]:
    if not runs_dir.is_dir():
        return []
    return sorted(p.parent for p in runs_dir.rglob("campaign.json")
                  if ".incomplete" not in p.parts)


def _dashboard(request: Request, settings: SettingsDep, path: str) -> Dashboard:
    root = settings.runs_dir.resolve()
    target = (root / path).resolve()
    if root not in target.parents or not (target / "campaign.json").is_file():
        raise HTTPException(status_code=404, detail=f"No campaign '{path}'.")
    try:
        return build_dashboard(target, catalogue(request).tasks)
    except ValueError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from None


def frontier_point(rel: str, board: Dashboard) -> dict[str, Any]:
    """One campaign on the reliability–latency frontier: the figures of its ``report.json``
    (same resamples, same seed), picked out, never recomputed."""
    data = board.model_dump(mode="json")
    report = data["report"]
    return {"campaign": rel, "agent": data["agent"], "n_runs": report["n_runs"],
            "n_tasks": report["n_tasks"], "confidence": report["confidence"],
            "pass_at_1": report["pass_at_1"],
            "median_response_latency_ms": data["median_response_latency_ms"],
            "response_latency_iqr_ms": data["response_latency_iqr_ms"]}


@router.get("/campaigns")
async def campaign_list(request: Request, user: UserDep, settings: SettingsDep) -> Response:
    boards = []
    for d in campaign_dirs(settings.runs_dir):
        rel = str(d.relative_to(settings.runs_dir))
        try:
            boards.append((rel, build_dashboard(d, catalogue(request).tasks)))
        except ValueError:
            continue
    frontier = [frontier_point(rel, board) for rel, board in boards]
    return render(request, "campaigns.html",
                  {"user": user, "boards": boards, "frontier": frontier})


@router.get("/campaigns/{path:path}/report.json")
async def campaign_json(request: Request, path: str, user: UserDep,
                        settings: SettingsDep) -> Response:
    return JSONResponse(_dashboard(request, settings, path).model_dump(mode="json"))


@router.get("/campaigns/{path:path}/runs.csv")
async def campaign_runs_csv(request: Request, path: str, user: UserDep,
                            settings: SettingsDep) -> Response:
    return PlainTextResponse(runs_csv(_dashboard(request, settings, path)), media_type="text/csv")


@router.get("/campaigns/{path:path}/slices.csv")
async def campaign_slices_csv(request: Request, path: str, user: UserDep,
                              settings: SettingsDep) -> Response:
    return PlainTextResponse(slices_csv(_dashboard(request, settings, path)),
                             media_type="text/csv")


@router.get("/campaigns/{path:path}")
async def campaign_page(request: Request, path: str, user: UserDep,
                        settings: SettingsDep) -> Response:
    board = _dashboard(request, settings, path)
    # The charts read the very JSON that report.json serves (static/js/charts.js).
    return render(request, "campaign.html", {"user": user, "path": path, "d": board,
                                             "data": board.model_dump(mode="json")})
