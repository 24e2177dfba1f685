"""The records that cross from the kernel to the browser, defined once (NOTE [One schema]).

The snapshot (:class:`Snapshot`, built by ``snapshot.py``), the stepper's :class:`Trace`, and
what the graph widget is sent: :class:`ViewSnapshot` and the :class:`Details` of a selection.
The layout's records are in ``layout.py``. ``widgets/common.js`` carries the same records as
JSDoc typedefs, checked field by field by ``tests/notebook/test_schema.py``.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

# -- the schema ------------------------------------------------------------------------------
# NOTE [One schema]
# These TypedDicts are the one definition of what crosses from the kernel to the browser (and
# what the still SVG is drawn from). ``widgets/common.js`` carries the same records as JSDoc
# typedefs of the same names, each written once; ``tests/notebook/test_schema.py`` parses them
# and compares every field and its type with these, and checks real snapshots against these.
# Change a record here, then in common.js. Ids: a node is ``"n<sequence_nr>"``, a leaf's
# AccumulateGrad ``"leaf<k>"``, a graph root ``"root<k>"``, an edge ``"e<k>"``, a module group
# ``"g<k>"``, a hook ``"h<k>"``.


class GradSummary(TypedDict):
    """A gradient: its ``values`` are the first ``max_values``, flattened, with NaN and the
    infinities as ``"nan"``, ``"inf"``, ``"-inf"``."""

    shape: list[int]
    dtype: str
    norm: float | str | None
    numel: int
    values: list[float | str]
    truncated: bool


class TensorSummary(TypedDict):
    """A tensor in a record: ``node`` is the id of its ``grad_fn`` (or leaf) in this graph."""

    shape: list[int]
    dtype: str
    device: str
    requires_grad: bool
    node: str | None


class LeafTensor(TensorSummary):
    """A leaf's variable: its ``.grad`` and the name it is bound to, if any."""

    grad: GradSummary | None
    name: str | None


class Saved(TypedDict):
    """A value a node saved: ``shape`` a list (of lists for ``"tensors"``); ``version`` the
    tensor's version when saved; ``output`` whether the node saved its own output; ``value``
    the repr of a value that is no tensor."""

    name: str
    kind: Literal["tensor", "tensors", "value", "freed", "none"]
    shape: NotRequired[list[int] | list[list[int]]]
    dtype: NotRequired[str | None]
    version: NotRequired[int | None]
    output: NotRequired[bool | None]
    value: NotRequired[str]


class SnapNext(TypedDict):
    """One of a node's ``next_functions``: the node id (null if not drawn) and input_nr."""

    node: str | None
    input_nr: int


class SnapInputMetadata(TypedDict):
    """A gradient the node expects (one per forward output)."""

    shape: list[int]
    dtype: str
    device: str


class SnapNode(TypedDict):
    """A node: ``label`` is what the drawing shows (the name, or a leaf's variable name);
    ``seq`` its sequence number (null for 2**64 - 1); ``shapes``, ``dtype`` and ``device`` from
    its input metadata; ``record`` and ``line`` where the forward call was; ``grad`` what
    arrived at the node in the pass shown, ``order`` when it ran in that pass, ``time`` the
    seconds it spent running (NOTE [Time in backward]; None without timings)."""

    id: str
    kind: Literal["node", "leaf", "external", "root"]
    name: str
    label: str
    seq: int | None
    shapes: list[list[int]]
    dtype: str | None
    device: str | None
    group: str | None
    record: int | None
    line: int | None
    source: str
    metadata: dict[str, str]
    saved: list[Saved]
    next: list[SnapNext]
    input_metadata: list[SnapInputMetadata]
    hooks: list[str]
    tensor: LeafTensor | None
    grad: list[GradSummary | None] | None
    order: int | None
    time: float | None
    nonfinite: NotRequired[list[Literal["nan", "+inf", "-inf"]]]
    nonfinite_origin: NotRequired[bool]


# ``from`` is a keyword: the edge is declared in the functional form
SnapEdge = TypedDict(
    "SnapEdge",
    {
        "id": str,
        "from": str,  # the node whose next_functions hold the edge
        "to": str,
        "index": int,  # position in from's next_functions
        "input_nr": int,
        "grad": "GradSummary | None",  # what flowed along it in the pass shown
    },
)
SnapEdge.__doc__ = "An edge of the drawing, from a node to one of its next functions."


