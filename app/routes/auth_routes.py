"""Log in and out."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from app.auth import authenticate_async, end_session, start_session, verify_csrf
from app.deps import SessionDep
from app.templating import render
from app.throttle import account_key, client_key, throttle_for

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
    throttle = throttle_for(request.app)
    account = (throttle.login_account, account_key(username))
    client = (throttle.login_client, client_key(request))
    verdict = throttle.check(account, client)
    if not verdict.allowed:
        minutes = max(1, round(verdict.retry_after_s / 60))
        page = render(request, "login.html", {
            "next": _safe_next(next),
            "error": f"Too many login attempts for this account or from this address. Try "
                     f"again in {minutes} minute{'s' if minutes != 1 else ''}."}, status=429)
        page.headers["Retry-After"] = str(verdict.retry_after_s)
        return page
    # Counted before the check, so a burst of parallel guesses cannot slip past the limit;
    # the account's count is cleared by a successful login.
    throttle.hit(account, client)
    user = await authenticate_async(session, username, password)
    if user is None:
        return render(request, "login.html", {"next": _safe_next(next),
                                              "error": "Wrong username or password."}, status=401)
    throttle.clear(*account)
    start_session(request, session, user)
    return RedirectResponse(_safe_next(next), status_code=303)


@router.post("/logout", dependencies=[Depends(verify_csrf)])
async def logout(request: Request, session: SessionDep) -> Response:
    end_session(request, session)
    return RedirectResponse("/login", status_code=303)
