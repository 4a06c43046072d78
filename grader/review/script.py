"""The page's own stylesheet and script, served from `/static/`: no build step, no outside address.

The script does four things, each on the page that has its element:
- the ranking: a column's head sorts it, the filter box and the decision menu hide rows;
- the scoring sheet: every change is kept in this browser (localStorage, by round and candidate) at once and
  saved to the server shortly after (a debounced POST of the same form the Save button posts); what was
  typed is dropped from the browser only once the server confirms it. A refused save (another reviewer saved
  first) keeps it and says who saved; on the next visit the page offers it back, never applies it silently;
- live exercises: Start posts the exercise, then the run's progress is polled until its verdict;
- revealing a name asks first.
"""

from __future__ import annotations

from grader.reports.page_style import CSS as REPORT_CSS

__all__ = ["CSS", "SCRIPT"]

CSS = (
    REPORT_CSS
    + """
header, main { max-width: none; }
nav.top { display: flex; gap: 18px; align-items: center; padding: 8px 20px; background: #24292f; }
nav.top a { color: #fff; text-decoration: none; font-weight: 600; }
nav.top .reviewer { margin-left: auto; color: #d0d7de; font-size: 13px; }
nav.top input { font: inherit; width: 12em; padding: 1px 4px; }
.banner.blind { background: #e8eefc; color: #1f3a8a; font-size: 14px; padding: 6px 20px; }
.muted, .small { color: var(--muted); font-size: 13px; }
.inline { display: inline-block; margin: 4px 0; }
.filters input { width: 24em; font: inherit; padding: 2px 6px; }
.table-wrap-wide { overflow: auto; }
#ranking th[data-sort], #items th[data-sort] { cursor: pointer; user-select: none; }
th[data-dir=asc]::after { content: " \\25B2"; } th[data-dir=desc]::after { content: " \\25BC"; }
.decision { font-weight: 700; } .decision.advance { color: var(--passed); } .decision.reject { color: var(--failed); }
.decision.hold { color: var(--inconclusive); }
header.candidate { display: flex; flex-wrap: wrap; align-items: baseline; gap: 6px 20px; }
header.candidate h1 { margin: 10px 0 4px; }
.facts-line { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 0; color: var(--muted); }
.facts-line b { color: var(--ink); }
main.desk { display: grid; grid-template-columns: minmax(0, 3fr) minmax(380px, 2fr); gap: 18px;
  height: calc(100vh - 110px); min-height: 480px; }
main.desk > section { overflow: auto; min-height: 0; }
.reader { display: flex; flex-direction: column; }
.reader iframe { width: 100%; flex: 1; min-height: 400px; border: 1px solid var(--line); border-radius: 6px; }
table.sheet { table-layout: fixed; }
table.sheet th:first-child { width: 104px; } table.sheet th:last-child { width: 64px; }
table.sheet td { padding: 3px 6px; overflow-wrap: anywhere; }
td.similar { min-width: 11em; }
td.nowrap, .nowrap { white-space: nowrap; }
.tabs { display: flex; gap: 14px; margin: 4px 0 6px; font-size: 14px; }
.tabs .tab { font-weight: 700; }
.side h2 { margin-top: 10px; }
table.sheet .item { margin-bottom: 4px; }
table.sheet textarea, fieldset textarea { width: 100%; font: inherit; font-size: 13px; }
fieldset.decision { border: 1px solid var(--line); border-radius: 6px; }
fieldset.decision .choices { display: flex; gap: 14px; margin-bottom: 6px; }
[data-state=saved] { color: var(--passed); }
[data-state=pending], [data-state=running] { color: var(--inconclusive); }
[data-state=conflict], [data-state=error], [data-state=failed] { color: var(--failed); font-weight: 600; }
[data-state=passed] { color: var(--passed); font-weight: 600; }
.offer { border: 2px solid var(--inconclusive); background: var(--inconclusive-bg); border-radius: 6px;
  padding: 6px 10px; margin: 6px 0; }
.offer button { margin-right: 8px; }
#live-log { max-height: 260px; overflow: auto; font-size: 12px; }
p.message { font-size: 17px; }
"""
)

