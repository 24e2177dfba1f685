// nbgrad GraphView: a big graph drawn in bulk. Concatenated after common.js and before
// graph_view.js (``esm`` in nbgrad/notebook/_widget.py); graph_view.js calls ``bulkDrawing``.

// NOTE [Big graphs drawn in bulk]
// A graph view with one SVG element per box and edge repaints every element on each frame of a pan
// or zoom: at 10,000 boxes (100,000 elements) far below 30 frames a second, in a tab of over a GB
// (tests/benchmarks/browser_pan_zoom.py prints both). So a layout of more than BULK_BOXES boxes is
// drawn in two ways, by zoom. Where labels are readable (k >= DETAIL_K) the SVG holds only the
// groups, edges and boxes that touch the view (and a margin of MARGIN_PX): the same elements as a
// small graph's, placed as the view reaches them and taken out as it leaves (and reused: NOTE
// [Elements reused]), so clicks, search, highlights and what tests read work on them. Below
// DETAIL_K the SVG holds none: a canvas under it draws what is in view as plain boxes and
// straight lines, with no text (a label would be under 6 px), one path per kind (new Path2D
// objects each frame instead grew the tab by hundreds of MB while panning: the benchmark prints
// its memory after each run); its colours are read from the stylesheet (a theme's too). A click
// on a box there zooms to it. The overview is then one picture, not one element per box. A
// smaller graph keeps its one SVG drawing.
const BULK_BOXES = 1500;
const DETAIL_K = 0.5;
const MARGIN_PX = 200;
const BULK_KINDS = ["node", "leaf", "root", "external", "series", "group"];
const KEPT_PX = 4_000_000; // the overview kept whole up to so many px (NOTE [Overview kept])
const SETTLE_MS = 100; // while zooming, the kept overview is drawn anew at most this often

// NOTE [Overview kept]
// Drawn again each frame, the overview of 20,000 boxes and their edges panned at about 30
// frames a second on this machine (tests/benchmarks/browser_pan_zoom.py). Zoomed out that far
// the whole graph is a small picture: up to KEPT_PX (or twice the canvas), it is drawn once a
// zoom on a canvas kept for it (grown, never made anew: 16 MB at most) and a pan only copies
// it to its place. Past that, zoomed in, only what is in view is drawn, which is then little.
// While the zoom changes, the kept picture is drawn scaled and drawn anew at most every
// SETTLE_MS, and once more when the zoom settles: a zoom step then costs a copy too.

// NOTE [Elements reused]
// Zooming at a readable zoom brings dozens of boxes and edges into view each wheel step and
// takes as many out. So each element is a part that ``set`` makes another item's: a part that
// leaves the view goes to a pool (by ``shape``: the elements it holds), and what comes in
// takes one from there, set where it is when it left in the same update (no element made,
// none taken out and put back), else put back in the SVG; its texts are Text nodes whose data
// is changed. ``set`` also takes off what the answers marked (answers.js), so that a part
// reused is as a new one. (On the tab's memory this alone changed little, by
// tests/benchmarks/browser_pan_zoom.py: the texts laid out again at each zoom were most of it,
// NOTE [No text while the wheel zooms] in graph_view.js.)

/** A Text node in ``parent`` (its data set again when the part is reused). */
function textIn(parent) {
  const t = document.createTextNode("");
  parent.append(t);
  return t;
}

/** Set ``el``'s attributes from ``pairs`` (name, value, name, value, ...). */
function setAttrs(el, ...pairs) {
  for (let i = 0; i < pairs.length; i += 2) el.setAttribute(pairs[i], pairs[i + 1]);
}

/** Whether the layout placed edge ``e``'s label (NOTE [Edge labels] in nbgrad/notebook/layout.py). */
function edgeLabelled(e) {
  return Boolean(e.label) && e.lx !== null && e.lx !== undefined;
}

/** An edge's tooltip: its gradient norms. */
function edgeTitle(e) {
  if (!e.grads.some((g) => g !== null)) return "no gradient yet";
  return `gradient norm${e.grads.length > 1 ? "s" : ""}: ` +
    e.grads.slice(0, 8).map((g) => (g === null ? "None" : fmt(g))).join(", ") +
    (e.grads.length > 8 ? ", …" : "");
}

