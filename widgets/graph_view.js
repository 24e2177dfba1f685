// nbgrad GraphView: the grad_fn graph, drawn from a snapshot and its layout.
// Browser side of nbgrad/notebook/graph_view.py (an ES module for anywidget, after common.js).
// What it draws (ViewSnapshot, Layout, Details) is typed once, in common.js.

// NOTE [Readable at open] (see nbgrad/notebook/layout.py): the view never opens below READ_K,
// the zoom at which node labels are 11 px, and opens on the root end of the graph; an overview
// (the minimap) shows the whole graph and where the view is, beside the drawing (never over
// it), and a line under the drawing says how many boxes are out of view. A graph at most
// OPEN_SCREENS window heights tall at READ_K (a 2-layer MLP: 17 boxes, about 1,600 px) opens
// whole in height: the canvas grows to it past MAX_HEIGHT and the notebook scrolls (a graph
// wider than the canvas still opens on its root); a taller one opens MAX_HEIGHT tall. "Fit"
// never goes below READ_K either: it makes the canvas as tall as the graph (up to FIT_SCREENS
// window heights), so that the notebook scrolls where the drawing would have shrunk.
const READ_K = 1;
const MAX_K = 1.25;
const MIN_HEIGHT = 240; // px, the canvas's height bounds while it follows the graph
const MAX_HEIGHT = 640;
const FIT_SCREENS = 4;
const OPEN_SCREENS = 2;
const MINIMAP_W = 180;
const MINIMAP_H = 120;
const MAX_RESULTS = 20;
// NOTE [Narrow widgets]
// below this width (a 900 px window with the file browser open) the
// details panel and the overview go below the graph, so the canvas keeps the widget's whole
// width, and the widget grows by their height, so the canvas keeps its own; below TINY the
// overview is left out (the line under the canvas still says what is out of view)
const NARROW = 760;
const TINY = 520;
const SIDE_BELOW = 200; // px, the panel's height below the graph
// NOTE [No text while the wheel zooms]
// SVG text is laid out again at each new zoom (its font is scaled to the zoom), and what that
// leaves behind Chromium collects late, outside the JS heap: at a readable zoom on a big graph
// it was most of the tab's growth (tests/benchmarks/browser_pan_zoom.py, "zoom near", prints
// the tab's memory after each run). So while the
// wheel zooms (a step less than ZOOM_SETTLE_MS after the last) the drawing has no text, as a
// map drops its labels while it is pinched; they come back when the wheel stops. The zoom
// buttons, Fit and search zoom in one step, with their text.
const ZOOM_SETTLE_MS = 150;

/**
 * The heading of a failed cell's graph (as svg.py's footer): the cell line that raised, or,
 * when no line of the cell's code raised (``--backward EXPR``'s own expression failed), that
 * the forward ran and what failed after it.
 * @param {Failure} failure
 */
export function failureTitle(failure) {
  return failure.line ? `The forward failed at line ${failure.line}:`
    : "The forward ran; then the cell failed:";
}

// NOTE [Search ranking]
// A newcomer types a name they know: a variable, a parameter, an op. So an exact name comes
// first (its own case before another), then names that start with the query (leaves and
// parameters before ops; a dotted name's last part counts: "weight" finds model.0.weight),
// then names with a word that starts with it (Backward0 in TanhBackward0), and only for two
// characters or more, names and module paths that merely contain it: one letter ("W") would
// match every "...Backward0". Within a rank, leaves first, then ops, then modules, then
// shorter names, then the graph's order. A row names the node once, then what tells it apart (the op of a leaf's
// AccumulateGrad, the module, the line).

/**
 * The search results for ``query``, best first (NOTE [Search ranking]).
 * @param {string} query
 * @param {Iterable<ViewNode>} nodeList nodes with their defaults filled in
 * @param {Iterable<SnapGroup>} groupList
 * @returns {{kind: ("node"|"group"), id: string, text: string, note: string}[]}
 */
/**
 * What of ``q`` ("nan", "inf", "+inf", "-inf", "non-finite") node ``n`` held, as a note
 * ("nan (where it started)"), or "" (nbgrad/notebook/answers_values.py marks the nodes).
 * @param {string} q the query, lower case
 * @param {ViewNode} n
 * @returns {string}
 */
export function heldNonfinite(q, n) {
  const kinds = (n.nonfinite || []).filter((k) => q === "non-finite" || q === "nonfinite"
    || k === q || (q === "inf" && k.endsWith("inf")));
  if (!kinds.length) return "";
  return kinds.join(", ") + (n.nonfinite_origin ? " (where it started)" : "");
}

