"""Real-browser scenario of the replay page (issue #17), run by tests/browser/test_replay_browser.py
inside a loopback-only network namespace, like tests/browser/scenario.py (whose server and login
it reuses).

Usage: ``python tests/browser/replay_scenario.py CONFIG.json``. At 1,366 × 768: the replay of a
10-minute trace with 2,000 events (page widths, chip geometry, lane titles, the time axis, zoom,
the keyboard, play/pause, ``#t=`` in the same tab, a gate failure's link), then the replay of a
live-participant log (chip labels). The last line of stdout is ``RESULT {json}`` with the
figures the test asserts on; nothing is asserted here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.browser.scenario import (
    guarded,
    run_browser,
)

WIDTH, HEIGHT = 1366, 768
SIZES = "() => ({scroll: document.documentElement.scrollWidth, inner: window.innerWidth})"
READY = "() => window.replayReady === true"

# Every chip's box, and whether the chip is what a click at its centre would hit.
CHIPS = """() => {
  const out = [];
  for (const lane of document.querySelectorAll('#lanes .lane')) {
    const track = lane.querySelector('.track').getBoundingClientRect();
    for (const b of lane.querySelectorAll('.ev')) {
      const r = b.getBoundingClientRect();
      const visible = r.right > track.left + 1 && r.left < track.right - 1
        && r.top >= 0 && r.bottom <= window.innerHeight;
      let hit = null;
      if (visible) {
        const x = (Math.max(r.left, track.left) + Math.min(r.right, track.right)) / 2;
        const top = document.elementFromPoint(x, r.top + r.height / 2);
        hit = top === b || b.contains(top);
      }
      // The part of the chip its track shows (the track clips the rest).
      const cx = Math.max(r.left, track.left);
      const cw = Math.max(0, Math.min(r.right, track.right) - cx);
      out.push({lane: lane.className, seq: +b.dataset.seq, t: +b.dataset.t, text: b.textContent,
                x: r.left, y: r.top, w: r.width, h: r.height, cx, cw, visible, hit});
    }
  }
  return out;
}"""

TITLES = """() => Array.from(document.querySelectorAll('#replay .lane-title')).map((t) => {
  const r = t.getBoundingClientRect();
  return {text: t.textContent, x: r.left, y: r.top, w: r.width, h: r.height};
})"""

STATE = """() => ({clock: document.getElementById('clock').textContent,
  view: window.replayView(),
  play: document.getElementById('play').textContent.trim(),
  pressed: document.getElementById('play').getAttribute('aria-pressed'),
  hash: location.hash})"""


def overlaps(chips: list[dict[str, Any]]) -> list[list[int]]:
    """Pairs of chips (by seq) whose boxes intersect by more than half a pixel."""
    out = []
    boxes = sorted(chips, key=lambda c: c["x"])
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if b["x"] >= a["x"] + a["w"] - 0.5:
                break
            if min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"]) > 0.5:
                out.append([a["seq"], b["seq"]])
    return out


def geometry(page: Any) -> dict[str, Any]:
    page.evaluate("document.getElementById('lanes').scrollIntoView({block: 'end'})")
    chips = page.evaluate(CHIPS)
    titles = page.evaluate(TITLES)
    covered = [t["text"] for t in titles for c in chips if c["cw"] > 0
               and c["cx"] < t["x"] + t["w"] - 0.5 and c["cx"] + c["cw"] > t["x"] + 0.5
               and c["y"] < t["y"] + t["h"] - 0.5 and c["y"] + c["h"] > t["y"] + 0.5]
    visible = [c for c in chips if c["visible"]]
    return {"chips": len(chips), "visible": len(visible),
            "overlaps": overlaps(chips)[:20], "n_overlaps": len(overlaps(chips)),
            "not_hit": [c["seq"] for c in visible if not c["hit"]][:20],
            "titles_covered": sorted(set(covered)),
            "empty_labels": [c["seq"] for c in chips if c["text"].strip() in ("", "“”")],
            "sample": [{k: c[k] for k in ("seq", "t", "text")} for c in visible[:5]]}


def state(page: Any) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(STATE)
    return result


def long_replay(page: Any, base: str, cfg: dict[str, Any]) -> dict[str, Any]:
    shots = Path(cfg["screenshots"])
    out: dict[str, Any] = {}
    page.goto(f"{base}/runs/{cfg['long_run']}/replay")
    page.wait_for_function(READY, timeout=60_000)
    out["sizes"] = page.evaluate(SIZES)
    out["fit"] = geometry(page)
    out["fit"]["view"] = state(page)["view"]
    out["ticks"] = page.eval_on_selector_all("#lanes .lane-axis .tick",
                                             "ts => ts.map(t => t.textContent)")
    page.screenshot(path=str(shots / "replay_10min_1366.png"), full_page=True)

    # Click a visible chip in the middle of the tools lane: the playhead goes to its time.
    chips = page.evaluate(CHIPS)
    tools = [c for c in chips if "lane-tools" in c["lane"] and c["visible"]]
    chip = tools[len(tools) // 2]
    page.mouse.click(chip["x"] + 4, chip["y"] + chip["h"] / 2)
    page.wait_for_function("t => document.getElementById('clock').textContent === t",
                           arg=f"{chip['t']:.1f} s", timeout=10_000)
    out["clicked"] = {"chip_t": chip["t"], **state(page)}

    # Keyboard, with the focus on the page (not in a field).
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.evaluate("window.replaySeek(100)")
    before = state(page)
    page.keyboard.press("ArrowRight")
    right = state(page)
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    left = state(page)
    out["arrows"] = {"before": before["view"]["now"], "right": right["view"]["now"],
                     "left": left["view"]["now"], "clock": left["clock"]}
    zooms = [before["view"]["pps"]]
    page.keyboard.type("+")
    zooms.append(state(page)["view"]["pps"])
    page.keyboard.type("+")
    page.keyboard.type("+")
    zoomed = state(page)["view"]
    zooms.append(zoomed["pps"])
    out["zoomed"] = geometry(page)
    out["zoomed"]["view"] = zoomed
    out["zoomed"]["sizes"] = page.evaluate(SIZES)
    out["zoomed"]["ticks"] = page.eval_on_selector_all(
        "#lanes .lane-axis .tick", "ts => ts.length")
    page.screenshot(path=str(shots / "replay_10min_zoomed_1366.png"), full_page=False)
    page.keyboard.type("-")
    zooms.append(state(page)["view"]["pps"])
    out["zooms"] = zooms

    # Space: play, then pause; the button follows the player.
    page.keyboard.press("Space")
    page.wait_for_function("() => document.getElementById('play').getAttribute('aria-pressed')"
                           " === 'true'", timeout=15_000)
    playing = state(page)
    page.wait_for_timeout(600)
    page.keyboard.press("Space")
    page.wait_for_function("() => document.getElementById('play').getAttribute('aria-pressed')"
                           " === 'false'", timeout=15_000)
    paused = state(page)
    out["space"] = {"playing": playing, "paused": paused}

    # Keys typed into a form field are the field's: the playhead stays.
    field = page.locator("select[name=b]")
    if field.count():
        at = state(page)["view"]["now"]
        field.focus()
        page.keyboard.press("ArrowRight")
        page.keyboard.type("+")
        out["in_field"] = {"before": at, "after": state(page)["view"]["now"]}

    # A #t= set in this tab seeks.
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.evaluate("location.hash = '#t=321.5'")
    page.wait_for_function("() => document.getElementById('clock').textContent === '321.5 s'",
                           timeout=10_000)
    out["hash"] = {**state(page), "audio": page.evaluate("window.replayView().now")}

    # A gate failure's link seeks to its moment and marks the events behind it.
    links = page.locator("#gate-failures a.gate-link")
    out["gate_texts"] = page.eval_on_selector_all(
        "#gate-failures li .gate-text", "ts => ts.map(t => t.textContent)")
    out["gate_links"] = links.count()
    if links.count():
        link = links.first
        seek = float(link.get_attribute("data-seek") or "nan")
        seqs = [int(s) for s in (link.get_attribute("data-seqs") or "").split(",") if s]
        link.click()
        page.wait_for_function("t => document.getElementById('clock').textContent === t",
                               arg=f"{seek:.1f} s", timeout=10_000)
        marked = page.eval_on_selector_all(
            "#lanes .ev-hl",
            "bs => bs.map(b => ({seq: +b.dataset.seq, x: b.getBoundingClientRect().left}))")
        out["gate_link"] = {"seek": seek, "seqs": seqs, "marked": marked, **state(page),
                            "cursor_x": page.evaluate(
                                "document.getElementById('cursor').getBoundingClientRect().left"),
                            "cursor_hidden": page.evaluate(
                                "document.getElementById('cursor').hidden")}
        page.screenshot(path=str(shots / "replay_gate_link_1366.png"), full_page=False)
    return out


def live_replay(page: Any, base: str, cfg: dict[str, Any]) -> dict[str, Any]:
    page.goto(f"{base}/runs/{cfg['live_run']}/replay")
    page.wait_for_function(READY, timeout=30_000)
    texts = page.eval_on_selector_all(
        "#lanes .ev", "bs => bs.map(b => ({type: b.className, text: b.textContent}))")
    page.screenshot(path=str(Path(cfg["screenshots"]) / "replay_live_1366.png"), full_page=True)
    return {"chips": texts, "sizes": page.evaluate(SIZES)}


def main() -> None:
    def steps(page: Any, base: str, cfg: dict[str, Any], result: dict[str, Any]) -> None:
        result["long"] = guarded("long", lambda: long_replay(page, base, cfg))
        result["live"] = guarded("live", lambda: live_replay(page, base, cfg))

    run_browser(steps, viewport=(WIDTH, HEIGHT))


if __name__ == "__main__":
    main()