SCRIPT = r"""
(function () {
  "use strict";
  var who = document.getElementById("reviewer");
  var fallback = document.body.dataset.reviewer || "";
  if (who) {
    who.value = localStorage.getItem("grader-review:reviewer") || fallback;
    who.addEventListener("change", function () {
      localStorage.setItem("grader-review:reviewer", who.value.trim());
    });
  }
  function reviewer() { return (who && who.value.trim()) || fallback; }

  ranking(document.getElementById("ranking") || document.getElementById("items"));
  sheet(document.getElementById("sheet"));
  live(document.getElementById("live"));
  reveal(document.getElementById("reveal"));

  function ranking(table) {
    if (!table || !table.tBodies.length) return;
    var body = table.tBodies[0];
    Array.prototype.forEach.call(table.querySelectorAll("th[data-sort]"), function (th) {
      th.addEventListener("click", function () {
        var numeric = th.dataset.sort === "num", column = th.cellIndex;
        var ascending = th.dataset.dir !== "asc";
        Array.prototype.forEach.call(table.querySelectorAll("th"), function (h) { delete h.dataset.dir; });
        th.dataset.dir = ascending ? "asc" : "desc";
        function keyOf(row) {
          var cell = row.cells[column];
          var key = cell.dataset.key !== undefined ? cell.dataset.key : cell.textContent.trim();
          return numeric ? (parseFloat(key) || 0) : key.toLowerCase();
        }
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = keyOf(a), y = keyOf(b);
          return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
    var filter = document.getElementById("filter"), decision = document.getElementById("decision-filter");
    function apply() {
      var q = filter ? filter.value.trim().toLowerCase() : "", d = decision ? decision.value : "";
      Array.prototype.forEach.call(body.rows, function (r) {
        r.hidden = !((!q || r.textContent.toLowerCase().indexOf(q) >= 0) && (!d || r.dataset.decision === d));
      });
    }
    if (filter) filter.addEventListener("input", apply);
    if (decision) decision.addEventListener("change", apply);
  }

  function sheet(form) {
    if (!form) return;
    var status = document.getElementById("sheet-status");
    var key = "grader-review:" + form.dataset.round + ":" + form.dataset.candidate;
    var timer = null, busy = false, again = false, blocked = false;
    function fields() {
      var out = {};
      new FormData(form).forEach(function (v, k) { if (k !== "version" && k !== "reviewer") out[k] = String(v); });
      return out;
    }
    function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }
    function say(state, text) { status.dataset.state = state; status.textContent = text; }
    function put(values) {
      Object.keys(values).forEach(function (name) {
        var el = form.elements[name];
        if (el) el.value = values[name];
      });
    }
    var base = fields();  // the sheet as the server has it, as far as this page knows
    function remember() {
      localStorage.setItem(key, JSON.stringify({version: form.elements.version.value, base: base, values: fields()}));
    }
    function schedule(ms) { clearTimeout(timer); timer = setTimeout(save, ms); }
    function changed() {
      remember();
      if (blocked) return;
      say("pending", "Unsaved changes (kept in this browser)...");
      schedule(600);
    }
    function offer(kept) {
      var box = document.createElement("div");
      box.className = "offer";
      box.id = "sheet-offer";
      box.textContent = "This browser kept what you typed here before the sheet changed on the server " +
        "(someone saved since). ";
      function button(text, id, act) {
        var b = document.createElement("button");
        b.type = "button"; b.textContent = text; b.id = id;
        b.addEventListener("click", act);
        box.appendChild(b);
      }
      var mine = {};  // only what was changed on this page: the rest is the server's, as saved since
      Object.keys(kept.values).forEach(function (name) {
        if (!kept.base || kept.base[name] !== kept.values[name]) mine[name] = kept.values[name];
      });
      button("Put mine back (Save then writes it over theirs)", "offer-mine", function () {
        put(mine); blocked = false; box.remove(); remember();
        say("pending", "Yours are back in the form; press Save to record them over the saved sheet.");
      });
      button("Discard mine", "offer-discard", function () {
        localStorage.removeItem(key); box.remove(); say("idle", "Discarded what this browser kept.");
      });
      form.insertBefore(box, form.firstChild);
    }
    async function save() {
      clearTimeout(timer);
      if (busy) { again = true; return; }
      var values = fields();
      if (values.decision && !(values.reason || "").trim()) {
        say("error", "reason: a decision needs its reason (not saved yet)");
        return;
      }
      busy = true;
      var body = new URLSearchParams(new FormData(form));
      body.set("reviewer", reviewer());
      try {
        var answer = await fetch(form.action, {method: "POST", body: body, credentials: "same-origin",
                                               headers: {"Accept": "application/json"}});
        var data = await answer.json().catch(function () { return {message: "refused (" + answer.status + ")"}; });
        if (answer.ok) {
          form.elements.version.value = data.version;
          base = values;
          if (same(fields(), values)) localStorage.removeItem(key); else remember();
          var shown = document.getElementById("interview-points");
          if (shown && data.interview) shown.textContent = data.interview;
          say("saved", data.message);
        } else if (answer.status === 409) {
          blocked = true; remember(); say("conflict", data.message);
        } else {
          say("error", data.message || ("refused (" + answer.status + ")"));
        }
      } catch (err) {
        say("error", "Not saved: the server did not answer. What you typed stays in this browser.");
      } finally {
        busy = false;
        if (again && !blocked) { again = false; schedule(0); }
      }
    }
    var server = base;
    var kept = null;
    try { kept = JSON.parse(localStorage.getItem(key) || "null"); } catch (err) { kept = null; }
    if (kept && kept.values) {
      if (same(kept.values, server)) {
        localStorage.removeItem(key);
      } else if (kept.version === form.elements.version.value) {
        put(kept.values);
        say("pending", "Restored what you typed before the page closed; saving...");
        schedule(0);
      } else {
        offer(kept);
      }
    }
    form.addEventListener("input", changed);
    form.addEventListener("change", changed);
    form.addEventListener("submit", function (ev) { ev.preventDefault(); blocked = false; save(); });
  }

  function live(form) {
    if (!form) return;
    var state = document.getElementById("live-state"), log = document.getElementById("live-log");
    var start = form.querySelector("button");
    function show(s, text) { state.dataset.state = s; state.textContent = text; }
    function follow(job) {
      var next = 0, polls = 0;
      log.hidden = false; log.textContent = ""; start.disabled = true;
      show("running", "Starting...");
      async function poll() {
        var data;
        try {
          var answer = await fetch(form.action + "/" + job + "?since=" + next, {headers: {"Accept": "application/json"}});
          data = await answer.json();
          if (!answer.ok) throw new Error(data.message || answer.status);
        } catch (err) {
          start.disabled = false; show("error", "Lost the run's progress: " + err.message); return;
        }
        if (data.lines.length) { log.textContent += data.lines.join("\n") + "\n"; log.scrollTop = log.scrollHeight; }
        next = data.next;
        if (data.state === "running" && ++polls < 2400) {
          show("running", "Running " + data.exercise + " (" + data.elapsed + " s)");
          setTimeout(poll, 700);
          return;
        }
        start.disabled = false;
        show(data.state, data.verdict);
        if (data.report) {
          var a = document.createElement("a");
          a.href = data.report; a.target = "_blank"; a.id = "live-report"; a.textContent = " (its report)";
          state.appendChild(a);
        }
      }
      poll();
    }
    form.addEventListener("submit", async function (ev) {
      ev.preventDefault();
      var answer = await fetch(form.action, {method: "POST", body: new URLSearchParams(new FormData(form)),
                                             credentials: "same-origin", headers: {"Accept": "application/json"}});
      var data = await answer.json().catch(function () { return {}; });
      if (!answer.ok) { show("error", data.message || ("refused (" + answer.status + ")")); return; }
      follow(data.job);
    });
    if (form.dataset.job) follow(form.dataset.job);
  }

  function reveal(form) {
    if (!form) return;
    form.addEventListener("submit", function (ev) {
      if (!window.confirm("Reveal this candidate's name? It is recorded: who revealed it, and when.")) {
        ev.preventDefault();
        return;
      }
      var field = document.createElement("input");
      field.type = "hidden"; field.name = "reviewer"; field.value = reviewer();
      form.appendChild(field);
    });
  }
})();
"""
