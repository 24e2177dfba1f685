// nbgrad answers drawn on the graph view: a backward's version error explained
// (nbgrad/notebook/answers_versions.py) marks the node that saved the tensor an in-place op
// changed and the nodes of those in-place ops, and says it in words above the drawing.
// Concatenated after common.js and before graph_view.js (``esm`` in _widget.py); the graph
// view calls ``markAnswer`` after each drawing and when the answer changes.

/**
 * A version error explained: ``node`` the id of the node that saved the tensor, ``bumped``
 * the ids of the in-place ops' nodes (cell order), ``text`` the answer in words.
 * @typedef {{kind: "version", node: (string|null), bumped: string[], text: string}} VersionAnswer
 */

/** The banner the answer is written in (hidden while there is none). */
function answerBanner() {
  const box = h("div", { class: "nbg-answer", role: "status" });
  box.style.display = "none";
  return box;
}

/**
 * Mark the answer of ``model``'s ``_answer_json`` on the drawn boxes (``boxEls``: box ref ->
 * its <g>) and write it in ``banner``; marks of an earlier answer are cleared first.
 * @param {any} model
 * @param {Map<string, SVGGElement>} boxEls
 * @param {HTMLElement} banner
 */
function markAnswer(model, boxEls, banner) {
  /** @type {VersionAnswer|{}} */ const answer = modelJson(model, "_answer_json");
  for (const g of boxEls.values()) g.classList.remove("nbg-answer-saved", "nbg-answer-bumped");
  if (answer.kind !== "version") {
    banner.style.display = "none";
    return;
  }
  const saved = answer.node ? boxEls.get(answer.node) : null;
  if (saved) saved.classList.add("nbg-answer-saved");
  for (const id of answer.bumped || []) {
    const g = boxEls.get(id);
    if (g) g.classList.add("nbg-answer-bumped");
  }
  banner.replaceChildren(
    h("b", {}, "In-place change: "),
    h("span", {}, answer.text),
    h("div", { class: "nbg-muted" },
      "saved here: purple border · changed here: dashed orange border"),
  );
  banner.style.display = "";
}

// NOTE [Marks that are not colour alone]
// A box that held NaN or Inf gets a "!" badge and a thick dashed dark-red border, an edge
// whose gradient is not finite a thick dashed dark-red line, in every overlay (as the still
// pictures mark them, NOTE [Overlay scales] in nbgrad/notebook/overlays.py): a reader who
// cannot tell red from green, or a printout in grey, still sees them. The marks are inline
// styles, so that no overlay's colours and no stylesheet hide them.
const BAD_STROKE = "#8b0000";
const SPARK_W = 56;
const SPARK_H = 14;

/**
 * Where the first NaN or Inf started: the box (null when not drawn) and the finding in words.
 * @typedef {{id: (string|null), text: string}} MarkOrigin
 */

/**
 * One line of an overlay's legend.
 * @typedef {{fill: string, text: string, stroke: string, dash: string}} LegendEntry
 */

/**
 * What the kernel sends for the marks and the overlay (``answers_view.marks``).
 * @typedef {{kind: string, bad: string[], origin: (MarkOrigin|null),
 *   title?: string, legend?: LegendEntry[],
 *   fills?: Object<string, string>, stats?: Object<string, Object<string, number>>,
 *   flow?: Object<string, (number|null)[]>}} Marks
 */

/** Whether a gradient norm, as a snapshot writes it, is not finite ("nan", "inf", "-inf"). */
export function badNorm(g) {
  return typeof g === "string" || (typeof g === "number" && !Number.isFinite(g));
}

/**
 * The points of a sparkline of ``values`` (null: no gradient that step) in the box at
 * (``x``, ``y``) of size ``w`` x ``h``, on a log scale when they span more than a hundredfold;
 * "" when fewer than two values are numbers.
 * @param {(number|null)[]} values
 * @returns {string} an SVG ``points`` attribute
 */
