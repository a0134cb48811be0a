"""Study B in a real browser, run by tests/browser/test_study_b_browser.py inside a network
namespace that has only ``lo``: the app server (uvicorn, in a subprocess so that it can be
killed) and Debian Chromium (driven by Playwright) talk over 127.0.0.1 and nothing else.

Usage: ``python tests/browser/study_b_scenario.py CONFIG.json`` (or ``… serve DATA_DIR PORT``,
the server subprocess). CONFIG names the data directory (a launched study with one participant
and two sessions), the participant's token, three WAV files for Chromium's fake microphone
(a tone for the microphone check, the bank realizations of the session's first plans, silence)
and where to save screenshots. The steps:

1. browser A (tone): the invitation link with Prolific ids → consent → microphone check (level
   meter, 3-second recording played back) → continue;
2. browser B (speech, played once): the sessions list → session 1 → Start call; the page is
   sampled every 100 ms until a cue shows (facts on the card, the cue, the elapsed time);
   then the browser is closed mid-call;
3. browser C (silence): the same link → session 1 rejoins on its own; End call;
4. session 2 → Start call; a few seconds in, the server is killed (SIGKILL) and started again on
   the same data directory; the session page is reloaded.

The last line of stdout is ``RESULT {json}``: what each step saw, or ``{"error": ...}``.
Nothing is asserted here.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Any

from tests.browser.scenario import CHROMIUM, CHROMIUM_FLAGS, login

HERE = Path(__file__).resolve().parent
# notes/webrtc-testing.md: the flags that worked, with a WAV as the microphone.
MIC_FLAGS = [*CHROMIUM_FLAGS, "--use-fake-device-for-media-stream"]
SAMPLE_JS = """() => {
  const p = window.participant || {};
  return {state: p.state, elapsed: p.serverElapsedMs || 0, connection: p.connection,
          facts: Object.assign({}, p.facts || {}), cue: p.activeCue || null,
          dom_facts: Array.from(document.querySelectorAll('#card-facts dd[data-fact]'))
                          .map(d => d.dataset.fact + '@' + d.dataset.version),
          cue_box: (document.querySelector('#cue-box.active #cue-text') || {}).textContent || null};
}"""


# --------------------------------------------------------------------------- the server


def serve(data_dir: Path, port: int) -> None:
    """The server subprocess: the app on 127.0.0.1:port, ICE on loopback only."""
    import aioice.ice
    import uvicorn

    from app.settings import Settings
    from app.web import create_app

    def host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
        return ["127.0.0.1"] if use_ipv4 else []

    # aioice leaves 127.0.0.1 out of its host candidates; in a namespace with only ``lo``
    # the connection would hang in "connecting".
    aioice.ice.get_host_addresses = host_addresses
    app = create_app(Settings(data_dir=data_dir, secret_key="browser-test-secret"))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning",
                timeout_graceful_shutdown=3)


class Server:
    def __init__(self, data_dir: Path, port: int, log: Path) -> None:
        self.data_dir, self.port, self.log = data_dir, port, log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> float:
        t0 = time.monotonic()
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "serve", str(self.data_dir), str(self.port)],
            stdout=out, stderr=subprocess.STDOUT, env=os.environ.copy())
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}); see {self.log}")
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start within 60 s")
            try:
                with urllib.request.urlopen(f"{self.base}/login", timeout=2) as r:
                    if r.status == 200:
                        return time.monotonic() - t0
            except OSError:
                time.sleep(0.2)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------- the browser


def launch(pw: Any, wav: str) -> Any:
    return pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=[*MIC_FLAGS, f"--use-file-for-fake-audio-capture={wav}"])


def new_page(browser: Any, console: list[str]) -> Any:
    page = browser.new_context(viewport={"width": 1100, "height": 1000}).new_page()
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"[:300]))
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"[:300]))
    return page


def consent_and_mic(pw: Any, cfg: dict[str, Any], base: str, console: list[str]) -> dict[str, Any]:
    browser = launch(pw, cfg["tone_wav"])
    try:
        page = new_page(browser, console)
        query = "PROLIFIC_PID=e2e-pid-1&STUDY_ID=e2e-study&SESSION_ID=e2e-session"
        page.goto(f"{base}/p/{cfg['token']}?{query}")
        page.wait_for_selector("#consent-agree")
        consent_url = page.url
        page.click("#consent-agree")
        page.wait_for_selector("#mic-start")
        mic_url = page.url
        page.click("#mic-start")
        page.wait_for_function("() => window.micCheck.state === 'listening'", timeout=15_000)
        page.click("#mic-record")
        page.wait_for_function("() => window.micCheck.state === 'recorded'", timeout=15_000)
        page.wait_for_function("() => window.micCheck.peak > 0.05", timeout=5_000)
        continue_before_sound = page.is_disabled("#mic-continue")
        page.click("#sound-play")
        page.wait_for_function("() => window.micCheck.soundPlayed === true", timeout=15_000)
        page.check("#headphones-confirm")
        page.wait_for_function("() => window.micCheck.headphones === true", timeout=5_000)
        check = page.evaluate("window.micCheck")
        check["continue_before_sound"] = continue_before_sound
        page.screenshot(path=str(Path(cfg["screenshots"]) / "study_b_mic.png"), full_page=True)
        page.click("#mic-continue")
        page.wait_for_selector("#session-list")
        return {"consent_url": consent_url, "mic_url": mic_url, "mic": check,
                "sessions_url": page.url,
                "session_items": page.locator("#session-list li").all_inner_texts()}
    finally:
        browser.close()


def call_until_cue(pw: Any, cfg: dict[str, Any], base: str,
                   console: list[str]) -> dict[str, Any]:
    """Start session 1 with the speech WAV; sample the page until the cue shows; then close
    the browser mid-call."""
    browser = launch(pw, cfg["speech_wav"] + "%noloop")
    page = new_page(browser, console)
    page.goto(f"{base}/p/{cfg['token']}")
    page.wait_for_selector("#session-list a.session-open")
    page.click("#session-list a.session-open")
    page.wait_for_selector("#call-start")
    session_url = page.url
    before = page.evaluate(SAMPLE_JS)
    t0 = time.monotonic()
    page.click("#call-start")
    page.wait_for_function("() => window.participant.state === 'running'", timeout=30_000)
    samples: list[dict[str, Any]] = []
    deadline = time.monotonic() + cfg["cue_timeout_s"]
    while time.monotonic() < deadline:
        sample = page.evaluate(SAMPLE_JS)
        sample["wall"] = round(time.monotonic() - t0, 2)
        samples.append(sample)
        if sample["cue"]:
            break
        time.sleep(0.1)
    page.screenshot(path=str(Path(cfg["screenshots"]) / "study_b_cue.png"), full_page=True)
    time.sleep(1.0)
    last = page.evaluate(SAMPLE_JS)
    fact_log = page.evaluate("window.participant.factLog")
    browser.close()  # the participant's browser goes away mid-call
    return {"session_url": session_url, "before": before, "samples": samples, "last": last,
            "fact_log": fact_log, "closed_at_elapsed": last["elapsed"]}


def rejoin_and_end(pw: Any, cfg: dict[str, Any], base: str,
                   console: list[str]) -> dict[str, Any]:
    browser = launch(pw, cfg["silence_wav"])
    try:
        page = new_page(browser, console)
        page.goto(f"{base}/p/{cfg['token']}")
        page.wait_for_selector("#session-list a.session-open")
        link_text = page.inner_text("#session-list a.session-open")
        page.click("#session-list a.session-open")
        page.wait_for_function("() => window.participant && window.participant.connection === "
                               "'connected'", timeout=45_000)
        rejoined_at = page.evaluate("window.participant.elapsedMs")
        page.wait_for_function(f"() => window.participant.elapsedMs > {rejoined_at + 3000}",
                               timeout=30_000)
        page.click("#call-end")
        page.wait_for_function("() => window.participant.ended === true", timeout=30_000)
        state = page.get_attribute("#call-state", "data-state")
        label = page.inner_text("#call-state")
        message = page.inner_text("#call-message")
        next_visible = page.is_visible("#next-link")
        page.click("#next-link")
        page.wait_for_selector("#session-list")
        items = page.locator("#session-list li").all_inner_texts()
        page.click("#session-list a.session-open")
        page.wait_for_selector("#call-start")
        return {"link_text": link_text, "rejoined_at": rejoined_at, "state": state,
                "label": label, "message": message, "next_visible": next_visible,
                "items_after": items, "session2_url": page.url}
    finally:
        browser.close()


def kill_server_mid_call(pw: Any, cfg: dict[str, Any], server: Server,
                         console: list[str], session2_url: str) -> dict[str, Any]:
    browser = launch(pw, cfg["silence_wav"])
    try:
        page = new_page(browser, console)
        page.goto(session2_url)
        page.click("#call-start")
        page.wait_for_function("() => window.participant.state === 'running'", timeout=30_000)
        page.wait_for_function("() => window.participant.elapsedMs > 6000", timeout=60_000)
        seen = page.evaluate(SAMPLE_JS)
        server.kill()
        killed_at = time.monotonic()
        restart_s = server.start()
        page.reload()
        page.wait_for_selector("#call-state")
        return {"elapsed_at_kill": seen["elapsed"], "facts_at_kill": seen["facts"],
                "restart_s": round(restart_s, 2),
                "down_s": round(time.monotonic() - killed_at, 2),
                "state_after": page.get_attribute("#call-state", "data-state"),
                "label_after": page.inner_text("#call-state"),
                "message_after": page.inner_text("#call-message"),
                "start_disabled": page.is_disabled("#call-start")}
    finally:
        browser.close()


def researcher_pages(pw: Any, cfg: dict[str, Any], base: str) -> dict[str, Any]:
    """The researcher's Study B pages at 1,366 × 768: page width against the viewport, and a
    screenshot of each."""
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
    try:
        page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
        login(page, base, cfg["username"], cfg["password"])
        out: dict[str, Any] = {}
        for name, path in (("study", f"/studies/b/{cfg['study_id']}"),
                           ("results", f"/studies/b/{cfg['study_id']}/results")):
            response = page.goto(base + path)
            if response is None or response.status != 200:
                raise RuntimeError(f"{path}: {response.status if response else 'no answer'}")
            out[name] = page.evaluate(
                "() => ({scroll: document.documentElement.scrollWidth,"
                " inner: window.innerWidth})")
            page.screenshot(path=str(Path(cfg["screenshots"]) / f"study_b_{name}_1366.png"),
                            full_page=True)
        return out
    finally:
        browser.close()


def guarded(result: dict[str, Any], name: str, fn: Any) -> bool:
    try:
        result[name] = fn()
        return True
    except Exception as exc:  # reported to the test, which fails with this message
        result[name] = {"error": f"{name}: {type(exc).__name__}: {exc}",
                        "traceback": traceback.format_exc()[-3000:]}
        return False


def main() -> None:
    cfg: dict[str, Any] = json.loads(Path(sys.argv[1]).read_text())
    Path(cfg["screenshots"]).mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    result: dict[str, Any] = {}
    console: list[str] = []
    server = Server(Path(cfg["data_dir"]), free_port(), Path(cfg["server_log"]))
    try:
        result["server_start_s"] = round(server.start(), 2)
        base = server.base
        with sync_playwright() as pw:
            ok = guarded(result, "consent", lambda: consent_and_mic(pw, cfg, base, console))
            ok = ok and guarded(result, "call", lambda: call_until_cue(pw, cfg, base, console))
            ok = ok and guarded(result, "rejoin", lambda: rejoin_and_end(pw, cfg, base, console))
            if ok:
                url = result["rejoin"]["session2_url"]
                guarded(result, "restart",
                        lambda: kill_server_mid_call(pw, cfg, server, console, url))
            guarded(result, "researcher_pages", lambda: researcher_pages(pw, cfg, server.base))
        result["console"] = console[-40:]
    finally:
        server.stop()
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
