// nbgrad GraphView: the grad_fn graph, drawn from a snapshot and its layout.
// Browser side of nbgrad/notebook/graph_view.py (an ES module for anywidget, after common.js).
// What it draws (Snapshot, Layout) is typed once, in common.js.

function render({ model, el }) {
  el.classList.add("nbg-graph");
  const snapshot = jsonTrait(model, "_snapshot_json");
  const graphLayout = jsonTrait(model, "_layout_json");
  const status = h("span", { class: "nbg-status" });
  const passSelect = h("select", { class: "nbg-pass", title: "gradients of which backward pass" });
  const toolbar = h(
    "div",
    { class: "nbg-toolbar" },
    h("button", { onclick: () => fit(), title: "fit the graph in the view" }, "Fit"),
    h("button", { onclick: () => zoomBy(1.25), title: "zoom in" }, "+"),
    h("button", { onclick: () => zoomBy(0.8), title: "zoom out" }, "−"),
    h("button", { onclick: () => model.send({ type: "expand_all" }) }, "Expand all"),
    h("button", { onclick: () => model.send({ type: "collapse_all" }) }, "Collapse all"),
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
  const panel = h("div", { class: "nbg-panel" });
  const errorBox = h("pre", { class: "nbg-error" });
  el.append(toolbar, h("div", { class: "nbg-main" }, svg, panel), errorBox);

  let view = { x: 0, y: 0, k: 1 };
  let fitted = false;
  let lastSize = "";
  /** @type {Map<string, SnapNode>} */ let nodes = new Map();
  /** @type {Map<string, SnapEdge>} */ let edges = new Map();
  /** @type {Map<string, SnapGroup>} */ let groups = new Map();
  /** @type {Map<string, SVGElement>} */ let boxEls = new Map();
  let selectedEdge = null;

  function applyView() {
    viewport.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
  }

  function fit() {
    /** @type {Layout} */ const lay = graphLayout();
    const r = svg.getBoundingClientRect();
    if (!lay || !lay.width || !r.width) return;
    const k = Math.min(1.25, Math.max(0.05, Math.min(r.width / lay.width, r.height / lay.height)));
    view = { k, x: (r.width - lay.width * k) / 2, y: Math.max(0, (r.height - lay.height * k) / 2) };
    fitted = true;
    applyView();
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

  // pan and zoom
  let drag = null;
  svg.addEventListener("pointerdown", (e) => {
    if (e.target.closest && e.target.closest(".nbg-node, .nbg-edge, .nbg-group-label")) return;
    drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y };
    svg.setPointerCapture?.(e.pointerId);
  });
  svg.addEventListener("pointermove", (e) => {
    if (!drag) return;
    view.x = drag.vx + e.clientX - drag.x;
    view.y = drag.vy + e.clientY - drag.y;
    applyView();
  });
  const endDrag = () => { drag = null; };
  svg.addEventListener("pointerup", endDrag);
  svg.addEventListener("pointerleave", endDrag);
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = svg.getBoundingClientRect();
    zoomBy(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });

  function select(id) {
    selectedEdge = null;
    model.set("selected", id);
    model.save_changes();
    model.send({ type: "select", id });
    highlight();
    showPanel();
  }

  function draw() {
    /** @type {Snapshot} */ const snap = snapshot();
    /** @type {Layout} */ const lay = graphLayout();
    nodes = new Map((snap.nodes || []).map((n) => [n.id, n]));
    edges = new Map((snap.edges || []).map((e) => [e.id, e]));
    groups = new Map((snap.groups || []).map((g) => [g.id, g]));
    const roots = new Set(snap.roots || []);
    boxEls = new Map();
    const frag = document.createDocumentFragment();
    for (const g of lay.groups || []) {
      const grp = s("g", { class: "nbg-group" });
      grp.append(s("rect", { x: g.x, y: g.y, width: g.w, height: g.h, rx: 8 }));
      const label = s("text", { x: g.x + 8, y: g.y + 13, class: "nbg-group-label" });
      label.textContent = "▾ " + g.label;
      label.addEventListener("click", () => model.send({ type: "toggle", group: g.id }));
      const title = s("title");
      title.textContent = "click to collapse";
      label.append(title);
      grp.append(label);
      frag.append(grp);
    }
    for (const e of lay.edges || []) {
      const [x1, y1, x2, y2] = e.points; // the first segment: where the label goes
      const grp = s("g", { class: "nbg-edge" });
      const d = edgePath(e.points);
      grp.append(s("path", { d, class: "nbg-edge-hit" }));
      grp.append(s("path", { d, class: "nbg-edge-line", "marker-end": "url(#nbg-arrow-live)" }));
      const text = e.label ?? (e.grad !== null && e.grad !== undefined ? fmt(e.grad) : null);
      if (text) {
        const t = s("text", { x: (x1 + x2) / 2 + 4, y: (y1 + y2) / 2 + 3, class: "nbg-edge-label" });
        t.textContent = text;
        grp.append(t);
      }
      const title = s("title");
      title.textContent = e.edges.map((id) => gradText(edges.get(id)?.grad ?? null)).join("\n");
      grp.append(title);
      grp.addEventListener("click", () => {
        selectedEdge = e;
        showPanel();
      });
      frag.append(grp);
    }
    for (const b of lay.nodes || []) {
      let kind = "group";
      let hooks = 0;
      if (b.kind !== "group") {
        const n = nodes.get(b.ref);
        kind = n ? n.kind : "node";
        if (kind === "node" && roots.has(b.ref)) kind = "root";
        hooks = n ? n.hooks.length : 0;
      }
      const grp = s("g", { class: `nbg-node nbg-${kind}`, "data-id": b.ref });
      grp.append(s("rect", { x: b.x, y: b.y, width: b.w, height: b.h, rx: 5 }));
      const t1 = s("text", { x: b.x + b.w / 2, y: b.y + 15, class: "nbg-label" });
      t1.textContent = b.label;
      grp.append(t1);
      if (b.sub) {
        const t2 = s("text", { x: b.x + b.w / 2, y: b.y + 29, class: "nbg-sub" });
        t2.textContent = b.sub;
        grp.append(t2);
      }
      if (hooks) {
        grp.append(s("circle", { cx: b.x + b.w - 2, cy: b.y + 2, r: 7, class: "nbg-badge" }));
        const t3 = s("text", { x: b.x + b.w - 2, y: b.y + 5.5, class: "nbg-badge-text" });
        t3.textContent = String(hooks);
        grp.append(t3);
      }
      grp.addEventListener("click", () => select(b.ref));
      if (b.kind === "group") {
        grp.addEventListener("dblclick", () => model.send({ type: "toggle", group: b.ref }));
      }
      boxEls.set(b.ref, grp);
      frag.append(grp);
    }
    viewport.replaceChildren(frag);
    // the pass chooser
    const passes = snap.passes || [];
    passSelect.replaceChildren(
      ...passes.map((p) => h("option", { value: p.index, selected: p.index === snap.pass },
        `pass ${p.index}${p.error ? " (failed)" : ""}`)),
    );
    passSelect.style.display = passes.length > 1 ? "" : "none";
    const live = model.get("live") ? "● recording… " : "";
    status.textContent = `${live}${snap.nodes.length} nodes, ${snap.edges.length} edges` +
      (snap.truncated ? " (truncated)" : "") +
      (snap.pass !== null && snap.pass !== undefined ? `; gradients of pass ${snap.pass}` : "");
    // fit again when the drawing changed size (a group collapsed, the graph grew)
    const size = `${lay.width}x${lay.height}`;
    if (!fitted || model.get("live") || size !== lastSize) fit();
    lastSize = size;
    highlight();
    showPanel();
  }

  passSelect.addEventListener("change", () =>
    model.send({ type: "show_pass", index: Number(passSelect.value) }));

  function highlight() {
    const sel = model.get("selected");
    for (const [id, g] of boxEls) g.classList.toggle("nbg-selected", id === sel);
  }

  function row(label, value) {
    return h("tr", {}, h("th", {}, label), h("td", {}, value));
  }

  function nodeLink(id) {
    if (!id) return h("span", { class: "nbg-muted" }, "None");
    const n = nodes.get(id);
    return h("a", { href: "#", onclick: (e) => { e.preventDefault(); select(id); } },
      n ? `${n.label} (${id})` : id);
  }

  function showPanel() {
    /** @type {Snapshot} */ const snap = snapshot();
    if (selectedEdge) {
      const parts = selectedEdge.edges.map((id) => edges.get(id)).filter(Boolean);
      panel.replaceChildren(
        h("h4", {}, "Edge"),
        ...parts.map((e) => h("div", {},
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
        "Click a node for its details, an edge for its gradient, a group's label to collapse it; " +
        "drag to pan, wheel to zoom."));
      return;
    }
    const g = groups.get(id);
    if (g) {
      const collapsed = (model.get("collapsed") || []).includes(id);
      panel.replaceChildren(
        h("h4", {}, `${g.path}: ${g.type}`),
        h("table", {}, row("records", `${g.records[0]} – ${g.records[1]}`),
          row("depth", g.depth), g.error ? row("error", g.error) : null),
        h("button", { onclick: () => model.send({ type: "toggle", group: id }) },
          collapsed ? "Expand" : "Collapse"),
      );
      return;
    }
    const n = nodes.get(id);
    if (!n) {
      panel.replaceChildren(h("p", { class: "nbg-muted" }, `${id} is not in this graph`));
      return;
    }
    const rec = n.record !== null ? snap.records[n.record] : null;
    const hooks = (snap.hooks || []).filter((x) => n.hooks.includes(x.id));
    const incoming = (snap.edges || []).filter((e) => e.to === id);
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
    if (n.tensor) {
      const tns = n.tensor;
      sections.push(h("h5", {}, "Tensor"), h("table", {},
        tns.name ? row("name", tns.name) : null,
        row("shape", shapeText(tns.shape)),
        row("requires_grad", String(tns.requires_grad)),
        row(".grad", tns.grad ? gradText(tns.grad) : "None")));
    }
    if (n.grad) {
      sections.push(h("h5", {}, "Gradient received"),
        h("div", { class: "nbg-values" }, n.grad.map(gradText).join("\n")));
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
    if (incoming.length && incoming.some((e) => e.grad)) {
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
    panel.replaceChildren(...sections);
  }

  function showError() {
    errorBox.textContent = model.get("error") || "";
    errorBox.style.display = model.get("error") ? "" : "none";
  }

  const onChange = () => draw();
  model.on("change:_snapshot_json", onChange);
  model.on("change:_layout_json", onChange);
  const onSelected = () => { highlight(); showPanel(); };
  model.on("change:selected", onSelected);
  model.on("change:live", onChange);
  model.on("change:error", showError);
  showError();
  draw();
  // the element has no size until it is attached: fit once it has one
  const ro = new ResizeObserver(() => { if (!fitted || model.get("live")) fit(); });
  ro.observe(svg);
  return () => {
    ro.disconnect();
    model.off("change:_snapshot_json", onChange);
    model.off("change:_layout_json", onChange);
    model.off("change:live", onChange);
    model.off("change:selected", onSelected);
    model.off("change:error", showError);
  };
}

export default { render };
