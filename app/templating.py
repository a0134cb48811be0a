"""Pages: the Jinja templates and how a route renders one (a full page, or its HTMX fragment).

Routes import this module, never :mod:`app.web` (the factory that imports them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from fastapi.templating import Jinja2Templates

from app.auth import csrf_token
from app.deps import is_htmx
from app.security import public_text
from app.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
templates = Jinja2Templates(directory=str(ROOT / "templates"))
templates.env.globals["csrf_token"] = csrf_token


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
    """A full page, or its ``_partial`` fragment for an HTMX request when one exists."""
    return templates.TemplateResponse(request, name, context, status_code=status)


def page_or_fragment(
    request: Request, page: str, fragment: str, context: dict[str, Any]
) -> Response:
    return render(request, fragment if is_htmx(request) else page, context)


def shown(request: Request, message: object) -> str:
    """A message for a page: the server's own folders cut off its paths."""
    settings: Settings = request.app.state.settings
    return public_text(str(message), settings.runs_dir, settings.data_dir, settings.tasks_dir,
                       ROOT)
