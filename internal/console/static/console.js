// errand console: the only script. It keeps the queues table live over
// server-sent events (rows added and removed, counts, the paused badge)
// and ticks every dead letter of a page. Everything else is plain HTML
// forms, so the console works without it.
"use strict";

// queueRow makes the row of a queue that was not on the page when it
// loaded, shaped as the server renders one.
function queueRow(table, q) {
  var tr = document.createElement("tr");
  tr.setAttribute("data-queue", q.name);
  var first = document.createElement("td");
  var a = document.createElement("a");
  a.href = table.getAttribute("data-live").replace(/live$/, "") + "q/" + encodeURIComponent(q.name) + "/";
  a.textContent = q.name;
  var badge = document.createElement("span");
  badge.className = "badge";
  badge.setAttribute("data-paused", "");
  badge.textContent = "paused";
  first.append(a, " ", badge);
  var mode = document.createElement("td");
  mode.textContent = q.mode;
  tr.append(first, mode);
  table.querySelectorAll("thead th[data-state]").forEach(function (th) {
    var td = document.createElement("td");
    var st = th.getAttribute("data-state");
    td.className = "num";
    // A push queue has no leased tasks, a pull queue no running ones.
    if ((q.mode === "push" && st === "leased") || (q.mode === "pull" && st === "running")) {
      td.className = "num empty";
      td.textContent = "–";
    } else {
      td.setAttribute("data-state", st);
    }
    tr.appendChild(td);
  });
  return tr;
}

// update shows one queue's counts and paused flag in its row.
function update(row, q) {
  var badge = row.querySelector("[data-paused]");
  if (badge) {
    badge.hidden = !q.paused;
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
}

function live(table) {
  var body = table.tBodies[0];
  var note = document.getElementById("live-note");
  var say = function (text) {
    if (note) {
      note.textContent = text;
      note.hidden = text === "";
    }
  };
  var src = new EventSource(table.getAttribute("data-live"));
  // A read the API refused (the instance's rate limit, say): the counts
  // shown are not live until the next "counts".
  src.addEventListener("stale", function (ev) {
    say("Counts not live: " + JSON.parse(ev.data).message.replace(/\.?$/, ".") + " Trying again.");
  });
  src.addEventListener("error", function () {
    if (src.readyState === EventSource.CLOSED) {
      say("Counts not live: the stream ended. Reload the page to follow them again.");
    }
  });
  src.addEventListener("counts", function (ev) {
    say("");
    var data = JSON.parse(ev.data);
    var rows = {};
    body.querySelectorAll("tr[data-queue]").forEach(function (row) {
      rows[row.getAttribute("data-queue")] = row;
    });
    // The rows follow the API's list: a queue added meanwhile gets a row,
    // one deleted loses it, and the order is the list's.
    var at = 0;
    data.queues.forEach(function (q) {
      var row = rows[q.name] || queueRow(table, q);
      delete rows[q.name];
      if (body.rows[at] !== row) {
        body.insertBefore(row, body.rows[at] || null);
      }
      update(row, q);
      at++;
    });
    Object.keys(rows).forEach(function (name) {
      rows[name].remove();
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
