// nbgrad widgets: what the three widgets' browser code shares. nbgrad/notebook/_widget.py
// prepends this file to graph_view.js, hook_editor.js and stepper.js to make each widget's ES
// module (anywidget loads one module per widget and there is no bundler), so those files use
// these names without importing them.

/**
 * The records the kernel sends, each written once here. Their one definition is Python's: the
 * TypedDicts of the same names in nbgrad/notebook/schema.py and layout.py (NOTE [One schema]);
 * tests/notebook/test_schema.py checks every field below against them. A LayoutEdge's points
 * are x1, y1, ..., xn, yn (see edgePath); its label is the norm, "2× norm" or the norms of
 * parallel edges (as layout.grad_label), drawn with its baseline starting at lx, ly (null
 * when there is no label; NOTE [Edge labels] in nbgrad/notebook/layout.py).
 *
 * @typedef {{shape: number[], dtype: string, norm: (number|string|null), numel: number,
 *            values: (number|string)[], truncated: boolean}} GradSummary
 * @typedef {{shape: number[], dtype: string, device: string, requires_grad: boolean,
 *            node: (string|null)}} TensorSummary
 * @typedef {{shape: number[], dtype: string, device: string, requires_grad: boolean,
 *            node: (string|null), grad: (GradSummary|null), name: (string|null)}} LeafTensor
 * @typedef {{name: string, kind: ("tensor"|"tensors"|"value"|"freed"|"none"),
 *            shape?: (number[]|number[][]), dtype?: (string|null), version?: (number|null),
 *            output?: (boolean|null), value?: string}} Saved
 * @typedef {{node: (string|null), input_nr: number}} SnapNext
 * @typedef {{shape: number[], dtype: string, device: string}} SnapInputMetadata
 * @typedef {{id: string, kind: ("node"|"leaf"|"external"|"root"), name: string, label: string,
 *            seq: (number|null), shapes: number[][], dtype: (string|null),
 *            device: (string|null), group: (string|null), record: (number|null),
 *            line: (number|null), source: string, metadata: Object<string, string>,
 *            saved: Saved[], next: SnapNext[], input_metadata: SnapInputMetadata[],
 *            hooks: string[], tensor: (LeafTensor|null), grad: ((GradSummary|null)[]|null),
 *            order: (number|null), time: (number|null),
 *            nonfinite?: ("nan"|"+inf"|"-inf")[], nonfinite_origin?: boolean}} SnapNode
 * @typedef {{id: string, from: string, to: string, index: number, input_nr: number,
 *            grad: (GradSummary|null)}} SnapEdge
 * @typedef {{id: string, name: string, type: string, path: string, parent: (string|null),
 *            depth: number, records: number[], error: (string|null)}} SnapGroup
 * @typedef {{index: number, op: string, node: (string|null), inputs: TensorSummary[],
 *            outputs: TensorSummary[], time_us: (number|null), line: (number|null),
 *            file: (string|null), source: string, group: (string|null)}} SnapRecord
 * @typedef {{id: string, kind: string, target_kind: ("tensor"|"node"|"module"),
 *            target: (string|null), name: string, enabled: boolean,
 *            source: (string|null)}} SnapHook
 * @typedef {{hook: (string|null), name: string, kind: string, node: string, node_name: string,
 *            before: (GradSummary|(GradSummary|null)[]|null),
 *            after: (GradSummary|(GradSummary|null)[]|null), changed: boolean}} HookCall
 * @typedef {{index: number, root: (string|null), retain_graph: boolean,
 *            create_graph: boolean, order: string[], error: (string|null),
 *            hooks: HookCall[]}} Pass
 * @typedef {{line: (number|null), source: string, error: string}} Failure
 * @typedef {{schema: "nbgrad.snapshot", version: 1, nodes: SnapNode[], edges: SnapEdge[],
 *            groups: SnapGroup[], records: SnapRecord[], hooks: SnapHook[], passes: Pass[],
 *            roots: string[], pass: (number|null), truncated: boolean, max_nodes: number,
 *            left_out: number, cut_nodes: number, stubs: number, backward_ops: number,
 *            kept_steps: number, counted_steps: number, failure: (Failure|null)}} Snapshot
 * @typedef {{node: string, grad: (GradSummary|null), before: (GradSummary|null),
 *            after: (GradSummary|null)}} Accumulated
 * @typedef {{index: number, node: string, device: string, inputs: (GradSummary|null)[],
 *            outputs: (GradSummary|null)[], hooks: HookCall[],
 *            ready: Object<string, string[]>, dependencies: Object<string, number>,
 *            buffers: Object<string, (GradSummary|null)[]>, made_ready: string[],
 *            accumulated: (Accumulated|null)}} Step
 * @typedef {{dependencies: Object<string, number>, ready: Object<string, string[]>}} TraceStart
 * @typedef {{dependencies: Object<string, number>,
 *            buffers: Object<string, (GradSummary|null)[]>}} TraceEnd
 * @typedef {{schema: "nbgrad.trace", version: 1, graph: Snapshot, root: string,
 *            initial: TraceStart, steps: Step[], final: TraceEnd, error: (string|null),
 *            model_differs: (number[]|null)}} Trace
 * @typedef {{id: string, kind: ("node"|"group"|"series"), x: number, y: number, w: number,
 *            h: number, label: string, sub: string, ref: string, group: (string|null)}} Box
 * @typedef {{from: string, to: string, edges: string[], grad: (number|string|null),
 *            grads: (number|string|null)[], label: (string|null), points: number[],
 *            lx: (number|null), ly: (number|null)}} LayoutEdge
 * @typedef {{id: string, label: string, x: number, y: number, w: number, h: number,
 *            depth: number}} LayoutGroup
 * @typedef {{id: string, label: string, count: number, period: number, nodes: number,
 *            expanded: boolean}} LayoutSeries
 * @typedef {{width: number, height: number, nodes: Box[], edges: LayoutEdge[],
 *            groups: LayoutGroup[], collapsed: string[], series: LayoutSeries[],
 *            expanded: string[]}} Layout
 * @typedef {{id: string, kind?: ("node"|"leaf"|"external"|"root"), name: string, label?: string,
 *            group?: string, line?: number, hooks?: number, order?: number,
 *            nonfinite?: ("nan"|"+inf"|"-inf")[], nonfinite_origin?: boolean}} ViewNode
 * @typedef {{strings: string[], id: string[], name: number[], label: number[], kind: number[],
 *            group: (number|null)[], line: (number|null)[], order: (number|null)[],
 *            hooks: Object<string, number>,
 *            nonfinite: Object<string, ("nan"|"+inf"|"-inf")[]>,
 *            nonfinite_origin: Object<string, boolean>}} ViewNodes
 * @typedef {{strings: string[], id: string[], name: number[], type: number[],
 *            path: (string|null)[], parent: (number|null)[], depth: number[],
 *            records: number[][], error: Object<string, string>}} ViewGroups
 * @typedef {{index: number, root: (string|null), retain_graph: boolean,
 *            create_graph: boolean, error: (string|null), hooks: HookCall[]}} ViewPass
 * @typedef {{schema: "nbgrad.view", version: 1, nodes: ViewNodes, edges: number,
 *            groups: ViewGroups, hooks: SnapHook[], passes: ViewPass[], roots: string[],
 *            pass: (number|null), truncated: boolean, max_nodes: number, left_out: number,
 *            cut_nodes: number, stubs: number, failure: (Failure|null)}} ViewSnapshot
 * @typedef {{id: string, node: (SnapNode|null), record: (SnapRecord|null),
 *            incoming: SnapEdge[], edges: SnapEdge[]}} Details
 */

