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
  /** @type {VersionAnswer|{}} */ const answer = JSON.parse(model.get("_answer_json") || "{}");
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