export function rankMatches(query, nodeList, groupList) {
  const raw = query.trim();
  const q = raw.toLowerCase();
  if (!q) return [];
  const groupsById = new Map();
  for (const g of groupList) groupsById.set(g.id, g);
  const line = /^line\s*(\d+)$/.exec(q);
  const found = [];
  let order = 0;
  const rank = (names) => {
    let best = Infinity;
    for (const name of names) {
      if (!name) continue;
      const low = name.toLowerCase();
      const last = low.split(".").pop();
      const words = name.split(/[._\s:]+|(?=[A-Z][a-z])/).map((w) => w.toLowerCase());
      const r = name === raw ? 0 : low === q ? 1 : low.startsWith(q) || last.startsWith(q) ? 2
        : words.some((w) => w.startsWith(q)) ? 3 : q.length > 1 && low.includes(q) ? 4 : Infinity;
      best = Math.min(best, r);
    }
    return best;
  };
  for (const n of nodeList) {
    const path = n.group ? groupsById.get(n.group)?.path ?? "" : "";
    let r = line ? (n.line === Number(line[1]) ? 0 : Infinity) : rank([n.label, n.name]);
    if (r === Infinity && !line && q.length > 1 && path.toLowerCase().includes(q)) r = 5;
    const bad = heldNonfinite(q, n); // "nan", "inf", "-inf": the nodes that held them
    if (bad) r = n.nonfinite_origin ? 0 : 1;
    if (r === Infinity) continue;
    const note = [bad || null, n.name !== n.label ? n.name : null, path || null,
      n.line ? `line ${n.line}` : null].filter(Boolean).join(" · ");
    const leaf = n.kind === "leaf" ? 0 : 1; // leaves, then ops, then modules
    found.push({ r, leaf, len: n.label.length, order: order++,
      m: { kind: "node", id: n.id, text: n.label, note } });
  }
  if (!line) {
    for (const g of groupsById.values()) {
      const r = rank([g.path, g.type, g.name]);
      if (r === Infinity) continue;
      found.push({ r, leaf: 2, len: g.path.length, order: order++,
        m: { kind: "group", id: g.id, text: `${g.path}: ${g.type}`, note: "module" } });
    }
  }
  found.sort((a, b) => a.r - b.r || a.leaf - b.leaf || a.len - b.len || a.order - b.order);
  return found.slice(0, MAX_RESULTS).map((x) => x.m);
}

/** The line above the graph: its size, what is folded or cut, which pass. */
function statusText(snap, series, live) {
  const folded = [...series.values()].filter((x) => !x.expanded).length;
  return `${live}${(snap.nodes || []).length} nodes, ${snap.edges ?? 0} edges` +
    (folded ? `; ${folded} series folded` : "") +
    (snap.truncated ? `; cut at ${snap.max_nodes.toLocaleString("en")} nodes (--max-nodes)` +
      (snap.left_out ? `: the first ${snap.left_out.toLocaleString("en")} recorded calls are left out` : "") +
      (snap.cut_nodes ? `; ${snap.cut_nodes.toLocaleString("en")} nodes left out` : "") +
      (snap.stubs ? `; ${snap.stubs.toLocaleString("en")} ${snap.stubs === 1 ? "leaf" : "leaves"} beyond the cut drawn without their edges` : "")
      : "") +
    (snap.pass !== null && snap.pass !== undefined ? `; gradients of pass ${snap.pass}` : "");
}

/**
 * The details panel's sections for a node (``det.node``).
 * @param {Details} det
 * @param {ViewSnapshot} snap
 */
function nodeSections(det, snap, nodes, groups, series, nodeLink, send) {
  const n = det.node;
  const rec = det.record;
  const hooks = (snap.hooks || []).filter((x) => n.hooks.includes(x.id));
  const sections = [
    h("h4", {}, n.label !== n.name ? `${n.label} (${n.name})` : n.name),
    h("table", {},
      row("id", n.id),
      row("kind", n.kind),
      row("sequence_nr", n.seq === null ? "2**64 - 1" : n.seq),
      row("shapes", n.shapes.map(shapeText).join(", ")),
      row("dtype / device", `${n.dtype ?? ""} / ${n.device ?? ""}`),
      n.group ? row("module", groups.get(n.group)?.path ?? n.group) : null,
      rec ? row("made by", `${rec.op}, line ${rec.line ?? "?"}: ${rec.source}`) : null,
      rec && rec.time_us !== null ? row("time", `${rec.time_us} µs`) : null,
      n.order !== null ? row("ran", `step ${n.order + 1} of pass ${snap.pass}`) : null,
    ),
  ];
  const expandedSeries = [...series.values()].filter((x) => x.expanded);
  if (expandedSeries.length) {
    sections.push(h("p", {}, ...expandedSeries.slice(0, 3).map((x) => h("button", {
      onclick: () => send({ type: "toggle_series", series: x.id }),
      title: "fold this series again",
    }, `fold ${x.label} ×${x.count}`))));
  }
  // each gradient once: a leaf's .grad is often the gradient it received, and one incoming
  // edge carries all of it (the parts of "Gradients in" show only when there are several)
  const received = n.grad ? n.grad.map(gradText).join("\n") : null;
  const dotGrad = n.tensor && n.tensor.grad ? gradText(n.tensor.grad) : null;
  if (n.tensor) {
    const tns = n.tensor;
    sections.push(h("h5", {}, "Tensor"), h("table", {},
      tns.name ? row("name", tns.name) : null,
      row("shape", shapeText(tns.shape)),
      row("requires_grad", String(tns.requires_grad)),
      row(".grad", dotGrad === null ? "None"
        : dotGrad === received ? "the same as received (below)" : dotGrad)));
  }
  if (n.grad) {
    sections.push(h("h5", {}, "Gradient received"),
      h("div", { class: "nbg-values" }, received));
  }
  if (n.saved.length) {
    sections.push(h("h5", {}, "Saved"), h("table", {}, ...n.saved.map((sv) =>
      row(sv.name, sv.kind === "tensor" ? `tensor ${shapeText(sv.shape)} ${sv.dtype} v${sv.version}`
        : sv.kind === "value" ? sv.value : sv.kind))));
  }
  if (n.next.length) {
    sections.push(h("h5", {}, "next_functions"), h("table", {}, ...n.next.map((nx, i) =>
      row(String(i), h("span", {}, nodeLink(nx.node), `, ${nx.input_nr}`)))));
  }
  if (n.input_metadata.length) {
    sections.push(h("h5", {}, "Input metadata"), h("table", {}, ...n.input_metadata.map((m, i) =>
      row(String(i), `${shapeText(m.shape)} ${m.dtype} ${m.device}`))));
  }
  const incoming = det.incoming || [];
  if (incoming.filter((e) => e.grad).length > 1) {
    sections.push(h("h5", {}, "Gradients in"), h("table", {}, ...incoming.map((e) =>
      row(nodes.get(e.from)?.label ?? e.from, gradText(e.grad)))));
  }
  sections.push(h("h5", {}, "Hooks"), hooks.length
    ? h("table", {}, ...hooks.map((x) => row(x.kind, `${x.name}${x.enabled ? "" : " (disabled)"}`)))
    : h("p", { class: "nbg-muted" }, "none"));
  const meta = Object.entries(n.metadata || {});
  if (meta.length) {
    sections.push(h("h5", {}, "Metadata"), h("table", {}, ...meta.map(([k, v]) =>
      row(k, h("pre", {}, v)))));
  }
  return sections;
}