const SVGNS = "http://www.w3.org/2000/svg";

/**
 * An HTML element: ``attrs`` are attributes, but for ``onclick`` / ``onchange`` (listeners)
 * and ``text`` (the text content); children are nodes or strings.
 */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "onclick") el.addEventListener("click", v);
    else if (k === "onchange") el.addEventListener("change", v);
    else if (k === "text") el.textContent = v;
    else if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** An SVG element with the given attributes. */
function s(tag, attrs = {}) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

/**
 * SVG path data through a layout edge's points: curves between layers, straight lines
 * through a long edge's dummy boxes, the end 1px short (as edge_path in nbgrad/notebook/svg.py).
 * @param {number[]} points
 */
export function edgePath(points) {
  const p = points.slice();
  p[p.length - 1] -= 1;
  const d = [`M${p[0]},${p[1]}`];
  for (let k = 2; k < p.length; k += 2) {
    const [x0, y0, x1, y1] = [p[k - 2], p[k - 1], p[k], p[k + 1]];
    if ((k / 2) % 2 === 1) {
      const dy = Math.max(18, (y1 - y0) / 2);
      d.push(`C${x0},${y0 + dy} ${x1},${y1 - dy} ${x1},${y1}`);
    } else {
      d.push(`L${x1},${y1}`);
    }
  }
  return d.join(" ");
}

