"""The index maps of the layers that read fixed input positions: paddings, upsampling, pixel
shuffles, ``unfold`` / ``fold``, computed in NumPy as PyTorch's CPU kernels compute their
source indices and weights, and handed to the gather / scatter rows of
``nbgrad/derivatives/index_maps.py`` (NOTE [Index-map rows]).

A map is ``(index, weight)``: ``index`` of shape ``(*out, K)`` holds flat positions in the
input's mapped trailing dims (``-1``: a zero), ``weight`` the same shape or None (``K == 1``).
"""

from __future__ import annotations

import math

import numpy as np

from nbgrad._tensor.dispatch import _dispatch
from nbgrad.derivatives import OPS


def apply_map(input, row, index, weight, size):
    """The gather row ``row`` (the scatter row, for ``col2im``) of ``input`` by the map."""
    attrs = {"index": index, "weight": weight, "size": tuple(int(s) for s in size)}
    return _dispatch(OPS[row], (input,), attrs)


def separable_map(sizes, per_dim):
    """The map of an op that acts on each trailing dim on its own: ``per_dim[d]`` is
    ``(index (out_d, K_d), weight or None)`` along dim ``d`` of ``sizes``."""
    strides = [math.prod(sizes[d + 1 :]) for d in range(len(sizes))]
    index, weight = np.zeros((1,), np.int64), np.ones((1,))
    for (idx, w), stride in zip(per_dim, strides):
        idx = idx.reshape(len(idx), -1)
        w = np.ones(idx.shape) if w is None else w.reshape(idx.shape)
        index = index[..., None, :, None] + idx[:, None, :] * stride
        weight = weight[..., None, :, None] * w[:, None, :]
        index = index.reshape(index.shape[:-2] + (-1,))
        weight = weight.reshape(index.shape)
    if all(w is None for _, w in per_dim):
        return index, None
    return index, weight


# ---- padding ----------------------------------------------------------------------------------
def pad_index(size, left, right, mode):
    """Source positions, along one dim of ``size``, of a padding by ``left`` and ``right``."""
    pos = np.arange(-left, size + right)
    if mode == "reflect":
        pos = np.abs(pos)
        pos = np.where(pos >= size, 2 * (size - 1) - pos, pos)
    elif mode == "replicate":
        pos = np.clip(pos, 0, size - 1)
    else:  # circular, as PyTorch: crop first, then wrap around what is left
        start, stop = max(-left, 0), size - max(-right, 0)
        pos = np.arange(-max(left, 0), stop - start + max(right, 0)) % (stop - start) + start
    return pos


# ---- interpolation ----------------------------------------------------------------------------
def _source_scale(size, out, scale, align_corners, acc):
    """ATen's ``area_pixel_compute_scale``."""
    if align_corners:
        return acc(size - 1) / acc(out - 1) if out > 1 else acc(0)
    return acc(1.0 / scale) if scale else acc(size) / acc(out)


def nearest_index(size, out, scale, exact=False):
    """ATen's ``nearest_idx`` (``floor(i * scale)``) or, ``exact``, ``nearest-exact``'s
    ``floor((i + 0.5) * scale)``, in float32 arithmetic."""
    if not exact and out == size:
        return np.arange(out)
    if not exact and out == 2 * size:
        return np.arange(out) >> 1
    s = np.float32(1.0 / scale) if scale else np.float32(size) / np.float32(out)
    pos = np.arange(out, dtype=np.float32) + (np.float32(0.5) if exact else np.float32(0))
    return np.minimum(np.floor(pos * s).astype(np.int64), size - 1)


def linear_weights(size, out, scale, align_corners, np_dtype):
    """ATen's ``compute_indices_weights_linear``: indices ``(out, 2)`` and their weights."""
    acc = np.float64 if np_dtype == np.float64 else np.float32
    s = _source_scale(size, out, scale, align_corners, acc)
    if align_corners:
        src = s * np.arange(out, dtype=acc)
    else:
        src = np.maximum(s * (np.arange(out, dtype=acc) + acc(0.5)) - acc(0.5), acc(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
    lam = np.clip(src - i0, 0, 1).astype(np_dtype)
    i1 = i0 + (i0 < size - 1)
    return np.stack([i0, i1], -1), np.stack([1 - lam, lam], -1)


def cubic_weights(size, out, scale, align_corners, np_dtype):
    """ATen's bicubic source indices (4 per output, clamped to the input) and
    ``get_cubic_upsample_coefficients`` (A = -0.75)."""
    acc = np.float64 if np_dtype == np.float64 else np.float32
    s = _source_scale(size, out, scale, align_corners, acc)
    dst = np.arange(out, dtype=acc)
    src = s * dst if align_corners else s * (dst + acc(0.5)) - acc(0.5)
    base = np.floor(src)
    t = src - base
    a = acc(-0.75)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weight = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], -1)
    index = np.clip(base.astype(np.int64)[:, None] + np.arange(-1, 3), 0, size - 1)
    return index, weight.astype(np_dtype)


# ---- pixel shuffles, unfold -------------------------------------------------------------------
def pixel_shuffle_index(c, h, w, r):
    """``(C * r * r, H, W)`` -> ``(C, H * r, W * r)``: the source of each output position."""
    pos = np.arange(c * h * w).reshape(c // (r * r), r, r, h, w).transpose(0, 3, 1, 4, 2)
    return pos.reshape(c // (r * r), h * r, w * r, 1)


def pixel_unshuffle_index(c, h, w, r):
    """``(C, H, W)`` -> ``(C * r * r, H / r, W / r)``."""
    pos = np.arange(c * h * w).reshape(c, h // r, r, w // r, r).transpose(0, 2, 4, 1, 3)
    return pos.reshape(c * r * r, h // r, w // r, 1)


def unfold_index(c, size, kernel_size, dilation, padding, stride):
    """``(index (C * kh * kw, L, 1), (Lh, Lw))``: the flat ``(C, H, W)`` position that each
    entry of ``unfold``'s output reads, ``-1`` in the zero padding."""
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (size, kernel_size, dilation, padding, stride)
    lh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    lw = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if lh <= 0 or lw <= 0:
        raise RuntimeError(
            f"Given input with spatial size ({h}, {w}), kernel_size=({kh}, {kw}), "
            f"dilation=({dh}, {dw}), padding=({ph}, {pw}), calculated shape of the array of "
            f"sliding blocks as ({lh}, {lw}), but its components must be at least one."
        )
    rows = np.arange(kh)[:, None, None, None] * dh + np.arange(lh)[None, None, :, None] * sh - ph
    cols = np.arange(kw)[None, :, None, None] * dw + np.arange(lw)[None, None, None, :] * sw - pw
    inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
    plane = np.where(inside, rows * w + cols, -1).reshape(kh * kw, lh * lw)
    index = np.where(plane >= 0, plane + (np.arange(c) * h * w)[:, None, None], -1)
    return index.reshape(c * kh * kw, lh * lw, 1), (lh, lw)