class SnapGroup(TypedDict):
    """A module call: ``records`` is ``[start, end)`` in the records."""

    id: str
    name: str
    type: str
    path: str
    parent: str | None
    depth: int
    records: list[int]
    error: str | None


class SnapRecord(TypedDict):
    """A forward call: ``file`` is ``"<cell>"`` for the cell's own code."""

    index: int
    op: str
    node: str | None
    inputs: list[TensorSummary]
    outputs: list[TensorSummary]
    time_us: float | None
    line: int | None
    file: str | None
    source: str
    group: str | None


class SnapHook(TypedDict):
    """A registered hook: ``kind`` is ``tensor_hook``, ``node_prehook``, ``node_hook``,
    ``post_accumulate_grad`` or a module hook kind; ``target`` the node or group id it sits
    on; ``source`` the code typed in the hook editor."""

    id: str
    kind: str
    target_kind: Literal["tensor", "node", "module"]
    target: str | None
    name: str
    enabled: bool
    source: str | None


class HookCall(TypedDict):
    """A hook that fired: the gradient ``before`` and ``after`` it (a list for node pre- and
    post-hooks; for a post-accumulate-grad hook, the leaf's ``.grad``)."""

    hook: str | None
    name: str
    kind: str
    node: str
    node_name: str  # the node as the graph names it (a leaf: its variable's name)
    before: GradSummary | list[GradSummary | None] | None
    after: GradSummary | list[GradSummary | None] | None
    changed: bool


class Pass(TypedDict):
    """A backward pass: ``order`` the node ids in the order they ran."""

    index: int
    root: str | None
    retain_graph: bool
    create_graph: bool
    order: list[str]
    error: str | None
    hooks: list[HookCall]


class Failure(TypedDict):
    """A forward pass that raised: the cell line of the call that raised (None when it was not
    in the cell), that line's code, and the error (``"RuntimeError: ..."``)."""

    line: int | None
    source: str
    error: str


# ``pass`` is a keyword: the snapshot is declared in the functional form
Snapshot = TypedDict(
    "Snapshot",
    {
        "schema": Literal["nbgrad.snapshot"],
        "version": Literal[1],
        "nodes": "list[SnapNode]",
        "edges": "list[SnapEdge]",
        "groups": "list[SnapGroup]",
        "records": "list[SnapRecord]",
        "hooks": "list[SnapHook]",
        "passes": "list[Pass]",
        "roots": "list[str]",
        "pass": "int | None",  # the index of the pass shown on the edges
        "truncated": bool,  # the graph had more than max_nodes nodes
        "max_nodes": int,  # where the walk from the last calls stops
        "left_out": int,  # recorded calls not in the snapshot (a graph cut at max_nodes)
        "cut_nodes": int,  # nodes not in the snapshot (NOTE [A graph cut at max_nodes])
        "stubs": int,  # leaves beyond the cut in the snapshot without the edges into them
        "backward_ops": int,  # ops run by derivative formulas during the passes
        "kept_steps": int,  # the steps recorded in full (NOTE [Repeated steps counted])
        "counted_steps": int,  # the repeats of a step counted, not recorded
        "failure": "Failure | None",  # the forward raised: the graph is what it built so far
    },
)
Snapshot.__doc__ = "What ``build_snapshot`` returns (``schema`` ``nbgrad.snapshot``)."


class Accumulated(TypedDict):
    """A gradient accumulated into a leaf's ``.grad`` (an AccumulateGrad's step): what
    arrived, and ``.grad`` before and after."""

    node: str
    grad: GradSummary | None
    before: GradSummary | None
    after: GradSummary | None


class Step(TypedDict):
    """One node of a backward pass: ``ready`` the nodes waiting on each device while it runs;
    ``dependencies`` and ``buffers`` what changed since the previous step."""

    index: int
    node: str
    device: str
    inputs: list[GradSummary | None]
    outputs: list[GradSummary | None]
    hooks: list[HookCall]
    ready: dict[str, list[str]]
    dependencies: dict[str, int]
    buffers: dict[str, list[GradSummary | None]]
    made_ready: list[str]
    accumulated: Accumulated | None


class TraceStart(TypedDict):
    """The engine's state before the first node runs."""

    dependencies: dict[str, int]
    ready: dict[str, list[str]]


