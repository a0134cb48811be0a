// Study B session page: the participant's microphone goes to the assistant over WebRTC (one
// audio transceiver: mic out, assistant's voice in); the private role card, cues, call state
// and elapsed time arrive over Server-Sent Events (never the event log). Reloading a running
// session rejoins it (or, when the study says so, finds it ended). The call state is shown in
// plain words (the server's label, or "Connecting…" while the connection comes up), never as
// its internal name. Exposes window.participant (state, label, pc, facts, cues, shownCue,
// captions) for tests.
(function () {
  "use strict";
  const root = document.getElementById("session");
  if (!root) return;
  const base = root.dataset.base;
  const csrf = root.dataset.csrf;
  const $ = (id) => document.getElementById(id);
  const CONNECTION_WORDS = {
    new: "connecting…", connecting: "connecting…", connected: "connected",
    disconnected: "connection lost", failed: "connection lost", closed: "not connected",
  };
  const p = {
    state: root.dataset.state, pc: null, stream: null, audio: null, connection: "new",
    facts: {}, factLog: [], cues: [], activeCue: null, shownCue: null, captions: [],
    cardUpdates: 0, ended: false, elapsedMs: 0, serverElapsedMs: 0,
    label: ($("call-state") || {}).textContent || "", serverLabel: "",
  };
  p.serverLabel = p.label;
  window.participant = p;

  function error(text) { const e = $("call-error"); e.textContent = text; e.hidden = !text; }
  function clock(ms) {
    const s = Math.floor(ms / 1000);
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }

  // ------------------------------------------------------------------ the card
  function readCard(card) {
    const now = {};
    for (const f of card.facts) {
      now[f.id] = f.version;
      if (p.facts[f.id] !== f.version) p.factLog.push({ id: f.id, version: f.version, at: Date.now() });
    }
    p.facts = now;
    p.cues = card.cues.map((c) => c.id);
    const was = p.activeCue;
    p.activeCue = card.active_cue ? card.active_cue.id : null;
    p.shownCue = card.shown_cue ? { id: card.shown_cue.id, done: card.shown_cue.done } : null;
    p.captions = (card.captions || []).map((c) => c.text);
    return was;
  }

  function onCard(msg) {
    const before = Object.assign({}, p.facts);
    const was = readCard(msg.card);
    $("card").innerHTML = msg.html;
    p.cardUpdates += 1;
    for (const dd of document.querySelectorAll("#card-facts dd[data-fact]")) {
      if (before[dd.dataset.fact] !== Number(dd.dataset.version) && p.cardUpdates > 1) dd.classList.add("new");
    }
    if (p.activeCue && p.activeCue !== was) {
      const box = $("cue-box");
      box.classList.add("flash");
      box.scrollIntoView({ block: "nearest" });
    }
  }

  function onState(s) {
    p.state = s.state;
    p.elapsedMs = s.elapsed_ms;
    p.serverElapsedMs = s.elapsed_ms;
    root.dataset.state = s.state;
    const tag = $("call-state");
    tag.dataset.state = s.state;
    p.serverLabel = s.label;
    showLabel();
    $("elapsed").textContent = clock(s.elapsed_ms);
    $("call-message").textContent = s.message;
    const active = s.state === "waiting" || s.state === "running";
    $("call-start").disabled = !active || (p.pc !== null && p.connection !== "failed" && p.connection !== "closed");
    $("call-end").disabled = !active;
    $("call-next").hidden = active;
  }

  function onEnd(s) {
    onState(s);
    p.ended = true;
    hangUpLocal();
  }

  const events = new EventSource(base + "/events");
  events.addEventListener("card", (e) => onCard(JSON.parse(e.data)));
  events.addEventListener("state", (e) => onState(JSON.parse(e.data)));
  events.addEventListener("end", (e) => { onEnd(JSON.parse(e.data)); events.close(); });
  // The server refuses a stream (429) when this session is open in too many tabs; the browser
  // then stops retrying: say what to do.
  events.addEventListener("error", () => {
    if (events.readyState === EventSource.CLOSED && !p.ended) {
      error("This page lost its live connection. If this study is open in other tabs or windows, close them, then reload this page.");
    }
  });

  // The state tag: "Connecting…" while this page's connection comes up, else the server's
  // plain label.
  function showLabel() {
    const active = p.state === "waiting" || p.state === "running";
    const connecting = active && p.pc !== null && p.connection !== "connected"
      && p.connection !== "failed" && p.connection !== "closed";
    p.label = connecting ? "Connecting…" : p.serverLabel;
    $("call-state").textContent = p.label;
  }

  // ------------------------------------------------------------------ the call
  const MIC_WORDS = {
    blocked: "Your browser blocked the microphone. Click the microphone or lock icon next to the address bar, choose Allow, then press Start call again.",
    missing: "No microphone was found. Plug in a microphone or headset, then press Start call again.",
    unsupported: "This page cannot use the microphone here. Open the link in an up-to-date Chrome, Edge or Firefox.",
  };

  async function startCall() {
    error("");
    $("call-start").disabled = true;
    try {
      if (!p.stream) p.stream = await apex.microphone();
    } catch (err) {
      error(apex.micProblem(err, MIC_WORDS));
      $("call-start").disabled = false;
      return;
    }
    apex.closePeer(p.pc);
    const pc = new RTCPeerConnection({ iceServers: [] });
    p.pc = pc;
    p.connection = "new";
    showLabel();
    for (const track of p.stream.getAudioTracks()) pc.addTrack(track, p.stream);
    pc.addEventListener("track", (ev) => {
      if (!p.audio) p.audio = new Audio();
      p.audio.srcObject = ev.streams[0] || new MediaStream([ev.track]);
      p.audio.play().catch(() => { /* autoplay: starts on the next click */ });
    });
    pc.addEventListener("connectionstatechange", () => {
      if (pc !== p.pc) return;
      p.connection = pc.connectionState;
      $("connection").textContent = CONNECTION_WORDS[pc.connectionState] || "connecting…";
      showLabel();
      if (pc.connectionState === "failed" || pc.connectionState === "disconnected") {
        if (!p.ended) error("The connection dropped. " + (root.dataset.onDisconnect === "rejoin" ? "Press Rejoin call to continue." : ""));
        $("call-start").textContent = "Rejoin call";
        $("call-start").disabled = p.ended || root.dataset.onDisconnect !== "rejoin";
      }
    });
    try {
      const answer = await apex.offer(pc, base + "/offer", csrf);
      await pc.setRemoteDescription(answer);
    } catch (err) {
      error("Could not connect the call: " + err.message);
      $("call-start").disabled = false;
      p.connection = "failed";
      showLabel();
    }
  }

  function hangUpLocal() {
    apex.closePeer(p.pc);
    p.pc = null;
    apex.stopTracks(p.stream);
    p.stream = null;
    $("connection").textContent = "not connected";
    showLabel();
  }

  $("call-start").addEventListener("click", startCall);
  $("call-end-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    $("call-end").disabled = true;
    await fetch(base + "/end", { method: "POST", headers: { "X-CSRF-Token": csrf, "X-Requested-With": "fetch" } });
    hangUpLocal();
  });

  // The elapsed clock runs between the server's once-a-second updates.
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    if (p.state === "running") { p.elapsedMs += now - last; $("elapsed").textContent = clock(p.elapsedMs); }
    last = now;
  }, 250);

  // A reload of a running session rejoins it at once (the study may instead have ended it).
  if (p.state === "running" && root.dataset.onDisconnect === "rejoin") startCall();
})();