/**
 * The parts of a layout (NOTE [Elements reused]): ``group(g)``, ``edge(e)``, ``box(b)`` make
 * the elements of one group frame, edge or node box (what ``drawGraph`` draws, and the bulk
 * drawing as the view reaches them: NOTE [Big graphs drawn in bulk]), each as ``{el, item,
 * set}``; ``shape(layer, item)`` says which parts can be set to an item.
 * @param {Map<string, ViewNode>} nodes
 * @param {Set<string>} roots
 * @param {Failure|null} failure
 * @param {{send: Function, select: Function, edge: Function}} on what a click does
 */
function graphMakers(nodes, roots, failure, on) {
  /** What a box is drawn as: a node's kind ("leaf", "root", ...), "series" or "group". */
  function kindOf(b) {
    if (b.kind !== "node") return b.kind;
    const kind = nodes.get(b.ref)?.kind || "node";
    return kind === "node" && roots.has(b.ref) ? "root" : kind;
  }
  const hooksOf = (b) => (b.kind === "node" ? nodes.get(b.ref)?.hooks || 0 : 0);
  /** The parts that can be set to ``item`` of ``layer`` (0 groups, 1 edges, 2 boxes). */
  function shape(layer, item) {
    if (layer !== 2) return layer === 0 ? "g" : edgeLabelled(item) ? "el" : "e";
    return `${kindOf(item) === "series" ? "s" : "b"}${item.sub ? 1 : 0}${hooksOf(item) ? 1 : 0}`;
  }
  function group(g) {
    const grp = s("g", { class: "nbg-group" });
    const rect = s("rect", { rx: 8 });
    const label = s("text", { class: "nbg-group-label" });
    const text = textIn(label);
    const title = s("title");
    title.textContent = "click to collapse";
    label.append(title);
    grp.append(rect, label);
    const part = { el: grp, item: g, set(x) {
      part.item = x;
      setAttrs(rect, "x", x.x, "y", x.y, "width", x.w, "height", x.h);
      setAttrs(label, "x", x.x + 8, "y", x.y + 13);
      text.data = "▾ " + x.label;
    } };
    label.addEventListener("click", () => on.send({ type: "toggle", group: part.item.id }));
    part.set(g);
    return part;
  }
  function edge(e) {
    const grp = s("g", { class: "nbg-edge" });
    const hit = s("path", { class: "nbg-edge-hit" });
    const line = s("path", { class: "nbg-edge-line", "marker-end": "url(#nbg-arrow-live)" });
    grp.append(hit, line);
    // where the layout put it, clear of the other edges, boxes and labels, as svg.py draws it
    const label = edgeLabelled(e) ? s("text", { class: "nbg-edge-label" }) : null;
    const labelText = label && textIn(label);
    if (label) grp.append(label);
    const title = s("title");
    const titleText = textIn(title);
    grp.append(title);
    const part = { el: grp, item: e, set(x) {
      part.item = x;
      const d = edgePath(x.points);
      hit.setAttribute("d", d);
      line.setAttribute("d", d);
      if (label) {
        setAttrs(label, "x", x.lx, "y", x.ly);
        labelText.data = x.label;
      }
      titleText.data = edgeTitle(x);
      grp.setAttribute("class", "nbg-edge"); // (the answers' marks off)
      line.removeAttribute("style");
    } };
    grp.addEventListener("click", () => on.edge(part.item));
    part.set(e);
    return part;
  }
  function box(b) {
    const grp = s("g");
    const backs = kindOf(b) === "series" ? [s("rect", { rx: 5 }), s("rect", { rx: 5 })] : [];
    const rects = [...backs, s("rect", { rx: 5 })]; // a series: a stack, the repeats behind
    grp.append(...rects);
    const [t1, t2] = [s("text", { class: "nbg-label" }), b.sub ? s("text", { class: "nbg-sub" })
      : null];
    const texts = [textIn(t1), t2 && textIn(t2)];
    grp.append(...(t2 ? [t1, t2] : [t1]));
    const badge = hooksOf(b) ? [s("circle", { r: 7, class: "nbg-badge" }),
      s("text", { class: "nbg-badge-text" })] : null;
    const badgeText = badge && textIn(badge[1]);
    if (badge) grp.append(...badge);
    const title = s("title");
    const titleText = textIn(title);
    grp.append(title);
    const own = grp.childElementCount;
    const part = { el: grp, item: b, set(x) {
      part.item = x;
      const kind = kindOf(x);
      const failed = failure && failure.line && x.kind === "node" &&
        nodes.get(x.ref)?.line === failure.line;
      setAttrs(grp, "class", `nbg-node nbg-${kind}${failed ? " nbg-failed-line" : ""}`,
        "data-id", x.ref);
      for (let i = 0; i < rects.length; i++) {
        const k = rects.length - 1 - i; // 2, 1 behind, 0 in front
        setAttrs(rects[i], "x", x.x + 3 * k, "y", x.y + 3 * k, "width", x.w, "height", x.h);
        rects[i].removeAttribute("style");
      }
      setAttrs(t1, "x", x.x + x.w / 2, "y", x.y + 15);
      texts[0].data = x.label;
      if (t2) {
        setAttrs(t2, "x", x.x + x.w / 2, "y", x.y + 29);
        texts[1].data = x.sub;
      }
      if (badge) {
        setAttrs(badge[0], "cx", x.x + x.w - 2, "cy", x.y + 2);
        setAttrs(badge[1], "x", x.x + x.w - 2, "y", x.y + 5.5);
        badgeText.data = String(hooksOf(x));
      }
      titleText.data = kind === "series" ? "click to unfold the series"
        : kind === "group" ? "click to expand the module" : x.label;
      while (grp.childElementCount > own) grp.lastElementChild.remove(); // marks: "!", sparkline
    } };
    grp.addEventListener("click", () => {
      const x = part.item;
      const kind = kindOf(x);
      if (kind === "series") on.send({ type: "toggle_series", series: x.ref });
      else if (kind === "group") {
        on.select(x.ref);
        on.send({ type: "toggle", group: x.ref });
      } else on.select(x.ref);
    });
    part.set(b);
    return part;
  }
  return { group, edge, box, kindOf, shape };
}