/** Say in ``cue`` how many boxes of ``lay`` are out of ``view`` in a canvas of size ``r``,
 * and where (NOTE [Readable at open]); returns how many. */
function cueText(lay, view, r, cue) {
  const all = lay.nodes || [];
  const out = { above: 0, below: 0, left: 0, right: 0 };
  let n = 0;
  for (const b of all) {
    const x0 = b.x * view.k + view.x;
    const y0 = b.y * view.k + view.y;
    const x1 = x0 + b.w * view.k;
    const y1 = y0 + b.h * view.k;
    if (x0 >= -1 && y0 >= -1 && x1 <= r.width + 1 && y1 <= r.height + 1) continue;
    n += 1;
    if (y1 > r.height + 1) out.below += 1;
    else if (y0 < -1) out.above += 1;
    else if (x1 > r.width + 1) out.right += 1;
    else out.left += 1;
  }
  const where = Object.entries(out).filter(([, c]) => c).map(([w, c]) => `${c} ${w}`);
  cue.textContent = n
    ? `${n} of ${all.length} boxes out of view (${where.join(", ")}): drag the graph, ` +
      "or Fit to see all"
    : `the whole graph is in view (${all.length} boxes)`;
  return n;
}

function row(label, value) {
  return h("tr", {}, h("th", {}, label), h("td", {}, value));
}

/**
 * The widget's elements: the toolbar, the canvas and its overview, the details panel.
 * @param {{send: Function, fit: Function, zoom: Function}} on what the buttons do
 */
function buildDom(on) {
const status = h("span", { class: "nbg-status" });
const passSelect = h("select", { class: "nbg-pass", title: "gradients of which backward pass" });
const search = h("input", {
  class: "nbg-search", type: "search", placeholder: "find a node, parameter, module, line…",
  title: "search by node name, variable or parameter name, module path, or 'line 12'",
});
const results = h("div", { class: "nbg-results" });
const find = h("span", { class: "nbg-find" }, search, results);
const expandAll = h("button", { onclick: () => on.send({ type: "expand_all" }),
  title: "show every node: no group collapsed, no series folded" }, "Expand all");
const collapseAll = h("button", { onclick: () => on.send({ type: "collapse_all" }),
  title: "collapse the top-level groups and fold every series" }, "Collapse all");
const toolbar = h(
  "div",
  { class: "nbg-toolbar" },
  h("button", { onclick: () => on.fit(), title: "fit the whole graph in the view",
    "data-nbg-local": true }, "Fit"),
  h("button", { onclick: () => on.zoom(1.25),
    title: "zoom in (or Ctrl + wheel)", "data-nbg-local": true }, "+"),
  h("button", { onclick: () => on.zoom(0.8),
    title: "zoom out (or Ctrl + wheel)", "data-nbg-local": true }, "−"),
  find,
  expandAll,
  collapseAll,
  passSelect,
  status,
);
const svg = s("svg", { class: "nbg-canvas" });
const defs = s("defs");
const marker = s("marker", {
  id: "nbg-arrow-live", viewBox: "0 0 8 8", refX: "7", refY: "4",
  markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse",
});
marker.append(s("path", { d: "M0,0 L8,4 L0,8 z", class: "nbg-arrowhead" }));
defs.append(marker);
const viewport = s("g", { class: "nbg-viewport" });
svg.append(defs, viewport);
const minimap = s("svg", { class: "nbg-minimap", width: MINIMAP_W, height: MINIMAP_H });
const miniBoxes = s("g");
const miniView = s("rect", { class: "nbg-minimap-view" });
minimap.append(miniBoxes, miniView);
const cue = h("div", { class: "nbg-cue", role: "status" }); // what is out of view
const bulkCanvas = h("canvas", { class: "nbg-bulk" }); // NOTE [Big graphs drawn in bulk]
const stage = h("div", { class: "nbg-stage" }, bulkCanvas, svg, cue);
const panel = h("div", { class: "nbg-panel" });
const side = h("div", { class: "nbg-side" }, minimap, panel);
const main = h("div", { class: "nbg-main" }, stage, side);
const errorBox = h("pre", { class: "nbg-error" });
const failureBox = h("div", { class: "nbg-failure" }); // NOTE [Failed forward] in magics.py
  return {
    status, passSelect, search, results, find, expandAll, collapseAll, toolbar, svg, viewport,
    minimap, miniBoxes, miniView, cue, panel, main, errorBox, failureBox, bulkCanvas,
  };
}

