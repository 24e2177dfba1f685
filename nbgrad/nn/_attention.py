"""``scaled_dot_product_attention`` and ``multi_head_attention_forward`` of
``nbgrad.nn.functional`` (kept here so that ``functional.py`` stays small).

NOTE [Attention from ops]
PyTorch's CPU attention is a fused kernel; here it is composed from
table ops as PyTorch's own reference (the math path): ``q @ k^T * scale``, plus the mask as an
additive bias (``-inf`` where a boolean mask is False), ``softmax``, ``dropout``, ``@ v``. The
batched ``matmul`` ends in ``UnsafeViewBackward0``, the ``grad_fn`` PyTorch's output has.
``multi_head_attention_forward`` follows ``torch/nn/functional.py`` step by step, so its outputs
carry the same ``grad_fn`` names (``ViewBackward0``, ``MeanBackward1``).
"""

from __future__ import annotations

import math
import warnings

import nbgrad  # nbgrad.nn.functional, read at call time: that module imports this one
from nbgrad import dtypes
from nbgrad._tensor.creation import cat, ones, zeros, zeros_like
from nbgrad.tensor import Tensor

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two dims.

    ``attn_mask``: boolean (True: take part) or float (added), broadcast to ``(..., L, S)``;
    ``is_causal``: a lower-triangular mask (top-left aligned), not with ``attn_mask``;
    ``scale``: default ``1 / sqrt(query.size(-1))``; ``enable_gqa``: ``key``/``value`` heads
    (dim -3) repeated to as many as ``query`` has.

    Example:
        >>> import nbgrad as ng
        >>> q = ng.randn(2, 3, 4, 8, requires_grad=True)
        >>> out = ng.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        >>> tuple(out.shape), out.grad_fn.name()
        ((2, 3, 4, 8), 'UnsafeViewBackward0')
    """
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("scaled_dot_product_attention: inputs must be at least 2-d")
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    bias = None
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError(
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                "is_causal=True"
            )
        causal = ones(L, S, dtype=dtypes.bool, device=query.device).tril(0)
        bias = zeros(L, S, dtype=query.dtype, device=query.device)
        bias = bias.masked_fill(causal.logical_not(), float("-inf"))
    elif attn_mask is not None:
        if attn_mask.dtype == dtypes.bool:
            bias = zeros(tuple(attn_mask.shape), dtype=query.dtype, device=query.device)
            bias = bias.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            bias = attn_mask
    if enable_gqa and query.dim() >= 3:
        groups = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(groups, -3)
        value = value.repeat_interleave(groups, -3)
    weight = query.matmul(key.transpose(-2, -1)) * scale_factor
    if bias is not None:
        weight = weight + bias
        # NOTE [Fully masked rows]
        # as PyTorch's ``_safe_softmax``, a query that no key may
        # attend to gets zero weights (and zero gradients), not NaN: its logits are zeroed
        # before the softmax and its weights after.
        dead = (weight == float("-inf")).all(-1, keepdim=True)
        if bool(dead.any()):
            weight = weight.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)
        else:
            weight = weight.softmax(-1)
    else:
        weight = weight.softmax(-1)
    if dropout_p > 0.0:
        weight = nbgrad.nn.functional.dropout(weight, dropout_p, True)
    return weight.matmul(value)


# ---- multi-head attention, as torch/nn/functional.py --------------------------------------------
def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                f"found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                f"found {attn_mask.dim()}-D tensor instead"
            )
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                f"but found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                    f"but found {attn_mask.dim()}-D tensor instead"
                )
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(
                        f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}"
                    )
        return False
    raise AssertionError(
        "query should be unbatched 2D or batched 3D tensor but received "
        f"{query.dim()}-D query tensor"
    )


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A boolean mask as a float one (``-inf`` where True); a float mask as it is."""
    if mask is None:
        return None
    is_float = mask.is_floating_point()
    if mask.dtype != dtypes.bool and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(
            f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type "
            "for both instead.",
            stacklevel=3,
        )
    if not is_float:
        mask = zeros_like(mask, dtype=target_type).masked_fill(mask, float("-inf"))
    return mask


def _none_or_dtype(input):
    return None if input is None else input.dtype


def _split3(proj, n, E):
    """``(..., n * E)`` -> ``n`` contiguous ``(..., E)`` tensors, as PyTorch's packed projection."""
    proj = proj.view(*proj.shape[:-1], n, E).unsqueeze(0).transpose(0, -2).squeeze(-2)
    proj = proj.contiguous()
    return [proj[i] for i in range(n)]


def _in_projection_packed(q, k, v, w, b=None):
    E = q.shape[-1]
    if k is v:
        if q is k:
            return _split3(nbgrad.nn.functional.linear(q, w, b), 3, E)
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        return [nbgrad.nn.functional.linear(q, w_q, b_q)] + _split3(
            nbgrad.nn.functional.linear(k, w_kv, b_kv), 2, E
        )
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return (
        nbgrad.nn.functional.linear(q, w_q, b_q),
        nbgrad.nn.functional.linear(k, w_k, b_k),
        nbgrad.nn.functional.linear(v, w_v, b_v),
    )


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    Eq, Ek, Ev = q.shape[-1], k.shape[-1], v.shape[-1]
    for name, w, want in (
        ("query", w_q, (Eq, Eq)),
        ("key", w_k, (Eq, Ek)),
        ("value", w_v, (Eq, Ev)),
    ):
        if tuple(w.shape) != want:
            raise AssertionError(f"expecting {name} weights shape of {want}, but got {w.shape}")
    for name, bias in (("query", b_q), ("key", b_k), ("value", b_v)):
        if bias is not None and tuple(bias.shape) != (Eq,):
            raise AssertionError(f"expecting {name} bias shape of {(Eq,)}, but got {bias.shape}")
    return (
        nbgrad.nn.functional.linear(q, w_q, b_q),
        nbgrad.nn.functional.linear(k, w_k, b_k),
        nbgrad.nn.functional.linear(v, w_v, b_v),
    )


