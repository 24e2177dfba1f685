"""The 1-d, 3-d and transposed convolutions, ``bilinear``, ``pad``, ``unfold`` and ``fold`` of
``nbgrad.nn.functional`` (``functional.py`` holds ``linear`` and ``conv2d``), and the helpers
the other ``_functional_*`` modules share.

As PyTorch: ``conv1d`` and the transposed convolutions are ``ConvolutionBackward0`` rows and
``pad``'s constant mode is ``ConstantPadNdBackward0``. The reflect and replicate paddings,
``unfold`` and ``fold`` are the index-map rows of PyTorch's names (``ReflectionPad2DBackward0``,
``Im2ColBackward0``, ``Col2ImBackward0``: NOTE [Index-map rows]); the circular padding is
PyTorch's chain of slice copies (``CopySlices``). ``bilinear`` is composed (NOTE [Composed gaps]):
its ``grad_fn`` is the last op composed where PyTorch's is ``TrilinearBackward0``.

NOTE [Composed gaps]
a function of these modules that PyTorch runs as one ATen node and nbgrad
composes from table ops (``index_select``, ``scatter``, ``norm``, ``matmul``, ``avg_pool2d``...),
with index arrays computed once in NumPy, has the table's gradients, to any order; its
``grad_fn`` is the last op composed (PyTorch's: ``PdistBackward0``, ``MaxUnpool2DBackward0``,
``RreluWithNoiseBackward0``, ``MultilabelMarginLossBackward0``, ``TrilinearBackward0``).
"""

from __future__ import annotations

import nbgrad  # nbgrad.nn.functional, read at call time: that module imports this one
from nbgrad._tensor.dispatch import _dispatch
from nbgrad.derivatives import OPS
from nbgrad.nn._index_maps import (
    apply_map,
    pad_index,
    separable_map,
    unfold_index,
)
from nbgrad.tensor import Tensor

__all__ = [
    "conv1d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "pad",
    "unfold",
    "fold",
    "bilinear",
]


def _tuple(x, n, name="argument"):
    if isinstance(x, (list, tuple)):
        if len(x) == 1 and n > 1:
            x = tuple(x) * n
        if len(x) != n:
            raise ValueError(f"expected {name} to be a single int or {n} ints, got {x}")
        return tuple(int(v) for v in x)
    return (int(x),) * n


def _check_conv_weight(input, weight, groups, name, transposed):
    ndim = weight.dim()
    if input.dim() not in (ndim - 1, ndim):
        raise RuntimeError(
            f"Expected {ndim - 1}D (unbatched) or {ndim}D (batched) input to {name}, but got "
            f"input of size: {list(input.shape)}"
        )
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    channels = input.shape[1 if input.dim() == ndim else 0]
    expected = weight.shape[0] if transposed else weight.shape[1] * groups
    if channels != expected:
        what = f"weight of size {list(weight.shape)}, expected input{list(input.shape)} to have"
        raise RuntimeError(
            f"Given {'transposed=1, ' if transposed else ''}groups={groups}, {what} "
            f"{expected} channels, but got {channels} channels instead"
        )


def _conv_nd(input, weight, bias, stride, padding, dilation, groups, n):
    """The ``n``-d cross-correlation (``ConvolutionBackward0``); ``padding``: an int, a tuple,
    ``"valid"`` or ``"same"`` (an odd total puts the extra one after, as PyTorch)."""
    name = f"conv{n}d"
    if weight.dim() != n + 2:
        raise RuntimeError(f"weight should have {n + 2} dimensions, got {list(weight.shape)}")
    _check_conv_weight(input, weight, groups, name, False)
    if input.dim() == n + 1:
        args = (bias, stride, padding, dilation, groups, n)
        return _conv_nd(input.unsqueeze(0), weight, *args).squeeze(0)
    stride, dilation = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * n
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            pads = tuple(
                (d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for d, k in zip(dilation, kernel)
            )
        else:
            raise ValueError(f"Invalid padding string '{padding}'")
    else:
        pads = tuple((p, p) for p in _tuple(padding, n, "padding"))
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size [{list(weight.shape)}] instead"
        )
    attrs = {"stride": stride, "padding": pads, "dilation": dilation, "groups": groups}
    return _dispatch(OPS["convolution"], (input, weight, bias), attrs)


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """1-d cross-correlation over an ``(N, C, L)`` (or unbatched ``(C, L)``) input
    (``ConvolutionBackward0``); ``padding``: an int, ``"valid"`` or ``"same"``."""
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 1)