/**
 * The details panel: what ``showPanel`` writes in ``panel`` for the selected node, group or
 * edge; ``get()`` gives the graph as last drawn ({nodes, groups, series, selectedEdge}).
 */
function detailsPanel({ panel, model, watch, snapshot, detailsOf, send, choose, get }) {
  function nodeLink(id) {
    if (!id) return h("span", { class: "nbg-muted" }, "None");
    const n = get().nodes.get(id);
    return h("a", { href: "#", onclick: (e) => { e.preventDefault(); choose({ kind: "node", id }); } },
      n ? `${n.label} (${id})` : id);
  }

  // the details come from the kernel: while they do not, say why (NOTE [Released and
  // kernel-gone views]): a kernel gone or busy, or no answer after LATE_MS
  let asked = { id: null, at: 0, timer: 0 };
  function waiting(id) {
    if (asked.id !== id) {
      clearTimeout(asked.timer);
      asked = { id, at: Date.now(), timer: setTimeout(showPanel, LATE_MS) };
    }
    const state = watch.state();
    if (state === "gone") {
      return "No details: the kernel is gone, and the details of a node come from it. " +
        "Run the cell again for a live graph.";
    }
    if (state === "busy") {
      clearTimeout(asked.timer);
      asked.timer = setTimeout(showPanel, LATE_MS);
      return "waiting for the kernel: it is busy running a cell; the details come once it is idle";
    }
    return Date.now() - asked.at >= LATE_MS ? NO_ANSWER : "loading the details…";
  }

  function showPanel() {
    const { nodes, groups, series, selectedEdge } = get();
    /** @type {ViewSnapshot} */ const snap = snapshot();
    /** @type {Details} */ const det = detailsOf();
    if (selectedEdge) {
      const parts = det && det.edges && det.edges.length ? det.edges : null;
      panel.replaceChildren(
        h("h4", {}, selectedEdge.edges.length > 1 ? `${selectedEdge.edges.length} edges` : "Edge"),
        parts ? null : h("p", { class: "nbg-muted" }, "…"),
        ...(parts || []).slice(0, 50).map((e) => h("div", {},
          h("table", {},
            row("from", nodeLink(e.from)),
            row("to", nodeLink(e.to)),
            row("output", `${e.index} → input ${e.input_nr}`),
            row("gradient", e.grad ? gradText(e.grad) : "(no backward pass yet)"),
          ))),
      );
      return;
    }
    const id = model.get("selected");
    if (!id) {
      panel.replaceChildren(h("p", { class: "nbg-muted" },
        "Click a node for its details, an edge for its gradient, a folded series or module to " +
        "open it; drag to pan, Ctrl + wheel to zoom, the overview box (if shown) to move; " +
        "search above. A big graph zoomed out is drawn as plain boxes: click one to zoom to it."));
      return;
    }
    const g = groups.get(id);
    if (g) {
      const collapsed = (model.get("collapsed") || []).includes(id);
      panel.replaceChildren(
        h("h4", {}, `${g.path}: ${g.type}`),
        h("table", {}, row("records", `${g.records[0]} – ${g.records[1]}`),
          row("depth", g.depth), g.error ? row("error", g.error) : null),
        h("button", { onclick: () => send({ type: "toggle", group: id }) },
          collapsed ? "Expand" : "Collapse"),
        ...answerSections(det && det.id === id ? det.answers : null), // answers.js
      );
      return;
    }
    if (!det || det.id !== id || !det.node) {
      panel.replaceChildren(h("p", { class: "nbg-muted" }, nodes.has(id) ? waiting(id)
        : `${id} is not in this graph`));
      return;
    }
    const sections = nodeSections(det, snap, nodes, groups, series, nodeLink, send);
    // the node's name and table, then its answers (answers.js), then the rest
    panel.replaceChildren(...sections.slice(0, 2), ...answerSections(det.answers),
      ...sections.slice(2));
  }

  return showPanel;
}

/**
 * Pan (drag the canvas) and zoom (Ctrl/Cmd + wheel) ``view``; a plain wheel scrolls the page.
 * @param {{moved: Function, applyView: Function, zoomBy: Function}} on
 */
