"""Campaign dashboard: scorecard with CIs, gates, AFA, correction uptake, floor control, tool
efficiency, the reliability–latency frontier and per-taxonomy heatmaps; CSV/JSON downloads."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from app.auth import UserDep
from app.deps import SettingsDep
from app.routes.tasks import catalogue
from app.web import render
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


@router.get("/campaigns")
async def campaign_list(request: Request, user: UserDep, settings: SettingsDep) -> Response:
    boards = []
    for d in campaign_dirs(settings.runs_dir):
        rel = str(d.relative_to(settings.runs_dir))
        try:
            boards.append((rel, build_dashboard(d, catalogue(request).tasks, n_resamples=2000)))
        except ValueError:
            continue
    return render(request, "campaigns.html", {"user": user, "boards": boards})


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
    return render(request, "campaign.html", {"user": user, "path": path, "d": board})
