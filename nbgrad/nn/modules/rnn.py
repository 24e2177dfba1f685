"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their cells. Mirrors
``torch/nn/modules/rnn.py`` (packed sequences aside).

NOTE [Recurrent layers from ops]
no fused kernel. Each step is made of table ops (``linear``,
``sigmoid``, ``tanh``, ``chunk``, ``stack``/``cat``), laid out as ATen's CPU implementation
(``aten/src/ATen/native/RNN.cpp``) lays them out: the input projection of a whole layer is one
``linear`` unbound over time, each step adds ``linear(h, w_hh, b_hh)``, a layer's outputs are
stacked (``StackBackward0``), two directions are concatenated (``CatBackward0``), the final
states stacked, and ``batch_first`` outputs transposed back (in place for RNN and GRU,
``TransposeBackward1``, out of place for LSTM, ``TransposeBackward0``). So the outputs carry
PyTorch's ``grad_fn`` names, and every gradient, of any order, comes from the op table.
"""

from __future__ import annotations

import math
import numbers
import warnings

from nbgrad._tensor.creation import cat, stack, zeros
from nbgrad._tensor.dispatch import _dispatch
from nbgrad.derivatives import OPS
from nbgrad.nn import functional as F
from nbgrad.nn import init
from nbgrad.nn.modules.module import Module
from nbgrad.nn.parameter import Parameter
from nbgrad.tensor import Tensor, empty

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


# ---- one step of each kind, on ``ih`` = linear(x, w_ih, b_ih) already computed ------------------
def _rnn_step(ih, h, w_hh, b_hh, relu):
    pre = ih + F.linear(h, w_hh, b_hh)
    return pre.relu() if relu else pre.tanh()


def _lstm_step(ih, h, c, w_hh, b_hh, w_hr=None):
    gates = ih + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _gru_step(ih, h, w_hh, b_hh):
    i_r, i_z, i_n = ih.chunk(3, 1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, 1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return (h - n) * z + n


class RNNBase(Module):
    """The parameters, checks and layer loop shared by ``RNN``, ``LSTM`` and ``GRU``.

    Parameters are named ``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``,
    ``bias_hh_l{k}`` (and ``weight_hr_l{k}`` for a projected LSTM), with ``_reverse`` for the
    second direction; all drawn from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
    """

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if (
            not isinstance(dropout, numbers.Number)
            or not 0 <= dropout <= 1
            or isinstance(dropout, bool)
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an "
                "element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                "dropout expects num_layers greater than 1, but got "
                f"dropout={dropout} and num_layers={num_layers}",
                stacklevel=2,
            )
        for name, value, kind in (
            ("bias", bias, bool),
            ("batch_first", batch_first, bool),
            ("input_size", input_size, int),
        ):
            if not isinstance(value, kind):
                raise TypeError(
                    f"{name} should be of type {kind.__name__}, got: {type(value).__name__}"
                )
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        factory = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                shapes = [(gate_size, layer_input), (gate_size, real_hidden)]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    shapes += [(gate_size,), (gate_size,)]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    shapes.append((proj_size, hidden_size))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(empty(shape, **factory)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    # NOTE [Flat weights by name]
    # PyTorch keeps a list of the parameters in sync through
    # ``__setattr__`` (for cuDNN); here the list is read by name each time, so a parameter
    # replaced or loaded is always the one used.
    @property
    def _flat_weights(self) -> list:
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op (PyTorch's compacts the weights for cuDNN)."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def check_input(self, input: Tensor, batch_sizes=None) -> None:
        dtype = self._flat_weights[0].dtype
        if input.dtype != dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({dtype}). "
                f"Convert input: input.to({dtype}), or convert model: model.to({input.dtype})"
            )
        if input.dim() != 3:
            raise RuntimeError(f"input must have 3 dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(
                "input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {input.shape[-1]}"
            )

    def get_expected_hidden_size(self, input: Tensor, batch_sizes=None) -> tuple[int, int, int]:
        mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(
        self, hx: Tensor, expected_hidden_size, msg: str = "Expected hidden size {}, got {}"
    ) -> None:
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.shape)))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes=None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def _prepare(self, input, hx, name, hx_is_tuple=False):
        """Check the input's dims; unsqueeze an unbatched input (and ``hx``)."""
        if input.dim() not in (2, 3):
            got = f"{input.dim()}D tensor" if name != "LSTM" else f"{input.dim()}D"
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {got} instead")
        is_batched = input.dim() == 3
        if not is_batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        return input, is_batched

    def _zeros(self, input, size):
        batch = input.shape[0] if self.batch_first else input.shape[1]
        layers = self.num_layers * (2 if self.bidirectional else 1)
        return zeros(layers, batch, size, dtype=input.dtype, device=input.device)

    def _run(self, input, hx, cx=None):
        """All layers and directions over a batched input: (output, h_n[, c_n])."""
        x = input.transpose(0, 1) if self.batch_first else input
        num_directions = 2 if self.bidirectional else 1
        hs, cs = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(num_directions):
                k = layer * num_directions + direction
                params = self.all_weights[k]
                out, h, c = self._layer(x, hx[k], None if cx is None else cx[k], params, direction)
                outs.append(out)
                hs.append(h)
                cs.append(c)
            x = outs[0] if num_directions == 1 else cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        if self.batch_first:
            if self.mode == "LSTM":
                x = x.transpose(0, 1)
            else:
                x = _dispatch(OPS["transpose_"], (x,), {"dim0": 0, "dim1": 1})
        return x, stack(hs, 0), (stack(cs, 0) if cx is not None else None)

    def _layer(self, x, h, c, params, reverse):
        """One direction of one layer over ``x`` of shape (T, B, in): (stacked outputs, h, c)."""
        w_ih, w_hh = params[0], params[1]
        b_ih, b_hh = (params[2], params[3]) if self.bias else (None, None)
        w_hr = params[-1] if self.proj_size > 0 else None
        ih = F.linear(x, w_ih, b_ih).unbind(0)
        steps = range(len(ih) - 1, -1, -1) if reverse else range(len(ih))
        outs = [None] * len(ih)
        for t in steps:
            if self.mode == "LSTM":
                h, c = _lstm_step(ih[t], h, c, w_hh, b_hh, w_hr)
            elif self.mode == "GRU":
                h = _gru_step(ih[t], h, w_hh, b_hh)
            else:
                h = _rnn_step(ih[t], h, w_hh, b_hh, self.mode == "RNN_RELU")
            outs[t] = h
        return stack(outs, 0), h, c

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)