function panAndZoom(svg, el, view, on) {
let drag = null;
let zooming = 0; // the timer that shows the texts again
svg.addEventListener("pointerdown", (e) => {
  if (e.target.closest && e.target.closest(".nbg-node, .nbg-edge, .nbg-group-label")) return;
  drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y };
  svg.setPointerCapture?.(e.pointerId);
});
// a click that did not drag: on a big graph's overview drawing, zoom to the box there
svg.addEventListener("pointerup", (e) => {
  if (drag && !drag.moved) on.click?.(e);
});
svg.addEventListener("pointermove", (e) => {
  if (!drag) return;
  // a drag that comes back to where it began is still a drag, not a click
  drag.moved ||= Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) >= 4;
  on.moved();
  view.x = drag.vx + e.clientX - drag.x;
  view.y = drag.vy + e.clientY - drag.y;
  on.applyView();
});
const endDrag = () => { drag = null; };
svg.addEventListener("pointerup", endDrag);
svg.addEventListener("pointerleave", endDrag);
// the wheel scrolls the page; Ctrl/Cmd + wheel (and a trackpad's pinch, which the browser
// sends as Ctrl + wheel) zooms, as maps do
svg.addEventListener("wheel", (e) => {
  if (!e.ctrlKey && !e.metaKey) {
    // Chromium does not pass a wheel over an SVG on to the page: scroll it here
    let p = el.parentElement;
    while (p && !(p.scrollHeight > p.clientHeight &&
        /auto|scroll/.test(getComputedStyle(p).overflowY))) p = p.parentElement;
    (p || document.scrollingElement).scrollBy({ top: e.deltaY, left: e.deltaX });
    e.preventDefault();
    return;
  }
  e.preventDefault();
  const r = svg.getBoundingClientRect();
  on.moved();
  svg.classList.add("nbg-zooming"); // NOTE [No text while the wheel zooms]
  clearTimeout(zooming);
  zooming = setTimeout(() => svg.classList.remove("nbg-zooming"), ZOOM_SETTLE_MS);
  on.zoomBy(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
}, { passive: false });
}

/** Draw ``lay``'s boxes in the overview (``miniBoxes``), setting its scale ``mini``. */
function drawMiniBoxes(miniBoxes, lay, mini) {
  const k = Math.min(MINIMAP_W / lay.width, MINIMAP_H / lay.height);
  Object.assign(mini, {
    k, x: (MINIMAP_W - lay.width * k) / 2, y: (MINIMAP_H - lay.height * k) / 2,
  });
  if ((lay.nodes || []).length > BULK_BOXES) { // one picture (NOTE [Big graphs drawn in bulk])
    miniBoxes.replaceChildren(miniPicture(lay, mini, MINIMAP_W, MINIMAP_H));
    return;
  }
  const frag = document.createDocumentFragment();
  for (const b of lay.nodes || []) {
    frag.append(s("rect", {
      x: mini.x + b.x * k, y: mini.y + b.y * k, width: Math.max(1, b.w * k),
      height: Math.max(1, b.h * k), class: `nbg-minimap-box nbg-mini-${b.kind}`,
    }));
  }
  miniBoxes.replaceChildren(frag);
}

/** Dragging in the overview (``minimap``, of scale ``mini``) moves ``view`` there. */
function minimapDrag(minimap, svg, mini, view, on) {
let miniDrag = false;
function miniMove(e) {
  const rm = minimap.getBoundingClientRect();
  const r = svg.getBoundingClientRect();
  const gx = (e.clientX - rm.left - mini.x) / mini.k; // graph coordinates under the pointer
  const gy = (e.clientY - rm.top - mini.y) / mini.k;
  view.x = r.width / 2 - gx * view.k;
  view.y = r.height / 2 - gy * view.k;
  on.applyView();
}
minimap.addEventListener("pointerdown", (e) => {
  miniDrag = true;
  minimap.setPointerCapture?.(e.pointerId);
  miniMove(e);
  e.stopPropagation();
});
minimap.addEventListener("pointermove", (e) => { if (miniDrag) miniMove(e); });
minimap.addEventListener("pointerup", () => { miniDrag = false; });
}

/**
 * The canvas's view of the graph: its zoom and offset (``view``), how tall the canvas is, the
 * overview and the line under the canvas. ``get()`` gives the boxes as last drawn ({boxes,
 * boxEls}); ``st.userMoved``: the user panned or zoomed (a resize then keeps their view).
 */
