"""Requests, responses and files: what the web app refuses before a route sees it, and what
every response carries (docs/security.md, "Requests, responses and files").

- :class:`BodyLimit`: a request body larger than its route's limit gets 413 before it is read
  (by its declared ``Content-Length``) or as soon as it passes the limit (a chunked body is cut
  off there, never spooled whole). Uploads have the larger limits; forms and JSON small ones.
- :class:`SecurityHeaders`: a Content Security Policy that allows this site's own scripts only
  and no framing, ``nosniff``, a Referrer-Policy, a Permissions-Policy (the microphone for this
  site only), built with the ``secure`` library; token-bearing pages (``/p/…``,
  ``/annotate/…``) are never stored by a cache.
- :class:`StreamSlots`: how many event streams one link (a participant, a live demo) may hold
  open at once, and the server in all; a stream holds no database connection while it waits.
- :func:`public_text`: a message with the server's own folders cut off its paths.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import secure
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

KiB = 1024
MiB = 1024 * KiB

# --------------------------------------------------------------------------- body size

FORM_LIMIT = 256 * KiB
"""Any form or body without a rule of its own (a consent text, a plan pasted as text…)."""
JSON_LIMIT = 64 * KiB
"""A rating (a comment of at most 2,000 characters) or a WebRTC offer (an SDP of a few kB)."""
PLAN_IMPORT_LIMIT = 3 * MiB
"""An imported plan: at most 2 MB of CSV (``MAX_PLAN_CSV``) and the form around it."""
UPLOAD_SLACK = 1 * MiB
"""What a multipart upload carries beside its file: the form fields and part headers."""
LINGER_BYTES = 8 * MiB
"""How much more than its limit a refused body may still be read (and dropped) so that the
client, done sending, reads the 413 instead of a reset connection (closing a socket with
unread data resets it); at most the route's own limit again."""
LINGER_S = 10.0


@dataclass(frozen=True)
class BodyRule:
    limit: int
    what: str
    """What the route takes, as the refusal names it."""
    advice: str
    json: bool = False
    """The route answers JSON (its refusal does too)."""


