"""The web app under a public study's worst afternoon: do the researcher's pages stay usable?
Prints figures; asserts nothing.

The app server runs in its own process (uvicorn, 127.0.0.1, a free port) on a fresh data folder:
a researcher, a Study A with one annotator, a launched Study B with 25 participants past the
microphone check, and live calls that load no speech models. Everything stays on loopback.

1. **Anchor**: the researcher's pages (``/tasks``, ``/runs``, ``/studies/a``, ``/studies/b``,
   the Study B monitor) fetched one after the other for ``--seconds`` with nothing else going on:
   median, p95, min and max per page and over all pages.
2. **Under load**, the same pages for the same time while, all at once:
   - 100 event streams are held open (the 25 participant links, four pages each: each link's
     limit), and one more per link is tried (the server refuses it with 429);
   - 20 login attempts a second with wrong passwords (a guesser; each attempt with the session's
     CSRF token, usernames rotating over a few names);
   - a 1 GB upload to the calibration form by the logged-in researcher, chunked (no declared
     length: the server must cut it off at its limit), and another 1 GB one by an anonymous
     client declaring its length (refused before a byte is read).
   Reported beside the anchor: page latency (median, p95, spread), the streams open, the login
   answers by status and the rate achieved, each upload's status, time to refusal and bytes the
   client got to send, the server's RSS and the machine's load average at each phase.

Usage: .venv/bin/python bench/bench_web_load.py [--seconds 20] [--participants 25]
       (figures also go to bench/out/web_load.json)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.security.requests_world import PASSWORD, make_world  # noqa: E402  (after sys.path)

STREAMS_PER_LINK = 4
LOGINS_PER_S = 20
UPLOAD_BYTES = 1 << 30
CHUNK = 1 << 20

SERVE_CODE = """
import sys, uvicorn
from pathlib import Path
from app.live import LiveCallManager
from app.settings import Settings
from app.web import create_app
settings = Settings(data_dir=Path(sys.argv[1]), secret_key="bench-secret")
app = create_app(settings)
app.state.live = LiveCallManager(settings.runs_dir, asr_factory=lambda: None,
                                 reap_every_s=3600, retain_s=3600)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning",
            access_log=False)