/**
 * The group boxes, edges and node boxes of ``lay`` (made by ``make``: ``graphMakers``), each
 * node box's element by its ref and each edge's element by its layout edge.
 * @param {Layout} lay
 */
function drawGraph(lay, make) {
  const boxEls = new Map();
  const edgeEls = new Map();
  const frag = document.createDocumentFragment();
  for (const g of lay.groups || []) frag.append(make.group(g).el);
  for (const e of lay.edges || []) {
    const el = make.edge(e).el;
    edgeEls.set(e, el);
    frag.append(el);
  }
  for (const b of lay.nodes || []) {
    const el = make.box(b).el;
    boxEls.set(b.ref, el);
    frag.append(el);
  }
  return { frag, boxEls, edgeEls };
}

/**
 * The bulk drawing of a big layout (NOTE [Big graphs drawn in bulk]) in ``viewport`` (the
 * SVG's pan and zoom group) and ``canvas`` (a <canvas> under the SVG).
 * ``set(layout, make, shown)`` takes a layout: ``make`` makes and sets the parts
 * (``graphMakers``), ``shown(fresh)`` is called after the elements in the SVG changed, with
 * the items whose elements were just placed (``{layer, item, part}``, to mark them); ``update(view,
 * r)`` draws ``view`` in a canvas of size ``r``. ``boxEls`` (ref -> element) and ``edgeEls``
 * (layout edge -> element) hold what is in the SVG.
 * @param {{viewport: SVGGElement, svg: SVGSVGElement, canvas: HTMLCanvasElement}} where
 */