def _pad_last(t):
    """One zero column appended on the last dim (``nbgrad.nn.functional.pad(mask, (0, 1))``)."""
    return cat([t, zeros(*t.shape[:-1], 1, dtype=t.dtype, device=t.device)], -1)


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention over ``(L, N, E)`` inputs (or unbatched ``(L, E)``): in-projection,
    attention per head, out-projection. Returns the output and, with ``need_weights``, the
    attention weights (averaged over the heads when ``average_attn_weights``)."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    key_padding_mask, attn_mask, is_causal = _mha_masks(
        query, key_padding_mask, attn_mask, is_causal, need_weights
    )
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(
                f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                f"{value.shape[:2]}"
            )
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(
            query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v
        )
    else:
        if key.shape != value.shape:
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    if attn_mask is not None:
        attn_mask = _check_attn_mask(attn_mask, (tgt_len, key.shape[0]), bsz * num_heads)
    q, k, v, attn_mask, key_padding_mask = _mha_heads(
        q,
        k,
        v,
        (bsz, num_heads, head_dim),
        bias_k,
        bias_v,
        static_k,
        static_v,
        add_zero_attn,
        attn_mask,
        key_padding_mask,
    )
    src_len = k.shape[1]
    if key_padding_mask is not None:
        attn_mask = _merge_key_padding_mask(key_padding_mask, attn_mask, bsz, num_heads, src_len)
    if not training:
        dropout_p = 0.0
    if need_weights:
        out, weights = _attention_with_weights(q, k, v, attn_mask, dropout_p, is_causal)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = nbgrad.nn.functional.linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.shape[1])
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = nbgrad.nn.functional.linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.shape[1])
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _mha_masks(query, key_padding_mask, attn_mask, is_causal, need_weights):
    """The two masks in the query's dtype, and whether the causal hint still holds."""
    key_padding_mask = _canonical_mask(
        key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask", query.dtype
    )
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
            "method `generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the mask is the causal one: scaled_dot_product_attention makes it
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
        if key_padding_mask is not None:
            is_causal = False
    return key_padding_mask, attn_mask, is_causal


def _check_attn_mask(attn_mask, lengths, batch_heads):
    """A 2-D ``(L, S)`` mask made 3-D, or a 3-D ``(N * heads, L, S)`` one, checked."""
    tgt_len, src_len = lengths
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(
                f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                f"{(tgt_len, src_len)}."
            )
        return attn_mask.unsqueeze(0)
    if attn_mask.dim() == 3:
        want = (batch_heads, tgt_len, src_len)
        if tuple(attn_mask.shape) != want:
            raise RuntimeError(
                f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be {want}."
            )
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def _mha_heads(
    q, k, v, sizes, bias_k, bias_v, static_k, static_v, add_zero_attn, attn_mask, key_padding_mask
):
    """``bias_k``/``bias_v`` appended, q, k, v split into ``(N * heads, L, head_dim)``, and a
    zero key and value appended with ``add_zero_attn``; the masks padded to match."""
    bsz, num_heads, head_dim = sizes
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError(
            "bias_k is set but bias_v is None"
            if bias_k is not None
            else "bias_v is set but bias_k is None"
        )
    q = q.view(q.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    k = (
        k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
        if static_k is None
        else static_k
    )
    v = (
        v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
        if static_v is None
        else static_v
    )
    if add_zero_attn:
        zero = (bsz * num_heads, 1, head_dim)
        k = cat([k, zeros(zero, dtype=k.dtype, device=k.device)], 1)
        v = cat([v, zeros(zero, dtype=v.dtype, device=v.device)], 1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    return q, k, v, attn_mask, key_padding_mask


def _merge_key_padding_mask(key_padding_mask, attn_mask, bsz, num_heads, src_len):
    """The key padding mask, checked, spread over the heads and added to ``attn_mask``."""
    if key_padding_mask.shape[0] != bsz:
        raise AssertionError(
            f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}"
        )
    if key_padding_mask.shape[1] != src_len:
        raise AssertionError(
            f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
            f"{key_padding_mask.shape[1]}"
        )
    key_padding_mask = (
        key_padding_mask.view(bsz, 1, 1, src_len)
        .expand(-1, num_heads, -1, -1)
        .reshape(bsz * num_heads, 1, src_len)
    )
    return key_padding_mask if attn_mask is None else attn_mask + key_padding_mask


def _attention_with_weights(q, k, v, attn_mask, dropout_p, is_causal):
    """Attention spelled out, as PyTorch's ``need_weights`` path: the output per head
    ``(N * heads, L, head_dim)`` and the weights ``(N * heads, L, S)``."""
    E = q.shape[-1]
    q_scaled = q * math.sqrt(1.0 / float(E))
    if is_causal and attn_mask is None:
        raise AssertionError("FIXME: is_causal not implemented for need_weights")
    k_t = k.transpose(-2, -1)
    if attn_mask is not None:
        weights = attn_mask.baddbmm(q_scaled, k_t)
    else:
        weights = q_scaled.bmm(k_t)
    weights = weights.softmax(-1)
    if dropout_p > 0.0:
        weights = nbgrad.nn.functional.dropout(weights, p=dropout_p)
    return weights.bmm(v), weights