"""


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}, {os.cpu_count()} cores"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stats(ms: list[float]) -> dict[str, float]:
    if not ms:
        return {"n": 0}
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(ms), "median": round(statistics.median(ms), 1), "p95": round(p95, 1),
            "min": round(ordered[0], 1), "max": round(ordered[-1], 1)}


def show(s: dict[str, float]) -> str:
    if not s.get("n"):
        return "no answers"
    return (f"median {s['median']:7.1f} ms  p95 {s['p95']:7.1f} ms  "
            f"(min {s['min']:.1f}, max {s['max']:.1f}, n={s['n']})")


async def log_in(http: httpx.AsyncClient) -> str:
    page = (await http.get("/login")).text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token, page[:300]
    r = await http.post("/login", data={"csrf_token": token.group(1), "username": "ada",
                                        "password": PASSWORD, "next": "/tasks"})
    fresh = re.search(r'"X-CSRF-Token": "([^"]+)"', (await http.get("/tasks")).text)
    if r.status_code not in (200, 303) or fresh is None:
        raise SystemExit(f"bench: the researcher could not log in ({r.status_code})")
    return fresh.group(1)


async def probe_pages(http: httpx.AsyncClient, pages: list[str], seconds: float,
                      ) -> tuple[dict[str, list[float]], Counter[int]]:
    """Fetch ``pages`` one after the other, round after round, for ``seconds``."""
    times: dict[str, list[float]] = {p: [] for p in pages}
    codes: Counter[int] = Counter()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for page in pages:
            t0 = time.perf_counter()
            try:
                r = await http.get(page)
                codes[r.status_code] += 1
                if r.status_code == 200:
                    times[page].append((time.perf_counter() - t0) * 1000)
            except httpx.HTTPError as exc:
                codes[-1] += 1
                print(f"  page {page}: {type(exc).__name__}", flush=True)
    return times, codes


async def hold_streams(base: str, links: list[tuple[str, int]], ready: asyncio.Event,
                       stop: asyncio.Event, out: dict[str, Any]) -> None:
    """Open STREAMS_PER_LINK event streams per link and keep them until ``stop``; then try one
    more per link (expecting 429)."""
    limits = httpx.Limits(max_connections=len(links) * (STREAMS_PER_LINK + 1) + 10,
                          max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:

        async def one(url: str) -> None:
            try:
                async with http.stream("GET", url) as r:
                    out["codes"][r.status_code] += 1
                    if r.status_code != 200:
                        return
                    chunks = r.aiter_raw()  # kept: dropping it would close the stream
                    if not (await chunks.__anext__()).startswith(b"retry:"):
                        return
                    out["open"] += 1
                    out["max_open"] = max(out["max_open"], out["open"])

                    async def drain() -> None:  # read what the server sends, as a page does
                        async for _ in chunks:
                            pass

                    reader = asyncio.create_task(drain())
                    try:
                        await stop.wait()
                    finally:
                        reader.cancel()
                        out["open"] -= 1
            except httpx.HTTPError as exc:
                out["codes"][type(exc).__name__] += 1

        t0 = time.perf_counter()
        tasks = [asyncio.create_task(one(f"/p/{tok}/s/{sid}/events"))
                 for tok, sid in links for _ in range(STREAMS_PER_LINK)]
        while out["open"] < len(tasks) and time.perf_counter() - t0 < 60:
            if all(t.done() for t in tasks):
                break
            await asyncio.sleep(0.05)
        out["open_s"] = round(time.perf_counter() - t0, 2)
        print(f"  streams: {out['open']} open after {out['open_s']} s, answers "
              f"{dict(out['codes'])}", flush=True)
        extra: Counter[int | str] = Counter()
        for tok, sid in links:
            try:  # a link with a free place would stream: read the status line only
                async with http.stream("GET", f"/p/{tok}/s/{sid}/events") as r:
                    extra[r.status_code] += 1
            except httpx.HTTPError as exc:
                extra[type(exc).__name__] += 1
        out["one_more_per_link"] = dict(extra)
        ready.set()
        await stop.wait()
        await asyncio.gather(*tasks, return_exceptions=True)


async def guess_passwords(base: str, stop: asyncio.Event, out: dict[str, Any]) -> None:
    """LOGINS_PER_S wrong-password logins a second until ``stop``."""
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        page = (await http.get("/login")).text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page)
        assert token
        names = ["ada", "admin", "researcher", "root", "grace"]
        pending: set[asyncio.Task[None]] = set()
        t0 = time.monotonic()
        n = 0

        async def attempt(i: int) -> None:
            start = time.perf_counter()
            try:
                r = await http.post("/login", data={
                    "csrf_token": token.group(1), "username": names[i % len(names)],
                    "password": f"guess-{i}", "next": "/tasks"})
                out["codes"][r.status_code] += 1
                out["ms"].append((time.perf_counter() - start) * 1000)
            except httpx.HTTPError as exc:
                out["codes"][type(exc).__name__] += 1

        while not stop.is_set():
            task = asyncio.create_task(attempt(n))
            pending.add(task)
            task.add_done_callback(pending.discard)
            n += 1
            next_at = t0 + n / LOGINS_PER_S
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        out["sent"] = n
        out["seconds"] = round(time.monotonic() - t0, 2)
        await asyncio.gather(*pending, return_exceptions=True)


class Body:
    """A 1 GB body in 1 MiB chunks, counting what the client got to send."""

    def __init__(self, head: bytes, tail: bytes) -> None:
        self.head, self.tail, self.sent = head, tail, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        block = b"\0" * CHUNK
        yield self.head
        self.sent += len(self.head)
        while self.sent < UPLOAD_BYTES:
            yield block
            self.sent += CHUNK
        yield self.tail

    @property
    def length(self) -> int:
        return len(self.head) + UPLOAD_BYTES + len(self.tail)


def multipart(token: str) -> tuple[Body, str]:
    boundary = "benchboundary7f3a"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"csrf_token\"\r\n\r\n"
            f"{token}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"audio\"; "
            "filename=\"huge.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF").encode()
    kind = f"multipart/form-data; boundary={boundary}"
    return Body(head, f"\r\n--{boundary}--\r\n".encode()), kind


async def upload(http: httpx.AsyncClient, url: str, token: str, *, declare: bool,
                 out: dict[str, Any]) -> None:
    body, kind = multipart(token)
    headers = {"Content-Type": kind}
    if declare:
        headers["Content-Length"] = str(body.length)
    t0 = time.perf_counter()
    try:
        r = await http.post(url, content=body, headers=headers)
        out["status"] = r.status_code
        out["message"] = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", r.text))[-300:].strip()
    except httpx.HTTPError as exc:
        out["status"] = type(exc).__name__
    out["seconds"] = round(time.perf_counter() - t0, 2)
    out["client_sent_mb"] = round(body.sent / 2**20, 1)


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="apex-bench-load-"))
    world = make_world(work, participants=args.participants)
    data_dir = world.settings.data_dir
    world.app.state.engine.dispose()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-c", SERVE_CODE, str(data_dir), str(port)],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    out: dict[str, Any] = {"participants": args.participants, "seconds": args.seconds}
    try:
        async with httpx.AsyncClient(base_url=base, timeout=120) as researcher:
            for _ in range(300):
                try:
                    await researcher.get("/login")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            token = await log_in(researcher)
            pages = ["/tasks", "/runs", "/studies/a", "/studies/b",
                     f"/studies/b/{world.study_b}"]
            await probe_pages(researcher, pages, 2)  # warm-up: templates, caches, imports

            print(f"anchor: researcher pages, nothing else running [{load()}]", flush=True)
            out["anchor_load"] = load()
            out["anchor_rss_mb"] = round(rss_mb(proc.pid), 1)
            anchor, anchor_codes = await probe_pages(researcher, pages, args.seconds)
            out["anchor"] = {p: stats(t) for p, t in anchor.items()}
            out["anchor_all"] = stats([x for t in anchor.values() for x in t])
            out["anchor_codes"] = dict(anchor_codes)

            streams: dict[str, Any] = {"codes": Counter(), "open": 0, "max_open": 0}
            logins: dict[str, Any] = {"codes": Counter(), "ms": []}
            chunked: dict[str, Any] = {}
            declared: dict[str, Any] = {}
            ready, stop = asyncio.Event(), asyncio.Event()
            holder = asyncio.create_task(hold_streams(base, world.participants, ready, stop,
                                                      streams))
            await asyncio.wait_for(ready.wait(), 90)
            print(f"under load: {streams['open']} streams open, {LOGINS_PER_S} logins/s, two "
                  f"1 GB uploads [{load()}]", flush=True)
            guesser = asyncio.create_task(guess_passwords(base, stop, logins))
            url = f"/studies/a/{world.study_a}/calibration"
            async with httpx.AsyncClient(base_url=base, timeout=120) as anonymous:
                uploads = [asyncio.create_task(upload(researcher, url, token, declare=False,
                                                      out=chunked)),
                           asyncio.create_task(upload(anonymous, url, "", declare=True,
                                                      out=declared))]
                loaded, loaded_codes = await probe_pages(researcher, pages, args.seconds)
                out["load_during"] = load()
                out["rss_during_mb"] = round(rss_mb(proc.pid), 1)
                stop.set()
                await asyncio.wait_for(asyncio.gather(guesser, *uploads, holder), 120)
            out["loaded"] = {p: stats(t) for p, t in loaded.items()}
            out["loaded_all"] = stats([x for t in loaded.values() for x in t])
            out["loaded_codes"] = dict(loaded_codes)
            out["streams"] = {"open": streams["max_open"], "open_s": streams.get("open_s"),
                              "codes": {str(k): v for k, v in streams["codes"].items()},
                              "one_more_per_link": streams.get("one_more_per_link")}
            out["logins"] = {"sent": logins.get("sent"), "seconds": logins.get("seconds"),
                             "codes": {str(k): v for k, v in logins["codes"].items()},
                             "answer_ms": stats(logins["ms"])}
            out["upload_chunked_researcher"] = chunked
            out["upload_declared_anonymous"] = declared
            out["after_rss_mb"] = round(rss_mb(proc.pid), 1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    ap.add_argument("--participants", type=int, default=25,
                    help="participant links (each holds four streams)")
    args = ap.parse_args()
    out = asyncio.run(bench(args))
    print(f"\nresearcher pages, {out['seconds']:.0f} s per phase "
          f"(anchor: no load [{out['anchor_load']}]; loaded: [{out['load_during']}])")
    for page in out["anchor"]:
        print(f"  {page:18s} anchor {show(out['anchor'][page])}")
        print(f"  {'':18s} loaded {show(out['loaded'][page])}")
    print(f"  {'all pages':18s} anchor {show(out['anchor_all'])}")
    print(f"  {'':18s} loaded {show(out['loaded_all'])}")
    print(f"  answers: anchor {out['anchor_codes']}, loaded {out['loaded_codes']}")
    s = out["streams"]
    print(f"event streams: {s['open']} open at once (in {s['open_s']} s), answers {s['codes']}; "
          f"one more per link: {s['one_more_per_link']}")
    lg = out["logins"]
    rate = (lg["sent"] or 0) / (lg["seconds"] or 1)
    print(f"wrong-password logins: {lg['sent']} sent in {lg['seconds']} s ({rate:.1f}/s), "
          f"answers {lg['codes']}, {show(lg['answer_ms'])}")
    for name, key in (("1 GB chunked upload, researcher", "upload_chunked_researcher"),
                      ("1 GB declared upload, anonymous", "upload_declared_anonymous")):
        u = out[key]
        status = u.get("status")
        said = (f"status {status}" if isinstance(status, int) else
                f"connection closed by the server ({status}: a client still sending loses "
                "the 413 sent before the close)")
        print(f"{name}: {said} after {u.get('seconds')} s, the client got "
              f"{u.get('client_sent_mb')} MB out; {u.get('message', '')[:160]}")
    print(f"server RSS: anchor {out['anchor_rss_mb']} MB, under load {out['rss_during_mb']} MB, "
          f"after {out['after_rss_mb']} MB")
    dest = ROOT / "bench" / "out" / "web_load.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=2, default=str))
    print(f"(figures in {dest.relative_to(ROOT)})")


if __name__ == "__main__":
    main()
