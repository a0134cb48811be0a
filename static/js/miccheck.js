// Microphone check: level meter (AnalyserNode), a 3-second test recording (MediaRecorder)
// played back here and never uploaded, and clear guidance when the browser blocks the
// microphone or none is plugged in. Exposes window.micCheck for tests.
(function () {
  "use strict";
  const root = document.getElementById("miccheck");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const check = { state: "idle", peak: 0, recordedBytes: 0, playedBack: false, error: null };
  window.micCheck = check;
  let stream = null;

  function fail(name, text) {
    check.state = "error";
    check.error = name;
    const e = $("mic-error");
    e.textContent = text;
    e.hidden = false;
  }

  function explain(err) {
    const name = (err && err.name) || "Error";
    if (name === "NotAllowedError" || name === "SecurityError") {
      fail(name, "Your browser blocked the microphone. Click the microphone or lock icon next to the address bar, choose Allow for this site, then press “Turn on my microphone” again. On a Mac, also check System Settings › Privacy & Security › Microphone.");
    } else if (name === "NotFoundError" || name === "OverconstrainedError") {
      fail(name, "No microphone was found. Plug in a microphone or a headset with a microphone, then press “Turn on my microphone” again.");
    } else if (name === "NotReadableError") {
      fail(name, "The microphone is in use by another program (a call or a recorder). Close it, then try again.");
    } else {
      fail(name, "The microphone could not be started (" + name + "). Try an up-to-date Chrome, Edge or Firefox.");
    }
  }

  function meter(s) {
    const ctx = new (window.AudioContext || window.webkitAudioContext)();
    const analyser = ctx.createAnalyser();
    analyser.fftSize = 1024;
    ctx.createMediaStreamSource(s).connect(analyser);
    const data = new Float32Array(analyser.fftSize);
    function tick() {
      analyser.getFloatTimeDomainData(data);
      let sum = 0;
      for (const v of data) sum += v * v;
      const level = Math.min(1, Math.sqrt(sum / data.length) * 4);
      check.peak = Math.max(check.peak, level);
      $("mic-level").value = level;
      if (check.peak > 0.05) $("mic-level-hint").textContent = "We can hear you.";
      requestAnimationFrame(tick);
    }
    ctx.resume().catch(() => {});
    tick();
  }

  $("mic-start").addEventListener("click", async () => {
    $("mic-error").hidden = true;
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      fail("NoMediaDevices", "This page cannot use the microphone here. Open the link in an up-to-date Chrome, Edge or Firefox.");
      return;
    }
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false }, video: false });
    } catch (err) {
      explain(err);
      return;
    }
    check.state = "listening";
    $("mic-start").disabled = true;
    $("mic-record").disabled = false;
    $("mic-status").textContent = "Microphone on. Now record a short test and listen to it.";
    meter(stream);
  });

  $("mic-record").addEventListener("click", () => {
    if (!stream) return;
    const chunks = [];
    const rec = new MediaRecorder(stream);
    rec.ondataavailable = (e) => { if (e.data && e.data.size) chunks.push(e.data); };
    rec.onstop = () => {
      const blob = new Blob(chunks, { type: rec.mimeType || "audio/webm" });
      check.recordedBytes = blob.size;
      const audio = $("mic-playback");
      audio.src = URL.createObjectURL(blob);  // stays in this browser
      audio.hidden = false;
      check.state = "recorded";
      $("mic-status").textContent = "Playing your test back. Did you hear yourself clearly?";
      audio.onended = () => { check.playedBack = true; };
      audio.play().catch(() => { $("mic-status").textContent = "Press play to hear your test."; });
      $("mic-record").disabled = false;
      $("mic-continue").disabled = false;
    };
    $("mic-record").disabled = true;
    check.state = "recording";
    $("mic-status").textContent = "Recording… say a sentence or two.";
    rec.start();
    setTimeout(() => rec.stop(), 3000);
  });

  // Leaving the page turns the microphone off.
  window.addEventListener("pagehide", () => { if (stream) for (const t of stream.getTracks()) t.stop(); });
})();
