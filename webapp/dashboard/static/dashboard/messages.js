// The message browser: times in the browser's zone, and the live tail.
(function () {
  "use strict";

  // Every record time shows its UTC value; add the browser's local time under it.
  function addLocalTimes(root) {
    root.querySelectorAll("time[data-epoch-ms]").forEach(function (element) {
      if (element.nextElementSibling && element.nextElementSibling.classList.contains("local-time")) return;
      var local = document.createElement("span");
      local.className = "local-time small";
      var moment = new Date(Number(element.getAttribute("data-epoch-ms")));
      local.textContent = moment.toLocaleString(undefined, { hour12: false, timeZoneName: "short" }) + " (local)";
      element.insertAdjacentElement("afterend", local);
    });
  }

  // The form's times are read in UTC unless "Times are in" says the browser's zone: send it.
  function setUtcOffset() {
    var offset = document.getElementById("id_utc_offset");
    if (offset) offset.value = String(-new Date().getTimezoneOffset());
    var note = document.getElementById("zone-note");
    var zone = document.getElementById("id_zone");
    if (note && zone) {
      var name = Intl.DateTimeFormat().resolvedOptions().timeZone || "your zone";
      note.textContent = zone.value === "local" ? "Times you type are read in " + name + "." : "Times you type are read in UTC.";
    }
  }

  // The live tail: polls the tail URL every second with the positions the last poll returned,
  // prepends the new rows, and stops on Stop, after data-tail-seconds, or on an error answer.
  function liveTail(card) {
    var start = document.getElementById("tail-start");
    var stop = document.getElementById("tail-stop");
    var status = document.getElementById("tail-status");
    var wrap = document.getElementById("tail-wrap");
    var body = card.querySelector("#tail-records tbody");
    var maxSeconds = Number(card.getAttribute("data-tail-seconds")) || 300;
    var timer = null;
    var positions = "";
    var startedAt = 0;
    var shown = 0;
    var busy = false;
    var session = 0; // a poll answering after Stop (or after a restart) is dropped

    function finish(message) {
      if (timer !== null) clearInterval(timer);
      timer = null;
      start.hidden = false;
      stop.hidden = true;
      status.textContent = message;
      card.setAttribute("data-tail-state", "stopped");
    }

    function poll() {
      if (busy) return;
      if (Date.now() - startedAt > maxSeconds * 1000) {
        finish("Live tail stopped after " + maxSeconds + " s (" + shown + " new records). Start it again to go on.");
        return;
      }
      busy = true;
      var mine = session;
      var url = card.getAttribute("data-tail-url") + "&positions=" + encodeURIComponent(positions);
      fetch(url, { credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } })
        .then(function (response) {
          if (response.redirected) throw new Error("You were signed out.");
          return response.json().then(function (answer) {
            if (!response.ok) throw new Error(answer.error || "The tail failed (" + response.status + ").");
            return answer;
          });
        })
        .then(function (answer) {
          if (timer === null || mine !== session) return;
          positions = answer.positions;
          if (answer.count) {
            var holder = document.createElement("tbody");
            holder.innerHTML = answer.html;
            var rows = Array.prototype.slice.call(holder.children);
            rows.reverse().forEach(function (row) { row.classList.add("tail-new"); body.insertBefore(row, body.firstChild); });
            addLocalTimes(body);
            shown += answer.count;
          }
          card.setAttribute("data-tail-state", "running");
          status.textContent = "Following new records: " + shown + " so far.";
        })
        .catch(function (error) { if (timer !== null && mine === session) finish("Live tail stopped: " + error.message); })
        .then(function () { if (mine === session) busy = false; });
    }

    start.addEventListener("click", function () {
      session += 1;
      busy = false;
      positions = "";
      startedAt = Date.now();
      start.hidden = true;
      stop.hidden = false;
      wrap.hidden = false;
      status.textContent = "Starting…";
      timer = setInterval(poll, 1000);
      poll();
    });
    stop.addEventListener("click", function () { finish("Live tail stopped (" + shown + " new records)."); });
    // Leaving the page ends the polling with it; a page restored from the back/forward cache stays stopped.
    window.addEventListener("pagehide", function () { if (timer !== null) finish("Live tail stopped."); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    addLocalTimes(document);
    setUtcOffset();
    var zone = document.getElementById("id_zone");
    if (zone) zone.addEventListener("change", setUtcOffset);
    var card = document.getElementById("live-tail");
    if (card) liveTail(card);
  });
})();
