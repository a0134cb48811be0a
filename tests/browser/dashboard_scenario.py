"""The campaign dashboard and /campaigns in a real browser at 1,366 × 768, run by
tests/browser/test_dashboard_browser.py inside a loopback-only network namespace as the other
browser scenarios are (tests/browser/scenario.py starts the app and Chromium).

Usage: ``python tests/browser/dashboard_scenario.py CONFIG.json``. CONFIG names the data
directory (a researcher account and the campaigns of tests/browser/dashboard_data.py), the
campaigns to open and where to save screenshots. The last line of stdout is ``RESULT {json}``:
what was measured in the page (sizes, boxes, texts), or ``{"error": ...}``; nothing is
asserted here.
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any

from tests.browser.scenario import (
    guarded,
    run_browser,
)

WIDTH, HEIGHT = 1366, 768

# Every Content-Security-Policy violation the page causes (e.g. an eval), recorded before any
# of its scripts run.
CSP_PROBE = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
"""

# Measurements shared by both pages: page width, every chart's box, title, label and texts.
MEASURE = """
() => {
  const box = el => { const r = el.getBoundingClientRect();
    return {x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height,
            right: r.right + scrollX}; };
  const charts = Array.from(document.querySelectorAll('.vega-chart[data-chart]')).map(el => {
    const svg = el.querySelector('svg');
    const texts = svg ? Array.from(svg.querySelectorAll('text'))
      .filter(t => t.textContent.trim()).map(t => ({text: t.textContent.trim(), ...box(t)})) : [];
    return {
      kind: el.dataset.chart, key: el.dataset.key || null, rendered: el.dataset.rendered || null,
      container: box(el), svg: svg ? box(svg) : null, canvas: !!el.querySelector('canvas'),
      // Vega puts the chart's description on its container (role graphics-document)
      label: (el.querySelector('[role=graphics-document]') || el).getAttribute('aria-label'),
      title: svg ? Array.from(svg.querySelectorAll('.role-title-text text, .role-title text'))
        .map(t => t.textContent.trim()).filter(Boolean) : [],
      texts: texts,
      error: (el.querySelector('.chart-error') || {}).textContent || null,
    };
  });
  // every text drawn in any SVG of the page, chart library or not
  const svgTexts = Array.from(document.querySelectorAll('main svg text'))
    .filter(t => t.textContent.trim()).map(t => ({text: t.textContent.trim(), ...box(t)}));
  return {
    svg_texts: svgTexts,
    page_width: document.documentElement.scrollWidth,
    viewport_width: document.documentElement.clientWidth,
    body_width: document.body.scrollWidth,
    charts: charts,
    csp: window.__csp || [],
  };
}
"""

# Each text in the page that says "undefined": is it whole (not cut off by its SVG or the
# window), and the sentences of the metric notes as the page shows them.
UNDEFINED = """
() => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    if (!/undefined/.test(node.textContent)) continue;
    const el = node.parentElement;
    if (el.closest('script, details:not([open])')) continue;
    const range = document.createRange(); range.selectNodeContents(node);
    const r = range.getBoundingClientRect();
    const svg = el.closest('svg');
    const s = svg ? svg.getBoundingClientRect() : null;
    out.push({text: node.textContent.trim().slice(0, 300), left: r.left, right: r.right,
              top: r.top, bottom: r.bottom,
              svg: s ? {left: s.left, right: s.right, top: s.top, bottom: s.bottom} : null,
              viewport: document.documentElement.clientWidth});
  }
  return out;
}
"""


def open_page(page: Any, url: str) -> float:
    """Open ``url`` and wait until its charts are drawn (a page without chart containers, e.g.
    one with server-drawn SVG, is measured as it loaded)."""
    t0 = time.monotonic()
    page.goto(url)
    if page.locator(".vega-chart[data-chart]").count():
        page.wait_for_function("() => window.chartsReady === true", timeout=30_000)
    return round(time.monotonic() - t0, 3)