/** @param {number|string|null|undefined} v */
export function fmt(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "string") return v;
  if (v === 0) return "0";
  const a = Math.abs(v);
  return a >= 1e4 || a < 1e-3 ? v.toExponential(3) : String(Number(v.toPrecision(4)));
}

function shapeText(shape) {
  return shape && shape.length ? shape.join("×") : "scalar";
}

/**
 * A gradient in one line: its shape (unless ``withShape`` is false: only ``false`` counts, so
 * that ``grads.map(gradText)`` works), norm and first values.
 * @param {GradSummary|GradSummary[]|null} g
 * @param {boolean} [withShape]
 */
function gradText(g, withShape) {
  if (g === null || g === undefined) return "None";
  if (Array.isArray(g)) return "(" + g.map((x) => gradText(x, withShape)).join(", ") + ")";
  if (g.repr !== undefined) return g.repr;
  const vals = g.values.map(fmt).join(", ") + (g.truncated ? ", …" : "");
  const shape = withShape === false ? "" : `[${shapeText(g.shape)}] `;
  return `${shape}‖g‖=${fmt(g.norm)} [${vals}]`;
}

/**
 * A trait that the kernel sends as a JSON string (one string is far cheaper for ipywidgets to
 * send than a deep dict), parsed once per change, then passed through ``read`` if given.
 * @param {any} model
 * @param {string} name
 * @param {(value: any) => any} [read]
 */
function jsonTrait(model, name, read) {
  let text = null;
  let value = null;
  return () => {
    const now = model.get(name);
    if (now !== text) {
      text = now;
      value = JSON.parse(now || "{}");
      if (read) value = read(value);
    }
    return value;
  };
}

/**
 * The ViewNode objects that a view's columns hold (NOTE [Nodes and groups sent as columns] in
 * nbgrad/notebook/schema.py); a list of objects (a notebook saved before) is read as it is.
 * @param {ViewNodes|ViewNode[]|undefined} packed
 * @param {SnapGroup[]} groups the view's groups, read
 * @returns {ViewNode[]}
 */
function unpackNodes(packed, groups) {
  if (!packed || Array.isArray(packed)) return packed || [];
  const s = packed.strings;
  const paths = new Map(groups.map((g) => [g.id, g.path]));
  const rare = ["hooks", "nonfinite", "nonfinite_origin"];
  return packed.id.map((id, i) => {
    /** @type {any} */ const n = { id, name: s[packed.name[i]] };
    if (packed.kind[i]) n.kind = s[packed.kind[i]];
    const label = packed.label[i];
    if (label < 0) n.label = `${paths.get(s[packed.group[i]])}.${s[-1 - label]}`;
    else if (label !== packed.name[i]) n.label = s[label];
    if (packed.group[i] !== null) n.group = s[packed.group[i]];
    if (packed.line[i] !== null) n.line = packed.line[i];
    if (packed.order[i] !== null) n.order = packed.order[i];
    for (const key of rare) if (i in packed[key]) n[key] = packed[key][i];
    return n;
  });
}

/**
 * The SnapGroup objects that a view's columns hold (a list is read as it is).
 * @param {ViewGroups|SnapGroup[]|undefined} packed
 * @returns {SnapGroup[]}
 */
function unpackGroups(packed) {
  if (!packed || Array.isArray(packed)) return packed || [];
  const s = packed.strings;
  const paths = new Map();
  return packed.id.map((id, i) => {
    const name = s[packed.name[i]];
    const parent = packed.parent[i] === null ? null : s[packed.parent[i]];
    const path = packed.path[i] ?? (paths.has(parent) ? `${paths.get(parent)}.${name}` : name);
    paths.set(id, path);
    return { id, name, type: s[packed.type[i]], path, parent, depth: packed.depth[i],
      records: packed.records[i], error: packed.error[i] ?? null };
  });
}

/**
 * A view snapshot as the kernel sends it, its nodes and groups as objects.
 * @param {ViewSnapshot} view
 */
export function readView(view) {
  const groups = unpackGroups(view.groups);
  return { ...view, nodes: unpackNodes(view.nodes, groups), groups };
}

