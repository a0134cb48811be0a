"""The FastAPI application factory."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import HTTPException as FastAPIHTTPException
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.middleware.sessions import SessionMiddleware

from app.auth import LoginRequired
from app.catalogue import Catalogue
from app.db import open_database
from app.deps import is_htmx
from app.routes import (
    annotate,
    auth_routes,
    campaigns,
    demo,
    participant,
    runs,
    study_a,
    study_b,
    tasks,
)
from app.security import BodyLimit, SecurityHeaders, StreamSlots
from app.settings import Settings
from app.study_a import CALIBRATION_MAX_BYTES
from app.templating import ROOT, render, shown


def _error_page(request: Request, status: int, message: str) -> Response:
    return render(request, "error.html", {"status": status, "message": message}, status=status)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = open_database(settings)  # refuses an empty or damaged database (app/db.py)
    app = FastAPI(title="APEX-Voice Studio", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.settings = settings
    app.state.engine = engine
    app.state.catalogue = Catalogue.load(settings.tasks_dir)
    app.state.streams = StreamSlots()
    # Innermost first: the body limit runs inside the session (its refusal page has the
    # session's CSRF token), the security headers outside everything.
    app.add_middleware(BodyLimit, upload_bytes=CALIBRATION_MAX_BYTES, error_page=_error_page)
    app.add_middleware(
        SessionMiddleware, secret_key=settings.session_secret(), same_site="lax",
        https_only=settings.secure_cookies, session_cookie="apex_session",
    )
    app.add_middleware(SecurityHeaders, https=settings.secure_cookies)
    app.mount("/static", StaticFiles(directory=str(ROOT / "static")), name="static")

    for module in (auth_routes, tasks, runs, campaigns, demo, study_a, annotate, study_b,
                   participant):
        app.include_router(module.router)
    _install_error_pages(app)

    @app.get("/", include_in_schema=False)
    async def _root() -> RedirectResponse:
        return RedirectResponse("/tasks", status_code=303)

    return app


def _install_error_pages(app: FastAPI) -> None:
    """Every refusal is a page (or an HTMX redirect to the login), its message cut off the
    server's own paths."""

    @app.exception_handler(LoginRequired)
    async def _login(request: Request, exc: LoginRequired) -> Response:
        target = f"/login?next={exc.next_url}"
        if is_htmx(request):
            return Response(status_code=401, headers={"HX-Redirect": target})
        return RedirectResponse(target, status_code=303)

    @app.exception_handler(FastAPIHTTPException)
    async def _http(request: Request, exc: FastAPIHTTPException) -> Response:
        if exc.status_code in (404, 403, 400, 413, 422):
            return render(request, "error.html", {"status": exc.status_code,
                                                  "message": shown(request, exc.detail)},
                          status=exc.status_code)
        return HTMLResponse(shown(request, exc.detail), status_code=exc.status_code)

    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        """A malformed path (``/studies/b/abc``) is a page that does not exist; a malformed
        query or form value is a bad request that names the field."""
        errors = exc.errors()
        if any(e.get("loc", ("",))[0] == "path" for e in errors):
            return render(request, "error.html", {"status": 404, "message": "No such page."},
                          status=404)
        detail = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'request'}: {e.get('msg', '')}"
            for e in errors)
        return render(request, "error.html", {"status": 400, "message": f"Bad request: {detail}"},
                      status=400)

    from sqlalchemy.exc import DataError

    @app.exception_handler(DataError)
    async def _unstorable(request: Request, exc: DataError) -> Response:
        """Input the database cannot hold is a bad request, not a server error: PostgreSQL
        refuses a NUL character in text and text longer than its column (SQLite stores
        both), whatever a route checked before."""
        if "NUL" in str(exc.orig):
            message = ("Bad request: text with a NUL character (\\0) cannot be stored or "
                       "looked up; remove it and try again.")
        else:
            message = ("Bad request: a value is too long, or of the wrong kind, to be "
                       "stored; shorten it and try again.")
        return render(request, "error.html", {"status": 400, "message": message}, status=400)

    @app.exception_handler(StarletteHTTPException)
    async def _not_found(request: Request, exc: StarletteHTTPException) -> Response:
        return render(request, "error.html", {"status": exc.status_code,
                                              "message": shown(request, exc.detail)},
                      status=exc.status_code)
