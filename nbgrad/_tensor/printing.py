"""How a tensor prints (PyTorch's ``torch/_tensor_str.py``)."""

from __future__ import annotations

import numpy as np

from nbgrad import backend, dtypes

Tensor = None  # the Tensor class: see NOTE [The Tensor class, bound late]


class _PrintOptions:
    """PyTorch's ``PRINT_OPTS``: what ``set_printoptions`` sets."""

    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None  # None: chosen from the values


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": float("inf"), "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(
    precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None
):
    """Set how tensors print, as ``torch.set_printoptions``: digits after the point, the
    number of elements above which a tensor is summarised, the elements shown at each edge of
    a summary, the line width, a ``profile`` (``"default"``, ``"short"``, ``"full"``), and
    ``sci_mode`` (True or False forces scientific notation on or off; None chooses)."""
    if profile is not None:
        for name, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, name, value)
    for name, value in (
        ("precision", precision),
        ("threshold", threshold),
        ("edgeitems", edgeitems),
        ("linewidth", linewidth),
    ):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


# ---- printing -------------------------------------------------------------------------------
def _format_tensor(t):
    data = backend.to_host(t._data)
    kind = data.dtype.kind
    if kind == "f" and data.size:
        # as PyTorch's _Formatter, from the elements that are shown (the summary of a big one):
        # integers print as "3.", unless the nonzero finite magnitudes span more than 1e3 or
        # pass 1e8, and other numbers as "3.1416", unless they span more than 1e3, pass 1e8 or
        # go below 1e-4: then "3.1416e+00"
        opts = PRINT_OPTS
        summarize = data.size > opts.threshold
        shown = _summarized(data, opts.edgeitems) if summarize else data
        nonzero = shown[np.isfinite(shown) & (shown != 0)]
        digits = opts.precision
        base = lambda v: _fmt_special(v) or f"{v:.0f}."  # noqa: E731
        if nonzero.size:
            absmax = float(np.abs(nonzero).max())
            absmin = float(np.abs(nonzero).min())
            wide = absmax / absmin > 1e3 or absmax > 1e8
            if not bool(np.all(nonzero == np.ceil(nonzero))):
                wide = wide or absmin < 1e-4
                base = lambda v: _fmt_special(v) or f"{v:.{digits}f}"  # noqa: E731
            if opts.sci_mode is not None:
                wide = opts.sci_mode
            if wide:
                base = lambda v: _fmt_special(v) or f"{v:.{digits}e}"  # noqa: E731
        # as PyTorch's _Formatter: every element right-justified to the widest nonzero finite
        # one (the extremes, and the smallest magnitude: a long exponent); at least 1
        width = 1
        if nonzero.size:
            widest = (nonzero.max(), nonzero.min(), nonzero[np.argmin(np.abs(nonzero))])
            width = max(len(base(float(v))) for v in widest)
    else:  # integers and bools: the widest of the values shown
        summarize = data.size > PRINT_OPTS.threshold
        shown = _summarized(data, PRINT_OPTS.edgeitems) if summarize else data
        base = str
        width = max((len(str(v)) for v in shown.ravel().tolist()), default=1)
    if data.size == 0:
        body = "[]"
    else:
        fmt = lambda v: base(v).rjust(width)  # noqa: E731
        body = _layout(data, fmt, width, summarize, 7, PRINT_OPTS.edgeitems)
    extras = []
    if t._device.type != "cpu":
        extras.append(f"device='{t._device}'")
    d = t.dtype
    if data.size == 0 and data.ndim != 1:  # as PyTorch (and NumPy): the shape, unless (0,)
        extras.append(f"size={tuple(data.shape)}")
    if d is not dtypes.get_default_dtype() and (
        data.size == 0 or (d is not dtypes.int64 and d is not dtypes.bool)
    ):  # an empty tensor has no elements to tell an int64 or a bool one: always named
        extras.append(f"dtype={d}")
    if hasattr(t, "_view_version") and t._view_version != t._counter()[0]:
        # a no-grad view changed in place since: PyTorch's grad_fn of it is an error, shown so
        extras.append("grad_fn=<Invalid>")
    elif t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    if hasattr(t, "_fw_grad"):  # a dual tensor (see NOTE [Forward-mode AD])
        extras.append(f"tangent={t._fw_grad}")
    # as PyTorch's _add_suffixes: a suffix that would pass 80 columns starts a new line
    text = "tensor(" + body
    last = len(text) - text.rfind("\n") + 1  # (PyTorch's count, one more than the length)
    for e in extras:
        if last + len(e) + 2 > PRINT_OPTS.linewidth:
            text += ",\n" + " " * len("tensor(") + e
            last = len("tensor(") + len(e)
        else:
            text += ", " + e
            last += len(e) + 2
    return text + ")"


def _layout(data, fmt, width, summarize, indent, edge=3):
    """PyTorch's ``_tensor_str_with_formatter``: rows of as many elements as fit in 80 columns
    after ``indent``, nested brackets, blank lines between blocks of 3 and more dims."""
    if data.ndim == 0:
        return fmt(data.item())
    if data.ndim == 1:
        values = data.tolist()
        if summarize and len(values) > 2 * edge:
            items = [fmt(v) for v in values[:edge]] + [" ..."] + [fmt(v) for v in values[-edge:]]
        else:
            items = [fmt(v) for v in values]
        per_line = max(1, (PRINT_OPTS.linewidth - indent) // (width + 2))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = range(data.shape[0])
    if summarize and data.shape[0] > 2 * edge:
        rows = [*range(edge), None, *range(data.shape[0] - edge, data.shape[0])]
    parts = [
        "..." if i is None else _layout(data[i], fmt, width, summarize, indent + 1, edge)
        for i in rows
    ]
    return "[" + ("," + "\n" * (data.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _summarized(data, edge=3):
    """The elements a summarised print shows: ``edge`` first and last along every dimension
    (PyTorch's ``get_summarized_data``)."""
    if data.ndim == 0:
        return data
    rows = list(range(data.shape[0]))
    if len(rows) > 2 * edge:
        rows = rows[:edge] + rows[-edge:]
    if data.ndim == 1:
        return data[rows]
    return np.stack([_summarized(data[i], edge) for i in rows])


def _fmt_special(v):
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None
