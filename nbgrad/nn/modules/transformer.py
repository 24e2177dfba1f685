"""``Transformer``, its encoder and decoder, and their layers. Mirrors
``torch/nn/modules/transformer.py``.

NOTE [No fast path]
PyTorch's encoder layers take a fused inference kernel (and nested tensors
for padded batches) in eval mode without grad; it computes the same values as the general path,
which is the only one here. ``enable_nested_tensor`` is kept, and warned about, as PyTorch does,
but nothing is ever nested (the one visible effect, zeros at padded positions, is copied:
NOTE [Nested padding]).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable

from nbgrad import dtypes
from nbgrad._graph.grad_state import is_grad_enabled
from nbgrad._tensor.creation import full
from nbgrad.nn import _attention
from nbgrad.nn import functional as F
from nbgrad.nn.init import xavier_uniform_
from nbgrad.nn.modules.activation import GELU, MultiheadAttention, ReLU
from nbgrad.nn.modules.container import ModuleList
from nbgrad.nn.modules.dropout import Dropout
from nbgrad.nn.modules.linear import Linear
from nbgrad.nn.modules.module import Module
from nbgrad.nn.modules.normalization import LayerNorm
from nbgrad.tensor import Tensor

__all__ = [
    "Transformer",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
]


def _generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    """``-inf`` above the diagonal, ``0`` elsewhere: an ``(sz, sz)`` causal float mask."""
    dtype = dtypes.float32 if dtype is None else dtype
    return full((sz, sz), float("-inf"), dtype=dtype, device=device).triu(diagonal=1)


def _get_seq_len(src: Tensor, batch_first: bool) -> int | None:
    if src.dim() == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal=None, size=None) -> bool:
    """``is_causal`` if given; else whether ``mask`` is the square causal mask."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.shape[-2]
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        if tuple(mask.shape) == tuple(causal.shape):
            make_causal = bool((mask == causal).all())
        else:
            make_causal = False
    return make_causal


def _get_clones(module, N):
    return ModuleList([copy.deepcopy(module) for _ in range(N)])


def _get_activation_fn(activation: str) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _canonical_masks(mask, padding_mask, mask_name, padding_name, dtype):
    padding_mask = _attention._canonical_mask(
        padding_mask, padding_name, _attention._none_or_dtype(mask), mask_name, dtype
    )
    mask = _attention._canonical_mask(mask, mask_name, None, "", dtype, check_other=False)
    return mask, padding_mask


