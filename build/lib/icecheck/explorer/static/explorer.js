// icecheck explorer: keyboard shortcuts (left/right arrow: back/forward). The page works without it.
document.addEventListener("keydown", function (e) {
  var t = e.target && e.target.tagName;
  if (t === "INPUT" || t === "SELECT" || t === "TEXTAREA" || e.altKey || e.ctrlKey || e.metaKey) return;
  var id = e.key === "ArrowLeft" ? "back" : e.key === "ArrowRight" ? "forward" : null;
  var a = id && document.getElementById(id);
  if (a && !a.classList.contains("disabled")) { window.location.href = a.getAttribute("href"); }
});
