"""Real-browser scenario of the run list and compare pages (issue #17), run by
tests/browser/test_runs_browser.py inside a loopback-only network namespace, like
tests/browser/scenario.py (whose server and login it reuses).

Usage: ``python tests/browser/runs_scenario.py CONFIG.json``. At 1,366 × 768: the run list of a
24-task × 3-repeat campaign (widths, rows, a sort and a search), two runs ticked and compared,
then on the compare page a row's time buttons seek each run's player. The last line of stdout
is ``RESULT {json}`` with the figures the test asserts on; nothing is asserted here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.browser.scenario import (
    guarded,
    run_browser,
)

WIDTH, HEIGHT = 1366, 768
SIZES = "() => ({scroll: document.documentElement.scrollWidth, inner: window.innerWidth," \
        " height: document.documentElement.scrollHeight})"
ROWS = "() => Array.from(document.querySelectorAll('tr[data-run]')).map(r => r.dataset.run)"


def runs_scenario(page: Any, base: str, cfg: dict[str, Any]) -> dict[str, Any]:
    shots = Path(cfg["screenshots"])
    page.goto(f"{base}/runs")
    first = {"sizes": page.evaluate(SIZES), "rows": page.evaluate(ROWS),
             "summary": page.inner_text("#run-summary")}
    page.screenshot(path=str(shots / "runs_1366.png"), full_page=True)
    # Sort by duration (a full page load: the URL says what is shown).
    page.click("th a[data-sort=duration]")
    page.wait_for_url("**sort=duration**")
    durations = page.eval_on_selector_all(
        "tr[data-run] td.num:nth-of-type(4)", "tds => tds.map(td => td.textContent.trim())")
    # Search: typing filters the results in place (HTMX) and puts the query in the URL.
    page.fill("#run-q", cfg["search"])
    page.wait_for_function(
        "q => { const rs = Array.from(document.querySelectorAll('tr[data-run]'));"
        " return rs.length > 0 && rs.every(r => r.dataset.run.includes(q)); }",
        arg=cfg["search"], timeout=10_000)
    searched = {"rows": page.evaluate(ROWS), "url": page.url, "sizes": page.evaluate(SIZES)}
    # Tick two runs and compare them.
    disabled_before = page.is_disabled("#compare-picked")
    for run in cfg["pick"]:
        page.check(f"tr[data-run='{run}'] input[name=run]")
    enabled_after = page.is_enabled("#compare-picked")
    page.screenshot(path=str(shots / "runs_picked_1366.png"), full_page=False)
    page.click("#compare-picked")
    page.wait_for_url("**/compare?**")
    page.wait_for_function("() => window.compareReady === true", timeout=10_000)
    return {"first": first, "durations": durations, "searched": searched,
            "disabled_before": disabled_before, "enabled_after": enabled_after,
            "compare_url": page.url}


def compare_scenario(page: Any, base: str, cfg: dict[str, Any]) -> dict[str, Any]:
    """On the compare page the previous scenario opened: the plan's row, then its time
    buttons for run B and run A, each seeking that run's player."""
    shots = Path(cfg["screenshots"])
    row = page.locator(f"#cmp-rows tr[data-label='user:{cfg['plan']}']")
    rows = row.count()
    texts = row.first.inner_text() if rows else ""
    seeks: dict[str, Any] = {}
    for side in ("b", "a"):
        button = row.first.locator(f"button.seek[data-side={side}]")
        t = float(button.get_attribute("data-t") or "nan")
        button.click()
        page.wait_for_function(
            "([side, t]) => { const a = document.getElementById('audio-' + side);"
            " return a && !a.seeking && Math.abs(a.currentTime - t) < 1.5; }",
            arg=[side, t], timeout=15_000)
        seeks[side] = {"t": t, "current": page.evaluate(
            f"document.getElementById('audio-{side}').currentTime"),
            "row_marked": page.evaluate(
                "([side, label]) => { const r = document.querySelector("
                "`#cmp-rows tr[data-label='${label}']`); return r.classList.contains('at-' + side)"
                " || !!document.querySelector('#cmp-rows tr.at-' + side); }",
                [side, f"user:{cfg['plan']}"])}
        page.evaluate(f"document.getElementById('audio-{side}').pause()")
    fields = page.locator("#field-diff tr[data-field]").count()
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(shots / "compare_1366.png"), full_page=True)
    return {"rows": rows, "row_text": texts, "seeks": seeks, "fields": fields,
            "sizes": page.evaluate(SIZES),
            "players": page.locator("#players audio").count()}


def main() -> None:
    def steps(page: Any, base: str, cfg: dict[str, Any], result: dict[str, Any]) -> None:
        result["runs"] = guarded("runs", lambda: runs_scenario(page, base, cfg))
        result["compare"] = guarded("compare", lambda: compare_scenario(page, base, cfg))

    run_browser(steps, viewport=(WIDTH, HEIGHT))


if __name__ == "__main__":
    main()