def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """3-d cross-correlation over an ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) input
    (``ConvolutionBackward0``); ``padding``: an int, a triple, ``"valid"`` or ``"same"``."""
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 3)


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, n):
    name = f"conv_transpose{n}d"
    if weight.dim() != n + 2:
        raise RuntimeError(f"weight should have {n + 2} dimensions, got {list(weight.shape)}")
    _check_conv_weight(input, weight, groups, name, True)
    if input.dim() == n + 1:
        args = (bias, stride, padding, output_padding, groups, dilation, n)
        return _conv_transpose(input.unsqueeze(0), weight, *args).squeeze(0)
    stride, padding = _tuple(stride, n, "stride"), _tuple(padding, n, "padding")
    output_padding = _tuple(output_padding, n, "output_padding")
    dilation = _tuple(dilation, n, "dilation")
    if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(
            f"output padding must be smaller than either stride or dilation, but got "
            f"output_padding={list(output_padding)}, stride={list(stride)}, "
            f"dilation={list(dilation)}"
        )
    if input.shape[1] % groups:
        raise RuntimeError(f"Given groups={groups}, input channels must be divisible by groups")
    attrs = {
        "stride": stride,
        "padding": tuple((p, p) for p in padding),
        "output_padding": output_padding,
        "dilation": dilation,
        "groups": groups,
    }
    return _dispatch(OPS["convolution_transpose"], (input, weight, bias), attrs)


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
) -> Tensor:
    """The transposed 1-d convolution (the gradient of ``conv1d`` w.r.t. its input) of an
    ``(N, C_in, L)`` input by a ``(C_in, C_out / groups, k)`` weight (``ConvolutionBackward0``)."""
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 1
    )


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
) -> Tensor:
    """The transposed 2-d convolution of an ``(N, C_in, H, W)`` input by a
    ``(C_in, C_out / groups, kh, kw)`` weight (``ConvolutionBackward0``)."""
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 2
    )


