"""The Study A annotator in a real browser, run by tests/browser/test_study_a_browser.py inside a
network namespace that has only ``lo``: the app server (uvicorn, in a thread) and Debian
Chromium (driven by Playwright) talk over 127.0.0.1 and nothing else.

Usage: ``python tests/browser/study_a_scenario.py CONFIG.json``. CONFIG names the data directory
(holding a Study A with one annotator), the annotator's token and where to save screenshots.
The annotator opens their link, finds the ratings disabled until the clip has played to the
end, plays the utterance with the keyboard, rates it with the keyboard
(fidelity, naturalness, leakage), goes to the next item with the keyboard, reloads, comes back
through the invitation link, and goes back to the first item; a comment is typed with keys that
are also rating keys. Then the researcher opens the study page at 1,366 px (no page-wide
horizontal scroll) and presses "Close study" (a confirmation, dismissed). The last line of
stdout is ``RESULT {json}`` with what the page showed at each step, or ``{"error": ...}``.
Nothing is asserted here.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from tests.browser.scenario import CHROMIUM, CHROMIUM_FLAGS, guarded, login, start_server

PRESSED = ("el => Object.fromEntries(['fidelity', 'naturalness', 'leakage'].map(d => {"
           " const b = el.querySelector(`button[data-dim=\"${d}\"][aria-pressed=\"true\"]`);"
           " return [d, b ? Number(b.dataset.value) : null]; }))")
SETTLED = "window.annotate && window.annotate.pending === 0"


def _shown(page: Any) -> dict[str, Any]:
    """What the item page shows: position, progress, pressed ratings, comment, audio."""
    return {
        "url": page.url,
        "n": page.inner_text("#ann-n"),
        "done": page.inner_text("#ann-done"),
        "total": page.inner_text("#ann-total"),
        "pressed": page.eval_on_selector("#annotate", PRESSED),
        "comment": page.input_value("#ann-comment"),
        "transcript": page.inner_text("#ann-transcript"),
    }


def annotator_scenario(page: Any, base: str, cfg: dict[str, Any]) -> dict[str, Any]:
    token = cfg["token"]
    out: dict[str, Any] = {}
    page.goto(f"{base}/annotate/{token}")
    page.wait_for_url(re.compile(rf".*/annotate/{token}/item/1$"))
    page.wait_for_function("() => window.annotate !== undefined")
    page.wait_for_function("() => document.getElementById('ann-audio').readyState >= 2",
                           timeout=20_000)
    out["first"] = _shown(page)
    # Listen before rating: the rating buttons are disabled and a rating key saves nothing.
    page.keyboard.press("4")
    out["before_listening"] = page.evaluate(
        "({disabled: document.querySelectorAll('#annotate button[data-dim]:disabled').length,"
        " buttons: document.querySelectorAll('#annotate button[data-dim]').length,"
        " note: !!document.getElementById('ann-listen') &&"
        "   !document.getElementById('ann-listen').hidden,"
        " saved: window.annotate.saved, pending: window.annotate.pending,"
        " status: document.getElementById('ann-status').textContent})")
    # Play with the keyboard; the media clock advances and `played` gets a range.
    page.keyboard.press("Space")
    page.wait_for_function(
        "() => (() => { const a = document.getElementById('ann-audio');"
        " return !a.paused && a.currentTime > 0.3 && a.played.length > 0; })()",
        timeout=15_000)
    out["audio"] = page.evaluate(
        "(() => { const a = document.getElementById('ann-audio'); return {"
        " currentTime: a.currentTime, duration: a.duration, paused: a.paused,"
        " played: Array.from({length: a.played.length},"
        "   (_, i) => [a.played.start(i), a.played.end(i)]) }; })()")
    page.keyboard.press("Space")
    page.wait_for_function("() => document.getElementById('ann-audio').paused")
    paused_at = page.evaluate("document.getElementById('ann-audio').currentTime")
    page.keyboard.press("r")  # replay from the start
    page.wait_for_function("() => !document.getElementById('ann-audio').paused", timeout=10_000)
    out["replay"] = {"paused_at": paused_at,
                     "after": page.evaluate("document.getElementById('ann-audio').currentTime")}
    # Let it play to the end: the page tells the server and the ratings open.
    page.wait_for_function("() => window.annotate.played === true", timeout=30_000)
    out["after_listening"] = page.evaluate(
        "({disabled: document.querySelectorAll('#annotate button[data-dim]:disabled').length,"
        " ended: document.getElementById('ann-audio').ended,"
        " note_hidden: document.getElementById('ann-listen').hidden})")
    # Rate with the keyboard: fidelity 4, naturalness 4 (F), leakage no (N).
    for key in ("4", "f", "n"):
        page.keyboard.press(key)
    page.wait_for_function(f"() => {SETTLED} && window.annotate.saved >= 3", timeout=10_000)
    out["rated"] = _shown(page)
    out["status"] = page.inner_text("#ann-status")
    # A comment typed with keys that are also rating keys changes no rating.
    page.keyboard.press("c")
    page.keyboard.type("fast speech, sounds fine")
    page.keyboard.press("Escape")
    page.wait_for_function(f"() => {SETTLED} && window.annotate.saved >= 4", timeout=10_000)
    out["after_comment"] = _shown(page)
    out["errors"] = page.evaluate("window.annotate.errors")
    # Next item with the keyboard, then reload: the next item is shown, the first counted.
    page.keyboard.press("ArrowRight")
    page.wait_for_url(re.compile(rf".*/annotate/{token}/item/2$"), timeout=10_000)
    page.reload()
    page.wait_for_function("() => window.annotate !== undefined")
    out["reloaded"] = _shown(page)
    # The server refuses a rating of this item, not yet heard, even bypassing the buttons.
    out["unheard_post"] = page.evaluate(
        "fetch(document.getElementById('annotate').dataset.rateUrl, {method: 'POST',"
        " credentials: 'same-origin', headers: {'Content-Type': 'application/json',"
        " 'X-CSRF-Token': JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRF-Token']},"
        " body: JSON.stringify({fidelity: 3})})"
        ".then(async r => ({status: r.status, body: await r.json()}))")
    # The invitation link resumes at the same place.
    page.goto(f"{base}/annotate/{token}")
    page.wait_for_url(re.compile(rf".*/annotate/{token}/item/\d+$"))
    page.wait_for_function("() => window.annotate !== undefined")
    out["resumed"] = _shown(page)
    shot = Path(cfg["screenshots"]) / "study_a_item2.png"
    page.screenshot(path=str(shot), full_page=True)
    # Back to the first item with the keyboard: the saved ratings and comment are shown.
    page.keyboard.press("ArrowLeft")
    page.wait_for_url(re.compile(rf".*/annotate/{token}/item/1$"), timeout=10_000)
    page.wait_for_function("() => window.annotate !== undefined")
    out["back"] = _shown(page)
    out["server"] = page.evaluate(
        f"fetch('/annotate/{token}/state.json').then(r => r.json())")
    shot1 = Path(cfg["screenshots"]) / "study_a_item1.png"
    page.screenshot(path=str(shot1), full_page=True)
    out["screenshots"] = [str(shot), str(shot1)]
    return out


def researcher_scenario(page: Any, base: str, cfg: dict[str, Any]) -> dict[str, Any]:
    """The study page at 1,366 px: no page-wide horizontal scroll; closing asks first."""
    out: dict[str, Any] = {}
    login(page, base, cfg["username"], cfg["password"])
    page.goto(f"{base}/studies/a/{cfg['study_id']}")
    out["widths"] = page.evaluate(
        "({page: document.documentElement.scrollWidth,"
        " viewport: document.documentElement.clientWidth,"
        " items_table: document.querySelector('#items table').scrollWidth})")
    asked: list[str] = []

    def dismiss(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    page.click("#close button[type=submit]")
    page.wait_for_timeout(500)
    out["close_asked"] = asked
    out["still_open"] = page.url.endswith(f"/studies/a/{cfg['study_id']}") and \
        page.locator("#close").count() == 1
    shot = Path(cfg["screenshots"]) / "study_a_researcher_1366.png"
    page.screenshot(path=str(shot), full_page=True)
    return out


def main() -> None:
    cfg: dict[str, Any] = json.loads(Path(sys.argv[1]).read_text())
    Path(cfg["screenshots"]).mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    result: dict[str, Any] = {}
    base, server, thread = start_server(Path(cfg["data_dir"]))
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=CHROMIUM_FLAGS)
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            console: list[str] = []
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"[:300]))
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"[:300]))
            t0 = time.monotonic()
            result["annotator"] = guarded("annotator",
                                          lambda: annotator_scenario(page, base, cfg))
            result["wall_s"] = round(time.monotonic() - t0, 2)
            wide = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
            result["researcher"] = guarded("researcher",
                                           lambda: researcher_scenario(wide, base, cfg))
            result["console"] = console[-40:]
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=15)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
