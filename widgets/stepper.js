// nbgrad BackwardStepper: a recorded backward pass, one node at a time, forward and back.
// Browser side of nbgrad/notebook/stepper.py (an ES module for anywidget, after common.js).
// The trace it replays (Trace, Layout) is typed once, in common.js. Stepping
// is a replay of the recorded pass: it runs nothing in the kernel.

/**
 * Traits: _trace_json: JSON of a Trace, _layout_json: JSON of a Layout, position: number (0 = start, k = step k - 1
 * running, steps + 1 = end).
 */

/**
 * The engine's state at a position, rebuilt from the trace (as BackwardStepper.state()).
 * @param {Trace} tr
 * @param {number} pos
 */
export function stateAt(tr, pos) {
  const steps = tr.steps;
  const deps = { ...tr.initial.dependencies };
  const buffers = {};
  // a step shows the counts and buffers as its node left them (NOTE [Made ready, not waiting])
  for (const st of steps.slice(0, Math.min(pos === 0 ? 0 : pos + 1, steps.length))) {
    Object.assign(deps, st.dependencies);
    Object.assign(buffers, st.buffers);
  }
  if (pos === steps.length && pos > 0) {
    Object.assign(deps, tr.final.dependencies);
    Object.assign(buffers, tr.final.buffers);
  }
  let done = steps.slice(0, Math.max(0, pos - 1)).map((st) => st.node);
  let state = { position: pos, running: null, ready: tr.initial.ready, inputs: [], outputs: [],
    hooks: [], made_ready: [], device: null, accumulated: null };
  if (pos >= 1 && pos <= steps.length) {
    const st = steps[pos - 1];
    state = { ...state, running: st.node, ready: readyAfter(tr, st), inputs: st.inputs,
      outputs: st.outputs, hooks: st.hooks, made_ready: st.made_ready, device: st.device,
      accumulated: st.accumulated ?? null };
  } else if (pos > steps.length) {
    Object.assign(deps, tr.final.dependencies);
    Object.assign(buffers, tr.final.buffers);
    done = steps.map((st) => st.node);
    state.ready = Object.fromEntries(Object.keys(tr.initial.ready).map((d) => [d, []]));
  }
  const finished = new Set(done);
  for (const ids of Object.values(state.ready)) for (const id of ids) finished.add(id);
  if (state.running) finished.add(state.running);
  for (const id of state.made_ready) finished.add(id);
  state.done = done;
  state.dependencies = Object.fromEntries(Object.entries(deps).filter(([k]) => !finished.has(k)));
  state.buffers = Object.fromEntries(Object.entries(buffers).filter(([k]) => !finished.has(k)));
  return state;
}

/**
 * The ready queues as ``step`` left them: those it started with and the nodes it made ready,
 * highest sequence_nr first (as _ready_after in nbgrad/notebook/snapshot.py).
 * @param {Trace} tr
 * @param {Step} step
 */
export function readyAfter(tr, step) {
  if (!step.made_ready.length) return step.ready;
  const seq = new Map(tr.graph.nodes.map((n) => [n.id, n.seq ?? Infinity]));
  const device = new Map(tr.steps.map((st) => [st.node, st.device]));
  const ready = Object.fromEntries(Object.entries(step.ready).map(([d, ids]) => [d, [...ids]]));
  for (const id of step.made_ready) (ready[device.get(id) ?? step.device] ??= []).push(id);
  const priority = (id) => seq.get(id) ?? Infinity;
  for (const ids of Object.values(ready)) {
    ids.sort((a, b) => (priority(a) === priority(b) ? 0 : priority(a) > priority(b) ? -1 : 1));
  }
  return ready;
}