def dashboard_scenario(page: Any, base: str, cfg: dict[str, Any], name: str) -> dict[str, Any]:
    ready_s = open_page(page, f"{base}/campaigns/{name}")
    out: dict[str, Any] = {"ready_s": ready_s, **page.evaluate(MEASURE)}
    out["report"] = page.evaluate(
        f"() => fetch('/campaigns/{name}/report.json').then(r => r.json())")
    out["embedded"] = page.evaluate(
        "() => { const el = document.getElementById('dashboard-data');"
        " return el ? JSON.parse(el.textContent) : null; }")
    out["undefined"] = page.evaluate(UNDEFINED)
    out["page_text"] = page.inner_text("main")
    # The floor-control summary: each row heading on one line.
    out["floor_rows"] = page.eval_on_selector_all(
        "xpath=//h2[starts-with(normalize-space(.), 'Floor control')]/ancestor::section[1]"
        "//table[1]//tr", "rows => rows.map(r => { const th = r.querySelector('th');"
        " const lh = parseFloat(getComputedStyle(th).lineHeight) ||"
        " 1.45 * parseFloat(getComputedStyle(th).fontSize);"
        " return {text: th.textContent.trim(), height: th.getBoundingClientRect().height,"
        " width: th.getBoundingClientRect().width, line: lh,"
        " lines: (() => { const rg = document.createRange(); rg.selectNodeContents(th);"
        " return new Set(Array.from(rg.getClientRects()).map(x => Math.round(x.top))).size; })()"
        " }; })")
    # Hover the Pass@1 bar: the tooltip shows its value and interval.
    bar = page.locator(".vega-chart[data-chart=passk] svg .mark-rect path").first
    tooltip = None
    if bar.count():
        bar.hover(force=True)
        try:
            page.wait_for_selector("#vg-tooltip-element.visible", timeout=5_000)
            tooltip = page.inner_text("#vg-tooltip-element")
        except Exception as exc:  # reported: the test fails on a missing tooltip
            tooltip = f"no tooltip: {type(exc).__name__}"
        page.mouse.move(0, 0)
    out["tooltip"] = tooltip
    shot = Path(cfg["screenshots"]) / f"dashboard_{name}_1366.png"
    page.screenshot(path=str(shot), full_page=True)
    out["screenshot"] = str(shot)
    return out


def campaigns_scenario(page: Any, base: str, cfg: dict[str, Any]) -> dict[str, Any]:
    ready_s = open_page(page, f"{base}/campaigns")
    out: dict[str, Any] = {"ready_s": ready_s, **page.evaluate(MEASURE)}
    out["frontier_data"] = page.evaluate(
        "() => { const el = document.getElementById('frontier-data');"
        " return el ? JSON.parse(el.textContent) : null; }")
    out["reports"] = {name: page.evaluate(
        f"() => fetch('/campaigns/{name}/report.json').then(r => r.json())")
        for name in cfg["campaigns"]}
    # the campaigns' names as drawn on the frontier (any SVG text that is exactly a name)
    out["labels"] = page.eval_on_selector_all(
        "#frontier svg text, svg.frontier text",
        "(ts, names) => ts.filter(t => names.includes(t.textContent))"
        ".map(t => { const r = t.getBoundingClientRect();"
        " return {text: t.textContent, x0: r.left, x1: r.right, y0: r.top, y1: r.bottom}; })",
        cfg["campaigns"])
    out["points"] = page.eval_on_selector_all(
        "#frontier svg g.points_marks path, svg.frontier circle",
        "ps => ps.map(p => { const r = p.getBoundingClientRect();"
        " return {x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2}; })")
    out["error_bars"] = {
        axis: page.locator(f".vega-chart[data-chart=frontier] svg g.{axis}_marks line,"
                           f" .vega-chart[data-chart=frontier] svg g.{axis}_marks path").count()
        for axis in ("error_x", "error_y")}
    out["ticks"] = page.eval_on_selector_all(
        ".vega-chart[data-chart=frontier] svg .role-axis-label text",
        "ts => ts.map(t => t.textContent)")
    out["tick_axes"] = page.eval_on_selector_all(
        ".vega-chart[data-chart=frontier] svg .role-axis",
        "axes => axes.map(a => Array.from(a.querySelectorAll('.role-axis-label text'))"
        ".map(t => t.textContent)).filter(ticks => ticks.length)")  # grid-only axes have none
    shot = Path(cfg["screenshots"]) / "campaigns_1366.png"
    page.screenshot(path=str(shot), full_page=True)
    out["screenshot"] = str(shot)
    return out


def main() -> None:
    def steps(page: Any, base: str, cfg: dict[str, Any], result: dict[str, Any]) -> None:
        for name in cfg["dashboards"]:
            result[f"dashboard:{name}"] = guarded(
                name, partial(dashboard_scenario, page, base, cfg, name))
        result["campaigns"] = guarded("campaigns", lambda: campaigns_scenario(page, base, cfg))

    run_browser(steps, viewport=(WIDTH, HEIGHT), init_script=CSP_PROBE)


if __name__ == "__main__":
    main()