function bulkDrawing({ viewport, svg, canvas }) {
  const layers = [s("g"), s("g"), s("g")]; // groups, edges, boxes: in drawing order
  /** @type {Map<string, SVGElement>} */ const boxEls = new Map();
  /** @type {Map<any, SVGElement>} */ const edgeEls = new Map();
  let items = []; // {layer, x0, y0, x1, y1, item, kind, shape, part, seen}
  let byKind = new Map(); // the items of each kind, in drawing order
  let placed = []; // the items whose part is in the SVG
  const fresh = []; // the items placed by the last update (reused: no garbage a frame)
  const pools = new Map(); // shape -> the parts out of view (NOTE [Elements reused])
  const dropped = []; // the parts that left the view this update: out of the SVG unless reused
  let stamp = 0; // the update that last saw an item in view (its ``seen``)
  let lay = null;
  let make = null;
  let shown = () => {};
  let colours = null;
  let frame = 0;
  let last = { x: 0, y: 0, k: 1 };
  const kept = { canvas: document.createElement("canvas"), k: 0, lay: null, w: 0, h: 0, at: 0,
    timer: 0 };

  /** A new layout: its items with their extents; nothing placed yet. */
  function set(layout, makers, onShown) {
    lay = layout;
    make = makers;
    shown = onShown;
    forget();
    for (const l of layers) l.replaceChildren();
    viewport.replaceChildren(...layers);
    colours = null;
    ({ items, byKind } = bulkItems(lay, make));
  }

  /** Drop the items, the parts and the pools (a new layout, or none). */
  function forget() {
    items = [];
    byKind = new Map();
    placed = [];
    fresh.length = 0;
    dropped.length = 0;
    pools.clear();
    boxEls.clear();
    edgeEls.clear();
  }

  /** Put ``it``'s part in the SVG: one from the pool set to it (where it is, if it is still
   * in the SVG), or a new one. */
  function place(it) {
    const part = pools.get(it.shape)?.pop();
    if (part) {
      part.set(it.item);
      part.free = false;
    }
    it.part = part || (it.layer === 0 ? make.group(it.item)
      : it.layer === 1 ? make.edge(it.item) : make.box(it.item));
    if (!it.part.el.isConnected) layers[it.layer].append(it.part.el);
    placed.push(it);
    if (it.layer === 2) boxEls.set(it.item.ref, it.part.el);
    else if (it.layer === 1) edgeEls.set(it.item, it.part.el);
  }

  /** Put ``it``'s part in the pool of its shape, in the SVG until ``tidy`` (unless reused). */
  function drop(it) {
    if (!pools.has(it.shape)) pools.set(it.shape, []);
    pools.get(it.shape).push(it.part);
    dropped.push(it.part);
    it.part.free = true;
    it.part = null;
    if (it.layer === 2) boxEls.delete(it.item.ref);
    else if (it.layer === 1) edgeEls.delete(it.item);
  }

  /** Take the parts dropped and not placed again out of the SVG. */
  function tidy() {
    for (let i = 0; i < dropped.length; i++) if (dropped[i].free) dropped[i].el.remove();
    dropped.length = 0;
  }

  /** The SVG elements of what touches the view (and MARGIN_PX around it): placed as they come
   * in, dropped as they go, with no arrays or maps made a frame. */
  function detail(view, r) {
    stamp += 1;
    const x0 = (-MARGIN_PX - view.x) / view.k;
    const y0 = (-MARGIN_PX - view.y) / view.k;
    const x1 = (r.width + MARGIN_PX - view.x) / view.k;
    const y1 = (r.height + MARGIN_PX - view.y) / view.k;
    fresh.length = 0;
    for (let i = 0; i < items.length; i++) {
      const it = items[i];
      if (it.x1 < x0 || it.x0 > x1 || it.y1 < y0 || it.y0 > y1) continue;
      it.seen = stamp;
      if (!it.part) fresh.push(it);
    }
    const before = placed.length;
    dropUnseen();
    if (!fresh.length && placed.length === before) return;
    for (let i = 0; i < fresh.length; i++) place(fresh[i]); // after the drops: their parts
    tidy();
    shown(fresh);
  }

  /** Drop the placed items not seen by the last update (all of them below DETAIL_K). */
  function dropUnseen() {
    let n = 0;
    for (let i = 0; i < placed.length; i++) {
      const it = placed[i];
      if (it.seen === stamp) placed[n++] = it;
      else drop(it);
    }
    placed.length = n;
  }

  /** The overview drawing: what is in view as boxes and straight lines, no text; the whole
   * graph drawn once a zoom where it is small enough, then moved (NOTE [Overview kept]). */
  function paint(view, r) {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.round(r.width * dpr);
    const h = Math.round(r.height * dpr);
    if (canvas.width !== w || canvas.height !== h) {
      canvas.width = w;
      canvas.height = h;
      canvas.style.width = `${r.width}px`;
      canvas.style.height = `${r.height}px`;
    }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, w, h);
    if (!lay || view.k >= DETAIL_K) return;
    if (!colours) {
      colours = readColours(svg);
      kept.lay = null; // (drawn in the old ones)
    }
    const k = dpr * view.k;
    const [gw, gh] = [Math.ceil(lay.width * k) + 2, Math.ceil(lay.height * k) + 2];
    if (gw * gh > Math.max(KEPT_PX, 2 * w * h)) { // too big to keep: what is in view
      ctx.setTransform(k, 0, 0, k, dpr * view.x, dpr * view.y);
      drawItems(ctx, byKind, colours, view.k, -view.x / view.k, -view.y / view.k, r.width / view.k,
        r.height / view.k);
      return;
    }
    const now = performance.now();
    clearTimeout(kept.timer);
    if (kept.lay === lay && kept.k !== k && now - kept.at < SETTLE_MS) { // zooming: scaled
      const f = k / kept.k;
      ctx.drawImage(kept.canvas, 0, 0, kept.w, kept.h, Math.round(dpr * view.x) - f,
        Math.round(dpr * view.y) - f, kept.w * f, kept.h * f);
      kept.timer = setTimeout(() => update(last, svg.getBoundingClientRect()), SETTLE_MS);
      return;
    }
    if (kept.k !== k || kept.lay !== lay) {
      const c = kept.canvas;
      if (c.width < gw || c.height < gh) { // grown only: no new buffer a zoom step
        c.width = Math.max(c.width, gw);
        c.height = Math.max(c.height, gh);
      }
      const kc = c.getContext("2d");
      kc.setTransform(1, 0, 0, 1, 0, 0);
      kc.clearRect(0, 0, c.width, c.height);
      kc.setTransform(k, 0, 0, k, 1, 1);
      drawItems(kc, byKind, colours, view.k, -1, -1, lay.width + 2, lay.height + 2);
      Object.assign(kept, { k, lay, w: gw, h: gh, at: now });
    }
    ctx.drawImage(kept.canvas, 0, 0, gw, gh, Math.round(dpr * view.x) - 1,
      Math.round(dpr * view.y) - 1, gw, gh);
  }

  /** Draw ``view``: the detail in the SVG or the overview on the canvas, once a frame. */
  function update(view, r) {
    if (!lay) return;
    last = { ...view };
    if (view.k >= DETAIL_K) detail(view, r);
    else if (placed.length) { // no SVG elements below DETAIL_K
      stamp += 1;
      dropUnseen();
      tidy();
      fresh.length = 0;
      shown(fresh);
    }
    if (!frame) {
      frame = requestAnimationFrame(() => {
        frame = 0;
        paint(last, svg.getBoundingClientRect());
      });
    }
  }

  /** Leave bulk drawing (a smaller layout came): clear the canvas. */
  function clear() {
    lay = null;
    kept.lay = null;
    clearTimeout(kept.timer);
    forget();
    canvas.getContext("2d")?.clearRect(0, 0, canvas.width, canvas.height);
  }

  const boxAt = (gx, gy, tol) => nearestBox(items, gx, gy, tol);
  return { set, update, clear, boxAt, boxEls, edgeEls, active: () => lay !== null };
}