// NOTE [Released and kernel-gone views]
// (see nbgrad/notebook/sessions.py)
// When a cell runs again the kernel closes the widgets of its earlier run; ipywidgets then
// removes their views from the page, which would leave an empty box wherever one was still
// shown (a display in another cell). So on the model's "comm:close" a note takes the view's
// place, beside the view's host in the output (the view and its host go, the note stays).
// After a kernel restart, its death or Kernel > Shut Down Kernel the models stay in the page,
// no longer live: the drawing stays as it was, with a banner saying the kernel is gone, and
// the controls that would ask it something are disabled (not those marked data-nbg-local:
// Fit and zoom; pan needs no kernel either). The kernel's own signals say so (its status, the
// notebook's session losing or changing its kernel); a view that waits for an answer asks
// ``kernelState()`` again, and after LATE_MS with no answer from a kernel that is not busy
// it says that no answer came and how to get a live widget. Both are styled inline: a closed
// model's stylesheet may go with it.
const RELEASED = "released: re-run the cell to see this graph again";
const KERNEL_GONE = "kernel gone: this is the graph as it was (a still picture); " +
  "run the cell again (JupyterLab starts a kernel) to use it again";
const NO_ANSWER = "no answer from the kernel: if it was shut down or restarted, run the cell " +
  "again for a live widget";
const LATE_MS = 4000;
const NOTE_STYLE = "padding:6px 10px;margin:2px 0;border:1px dashed #b0b0b0;border-radius:4px;" +
  "color:#555;background:#f7f7f7;font:12px sans-serif;";

/**
 * Watch the widget's kernel: a note when the model is closed, a banner when its kernel is gone.
 * Returns ``stop`` (stops watching) and ``state`` ("gone", "busy" or "live": see NOTE
 * [Released and kernel-gone views]).
 * @param {any} model
 * @param {HTMLElement} el
 * @returns {{stop: () => void, state: () => ("gone"|"busy"|"live")}}
 */
function watchKernel(model, el) {
  const banner = h("div", { class: "nbg-kernel-gone", role: "status",
    style: NOTE_STYLE + "display:none;border-color:#d9a400;background:#fff8e1;" }, KERNEL_GONE);
  el.prepend(banner);
  const onClose = () => {
    // JupyterLab hides the view's host (its output renderer) once the view is gone: the note
    // goes beside the host, in the output's place
    const host = el.parentElement;
    if (!host || !host.parentElement) return;
    host.after(h("div", { class: "nbg-released", role: "status",
      style: NOTE_STYLE + "flex:1 1 auto;align-self:flex-start;" }, RELEASED));
  };
  // JupyterLab's widget manager knows its kernel and the notebook's session: a restart, a
  // death or a shut down is seen there (a new kernel never knows this widget, so "gone" stays)
  const manager = model.widget_manager;
  const kernel = manager && manager.kernel;
  const session = manager && manager.context && manager.context.sessionContext;
  let gone = false;
  const goneNow = () => Boolean(
    el.classList.contains("jupyter-widgets-disconnected") ||
    (kernel && (kernel.isDisposed || kernel.status === "dead")) ||
    (kernel && session && !session.isDisposed && (session.session?.kernel ?? null) !== kernel));
  const check = () => {
    gone = gone || goneNow();
    banner.style.display = gone ? "" : "none";
    el.classList.toggle("nbg-gone", gone);
    if (!gone) return;
    for (const c of el.querySelectorAll(
      "button:not([data-nbg-local]), input, select, textarea")) c.disabled = true;
  };
  // ipywidgets' own listener (which sets the class) may run after this one
  const onLive = () => setTimeout(check, 0);
  model.on("comm:close", onClose);
  model.on("comm_live_update", onLive);
  const onStatus = (_, status) => {
    if (status === "restarting" || status === "autorestarting" || status === "dead") {
      gone = true;
    }
    check();
  };
  const onKernel = () => check();
  const signals = [
    [kernel && kernel.statusChanged, onStatus],
    [kernel && kernel.disposed, onKernel],
    [session && session.kernelChanged, onKernel],
    [session && session.statusChanged, onKernel],
  ].filter(([signal]) => signal && signal.connect);
  for (const [signal, fn] of signals) signal.connect(fn);
  return {
    stop: () => {
      model.off("comm:close", onClose);
      model.off("comm_live_update", onLive);
      for (const [signal, fn] of signals) signal.disconnect(fn);
    },
    state: () => {
      check();
      return gone ? "gone" : kernel && kernel.status === "busy" ? "busy" : "live";
    },
  };
}

