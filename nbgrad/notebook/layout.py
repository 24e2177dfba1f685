"""A layered, top-to-bottom layout of a snapshot's graph, in pure Python (no ``dot`` binary).

The root (the tensor backward starts from) is at the top and gradients flow down along the
edges to the leaves, as ``next_functions`` point. The steps are Sugiyama's, kept simple:

1. visible graph: a collapsed module group stands for all the nodes inside it (edges between
   them vanish, parallel edges merge);
2. layers: longest path from the top (a node sits one layer below the lowest node that points
   to it, two when the edge enters another module group); a cycle, which only a collapsed
   group can make, is broken at its earliest node;
3. a long edge gets a small dummy box in each layer it crosses, so that it bends around the
   nodes there instead of running through them;
4. order and x: a depth-first order from the top, then a few sweeps down and up that move
   each node towards the mean x of its neighbours in the layers above (below) and push apart
   the nodes that overlap;
5. group boxes around the members of each expanded group.

The result is deterministic (same snapshot, same numbers) and plain data, so the widget's JS
draws it and ``svg.py`` draws the same picture. 500 nodes lay out in well under a second
(see ``tests/notebook/test_layout.py``).

Layout = {width, height, nodes: [{id, kind: "node" | "group", x, y, w, h, label, sub, ref}],
          edges: [{from, to, edges: [edge ids], grad: norm | null,
                   points: [x1, y1, ..., xn, yn] (from the bottom of ``from`` to the top of
                   ``to``, through the dummy boxes of a long edge: vertical in each)}],
          groups: [{id, label, x, y, w, h, depth}], collapsed: [group ids]}
(``x, y`` is a box's top-left corner; ``ref`` is the snapshot node id or group id.)
"""

from __future__ import annotations

__all__ = ["layout", "node_size", "default_collapsed", "shape_text"]

NODE_H = 38
V_GAP = 44
H_GAP = 22
MARGIN = 20
GROUP_PAD = 10
GROUP_LABEL = 16
CHAR_W = 6.6
SWEEPS = 4
DUMMY_W = 8.0  # the width of the dummy box a long edge has in each layer it crosses
MAX_SPAN = 12  # longer edges get no dummies (a leaf used from far above is drawn straight)
DUMMY_BUDGET = 3  # at most this many dummies per visible node
AUTO_COLLAPSE = 400  # graphs with more visible nodes start with their top groups collapsed


def shape_text(shapes) -> str:
    parts = []
    for s in shapes:
        parts.append("×".join(str(d) for d in s) if s else "scalar")
    text = ", ".join(parts)
    return text if len(text) <= 32 else text[:31] + "…"


def _clip(text, n=30):
    return text if len(text) <= n else text[: n - 1] + "…"


def node_size(label, sub):
    chars = max(len(label), len(sub))
    return max(72.0, min(260.0, round(chars * CHAR_W + 20)))


def default_collapsed(snapshot):
    """The groups to collapse at first: the top-level ones, when the graph is large."""
    if len(snapshot["nodes"]) <= AUTO_COLLAPSE:
        return []
    return [g["id"] for g in snapshot["groups"] if g["parent"] is None]