/**
 * The bulk drawing's items of ``lay``: each group frame, edge and box with its extent and
 * ``shape`` (``make.shape``), none placed; ``byKind``: each kind's, in drawing order.
 * @param {Layout} lay
 */
function bulkItems(lay, make) {
  const items = [];
  const item = (layer, x0, y0, x1, y1, it, kind) => ({ layer, x0, y0, x1, y1, item: it, kind,
    shape: make.shape(layer, it), part: null, seen: 0 });
  for (const g of lay.groups || []) {
    items.push(item(0, g.x, g.y, g.x + g.w, g.y + g.h, g, "group-frame"));
  }
  for (const e of lay.edges || []) {
    const p = e.points;
    let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
    for (let j = 0; j < p.length; j += 2) {
      x0 = Math.min(x0, p[j]); x1 = Math.max(x1, p[j]);
      y0 = Math.min(y0, p[j + 1]); y1 = Math.max(y1, p[j + 1]);
    }
    if (edgeLabelled(e)) { // the label's baseline start
      x1 = Math.max(x1, e.lx + 8 * e.label.length);
      y0 = Math.min(y0, e.ly - 12);
    }
    items.push(item(1, x0, y0, x1, y1, e, "edge"));
  }
  for (const b of lay.nodes || []) {
    const kind = make.kindOf(b);
    items.push(item(2, b.x, b.y, b.x + b.w, b.y + b.h, b, BULK_KINDS.includes(kind) ? kind
      : "node"));
  }
  const byKind = new Map([["group-frame", []], ["edge", []], ...BULK_KINDS.map((k) => [k, []])]);
  for (const it of items) byKind.get(it.kind).push(it);
  return { items, byKind };
}

/** Mark the selection and the answers (answers.js) on the parts just placed (``fresh``). */
function showPlaced(model, snap, fresh) {
  const sel = model.get("selected");
  for (const it of fresh) {
    if (it.layer === 2 && it.item.ref === sel) it.part.el.classList.add("nbg-selected");
  }
  markPlaced(model, snap, fresh);
}

