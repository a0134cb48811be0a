"""Event streams (issue #15, item 1), tried the way an attacker would, on a real server on
127.0.0.1: a participant link opening event stream after event stream must not take the
researcher pages down (each stream held a database connection while open, and 18 of them
emptied the pool: the researcher pages answered 500 after 30 s), and a link gets only a few
streams at once. Timing is the load bench's business (bench/bench_web_load.py); these tests
assert that pages answer."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
import pytest

from app.security import MAX_STREAMS_PER_LINK
from tests.security.requests_world import log_in, make_world, open_stream, served

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

RESEARCHER_PAGES = ("/tasks", "/runs", "/studies/a", "/studies/b")
TIMEOUT = httpx.Timeout(45.0)
LIMITS = httpx.Limits(max_connections=200, max_keepalive_connections=0)


async def test_one_link_opening_many_streams_leaves_researcher_pages_up(tmp_path: Path) -> None:
    world = make_world(tmp_path, participants=1)
    token, sid = world.participants[0]
    url = f"/p/{token}/s/{sid}/events"
    with served(world.app) as base:
        async with httpx.AsyncClient(base_url=base, timeout=TIMEOUT, limits=LIMITS) as http, \
                httpx.AsyncClient(base_url=base, timeout=TIMEOUT,
                                  follow_redirects=True) as researcher, \
                AsyncExitStack() as streams:
            await log_in(researcher, "/studies/b")
            opened = [await streams.enter_async_context(open_stream(http, url))
                      for _ in range(18)]
            codes = [r.status_code for r in opened]
            assert codes.count(200) == MAX_STREAMS_PER_LINK, codes
            refused = [r for r in opened if r.status_code != 200]
            assert {r.status_code for r in refused} == {429}
            assert "close the other tabs" in refused[0].text.lower(), refused[0].text
            for path in (*RESEARCHER_PAGES, f"/studies/b/{world.study_b}"):
                r = await researcher.get(path)
                assert r.status_code == 200, (path, r.status_code, r.text[:300])


async def test_a_hundred_open_streams_leave_researcher_pages_up(tmp_path: Path) -> None:
    """100 event streams held open at once (24 participants with four pages each and four
    pages of one live demo) while the researcher walks through their pages; a fifth stream of
    one link is refused, and a closed stream frees its place."""
    world = make_world(tmp_path, participants=24)
    with served(world.app) as base:
        async with httpx.AsyncClient(base_url=base, timeout=TIMEOUT, limits=LIMITS) as http, \
                httpx.AsyncClient(base_url=base, timeout=TIMEOUT,
                                  follow_redirects=True) as researcher:
            csrf = await log_in(researcher, "/demo")
            r = await researcher.post("/demo", data={"csrf_token": csrf, "task": "apexv1_070",
                                                     "agent": "scripted:oracle"})
            assert r.status_code == 200 and "/demo/" in str(r.url), r.text[:300]
            demo = str(r.url).rsplit("/", 1)[1]
            urls = [f"/p/{token}/s/{sid}/events" for token, sid in world.participants
                    for _ in range(MAX_STREAMS_PER_LINK)]
            async with AsyncExitStack() as streams:
                opened = await asyncio.gather(*(
                    streams.enter_async_context(open_stream(http, u)) for u in urls))
                # The researcher's own demo page, open in four tabs.
                mine = [await streams.enter_async_context(
                    open_stream(researcher, f"/demo/{demo}/events"))
                    for _ in range(MAX_STREAMS_PER_LINK)]
                assert [s.status_code for s in opened + mine] == [200] * 100
                for path in (*RESEARCHER_PAGES, f"/studies/b/{world.study_b}",
                             f"/studies/a/{world.study_a}", f"/demo/{demo}"):
                    page = await researcher.get(path)
                    assert page.status_code == 200, (path, page.status_code, page.text[:300])
                token, sid = world.participants[0]
                async with open_stream(http, f"/p/{token}/s/{sid}/events") as extra:
                    assert extra.status_code == 429
                async with open_stream(researcher, f"/demo/{demo}/events") as extra:
                    assert extra.status_code == 429
            # Every stream closed: the places are free again.
            for _ in range(50):  # the server notices each closed stream within moments
                async with open_stream(http, f"/p/{token}/s/{sid}/events") as again:
                    if again.status_code == 200:
                        break
                await asyncio.sleep(0.1)
            assert again.status_code == 200
            assert (await researcher.get("/studies/b")).status_code == 200
            await researcher.post(f"/demo/{demo}/stop", headers={"X-CSRF-Token": csrf})