class TraceEnd(TypedDict):
    """What the pass left: dependency counts and input buffers never used up."""

    dependencies: dict[str, int]
    buffers: dict[str, list[GradSummary | None]]


class Trace(TypedDict):
    """The stepper's record of one backward pass (``trace_snapshot``)."""

    schema: Literal["nbgrad.trace"]
    version: Literal[1]
    graph: Snapshot
    root: str
    initial: TraceStart
    steps: list[Step]
    final: TraceEnd
    error: str | None
    # a pass watched from outside (torch's): the steps (0-based) where the framework ran
    # another node than nbgrad's model of its engine would; None for nbgrad's own passes
    model_differs: list[int] | None


# -- what the graph widget is sent (NOTE [Send less]) ----------------------------------------
# NOTE [Send less]
# The browser draws from the layout (boxes, edges, labels) and searches the nodes; everything
# else a node carries (saved values, metadata, input metadata, next functions, its forward
# record, the gradients on its edges) is shown only for the selected node or edge. So the graph
# widget is sent a :class:`ViewSnapshot`, a few dozen bytes per node, and the :class:`Details`
# of what is selected when it is selected. The still SVG and Python keep the full snapshot.
# A pass is sent without its list of node ids in the order they ran: each node's ``order``
# says it, and the list doubled what a saved notebook keeps of a cut 20,000-node graph's pass.
class ViewNode(TypedDict):
    """A node as the widget is sent it: what the drawing, the search and the badges need.
    The fields other than ``id`` and ``name`` are left out at their defaults (``kind``:
    "node"; ``label``: the name; ``group``, ``line``, ``order``: None; ``hooks``, how many hooks
    it has: 0), as most nodes have them."""

    id: str
    kind: NotRequired[Literal["node", "leaf", "external", "root"]]
    name: str
    label: NotRequired[str]
    group: NotRequired[str]
    line: NotRequired[int]
    hooks: NotRequired[int]
    order: NotRequired[int]
    nonfinite: NotRequired[list[Literal["nan", "+inf", "-inf"]]]
    nonfinite_origin: NotRequired[bool]


# NOTE [Nodes and groups sent as columns]
# A graph cut at 20,000 nodes was sent, and saved in the notebook's widget state, as 20,000
# objects that each repeat their keys and their op's name, and a module group per module call,
# each with its full path; a deep model's cell went over the 2 MB a saved output may take. So
# the view's nodes cross as :class:`ViewNodes` and its groups as :class:`ViewGroups`: one list
# per field, the repeated texts (op names, labels, kinds, group ids, module names and types)
# as indices into one list of strings, a group's path left out where it is its parent's path
# and its name, a parameter's label as the part after its group's path, and the fields few
# have keyed by the index. ``readView`` in
# ``widgets/common.js`` turns them back into objects when the trait is parsed, and reads the
# lists of objects a notebook saved before as they are.
class ViewNodes(TypedDict):
    """The view's nodes as columns (NOTE [Nodes and groups sent as columns]): node ``i`` is
    ``id[i]``, named ``strings[name[i]]``, labelled ``strings[label[i]]`` (or, where
    ``label[i]`` is ``-1 - k``, its group's path, a dot and ``strings[k]``), of kind
    ``strings[kind[i]]``, in the group ``strings[group[i]]`` (None: in none), made at
    ``line[i]`` and run ``order[i]``-th; ``hooks``, ``nonfinite`` and ``nonfinite_origin`` map
    the index (a string) of the nodes that have them to their values."""

    strings: list[str]
    id: list[str]
    name: list[int]
    label: list[int]
    kind: list[int]
    group: list[int | None]
    line: list[int | None]
    order: list[int | None]
    hooks: dict[str, int]
    nonfinite: dict[str, list[Literal["nan", "+inf", "-inf"]]]
    nonfinite_origin: dict[str, bool]


_RARE = ("hooks", "nonfinite", "nonfinite_origin")


