// The compare page: each row's time button seeks its run's player (A or B) to that moment
// and plays it; while a player plays, the row of its latest step is outlined.
(function () {
  "use strict";
  const players = { a: document.getElementById("audio-a"), b: document.getElementById("audio-b") };
  const rows = Array.from(document.querySelectorAll("#cmp-rows tbody tr"));

  function seek(side, t) {
    const audio = players[side];
    if (!audio) return;
    const go = () => {
      audio.currentTime = t;
      const played = audio.play();
      if (played && played.catch) played.catch(() => {});
    };
    if (audio.readyState >= 1) go(); else audio.addEventListener("loadedmetadata", go, { once: true });
    if (audio.readyState < 1) audio.load();
  }

  document.addEventListener("click", (e) => {
    const button = apex.closest(e, "button.seek");
    if (!button) return;
    seek(button.dataset.side, parseFloat(button.dataset.t));
  });

  ["a", "b"].forEach((side) => {
    const audio = players[side];
    if (!audio) return;
    const attr = side === "a" ? "ta" : "tb";
    audio.addEventListener("timeupdate", () => {
      const ms = audio.currentTime * 1000;
      let at = null;
      rows.forEach((row) => {
        const t = row.dataset[attr];
        if (t !== undefined && Number(t) <= ms) at = row;
      });
      rows.forEach((row) => row.classList.toggle(`at-${side}`, row === at));
    });
  });
  window.compareReady = true;
})();
