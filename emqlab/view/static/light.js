// emqlab: light a figure's mode in the browser, with no kernel. Written once, an ES module: a static
// page runs it inline (interactive_page), the lab and the dashboards load it as the front end of the
// anywidget `LitFigure` (emqlab.view.widgets). Every interactive figure (emqlab.view.interactive)
// carries the same page contract:
//   [data-figure]            the figure; its modes' words in a <script type="application/json" data-modes>
//   [data-lane="KEY"]        the area that lights mode KEY: pointer-over, focus (Tab, arrow keys), click to pin
//   [data-mode="KEY"]        every drawn element of mode KEY (dimmed while another mode is lit)
//   [data-readout]           the readout: the lit mode's headline and facts, else the figure's prompt
//   [data-verdict="KEY"]     mode KEY's line in the caption's list (marked while KEY is lit)
//   [data-stepper]           where a figure with a stepper walks the lit mode's events; [data-cursor] marks the
//                            event's time on each axes (a line matplotlib drew, moved by the scale it gave)
// The figure's own drawing is matplotlib's SVG; nothing here draws.

export function bind(figure) {
  if (figure.emqlab) return figure.emqlab;
  const words = JSON.parse(figure.querySelector("script[data-modes]").textContent);
  const modes = words.modes;
  const readout = figure.querySelector("[data-readout]");
  const prompt = readout.innerHTML;
  const lanes = [...figure.querySelectorAll("[data-lane]")];
  const marks = [...figure.querySelectorAll("[data-mode]")];
  const verdicts = [...figure.querySelectorAll("[data-verdict]")];
  const held = figure.querySelector("[data-held]");
  let pinned = null;
  let lit = null;

  function light(key) {
    lit = key;
    if (key === null) delete figure.dataset.lit; else figure.dataset.lit = key;
    if (key !== null && held) held.hidden = false;  // a figure asked first: pointing at a mode shows its verdicts
    for (const mark of marks) mark.classList.toggle("emq-dim", key !== null && mark.dataset.mode !== key);
    for (const lane of lanes) {
      lane.classList.toggle("emq-lit", lane.dataset.lane === key);
      lane.setAttribute("aria-pressed", pinned === lane.dataset.lane ? "true" : "false");
    }
    for (const item of verdicts) item.classList.toggle("emq-lit", item.dataset.verdict === key);
    readout.innerHTML = key === null ? prompt : modes[key].html;
    stepper.follow();
  }
  function pin(key) {  // pin `key` (null lets go); a click on the pinned mode lets it go
    pinned = key;
    light(key);
  }
  function toggle(key, event) {
    event.stopPropagation();
    pin(pinned === key ? null : key);
  }

  const stepper = steps(figure, modes, () => lit, (key) => { if (pinned === null && key !== null) pin(key); });
  lanes.forEach((lane, k) => {
    const key = lane.dataset.lane;
    lane.addEventListener("pointerenter", () => { if (pinned === null) light(key); });
    lane.addEventListener("focus", () => { if (pinned === null) light(key); });
    lane.addEventListener("click", (event) => toggle(key, event));
    lane.addEventListener("keydown", (event) => {
      const step = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1}[event.key];
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); toggle(key, event); }
      if (step) { event.preventDefault(); lanes[(k + step + lanes.length) % lanes.length].focus(); }
    });
  });
  for (const mark of marks) {  // a bar or a mark drawn over a lane lights its own mode too
    mark.addEventListener("pointerenter", () => { if (pinned === null) light(mark.dataset.mode); });
    mark.addEventListener("click", (event) => toggle(mark.dataset.mode, event));
  }
  figure.addEventListener("pointerleave", () => { if (pinned === null) light(null); });
  figure.addEventListener("focusout", (event) => {
    if (pinned === null && !figure.contains(event.relatedTarget)) light(null);
  });
  figure.querySelector("svg").addEventListener("click", () => pin(null));
  figure.emqlab = {light, pin, get pinned() { return pinned; }, get lit() { return lit; }};
  return figure.emqlab;
}

// The stepper: a range over the lit mode's events; each step moves every axes' cursor to the event's time
// (the cursor's offset per model second, per axes, is the scale matplotlib drew it with) and says the event.
function steps(figure, modes, lit, pinLit) {
  const box = figure.querySelector("[data-stepper]");
  if (!box) return {follow() {}};
  const range = box.querySelector("input[type=range]");
  const label = box.querySelector("[data-step-label]");
  const cursors = [...figure.querySelectorAll("[data-cursor]")];
  function show() {
    const key = lit();
    const events = key === null ? [] : modes[key].steps;
    range.disabled = events.length === 0;
    range.max = Math.max(events.length - 1, 0);
    if (Number(range.value) > Number(range.max)) range.value = range.max;
    const event = events[Number(range.value)];
    for (const cursor of cursors) {
      cursor.style.visibility = event ? "visible" : "hidden";
      if (event) cursor.setAttribute("transform", `translate(${event[0] * cursor.dataset.scale} 0)`);
    }
    label.textContent = event ? `${modes[key].label} · event ${Number(range.value) + 1} of ${events.length} · ${event[1]}`
                              : label.dataset.idle;
  }
  function nudge(by) {
    pinLit(lit());
    range.value = Math.min(Math.max(Number(range.value) + by, 0), Number(range.max));
    show();
  }
  range.addEventListener("input", () => { pinLit(lit()); show(); });
  box.querySelector("[data-step='-1']").addEventListener("click", () => nudge(-1));
  box.querySelector("[data-step='1']").addEventListener("click", () => nudge(1));
  return {follow: show};
}

export function bindAll(root = document) {
  for (const figure of root.querySelectorAll("[data-figure]")) bind(figure);
}

if (typeof window !== "undefined") window.emqlabLight = {bind, bindAll};

// The lab and the dashboards: anywidget's front end. The kernel sends the figure as HTML (`html`, again on
// every slider change) and may pin a mode (`pinned`); pointing, focusing and pinning here send nothing back.
export default {
  render({ model, el }) {
    let figure = null;
    function show() {
      const keep = figure && figure.emqlab ? figure.emqlab.pinned : null;
      el.innerHTML = model.get("html");
      figure = el.querySelector("[data-figure]");
      if (!figure) return;
      const lit = bind(figure);
      const asked = model.get("pinned") || keep;
      if (asked && asked in JSON.parse(figure.querySelector("script[data-modes]").textContent).modes) lit.pin(asked);
    }
    function pinFromKernel() {
      if (figure && figure.emqlab) figure.emqlab.pin(model.get("pinned") || null);
    }
    model.on("change:html", show);
    model.on("change:pinned", pinFromKernel);
    show();
    return () => { model.off("change:html", show); model.off("change:pinned", pinFromKernel); };
  },
};
