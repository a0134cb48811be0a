"""Security headers (issue #15, item 10), checked the way an attacker probes a site: can a
participant page be framed by another site (clickjacking a consent decision), can a response be
sniffed into another type, do token-bearing pages land in shared caches or leave in a Referer?
Then that the app's own pages still fit the Content Security Policy: no inline script or
inline event handler anywhere in the templates."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.security.requests_world import log_in, make_world

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

ROOT = Path(__file__).resolve().parents[2]


def _directives(csp: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for part in csp.split(";"):
        words = part.split()
        if words:
            out[words[0].lower()] = words[1:]
    return out


def _framing_refused(headers: dict[str, str]) -> None:
    csp = _directives(headers.get("content-security-policy", ""))
    assert csp.get("frame-ancestors") == ["'none'"], headers
    assert headers.get("x-frame-options", "").upper() == "DENY", headers
    assert headers.get("x-content-type-options") == "nosniff", headers


def test_participant_and_annotator_pages_cannot_be_framed_or_cached(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    token, sid = world.participants[0]
    with TestClient(world.app) as client:
        for path in (f"/p/{token}/sessions", f"/p/{token}/s/{sid}",
                     f"/annotate/{world.annotator}/item/1",
                     f"/annotate/{world.annotator}/overview"):
            r = client.get(path)
            assert r.status_code == 200, (path, r.status_code)
            headers = {k.lower(): v for k, v in r.headers.items()}
            _framing_refused(headers)
            assert "no-store" in headers.get("cache-control", ""), (path, headers)
            assert headers.get("referrer-policy") in ("no-referrer", "same-origin"), path
        # A link that opens nothing is refused the same way (no framing of the 404 either).
        r = client.get("/p/not-a-token/consent")
        assert r.status_code == 404
        _framing_refused({k.lower(): v for k, v in r.headers.items()})


async def test_researcher_pages_and_files_carry_the_policy(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    import httpx

    transport = httpx.ASGITransport(app=world.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        await log_in(http, "/studies/a")
        for path in ("/login", "/tasks", "/studies/a", f"/studies/b/{world.study_b}",
                     "/static/js/replay.js", f"/studies/a/{world.study_a}/ratings.csv"):
            r = await http.get(path)
            assert r.status_code == 200, path
            headers = {k.lower(): v for k, v in r.headers.items()}
            _framing_refused(headers)
            csp = _directives(headers["content-security-policy"])
            script = csp.get("script-src", csp.get("default-src", []))
            assert script == ["'self'"], csp
            assert "'unsafe-eval'" not in headers["content-security-policy"]
            assert csp.get("object-src") == ["'none'"] and csp.get("base-uri") == ["'self'"]
            assert headers.get("referrer-policy"), path


INLINE_HANDLER = re.compile(r"<[a-zA-Z][^>]*\son[a-z]+\s*=", re.S)
SCRIPT_TAG = re.compile(r"<script\b([^>]*)>", re.S)


def test_no_template_needs_inline_script() -> None:
    """The policy allows scripts from this site only: an inline handler or an inline script
    would be blocked, so none may exist (data blocks of type application/json are inert)."""
    problems = []
    for template in sorted((ROOT / "templates").glob("*.html")):
        text = template.read_text(encoding="utf-8")
        for m in INLINE_HANDLER.finditer(text):
            problems.append(f"{template.name}: inline event handler {m.group(0)[-40:]!r}")
        for m in SCRIPT_TAG.finditer(text):
            attrs = m.group(1)
            if "src=" not in attrs and 'type="application/json"' not in attrs:
                problems.append(f"{template.name}: inline <script{attrs}>")
    for script in sorted((ROOT / "static" / "js").glob("*.js")):
        text = script.read_text(encoding="utf-8")
        if re.search(r"\beval\(|new Function\(|javascript:", text):
            problems.append(f"{script.name}: eval-like code the policy blocks")
    assert not problems, "\n".join(problems)


CSP_PROBE = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(
  `${e.violatedDirective} ${e.blockedURI || "inline"} ${e.sourceFile || ""}:${e.lineNumber}`));
"""


def test_the_app_pages_run_under_the_policy_in_a_browser(tmp_path: Path) -> None:
    """Every kind of page in headless Chromium with the policy on: no violation is reported,
    and each page's own script ran (the state object it exposes exists)."""
    from importlib.util import find_spec

    from tests.browser.scenario import CHROMIUM, CHROMIUM_FLAGS

    if not Path(CHROMIUM).is_file() or find_spec("playwright") is None:
        pytest.skip("Debian Chromium and playwright are needed (see tests/browser)")
    from playwright.sync_api import sync_playwright

    from tests.conftest import run_script
    from tests.security.requests_world import PASSWORD, served

    world = make_world(tmp_path)
    run_script("apexv1_070", "oracle", world.settings.runs_dir / "csp")
    (world.settings.runs_dir / "csp" / "campaign.json").write_text('{"agent": "scripted"}')
    run = next(p.parent for p in (world.settings.runs_dir / "csp").rglob("meta.json"))
    rel = run.relative_to(world.settings.runs_dir)
    token, sid = world.participants[0]
    seen: list[str] = []
    with served(world.app) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=CHROMIUM_FLAGS)
        try:
            def visit(page: Any, path: str, ready: str) -> None:
                page.goto(base + path)
                # a function, not an expression: Playwright evaluates an expression again at
                # each poll, which the policy (no 'unsafe-eval') rightly refuses
                page.wait_for_function(f"() => {ready}", timeout=20_000)
                seen.extend(f"{path}: {v}" for v in page.evaluate("window.__csp"))

            researcher = browser.new_context()
            researcher.add_init_script(CSP_PROBE)
            page = researcher.new_page()
            page.on("console", lambda m: seen.append(f"console: {m.text}")
                    if "Content Security Policy" in m.text else None)
            page.goto(f"{base}/login?next=/tasks")
            page.fill("input[name=username]", "ada")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/tasks")
            visit(page, "/tasks", "!!window.htmx")
            visit(page, f"/runs/{rel}/replay", "window.replayReady === true")
            visit(page, f"/studies/a/{world.study_a}", "!!window.htmx")
            visit(page, f"/studies/b/{world.study_b}", "!!window.htmx")
            visit(page, "/demo", "!!window.htmx")
            # the campaign charts (Vega, with its CSP-safe expression interpreter)
            visit(page, "/campaigns/csp", "window.chartsReady === true")
            visit(page, "/campaigns", "window.chartsReady === true")
            people = browser.new_context()
            people.add_init_script(CSP_PROBE)
            other = people.new_page()
            other.on("console", lambda m: seen.append(f"console: {m.text}")
                     if "Content Security Policy" in m.text else None)
            visit(other, f"/annotate/{world.annotator}/item/1", "!!window.annotate")
            visit(other, f"/p/{token}/mic", "!!window.micCheck")
            # the event stream delivered the role card
            visit(other, f"/p/{token}/s/{sid}",
                  "!!window.participant && window.participant.cardUpdates > 0")
        finally:
            browser.close()
    assert not seen, "\n".join(seen)