export function sparkPoints(values, x, y, w, h) {
  const got = values.map((v, i) => [i, v]).filter(([, v]) => typeof v === "number" && v > 0);
  if (got.length < 2) return "";
  const vs = got.map(([, v]) => v);
  const lo = Math.min(...vs);
  const hi = Math.max(...vs);
  const log = hi / lo > 100;
  const f = (v) => (log ? Math.log10(v) : v);
  const span = f(hi) - f(lo) || 1;
  const n = Math.max(1, values.length - 1);
  return got.map(([i, v]) => {
    const px = x + (w * i) / n;
    const py = y + h - (h * (f(v) - f(lo))) / span;
    return `${px.toFixed(1)},${py.toFixed(1)}`;
  }).join(" ");
}

/** "Colour by" (``colour``, for the toolbar), and the bar under the toolbar (shown when it has
 * something to say): "Jump to the origin" and the origin in words, the overlay's legend. */
function answersBar(send, jumpTo) {
  const select = h("select", { class: "nbg-color", title: "colour the nodes by a number",
    onchange: () => send({ type: "color", kind: select.value }) },
  ...[["", "none"], ["norm", "gradient norm (log)"], ["saved", "saved bytes"],
    ["nonfinite", "non-finite"], ["order", "execution order"],
    ["time", "time in backward (log)"]].map(([v, text]) =>
    h("option", { value: v }, text)));
  const jump = h("button", { class: "nbg-jump", title: "select and show where the first NaN " +
    "or Inf was made (forward first, then backward)" }, "Jump to the origin");
  const origin = h("span", { class: "nbg-origin" });
  const legend = h("div", { class: "nbg-legend" });
  let target = null;
  jump.addEventListener("click", () => { if (target) jumpTo(target); });
  const bar = h("div", { class: "nbg-answers" }, jump, origin, legend);
  bar.style.display = "none";
  const colour = h("label", { class: "nbg-colour" }, "Colour by ", select);
  return { bar, colour, select, jump, origin, legend, setTarget: (id) => { target = id; } };
}

/** Mark a box (its <g>) that held NaN or Inf: the dashed border and the "!" badge. */
function markBad(g) {
  g.classList.add("nbg-nonfinite");
  const rect = g.querySelector("rect:last-of-type") || g.querySelector("rect");
  if (!rect) return;
  Object.assign(rect.style, { stroke: BAD_STROKE, strokeWidth: "3.5px", strokeDasharray: "6 3" });
  const x = Number(rect.getAttribute("x"));
  const y = Number(rect.getAttribute("y"));
  const badge = s("g", { class: "nbg-bad-badge" });
  badge.append(s("circle", { cx: x + 2, cy: y + 2, r: 8, fill: BAD_STROKE }));
  const t = s("text", { x: x + 2, y: y + 6, "text-anchor": "middle", fill: "#fff",
    "font-size": "11px", "font-weight": "bold" });
  t.textContent = "!";
  badge.append(t);
  const title = s("title");
  title.textContent = "held NaN or Inf (search \"nan\" or \"inf\"; Jump to the origin)";
  badge.append(title);
  g.append(badge);
}

/** A sparkline of ``values`` with its top left at (x, y), and its last value as a tooltip. */
function sparkline(values, x, y) {
  const g = s("g", { class: "nbg-spark" });
  g.append(s("rect", { x, y, width: SPARK_W, height: SPARK_H, fill: "#ffffff",
    stroke: "#cccccc", "stroke-width": 0.5 }));
  g.append(s("polyline", { points: sparkPoints(values, x + 1, y + 1, SPARK_W - 2, SPARK_H - 2),
    fill: "none", stroke: "#1f6f3a", "stroke-width": 1.2 }));
  const title = s("title");
  const last = [...values].reverse().find((v) => typeof v === "number");
  title.textContent = `gradient norm over ${values.length} backward passes` +
    (last !== undefined ? `; last ${fmt(last)}` : "");
  g.append(title);
  return g;
}