function render({ model, el }) {
  el.classList.add("nbg-stepper");
  const trace = jsonTrait(model, "_trace_json");
  const graphLayout = jsonTrait(model, "_layout_json");
  const seriesOf = jsonTrait(model, "_series_of_json");
  el.tabIndex = 0;
  const info = h("span", { class: "nbg-step-info" });
  const slider = h("input", { type: "range", min: 0, value: 0, class: "nbg-step-slider" });
  const go = (p) => {
    const n = trace().steps.length;
    model.set("position", Math.max(0, Math.min(n + 1, p)));
    model.save_changes();
  };
  const controls = h("div", { class: "nbg-step-controls" },
    h("button", { onclick: () => go(0), title: "start" }, "«"),
    h("button", { onclick: () => go(model.get("position") - 1), title: "back one node" }, "◀"),
    h("button", { onclick: () => go(model.get("position") + 1), title: "forward one node" }, "▶"),
    h("button", { onclick: () => go(1e9), title: "end" }, "»"),
    slider, info);
  slider.addEventListener("input", () => go(Number(slider.value)));
  el.addEventListener("keydown", (e) => {
    if (e.key === "ArrowRight") { go(model.get("position") + 1); e.preventDefault(); }
    if (e.key === "ArrowLeft") { go(model.get("position") - 1); e.preventDefault(); }
  });
  const svg = s("svg", { class: "nbg-step-graph" });
  const viewport = s("g");
  svg.append(viewport);
  const panel = h("div", { class: "nbg-step-panel" });
  el.append(controls, h("div", { class: "nbg-step-main" }, svg, panel));

  /** @type {Map<string, SVGElement>} */ let boxes = new Map();
  let nodes = new Map();
  let boxOf = new Map(); // node id -> the ref of the box that shows it

  function drawGraph() {
    /** @type {Trace} */ const tr = trace();
    /** @type {Layout} */ const lay = graphLayout();
    nodes = new Map(tr.graph.nodes.map((n) => [n.id, n]));
    const groups = new Map((tr.graph.groups || []).map((g) => [g.id, g]));
    const refs = new Set(lay.nodes.map((b) => b.ref));
    boxOf = new Map();
    const inSeries = seriesOf() || {};
    for (const n of tr.graph.nodes) {
      let ref = inSeries[n.id] ?? n.id;
      let g = n.group;
      while (!refs.has(ref) && g) { ref = g; g = groups.get(g)?.parent ?? null; }
      boxOf.set(n.id, ref);
    }
    const frag = document.createDocumentFragment();
    for (const g of lay.groups || []) { // module groups, as the graph view draws them
      frag.append(s("rect", { x: g.x, y: g.y, width: g.w, height: g.h, rx: 8, class: "nbg-step-group" }));
      const label = s("text", { x: g.x + 8, y: g.y + 13, class: "nbg-step-group-label" });
      label.textContent = g.label;
      frag.append(label);
    }
    for (const e of lay.edges) {
      frag.append(s("path", { d: edgePath(e.points), class: "nbg-step-edge" }));
    }
    boxes = new Map();
    for (const b of lay.nodes) {
      const g = s("g", { class: "nbg-step-node" });
      g.append(s("rect", { x: b.x, y: b.y, width: b.w, height: b.h, rx: 5 }));
      const t = s("text", { x: b.x + b.w / 2, y: b.y + 15, class: "nbg-label" });
      t.textContent = b.label;
      const t2 = s("text", { x: b.x + b.w / 2, y: b.y + 29, class: "nbg-sub" });
      t2.textContent = b.sub;
      // the step number in a corner badge, clear of the label (as the graph's hook badge)
      const dot = s("circle", { cx: b.x + 2, cy: b.y + 2, r: 8, class: "nbg-step-badge" });
      const badge = s("text", { x: b.x + 2, y: b.y + 5.5, class: "nbg-step-order" });
      dot.style.display = "none";
      g.append(t, t2, dot, badge);
      g.addEventListener("click", () => model.send({ type: "select", id: b.ref }));
      boxes.set(b.ref, g);
      frag.append(g);
    }
    viewport.replaceChildren(frag);
    slider.max = String(tr.steps.length + 1);
    frame(null);
  }

  // NOTE [Readable at open] (layout.py): the whole graph when it fits at label size; else a
  // window at label size around the running node, so that it is always in view
  function frame(running) {
    /** @type {Layout} */ const lay = graphLayout();
    const r = svg.getBoundingClientRect();
    const w = lay.width || 1;
    const hgt = lay.height || 1;
    if (!r.width || (w <= r.width && hgt <= r.height)) {
      svg.setAttribute("viewBox", `0 0 ${w} ${hgt}`);
      return;
    }
    const box = lay.nodes.find((b) => b.ref === running) ||
      lay.nodes.slice().sort((a, b) => a.y - b.y)[0];
    const cx = box ? box.x + box.w / 2 : w / 2;
    const cy = box ? box.y + box.h / 2 : r.height / 2;
    const x0 = Math.max(0, Math.min(w - r.width, cx - r.width / 2));
    const y0 = Math.max(0, Math.min(hgt - r.height, cy - r.height / 2));
    svg.setAttribute("viewBox", `${x0} ${y0} ${r.width} ${r.height}`);
  }

  function label(id) {
    const n = nodes.get(id);
    return n ? `${n.label} (${id})` : id;
  }

  function list(title, items) {
    return [h("h5", {}, title), items.length
      ? h("ul", {}, ...items.map((x) => h("li", {}, x)))
      : h("div", { class: "nbg-muted" }, "empty")];
  }

  function drawState() {
    /** @type {Trace} */ const tr = trace();
    const pos = model.get("position");
    const st = stateAt(tr, pos);
    slider.value = String(pos);
    const n = tr.steps.length;
    info.textContent = pos === 0 ? `start (${n} steps)`
      : pos > n ? `end: ${n} nodes ran` + (tr.error ? ` — ${tr.error}` : "")
        : `step ${pos} / ${n}: ${label(st.running)}`;
    frame(st.running ? boxOf.get(st.running) : null);
    const doneOrder = new Map(st.done.map((id, i) => [id, i + 1]));
    const ready = new Set(Object.values(st.ready).flat());
    for (const [ref, g] of boxes) g.setAttribute("class", "nbg-step-node");
    for (const [id] of nodes) {
      const g = boxes.get(boxOf.get(id));
      if (!g) continue;
      const cls = id === st.running ? "nbg-running" : ready.has(id) ? "nbg-ready"
        : doneOrder.has(id) ? "nbg-done" : null;
      if (cls) g.classList.add(cls);
      const badge = g.querySelector(".nbg-step-order");
      if (boxOf.get(id) === id) {
        badge.textContent = doneOrder.has(id) ? String(doneOrder.get(id)) : "";
        g.querySelector(".nbg-step-badge").style.display = doneOrder.has(id) ? "" : "none";
      }
    }
    const sections = [];
    if (st.running) {
      sections.push(h("h4", {}, `Running ${label(st.running)} on ${st.device}`));
      sections.push(...list("Input buffer (gradients it received)", st.inputs.map(gradText)));
      sections.push(...list("Outputs (to next_functions)", st.outputs.map(gradText)));
      if (st.accumulated) {
        const acc = st.accumulated;
        sections.push(...list("Gradient accumulated into .grad", [
          `received: ${gradText(acc.grad)}`,
          `.grad before: ${gradText(acc.before)}`,
          `.grad after: ${gradText(acc.after)}`,
        ]));
      }
      sections.push(...list("Hooks fired", st.hooks.map((c) =>
        `${c.kind} ${c.name}: ${gradText(c.before)} → ${c.changed ? gradText(c.after) : "unchanged"}`)));
      sections.push(...list("Made ready", st.made_ready.map(label)));
    } else {
      sections.push(h("h4", {}, pos === 0 ? "Before the first node" : "Finished"));
      if (pos > n && tr.error) sections.push(h("pre", { class: "nbg-error" }, tr.error));
    }
    // a pass watched from outside (torch's): its order is observed; the queues, counts and
    // buffers are nbgrad's model of that engine, checked against the order at every step
    const differs = tr.model_differs;
    if (differs) {
      const here = pos > 0 && differs.includes(pos - 1);
      sections.push(h("p", { class: here ? "nbg-error" : "nbg-muted" },
        here ? "At this step torch ran another node than nbgrad's model of its engine would."
          : differs.length ? `Order observed in torch; nbgrad's model of its engine differs at ` +
            `step${differs.length > 1 ? "s" : ""} ${differs.map((k) => k + 1).join(", ")}.`
            : "Order observed in torch; the queues, counts and buffers are nbgrad's model of " +
              "its engine, which ran the nodes in the same order."));
    }
    for (const [dev, ids] of Object.entries(st.ready)) {
      // the queue as the step left it, with what it made ready (NOTE [Made ready, not waiting])
      sections.push(...list(`Ready queue (${dev})${st.running ? " after this step" : ""}, ` +
        "highest sequence_nr first", ids.map(label)));
    }
    const waiting = Object.entries(st.dependencies).filter(([, c]) => c > 0);
    sections.push(...list("Waiting: dependencies left (and input buffers so far)",
      waiting.map(([id, c]) => `${label(id)}: ${c}` +
        (st.buffers[id] ? `  buffer ${gradText(st.buffers[id])}` : ""))));
    panel.replaceChildren(...sections);
  }

  const onTrace = () => { drawGraph(); drawState(); };
  model.on("change:_trace_json", onTrace);
  model.on("change:_layout_json", onTrace);
  model.on("change:position", drawState);
  onTrace();
  const ro = new ResizeObserver(() => drawState()); // framed once the element has a size
  ro.observe(svg);
  const watch = watchKernel(model, el); // NOTE [Released and kernel-gone views]
  keepPictureOnSave(model); // NOTE [Saved notebooks keep their pictures]
  return () => {
    watch.stop();
    ro.disconnect();
    model.off("change:_trace_json", onTrace);
    model.off("change:_layout_json", onTrace);
    model.off("change:position", drawState);
  };
}

export default { render };