function canvasView({ el, svg, main, viewport, minimap, miniBoxes, miniView, cue, snapshot,
  graphLayout, get, bulk }) {
  const view = { x: 0, y: 0, k: 1 }; // changed in place: the pan and zoom handlers hold it
  const mini = { k: 1, x: 0, y: 0 }; // the overview's scale and offset, changed in place
  const st = { userMoved: false };
  let setHeight = ""; // the height this code gave the canvas (the user may drag it to another)
  let fitted = false; // "Fit" set the canvas's height: the graph's, not the capped one

  function applyView() {
    viewport.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
    if (bulk.active()) bulk.update(view, svg.getBoundingClientRect());
    drawMiniView();
  }

  /** The whole graph at a readable size: the canvas grows, the notebook scrolls. */
  function fit() {
    /** @type {Layout} */ const lay = graphLayout();
    let r = svg.getBoundingClientRect();
    if (!lay || !lay.width || !r.width) return;
    const cap = FIT_SCREENS * (window.innerHeight || 800);
    const k = Math.min(MAX_K, Math.max(READ_K, r.width / lay.width));
    const want = Math.min(cap, Math.ceil(lay.height * k + 20));
    for (let i = 0; i < 3 && Math.abs(r.height - want) > 1; i++) { // the stage's share of main
      const m = main.getBoundingClientRect().height;
      main.style.height = setHeight = `${Math.max(MIN_HEIGHT, Math.round(m + want - r.height))}px`;
      fitted = true;
      r = svg.getBoundingClientRect();
    }
    st.userMoved = true;
    Object.assign(view, { k, x: Math.max(10, (r.width - lay.width * k) / 2), y: 10 });
    if (lay.width * k > r.width) view.x = 10;
    applyView();
  }

  /** The first view: readable, on the root end (the top), the whole graph when it fits. */
  function openView() {
    /** @type {Layout} */ const lay = graphLayout();
    /** @type {ViewSnapshot} */ const snap = snapshot();
    const r = svg.getBoundingClientRect();
    if (!lay || !lay.width || !r.width || !r.height) return false;
    const fitK = Math.min(r.width / lay.width, r.height / lay.height);
    const k = Math.min(MAX_K, Math.max(READ_K, fitK));
    if (lay.width * k <= r.width && lay.height * k <= r.height) {
      Object.assign(view, {
        k, x: (r.width - lay.width * k) / 2, y: (r.height - lay.height * k) / 2,
      });
    } else {
      const roots = new Set(snap.roots || []);
      const top = (lay.nodes || []).filter((b) => roots.has(b.ref))
        .concat(lay.nodes || []).sort((a, b) => a.y - b.y || a.x - b.x)[0];
      const cx = top ? top.x + top.w / 2 : lay.width / 2;
      Object.assign(view, { k, x: r.width / 2 - cx * k, y: 10 - (top ? top.y - 10 : 0) * k });
      view.x = Math.min(10, Math.max(r.width - lay.width * k - 10, view.x));
    }
    applyView();
    return true;
  }

  function centreOn(ref) {
    const { boxes, boxEls } = get();
    const b = boxes.get(ref);
    const r = svg.getBoundingClientRect();
    if (!b || !r.width) return false;
    view.k = Math.max(view.k, READ_K);
    view.x = r.width / 2 - (b.x + b.w / 2) * view.k;
    if (fitted) { // the canvas is as tall as the graph: the page scrolls to the box instead
      const width = graphLayout().width * view.k;
      if (width <= r.width) view.x = (r.width - width) / 2;
      applyView();
      boxEls.get(ref)?.scrollIntoView?.({ block: "center", inline: "nearest" });
      return true;
    }
    view.y = r.height / 2 - (b.y + b.h / 2) * view.k;
    applyView();
    return true;
  }

  function zoomBy(f, cx, cy) {
    const r = svg.getBoundingClientRect();
    cx = cx ?? r.width / 2;
    cy = cy ?? r.height / 2;
    const k = Math.min(8, Math.max(0.02, view.k * f));
    view.x = cx - ((cx - view.x) * k) / view.k;
    view.y = cy - ((cy - view.y) * k) / view.k;
    view.k = k;
    applyView();
  }

  // the canvas follows the graph's height (up to a cap) until the user resizes it
  function sizeCanvas() {
    if (fitted || (main.style.height && main.style.height !== setHeight)) return; // Fit, user
    /** @type {Layout} */ const lay = graphLayout();
    if (!lay || !lay.height) return;
    const below = el.classList.contains("nbg-narrow") ? SIDE_BELOW : 0;
    const need = lay.height * READ_K + 24;
    const whole = need <= OPEN_SCREENS * (window.innerHeight || 800); // NOTE [Readable at open]
    const want = below +
      Math.round(Math.max(MIN_HEIGHT, whole ? need : Math.min(MAX_HEIGHT, need)));
    setHeight = `${want}px`;
    main.style.height = setHeight;
  }

  // the minimap: the whole graph, the view as a rectangle; dragging in it moves the view
  function drawMinimap() {
    /** @type {Layout} */ const lay = graphLayout();
    if (!lay || !lay.width) return;
    drawMiniBoxes(miniBoxes, lay, mini);
    drawMiniView();
  }

  function drawMiniView() {
    /** @type {Layout} */ const lay = graphLayout();
    const r = svg.getBoundingClientRect();
    if (!lay || !lay.width || !r.width) return;
    const fits = lay.width * view.k <= r.width + 1 && lay.height * view.k <= r.height + 1 &&
      view.x >= -1 && view.y >= -1;
    minimap.style.display = fits ? "none" : "";
    showCue(lay, r);
    const x0 = -view.x / view.k;
    const y0 = -view.y / view.k;
    miniView.setAttribute("x", mini.x + x0 * mini.k);
    miniView.setAttribute("y", mini.y + y0 * mini.k);
    miniView.setAttribute("width", Math.max(2, (r.width / view.k) * mini.k));
    miniView.setAttribute("height", Math.max(2, (r.height / view.k) * mini.k));
  }

  /** How many boxes are out of view, and where (NOTE [Readable at open]). */
  function showCue(lay, r) {
    const n = cueText(lay, view, r, cue);
    cue.classList.toggle("nbg-cue-out", n > 0);
  }


  function centreOnGroup(gid) {
    const g = (graphLayout().groups || []).find((x) => x.id === gid);
    const r = svg.getBoundingClientRect();
    if (!g || !r.width) return;
    view.k = Math.max(view.k, READ_K);
    view.x = r.width / 2 - (g.x + g.w / 2) * view.k;
    view.y = 20 - g.y * view.k;
    applyView();
  }

  return {
    view, mini, st, applyView, fit, openView, centreOn, centreOnGroup, zoomBy, sizeCanvas,
    drawMinimap, drawMiniView,
  };
}

