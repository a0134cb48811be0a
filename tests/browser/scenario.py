"""Real-browser scenarios, run by tests/browser/test_browser.py inside a network namespace that
has only ``lo``: the app server (uvicorn, in a thread) and Debian Chromium (driven by Playwright)
talk over 127.0.0.1 and nothing else.

Usage: ``python tests/browser/scenario.py CONFIG.json``. CONFIG names the data directory (with a
researcher account and a finished run to replay), the run to replay, the demo's task and agent and
where to save screenshots. The last line of stdout is ``RESULT {json}``: per scenario the figures
the test asserts on, or ``{"error": ...}``. Nothing is asserted here.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/lib/chromium/chromium"
# notes/webrtc-testing.md: the flags that worked (no fake microphone: the page only listens).
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", "--disable-quic", "--disable-dev-shm-usage", "--no-default-browser-check",
    "--disable-features=WebRtcHideLocalIpsWithMdns", "--allow-loopback-in-peer-connection",
    "--use-fake-ui-for-media-stream",
]


def loopback_only_ice() -> None:
    """aioice leaves 127.0.0.1 out of its host candidates; in a namespace with only ``lo`` the
    connection would hang in "connecting". Offer the loopback address alone."""
    import aioice.ice

    def host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
        return ["127.0.0.1"] if use_ipv4 else []

    aioice.ice.get_host_addresses = host_addresses


def start_server(data_dir: Path) -> tuple[str, Any, threading.Thread]:
    import uvicorn

    from app.settings import Settings
    from app.web import create_app

    app = create_app(Settings(data_dir=data_dir, secret_key="browser-test-secret"))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the app server did not start")
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server, thread


def login(page: Any, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/login?next=/tasks")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/tasks")


def replay_scenario(page: Any, base: str, cfg: dict[str, Any]) -> dict[str, Any]:
    """Open a replay, click an artifact.update marker, read the clock and the artifact panel."""
    events = [json.loads(line) for line in
              (Path(cfg["data_dir"]) / "runs" / cfg["replay_run"] / "events.jsonl")
              .read_text().splitlines() if line.strip()]
    t0 = time.monotonic()
    page.goto(f"{base}/runs/{cfg['replay_run']}/replay")
    page.wait_for_function("() => window.replayReady === true", timeout=30_000)
    ready_s = time.monotonic() - t0
    markers = page.locator("#lanes .ev-artifact-update")
    count = markers.count()
    # A version in the middle of the run. Chips never overlap; one that has no room at this
    # zoom is folded into the chip before it ("+N"), so zoom in (the "+" key) until it shows.
    updates = [e for e in events if e["type"] == "artifact.update"]
    index = len(updates) // 2
    while index < len(updates) - 1 and updates[index]["t_media_ms"] < 3000:
        index += 1
    target = updates[index]
    t = target["t_media_ms"] / 1000
    expected = max(e["version"] for e in updates
                   if e["artifact_id"] == target["artifact_id"]
                   and e["t_media_ms"] <= target["t_media_ms"])
    before = page.eval_on_selector("#state-artifacts", "el => el.innerText")
    page.evaluate("t => window.replaySeek(Math.max(0, t - 2))", t)  # its moment in view
    chip = page.locator(f"#lanes .ev-artifact-update[data-seq='{target['seq']}']")
    for _ in range(6):
        if chip.count():
            break
        page.keyboard.type("+")
    chip.click(position={"x": 3, "y": 5}, timeout=10_000)
    page.wait_for_function(
        "v => { const h = document.querySelector('#state-artifacts h3[data-version]');"
        " return h && h.dataset.version === String(v); }", arg=expected, timeout=10_000)
    shown = page.eval_on_selector("#state-artifacts h3[data-version]", "h => h.dataset.version")
    clock = page.inner_text("#clock")
    url_hash = page.evaluate("location.hash")
    shot = Path(cfg["screenshots"]) / "replay.png"
    page.screenshot(path=str(shot), full_page=True)
    return {
        "ready_s": round(ready_s, 3), "markers": count, "clicked_t": t,
        "expected_version": expected, "shown_version": int(shown), "clock": clock,
        "hash": url_hash, "panel_before": before[:200], "screenshot": str(shot),
    }


# The end-state checks of issue #17 (tests/browser/test_browser.py and test_demo_browser.py
# assert on them): the outside numbers of the page's lists fit in their padding, the lifecycle
# history has one line per transition, the grade is in the viewport, no horizontal scroll.
# An outside list marker is its number, the period and a space ("12. "), ending where its item
# starts; in a scrolling list whatever sticks out past the list's padding is clipped.
LIST_MARKERS_JS = """() => Array.from(document.querySelectorAll('ol.demo-log')).flatMap(ol => {
  const items = Array.from(ol.children);
  if (!items.length) return [];
  const cs = getComputedStyle(items[0]);
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = cs.fontStyle + ' ' + cs.fontWeight + ' ' + cs.fontSize + ' ' + cs.fontFamily;
  const room = items[0].getBoundingClientRect().left - ol.getBoundingClientRect().left
    - ol.clientLeft;
  return [{list: ol.id, items: items.length, room: room,
           need: ctx.measureText(items.length + '. ').width}];
})"""
TRAILS_JS = """() => Array.from(document.querySelectorAll('.demo-artifact')).map(box => {
  const trail = box.querySelector('.trail');
  const entries = trail ? Array.from(trail.children) : [];
  return {artifact: box.dataset.artifact, entries: entries.length,
          lines: new Set(entries.map(e => Math.round(e.getBoundingClientRect().top))).size,
          texts: entries.map(e => e.textContent.trim())};
})"""
IN_VIEW_JS = """sel => { const el = document.querySelector(sel); if (!el) return null;
  const r = el.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, height: innerHeight,
          inside: r.top >= 0 && r.bottom <= innerHeight && r.height > 0}; }"""
HSCROLL_JS = ("() => ({scroll: document.documentElement.scrollWidth,"
              " client: document.documentElement.clientWidth})")
PLAYERS_JS = """() => Array.from(document.querySelectorAll('.demo-audio audio')).map(a =>
  ({id: a.id, t: a.currentTime, paused: a.paused}))"""
WATCH_END_JS = """() => { window.demoEnd = {};
  const stamp = (k) => {
    if (window.demoEnd[k] === undefined) window.demoEnd[k] = performance.now(); };
  new MutationObserver(() => {
    if (document.querySelector('#demo-transcript li.end')) stamp('media'); })
    .observe(document.getElementById('demo-transcript'), {childList: true});
  new MutationObserver(() => { const s = document.getElementById('demo-state').dataset.state;
    if (s !== 'waiting' && s !== 'running') stamp('status'); })
    .observe(document.getElementById('demo-state'), {attributes: true}); }"""


def end_state(page: Any, grade_selector: str = "#demo-grade") -> dict[str, Any]:
    """What the page shows once the grade has arrived: players (read twice, 1.5 s apart),
    list markers, lifecycle history, the grade's place in the viewport, page width."""
    first = page.evaluate(PLAYERS_JS)
    time.sleep(1.5)
    second = page.evaluate(PLAYERS_JS)
    return {
        "players": [{"id": a["id"], "t0": a["t"], "t1": b["t"], "paused": b["paused"]}
                    for a, b in zip(first, second, strict=True)],
        "markers": page.evaluate(LIST_MARKERS_JS), "trails": page.evaluate(TRAILS_JS),
        "grade_in_view": page.evaluate(IN_VIEW_JS, grade_selector),
        "gates_in_view": page.evaluate(IN_VIEW_JS, "#demo-result .gates"),
        "hscroll": page.evaluate(HSCROLL_JS),
        "end_marks": page.evaluate("window.demoEnd || {}"),
    }