class _SingleStateRNN(RNNBase):
    """``RNN`` and ``GRU``: one hidden state ``h``."""

    _name = "RNN"

    def forward(self, input: Tensor, hx: Tensor | None = None):
        input, is_batched = self._prepare(input, hx, self._name)
        if hx is not None:
            want = 3 if is_batched else 2
            if hx.dim() != want:
                kind = "batched 3-D" if is_batched else "unbatched 2-D"
                raise RuntimeError(
                    f"For {kind} input, hx should also be {want}-D but got {hx.dim()}-D tensor"
                )
            if not is_batched:
                hx = hx.unsqueeze(1)
        else:
            hx = self._zeros(input, self.hidden_size)
        self.check_forward_args(input, hx)
        output, h_n, _ = self._run(input, hx)
        if not is_batched:
            output, h_n = output.squeeze(0 if self.batch_first else 1), h_n.squeeze(1)
        return output, h_n


class RNN(_SingleStateRNN):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU).

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None)``;
    ``forward(input, hx=None)`` returns ``(output, h_n)``.

    Example:
        >>> import nbgrad as ng
        >>> rnn = ng.nn.RNN(3, 4, num_layers=2)
        >>> output, h_n = rnn(ng.randn(5, 2, 3))
        >>> tuple(output.shape), tuple(h_n.shape)
        ((5, 2, 4), (2, 2, 4))
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(mode, *args, **kwargs)


