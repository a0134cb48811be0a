// The run list: tick two runs, then "Compare the two ticked runs" (enabled when exactly two are
// ticked; the server refuses any other number with a clear 400 when scripts are off). The
// ticked runs are remembered while the search and filters swap the results in (HTMX): a ticked
// run the new results do not show is kept as a hidden field of the compare form and named in
// the hint. Delegated on document, so it keeps working after each swap.
(function () {
  "use strict";
  const picked = [];

  function sync() {
    const form = document.getElementById("pick-form");
    if (!form) return;
    const boxes = Array.from(form.querySelectorAll("input[type=checkbox][name=run]"));
    const shown = new Set(boxes.map((b) => b.value));
    boxes.forEach((b) => {
      b.checked = picked.includes(b.value);
      b.closest("tr").classList.toggle("picked", b.checked);
    });
    form.querySelectorAll("input[type=hidden][name=run]").forEach((h) => h.remove());
    const hidden = picked.filter((p) => !shown.has(p));
    hidden.forEach((p) => {
      const h = document.createElement("input");
      h.type = "hidden"; h.name = "run"; h.value = p;
      form.appendChild(h);
    });
    const button = document.getElementById("compare-picked");
    if (button) button.disabled = picked.length !== 2;
    const hint = document.getElementById("pick-hint");
    if (hint) {
      const more = hidden.length ? ` (ticked, not in these results: ${hidden.join(", ")})` : "";
      hint.textContent = (picked.length === 2 ? "Two runs ticked."
        : picked.length < 2 ? `Tick ${2 - picked.length} more run${picked.length === 1 ? "" : "s"}.`
        : `${picked.length} runs ticked: untick ${picked.length - 2}.`) + more;
    }
  }

  document.addEventListener("change", (e) => {
    const box = e.target;
    if (!(box instanceof HTMLInputElement) || box.type !== "checkbox" || box.name !== "run") return;
    const at = picked.indexOf(box.value);
    if (box.checked && at < 0) picked.push(box.value);
    if (!box.checked && at >= 0) picked.splice(at, 1);
    sync();
  });
  document.addEventListener("DOMContentLoaded", () => {
    // A checkbox the browser restored (back button) counts as ticked.
    document.querySelectorAll("#pick-form input[type=checkbox][name=run]:checked")
      .forEach((b) => picked.push(b.value));
    sync();
  });
  document.addEventListener("htmx:afterSwap", sync);
})();