def conv_transpose3d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
) -> Tensor:
    """The transposed 3-d convolution of an ``(N, C_in, D, H, W)`` input by a
    ``(C_in, C_out / groups, kd, kh, kw)`` weight (``ConvolutionBackward0``)."""
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 3
    )


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad (or, with negative amounts, crop) the last ``len(pad) // 2`` dims; ``pad`` is
    ``(left, right)`` of the last dim, then of the one before, and so on."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension"
        )
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode == "constant":
        return _dispatch(OPS["constant_pad_nd"], (input,), {"pad": pad, "value": value or 0})
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    n = len(pad) // 2
    if input.dim() not in (n + 1, n + 2):
        raise NotImplementedError(
            f"Only {n + 1}D or {n + 2}D (batch mode) inputs are supported by {mode} padding "
            f"of {n} dims, got {input.dim()}D"
        )
    per_dim = []
    for k in reversed(range(n)):
        dim = input.dim() - 1 - k
        left, right, size = pad[2 * k], pad[2 * k + 1], input.shape[dim]
        if mode == "reflect" and (left >= size or right >= size):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({left}, {right}) at dimension {dim} of input "
                f"{list(input.shape)}"
            )
        if mode == "circular" and (left > size or right > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if size + left + right <= 0 or (mode == "replicate" and size == 0):
            raise RuntimeError(f"input (shape {list(input.shape)}) is too small for padding {pad}")
        per_dim.append((pad_index(size, left, right, mode), None))
    if mode == "circular":
        return _circular_pad(input, pad, n)
    size = input.shape[input.dim() - n :]
    index, _ = separable_map(size, per_dim)
    aten = "reflection" if mode == "reflect" else "replication"
    return apply_map(input, f"{aten}_pad{n}d", index, None, size)


def _circular_pad(input, pad, n):
    """PyTorch's ``_pad_circular``: a new tensor, the (cropped) input copied into its middle,
    then each padded dim's borders copied from the opposite side, so that the graph is
    PyTorch's chain of ``CopySlices``."""
    shape = list(input.shape)
    for k in range(n):
        dim = input.dim() - 1 - k
        shape[dim] += pad[2 * k] + pad[2 * k + 1]
    out = input.new_empty(shape)
    out_slice, in_slice = out, input
    for k in range(n):
        dim = input.dim() - 1 - k
        left, right = pad[2 * k], pad[2 * k + 1]
        out_slice = out_slice.narrow(dim, max(left, 0), shape[dim] - max(left, 0) - max(right, 0))
        size = input.shape[dim]
        in_slice = in_slice.narrow(dim, max(-left, 0), size - max(-left, 0) - max(-right, 0))
    out_slice.copy_(in_slice)
    for k in range(n):  # corners are written more than once where n > 1
        dim = input.dim() - 1 - k
        left, right = pad[2 * k], pad[2 * k + 1]
        if left > 0:
            source = out.narrow(dim, shape[dim] - left - max(right, 0), left)
            out.narrow(dim, 0, left).copy_(source)
        if right > 0:
            source = out.narrow(dim, max(left, 0), right)
            out.narrow(dim, shape[dim] - right, right).copy_(source)
    return out


def _fold_args(kernel_size, dilation, padding, stride):
    return (
        nbgrad.nn.functional._pair(kernel_size, "kernel_size"),
        nbgrad.nn.functional._pair(dilation, "dilation"),
        nbgrad.nn.functional._pair(padding, "padding"),
        nbgrad.nn.functional._pair(stride, "stride"),
    )


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """im2col: the sliding ``kernel_size`` blocks of an ``(N, C, H, W)`` (or ``(C, H, W)``)
    input as the columns of ``(N, C * kh * kw, L)``."""
    if input.dim() not in (3, 4):
        raise RuntimeError(
            f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)"
        )
    k, d, p, s = _fold_args(kernel_size, dilation, padding, stride)
    *_, c, h, w = input.shape
    index, _ = unfold_index(c, (h, w), k, d, p, s)
    return apply_map(input, "im2col", index, None, (c, h, w))


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """col2im: the columns of an ``(N, C * kh * kw, L)`` (or ``(C * kh * kw, L)``) input
    summed into the ``output_size`` blocks they came from (the adjoint of ``unfold``)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
            f"(got {input.dim()}D)"
        )
    k, d, p, s = _fold_args(kernel_size, dilation, padding, stride)
    h, w = nbgrad.nn.functional._pair(output_size, "output_size")
    ckk, length = input.shape[-2:]
    if ckk % (k[0] * k[1]):
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={ckk} and kernel_size=({k[0]}, {k[1]})"
        )
    c = ckk // (k[0] * k[1])
    index, (lh, lw) = unfold_index(c, (h, w), k, d, p, s)
    if lh * lw != length:
        raise RuntimeError(
            f"Given output_size=({h}, {w}), kernel_size=({k[0]}, {k[1]}), dilation=({d[0]}, "
            f"{d[1]}), padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), expected size of "
            f"input's dimension 2 to match the calculated number of sliding blocks {lh} * {lw} "
            f"= {lh * lw}, but got input.size(2)={length}."
        )
    return apply_map(input, "col2im", index, None, (c, h, w))


def _F():  # noqa: N802
    return nbgrad.nn.functional


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None):
    """``y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o]``."""
    if input1.dim() != input2.dim():
        raise RuntimeError(
            f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}"
        )
    if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(
            "bilinear(): input batch dimensions do not match: got "
            f"{list(input1.shape)} and {list(input2.shape)}"
        )
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be three-dimensional, got {weight.dim()}")
    n_out, n1, n2 = weight.shape
    if input1.shape[-1] != n1 or input2.shape[-1] != n2:
        raise RuntimeError(
            f"bilinear(): input sizes do not match weight: got {list(input1.shape)}, "
            f"{list(input2.shape)} and weight {list(weight.shape)}"
        )
    lead = tuple(input1.shape[:-1])
    x1, x2 = input1.reshape(-1, n1), input2.reshape(-1, n2)
    left = x1.matmul(weight.permute(1, 0, 2).reshape(n1, n_out * n2)).view(-1, n_out, n2)
    out = (left * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.view(*lead, n_out)