class GRU(_SingleStateRNN):
    """Gated recurrent unit: reset ``r``, update ``z`` and new ``n`` gates,
    ``h_t = (1 - z) * n + z * h_{t-1}``. Arguments as ``RNN`` without ``nonlinearity``.

    Example:
        >>> import nbgrad as ng
        >>> output, h_n = ng.nn.GRU(3, 4, batch_first=True)(ng.randn(2, 5, 3))
        >>> output.grad_fn.name()
        'TransposeBackward1'
    """

    _name = "GRU"

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory: input, forget, cell and output gates (in that order in the
    weights); ``proj_size > 0`` projects ``h`` with ``weight_hr_l{k}``.

    ``forward(input, hx=None)`` with ``hx = (h_0, c_0)`` returns ``(output, (h_n, c_n))``.

    Example:
        >>> import nbgrad as ng
        >>> output, (h_n, c_n) = ng.nn.LSTM(3, 4, proj_size=2)(ng.randn(5, 2, 3))
        >>> tuple(output.shape), tuple(h_n.shape), tuple(c_n.shape)
        ((5, 2, 2), (1, 2, 2), (1, 2, 4))
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes=None) -> tuple[int, int, int]:
        mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden, batch_sizes=None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(
            hidden[0],
            self.get_expected_hidden_size(input, batch_sizes),
            "Expected hidden[0] size {}, got {}",
        )
        self.check_hidden_size(
            hidden[1],
            self.get_expected_cell_size(input, batch_sizes),
            "Expected hidden[1] size {}, got {}",
        )

    def forward(self, input: Tensor, hx=None):
        input, is_batched = self._prepare(input, hx, "LSTM")
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            hx = (self._zeros(input, real_hidden), self._zeros(input, self.hidden_size))
        else:
            want = 3 if is_batched else 2
            if hx[0].dim() != want or hx[1].dim() != want:
                kind = "batched 3-D" if is_batched else "unbatched 2-D"
                raise RuntimeError(
                    f"For {kind} input, hx and cx should also be {want}-D but got "
                    f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors"
                )
            if not is_batched:
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx)
        output, h_n, c_n = self._run(input, hx[0], hx[1])
        if not is_batched:
            output = output.squeeze(0 if self.batch_first else 1)
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return output, (h_n, c_n)


# ---- cells --------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh`` of one step, drawn from
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **factory))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **factory))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **factory))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input, name):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        return input.dim() == 2

    def _hidden(self, input, hx, is_batched, what="RNNCell: Expected hidden"):
        if hx is None:
            return zeros(input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device)
        if hx.dim() not in (1, 2):
            raise ValueError(f"{what} to be 1D or 2D, got {hx.dim()}D instead")
        return hx if is_batched else hx.unsqueeze(0)


class RNNCell(RNNCellBase):
    """One Elman step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ReLU).

    Example:
        >>> import nbgrad as ng
        >>> ng.nn.RNNCell(3, 4)(ng.randn(2, 3)).grad_fn.name()
        'TanhBackward0'
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        is_batched = self._batched(input, "RNNCell")
        if not is_batched:
            input = input.unsqueeze(0)
        hx = self._hidden(input, hx, is_batched)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        ih = F.linear(input, self.weight_ih, self.bias_ih)
        ret = _rnn_step(ih, hx, self.weight_hh, self.bias_hh, self.nonlinearity == "relu")
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; ``forward(input, hx=None)`` with ``hx = (h, c)`` returns ``(h', c')``.

    Example:
        >>> import nbgrad as ng
        >>> h, c = ng.nn.LSTMCell(3, 4)(ng.randn(2, 3))
        >>> h.grad_fn.name(), c.grad_fn.name()
        ('MulBackward0', 'AddBackward0')
    """

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx=None):
        is_batched = self._batched(input, "LSTMCell")
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zero = self._hidden(input, None, is_batched)
            hx = (zero, zero)
        else:
            hx = tuple(
                self._hidden(input, v, is_batched, f"LSTMCell: Expected hx[{i}]")
                for i, v in enumerate(hx)
            )
        ih = F.linear(input, self.weight_ih, self.bias_ih)
        h, c = _lstm_step(ih, hx[0], hx[1], self.weight_hh, self.bias_hh)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step.

    Example:
        >>> import nbgrad as ng
        >>> ng.nn.GRUCell(3, 4)(ng.randn(3)).shape
        nbgrad.Size([4])
    """

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        is_batched = self._batched(input, "GRUCell")
        if not is_batched:
            input = input.unsqueeze(0)
        hx = self._hidden(input, hx, is_batched, "GRUCell: Expected hidden")
        ih = F.linear(input, self.weight_ih, self.bias_ih)
        ret = _gru_step(ih, hx, self.weight_hh, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)