/** The box of ``items`` nearest graph point (``gx``, ``gy``) within ``tol`` of it, or null. */
function nearestBox(items, gx, gy, tol) {
  let best = null;
  let bestD = tol;
  for (const it of items) {
    if (it.layer !== 2) continue;
    const d = Math.max(it.x0 - gx, gx - it.x1, it.y0 - gy, gy - it.y1, 0);
    if (d <= bestD) [best, bestD] = [it.item, d];
  }
  return best;
}

/** Each kind's fill and stroke as the stylesheet draws them (a theme's too), read in ``svg``. */
function readColours(svg) {
  const probe = s("g");
  svg.append(probe);
  const out = {};
  for (const kind of [...BULK_KINDS, "group-frame"]) {
    const g = s("g", { class: kind === "group-frame" ? "nbg-group" : `nbg-node nbg-${kind}` });
    const rect = s("rect");
    g.append(rect);
    probe.append(g);
    const cs = getComputedStyle(rect);
    out[kind] = { fill: cs.fill, stroke: cs.stroke };
  }
  const edge = s("path", { class: "nbg-edge-line" });
  probe.append(edge);
  out.edge = { stroke: getComputedStyle(edge).stroke };
  probe.remove();
  return out;
}

/**
 * The bulk drawing's items (``byKind``: each kind's, in drawing order) that touch the rectangle
 * (graph units) drawn on ``ctx`` at zoom ``k`` in ``colours``, a kind at once.
 */
function drawItems(ctx, byKind, colours, k, x0, y0, width, height) {
  const [x1, y1] = [x0 + width, y0 + height];
  ctx.lineWidth = 1 / k; // 1 px whatever the zoom
  for (const [key, its] of byKind) { // with no garbage made per frame
    ctx.beginPath();
    let any = false;
    for (let i = 0; i < its.length; i++) { // (for-of makes an object a box until optimised)
      const it = its[i];
      if (it.x1 < x0 || it.x0 > x1 || it.y1 < y0 || it.y0 > y1) continue;
      any = true;
      if (key !== "edge") {
        ctx.rect(it.x0, it.y0, it.x1 - it.x0, it.y1 - it.y0);
        continue;
      }
      const p = it.item.points;
      ctx.moveTo(p[0], p[1]);
      for (let j = 2; j < p.length; j += 2) ctx.lineTo(p[j], p[j + 1]);
    }
    if (!any) continue;
    const c = colours[key];
    if (key !== "edge" && c.fill && c.fill !== "none") {
      ctx.fillStyle = c.fill;
      ctx.fill();
    }
    ctx.strokeStyle = c.stroke;
    ctx.stroke();
  }
}

/**
 * A click (event ``e``) on the bulk drawing's canvas below DETAIL_K: ``centreOn`` the box there,
 * which zooms to where its box is drawn, to click.
 */
function zoomToBoxAt(e, bulk, svg, view, centreOn) {
  if (!bulk.active() || view.k >= DETAIL_K) return;
  const r = svg.getBoundingClientRect();
  const b = bulk.boxAt((e.clientX - r.left - view.x) / view.k,
    (e.clientY - r.top - view.y) / view.k, 4 / view.k); // within 4 px: small boxes
  if (b) centreOn(b.ref);
}

/**
 * The overview's boxes of a big layout as one picture (NOTE [Big graphs drawn in bulk]): an
 * <image> of ``width`` x ``height`` px, each box at scale ``mini``.
 * @param {Layout} lay
 */
function miniPicture(lay, mini, width, height) {
  const c = document.createElement("canvas");
  const dpr = window.devicePixelRatio || 1;
  c.width = Math.round(width * dpr);
  c.height = Math.round(height * dpr);
  const ctx = c.getContext("2d");
  ctx.scale(dpr, dpr);
  const fills = { group: "#e2b867", series: "#a48bd0" }; // as .nbg-mini-* in graph_view.css
  for (const kind of [null, "group", "series"]) {
    ctx.fillStyle = fills[kind] || "#9fb3d6";
    ctx.beginPath();
    for (const b of lay.nodes || []) {
      if ((fills[b.kind] ? b.kind : null) !== kind) continue;
      ctx.rect(mini.x + b.x * mini.k, mini.y + b.y * mini.k, Math.max(1, b.w * mini.k),
        Math.max(1, b.h * mini.k));
    }
    ctx.fill();
  }
  return s("image", { href: c.toDataURL(), x: 0, y: 0, width, height });
}
