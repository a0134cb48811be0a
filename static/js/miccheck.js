// Microphone check: level meter (AnalyserNode), a 3-second test recording (MediaRecorder)
// played back here and never uploaded, and clear guidance when the browser blocks the
// microphone or none is plugged in. Then the headphone check: a test sound made here with
// WebAudio (three beeps, no file), which the participant confirms they heard in their
// headphones; when the microphone is on and picks the beeps up loudly, the page warns that
// speakers may be in use (the agent would hear itself). Continue needs the test recording,
// the test sound and the confirmation. Exposes window.micCheck for tests.
(function () {
  "use strict";
  const root = document.getElementById("miccheck");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const check = {
    state: "idle", peak: 0, level: 0, recordedBytes: 0, playedBack: false, error: null,
    recorded: false, soundPlayed: false, soundPeak: null, soundBaseline: null,
    speakerWarning: false, headphones: false,
  };
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
      check.level = level;
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
      stream = await apex.microphone();
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
      check.recorded = true;
      ready();
    };
    $("mic-record").disabled = true;
    check.state = "recording";
    $("mic-status").textContent = "Recording… say a sentence or two.";
    rec.start();
    setTimeout(() => rec.stop(), 3000);
  });

  // ------------------------------------------------------------------ headphones
  function ready() {
    const box = $("headphones-confirm");
    box.disabled = !check.soundPlayed;
    check.headphones = box.checked && !box.disabled;
    $("mic-continue").disabled = !(check.recorded && check.headphones);
  }

  function beeps() {
    // Three 0.25 s beeps (660, 880, 660 Hz) at a moderate level, with soft edges.
    const ctx = new (window.AudioContext || window.webkitAudioContext)();
    const t0 = ctx.currentTime + 0.05;
    [660, 880, 660].forEach((hz, i) => {
      const osc = ctx.createOscillator();
      const gain = ctx.createGain();
      const at = t0 + i * 0.4;
      osc.frequency.value = hz;
      gain.gain.setValueAtTime(0, at);
      gain.gain.linearRampToValueAtTime(0.25, at + 0.02);
      gain.gain.setValueAtTime(0.25, at + 0.23);
      gain.gain.linearRampToValueAtTime(0, at + 0.25);
      osc.connect(gain).connect(ctx.destination);
      osc.start(at);
      osc.stop(at + 0.26);
    });
    ctx.resume().catch(() => {});
    return { ctx, seconds: 1.35 };
  }

  $("sound-play").addEventListener("click", () => {
    $("sound-play").disabled = true;
    $("sound-warning").hidden = true;
    $("sound-status").textContent = "Playing…";
    const baseline = check.level;
    let loudest = 0;
    const listen = stream ? setInterval(() => { loudest = Math.max(loudest, check.level); }, 30) : null;
    let played;
    try {
      played = beeps();
    } catch (err) {
      $("sound-status").textContent = "This browser cannot play the test sound. Try an up-to-date Chrome, Edge or Firefox.";
      $("sound-play").disabled = false;
      return;
    }
    setTimeout(() => {
      if (listen !== null) {
        clearInterval(listen);
        check.soundBaseline = baseline;
        check.soundPeak = loudest;
        // Loud beeps in the microphone: the sound came out of speakers, not headphones.
        check.speakerWarning = loudest > 0.25 && loudest > 4 * Math.max(baseline, 0.02);
      }
      played.ctx.close().catch(() => {});
      check.soundPlayed = true;
      $("sound-play").disabled = false;
      $("sound-play").textContent = "Play it again";
      $("sound-status").textContent = "Did you hear three beeps in your headphones? Then tick the box below.";
      if (check.speakerWarning) {
        const w = $("sound-warning");
        w.textContent = "Your microphone picked up the beeps loudly: you may be using speakers. Please put on headphones (the assistant must not hear its own voice), then play the sound again.";
        w.hidden = false;
      }
      ready();
    }, played.seconds * 1000);
  });

  $("headphones-confirm").addEventListener("change", ready);

  // Leaving the page turns the microphone off.
  window.addEventListener("pagehide", () => apex.stopTracks(stream));
})();
