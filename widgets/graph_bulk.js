// nbgrad GraphView: a big graph drawn in bulk. Concatenated after common.js and before
// graph_view.js (``esm`` in nbgrad/notebook/_widget.py); graph_view.js calls ``bulkDrawing``.

// NOTE [Big graphs drawn in bulk]
// A graph view with one SVG element per box and edge repaints every element on each frame of a pan
// or zoom: at 10,000 boxes (100,000 elements) far below 30 frames a second, in a tab of over a GB
// (tests/benchmarks/browser_pan_zoom.py prints both). So a layout of more than BULK_BOXES boxes is
// drawn in two ways, by zoom. Where labels are readable (k >= DETAIL_K) the SVG holds only the
// groups, edges and boxes that touch the view (and a margin of MARGIN_PX): the same elements as a
// small graph's, made as the view reaches them and dropped as it leaves, so clicks, search,
// highlights and what tests read work on them. Below DETAIL_K the SVG holds none: a canvas under
// it draws what is in view as plain boxes and straight lines, with no text (a label would be under
// 6 px), one path per kind (new Path2D objects each frame instead grew the tab by hundreds of MB
// while panning: the benchmark prints its memory after each run); its colours are read from the
// stylesheet (a theme's too). A click on a box there zooms to it. The overview is then one
// picture, not one element per box. A smaller graph keeps its one SVG drawing.
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

/**
 * The bulk drawing of a big layout (NOTE [Big graphs drawn in bulk]) in ``viewport`` (the
 * SVG's pan and zoom group) and ``canvas`` (a <canvas> under the SVG).
 * ``set(layout, make, shown)`` takes a layout: ``make`` builds one element
 * (``make.group(g)``, ``make.edge(e)``, ``make.box(b)``: ``graphMakers`` in graph_view.js),
 * ``shown(boxEls)`` is called after the set of box elements changed; ``update(view, r)`` draws
 * ``view`` in a canvas of size ``r``.
 * @param {{viewport: SVGGElement, svg: SVGSVGElement, canvas: HTMLCanvasElement}} where
 */
function bulkDrawing({ viewport, svg, canvas }) {
  const layers = [s("g"), s("g"), s("g")]; // groups, edges, boxes: in drawing order
  /** @type {Map<string, SVGElement>} */ const boxEls = new Map();
  let items = []; // {key, layer, x0, y0, x1, y1, item, kind}
  let byKind = new Map(); // the items of each kind, in drawing order
  const made = new Map(); // key -> element now in the SVG
  let lay = null;
  let make = null;
  let shown = () => {};
  let colours = null;
  let frame = 0;
  let last = { x: 0, y: 0, k: 1 };
  const kept = { canvas: document.createElement("canvas"), k: 0, lay: null, w: 0, h: 0, at: 0,
    timer: 0 };

  /** A new layout: its items with their extents; nothing made yet. */
  function set(layout, makers, onShown) {
    lay = layout;
    make = makers;
    shown = onShown;
    made.clear();
    boxEls.clear();
    for (const l of layers) l.replaceChildren();
    viewport.replaceChildren(...layers);
    colours = null;
    items = [];
    for (const g of lay.groups || []) {
      items.push({ key: `g${g.id}`, layer: 0, x0: g.x, y0: g.y, x1: g.x + g.w, y1: g.y + g.h,
        item: g, kind: "group-frame" });
    }
    (lay.edges || []).forEach((e, i) => {
      const p = e.points;
      let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
      for (let j = 0; j < p.length; j += 2) {
        x0 = Math.min(x0, p[j]); x1 = Math.max(x1, p[j]);
        y0 = Math.min(y0, p[j + 1]); y1 = Math.max(y1, p[j + 1]);
      }
      if (e.label && e.lx !== null && e.lx !== undefined) { // the label's baseline start
        x1 = Math.max(x1, e.lx + 8 * e.label.length);
        y0 = Math.min(y0, e.ly - 12);
      }
      items.push({ key: `e${i}`, layer: 1, x0, y0, x1, y1, item: e, kind: "edge" });
    });
    for (const b of lay.nodes || []) {
      const kind = make.kindOf(b);
      items.push({ key: `n${b.ref}`, layer: 2, x0: b.x, y0: b.y, x1: b.x + b.w, y1: b.y + b.h,
        item: b, kind: BULK_KINDS.includes(kind) ? kind : "node" });
    }
    byKind = new Map([["group-frame", []], ["edge", []], ...BULK_KINDS.map((k) => [k, []])]);
    for (const it of items) byKind.get(it.kind).push(it);
  }

  /** The items of ``view`` (in a canvas of size ``r``) grown by ``margin`` px. */
  function inView(view, r, margin) {
    const x0 = (-margin - view.x) / view.k;
    const y0 = (-margin - view.y) / view.k;
    const x1 = (r.width + margin - view.x) / view.k;
    const y1 = (r.height + margin - view.y) / view.k;
    return items.filter((it) => it.x1 >= x0 && it.x0 <= x1 && it.y1 >= y0 && it.y0 <= y1);
  }

  /** The SVG elements of what touches the view: made as they come in, dropped as they go. */
  function detail(view, r) {
    const want = new Map(inView(view, r, MARGIN_PX).map((it) => [it.key, it]));
    let changed = false;
    for (const [key, el] of made) {
      if (want.has(key)) continue;
      el.remove();
      made.delete(key);
      if (key[0] === "n") boxEls.delete(key.slice(1));
      changed = true;
    }
    for (const [key, it] of want) {
      if (made.has(key)) continue;
      const el = it.layer === 0 ? make.group(it.item)
        : it.layer === 1 ? make.edge(it.item) : make.box(it.item);
      layers[it.layer].append(el);
      made.set(key, el);
      if (it.layer === 2) boxEls.set(it.item.ref, el);
      changed = true;
    }
    if (changed) shown(boxEls);
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
    else if (made.size) { // no SVG elements below DETAIL_K
      for (const el of made.values()) el.remove();
      made.clear();
      boxEls.clear();
      shown(boxEls);
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
    items = [];
    byKind = new Map();
    made.clear();
    boxEls.clear();
    canvas.getContext("2d")?.clearRect(0, 0, canvas.width, canvas.height);
  }

  /** The box nearest graph point (``gx``, ``gy``) within ``tol`` of it, or null. */
  function boxAt(gx, gy, tol) {
    let best = null;
    let bestD = tol;
    for (const it of items) {
      if (it.layer !== 2) continue;
      const d = Math.max(it.x0 - gx, gx - it.x1, it.y0 - gy, gy - it.y1, 0);
      if (d <= bestD) [best, bestD] = [it.item, d];
    }
    return best;
  }

  return { set, update, clear, boxAt, boxEls, active: () => lay !== null };
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