// NOTE [Marks on what is placed]
// A big graph's bulk drawing places elements as the view moves (NOTE [Elements reused] in
// graph_bulk.js). Marking all of them again each time would undo and redo every mark, so
// ``markAnswers`` marks what is drawn when the marks, the answer or the drawing change, and
// ``markPlaced`` only the elements just placed. Each edge is marked from its own layout edge
// (``edgeEls``), not from its place among the drawn ones: the bulk drawing holds a few edges
// of the layout, in the order they came into view.
const JSON_SEEN = new WeakMap(); // model -> {name: {text, value}}: each text parsed once
const DERIVED = new WeakMap(); // a marks or snapshot object -> what is read from it per box

/** ``model``'s JSON trait ``name``, parsed once a text (the object is shared: not changed). */
function modelJson(model, name) {
  if (!JSON_SEEN.has(model)) JSON_SEEN.set(model, {});
  const seen = JSON_SEEN.get(model);
  const text = model.get(name) || "{}";
  if (seen[name]?.text !== text) seen[name] = { text, value: JSON.parse(text) };
  return seen[name].value;
}

/** What marks a box: the bad refs as a set, each group id's module path (``snap``'s). */
function markLookups(marks, snap) {
  if (!DERIVED.has(marks)) DERIVED.set(marks, new Set(marks.bad || []));
  if (!DERIVED.has(snap)) DERIVED.set(snap, new Map((snap.groups || []).map((g) => [g.id, g.path])));
  return { bad: DERIVED.get(marks), paths: DERIVED.get(snap) };
}

/** Mark box ``g`` (of layout box ``b``, unmarked): the overlay's fill, NaN/Inf, the version
 * answer's saving and changing nodes, a folded module's sparkline. */
function markBox(g, b, marks, answer, { bad, paths }) {
  const fill = marks.fills && marks.fills[b.ref];
  if (fill) for (const r of g.querySelectorAll("rect")) r.style.fill = fill;
  if (bad.has(b.ref)) markBad(g);
  if (answer.kind === "version") {
    if (answer.node === b.ref) g.classList.add("nbg-answer-saved");
    if ((answer.bumped || []).includes(b.ref)) g.classList.add("nbg-answer-bumped");
  }
  const values = b.kind === "group" && marks.flow ? marks.flow[paths.get(b.ref)] : null;
  // below the box's right end: the edge labels sit above boxes, at the edges' ends
  if (values) g.append(sparkline(values, b.x + b.w - SPARK_W + 6, b.y + b.h - 4));
}

/** Mark edge element ``el`` (of layout edge ``e``) when a gradient on it is not finite. */
function markEdge(el, e) {
  const bad = (e.grads || []).some(badNorm);
  el.classList.toggle("nbg-edge-nonfinite", bad);
  const line = el.querySelector(".nbg-edge-line");
  if (bad) Object.assign(line.style, { stroke: BAD_STROKE, strokeWidth: "3px",
    strokeDasharray: "6 3" });
  else line.removeAttribute("style");
}

/**
 * Draw the marks of ``model``'s ``_marks_json`` (``Marks``) on what is drawn (``boxEls``: ref
 * -> element, ``edgeEls``: layout edge -> element), the marks drawn before taken off: the
 * NaN/Inf boxes and edges, the overlay's fills and legend, each module's sparkline, the
 * origin's button (NOTE [Marks on what is placed]).
 * @param {any} model
 * @param {Layout} lay
 * @param {ViewSnapshot} snap
 * @param {{boxEls: Map<string, SVGGElement>, edgeEls: Map<any, SVGGElement>}} drawn
 * @param {SVGGElement} viewport
 * @param {ReturnType<typeof answersBar>} bar
 */