class Transformer(Module):
    """Encoder-decoder transformer: ``TransformerEncoder`` and ``TransformerDecoder`` (each with
    a final ``LayerNorm``), every matrix parameter re-drawn with ``xavier_uniform_``.

    Example:
        >>> import nbgrad as ng
        >>> model = ng.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True)
        >>> tuple(model(ng.randn(2, 5, 8), ng.randn(2, 3, 8)).shape)
        (2, 3, 8)
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        custom_encoder=None,
        custom_decoder=None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        common = (dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, *common, bias, **factory)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, *common, bias, **factory)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        is_batched = src.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if is_batched and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """The causal float mask: ``-inf`` above the diagonal, ``0.0`` elsewhere."""
        return _generate_square_subsequent_mask(sz, dtype=dtype, device=device)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                xavier_uniform_(p)


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer``, then ``norm`` if given.

    Example:
        >>> import nbgrad as ng
        >>> layer = ng.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
        >>> encoder = ng.nn.TransformerEncoder(layer, 2)
        >>> tuple(encoder(ng.randn(2, 5, 8)).shape)
        (2, 5, 8)
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_not_sparsity_fast_path(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(
                "enable_nested_tensor is True, but self.use_nested_tensor is False because "
                f"{why_not}",
                stacklevel=2,
            )
            self.use_nested_tensor = False

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        mask, src_key_padding_mask = _canonical_masks(
            mask, src_key_padding_mask, "mask", "src_key_padding_mask", src.dtype
        )
        seq_len = _get_seq_len(src, self.layers[0].self_attn.batch_first)
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for mod in self.layers:
            output = mod(
                output,
                src_mask=mask,
                is_causal=is_causal,
                src_key_padding_mask=src_key_padding_mask,
            )
        padded = self._nested_padding(src, mask, src_key_padding_mask)
        if padded is not None:
            output = output.masked_fill(padded.unsqueeze(-1), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _nested_padding(self, src, mask, src_key_padding_mask):
        """Where PyTorch would run on nested tensors, its padded positions (else None).

        NOTE [Nested padding]
        in inference (eval mode, no grad needed), with a padding mask
        that pads the end of each sequence and no attention mask, PyTorch runs the layers on
        nested tensors and pads the result back with zeros: the values at padded positions are
        0 (before ``norm``), not those of the general path. The other values agree, so the
        zeros are all that is copied here.
        """
        first = self.layers[0]
        if (
            not getattr(self, "use_nested_tensor", False)
            or first.training
            or src.dim() != 3
            or src_key_padding_mask is None
            or mask is not None
        ):
            return None
        if is_grad_enabled() and (
            src.requires_grad or any(p.requires_grad for p in first.parameters())
        ):
            return None
        padded = src_key_padding_mask != 0
        if getattr(self, "mask_check", True):
            keep = (~padded).numpy()
            if not (keep[:, :1].all() and (keep[:, 1:] <= keep[:, :-1]).all()):
                return None  # not left aligned: PyTorch takes the general path
        return padded


def _why_not_sparsity_fast_path(layer) -> str:
    """Why PyTorch would not use nested tensors for this encoder layer ("" when it would)."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not layer.self_attn.batch_first:
        return (
            f"{name}.self_attn.batch_first was not True"
            "(use batch_first for better inference performance)"
        )
    if not layer.self_attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer``, then ``norm`` if given."""

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None
    ) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        output = tgt
        for mod in self.layers:
            output = mod(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=tgt_is_causal,
                memory_is_causal=memory_is_causal,
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class _LayerBase(Module):
    """Self-attention, feed-forward, norms and dropouts shared by both layer kinds."""

    def _build(
        self,
        d_model,
        nhead,
        dim_feedforward,
        dropout,
        activation,
        eps,
        batch_first,
        norm_first,
        bias,
        factory,
        n_norms,
    ):
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **factory
        )
        if n_norms == 3:
            self.multihead_attn = MultiheadAttention(
                d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, **factory
            )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        for i in range(1, n_norms + 1):
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=eps, bias=bias, **factory))
        for i in range(1, n_norms + 1):
            setattr(self, f"dropout{i}", Dropout(dropout))
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return self.dropout1(x)

    def _ff(self, x, dropout):
        return dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoderLayer(_LayerBase):
    """Self-attention then a feed-forward block, each with a residual connection and a
    ``LayerNorm`` (after it, or before it with ``norm_first``); ``activation`` is ``"relu"``,
    ``"gelu"`` or a callable.

    Example:
        >>> import nbgrad as ng
        >>> layer = ng.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
        >>> layer(ng.randn(5, 2, 8, requires_grad=True)).grad_fn.name()
        'NativeLayerNormBackward0'
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        args = (dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first)
        self._build(d_model, nhead, *args, bias, factory, 2)

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        src_mask, src_key_padding_mask = _canonical_masks(
            src_mask, src_key_padding_mask, "src_mask", "src_key_padding_mask", src.dtype
        )
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _ff_block(self, x: Tensor) -> Tensor:
        return self._ff(x, self.dropout2)


class TransformerDecoderLayer(_LayerBase):
    """Self-attention, attention over ``memory`` (the encoder's output), then a feed-forward
    block; residuals and ``LayerNorm`` as ``TransformerEncoderLayer``."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        args = (dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first)
        self._build(d_model, nhead, *args, bias, factory, 3)
        del self.activation_relu_or_gelu  # (an encoder layer's attribute only, as PyTorch)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(
                self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal
            )
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(
                x
                + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            )
            x = self.norm3(x + self._ff_block(x))
        return x

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(
            x,
            mem,
            mem,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            is_causal=is_causal,
            need_weights=False,
        )[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self._ff(x, self.dropout3)