def _size(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{max(1, n // KiB)} KiB"


_CALIBRATION = re.compile(r"/studies/a/[^/]+/calibration")
_PLAN_IMPORT = re.compile(r"/studies/b/[^/]+/import")
_RATING = re.compile(r"/annotate/[^/]+/item/[^/]+/rating")
_OFFER = re.compile(r"/(p/[^/]+/s|demo)/[^/]+/offer")


def body_rule(path: str, upload_bytes: int) -> BodyRule:
    """The body limit of the route at ``path`` (``upload_bytes``: the largest audio upload)."""
    if _CALIBRATION.fullmatch(path):
        return BodyRule(upload_bytes + UPLOAD_SLACK,
                        f"a calibration audio file of at most {_size(upload_bytes)}",
                        "Upload a shorter recording, or a compressed one (Ogg/Opus, MP3, "
                        "FLAC).")
    if _PLAN_IMPORT.fullmatch(path):
        return BodyRule(PLAN_IMPORT_LIMIT, "a plan CSV of at most 2 MB",
                        "Import the plan CSV this study exported, edited, not a larger file.")
    if _RATING.fullmatch(path):
        return BodyRule(JSON_LIMIT, "a rating with a comment of at most 2,000 characters",
                        "Shorten the comment and save again.", json=True)
    if _OFFER.fullmatch(path):
        return BodyRule(JSON_LIMIT, "a call set-up message of a few kB",
                        "Reload the page and start the call again.", json=True)
    return BodyRule(FORM_LIMIT, "a form of at most 256 KiB",
                    "Shorten the text you entered and send it again.")


ErrorPage = Callable[[Request, int, str], Response]


class BodyLimit:
    """Refuse request bodies over their route's limit (:func:`body_rule`) with 413: at once
    when the declared ``Content-Length`` is over it (nothing is read), else as soon as the
    bytes received pass it (the route sees the body end there and its answer is replaced by
    the 413). ``error_page`` renders the refusal for a browser; JSON routes get
    ``{"error": …}``."""

    def __init__(self, app: ASGIApp, *, upload_bytes: int, error_page: ErrorPage) -> None:
        self.app = app
        self.upload_bytes = upload_bytes
        self.error_page = error_page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rule = body_rule(scope["path"], self.upload_bytes)
        declared = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if declared is not None:
            text = declared.decode("latin-1").strip()
            if not text.isascii() or not text.isdigit():
                await self._answer(scope, send, rule, 400, "The request's Content-Length "
                                   f"header ({text[:40]!r}) is not a number of bytes.")
                return
            if int(text) > rule.limit:
                # read (and drop) a body a little over the limit so the client sees the 413;
                # a larger one is refused at once, unread
                done = (int(text) <= rule.limit + _linger(rule)
                        and await _drain(receive, _linger(rule) + rule.limit))
                await self._refuse(scope, send, rule, int(text), done)
                return
        received = 0
        over = False
        answered = False

        async def limited() -> Message:
            nonlocal received, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > rule.limit:
                    over = True  # the route sees the body end here; its answer is dropped
                    return {"type": "http.disconnect"}
            return message

        async def guarded(message: Message) -> None:
            nonlocal answered
            if not over:
                await send(message)
            elif not answered and message["type"] == "http.response.start":
                answered = True
                await self._refuse(scope, send, rule, None,
                                   await _drain(receive, _linger(rule)))

        try:
            await self.app(scope, limited, guarded)
        except Exception:
            if not over:
                raise  # a route reading a body cut short may fail; that failure is ours
        if over and not answered:
            await self._refuse(scope, send, rule, None, await _drain(receive, _linger(rule)))

    async def _refuse(self, scope: Scope, send: Send, rule: BodyRule,
                      declared: int | None, drained: bool) -> None:
        size = (f"this request is {_size(declared)}" if declared is not None
                else "this request was larger")
        await self._answer(scope, send, rule, 413, (
            f"Request too large: this page takes {rule.what} ({_size(rule.limit)} in all), and "
            f"{size}. Nothing was saved. {rule.advice}"), close=not drained)

    async def _answer(self, scope: Scope, send: Send, rule: BodyRule, status: int,
                      message: str, *, close: bool = True) -> None:
        request = Request(scope)
        accept = request.headers.get("accept", "")
        kind = request.headers.get("content-type", "")
        response: Response
        if rule.json or "json" in kind or ("json" in accept and "html" not in accept):
            response = JSONResponse({"error": message}, status_code=status)
        else:
            response = self.error_page(request, status, message)
        if close:
            response.headers["Connection"] = "close"  # the rest of the body is never read

        async def nothing() -> Message:
            return {"type": "http.disconnect"}

        await response(scope, nothing, send)


def _linger(rule: BodyRule) -> int:
    return min(LINGER_BYTES, rule.limit)


async def _drain(receive: Receive, budget: int) -> bool:
    """Read and drop the rest of a request body, at most ``budget`` bytes and ``LINGER_S``
    seconds; whether the body ended within them."""

    async def read() -> bool:
        left = budget
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return False
            left -= len(message.get("body", b""))
            if left < 0:
                return False
            if not message.get("more_body", False):
                return True

    try:
        return await asyncio.wait_for(read(), LINGER_S)
    except TimeoutError:
        return False


# --------------------------------------------------------------------------- headers

PRIVATE_PREFIXES = ("/p/", "/annotate/", "/login")
"""Pages whose URL or content is a credential: never stored by a browser or proxy cache."""


def security_policy(*, https: bool) -> secure.Secure:
    """The headers every response carries (``https``: also Strict-Transport-Security)."""
    csp = (secure.ContentSecurityPolicy()
           .default_src("'self'").base_uri("'self'").object_src("'none'")
           .frame_ancestors("'none'").form_action("'self'")
           .script_src("'self'").script_src_attr("'none'")
           # htmx's indicator style and a few style attributes: styles only, never script
           .style_src("'self'", "'unsafe-inline'")
           .img_src("'self'", "data:", "blob:").media_src("'self'", "blob:")
           .connect_src("'self'").font_src("'self'").worker_src("'self'", "blob:"))
    permissions = (secure.PermissionsPolicy().microphone("self").camera().geolocation()
                   .payment().usb())
    policy = secure.Secure(
        csp=csp, xfo=secure.XFrameOptions().deny(), xcto=secure.XContentTypeOptions().nosniff(),
        referrer=secure.ReferrerPolicy().same_origin(), permissions=permissions,
        coop=secure.CrossOriginOpenerPolicy().same_origin(),
        corp=secure.CrossOriginResourcePolicy().same_origin(),
        hsts=(secure.StrictTransportSecurity().max_age(31536000) if https else None))
    return policy


class SecurityHeaders:
    """Add the policy's headers to every HTTP response that does not set its own (a route may
    be stricter, e.g. ``Referrer-Policy: no-referrer``), and ``Cache-Control: no-store`` to
    the private pages."""

    def __init__(self, app: ASGIApp, *, https: bool = False) -> None:
        self.app = app
        self.headers = [(k.lower().encode("latin-1"), v.encode("latin-1"))
                        for k, v in security_policy(https=https).headers.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        private = str(scope["path"]).startswith(PRIVATE_PREFIXES)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in self.headers if k not in present]
                if private and b"cache-control" not in present:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


# --------------------------------------------------------------------------- event streams

MAX_STREAMS_PER_LINK = 4
"""Event streams one participant link (or one live demo) may hold open at once: a page in a
few tabs, and a reconnect overlapping its old stream."""
MAX_STREAMS = 1000
"""Event streams the whole server holds open at once."""


class StreamSlots:
    """Open event streams, counted per link and in all."""

    def __init__(self, per_link: int = MAX_STREAMS_PER_LINK, total: int = MAX_STREAMS) -> None:
        self.per_link = per_link
        self.total = total
        self.open: Counter[str] = Counter()

    def take(self, key: str) -> bool:
        if self.open[key] >= self.per_link or sum(self.open.values()) >= self.total:
            return False
        self.open[key] += 1
        return True

    def give_back(self, key: str) -> None:
        self.open[key] -= 1
        if self.open[key] <= 0:
            del self.open[key]


class _SlotStream(StreamingResponse):
    """A streaming response that gives its slot back however it ends (a client gone before
    the first byte included)."""

    def __init__(self, content: AsyncIterator[str], release: Callable[[], None],
                 **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


def event_stream(slots: StreamSlots, key: str, stream: Callable[[], AsyncIterator[str]],
                 refusal: str) -> Response:
    """``stream()`` as Server-Sent Events in one of ``key``'s slots, or 429 with ``refusal``
    when its slots are taken."""
    if not slots.take(key):
        return PlainTextResponse(refusal, status_code=429,
                                 headers={"Cache-Control": "no-store", "Retry-After": "10"})
    return _SlotStream(stream(), lambda: slots.give_back(key), media_type="text/event-stream",
                       headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


# --------------------------------------------------------------------------- messages


def public_text(text: str, *roots: Path) -> str:
    """``text`` with every absolute path under one of ``roots`` written relative to it (the
    root itself by its name): researchers read run and file names, never the server's own
    folders."""
    forms: dict[str, str] = {}
    for root in roots:
        for form in (str(root.resolve()), str(root.absolute())):
            if form != "/":
                forms[form.rstrip("/")] = root.resolve().name
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form + "/", "").replace(form, forms[form])
    return text