function markAnswers(model, lay, snap, { boxEls, edgeEls }, viewport, bar) {
  /** @type {Marks} */ const marks = modelJson(model, "_marks_json");
  for (const old of viewport.querySelectorAll(".nbg-bad-badge, .nbg-spark")) old.remove();
  for (const g of boxEls.values()) {
    g.classList.remove("nbg-nonfinite");
    for (const r of g.querySelectorAll("rect")) r.removeAttribute("style");
  }
  const lookups = markLookups(marks, snap);
  const none = {}; // the version answer's marks are markAnswer's here
  for (const b of lay.nodes || []) {
    const g = boxEls.get(b.ref);
    if (g) markBox(g, b, marks, none, lookups);
  }
  for (const [e, el] of edgeEls) markEdge(el, e);
  // each module's gradient norm over the passes, in its open frame's corner
  const flow = marks.flow || {};
  for (const g of lay.groups || []) {
    const values = flow[lookups.paths.get(g.id)];
    // just after the frame's label ("▾ model: Sequential"), clear of the boxes' corners
    const x = Math.min(g.x + 16 + 6.6 * (g.label || "").length, g.x + g.w - SPARK_W - 6);
    if (values) viewport.append(sparkline(values, x, g.y + 3));
  }
  showLegend(marks, lay, snap, bar);
}

/**
 * Mark the elements the bulk drawing just placed (``fresh``: ``{layer, item, part}``, each
 * set anew, with no marks): as ``markAnswers`` and ``markAnswer`` would (NOTE [Marks on what
 * is placed]).
 */
function markPlaced(model, snap, fresh) {
  /** @type {Marks} */ const marks = modelJson(model, "_marks_json");
  /** @type {VersionAnswer|{}} */ const answer = modelJson(model, "_answer_json");
  const lookups = markLookups(marks, snap);
  for (let i = 0; i < fresh.length; i++) {
    const it = fresh[i];
    if (it.layer === 2) markBox(it.part.el, it.item, marks, answer, lookups);
    else if (it.layer === 1 && (it.item.grads || []).some(badNorm)) markEdge(it.part.el, it.item);
  }
}

/** The overlay's legend in words, each folded group's min / max / sum / mean, the origin. */
function showLegend(marks, lay, snap, bar) {
  bar.select.value = marks.kind || "";
  const origin = marks.origin;
  bar.setTarget(origin && origin.id);
  bar.jump.style.display = origin && origin.id ? "" : "none";
  bar.origin.textContent = origin ? `NaN/Inf ${origin.text}` : "";
  bar.origin.style.display = origin ? "" : "none";
  bar.bar.style.display = origin || marks.kind ? "" : "none";
  if (!marks.kind) {
    bar.legend.replaceChildren();
    bar.legend.style.display = "none";
    return;
  }
  const paths = new Map((snap.groups || []).map((g) => [g.id, g.path]));
  const value = (v) => overlayText(marks.kind, v);
  const stats = Object.entries(marks.stats || {}).slice(0, 8).map(([gid, st]) => h("div",
    { class: "nbg-muted nbg-stats" }, `folded ${paths.get(gid) ?? gid}: min ${value(st.min)}, ` +
      `max ${value(st.max)}, sum ${value(st.sum)}, mean ${value(st.mean)} (${st.count} nodes)` +
      (st.distinct ? `; ${bytesText(st.distinct)} distinct` : "")));
  bar.legend.replaceChildren(h("b", {}, marks.title || ""), ...(marks.legend || []).map((x) =>
    h("span", { class: "nbg-swatch" }, h("i", { style: `background:${x.fill};border:` +
      `${x.stroke === BAD_STROKE ? 2 : 1}px ${x.dash ? "dashed" : "solid"} ${x.stroke}` }),
    x.text)), ...stats);
  bar.legend.style.display = "";
}

/** An overlay's number in words: bytes, seconds in ms/us (as overlays.format_seconds). */
function overlayText(kind, v) {
  if (v === null || v === undefined) return "-";
  if (kind === "saved") return bytesText(v);
  if (kind !== "time") return fmt(v);
  const [x, unit] = v >= 1 ? [v, "s"] : v >= 1e-3 ? [v * 1e3, "ms"] : [v * 1e6, "us"];
  return `${Number(x.toPrecision(3))} ${unit}`;
}