// NOTE [Saved notebooks keep their pictures]
// A widget's output holds the widget view and, beside it, the widget's still picture (SVG and
// PNG: StillWidget._repr_mimebundle_ in nbgrad/notebook/_widget.py). JupyterLab and Notebook 7
// always render the widget view of a trusted output, never the picture: a notebook opened
// again with a new kernel has no model for it and says "Error displaying widget: model not
// found", unless the widget's state was saved in the notebook's metadata, which they do only
// with "Save Widget State Automatically" on (then the whole state, the graph a second time),
// and even then a model restored from the metadata may come too late for the first render
// (the widget manager can call itself restored before it reads the metadata). So the file
// written when the notebook is saved holds no widget view for an nbgrad widget: its output
// keeps the picture and the text, and the notebook's widget state drops the nbgrad widgets
// (and their Layouts). Opened again, each graph shows as a picture, in any frontend, with
// or without a kernel (a page reloaded while its kernel runs too: run the cell again, or show
// a kept session's widget again, for the live widget). The page that saved keeps its live
// widgets: only the saved copy changes (the notebook's ``toJSON``, once, for the save that
// the "started" signal announces; JupyterLab and Notebook 7 write what it returns; where the
// server writes the file from a shared document, with jupyter-collaboration, it does not
// apply). Other widgets' outputs and state are left as they are. The saved picture is the
// PNG alone: a widget's PNG has a line on top saying that running the cell again brings the
// live widget back (StillWidget._repr_mimebundle_), which a page reloaded while its kernel
// runs (it reads the saved file) needs to say. It keeps its size, as the SVG does, and scrolls
// sideways in a narrow output (NOTE [Still pictures keep a readable size] in svg.py).
const WIDGET_VIEW = "application/vnd.jupyter.widget-view+json";
const WIDGET_STATE = "application/vnd.jupyter.widget-state+json";
const SAVED_ON = Symbol.for("nbgrad.saved-pictures"); // on the widget manager: our model ids
/**
 * The notebook as saved (NOTE [Saved notebooks keep their pictures]): ``nb`` (nbformat JSON,
 * left unchanged) without the widget views of nbgrad widgets, which are ``ids`` and the nbgrad
 * widgets in its saved widget state, nor their state.
 * @param {any} nb
 * @param {Set<string>} ids
 */
function savedWithPictures(nb, ids) {
  const widgets = (nb.metadata && nb.metadata.widgets) || {};
  const state = { ...((widgets[WIDGET_STATE] && widgets[WIDGET_STATE].state) || {}) };
  const ours = new Set(ids);
  for (const [id, entry] of Object.entries(state)) {
    const st = (entry && entry.state) || {};
    if (!String(st._anywidget_id || "").startsWith("nbgrad.")) continue;
    ours.add(id);
    delete state[id];
    const layout = String(st.layout || "").replace(/^IPY_MODEL_/, "");
    if (state[layout] && state[layout].model_name === "LayoutModel") delete state[layout];
  }
  const still = (out) => {
    const data = out.data || {};
    const view = data[WIDGET_VIEW];
    if (!view || !ours.has(view.model_id) || !(data["image/svg+xml"] || data["image/png"])) {
      return out;
    }
    const { [WIDGET_VIEW]: _, ...picture } = data;
    // the PNG, which says how the live widget comes back
    if (picture["image/png"]) delete picture["image/svg+xml"];
    return { ...out, data: picture };
  };
  const cells = (nb.cells || []).map((c) => (c.outputs ? { ...c, outputs: c.outputs.map(still) } : c));
  const metadata = { ...(nb.metadata || {}) };
  if (Object.keys(state).length) {
    metadata.widgets = { ...widgets, [WIDGET_STATE]: { ...widgets[WIDGET_STATE], state } };
  } else {
    delete metadata.widgets;
  }
  return { ...nb, metadata, cells };
}

/**
 * Save this widget's output as its picture (NOTE [Saved notebooks keep their pictures]) in
 * JupyterLab and Notebook 7, whose widget manager has the document's context; elsewhere there
 * is nothing to do.
 * @param {any} model
 */
function keepPictureOnSave(model) {
  const manager = model.widget_manager;
  const context = manager && manager.context;
  const id = model.get("_comm_id");
  if (!id || !context || !context.saveState || !context.model) return;
  let ids = manager[SAVED_ON];
  if (!ids) {
    ids = manager[SAVED_ON] = new Set();
    context.saveState.connect((_, state) => {
      const notebook = context.model;
      if (state !== "started" || !notebook || notebook[SAVED_ON]) return;
      const own = Object.prototype.hasOwnProperty.call(notebook, "toJSON");
      const toJSON = notebook.toJSON;
      notebook[SAVED_ON] = true;
      notebook.toJSON = function (...args) { // once: the save's own reading of the notebook
        if (own) notebook.toJSON = toJSON;
        else delete notebook.toJSON;
        delete notebook[SAVED_ON];
        return savedWithPictures(toJSON.apply(notebook, args), ids);
      };
    });
  }
  ids.add(id);
}