def demo_scenario(page: Any, base: str, cfg: dict[str, Any]) -> dict[str, Any]:
    """Pick a task and an agent, start and listen; wait for the grade; read the WebRTC stats,
    the artifact panel and the gates, and the end state (at 1,366 × 768)."""
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(f"{base}/demo?task={cfg['task']}")
    page.select_option("select[name=agent]", cfg["agent"])
    page.click("form.demo-pick button[type=submit]")
    page.wait_for_url(re.compile(r".*/demo/[A-Za-z0-9_-]+$"))
    demo_url = page.url
    page.evaluate(WATCH_END_JS)
    page.click("#demo-listen")
    page.wait_for_function("() => window.demo && window.demo.state === 'running'", timeout=20_000)
    started = time.monotonic()
    page.wait_for_function("() => window.demo.resultLoaded === true",
                           timeout=cfg["demo_timeout_ms"])
    wall = time.monotonic() - started
    page.wait_for_selector("#demo-result [data-gate]", timeout=10_000)
    stats = page.evaluate("window.demo.stats")
    artifacts = page.eval_on_selector_all(
        "#demo-artifacts .demo-artifact h3",
        "hs => hs.map(h => ({version: +h.dataset.version, lifecycle: h.dataset.lifecycle}))")
    fields = page.eval_on_selector_all(
        "#demo-artifacts tr[data-field]",
        "rs => Object.fromEntries(rs.map(r => [r.dataset.field,"
        " r.querySelector('.value').textContent]))")
    gates = page.eval_on_selector_all(
        "#demo-result [data-gate]",
        "bs => Object.fromEntries(bs.map(b => [b.dataset.gate, b.textContent.trim()]))")
    afa = page.get_attribute("#demo-result [data-afa]", "data-afa")
    end = end_state(page)
    page.screenshot(path=str(Path(cfg["screenshots"]) / "demo_end_viewport.png"))
    shot = Path(cfg["screenshots"]) / "demo.png"
    page.screenshot(path=str(shot), full_page=True)
    return {**end,
        "url": demo_url, "wall_s": round(wall, 1), "state": page.evaluate("window.demo.state"),
        "stats": stats, "artifacts": artifacts, "fields": fields, "gates": gates, "afa": afa,
        "transcript_lines": page.locator("#demo-transcript li").count(),
        "tool_lines": page.locator("#demo-tools li").count(),
        "auth": page.inner_text("#demo-auth"), "duplex": page.inner_text("#demo-duplex"),
        "clock": page.inner_text("#demo-clock"), "screenshot": str(shot),
    }