/** The search box: its results list as the user types, a choice on a click or Enter. */
function searchBox(search, results, find, matches, choose) {
  function showResults() {
    const found = matches(search.value);
    results.replaceChildren(...found.map((m) => h("div", {
      class: "nbg-result", onclick: () => choose(m),
    }, m.text, m.note ? h("span", { class: "nbg-muted" }, `  ${m.note}`) : null)));
    if (search.value.trim() && !found.length) {
      results.replaceChildren(h("div", { class: "nbg-muted" }, "no match"));
    }
    results.style.display = search.value.trim() ? "" : "none";
  }

  search.addEventListener("input", showResults);
  search.addEventListener("focus", showResults);
  // the list goes when the pointer leaves the search box and the list (Escape, a choice too)
  find.addEventListener("pointerleave", () => { results.style.display = "none"; });
  search.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      const first = matches(search.value)[0];
      if (first) choose(first);
    } else if (e.key === "Escape") {
      results.style.display = "none";
    }
  });
  results.style.display = "none";
}

/** The failed forward's title, line and error above the drawing (hidden when none failed). */
function showFailure(failureBox, failure) {
  // replaceChildren writes a null as the text "null": only elements go in
  failureBox.replaceChildren(...(failure ? [
    h("b", {}, failureTitle(failure)),
    failure.source ? h("code", {}, ` ${failure.source}`) : null,
    h("div", {}, failure.error),
  ] : []).filter(Boolean));
  failureBox.style.display = failure ? "" : "none";
}

/** The pass chooser: one option a backward pass, shown when there are several. */
function showPasses(passSelect, snap) {
  const passes = snap.passes || [];
  passSelect.replaceChildren(
    ...passes.map((p) => h("option", { value: p.index, selected: p.index === snap.pass },
      `pass ${p.index}${p.error ? " (failed)" : ""}`)),
  );
  passSelect.style.display = passes.length > 1 ? "" : "none";
}

