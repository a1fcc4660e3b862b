// The dashboard's one script: it refreshes the open page's live part in place, checks the
// selection boxes, asks before a delete, and checks JSON fields before an enqueue is sent.
// Everything works without it, less the refresh.
(function () {
  "use strict";

  // A page refreshes while nobody is using it: not while a box is ticked or a field has focus.
  function busy() {
    if (document.querySelector("input[type=checkbox][name=id]:checked")) return true;
    var active = document.activeElement;
    return !!(active && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName));
  }

  function refresh() {
    if (document.hidden || busy()) return;
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (!html || busy()) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("live");
        var live = document.getElementById("live");
        if (fresh && live) { live.replaceWith(fresh); wire(); }
      })
      .catch(function () { /* the next tick tries again */ });
  }

  function wire() {
    var all = document.querySelector("[data-select-all]");
    if (all) {
      all.addEventListener("change", function () {
        document.querySelectorAll("input[type=checkbox][name=id]").forEach(function (box) {
          box.checked = all.checked;
        });
      });
    }
    document.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        if (!window.confirm(form.getAttribute("data-confirm"))) event.preventDefault();
      });
    });
    document.querySelectorAll("form.bulk button[value=delete]").forEach(function (button) {
      button.addEventListener("click", function (event) {
        if (!window.confirm("Delete the selected jobs and their steps?")) event.preventDefault();
      });
    });
    document.querySelectorAll("form[data-validate]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        var bad = null;
        form.querySelectorAll("textarea[data-json]").forEach(function (area) {
          area.setCustomValidity("");
          if (area.value.trim() === "" && !area.required) return;
          try { JSON.parse(area.value); } catch (e) { area.setCustomValidity("not valid JSON"); bad = bad || area; }
        });
        if (bad || !form.checkValidity()) { event.preventDefault(); form.reportValidity(); }
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    wire();
    var seconds = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
    if (seconds > 0) window.setInterval(refresh, seconds * 1000);
  });
})();