def layout(snapshot, collapsed=()):
    groups = {g["id"]: g for g in snapshot["groups"]}
    collapsed = [c for c in collapsed if c in groups]
    collapsed_set = set(collapsed)

    def representative(gid):
        """The outermost collapsed group containing group ``gid`` (or None)."""
        rep = None
        while gid is not None:
            if gid in collapsed_set:
                rep = gid
            gid = groups[gid]["parent"]
        return rep

    # 1. the visible graph
    vis = {}  # snapshot node id -> visible id
    vnodes = {}  # visible id -> box dict (insertion order = snapshot order)
    members = {}  # collapsed group id -> count
    for n in snapshot["nodes"]:
        rep = representative(n["group"]) if n["group"] is not None else None
        if rep is None:
            vid = n["id"]
            label = _clip(n["label"])
            sub = (
                shape_text(n["shapes"])
                if n["kind"] != "leaf" or not n["tensor"]
                else (shape_text([n["tensor"]["shape"]]))
            )
            vnodes[vid] = {
                "id": vid,
                "kind": "node",
                "label": label,
                "sub": sub,
                "ref": n["id"],
                "group": n["group"],
            }
        else:
            vid = "group:" + rep
            members[rep] = members.get(rep, 0) + 1
            if vid not in vnodes:
                g = groups[rep]
                vnodes[vid] = {
                    "id": vid,
                    "kind": "group",
                    "label": _clip(f"{g['name']}: {g['type']}"),
                    "sub": "",
                    "ref": rep,
                    "group": g["parent"],
                }
        vis[n["id"]] = vid
    for box in vnodes.values():
        if box["kind"] == "group":
            count = members[box["ref"]]
            box["sub"] = f"{count} node" + ("s" if count != 1 else "")
        box["w"] = node_size(box["label"], box["sub"])
        box["h"] = NODE_H

    vedges = {}
    for e in snapshot["edges"]:
        u, v = vis.get(e["from"]), vis.get(e["to"])
        if u is None or v is None or u == v:
            continue
        key = (u, v)
        entry = vedges.get(key)
        if entry is None:
            vedges[key] = entry = {"from": u, "to": v, "edges": [], "grad": None}
        entry["edges"].append(e["id"])
        g = e.get("grad")
        if g is not None and len(entry["edges"]) == 1:
            entry["grad"] = g.get("norm")
        elif len(entry["edges"]) > 1:
            entry["grad"] = None

    order = list(vnodes)
    index = {vid: i for i, vid in enumerate(order)}
    succ = {vid: [] for vid in order}
    pred = {vid: [] for vid in order}
    for u, v in vedges:
        succ[u].append(v)
        pred[v].append(u)

    # 2. layers (longest path, Kahn's algorithm; a cycle is broken at its earliest node)
    vgroup = {vid: vnodes[vid]["group"] for vid in order}
    indeg = {vid: len(pred[vid]) for vid in order}
    layer = dict.fromkeys(order, 0)
    done = set()
    ready = [vid for vid in order if indeg[vid] == 0]
    ready.reverse()
    remaining = len(order)
    cursor = 0
    while remaining:
        if not ready:
            while order[cursor] in done:
                cursor += 1
            ready.append(order[cursor])
        vid = ready.pop()
        if vid in done:
            continue
        done.add(vid)
        remaining -= 1
        for w in succ[vid]:
            if w in done:
                continue
            # an edge into another group spans two layers: room for the group's own leaves
            # (which hang below it) and for the next box's label, so sibling boxes do not overlap
            step = 1 if vgroup[vid] == vgroup[w] else 2
            if layer[vid] + step > layer[w]:
                layer[w] = layer[vid] + step
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    nlayers = max(layer.values(), default=-1) + 1
    layers = [[] for _ in range(nlayers)]

    # 3. an edge that spans several layers gets a small dummy box in each layer it crosses,
    # so that ordering and placement route it around the nodes there (a bend per dummy);
    # edges longer than MAX_SPAN layers, or past the dummy budget, are drawn straight
    width = {vid: vnodes[vid]["w"] for vid in order}
    chains = {}
    budget = DUMMY_BUDGET * len(order)
    for key in vedges:
        u, v = key
        span = layer[v] - layer[u]
        if span < 2 or span > MAX_SPAN or budget < span - 1:
            continue
        budget -= span - 1
        chain = []
        prev = u
        succ[u][succ[u].index(v)] = None  # replaced by the chain (kept in place for order)
        pred[v].remove(u)
        for li in range(layer[u] + 1, layer[v]):
            d = f"~{len(index)}"
            index[d] = len(index)
            layer[d] = li
            width[d] = DUMMY_W
            succ[d], pred[d] = [], [prev]
            if prev == u:
                succ[u][succ[u].index(None)] = d
            else:
                succ[prev].append(d)
            chain.append(d)
            prev = d
        succ[prev].append(v)
        pred[v].append(prev)
        chains[key] = chain

    # 4. initial order: depth-first from the top nodes, following next_functions in order
    seen = set()
    for top in order:
        if pred[top] or top in seen:
            continue
        stack = [top]
        seen.add(top)
        while stack:
            vid = stack.pop()
            layers[layer[vid]].append(vid)
            for w in reversed(succ[vid]):
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
    for vid in index:
        if vid not in seen:
            layers[layer[vid]].append(vid)

    x = {}
    for row in layers:
        pos = 0.0
        for vid in row:
            x[vid] = pos + width[vid] / 2
            pos += width[vid] + H_GAP
    for _ in range(SWEEPS):
        for rows, neigh in ((range(1, nlayers), pred), (range(nlayers - 2, -1, -1), succ)):
            for li in rows:
                row = layers[li]
                desired = {}
                for vid in row:
                    ns = neigh[vid]
                    desired[vid] = sum(x[n] for n in ns) / len(ns) if ns else x[vid]
                row.sort(key=lambda v: (desired[v], index[v]))
                _place(row, desired, width, x)
    xmin = min((x[v] - width[v] / 2 for v in x), default=0.0)
    for vid in x:
        x[vid] += MARGIN - xmin

    def top_of(li):
        return float(MARGIN + GROUP_LABEL + li * (NODE_H + V_GAP))

    out_nodes = []
    for vid in order:
        box = vnodes[vid]
        left = round(x[vid] - box["w"] / 2, 1)
        top = top_of(layer[vid])
        out_nodes.append(
            {
                "id": vid,
                "kind": box["kind"],
                "x": left,
                "y": top,
                "w": box["w"],
                "h": NODE_H,
                "label": box["label"],
                "sub": box["sub"],
                "ref": box["ref"],
                "group": box["group"],
            }
        )
    boxes = {b["id"]: b for b in out_nodes}

    out_edges = []
    for (u, v), entry in vedges.items():
        a, b = boxes[u], boxes[v]
        points = [round(a["x"] + a["w"] / 2, 1), a["y"] + NODE_H]
        for d in chains.get((u, v), ()):
            dx = round(x[d], 1)
            points += [dx, top_of(layer[d]), dx, top_of(layer[d]) + NODE_H]
        points += [round(b["x"] + b["w"] / 2, 1), b["y"]]
        entry["points"] = points
        out_edges.append(entry)

    # 5. boxes of the expanded groups that have something visible inside
    hidden = set()
    for gid in groups:
        if representative(gid) is not None:
            hidden.add(gid)
    extent = {}
    for b in out_nodes:
        gid = b["group"]
        while gid is not None:
            if gid not in hidden:
                ext = extent.get(gid)
                r = (b["x"], b["y"], b["x"] + b["w"], b["y"] + b["h"])
                extent[gid] = (
                    r
                    if ext is None
                    else (
                        min(ext[0], r[0]),
                        min(ext[1], r[1]),
                        max(ext[2], r[2]),
                        max(ext[3], r[3]),
                    )
                )
            gid = groups[gid]["parent"]
    inner = {}  # how many expanded groups are nested inside each one (for its padding)
    for gid in extent:
        d = 0
        p = groups[gid]["parent"]
        while p is not None:
            d += 1
            if inner.get(p, 0) < d:
                inner[p] = d
            p = groups[p]["parent"]
    out_groups = []
    for gid, g in groups.items():
        ext = extent.get(gid)
        if ext is None:
            continue
        levels = 1 + inner.get(gid, 0)
        pad = GROUP_PAD * levels
        top_pad = (GROUP_PAD + GROUP_LABEL) * levels
        out_groups.append(
            {
                "id": gid,
                "label": _clip(f"{g['name']}: {g['type']}", 40),
                "x": round(ext[0] - pad, 1),
                "y": round(ext[1] - top_pad, 1),
                "w": round(ext[2] - ext[0] + 2 * pad, 1),
                "h": round(ext[3] - ext[1] + pad + top_pad, 1),
                "depth": g["depth"],
            }
        )
    out_groups.sort(key=lambda g: (g["depth"], g["id"]))

    right = max((b["x"] + b["w"] for b in out_nodes), default=0.0)
    bottom = max((b["y"] + b["h"] for b in out_nodes), default=0.0)
    for g in out_groups:
        right = max(right, g["x"] + g["w"])
        bottom = max(bottom, g["y"] + g["h"])
    shift = max(0.0, -min((g["x"] for g in out_groups), default=0.0) + MARGIN / 2)
    shift_y = max(0.0, -min((g["y"] for g in out_groups), default=0.0) + MARGIN / 2)
    if shift or shift_y:
        for item in out_nodes + out_groups:
            item["x"] = round(item["x"] + shift, 1)
            item["y"] = round(item["y"] + shift_y, 1)
        for e in out_edges:
            p = e["points"]
            e["points"] = [
                round(c + shift, 1) if i % 2 == 0 else c + shift_y for i, c in enumerate(p)
            ]
        right += shift
        bottom += shift_y
    return {
        "width": round(right + MARGIN, 1),
        "height": round(bottom + MARGIN, 1),
        "nodes": out_nodes,
        "edges": out_edges,
        "groups": out_groups,
        "collapsed": sorted(collapsed, key=lambda g: int(g[1:]) if g[1:].isdigit() else 0),
    }


def _place(row, desired, width, x):
    """Put the nodes of one layer (sorted) as near their desired centres as overlap allows."""
    if not row:
        return
    lefts = []
    prev_right = None
    for vid in row:
        left = desired[vid] - width[vid] / 2
        if prev_right is not None and left < prev_right + H_GAP:
            left = prev_right + H_GAP
        lefts.append(left)
        prev_right = left + width[vid]
    shift = sum(lefts[i] + width[v] / 2 - desired[v] for i, v in enumerate(row)) / len(row)
    for i, vid in enumerate(row):
        x[vid] = lefts[i] + width[vid] / 2 - shift