function render({ model, el }) {
  el.classList.add("nbg-graph");
  const watch = watchKernel(model, el); // NOTE [Released and kernel-gone views]
  /** A message to the kernel, unless it is gone (a closed comm cannot send). */
  const send = (msg) => { if (watch.state() !== "gone") model.send(msg); };
  const snapshot = jsonTrait(model, "_snapshot_json", readView);
  const graphLayout = jsonTrait(model, "_layout_json");
  const detailsOf = jsonTrait(model, "_details_json");
  const {
    status, passSelect, search, results, find, expandAll, collapseAll, toolbar, svg, viewport,
    minimap, miniBoxes, miniView, cue, panel, main, errorBox, failureBox, bulkCanvas,
  } = buildDom({ send, fit: () => fit(), zoom: (f) => { st.userMoved = true; zoomBy(f); } });
  const answerBox = answerBanner(); // a version error explained (answers.js)
  const answers = answersBar(send, (id) => choose({ kind: "node", id })); // answers.js
  toolbar.insertBefore(answers.colour, status);
  el.append(toolbar, failureBox, answerBox, answers.bar, main, errorBox);

  let opened = false; // the first view was set (after that the user's view is kept)
  let lastWidth = 0;
  let lastSize = "";
  let pendingCenter = null; // a node to centre once it is drawn (a search result)
  /** @type {Map<string, ViewNode>} */ let nodes = new Map();
  /** @type {Map<string, SnapGroup>} */ let groups = new Map();
  /** @type {Map<string, LayoutSeries>} */ let series = new Map();
  /** @type {Map<string, Box>} */ let boxes = new Map();
  /** @type {Map<string, SVGElement>} */ let boxEls = new Map();
  /** @type {Map<LayoutEdge, SVGElement>} */ let edgeEls = new Map();
  let selectedEdge = null;
  const bulk = bulkDrawing({ viewport, svg, canvas: bulkCanvas });
  const {
    view, mini, st, applyView, fit, openView, centreOn, centreOnGroup, zoomBy, sizeCanvas,
    drawMinimap, drawMiniView,
  } = canvasView({ el, svg, main, viewport, minimap, miniBoxes, miniView, cue, snapshot,
    graphLayout, get: () => ({ boxes, boxEls }), bulk });

  // pan and zoom
  panAndZoom(svg, el, view, { moved: () => { st.userMoved = true; }, applyView, zoomBy,
    click: (e) => zoomToBoxAt(e, bulk, svg, view, centreOn) });

  minimapDrag(minimap, svg, mini, view, { applyView });

  // search: node names, variable and parameter names, module paths, source lines
  const matches = (query) => rankMatches(query, nodes.values(), groups.values());

  searchBox(search, results, find, matches, choose);

  function choose(m) {
    results.style.display = "none";
    if (m.kind === "group") {
      const collapsed = (model.get("collapsed") || []).includes(m.id);
      pendingCenter = collapsed ? m.id : null;
      select(m.id);
      if (!collapsed) centreOnGroup(m.id);
      return;
    }
    pendingCenter = m.id;
    if (boxes.has(m.id)) {
      centreOn(m.id);
      pendingCenter = null;
      select(m.id);
    } else {
      send({ type: "reveal", id: m.id }); // expands what hides it, then selects it
    }
  }

  function select(id) {
    selectedEdge = null;
    model.set("selected", id);
    if (watch.state() !== "gone") model.save_changes();
    send({ type: "select", id });
    highlight();
    showPanel();
  }

  function draw() {
    /** @type {ViewSnapshot} */ const snap = snapshot();
    /** @type {Layout} */ const lay = graphLayout();
    // a ViewNode leaves out its fields at their defaults (NOTE [Send less])
    nodes = new Map((snap.nodes || []).map((n) => [n.id, {
      label: n.name, group: null, line: null, hooks: 0, order: null, ...n,
    }]));
    groups = new Map((snap.groups || []).map((g) => [g.id, g]));
    series = new Map((lay.series || []).map((x) => [x.id, x]));
    boxes = new Map((lay.nodes || []).map((b) => [b.ref, b]));
    const failure = snap.failure || null;
    const roots = new Set(failure ? [] : snap.roots || []); // a failed forward has no output
    showFailure(failureBox, failure);
    const make = graphMakers(nodes, roots, failure, {
      send, select, edge: (e) => {
        selectedEdge = e;
        send({ type: "edge", edges: e.edges });
        showPanel();
      },
    });
    if ((lay.nodes || []).length > BULK_BOXES) { // NOTE [Big graphs drawn in bulk]
      bulk.set(lay, make, (fresh) => showPlaced(model, snapshot(), fresh));
      boxEls = bulk.boxEls; // the boxes in view, as the view moves
      edgeEls = bulk.edgeEls;
    } else {
      bulk.clear();
      let frag;
      ({ frag, boxEls, edgeEls } = drawGraph(lay, make));
      viewport.replaceChildren(frag);
    }
    showPasses(passSelect, snap);
    const live = model.get("live") ? "● recording… " : "";
    const foldable = groups.size > 0 || series.size > 0;
    expandAll.style.display = foldable ? "" : "none";
    collapseAll.style.display = foldable ? "" : "none";
    status.textContent = statusText(snap, series, live);
    sizeCanvas();
    drawMinimap();
    // the first view (readable, at the root end); while recording, follow the growing graph
    const size = `${lay.width}x${lay.height}`;
    if (!opened || model.get("live")) opened = openView();
    else if (size !== lastSize || bulk.active()) applyView(); // bulk: draw what is in view
    lastSize = size;
    if (pendingCenter && boxes.has(pendingCenter)) {
      centreOn(pendingCenter);
      pendingCenter = null;
    } else if (pendingCenter && groups.has(pendingCenter)) {
      centreOnGroup(pendingCenter);
      pendingCenter = null;
    }
    highlight();
    showPanel();
  }

  passSelect.addEventListener("change", () =>
    send({ type: "show_pass", index: Number(passSelect.value) }));

  function highlight() {
    const sel = model.get("selected");
    for (const [id, g] of boxEls) g.classList.toggle("nbg-selected", id === sel);
  }

  const showPanel = detailsPanel({
    panel, model, watch, snapshot, detailsOf, send, choose,
    get: () => ({ nodes, groups, series, selectedEdge }),
  });

  function showError() {
    errorBox.textContent = model.get("error") || "";
    errorBox.style.display = model.get("error") ? "" : "none";
  }

  const showAnswer = () => {
    markAnswer(model, boxEls, answerBox);
    markAnswers(model, graphLayout(), snapshot(), { boxEls, edgeEls }, viewport, answers);
  };
  const onChange = () => { draw(); showAnswer(); };
  model.on("change:_snapshot_json", onChange);
  model.on("change:_layout_json", onChange);
  const onSelected = () => { highlight(); showPanel(); };
  model.on("change:selected", onSelected);
  model.on("change:_details_json", onSelected);
  model.on("change:live", onChange);
  model.on("change:error", showError);
  model.on("change:_answer_json", showAnswer);
  model.on("change:_marks_json", showAnswer);
  showError();
  onChange();
  // the element has no size until it is attached: open the view once it has one (a resize
  // by the user, with the handle at the bottom right, keeps the view and stops the height
  // following the graph: see sizeCanvas)
  const ro = new ResizeObserver(() => {
    // a narrow widget puts the details panel below the graph (NOTE [Narrow widgets])
    const elWidth = el.getBoundingClientRect().width;
    const narrow = elWidth < NARROW;
    if (narrow !== el.classList.contains("nbg-narrow")) {
      el.classList.toggle("nbg-narrow", narrow);
      sizeCanvas();
    }
    el.classList.toggle("nbg-tiny", elWidth < TINY);
    const width = svg.getBoundingClientRect().width;
    const resized = Math.abs(width - lastWidth) > 1;
    lastWidth = width;
    if (!opened || model.get("live") || (resized && !st.userMoved)) opened = openView();
    else drawMiniView();
  });
  ro.observe(svg);
  ro.observe(el);
  keepPictureOnSave(model); // NOTE [Saved notebooks keep their pictures]
  return () => {
    watch.stop();
    ro.disconnect();
    model.off("change:_snapshot_json", onChange);
    model.off("change:_layout_json", onChange);
    model.off("change:live", onChange);
    model.off("change:selected", onSelected);
    model.off("change:_details_json", onSelected);
    model.off("change:error", showError);
    model.off("change:_answer_json", showAnswer);
    model.off("change:_marks_json", showAnswer);
  };
}

export default { render };
