// Helpers the page scripts share, as window.apex. Loaded (deferred) by base.html and
// participant_base.html before any page script, which deferred scripts run after in order.
(function () {
  "use strict";

  // The microphone as the agent should hear it: raw, without the browser's voice processing.
  const MIC = Object.freeze({ echoCancellation: false, noiseSuppression: false, autoGainControl: false });

  function microphone() {
    return navigator.mediaDevices.getUserMedia({ audio: MIC, video: false });
  }

  // Why the microphone did not start, in the page's own words: words.blocked (the browser or
  // the person refused it), words.missing (none plugged in), words.unsupported (no
  // mediaDevices on this page), else the error's name.
  function micProblem(err, words) {
    const name = err && err.name;
    if (name === "NotAllowedError" || name === "SecurityError") return words.blocked;
    if (name === "NotFoundError" || name === "OverconstrainedError") return words.missing;
    if (!navigator.mediaDevices) return words.unsupported;
    return "The microphone could not be started (" + (name || err) + ").";
  }

  function stopTracks(stream) {
    if (stream) for (const t of stream.getTracks()) t.stop();
  }

  function closePeer(pc) {
    if (pc) { try { pc.close(); } catch (e) { /* already closed */ } }
  }

  // Text as HTML.
  function esc(s) { const d = document.createElement("div"); d.textContent = String(s); return d.innerHTML; }

  // An agent.act event in a few words: act(field)(action).
  function actLabel(e) {
    return e.act + (e.field ? "(" + e.field + ")" : "") + (e.action ? "(" + e.action + ")" : "");
  }

  // The element matching `selector` that an event happened in (itself or an ancestor), or null.
  function closest(ev, selector) {
    return ev.target instanceof Element ? ev.target.closest(selector) : null;
  }

  // POST `body` as JSON with the session's CSRF token; resolves to the answer's JSON (null when
  // it has none), or fails with the server's error (or its status).
  async function postJSON(url, body, csrf, options) {
    const res = await fetch(url, Object.assign({
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    }, options));
    let answer = null;
    try { answer = await res.json(); } catch (e) { answer = null; }
    if (!res.ok) throw new Error(answer && answer.error ? answer.error : `the server answered ${res.status}`);
    return answer;
  }

  // Resolves when the connection has gathered its ICE candidates (or after 3 s).
  function iceGathered(pc) {
    if (pc.iceGatheringState === "complete") return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        if (pc.iceGatheringState !== "complete") return;
        pc.removeEventListener("icegatheringstatechange", done);
        resolve();
      };
      pc.addEventListener("icegatheringstatechange", done);
      setTimeout(resolve, 3000);
    });
  }

  // The WebRTC offer (with every ICE candidate) POSTed to `url`; resolves to the server's answer
  // ({type, sdp} and whatever else the server adds), which the caller sets as the remote side.
  async function offer(pc, url, csrf) {
    await pc.setLocalDescription(await pc.createOffer());
    await iceGathered(pc);
    return postJSON(url, { sdp: pc.localDescription.sdp, type: pc.localDescription.type }, csrf);
  }

  window.apex = { MIC, microphone, micProblem, stopTracks, closePeer, esc, actLabel, closest, postJSON, iceGathered, offer };
})();
