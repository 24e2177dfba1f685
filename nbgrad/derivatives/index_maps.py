"""Op table rows: the layers that read each output element from fixed input positions (the
reflect and replicate paddings, nearest, linear and cubic upsampling, the pixel shuffles,
``unfold`` and ``fold``), each under the node PyTorch names it.

NOTE [Index-map rows]
each of these layers is a linear map given by an index map that its
caller (``nbgrad.nn``) computes once in NumPy: over the input's trailing dims of sizes
``size``, ``index`` of shape ``(*out, K)`` holds for each output position the flat input
positions it reads (``-1`` reads a zero), and ``weight`` (None: ``K == 1`` and weight 1) what
each read counts; leading dims are kept. A gather by the map and the matching scatter-add are
each other's adjoint, so each is the other's backward, to any order. One pair of rows is
registered per PyTorch node name (``ReflectionPad2DBackward0`` and the node of its backward,
``ReflectionPad2DBackwardBackward0``); ``im2col`` / ``col2im`` and ``pixel_shuffle`` /
``pixel_unshuffle`` are such pairs in PyTorch too.

The map is an attribute (host arrays, copied to the device at each call), not a saved tensor:
as PyTorch's nodes, which keep only sizes, these nodes hold no tensor, except the paddings',
whose backward takes ``self`` as PyTorch's ``reflection_pad2d_backward(grad, self, padding)``.
"""

from __future__ import annotations

from nbgrad._tensor.dispatch import OPS, _dispatch
from nbgrad.derivatives.opinfo import op
from nbgrad.kernels.index_maps import _gather_map, _scatter_map


def _map_attrs(index, weight, size):
    return {"index": index, "weight": weight, "size": size}


def _index_map_rows(name, node, backward_name, backward_node, saves_self=False):
    """Register the gather row ``name`` and its adjoint, the scatter row ``backward_name``."""
    # fmt: off
    if saves_self:  # the paddings: see the module's docstring
        op(name, node, "self", lambda xp, self, index, weight, size: _gather_map(xp, self, index, weight, size),
           attrs="index weight size",
           self=lambda grad, self, index, weight, size: _dispatch(OPS[backward_name], (grad,), _map_attrs(index, weight, tuple(self.shape[self.dim() - len(size):]))))
    else:
        op(name, node, "self", lambda xp, self, index, weight, size: _gather_map(xp, self, index, weight, size),
           attrs="index weight size",
           self=lambda grad, index, weight, size: _dispatch(OPS[backward_name], (grad,), _map_attrs(index, weight, size)))
    op(backward_name, backward_node, "grad_output", lambda xp, grad_output, index, weight, size: _scatter_map(xp, grad_output, index, weight, size),
       attrs="index weight size",
       grad_output=lambda grad, index, weight, size: _dispatch(OPS[name], (grad,), _map_attrs(index, weight, size)))
    # fmt: on


for _n in (1, 2, 3):
    for _kind, _aten in (("Reflection", "reflection"), ("Replication", "replication")):
        _index_map_rows(
            f"{_aten}_pad{_n}d",
            f"{_kind}Pad{_n}DBackward0",
            f"{_aten}_pad{_n}d_backward",
            f"{_kind}Pad{_n}DBackwardBackward0",
            saves_self=True,
        )
    for _aten, _node in (
        ("upsample_nearest", "Nearest"),
        ("_upsample_nearest_exact", "NearestExact"),
    ):
        _index_map_rows(
            f"{_aten}{_n}d",
            f"Upsample{_node}{_n}DBackward0",
            f"{_aten}{_n}d_backward",
            f"Upsample{_node}{_n}DBackwardBackward0",
        )
for _aten, _node in (("linear1d", "Linear1D"), ("bilinear2d", "Bilinear2D"),
                     ("trilinear3d", "Trilinear3D"), ("bicubic2d", "Bicubic2D")):  # fmt: skip
    _index_map_rows(
        f"upsample_{_aten}",
        f"Upsample{_node}Backward0",
        f"upsample_{_aten}_backward",
        f"Upsample{_node}BackwardBackward0",
    )
_index_map_rows(
    "pixel_shuffle", "PixelShuffleBackward0", "pixel_shuffle_backward", "PixelUnshuffleBackward0"
)
_index_map_rows(
    "pixel_unshuffle",
    "PixelUnshuffleBackward0",
    "pixel_unshuffle_backward",
    "PixelShuffleBackward0",
)
_index_map_rows("im2col", "Im2ColBackward0", "col2im", "Col2ImBackward0")
