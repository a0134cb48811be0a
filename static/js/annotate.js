// Study A annotator page: every rating is saved the moment it is given (a JSON POST with the
// session's CSRF header), the comment as it is typed, and every action has a key (shown on the
// page). Saves go out one after another, in the order given, so a quick change of mind
// (3 then 4) can never be overtaken by the older value. Navigation waits for pending saves.
(() => {
  "use strict";

  const csrf = (() => {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRF-Token"] || "";
    } catch (e) {
      return "";
    }
  })();

  // The overview page: confirm before the ratings are locked.
  const submitForm = document.getElementById("ann-submit");
  if (submitForm) {
    submitForm.addEventListener("submit", (e) => {
      if (!window.confirm(submitForm.dataset.confirm)) e.preventDefault();
    });
  }

  const root = document.getElementById("annotate");
  if (!root) return;

  const audio = document.getElementById("ann-audio");
  const statusEl = document.getElementById("ann-status");
  const comment = document.getElementById("ann-comment");
  const guidance = document.getElementById("ann-guidance");
  const locked = root.dataset.locked === "true";
  const listenNote = document.getElementById("ann-listen");
  const state = {
    rating: JSON.parse(root.dataset.rating || "{}"),
    saved: 0, errors: 0, pending: 0, lastError: null, lastSaved: null,
    played: root.dataset.played === "true",
  };
  window.annotate = state;  // read by the browser test

  const KEYS = {
    "1": ["fidelity", 1], "2": ["fidelity", 2], "3": ["fidelity", 3],
    "4": ["fidelity", 4], "5": ["fidelity", 5],
    "a": ["naturalness", 1], "s": ["naturalness", 2], "d": ["naturalness", 3],
    "f": ["naturalness", 4], "g": ["naturalness", 5],
    "y": ["leakage", 1], "n": ["leakage", 0],
  };

  function show(text, kind) {
    statusEl.textContent = text;
    statusEl.className = "ann-status" + (kind ? " " + kind : "");
  }

  function mark(dim, value) {
    root.querySelectorAll(`button[data-dim="${dim}"]`).forEach((b) => {
      b.setAttribute("aria-pressed", String(Number(b.dataset.value) === value));
    });
  }

  function applySaved(body) {
    state.rating = body.rating;
    for (const dim of ["fidelity", "naturalness", "leakage"]) mark(dim, body.rating[dim]);
    document.getElementById("ann-done").textContent = body.done;
    document.getElementById("ann-progress").value = body.done;
  }

  let chain = Promise.resolve();

  function post(change) {
    return apex.postJSON(root.dataset.rateUrl, change, csrf);
  }

  function save(change) {
    if (locked) {
      show("Locked: your ratings can no longer change.", "error");
      return chain;
    }
    state.pending += 1;
    show("Saving…", "busy");
    chain = chain.then(() => post(change)).then((body) => {
      applySaved(body);
      state.saved += 1;
      state.lastSaved = change;
      show(body.complete ? "Saved: this item is done" : "Saved", "ok");
    }).catch((err) => {
      state.errors += 1;
      state.lastError = String(err.message || err);
      show("Not saved: " + state.lastError, "error");
      mark("fidelity", state.rating.fidelity);
      mark("naturalness", state.rating.naturalness);
      mark("leakage", state.rating.leakage);
    }).finally(() => { state.pending -= 1; });
    return chain;
  }

  // Listen before rating: the rating buttons stay disabled until the whole clip has played
  // once (every part of it, not a seek to the end); the server is told, and checks it too.
  function heardAll() {
    const d = audio.duration;
    if (!isFinite(d) || d <= 0) return false;
    let heard = 0;
    for (let i = 0; i < audio.played.length; i += 1) {
      heard += audio.played.end(i) - audio.played.start(i);
    }
    return heard >= d - 0.25;
  }

  function openRatings() {
    state.played = true;
    if (listenNote) listenNote.hidden = true;
    if (!locked) root.querySelectorAll("button[data-dim]").forEach((b) => { b.disabled = false; });
  }

  function reportPlayed() {
    if (state.played || locked) return;
    if (!heardAll()) {
      show("Play the whole clip once to open the ratings (R replays from the start).", "error");
      return;
    }
    apex.postJSON(root.dataset.playedUrl, {}, csrf).then(() => {
      openRatings();
      show("Heard: you can rate now", "ok");
    }).catch((err) => show("Not recorded: " + (err.message || err), "error"));
  }
  audio.addEventListener("ended", reportPlayed);

  function rate(dim, value) {
    if (!state.played && !locked) {
      show("Listen to the whole clip first (Space plays it).", "error");
      return;
    }
    mark(dim, value);  // shown at once; undone if the save fails
    save({[dim]: value});
  }

  // Comment: saved after a pause in typing and when the box is left.
  let commentTimer = null;
  let commentSent = comment.value;
  function flushComment() {
    if (commentTimer) { clearTimeout(commentTimer); commentTimer = null; }
    if (locked || comment.value === commentSent) return chain;
    commentSent = comment.value;
    return save({comment: comment.value});
  }
  comment.addEventListener("input", () => {
    if (commentTimer) clearTimeout(commentTimer);
    commentTimer = setTimeout(flushComment, 800);
  });
  comment.addEventListener("blur", flushComment);

  function go(url) {
    if (!url) return;
    flushComment();
    show("Saving…", "busy");
    chain.finally(() => { window.location.assign(url); });
  }

  function playPause() {
    if (audio.paused) {
      audio.play().catch((err) => show("Could not play: " + err.message, "error"));
    } else {
      audio.pause();
    }
  }

  function replay() {
    audio.currentTime = 0;
    audio.play().catch((err) => show("Could not play: " + err.message, "error"));
  }

  root.querySelectorAll("button[data-dim]").forEach((b) => {
    b.addEventListener("click", () => {
      b.blur();  // so that Space plays the audio instead of pressing this button again
      rate(b.dataset.dim, Number(b.dataset.value));
    });
  });
  document.getElementById("ann-play").addEventListener("click", (e) => {
    e.currentTarget.blur();
    playPause();
  });
  document.getElementById("ann-replay").addEventListener("click", (e) => {
    e.currentTarget.blur();
    replay();
  });
  root.querySelectorAll(".ann-nav a").forEach((a) => {
    a.addEventListener("click", (e) => { e.preventDefault(); go(a.getAttribute("href")); });
  });

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;  // leave browser shortcuts alone
    const t = e.target;
    const typing = t && (t.tagName === "TEXTAREA" || t.tagName === "INPUT" ||
                         t.tagName === "SELECT" || t.isContentEditable);
    if (typing) {
      if (e.key === "Escape") t.blur();
      return;
    }
    const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if (key in KEYS) {
      e.preventDefault();
      rate(KEYS[key][0], KEYS[key][1]);
    } else if (key === " " || key === "Spacebar") {
      e.preventDefault();
      playPause();
    } else if (key === "r") {
      e.preventDefault();
      replay();
    } else if (key === "ArrowRight" || key === ".") {
      e.preventDefault();
      go(root.dataset.nextUrl || root.dataset.overviewUrl);
    } else if (key === "ArrowLeft" || key === ",") {
      e.preventDefault();
      go(root.dataset.prevUrl);
    } else if (key === "c") {
      e.preventDefault();
      comment.focus();
    } else if (key === "h") {
      e.preventDefault();
      guidance.open = !guidance.open;
    } else if (key === "o") {
      e.preventDefault();
      go(root.dataset.overviewUrl);
    }
  });

  // A reload or a closed tab still sends a comment typed in the last moment.
  window.addEventListener("pagehide", () => {
    if (locked || comment.value === commentSent) return;
    commentSent = comment.value;
    apex.postJSON(root.dataset.rateUrl, {comment: comment.value}, csrf, {keepalive: true})
      .catch(() => {});
  });
})();