def pack_nodes(nodes: list[ViewNode], paths: dict[str, str] | None = None) -> ViewNodes:
    """``nodes`` as columns (NOTE [Nodes and groups sent as columns]); ``paths``: each
    group's path by its id (a label that is its group's path, a dot and a name is sent as
    that name)."""
    paths = paths or {}
    at, strings = _string_table()
    at("node")  # the default kind
    cols = {"id": [], "name": [], "label": [], "kind": [], "group": [], "line": [], "order": []}
    rare = {key: {} for key in _RARE}
    for i, n in enumerate(nodes):
        name = at(n["name"])
        cols["id"].append(n["id"])
        cols["name"].append(name)
        cols["label"].append(_label_at(n, at, paths) if "label" in n else name)
        cols["kind"].append(at(n["kind"]) if "kind" in n else 0)
        cols["group"].append(at(n["group"]) if "group" in n else None)
        cols["line"].append(n.get("line"))
        cols["order"].append(n.get("order"))
        for key in _RARE:
            if key in n:
                rare[key][str(i)] = n[key]
    return {"strings": strings, **cols, **rare}


def _label_at(n, at, paths):
    """The label column's entry for ``n``: the label's index in the strings, or ``-1 - k``
    where the label is its group's path, a dot and the ``k``-th string."""
    label = n["label"]
    path = paths.get(n.get("group"))
    if path is not None and label.startswith(path) and label[len(path) : len(path) + 1] == ".":
        return -1 - at(label[len(path) + 1 :])
    return at(label)


def unpack_nodes(
    packed: ViewNodes | list[ViewNode], groups: list[SnapGroup] = ()
) -> list[ViewNode]:
    """The :class:`ViewNode` list that ``packed`` holds, as ``unpackNodes`` reads it in the
    browser (a list is returned as it is: a view saved before nodes were sent as columns);
    ``groups``: the view's groups (unpacked)."""
    paths = {g["id"]: g["path"] for g in groups}
    if isinstance(packed, list):
        return packed
    s = packed["strings"]
    nodes: list[ViewNode] = []
    for i, node_id in enumerate(packed["id"]):
        n: dict = {"id": node_id, "name": s[packed["name"][i]]}
        if packed["kind"][i]:
            n["kind"] = s[packed["kind"][i]]
        label = packed["label"][i]
        if label < 0:
            n["label"] = paths[s[packed["group"][i]]] + "." + s[-1 - label]
        elif label != packed["name"][i]:
            n["label"] = s[label]
        if packed["group"][i] is not None:
            n["group"] = s[packed["group"][i]]
        for key in ("line", "order"):
            if packed[key][i] is not None:
                n[key] = packed[key][i]
        for key in _RARE:
            if str(i) in packed[key]:
                n[key] = packed[key][str(i)]
        nodes.append(n)
    return nodes


class ViewGroups(TypedDict):
    """The view's module groups as columns (NOTE [Nodes and groups sent as columns]): group
    ``i`` is ``id[i]``, named ``strings[name[i]]``, of type ``strings[type[i]]``, in the group
    ``strings[parent[i]]`` (None: in none), at ``path[i]`` (None: its parent's path, a dot and
    its name); ``error`` maps the index (a string) of the groups that failed to their error."""

    strings: list[str]
    id: list[str]
    name: list[int]
    type: list[int]
    path: list[str | None]
    parent: list[int | None]
    depth: list[int]
    records: list[list[int]]
    error: dict[str, str]


def pack_groups(groups: list[SnapGroup]) -> ViewGroups:
    """``groups`` as columns (NOTE [Nodes and groups sent as columns])."""
    at, strings = _string_table()
    paths = {}
    cols = {key: [] for key in ("id", "name", "type", "path", "parent", "depth", "records")}
    error = {}
    for i, g in enumerate(groups):
        parent = g["parent"]
        paths[g["id"]] = path = g["path"]
        derived = paths[parent] + "." + g["name"] if parent in paths else g["name"]
        cols["id"].append(g["id"])
        cols["name"].append(at(g["name"]))
        cols["type"].append(at(g["type"]))
        cols["path"].append(None if path == derived else path)
        cols["parent"].append(None if parent is None else at(parent))
        cols["depth"].append(g["depth"])
        cols["records"].append(g["records"])
        if g["error"] is not None:
            error[str(i)] = g["error"]
    return {"strings": strings, **cols, "error": error}


