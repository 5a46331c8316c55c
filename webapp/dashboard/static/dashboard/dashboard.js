// Weir dashboard: the only script. Pages work without it; it adds copy buttons.
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
