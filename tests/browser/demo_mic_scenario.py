"""The demo's mic mode in a real browser, run by tests/browser/test_demo_browser.py inside a
network namespace that has only ``lo``: the app server (uvicorn, in a thread) and Debian
Chromium (Playwright, 1,366 × 768) with a WAV file as its microphone.

Usage: ``python tests/browser/demo_mic_scenario.py CONFIG.json``. CONFIG names the data
directory (with a researcher account), the task and agent, the microphone WAV and where to
save screenshots. The steps: log in → the demo picker → "Talk" mode → the live page shows the
caller's role card → Start call (the fake microphone plays the caller's opening) → wait until
the agent answers it → End call → wait for the grade. The last line of stdout is
``RESULT {json}``: what the page showed, or ``{"error": ...}``. Nothing is asserted here.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from tests.browser.scenario import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    HSCROLL_JS,
    IN_VIEW_JS,
    WATCH_END_JS,
    end_state,
    guarded,
    login,
    loopback_only_ice,
    start_server,
)

MIC_FLAGS = [*CHROMIUM_FLAGS, "--use-fake-device-for-media-stream"]
ANSWERED_JS = """() => { const t = (window.demo && window.demo.eventTypes) || [];
  const i = t.indexOf('user.speech.end');
  return i >= 0 && t.slice(i).includes('agent.transcript'); }"""


def mic_scenario(page: Any, base: str, cfg: dict[str, Any]) -> dict[str, Any]:
    shots = Path(cfg["screenshots"])
    page.goto(f"{base}/demo?task={cfg['task']}")
    picker_hscroll = page.evaluate(HSCROLL_JS)
    page.select_option("select[name=agent]", cfg["agent"])
    page.check("#mode-mic")
    page.screenshot(path=str(shots / "demo_mic_picker.png"), full_page=True)
    page.click("form.demo-pick button[type=submit]")
    page.wait_for_url(re.compile(r".*/demo/[A-Za-z0-9_-]+$"), timeout=120_000)
    demo_url = page.url
    page.wait_for_selector("#role-card")
    card_before = {
        "visible": page.is_visible("#role-card"),
        "in_view": page.evaluate(IN_VIEW_JS, "#role-card h2"),
        "facts": page.eval_on_selector_all("#card-facts dd[data-fact]",
                                           "ds => ds.map(d => d.dataset.fact)"),
        "cue_box": page.is_visible("#cue-box"),
        "button": page.inner_text("#demo-listen"), "stop": page.inner_text("#demo-stop"),
    }
    live_hscroll = page.evaluate(HSCROLL_JS)
    page.evaluate(WATCH_END_JS)
    page.click("#demo-listen")
    page.wait_for_function("() => window.demo && window.demo.state === 'running'",
                           timeout=30_000)
    started = time.monotonic()
    page.wait_for_function(ANSWERED_JS, timeout=cfg["answer_timeout_ms"])
    answered_s = time.monotonic() - started
    during = {
        "types": page.evaluate("window.demo.eventTypes"),
        "card_updates": page.evaluate("window.demo.cardUpdates"),
        "card_visible": page.is_visible("#role-card"),
        "mic": page.evaluate("window.demo.stats.mic || null"),
        "agent_stats": page.evaluate("window.demo.stats.agent || null"),
        "hscroll": page.evaluate(HSCROLL_JS),
    }
    page.screenshot(path=str(shots / "demo_mic_call.png"))
    page.click("#demo-stop")
    page.wait_for_function("() => window.demo.resultLoaded === true", timeout=60_000)
    page.wait_for_selector("#demo-result [data-gate]", timeout=10_000)
    end = end_state(page)
    page.screenshot(path=str(shots / "demo_mic_end.png"))
    page.screenshot(path=str(shots / "demo_mic_end_full.png"), full_page=True)
    gates = page.eval_on_selector_all(
        "#demo-result [data-gate]",
        "bs => Object.fromEntries(bs.map(b => [b.dataset.gate, b.textContent.trim()]))")
    state = page.evaluate("window.demo.state")
    page.goto(f"{demo_url}/result")
    result_hscroll = page.evaluate(HSCROLL_JS)
    return {
        "url": demo_url, "card_before": card_before, "during": during, "end": end,
        "answered_s": round(answered_s, 1), "state": state, "gates": gates,
        "hscroll": {"picker": picker_hscroll, "live": live_hscroll,
                    "result": result_hscroll},
        "transcript_lines": len(during["types"]),
    }


def main() -> None:
    cfg: dict[str, Any] = json.loads(Path(sys.argv[1]).read_text())
    Path(cfg["screenshots"]).mkdir(parents=True, exist_ok=True)
    loopback_only_ice()
    from playwright.sync_api import sync_playwright

    result: dict[str, Any] = {}
    base, server, thread = start_server(Path(cfg["data_dir"]))
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, headless=True,
                args=[*MIC_FLAGS, f"--use-file-for-fake-audio-capture={cfg['mic_wav']}%noloop"])
            page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
            console: list[str] = []
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"[:300]))
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"[:300]))
            login(page, base, cfg["username"], cfg["password"])
            result["mic"] = guarded("mic", lambda: mic_scenario(page, base, cfg))
            result["console"] = console[-40:]
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=15)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
