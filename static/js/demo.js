// Live demo: listen to both channels over WebRTC (two receive-only audio tracks, user and
// agent) and follow the run's event log over Server-Sent Events: transcript, tool calls, the
// artifact field by field with its lifecycle, authorization and duplex events; the grade at the
// end. Exposes window.demo (pc, state, stats) for tests and for the curious.
(function () {
  "use strict";
  const root = document.getElementById("demo");
  if (!root) return;
  const id = root.dataset.id;
  const csrf = root.dataset.csrf;
  const $ = (sel) => document.getElementById(sel);
  const demo = { id, pc: null, state: root.dataset.state, stats: {}, events: 0, ended: false, resultLoaded: false };
  window.demo = demo;

  function esc(s) { const d = document.createElement("div"); d.textContent = String(s); return d.innerHTML; }
  function secs(ms) { return (ms / 1000).toFixed(1) + " s"; }
  function notice(text) { const n = $("demo-notice"); n.textContent = text; n.hidden = false; }
  function add(listId, html, cls) {
    const list = $(listId);
    const follow = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    const li = document.createElement("li");
    if (cls) li.className = cls;
    li.innerHTML = html;
    list.appendChild(li);
    if (follow) list.scrollTop = list.scrollHeight;  // follow the run unless scrolled back
    return li;
  }
  function fmt(v) { return v === null || v === undefined || v === "" ? "—" : (typeof v === "object" ? JSON.stringify(v) : String(v)); }

  // ------------------------------------------------------------------ the event log
  const calls = {};
  let lastAgentLine = null;

  function artifactBox(aid) {
    return document.querySelector('.demo-artifact[data-artifact="' + CSS.escape(aid) + '"]');
  }

  function onEvent(e) {
    demo.events += 1;
    $("demo-clock").textContent = secs(e.t_media_ms);
    const at = '<small class="t">' + secs(e.t_media_ms) + "</small> ";
    switch (e.type) {
      case "user.plan":
        add("demo-transcript", at + '<span class="who">user plan</span> ' + esc(e.plan_id) + " <small>(" + esc(e.intent) + ")</small>", "plan");
        break;
      case "user.speech.start":
        add("demo-transcript", at + '<span class="who">user</span> “' + esc(e.text) + "”", "user");
        break;
      case "agent.transcript":
        lastAgentLine = add("demo-transcript", at + '<span class="who">agent</span> “' + esc(e.text) + "”", "agent");
        break;
      case "agent.act":
        if (lastAgentLine) lastAgentLine.insertAdjacentHTML("beforeend", ' <span class="tag act">' + esc(e.act + (e.field ? "(" + e.field + ")" : "") + (e.action ? "(" + e.action + ")" : "")) + "</span>");
        break;
      case "agent.truncated":
        add("demo-duplex", at + "agent cut off after " + e.heard_ms + " ms (" + esc(e.reason) + "), " + e.dropped_ms + " ms dropped", "ev-agent-truncated");
        if (lastAgentLine) lastAgentLine.classList.add("truncated");
        break;
      case "tool.call":
        calls[e.call_id] = add("demo-tools", at + "<b>" + esc(e.name) + "</b> <code>" + esc(JSON.stringify(e.args)) + '</code> <span class="res">…</span>');
        break;
      case "tool.result": {
        const li = calls[e.call_id];
        const text = e.ok ? "ok " + JSON.stringify(e.result) : "error: " + e.error;
        if (li) { li.querySelector(".res").textContent = text; li.classList.add(e.ok ? "ok" : "err"); }
        else add("demo-tools", at + esc(e.name) + " " + esc(text), e.ok ? "ok" : "err");
        break;
      }
      case "artifact.update": {
        const box = artifactBox(e.artifact_id);
        if (!box) break;
        const h = box.querySelector("h3");
        h.dataset.version = String(e.version);
        h.dataset.lifecycle = e.lifecycle;
        h.querySelector(".lifecycle").textContent = e.lifecycle;
        h.querySelector(".version").textContent = "v" + e.version;
        const body = box.querySelector("tbody");
        for (const [name, value] of Object.entries(e.fields)) {
          let row = body.querySelector('tr[data-field="' + CSS.escape(name) + '"]');
          if (!row) {
            row = document.createElement("tr");
            row.dataset.field = name;
            row.innerHTML = "<td>" + esc(name) + '</td><td class="value"></td>';
            body.appendChild(row);
          }
          const cell = row.querySelector(".value");
          cell.textContent = fmt(value);
          cell.classList.toggle("empty", value === null || value === undefined || value === "");
          if (e.changed.includes(name)) {
            row.classList.remove("changed"); void row.offsetWidth; row.classList.add("changed");
          }
        }
        break;
      }
      case "artifact.lifecycle": {
        const box = artifactBox(e.artifact_id);
        if (!box) break;
        const h = box.querySelector("h3");
        h.dataset.lifecycle = e.to_state;
        h.querySelector(".lifecycle").textContent = e.to_state;
        box.querySelector(".trail").insertAdjacentHTML("beforeend", "<span>" + secs(e.t_media_ms) + " " + esc(e.from_state) + " → " + esc(e.to_state) + "</span> ");
        break;
      }
      case "auth.grant":
        add("demo-auth", at + "granted <b>" + esc(e.action) + "</b> token " + esc(e.token) + (e.plan_id ? " (plan " + esc(e.plan_id) + ")" : ""), "ev-auth-grant");
        break;
      case "auth.revoke":
        add("demo-auth", at + "revoked <b>" + esc(e.action) + "</b>" + (e.plan_id ? " (plan " + esc(e.plan_id) + ")" : ""), "ev-auth-revoke");
        break;
      case "auth.invalidated":
        add("demo-auth", at + "invalidated <b>" + esc(e.action) + "</b>: " + esc(e.changed.join(", ")) + " edited after the approval", "ev-auth-revoke");
        break;
      case "auth.hold":
        add("demo-auth", at + "held <b>" + esc(e.tools.join(", ")) + "</b> " + esc(String(e.waited_ms)) + " ms for a live decision (" + esc(e.outcome) + ")", e.outcome === "expired" ? "ev-auth-blocked" : "ev-auth-use");
        break;
      case "auth.use":
        add("demo-auth", at + "used <b>" + esc(e.action) + "</b> by " + esc(e.call_id), "ev-auth-use");
        break;
      case "auth.blocked":
        add("demo-auth", at + "BLOCKED <b>" + esc(e.action) + "</b> (" + esc(e.reason) + ")", "ev-auth-blocked");
        break;
      case "duplex.fire":
        add("demo-duplex", at + esc(e.kind) + " → " + esc(e.plan_id), "ev-duplex-fire");
        break;
      case "world.event":
        add("demo-duplex", at + "world event " + esc(e.event_id) + ": " + esc(e.description), "ev-world");
        break;
      case "agent.error":
        add("demo-duplex", at + "agent error (" + esc(e.category) + "): " + esc(e.message), "ev-auth-blocked");
        break;
      case "session.end":
        add("demo-transcript", at + "<b>end</b>: " + esc(e.reason) + (e.detail ? " — " + esc(e.detail) : ""), "end");
        break;
      default:
        break;
    }
  }

  function onState(s) {
    demo.state = s.state;
    const tag = $("demo-state");
    tag.textContent = s.state;
    tag.dataset.state = s.state;
    tag.className = "tag state-" + s.state;
    if (s.media_ms) $("demo-clock").textContent = secs(s.media_ms);
    const done = !["waiting", "running"].includes(s.state);
    $("demo-start").disabled = s.state !== "waiting";
    $("demo-stop").disabled = done;
    if (done) $("demo-listen").disabled = true;
    if (s.state === "running" && !demo.pc) $("demo-listen").textContent = "Listen";
    if (s.state === "failed") notice("The run failed: " + s.detail);
    if (s.dropped_events) notice(s.dropped_events + " events are not shown here (the page holds a bounded number); the replay has them all.");
  }

  function loadResult() {
    const p = window.htmx
      ? htmx.ajax("GET", "/demo/" + id + "/result", { target: "#demo-result", swap: "innerHTML" })
      : fetch("/demo/" + id + "/result", { headers: { "HX-Request": "true" } }).then((r) => r.text()).then((t) => { $("demo-result").innerHTML = t; });
    Promise.resolve(p).then(() => { demo.resultLoaded = true; });
  }

  const es = new EventSource("/demo/" + id + "/events");
  es.addEventListener("log", (m) => onEvent(JSON.parse(m.data)));
  es.addEventListener("state", (m) => onState(JSON.parse(m.data)));
  es.addEventListener("end", (m) => {
    es.close();
    onState(JSON.parse(m.data));
    demo.ended = true;
    clearInterval(demo.statsTimer);
    sampleStats().finally(loadResult);
  });
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED && !demo.ended) notice("The live feed is gone (the server forgot this demo or restarted); the run is under Runs.");
  };

  // ------------------------------------------------------------------ WebRTC
  function gathered(pc) {
    if (pc.iceGatheringState === "complete") return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => { if (pc.iceGatheringState === "complete") resolve(); };
      pc.addEventListener("icegatheringstatechange", done);
      setTimeout(resolve, 3000);
    });
  }

  async function sampleStats() {
    const pc = demo.pc;
    if (!pc || pc.connectionState === "closed") return;
    const report = await pc.getStats().catch(() => null);
    if (!report) return;
    report.forEach((r) => {
      if (r.type !== "inbound-rtp" || r.kind !== "audio") return;
      const role = demo.roles && demo.roles[r.mid];
      if (!role) return;
      demo.stats[role] = {
        totalSamplesReceived: r.totalSamplesReceived || 0, concealedSamples: r.concealedSamples || 0,
        totalAudioEnergy: r.totalAudioEnergy || 0, audioLevel: r.audioLevel || 0,
        totalSamplesDuration: r.totalSamplesDuration || 0, packetsReceived: r.packetsReceived || 0,
        packetsLost: r.packetsLost || 0,
        jitterBufferDelayMs: r.jitterBufferEmittedCount ? 1000 * r.jitterBufferDelay / r.jitterBufferEmittedCount : 0,
      };
      const meter = $("level-" + role);
      if (meter) meter.value = r.audioLevel || 0;
    });
  }

  async function listen() {
    const btn = $("demo-listen");
    btn.disabled = true;
    $("demo-rtc").textContent = "connecting…";
    try {
      const pc = new RTCPeerConnection({ iceServers: [] });
      demo.pc = pc;
      pc.addTransceiver("audio", { direction: "recvonly" });
      pc.addTransceiver("audio", { direction: "recvonly" });
      pc.ontrack = (e) => {
        const role = demo.roles && demo.roles[e.transceiver.mid];
        const el = role && $("audio-" + role);
        if (!el) return;
        el.srcObject = new MediaStream([e.track]);
        el.play().catch((err) => notice("The browser would not play audio: " + err));
      };
      pc.onconnectionstatechange = () => {
        $("demo-rtc").textContent = "audio " + pc.connectionState;
        if (pc.connectionState === "failed" && !demo.ended) notice("The audio connection failed; the run goes on without sound.");
      };
      await pc.setLocalDescription(await pc.createOffer());
      await gathered(pc);
      const r = await fetch("/demo/" + id + "/offer", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify({ sdp: pc.localDescription.sdp, type: pc.localDescription.type }),
      });
      const answer = await r.json().catch(() => ({ error: "HTTP " + r.status }));
      if (!r.ok) throw new Error(answer.error || "HTTP " + r.status);
      demo.roles = answer.tracks;
      await pc.setRemoteDescription({ type: answer.type, sdp: answer.sdp });
      if (!demo.ended) demo.statsTimer = setInterval(sampleStats, 500);
    } catch (err) {
      $("demo-rtc").textContent = "audio not connected";
      notice("Could not connect the audio: " + err.message);
      btn.disabled = demo.state !== "waiting" && demo.state !== "running";
    }
  }
  $("demo-listen").addEventListener("click", listen);
  window.addEventListener("pagehide", () => { if (demo.pc) demo.pc.close(); });
})();
