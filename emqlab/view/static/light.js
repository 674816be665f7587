// emqlab: light a figure's mode in the browser, with no kernel. Written once; every interactive
// figure (emqlab.view.interactive) carries the same page contract:
//   [data-figure]            the figure; its modes' words in a <script type="application/json" data-modes>
//   [data-lane="KEY"]        the area that lights mode KEY: pointer-over, focus (Tab, arrow keys), click to pin
//   [data-mode="KEY"]        every drawn element of mode KEY (dimmed while another mode is lit)
//   [data-readout]           the readout: the lit mode's headline and facts, else the figure's prompt
// The figure's own drawing is matplotlib's SVG; nothing here draws.
(function () {
  "use strict";
  function bind(figure) {
    if (figure.dataset.bound) return;
    figure.dataset.bound = "1";
    var words = JSON.parse(figure.querySelector("script[data-modes]").textContent);
    var readout = figure.querySelector("[data-readout]");
    var prompt = readout.innerHTML;
    var lanes = Array.prototype.slice.call(figure.querySelectorAll("[data-lane]"));
    var marks = Array.prototype.slice.call(figure.querySelectorAll("[data-mode]"));
    var pinned = null;

    function light(key) {
      if (key === null) delete figure.dataset.lit; else figure.dataset.lit = key;
      for (var i = 0; i < marks.length; i++) {
        marks[i].classList.toggle("emq-dim", key !== null && marks[i].dataset.mode !== key);
      }
      for (var j = 0; j < lanes.length; j++) {
        lanes[j].classList.toggle("emq-lit", lanes[j].dataset.lane === key);
        lanes[j].setAttribute("aria-pressed", pinned === lanes[j].dataset.lane ? "true" : "false");
      }
      readout.innerHTML = key === null ? prompt : words[key].html;
    }
    function pin(key, event) {  // a click pins a mode, a second click on it lets go
      event.stopPropagation();
      pinned = pinned === key ? null : key;
      light(pinned === null ? key : pinned);
    }
    lanes.forEach(function (lane, k) {
      var key = lane.dataset.lane;
      lane.addEventListener("pointerenter", function () { if (pinned === null) light(key); });
      lane.addEventListener("focus", function () { if (pinned === null) light(key); });
      lane.addEventListener("click", function (event) { pin(key, event); });
      lane.addEventListener("keydown", function (event) {
        var step = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1}[event.key];
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); lane.dispatchEvent(new MouseEvent("click")); }
        if (step) { event.preventDefault(); lanes[(k + step + lanes.length) % lanes.length].focus(); }
      });
    });
    marks.forEach(function (mark) {  // a bar or a mark drawn over a lane lights its own mode too
      mark.addEventListener("pointerenter", function () { if (pinned === null) light(mark.dataset.mode); });
      mark.addEventListener("click", function (event) { pin(mark.dataset.mode, event); });
    });
    figure.addEventListener("pointerleave", function () { if (pinned === null) light(null); });
    figure.addEventListener("focusout", function (event) {
      if (pinned === null && !figure.contains(event.relatedTarget)) light(null);
    });
    figure.querySelector("svg").addEventListener("click", function () { pinned = null; light(null); });
  }
  function bindAll() {
    var figures = document.querySelectorAll("[data-figure]");
    for (var i = 0; i < figures.length; i++) bind(figures[i]);
  }
  window.emqlabLight = {bind: bind, bindAll: bindAll};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", bindAll); else bindAll();
})();
