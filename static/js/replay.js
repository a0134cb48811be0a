// Replay: a stereo trace with event lanes under it; the artifact and authorization state at
// the playhead. Events come inline (events-data); the waveform uses precomputed peaks.
(function () {
  "use strict";
  const root = document.getElementById("replay");
  if (!root) return;
  const events = JSON.parse(document.getElementById("events-data").textContent || "[]");
  const corrEl = document.getElementById("corrections-data");
  // decision seq -> the latest researcher correction of that auth.decision (grading uses it)
  const corrected = {};
  for (const c of JSON.parse((corrEl && corrEl.textContent) || "[]")) corrected[c.decision_seq] = c;
  const run = root.dataset.run;
  const hasTrace = root.dataset.hasTrace === "true";
  const lanesEl = document.getElementById("lanes");
  const cursor = document.getElementById("cursor");
  const clock = document.getElementById("clock");
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
  const lastMs = events.reduce((m, e) => Math.max(m, e.t_media_ms || 0), 0);
  let duration = Math.max(lastMs / 1000, 1);
  let ws = null;

  function label(e) {
    switch (e.type) {
      case "user.plan": return "plan " + e.plan_id;
      case "user.speech.start": return "“" + e.text + "”";
      case "agent.transcript": return "“" + e.text + "”";
      case "agent.act": return e.act + (e.field ? "(" + e.field + ")" : "") + (e.action ? "(" + e.action + ")" : "");
      case "agent.truncated": return "truncated, heard " + e.heard_ms + " ms";
      case "tool.call": return e.name + " " + JSON.stringify(e.args);
      case "tool.result": return (e.ok ? "ok " : "error: " + e.error) ;
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
      case "user.transcript": return e.error ? "ASR error: " + e.error : "“" + e.text + "”";
      case "auth.decision": {
        const c = corrected[e.seq];
        const base = "decision " + e.decision + (e.action ? " " + e.action : "") + " (" + Number(e.confidence).toFixed(2) + ")";
        return c ? base + " → corrected to " + c.new + " by " + c.by : base;
      }
      case "cue.show": return "cue " + e.kind + ": " + e.text;
      case "cue.done": return "cue " + e.cue_id + " " + e.reason;
      case "card.fact": return "card: " + e.fact_id + " v" + e.version;
      case "participant.connection": return "participant " + e.state;
      default: return e.type;
    }
  }

  function layout() {
    lanesEl.querySelectorAll(".lane").forEach((n) => n.remove());
    for (const [key, title, match, optional] of LANES) {
      if (optional && !events.some(match)) continue;
      const lane = document.createElement("div");
      lane.className = "lane lane-" + key;
      lane.innerHTML = '<span class="lane-title">' + title + "</span>";
      for (const e of events.filter(match)) {
        if (e.type === "user.speech.end" || e.type === "agent.speech.end" || e.type === "agent.speech.start") continue;
        const mark = document.createElement("button");
        mark.type = "button";
        mark.className = "ev ev-" + e.type.replace(/\./g, "-") + (corrected[e.seq] && e.type === "auth.decision" ? " ev-corrected" : "");
        mark.style.left = (100 * (e.t_media_ms / 1000) / duration) + "%";
        mark.title = (e.t_media_ms / 1000).toFixed(2) + " s · " + label(e);
        mark.textContent = label(e);
        mark.dataset.t = String(e.t_media_ms / 1000);
        mark.addEventListener("click", () => seek(e.t_media_ms / 1000));
        lane.appendChild(mark);
      }
      lanesEl.appendChild(lane);
    }
  }

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

  function esc(s) { const d = document.createElement("div"); d.textContent = String(s); return d.innerHTML; }

  function render(t) {
    clock.textContent = t.toFixed(1) + " s";
    cursor.style.left = (100 * t / duration) + "%";
    const { arts, auth } = stateAt(t);
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

  function seek(t) {
    if (ws) ws.setTime(t); else render(t);
    history.replaceState(null, "", "#t=" + t.toFixed(1));
  }

  function start() {
    layout();
    const m = /t=([0-9.]+)/.exec(location.hash);
    const t0 = m ? parseFloat(m[1]) : 0;
    if (!hasTrace || !window.WaveSurfer) { render(t0); window.replayReady = true; return; }
    fetch("/runs/" + run + "/peaks.json").then(async (r) => {
      const p = await r.json().catch(() => ({ error: "the server answered " + r.status }));
      if (!r.ok || p.error) throw new Error(p.error || "the server answered " + r.status);
      return p;
    }).then((p) => {
      duration = p.duration; layout();
      ws = WaveSurfer.create({
        container: "#waveform", url: "/runs/" + run + "/trace.wav", peaks: p.peaks,
        duration: p.duration, splitChannels: [{ waveColor: "#4f7be8" }, { waveColor: "#e8804f" }],
        height: 60, normalize: true, interact: true,
      });
      ws.on("timeupdate", render);
      ws.on("interaction", () => render(ws.getCurrentTime()));
      ws.on("ready", () => { if (t0) ws.setTime(t0); render(t0); window.replayReady = true; });
      document.getElementById("play").addEventListener("click", () => ws.playPause());
      render(t0);
    }).catch((err) => {
      // No waveform (e.g. an unreadable trace.wav): say why and replay the lanes alone.
      const note = document.createElement("p");
      note.className = "notice error";
      note.textContent = "The audio cannot be shown: " + err.message;
      root.prepend(note);
      document.getElementById("play").disabled = true;
      render(t0);
      window.replayReady = true;
    });
  }
  document.addEventListener("DOMContentLoaded", start);
  // Time links (the decision table's, any a[data-seek]) move the playhead; no inline handlers,
  // which the Content Security Policy would block.
  document.addEventListener("click", (ev) => {
    const link = ev.target instanceof Element ? ev.target.closest("a[data-seek]") : null;
    if (link) seek(parseFloat(link.dataset.seek));
  });
  window.replaySeek = seek;
})();
