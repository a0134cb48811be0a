"""Log in and out."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from app.auth import authenticate, verify_csrf
from app.deps import SessionDep
from app.web import render

router = APIRouter()


def _safe_next(target: str) -> str:
    return target if target.startswith("/") and not target.startswith("//") else "/tasks"


@router.get("/login")
async def login_page(request: Request, next: str = "/tasks") -> Response:
    return render(request, "login.html", {"next": _safe_next(next), "error": None})


@router.post("/login", dependencies=[Depends(verify_csrf)])
async def login(
    request: Request, session: SessionDep, username: Annotated[str, Form()],
    password: Annotated[str, Form()], next: Annotated[str, Form()] = "/tasks",
) -> Response:
    user = authenticate(session, username, password)
    if user is None:
        return render(request, "login.html", {"next": _safe_next(next),
                                              "error": "Wrong username or password."}, status=401)
    request.session["user_id"] = user.id
    return RedirectResponse(_safe_next(next), status_code=303)


@router.post("/logout", dependencies=[Depends(verify_csrf)])
async def logout(request: Request) -> Response:
    request.session.clear()
    return RedirectResponse("/login", status_code=303)
