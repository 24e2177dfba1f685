// nbgrad HookEditor: list, add, edit, enable, disable and remove hooks; run backward.
// Browser side of nbgrad/notebook/hook_editor.py (an ES module for anywidget, after common.js).
// The records it shows (GradSummary, HookCall) are typed once, in common.js.
// Hook code typed here is only sent to the kernel when a button is pressed: nothing is sent
// when a view is rendered (a reopened notebook never runs hook code; see NOTE [Hook code in
// widget state] in hook_editor.py).

function render({ model, el }) {
  el.classList.add("nbg-hooks");
  const title = h("div", { class: "nbg-hooks-title" });
  const list = h("div", { class: "nbg-hooks-list" });
  const kind = h("select", { class: "nbg-hooks-kind" });
  const code = h("textarea", { class: "nbg-hooks-code", rows: 3, spellcheck: "false" });
  const addBtn = h("button", { class: "nbg-hooks-add" }, "Add hook");
  // retained by default: the graph stays usable for as many runs as the user makes
  const retain = h("input", { type: "checkbox", class: "nbg-retain", checked: true });
  const create = h("input", { type: "checkbox", class: "nbg-create" });
  const runBtn = h("button", { class: "nbg-hooks-run" }, "Run backward");
  const status = h("div", { class: "nbg-hooks-status" });
  const errorBox = h("pre", { class: "nbg-hooks-error" });
  const fired = h("div", { class: "nbg-hooks-fired" });
  const addForm = h("div", { class: "nbg-hooks-addform" },
    h("div", {}, "Add a ", kind, " hook (a lambda or a def):"), code, addBtn);
  const zeroBtn = h("button", { class: "nbg-hooks-zero", onclick: () => model.send({ type: "zero_grad" }),
    title: "set .grad to None on the graph's leaves (gradients pile up across runs otherwise)" },
  "Zero .grad");
  const runRow = h("div", { class: "nbg-hooks-runrow" }, runBtn,
    h("label", {}, retain, " retain_graph"), h("label", {}, create, " create_graph"), zeroBtn);
  el.append(title, list, addForm, runRow, status, errorBox, fired);

  let editing = null; // the hook id whose code is open for editing (view state only)

  addBtn.addEventListener("click", () => {
    model.send({ type: "add", kind: kind.value, source: code.value });
  });
  runBtn.addEventListener("click", () => {
    model.send({ type: "run_backward", retain_graph: retain.checked, create_graph: create.checked });
  });
  const examples = () => (model.get("target") || {}).examples || {};
  kind.addEventListener("change", () => { code.placeholder = examples()[kind.value] || ""; });
  const why = h("div", { class: "nbg-hooks-missing" });
  addForm.append(why);

  function drawTarget() {
    /** @type {Target} */ const t = model.get("target") || { kind: "none", kinds: [] };
    title.textContent = t.kind === "none"
      ? "Hooks: select a node in the graph (or give HookEditor a tensor, node or module)"
      : `Hooks on ${t.label}` + (t.id ? ` (${t.id})` : "");
    const current = kind.value;
    kind.replaceChildren(...t.kinds.map((k) =>
      h("option", { value: k, title: `called as hook(${t.signatures[k] || ""})` }, k)));
    if (t.kinds.includes(current)) kind.value = current;
    code.placeholder = (t.examples || {})[kind.value] || "";
    addForm.style.display = t.kinds.length ? "" : "none";
    // why a kind is not offered (a node whose tensor is gone has no tensor_hook)
    why.replaceChildren(...Object.entries(t.missing || {}).map(([k, reason]) =>
      h("div", { class: "nbg-muted" }, `no ${k}: ${reason}`)));
    runBtn.title = t.root ? `backward from the output of ${t.root}` : "backward from the graph's output";
  }

  function drawHooks() {
    /** @type {HookEntry[]} */ const hooks = model.get("hooks") || [];
    if (!hooks.length) {
      list.replaceChildren(h("div", { class: "nbg-muted" }, "no hooks"));
      return;
    }
    list.replaceChildren(...hooks.map((hk) => {
      const enabled = h("input", { type: "checkbox", checked: hk.enabled, title: "enabled" });
      enabled.addEventListener("change", () =>
        model.send({ type: "enable", id: hk.id, enabled: enabled.checked }));
      const rowEl = h("div", { class: "nbg-hook" + (hk.enabled ? "" : " nbg-disabled") },
        enabled, " ", h("span", { class: "nbg-hook-kind" }, hk.kind), " ",
        h("span", { class: "nbg-hook-name" }, hk.name), " ",
        hk.source !== null
          ? h("button", { onclick: () => { editing = editing === hk.id ? null : hk.id; drawHooks(); } },
            editing === hk.id ? "Close" : "Edit")
          : null,
        h("button", { onclick: () => model.send({ type: "remove", id: hk.id }) }, "Remove"));
      const parts = [rowEl];
      if (editing === hk.id && hk.source !== null) {
        const area = h("textarea", { class: "nbg-hooks-code", rows: 3, spellcheck: "false" });
        area.value = hk.source;
        parts.push(area, h("button", {
          onclick: () => model.send({ type: "edit", id: hk.id, source: area.value }),
        }, "Save"));
      } else if (hk.source !== null) {
        parts.push(h("pre", { class: "nbg-hook-source" }, hk.source));
      }
      if (hk.error) parts.push(h("pre", { class: "nbg-hooks-error" }, hk.error));
      return h("div", { class: "nbg-hook-item" }, ...parts);
    }));
  }

  function drawFired() {
    /** @type {HookCall[]} */ const calls = model.get("fired") || [];
    if (!calls.length) {
      fired.replaceChildren();
      return;
    }
    fired.replaceChildren(
      h("div", { class: "nbg-hooks-subtitle" }, "Hooks that fired in the last backward"),
      h("table", {},
        h("tr", {}, h("th", {}, "kind"), h("th", {}, "hook"), h("th", {}, "node"),
          h("th", {}, "before"), h("th", {}, "after")),
        ...calls.map((c) => h("tr", {},
          h("td", {}, c.kind), h("td", {}, c.name), h("td", {}, c.node_name || c.node || ""),
          h("td", {}, gradText(c.before, false)),
          h("td", {}, c.changed ? gradText(c.after, false) : "(unchanged)")))));
  }

  function drawStatus() {
    // while a backward started here runs: what it runs now (NOTE [A backward that runs long])
    const running = model.get("running") || "";
    status.textContent = running
      ? `${running} (the kernel is busy: interrupt it to stop)` : model.get("status") || "";
    status.classList.toggle("nbg-hooks-running", Boolean(running));
    runBtn.disabled = Boolean(running);
    const err = model.get("error") || "";
    errorBox.textContent = err;
    errorBox.style.display = err ? "" : "none";
    if (!err && model.get("status").startsWith("added")) code.value = "";
  }

  const onTarget = () => { editing = null; drawTarget(); drawHooks(); };
  model.on("change:target", onTarget);
  model.on("change:hooks", drawHooks);
  model.on("change:fired", drawFired);
  model.on("change:status", drawStatus);
  model.on("change:error", drawStatus);
  model.on("change:running", drawStatus);
  drawTarget();
  drawHooks();
  drawFired();
  drawStatus();
  const watch = watchKernel(model, el); // NOTE [Released and kernel-gone views]
  keepPictureOnSave(model); // NOTE [Saved notebooks keep their pictures]
  return () => {
    watch.stop();
    model.off("change:target", onTarget);
    model.off("change:hooks", drawHooks);
    model.off("change:fired", drawFired);
    model.off("change:status", drawStatus);
    model.off("change:error", drawStatus);
    model.off("change:running", drawStatus);
  };
}

export default { render };
