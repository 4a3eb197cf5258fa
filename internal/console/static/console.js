// errand console: the only script. It keeps the queue counts live over
// server-sent events and ticks every dead letter of a page. Everything
// else is plain HTML forms, so the console works without it.
"use strict";

function live(table) {
  var src = new EventSource(table.getAttribute("data-live"));
  src.addEventListener("counts", function (ev) {
    var data = JSON.parse(ev.data);
    data.queues.forEach(function (q) {
      var row = table.querySelector('tr[data-queue="' + CSS.escape(q.name) + '"]');
      if (!row) {
        return;
      }
      row.querySelectorAll("td[data-state]").forEach(function (cell) {
        var st = cell.getAttribute("data-state");
        var n = String((q.counts && q.counts[st]) || 0);
        if ((q.capped || []).indexOf(st) >= 0) {
          n += "+";
        }
        if (cell.textContent !== n) {
          cell.textContent = n;
          cell.classList.remove("flash");
          void cell.offsetWidth;
          cell.classList.add("flash");
        }
      });
    });
    table.setAttribute("data-updated", String(Date.now()));
  });
  src.addEventListener("logout", function () {
    src.close();
    window.location.assign("/console/login?why=expired");
  });
}

document.addEventListener("DOMContentLoaded", function () {
  var table = document.querySelector("table[data-live]");
  if (table && window.EventSource) {
    live(table);
  }
  var all = document.getElementById("select-all");
  if (all) {
    all.addEventListener("click", function () {
      document.querySelectorAll('#dead input[type="checkbox"][name="id"]').forEach(function (b) {
        b.checked = true;
      });
    });
  }
});
