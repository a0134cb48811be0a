// Live demo: listen to both channels over WebRTC (two receive-only audio tracks, user and
// agent) or, in mic mode, talk as the caller (the microphone goes out, the agent comes back;
// the caller's role card and cues arrive as "card" events), and follow the run's event log over
// Server-Sent Events: transcript, tool calls, the artifact field by field with its lifecycle
// (one list entry per transition), authorization and duplex events. The server says the run
// ended as soon as its media ends: the players stop there (showing the final time) and the
// grade, when it arrives, is scrolled into view. Exposes window.demo (pc, state, stats, mode,
// card, playersStopped, resultLoaded) for tests and for the curious.
(function () {
  "use strict";
  const root = document.getElementById("demo");
  if (!root) return;
  const id = root.dataset.id;
  const csrf = root.dataset.csrf;
  const $ = (sel) => document.getElementById(sel);
  const mode = root.dataset.mode || "listen";
  const { esc, actLabel } = window.apex;
  const demo = {
    id, mode, pc: null, stream: null, state: root.dataset.state, stats: {}, events: 0,
    ended: false, mediaEnded: false, playersStopped: false, resultLoaded: false, card: null,
    cardUpdates: 0, eventTypes: [],
  };
  window.demo = demo;

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
    demo.eventTypes.push(e.type);
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
        if (lastAgentLine) lastAgentLine.insertAdjacentHTML("beforeend", ' <span class="tag act">' + esc(actLabel(e)) + "</span>");
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
        const item = document.createElement("li");
        item.innerHTML = '<small class="t">' + secs(e.t_media_ms) + "</small> " + esc(e.from_state) + " → " + esc(e.to_state);
        box.querySelector(".trail").appendChild(item);
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
        mediaEnded(e.t_media_ms);
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
    let detail = $("demo-detail");
    if (s.detail && !detail) {
      detail = document.createElement("span");
      detail.id = "demo-detail";
      detail.className = "hint";
      $("demo-status").appendChild(detail);
    }
    if (detail) detail.textContent = s.detail || "";
    if (s.media_ms) $("demo-clock").textContent = secs(s.media_ms);
    const done = !["waiting", "running"].includes(s.state);
    if ($("demo-start")) $("demo-start").disabled = s.state !== "waiting";
    $("demo-stop").disabled = done;
    if (done) $("demo-listen").disabled = true;
    if (s.state === "running" && !demo.pc && mode === "listen") $("demo-listen").textContent = "Listen";
    if (s.state === "failed") notice("The run failed: " + s.detail);
    if (s.dropped_events) notice(s.dropped_events + " events are not shown here (the page holds a bounded number); the replay has them all.");
    if (done) {
      mediaEnded(s.media_ms);
      if (!s.graded && !demo.resultLoaded) {
        $("demo-result").innerHTML = '<p class="empty" id="demo-grading">The run has ended; grading it…</p>';
      }
    }
  }

  // ------------------------------------------------------------------ the end of the media
  // The players of a live stream count on for as long as the stream is attached: once the
  // run's media has ended (and the last audio has played out), pause them, stop the tracks and
  // leave the time they reached on show.
  const PLAY_OUT_MS = 600;

  function mediaEnded(tMs) {
    if (demo.mediaEnded) return;
    demo.mediaEnded = true;
    if (typeof tMs === "number" && tMs > 0) $("demo-clock").textContent = secs(tMs);
    const wait = demo.pc ? PLAY_OUT_MS : 0;
    demo.stopping = new Promise((resolve) => setTimeout(resolve, wait)).then(stopPlayers);
  }

  async function stopPlayers() {
    if (demo.playersStopped) return;
    clearInterval(demo.statsTimer);
    await sampleStats().catch(() => null);
    for (const el of document.querySelectorAll(".demo-audio audio")) {
      el.pause();
      apex.stopTracks(el.srcObject);
      el.dataset.finalTime = el.currentTime.toFixed(1);
    }
    apex.stopTracks(demo.stream);
    demo.stream = null;
    apex.closePeer(demo.pc);
    $("demo-rtc").textContent = "call ended at " + $("demo-clock").textContent;
    demo.playersStopped = true;
  }

  // ------------------------------------------------------------------ the grade
  function loadResult() {
    fetch("/demo/" + id + "/result", { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then((r) => r.text())
      .then((t) => {
        const box = $("demo-result");
        box.innerHTML = t;
        if (window.htmx) htmx.process(box);
        // The grade in view: the result section at the top of the window, its heading focused.
        box.scrollIntoView({ block: "start" });
        const heading = $("demo-grade") || box;
        heading.focus({ preventScroll: true });
        demo.resultLoaded = true;
      })
      .catch((err) => notice("Could not load the grade: " + err));
  }

  // ------------------------------------------------------------------ the caller's card (mic mode)
  function onCard(msg) {
    const box = $("demo-card");
    if (!box) return;
    const before = {};
    for (const dd of box.querySelectorAll("#card-facts dd[data-fact]")) before[dd.dataset.fact] = dd.dataset.version;
    const was = demo.card && demo.card.active_cue ? demo.card.active_cue.id : null;
    box.innerHTML = msg.html;
    demo.card = msg.card;
    demo.cardUpdates += 1;
    if (demo.cardUpdates > 1) {
      for (const dd of box.querySelectorAll("#card-facts dd[data-fact]")) {
        if (before[dd.dataset.fact] !== dd.dataset.version) dd.classList.add("new");
      }
    }
    const cue = msg.card.active_cue;
    if (cue && cue.id !== was) $("cue-box").scrollIntoView({ block: "nearest" });
  }

  const es = new EventSource("/demo/" + id + "/events");
  es.addEventListener("log", (m) => onEvent(JSON.parse(m.data)));
  es.addEventListener("state", (m) => onState(JSON.parse(m.data)));
  es.addEventListener("card", (m) => onCard(JSON.parse(m.data)));
  es.addEventListener("end", (m) => {
    es.close();
    onState(JSON.parse(m.data));
    demo.ended = true;
    mediaEnded();
    demo.stopping.finally(loadResult);  // the players stop first, then the grade shows
  });
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED && !demo.ended) notice("The live feed is gone (the server forgot this demo or restarted); the run is under Runs.");
  };

  // ------------------------------------------------------------------ WebRTC
  async function sampleStats() {
    const pc = demo.pc;
    if (!pc || pc.connectionState === "closed") return;
    const report = await pc.getStats().catch(() => null);
    if (!report) return;
    report.forEach((r) => {
      if (r.type === "media-source" && r.kind === "audio") {  // mic mode: the microphone
        demo.stats.mic = { audioLevel: r.audioLevel || 0, totalAudioEnergy: r.totalAudioEnergy || 0 };
        const meter = $("level-user");
        if (meter) meter.value = r.audioLevel || 0;
        return;
      }
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

  const MIC_WORDS = {
    blocked: "The browser blocked the microphone: allow it for this site, then press Start call again.",
    missing: "No microphone was found: plug one in, then press Start call again.",
    unsupported: "This page cannot use the microphone here (it needs https or localhost and an up-to-date browser).",
  };

  async function listen() {
    const btn = $("demo-listen");
    btn.disabled = true;
    if (mode === "mic" && !demo.stream) {
      try {
        demo.stream = await apex.microphone();
      } catch (err) {
        notice(apex.micProblem(err, MIC_WORDS));
        btn.disabled = false;
        return;
      }
    }
    $("demo-rtc").textContent = "connecting…";
    try {
      const pc = new RTCPeerConnection({ iceServers: [] });
      demo.pc = pc;
      if (mode === "mic") {
        for (const track of demo.stream.getAudioTracks()) pc.addTrack(track, demo.stream);
      } else {
        pc.addTransceiver("audio", { direction: "recvonly" });
        pc.addTransceiver("audio", { direction: "recvonly" });
      }
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
      const answer = await apex.offer(pc, "/demo/" + id + "/offer", csrf);
      demo.roles = answer.tracks;
      await pc.setRemoteDescription({ type: answer.type, sdp: answer.sdp });
      if (!demo.mediaEnded) demo.statsTimer = setInterval(sampleStats, 500);
    } catch (err) {
      $("demo-rtc").textContent = mode === "mic" ? "microphone not connected" : "audio not connected";
      notice("Could not connect the audio: " + err.message);
      btn.disabled = demo.state !== "waiting" && demo.state !== "running";
    }
  }
  $("demo-listen").addEventListener("click", listen);
  window.addEventListener("pagehide", () => {
    apex.closePeer(demo.pc);
    apex.stopTracks(demo.stream);
  });
})();