def guarded(name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return fn()
    except Exception as exc:  # reported to the test, which fails with this message
        return {"error": f"{name}: {type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()[-3000:]}


Steps = Callable[[Any, str, dict[str, Any], dict[str, Any]], None]


def run_browser(steps: Steps, *, viewport: tuple[int, int] = (1366, 768),
                init_script: str | None = None) -> None:
    """The ``main`` of a browser scenario: read CONFIG.json (``sys.argv[1]``), serve its data
    directory, log the researcher in on one Chromium page of ``viewport``, run
    ``steps(page, base, cfg, result)`` (which fills ``result``), then print ``RESULT {json}``
    with the page's console and the requests that failed."""
    cfg: dict[str, Any] = json.loads(Path(sys.argv[1]).read_text())
    Path(cfg["screenshots"]).mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    result: dict[str, Any] = {}
    base, server, thread = start_server(Path(cfg["data_dir"]))
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=CHROMIUM_FLAGS)
            width, height = viewport
            page = browser.new_context(viewport={"width": width, "height": height}).new_page()
            if init_script is not None:
                page.add_init_script(init_script)
            console: list[str] = []
            failed: list[str] = []
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"[:300]))
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"[:300]))
            page.on("response", lambda r: failed.append(f"{r.status} {r.url}")
                    if r.status >= 400 else None)
            login(page, base, cfg["username"], cfg["password"])
            steps(page, base, cfg, result)
            result["console"] = console[-40:]
            result["failed_requests"] = failed
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=15)  # the app's shutdown stops any demo still running
    print("RESULT " + json.dumps(result), flush=True)


def main() -> None:
    loopback_only_ice()

    def steps(page: Any, base: str, cfg: dict[str, Any], result: dict[str, Any]) -> None:
        result["replay"] = guarded("replay", lambda: replay_scenario(page, base, cfg))
        result["demo"] = guarded("demo", lambda: demo_scenario(page, base, cfg))

    run_browser(steps, viewport=(1400, 1000))


if __name__ == "__main__":
    main()
