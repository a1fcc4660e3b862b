// The dashboard's one script: it refreshes the open page's live part in place (keeping what
// the viewer typed, picked or opened), checks the selection boxes, asks before a delete, and
// checks JSON fields before an enqueue is sent. Everything works without it, less the refresh.
(function () {
  "use strict";

  var PAUSED_KEY = "jobs-dashboard-paused";
  var refreshes = 0;

  function paused() {
    try { return window.localStorage.getItem(PAUSED_KEY) === "1"; } catch (e) { return false; }
  }

  // A page does not refresh while a box of the selection is ticked or a field has focus: the
  // rows would move under the viewer's hand.
  function busy() {
    if (document.querySelector("input[type=checkbox][name=id]:checked")) return true;
    var active = document.activeElement;
    return !!(active && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName));
  }

  // A control's place on the page, the same in the page and in its fresh copy: its form (by
  // action and method), its name, and its value (a box) or its rank among its namesakes.
  function controlKeys(root) {
    var keys = new Map();
    var seen = {};
    root.querySelectorAll("input[name], select[name], textarea[name]").forEach(function (el) {
      var form = el.closest("form");
      var where = form ? (form.getAttribute("action") || "") + " " + (form.getAttribute("method") || "get") : "";
      var key = where + "|" + el.name;
      if (el.type === "checkbox" || el.type === "radio") {
        key += "=" + el.value;
      } else {
        seen[key] = (seen[key] || 0) + 1;
        key += "#" + seen[key];
      }
      keys.set(key, el);
    });
    return keys;
  }

  // Whether the viewer changed a control from what the page came with.
  function changed(el) {
    if (el.type === "hidden") return false;
    if (el.type === "checkbox" || el.type === "radio") return el.checked !== el.defaultChecked;
    if (el.tagName === "SELECT") {
      return Array.prototype.some.call(el.options, function (o) { return o.selected !== o.defaultSelected; });
    }
    return el.value !== el.defaultValue;
  }

  function carry(from, to) {
    if (from.type === "checkbox" || from.type === "radio") { to.checked = from.checked; return; }
    if (from.tagName === "SELECT") {
      Array.prototype.forEach.call(from.options, function (o, i) {
        if (to.options[i] && to.options[i].value === o.value) to.options[i].selected = o.selected;
      });
      return;
    }
    to.value = from.value;
  }

  // A section's key: its id, else its summary's words.
  function sectionKey(details) {
    if (details.id) return "#" + details.id;
    var summary = details.querySelector("summary");
    return summary ? summary.textContent.replace(/\s+/g, " ").trim() : "";
  }

  // What the viewer did to the page that the server's copy does not know, carried onto the
  // fresh copy: typed or picked values and opened or closed sections.
  function keepViewerState(live, fresh) {
    var freshControls = controlKeys(fresh);
    controlKeys(live).forEach(function (el, key) {
      var twin = freshControls.get(key);
      if (twin && changed(el)) carry(el, twin);
    });
    var open = {};
    live.querySelectorAll("details").forEach(function (d) { open[sectionKey(d)] = d.open; });
    fresh.querySelectorAll("details").forEach(function (d) {
      var key = sectionKey(d);
      if (Object.prototype.hasOwnProperty.call(open, key)) d.open = open[key];
    });
  }

  // Fetches the page again and swaps its live part in; `forced` (a test's or the viewer's own
  // request) ignores the pause toggle, never a field in use.
  function refresh(forced) {
    if (busy() || (!forced && (document.hidden || paused()))) return;
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (!html || busy()) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("live");
        var live = document.getElementById("live");
        if (!fresh || !live) return;
        keepViewerState(live, fresh);
        live.replaceWith(fresh);
        wire();
        refreshes += 1;
        document.body.setAttribute("data-refreshed", String(refreshes));
      })
      .catch(function () { /* the next tick tries again */ });
  }

  function wireLiveToggle() {
    var toggle = document.querySelector("[data-live-toggle]");
    if (!toggle) return;
    var show = function () {
      var off = paused();
      toggle.setAttribute("aria-pressed", off ? "false" : "true");
      toggle.classList.toggle("off", off);
      toggle.textContent = off ? "Live updates off" : "Live";
      toggle.title = off ? "Turn live updates back on" : "Pause live updates";
    };
    toggle.addEventListener("click", function () {
      try { window.localStorage.setItem(PAUSED_KEY, paused() ? "0" : "1"); } catch (e) { /* private mode */ }
      show();
    });
    show();
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
    wireLiveToggle();
    // `jobs:refresh` refreshes at once (the browser tests send it rather than wait).
    document.addEventListener("jobs:refresh", function () { refresh(true); });
    var seconds = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
    if (seconds > 0) window.setInterval(function () { refresh(false); }, seconds * 1000);
  });
})();
