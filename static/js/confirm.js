// Researcher pages: a form marked data-irreversible="question" (launch a study, close it,
// replace its plan) asks for confirmation before it is submitted. A script file rather than
// an inline onsubmit handler, so a Content-Security-Policy without 'unsafe-inline' keeps it.
(function () {
  "use strict";
  document.addEventListener("submit", (e) => {
    const form = e.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.irreversible) return;
    if (!window.confirm(form.dataset.irreversible)) {
      e.preventDefault();
      e.stopImmediatePropagation();
    }
  }, true);
})();
