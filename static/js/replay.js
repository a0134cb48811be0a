// Replay: a stereo trace with a time axis and event lanes under it; the artifact and
// authorization state at the playhead. Events come inline (events-data); the waveform uses
// precomputed peaks.
//
// Layout: every row is a title column and a track of the same width, so a time has the same x
// in the waveform, the axis and every lane. Zoomed in, the content is wider than the track:
// wavesurfer scrolls its waveform and the lanes follow (translateX). In each lane the chips
// are stacked in rows so that no two overlap at the current zoom (re-laid out on zoom); a chip
// that would need a row beyond ROWS is folded into the chip just before it, which shows "+N"
// (zoom in to see them apart).
(function () {
  "use strict";
  const root = document.getElementById("replay");
  if (!root) return;
  const events = JSON.parse(document.getElementById("events-data").textContent || "[]");
  const corrEl = document.getElementById("corrections-data");
  // decision seq -> the latest researcher correction of that auth.decision (grading uses it)
  const corrected = {};
  for (const c of JSON.parse((corrEl && corrEl.textContent) || "[]")) corrected[c.decision_seq] = c;
  const { esc, actLabel, closest } = window.apex;
  const run = root.dataset.run;
  const hasTrace = root.dataset.hasTrace === "true";
  const lanesEl = document.getElementById("lanes");
  const cursor = document.getElementById("cursor");
  const clock = document.getElementById("clock");
  const playBtn = document.getElementById("play");
  const zoomLevel = document.getElementById("zoom-level");
  const LANES = [
    ["user", "user plans & speech", (e) => e.type.startsWith("user.")],
    ["agent", "agent speech & acts", (e) => e.type.startsWith("agent.")],
    ["tools", "tools", (e) => e.type.startsWith("tool.")],
    ["artifact", "artifact versions", (e) => e.type.startsWith("artifact.")],
    ["auth", "authorization", (e) => e.type.startsWith("auth.")],
    ["duplex", "duplex & world events", (e) => e.type === "duplex.fire" || e.type === "world.event"],
    ["cues", "cues & role card", (e) => e.type.startsWith("cue.") || e.type === "card.fact"],
    ["participant", "participant connection", (e) => e.type === "participant.connection", true],
  ];
  // Shown by other chips (speech start, the transcript) or by the waveform itself.
  const SKIP = new Set(["user.speech.end", "agent.speech.end", "agent.speech.start"]);
  const ROWS = 3; // chip rows per lane at most
  const GAP = 3; // px between chips in a row
  const MAX_W = 260; // px, a chip's widest (longer labels end in "…"; the title has them whole)
  const MORE_W = 22; // px kept for the "+N" badge
  const MAX_PPS = 400; // px per second at the deepest zoom
  const FONT = "11px system-ui, sans-serif"; // as #replay .ev in replay.css
  const lastMs = events.reduce((m, e) => Math.max(m, e.t_media_ms || 0), 0);
  let duration = Math.max(lastMs / 1000, 1);
  let ws = null;
  let now = 0; // the playhead, s
  let pps = 0; // zoom: px per second; 0 = the whole run fits the track
  let scroll = 0; // px of content scrolled out on the left
  let trackW = 0;
  let contentW = 0;
  let highlighted = new Set();
  let ready = false; // wavesurfer has loaded the peaks (zoom, seek and play work)
  const lanes = []; // {key, el, inner, items: [{e, t, label, w}], chips: [{el, seqs}]}
  let axisInner = null;

  function q(s) { return "“" + s + "”"; }
  function label(e) {
    switch (e.type) {
      case "user.plan": return "plan " + e.plan_id;
      // A live participant's speech has no text when it starts: the transcript follows.
      case "user.speech.start": return e.text ? q(e.text) : "speaking (" + e.plan_id + ")";
      case "agent.transcript": return e.text ? q(e.text) : "agent turn " + e.turn + " (no transcript)";
      case "agent.act": return actLabel(e);
      case "agent.truncated": return "truncated, heard " + e.heard_ms + " ms";
      case "agent.hangup": return "agent hung up";
      case "agent.error": return "agent error: " + (e.category || "") + (e.message ? " " + e.message : "");
      case "tool.call": return e.name + " " + JSON.stringify(e.args);
      case "tool.result": return (e.name ? e.name + " " : "") + (e.ok ? "ok" : "error: " + (e.error || "unknown"));
      case "artifact.update": return e.artifact_id + " v" + e.version + " " + e.lifecycle + (e.changed.length ? " [" + e.changed.join(", ") + "]" : "");
      case "artifact.lifecycle": return e.artifact_id + " " + e.from_state + " → " + e.to_state;
      case "auth.grant": return "granted " + e.action;
      case "auth.revoke": return "revoked " + e.action;
      case "auth.invalidated": return "invalidated " + e.action + " (edited: " + e.changed.join(", ") + ")";
      case "auth.hold": return "held " + e.tools.join(", ") + " " + e.waited_ms + " ms for a live decision: " + (e.outcome === "expired" ? "EXPIRED (infrastructure)" : "decided");
      case "agent.protocol_unknown": return "ignored provider message " + e.event_type;
      case "auth.use": return "used " + e.action;
      case "auth.blocked": return "BLOCKED " + e.action;
      case "duplex.fire": return e.kind + " → " + e.plan_id + (e.overlap === false ? " (agent silent)" : "");
      case "world.event": return "world: " + (e.description || e.event_id);
      case "user.transcript":
        if (e.error) return "ASR error: " + e.error;
        return e.text ? q(e.text) : "(no words recognized, " + Math.max(0, (e.end_ms - e.start_ms) / 1000).toFixed(1) + " s)";
      case "auth.decision": {
        const c = corrected[e.seq];
        const base = "decision " + e.decision + (e.action ? " " + e.action : "") + " (" + Number(e.confidence).toFixed(2) + ")";
        return c ? base + " → corrected to " + c.new + " by " + c.by : base;
      }
      case "cue.show": return "cue " + e.kind + ": " + (e.text || e.cue_id);
      case "cue.done": return "cue " + e.cue_id + " " + e.reason;
      case "card.fact": return "card: " + e.fact_id + " v" + e.version;
      case "participant.connection": return "participant " + (e.state || "connection");
      default: return e.type;
    }
  }

  // ------------------------------------------------------------------ lanes (built once)

  function build() {
    const ctx = document.createElement("canvas").getContext("2d");
    ctx.font = FONT;
    const axis = row("axis", "time");
    axisInner = axis.inner;
    for (const [key, title, match, optional] of LANES) {
      const mine = events.filter((e) => match(e) && !SKIP.has(e.type));
      if (optional && !mine.length) continue;
      const lane = row(key, title);
      lane.items = mine.map((e) => {
        const text = label(e);
        const w = Math.min(MAX_W, Math.ceil(ctx.measureText(text).width) + 10);
        return { e, t: (e.t_media_ms || 0) / 1000, label: text, w: Math.max(w, 18) };
      }).sort((a, b) => a.t - b.t || a.e.seq - b.e.seq);
      lanes.push(lane);
    }
  }

  function row(key, title) {
    const el = document.createElement("div");
    el.className = "lane lane-" + key;
    const name = document.createElement("span");
    name.className = "lane-title";
    name.textContent = title;
    const track = document.createElement("div");
    track.className = "track";
    const inner = document.createElement("div");
    inner.className = "track-inner";
    track.appendChild(inner);
    el.append(name, track);
    track.addEventListener("wheel", onWheel, { passive: false });
    lanesEl.insertBefore(el, cursor);
    return { key, el, track, inner, items: [], chips: [] };
  }

  function onWheel(ev) {
    const dx = ev.shiftKey ? ev.deltaY : ev.deltaX;
    if (!dx || contentW <= trackW) return;
    ev.preventDefault();
    scrollTo(scroll + dx);
  }

  // ------------------------------------------------------------------ layout at a zoom

  function measure() {
    const first = lanes.length ? lanes[0].track : axisInner.parentElement;
    trackW = Math.max(1, first.clientWidth);
    // wavesurfer: the waveform is ceil(duration × px/s) wide, or the track's width if larger.
    contentW = Math.max(trackW, Math.ceil(duration * pps));
  }

  function xOf(t) { return (t / duration) * contentW; }

  function layout() {
    measure();
    for (const lane of lanes) placeChips(lane);
    drawAxis();
    applyScroll();
    markHighlights();
    zoomLevel.textContent = pps ? "×" + (contentW / trackW).toFixed(contentW / trackW < 10 ? 1 : 0) : "fit";
    root.dataset.pxPerSec = String(contentW / duration);
  }

  function placeChips(lane) {
    const ends = []; // per row: the x where its last chip ends
    const placed = [];
    let last = null;
    for (const it of lane.items) {
      const x = Math.max(0, Math.min(xOf(it.t), contentW - it.w));
      let r = ends.findIndex((end) => end + GAP <= x);
      if (r < 0 && ends.length < ROWS) { r = ends.length; ends.push(0); }
      if (r < 0 && last) { last.more.push(it); continue; }
      if (r < 0) r = 0;
      const chip = { it, x, row: r, more: [] };
      ends[r] = x + it.w;
      placed.push(chip);
      last = chip;
    }
    // A chip hosting "+N" needs room for the badge: widen it only where its row has room.
    const byRow = {};
    for (const c of placed) (byRow[c.row] = byRow[c.row] || []).push(c);
    for (const list of Object.values(byRow)) {
      list.forEach((c, i) => {
        c.w = c.it.w;
        if (!c.more.length) return;
        const next = list[i + 1];
        const room = (next ? next.x - GAP : contentW) - (c.x + c.w);
        c.w += Math.max(0, Math.min(MORE_W, room));
      });
    }
    const frag = document.createDocumentFragment();
    lane.chips = placed.map((c) => {
      const e = c.it.e;
      const b = document.createElement("button");
      b.type = "button";
      b.className = "ev ev-" + e.type.replace(/\./g, "-") + (corrected[e.seq] && e.type === "auth.decision" ? " ev-corrected" : "");
      b.style.left = c.x.toFixed(1) + "px";
      b.style.top = (c.row * 22 + 2) + "px";
      b.style.width = c.w + "px";
      b.textContent = c.it.label;
      b.dataset.t = String(c.it.t);
      b.dataset.seq = String(e.seq);
      let title = c.it.t.toFixed(2) + " s · " + c.it.label;
      if (c.more.length) {
        b.classList.add("ev-more");
        b.dataset.more = String(c.more.length);
        title += "\n+" + c.more.length + " more until " + c.more[c.more.length - 1].t.toFixed(1) + " s (zoom in to see them):\n" +
          c.more.slice(0, 8).map((m) => m.t.toFixed(1) + " s · " + m.label).join("\n") + (c.more.length > 8 ? "\n…" : "");
      }
      b.title = title;
      frag.appendChild(b);
      return { el: b, seqs: [e.seq, ...c.more.map((m) => m.e.seq)] };
    });
    lane.inner.replaceChildren(frag);
    const rows = placed.reduce((m, c) => Math.max(m, c.row + 1), 1);
    lane.inner.style.height = (rows * 22 + 4) + "px";
    lane.inner.style.width = contentW + "px";
  }

  function drawAxis() {
    const perSec = contentW / duration;
    const steps = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];
    const step = steps.find((s) => s * perSec >= 70) || steps[steps.length - 1];
    const frag = document.createDocumentFragment();
    for (let k = 0; k * step <= duration + 1e-9; k++) {
      const t = k * step;
      const x = xOf(t);
      if (x > contentW - 24 && k > 0) break;
      const tick = document.createElement("span");
      tick.className = "tick";
      tick.style.left = x.toFixed(1) + "px";
      tick.textContent = fmt(t, step);
      frag.appendChild(tick);
    }
    axisInner.replaceChildren(frag);
    axisInner.style.width = contentW + "px";
  }

  function fmt(t, step) {
    const digits = step < 1 ? 1 : 0;
    if (duration < 60) return t.toFixed(digits) + " s";
    const m = Math.floor(t / 60);
    const s = t - 60 * m;
    return m + ":" + (s < 10 ? "0" : "") + s.toFixed(digits);
  }

  // ------------------------------------------------------------------ scroll, zoom, playhead

  function applyScroll() {
    scroll = Math.max(0, Math.min(scroll, contentW - trackW));
    const tr = "translateX(" + (-scroll).toFixed(1) + "px)";
    axisInner.style.transform = tr;
    for (const lane of lanes) lane.inner.style.transform = tr;
    placeCursor();
  }

  function scrollTo(px) {
    if (ws && ready) ws.setScroll(Math.max(0, px)); // wavesurfer reports back ("scroll")
    else { scroll = px; applyScroll(); }
  }

  function placeCursor() {
    const x = xOf(now) - scroll;
    cursor.hidden = x < -1 || x > trackW + 1;
    cursor.style.left = "calc(var(--title-w) + " + x.toFixed(1) + "px)";
  }

  function keepInView(t) {
    const x = xOf(t);
    if (x < scroll || x > scroll + trackW) scrollTo(x - trackW / 2);
  }

  function zoom(next) {
    measure();
    const fit = trackW / duration;
    next = next <= fit * 1.01 ? 0 : Math.min(MAX_PPS, next);
    if (next === pps) return;
    const screenX = xOf(now) - scroll; // keep the playhead where it is on screen
    pps = next;
    if (ws && ready) ws.zoom(pps);
    layout();
    const target = xOf(now) - Math.max(0, Math.min(trackW, screenX));
    if (ws && ready) ws.setScroll(Math.max(0, target));
    scroll = target;
    applyScroll();
  }

  function zoomBy(factor) {
    measure();
    zoom((pps || trackW / duration) * factor);
  }

  // ------------------------------------------------------------------ state at the playhead

  function stateAt(t) {
    const ms = t * 1000;
    const arts = {}; const auth = {};
    for (const e of events) {
      if (e.t_media_ms > ms) break;
      if (e.type === "artifact.update") arts[e.artifact_id] = e;
      if (e.type === "auth.grant") auth[e.action] = "granted (" + e.token + ")";
      if (e.type === "auth.revoke") auth[e.action] = "revoked";
      if (e.type === "auth.invalidated") auth[e.action] = "invalidated by an edit of " + e.changed.join(", ");
      if (e.type === "auth.use") auth[e.action] = "used by " + e.call_id;
      if (e.type === "auth.blocked") auth[e.action] = "BLOCKED attempt " + e.call_id;
    }
    return { arts, auth };
  }

  let shownKey = null;
  function render(t) {
    now = t;
    clock.textContent = t.toFixed(1) + " s";
    placeCursor();
    const { arts, auth } = stateAt(t);
    const key = JSON.stringify([Object.values(arts).map((a) => a.seq), auth]);
    if (key === shownKey) return; // nothing changed since the last frame
    shownKey = key;
    const artEl = document.getElementById("state-artifacts");
    const ids = Object.keys(arts);
    artEl.innerHTML = ids.length ? ids.map((id) => {
      const a = arts[id];
      const rows = Object.entries(a.fields).map(([k, v]) => "<tr><td>" + esc(k) + "</td><td>" + esc(v) + "</td></tr>").join("");
      return '<h3 data-version="' + a.version + '">' + esc(id) + " v" + a.version + " · " + esc(a.lifecycle) + '</h3><table class="grid compact">' + rows + "</table>";
    }).join("") : '<p class="empty">No artifact version yet.</p>';
    const authEl = document.getElementById("state-auth");
    const acts = Object.keys(auth);
    authEl.innerHTML = acts.length ? acts.map((k) => "<p>" + esc(k) + ": " + esc(auth[k]) + "</p>").join("") : '<p class="empty">No approval yet.</p>';
  }

  function seek(t, keepHash) {
    t = Math.max(0, Math.min(duration, t));
    if (ws && ready) ws.setTime(t);
    render(t);
    keepInView(t);
    if (!keepHash) history.replaceState(null, "", "#t=" + t.toFixed(1));
  }

  function markHighlights() {
    for (const lane of lanes) {
      for (const c of lane.chips) c.el.classList.toggle("ev-hl", c.seqs.some((s) => highlighted.has(s)));
    }
  }

  function setPlaying(on) {
    playBtn.textContent = on ? "Pause" : "Play";
    playBtn.setAttribute("aria-pressed", on ? "true" : "false");
    root.dataset.playing = on ? "true" : "false";
  }

  // ------------------------------------------------------------------ start

  function hashTime() {
    const m = /^#t=([0-9]+(?:\.[0-9]+)?)$/.exec(location.hash);
    return m ? parseFloat(m[1]) : null;
  }

  function start() {
    build();
    layout();
    const t0 = hashTime() || 0;
    render(t0);
    keepInView(t0);
    window.addEventListener("resize", () => { layout(); });
    document.getElementById("zoom-in").addEventListener("click", () => zoomBy(2));
    document.getElementById("zoom-out").addEventListener("click", () => zoomBy(0.5));
    document.getElementById("zoom-fit").addEventListener("click", () => zoom(0));
    // A chip reached with Tab outside the shown part of the run: bring it into view.
    lanesEl.addEventListener("focusin", (ev) => {
      const chip = closest(ev, "button.ev");
      if (chip) keepInView(parseFloat(chip.dataset.t));
    });
    lanesEl.addEventListener("click", (ev) => {
      const chip = closest(ev, "button.ev");
      if (chip) seek(parseFloat(chip.dataset.t));
    });
    if (!hasTrace || !window.WaveSurfer) { window.replayReady = true; return; }
    fetch("/runs/" + run + "/peaks.json").then(async (r) => {
      const p = await r.json().catch(() => ({ error: "the server answered " + r.status }));
      if (!r.ok || p.error) throw new Error(p.error || "the server answered " + r.status);
      return p;
    }).then((p) => {
      duration = p.duration;
      layout();
      ws = WaveSurfer.create({
        container: "#waveform", url: "/runs/" + run + "/trace.wav", peaks: p.peaks,
        duration: p.duration, splitChannels: [{ waveColor: "#4f7be8" }, { waveColor: "#e8804f" }],
        height: 60, normalize: true, interact: true, minPxPerSec: pps, autoCenter: true,
      });
      ws.on("timeupdate", (t) => { now = t; render(t); });
      ws.on("interaction", () => render(ws.getCurrentTime()));
      ws.on("scroll", (_start, _end, left) => { scroll = left; applyScroll(); });
      ws.on("play", () => setPlaying(true));
      ws.on("pause", () => setPlaying(false));
      ws.on("finish", () => setPlaying(false));
      ws.on("ready", () => {
        ready = true;
        if (pps) { ws.zoom(pps); ws.setScroll(scroll); }
        if (now) ws.setTime(now);
        render(now);
        window.replayReady = true;
      });
      playBtn.addEventListener("click", () => { if (ready) ws.playPause(); });
    }).catch((err) => {
      // No waveform (e.g. an unreadable trace.wav): say why and replay the lanes alone.
      const note = document.createElement("p");
      note.className = "notice error";
      note.textContent = "The audio cannot be shown: " + err.message;
      root.prepend(note);
      playBtn.disabled = true;
      ws = null;
      window.replayReady = true;
    });
  }
  document.addEventListener("DOMContentLoaded", start);

  // Keyboard: Space play/pause, ←/→ seek (Shift: finer), +/− zoom; never while typing.
  document.addEventListener("keydown", (ev) => {
    if (ev.defaultPrevented || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const el = ev.target instanceof Element ? ev.target : null;
    if (el && el.closest("input, textarea, select, [contenteditable]:not([contenteditable=false])")) return;
    switch (ev.key) {
      case " ":
        if (!ws || !ready) return;
        ev.preventDefault(); // also keeps a focused button from being clicked
        ws.playPause();
        break;
      case "ArrowLeft": case "ArrowRight": {
        ev.preventDefault();
        const step = (ev.shiftKey ? 1 : 5) * (ev.key === "ArrowLeft" ? -1 : 1);
        seek(now + step);
        break;
      }
      case "+": case "=": ev.preventDefault(); zoomBy(2); break;
      case "-": case "_": ev.preventDefault(); zoomBy(0.5); break;
      default:
    }
  });
  // A #t= typed or followed in this tab seeks (replaceState, used by seek, fires no event).
  window.addEventListener("hashchange", () => {
    const t = hashTime();
    if (t !== null) seek(t, true);
  });
  // Time links (the decision table's, the gate failures', any a[data-seek]) move the playhead;
  // a gate failure's link also marks the events behind it. No inline handlers, which the
  // Content Security Policy would block.
  document.addEventListener("click", (ev) => {
    const link = closest(ev, "a[data-seek]");
    if (!link) return;
    ev.preventDefault();
    if (link.dataset.seqs !== undefined) {
      highlighted = new Set(link.dataset.seqs.split(",").filter(Boolean).map(Number));
      markHighlights();
      root.scrollIntoView({ block: "start" });
    }
    seek(parseFloat(link.dataset.seek));
  });
  window.replaySeek = seek;
  window.replayView = () => ({ pps: contentW / duration, contentW, trackW, scroll, now, duration, ready });
})();