/** ``1536`` -> "1.5 KiB" (as answers_memory.format_bytes). */
export function bytesText(n) {
  const units = ["B", "KiB", "MiB", "GiB"];
  let size = n;
  for (const unit of units) {
    if (size < 1024 || unit === "GiB") return unit === "B" ? `${Math.trunc(size)} B`
      : `${size.toFixed(1)} ${unit}`;
    size /= 1024;
  }
  return `${n} B`;
}

/** A plot of a module's gradient norm at each backward pass (the details panel's). */
function flowPlot(values) {
  const w = 250;
  const hgt = 80;
  const left = 46; // room for the axis's numbers
  const svgEl = s("svg", { class: "nbg-flow-plot", width: w, height: hgt + 16 });
  svgEl.append(s("rect", { x: left, y: 2, width: w - left - 4, height: hgt, fill: "#fff",
    stroke: "#ccc" }));
  svgEl.append(s("polyline", { points: sparkPoints(values, left + 2, 4, w - left - 8, hgt - 4),
    fill: "none", stroke: "#1f6f3a", "stroke-width": 1.5 }));
  const nums = values.filter((v) => typeof v === "number" && v > 0);
  const label = (text, x, y, anchor) => {
    const t = s("text", { x, y, "font-size": "10px", "text-anchor": anchor, fill: "#444" });
    t.textContent = text;
    svgEl.append(t);
  };
  if (nums.length) {
    label(fmt(Math.max(...nums)), left - 3, 10, "end");
    label(fmt(Math.min(...nums)), left - 3, hgt, "end");
  }
  label("pass 1", left + 2, hgt + 14, "start");
  label(`pass ${values.length}`, w - 4, hgt + 14, "end");
  return svgEl;
}

/**
 * The details panel's answers for the item selected (``Details.answers``): its NaN/Inf
 * findings with the cell line and the values that made them, why its gradient is None, a
 * module's parameters without a gradient, the bytes it saves, a module's gradient flow.
 * @param {any} answers
 * @returns {HTMLElement[]}
 */
function answerSections(answers) {
  if (!answers) return [];
  const out = [];
  for (const f of answers.nonfinite || []) {
    out.push(h("div", { class: "nbg-answer-box nbg-answer-nonfinite" },
      h("b", {}, f.phase === "counted" ? "Where the NaN/Inf was found (unrecorded steps)"
        : f.origin ? "Where the NaN/Inf started" : "Held NaN/Inf"),
      h("div", {}, f.text),
      f.line ? h("div", {}, h("code", {}, `line ${f.line}: ${f.source}`)) : null,
      ...(f.values || []).map((v) => h("div", { class: "nbg-values" }, v))));
  }
  if (answers.why) {
    out.push(h("div", { class: "nbg-answer-box nbg-answer-why" },
      h("b", {}, "Why .grad is None"), h("div", {}, answers.why.text),
      answers.why.line ? h("div", {}, h("code", {},
        `line ${answers.why.line}: ${answers.why.source}`)) : null));
  }
  if (answers.unused && answers.unused.length) {
    out.push(h("div", { class: "nbg-answer-box nbg-answer-why" },
      h("b", {}, "Parameters without a gradient"),
      ...answers.unused.map((u) => h("div", {}, h("code", {}, u.name), `: ${u.text}`))));
  }
  if (answers.saved) {
    out.push(h("h5", {}, "Memory kept for backward"), h("div", { class: "nbg-saved-bytes" },
      answers.saved.text));
  }
  const ov = answers.overlay;
  if (ov) {
    const v = (x) => overlayText(ov.kind, x);
    out.push(h("h5", {}, ov.title), h("table", { class: "nbg-overlay-stats" },
      ...["min", "max", "sum", "mean"].map((k) => row(k, v(ov[k]))),
      row("nodes", String(ov.count))));
  }
  if (answers.flow) {
    out.push(h("h5", {}, "Gradient norm over the backward passes"), flowPlot(answers.flow));
  }
  return out;
}