def unpack_groups(packed: ViewGroups | list[SnapGroup]) -> list[SnapGroup]:
    """The :class:`SnapGroup` list that ``packed`` holds (a list is returned as it is)."""
    if isinstance(packed, list):
        return packed
    s = packed["strings"]
    groups: list[SnapGroup] = []
    paths = {}
    for i, group_id in enumerate(packed["id"]):
        name = s[packed["name"][i]]
        parent = None if packed["parent"][i] is None else s[packed["parent"][i]]
        path = packed["path"][i]
        if path is None:
            path = paths[parent] + "." + name if parent in paths else name
        paths[group_id] = path
        groups.append(
            {
                "id": group_id,
                "name": name,
                "type": s[packed["type"][i]],
                "path": path,
                "parent": parent,
                "depth": packed["depth"][i],
                "records": packed["records"][i],
                "error": packed["error"].get(str(i)),
            }
        )
    return groups


def read_view(view: ViewSnapshot) -> dict:
    """``view`` with its nodes and groups as lists of objects, as ``readView`` reads it in
    the browser."""
    groups = unpack_groups(view["groups"])
    return {**view, "nodes": unpack_nodes(view["nodes"], groups), "groups": groups}


def _string_table():
    """``(at, strings)``: ``at(text)`` is the index of ``text`` in ``strings``, added once."""
    index: dict[str, int] = {}
    strings: list[str] = []

    def at(text):
        k = index.get(text)
        if k is None:
            k = index[text] = len(strings)
            strings.append(text)
        return k

    return at, strings


class ViewPass(TypedDict):
    """A backward pass as the graph view gets it: each node's own ``order`` says when it ran
    (the pass's list of node ids is left out: NOTE [Send less])."""

    index: int
    root: str | None
    retain_graph: bool
    create_graph: bool
    error: str | None
    hooks: list[HookCall]


ViewSnapshot = TypedDict(
    "ViewSnapshot",
    {
        "schema": Literal["nbgrad.view"],
        "version": Literal[1],
        "nodes": "ViewNodes",
        "edges": int,  # how many edges the graph has
        "groups": "ViewGroups",
        "hooks": "list[SnapHook]",
        "passes": "list[ViewPass]",
        "roots": "list[str]",
        "pass": "int | None",
        "truncated": bool,
        "max_nodes": int,
        "left_out": int,
        "cut_nodes": int,
        "stubs": int,
        "failure": "Failure | None",
    },
)
ViewSnapshot.__doc__ = "What the graph widget is sent of a snapshot (``view_snapshot``)."


class Details(TypedDict):
    """The details of what is selected: a node (with its forward record and the edges into
    it), or the edges merged into one drawn edge."""

    id: str
    node: SnapNode | None
    record: SnapRecord | None
    incoming: list[SnapEdge]
    edges: list[SnapEdge]


class VersionAnswer(TypedDict):
    """A backward's version error explained (``answers_versions.py``), as the graph view marks
    it: ``node`` the id of the node that saved the tensor, ``bumped`` the ids of the in-place
    ops' nodes, ``text`` the answer in words."""

    kind: Literal["version"]
    node: str | None
    bumped: list[str]
    text: str


class MarkOrigin(TypedDict):
    """Where the first NaN or Inf started (``answers_view._origin``): the box's ``id`` (None
    when it is not drawn) and the finding in words."""

    id: str | None
    text: str


class LegendEntry(TypedDict):
    """One line of an overlay's legend: its swatch's fill, border and dash, and its text."""

    fill: str
    text: str
    stroke: str
    dash: str


class Marks(TypedDict):
    """What the graph view draws over a drawing (``answers_view.marks``): the boxes that held
    NaN or Inf, the origin, and for an overlay its title, legend, fills by box and folded
    groups' figures; ``flow``, each module's gradient norm at each backward pass."""

    kind: str
    bad: list[str]
    origin: MarkOrigin | None
    title: NotRequired[str]
    legend: NotRequired[list[LegendEntry]]
    fills: NotRequired[dict[str, str]]
    stats: NotRequired[dict[str, dict[str, float]]]
    flow: NotRequired[dict[str, list[float | None]]]


SCHEMA_TYPES = (
    GradSummary,
    TensorSummary,
    LeafTensor,
    Saved,
    SnapNext,
    SnapInputMetadata,
    SnapNode,
    SnapEdge,
    SnapGroup,
    SnapRecord,
    SnapHook,
    HookCall,
    Pass,
    Failure,
    Snapshot,
    Accumulated,
    Step,
    TraceStart,
    TraceEnd,
    Trace,
    ViewNode,
    ViewNodes,
    ViewGroups,
    ViewPass,
    ViewSnapshot,
    Details,
    MarkOrigin,
    LegendEntry,
    Marks,
    VersionAnswer,
)
