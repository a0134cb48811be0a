"""Request size limits (issue #15, item 6), sent the way an attacker would: bodies far larger
than any page takes are refused with 413 before they are read or spooled to disk (an anonymous
400 MiB multipart POST used to be written to disk before its CSRF 403; a 40 MB JSON rating
raised the server's memory by 196 MiB; a WebRTC offer was read whole whatever its size), and
the login and CSRF checks come before any multipart parsing. Every body here is fed to the app
chunk by chunk, so the tests see how much of it the server pulled."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from sqlmodel import Session, select

from app.models_study_a import StudyAItem
from app.security import FORM_LIMIT, JSON_LIMIT, LINGER_BYTES, UPLOAD_SLACK
from app.study_a import CALIBRATION_MAX_BYTES
from tests.security.requests_world import (
    Fed,
    asgi_client,
    csrf_of,
    log_in,
    make_world,
    served,
)

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

MiB = 1 << 20
BOUNDARY = "----attackerboundary"


def _multipart(total: int, token: str = "") -> tuple[Fed, dict[str, str]]:
    """A calibration upload of about ``total`` bytes: (the CSRF field,) then one audio file
    whose content is filler; closed by the final boundary."""
    head = b""
    if token:
        head += (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"csrf_token\"\r\n\r\n"
                 f"{token}\r\n").encode()
    head += (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"audio\"; "
             "filename=\"big.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF").encode()
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()
    return Fed(total, head=head, tail=tail), {
        "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}


async def test_an_anonymous_huge_upload_is_refused_before_it_is_read(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    url = f"/studies/a/{world.study_a}/calibration"
    async with asgi_client(world.app) as http:
        body, headers = _multipart(40 * MiB)
        r = await http.post(url, content=body,
                            headers={**headers, "Content-Length": str(body.length)})
        assert r.status_code == 413, (r.status_code, r.text[:300])
        assert body.sent <= MiB, f"the server pulled {body.sent} bytes of a refused body"
        assert "too large" in r.text and "MiB" in r.text
        # The same without a declared length (chunked): the login check refuses it first.
        body, headers = _multipart(40 * MiB)
        r = await http.post(url, content=body, headers=headers)
        assert r.status_code in (303, 403, 413), r.status_code
        assert body.sent <= MiB, f"the server pulled {body.sent} bytes before refusing"


async def test_a_visitor_with_a_csrf_token_is_refused_before_the_multipart_is_parsed(
        tmp_path: Path) -> None:
    """A valid CSRF token comes with any page (the login form); it must not buy the parsing
    of an upload that needs a researcher's login."""
    world = make_world(tmp_path)
    async with asgi_client(world.app) as http:
        token = csrf_of((await http.get("/login")).text)
        body, headers = _multipart(10 * MiB, token)
        r = await http.post(f"/studies/a/{world.study_a}/calibration", content=body,
                            headers=headers)
        assert r.status_code in (303, 401, 403), r.status_code
        assert body.sent <= MiB, f"the server pulled {body.sent} bytes before the login check"


async def test_a_researcher_upload_over_the_limit_stops_at_the_limit(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    limit = CALIBRATION_MAX_BYTES
    async with asgi_client(world.app) as http:
        await log_in(http, f"/studies/a/{world.study_a}")
        token = csrf_of((await http.get(f"/studies/a/{world.study_a}")).text)
        body, headers = _multipart(limit + 8 * MiB, token)
        r = await http.post(f"/studies/a/{world.study_a}/calibration", content=body,
                            headers=headers)  # chunked: no length to refuse it by
        assert r.status_code == 413, (r.status_code, r.text[:300])
        assert body.sent <= limit + UPLOAD_SLACK + LINGER_BYTES + 2 * MiB
        assert f"{CALIBRATION_MAX_BYTES / MiB:.1f} MiB" in r.text
    with Session(world.app.state.engine) as db:
        assert not [i for i in db.exec(select(StudyAItem)).all() if i.calibration]
    assert not list((world.settings.data_dir / "study_a").glob("**/*.wav"))


async def test_a_huge_json_rating_is_refused_unread(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    async with asgi_client(world.app) as http:
        page = await http.get(f"/annotate/{world.annotator}/item/1")
        csrf = re.search(r'"X-CSRF-Token": "([^"]+)"', page.text)
        assert csrf
        url = f"/annotate/{world.annotator}/item/1/rating"
        headers = {"X-CSRF-Token": csrf.group(1), "Content-Type": "application/json"}
        body = Fed(40_000_000, head=b'{"comment": "', tail=b'"}')
        r = await http.post(url, content=body,
                            headers={**headers, "Content-Length": str(body.length)})
        assert r.status_code == 413, (r.status_code, r.text[:300])
        assert body.sent <= MiB
        assert "too large" in r.json()["error"]
        body = Fed(40_000_000, head=b'{"comment": "', tail=b'"}')
        r = await http.post(url, content=body, headers=headers)  # chunked
        assert r.status_code == 413
        assert body.sent <= 2 * JSON_LIMIT + 2 * MiB  # the limit, a little more, whole chunks
        # An ordinary rating still goes through (once the clip has been heard).
        await http.post(url.replace("/rating", "/played"), json={}, headers=headers)
        r = await http.post(url, json={"fidelity": 4, "comment": "fine"}, headers=headers)
        assert r.status_code == 200 and r.json()["saved"] is True


async def test_an_oversized_webrtc_offer_is_refused_unread(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    token, sid = world.participants[0]
    async with asgi_client(world.app) as http:
        page = await http.get(f"/p/{token}/s/{sid}")
        csrf = csrf_of(page.text)
        body = Fed(8 * MiB, head=b'{"type": "offer", "sdp": "v=0\\r\\n', tail=b'"}')
        r = await http.post(f"/p/{token}/s/{sid}/offer", content=body, headers={
            "X-CSRF-Token": csrf, "Content-Type": "application/json",
            "Content-Length": str(body.length)})
        assert r.status_code == 413, (r.status_code, r.text[:300])
        assert body.sent <= MiB
        # A form field far over what any form needs.
        body = Fed(FORM_LIMIT * 8, head=b"csrf_token=" + csrf.encode() + b"&decision=")
        r = await http.post(f"/p/{token}/consent", content=body, headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Content-Length": str(body.length)})
        assert r.status_code == 413 and body.sent <= MiB
    await world.app.state.live.close()


async def test_an_upload_a_little_over_the_limit_gets_the_message_over_a_socket(
        tmp_path: Path) -> None:
    """A real server on 127.0.0.1: a file somewhat larger than the limit (the honest mistake)
    is read to its end and dropped, so the browser gets the 413 page, not a reset connection."""
    world = make_world(tmp_path)
    with served(world.app) as base:
        async with httpx.AsyncClient(base_url=base, timeout=60,
                                     follow_redirects=True) as http:
            await log_in(http, f"/studies/a/{world.study_a}")
            token = csrf_of((await http.get(f"/studies/a/{world.study_a}")).text)
            body, headers = _multipart(CALIBRATION_MAX_BYTES + 4 * MiB, token)
            r = await http.post(f"/studies/a/{world.study_a}/calibration", content=body,
                                headers={**headers, "Content-Length": str(body.length)})
            assert r.status_code == 413, r.status_code
            assert "Request too large" in r.text and "Nothing was saved" in r.text
            # The connection is still good for the next page.
            assert (await http.get(f"/studies/a/{world.study_a}")).status_code == 200
