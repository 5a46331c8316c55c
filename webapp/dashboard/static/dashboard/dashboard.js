// Weir dashboard: the only script. Pages work without it; it adds copy buttons and live tables.
// A button with data-copy-target="<element id>" copies that element's text to the clipboard.
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-copy-target]");
  if (!button) return;
  var source = document.getElementById(button.getAttribute("data-copy-target"));
  if (!source || !navigator.clipboard) return;
  navigator.clipboard.writeText(source.textContent.trim()).then(function () {
    var label = button.textContent;
    button.textContent = "Copied";
    setTimeout(function () { button.textContent = label; }, 1500);
  });
});

// An element with data-live-url="<url>" has its content replaced, every data-live-seconds
// (default 5), by the HTML fragment that URL answers: the topic and brokers pages follow a
// failover without reloading. Hidden tabs do not poll, one request at a time per element, and
// a failed or redirected answer (signed out) keeps the last content until the next try.
document.querySelectorAll("[data-live-url]").forEach(function (element) {
  var seconds = Number(element.getAttribute("data-live-seconds")) || 5;
  var busy = false;
  setInterval(function () {
    if (busy || document.hidden) return;
    busy = true;
    fetch(element.getAttribute("data-live-url"), { credentials: "same-origin", cache: "no-store" })
      .then(function (response) { return response.ok && !response.redirected ? response.text() : null; })
      .then(function (html) { if (html !== null) element.innerHTML = html; })
      .catch(function () {})
      .then(function () { busy = false; });
  }, seconds * 1000);
});

// On a narrow screen the navigation collapses behind a Menu button (the CSS hides it only when
// this script runs, so that without the script every link stays visible).
(function () {
  var toggle = document.querySelector(".nav-toggle");
  if (!toggle) return;
  var sidebar = toggle.closest(".sidebar");
  document.documentElement.classList.add("js-nav");
  toggle.hidden = false;
  toggle.addEventListener("click", function () {
    var open = sidebar.classList.toggle("nav-open");
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
  });
})();
