"""Mutation testing: does the test suite catch a wrong gradient?

A script, not a test module (pytest collects ``test_*.py`` only). Each mutant is a one-line
change to the core (the op table's formulas, the engine, the graph, custom Functions, grad
modes): a wrong sign, a kink on the wrong side, a hook that never runs, a gradient buffer
aliased. For each mutant the script copies the package and the tests into a temporary folder
(the checkout is never changed), applies the mutant there, and runs the tests that cover the
mutated file (``pytest -x``, with a timeout). A mutant is *killed* when those tests fail, and
*survives* when they pass.

    python tests/mutation.py                 # every mutant, 2 at a time
    python tests/mutation.py -k relu --jobs 1
    python tests/mutation.py --list

Run it from the repository root, with the Python that runs the tests. It exits with status 1
when a mutant survives. Before the mutants, the same tests run unmutated: they must pass.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

D = "nbgrad/derivatives/__init__.py"
DO = "nbgrad/derivatives/opinfo.py"
DP = "nbgrad/derivatives/pointwise.py"
DR = "nbgrad/derivatives/reductions.py"
DS = "nbgrad/derivatives/shape.py"
DN = "nbgrad/derivatives/nn.py"
DI = "nbgrad/derivatives/indexing.py"
DSC = "nbgrad/derivatives/scans.py"
DL = "nbgrad/derivatives/linalg.py"
DLO = "nbgrad/derivatives/losses.py"
DA = "nbgrad/derivatives/activation.py"
K = "nbgrad/kernels/pointwise.py"
TN = "nbgrad/_graph/table_node.py"
TD = "nbgrad/_tensor/dispatch.py"
TI = "nbgrad/_tensor/inplace.py"
TM = "nbgrad/_tensor/math_methods.py"
TS = "nbgrad/_tensor/shape_methods.py"
TV = "nbgrad/_tensor/inplace_variants.py"
T = "nbgrad/tensor.py"
FN = "nbgrad/_functions/out.py"
MF = "nbgrad/_tensor/memory_formats.py"
E = "nbgrad/autograd/engine.py"
GT = "nbgrad/autograd/graph_task.py"
IB = "nbgrad/autograd/input_buffer.py"
GN = "nbgrad/_graph/node.py"
GA = "nbgrad/_graph/accumulate_grad.py"
GS = "nbgrad/_graph/saved_tensor.py"
GH = "nbgrad/_graph/hooks.py"
F = "nbgrad/autograd/function.py"
M = "nbgrad/_graph/grad_state.py"
B = "nbgrad/backend.py"

# the tests that cover each mutated file (kept small: every mutant runs them)
AUTOGRAD_TESTS = ["tests/autograd", "tests/test_tensor.py"]
# (the op table's mutants leave the forward kernels and the device routing alone)
DERIVATIVE_TESTS = [
    "tests/test_derivatives.py",
    "-k",
    "not device_matches_cpu and not generated_apply",
]
# the engine's order is also checked hook by hook on random graphs against torch
ENGINE_TESTS = AUTOGRAD_TESTS + ["tests/test_random_graphs.py::test_random_programs_hook_order"]
TESTS = {
    **dict.fromkeys((D, DO, DP, DR, DS, DN, DSC, DL, DLO, DA, TM), DERIVATIVE_TESTS),
    K: DERIVATIVE_TESTS + ["tests/test_tensor.py::test_small_whole_powers_are_torchs_bit_for_bit"],
    # (formulas run on arrays: NOTE [Backward on arrays], checked in float32 and mixed dtypes)
    TN: [
        "tests/autograd/test_backward_arrays.py",
        "tests/autograd/test_carried_arrays.py",
        *DERIVATIVE_TESTS,
    ],
    **dict.fromkeys((TD, TI), AUTOGRAD_TESTS),
    TS: ["tests/test_tensor.py", "tests/test_inplace_view_ops.py"],
    DI: ["tests/test_index_reduce_and_sampling.py", *DERIVATIVE_TESTS],
    TV: ["tests/test_tensor_inplace_variants.py"],
    T: AUTOGRAD_TESTS,
    FN: ["tests/autograd/test_inference_tensors.py"],
    MF: ["tests/test_tensor.py"],
    E: ENGINE_TESTS,
    GT: ENGINE_TESTS,
    # (the recorder reads a gradient again only when its version changed)
    IB: ENGINE_TESTS
    + [
        "tests/notebook/test_recorder.py::test_a_fan_in_buffer_shows_the_sum_of_what_reached_it_so_far"
    ],
    **dict.fromkeys((GN, GA, GS, GH), AUTOGRAD_TESTS),
    B: AUTOGRAD_TESTS,
    F: AUTOGRAD_TESTS,
    M: AUTOGRAD_TESTS,
}
TIMEOUT = 300  # seconds per mutant; a mutant that hangs the tests counts as killed


@dataclass(frozen=True)
class Mutant:
    file: str
    original: str  # an exact fragment of one line of ``file``
    replacement: str
    description: str
    nth: int = 0  # which occurrence, when the fragment is not unique (0: it must be unique)

    @property
    def name(self):
        return f"{os.path.basename(self.file)}: {self.description}"


def m(file, original, replacement, description, nth=0):
    return Mutant(file, original, replacement, description, nth)


# fmt: off
MUTANTS = [
    # ---- the op table: formulas --------------------------------------------------------------
    m(DP, "grad if alpha == 1 else grad * alpha)", "grad if alpha == 1 else grad)", "add: alpha ignored in other's gradient"),
    m(DP, "other=lambda grad, alpha: -grad if alpha == 1", "other=lambda grad, alpha: grad if alpha == 1", "sub: other's gradient not negated"),
    m(DP, "self=lambda grad, alpha: -grad if alpha == 1 else grad * -alpha)", "self=lambda grad, alpha: -grad if alpha == 1 else grad * alpha)", "rsub: alpha's sign"),
    m(DP, "self=lambda grad, other: grad * other,", "self=lambda grad, other: grad,", "mul: self's gradient ignores other"),
    m(DP, "self=lambda grad, other: grad / other,", "self=lambda grad, other: grad * other,", "div: self's gradient multiplies"),
    m(DP, "-grad * ((self / other) / other)", "-grad * (self / other)", "div: other's gradient, one power of other"),
    m(DP, "-grad * _floor_quotient(self, other)", "grad * _floor_quotient(self, other)", "remainder: other's gradient sign"),
    m(DP, "0.0, result * self.log())", "0.0, result * self.log() * 2)", "pow_tensor: exponent's gradient doubled"),
    m(DP, "return grad * result * math.log(base)", "return grad * result", "rpow: log(base) factor dropped"),
    m(DP, "_C.where(self == other, grad / 2, grad).masked_fill(self < other, 0),", "_C.where(self == other, grad, grad).masked_fill(self < other, 0),", "maximum: a tie gives self the whole gradient"),
    m(DP, "masked_fill(self > other, 0))", "masked_fill(self >= other, 0))", "maximum: a tie gives other nothing"),
    m(DP, "masked_fill(self > other, 0),", "masked_fill(self >= other, 0),", "minimum: a tie gives self nothing"),
    m(DP, "other=lambda grad, condition: _C.where(condition, 0.0, grad))", "other=lambda grad, condition: _C.where(condition, grad, 0.0))", "where: other gets the condition's side"),
    m(DP, "self=lambda grad, mask: grad.masked_fill(mask, 0))", "self=lambda grad, mask: grad)", "masked_fill: filled places pass the gradient"),
    m(DP, "self=lambda grad, self: grad * self.sign())", "self=lambda grad, self: _C.where(self >= 0, grad, -grad))", "abs: gradient at 0 is +grad (kink)"),
    m(DP, "_sign(xp, self), self=lambda grad: _C.zeros_like(grad))", "_sign(xp, self), self=lambda grad: grad)", "sign: gradient passes through"),
    m(DP, "xp.exp(self), on_arrays=True, ufunc=np.exp, promote=\"float\", self=lambda grad, result: grad * result)", "xp.exp(self), on_arrays=True, ufunc=np.exp, promote=\"float\", self=lambda grad, result: grad)", "exp: result factor dropped"),
    m(DP, "self=lambda grad, self: grad / self)", "self=lambda grad, self: grad * self)", "log: multiplies instead of divides"),
    m(DP, "grad / (self + 1)", "grad / self", "log1p: 1 + x dropped"),
    m(DP, "grad / (2 * result)", "grad / result", "sqrt: factor 2 dropped"),
    m(DP, "-0.5 * grad * result ** 3", "-0.5 * grad * result ** 2", "rsqrt: wrong power"),
    m(DP, "-grad * (result * result)", "grad * (result * result)", "reciprocal: sign"),
    m(DP, "grad * (result + 1)", "grad * result", "expm1: + 1 dropped"),
    m(DP, "grad / (self * math.log(2))", "grad / self", "log2: log(2) dropped"),
    m(DP, "grad * (1 + result * result)", "grad * (1 - result * result)", "tan: 1 - tan^2"),
    m(DP, "grad * (1 - self * self).rsqrt())", "grad * (1 - self * self).sqrt())", "asin: sqrt instead of rsqrt", nth=1),
    m(DP, "grad / (1 + self * self)", "grad / (1 - self * self)", "atan: wrong sign in the denominator"),
    m(DP, "grad * self.cosh())", "grad * self.sinh())", "sinh: sinh instead of cosh"),
    m(DP, "grad * -sin(self))", "grad * sin(self))", "cos: sign"),
    m(DP, "self - xp.trunc(self), on_arrays=True, promote=\"float\", self=lambda grad: grad)", "self - xp.trunc(self), on_arrays=True, promote=\"float\", self=lambda grad: -grad)", "frac: sign"),
    m(DA, "xp.where(self <= threshold, 0, grad_output)", "xp.where(self < threshold, 0, grad_output)", "relu: gradient 1 at 0 (kink)"),
    m(DP, "grad * (-2 * output * grad_output))", "grad * (2 * output * grad_output))", "tanh double backward: sign"),
    m(DP, "grad * grad_output * (1 - 2 * output))", "grad * grad_output * (1 - output))", "sigmoid double backward: factor 2"),
    m(DA, "xp.where(self > 0, grad_output, grad_output * negative_slope)", "xp.where(self >= 0, grad_output, grad_output * negative_slope)", "leaky_relu: slope 1 at 0 (kink)"),
    m(DA, "self=lambda grad, result, negative_slope: leaky_relu_backward(grad, result,", "self=lambda grad, result, negative_slope: leaky_relu_backward(grad, result * 0 + 1,", "leaky_relu_: slope of the positive side everywhere"),
    m(DA, "grad * s * (1 + self * (1 - s))", "grad * s * (1 + self * s)", "silu: 1 - s"),
    m(DA, "_C.where(self > 0, grad, grad * alpha * _below(self, 0.0).exp()))", "_C.where(self >= 0, grad, grad * alpha * _below(self, 0.0).exp()))", "elu: gradient 1 at 0 (kink)"),
    m(DA, "_C.where(result > 0, grad, grad * (_below(result, 0.0) + alpha)))", "_C.where(result >= 0, grad, grad * (_below(result, 0.0) + alpha)))", "elu_: gradient 1 at 0 (kink)"),
    m(DA, "_C.where(self * beta > threshold, grad,", "_C.where(self * beta >= threshold, grad,", "softplus: linear side at the threshold (kink)"),
    m(DA, "xp.where((self <= min_val) | (self >= max_val), 0, grad_output)", "xp.where((self < min_val) | (self > max_val), 0, grad_output)", "hardtanh: gradient 1 on the bounds (kink)"),
    m(DP, "grad * (2 / math.sqrt(math.pi))", "grad * (1 / math.sqrt(math.pi))", "erf: factor 2"),
    m(DP, "return (x >= lo).logical_and(x <= hi)", "return (x > lo).logical_and(x <= hi)", "clamp: gradient 0 on the lower bound (kink)"),
    m(DP, "return (x >= lo).logical_and(x <= hi)", "return (x >= lo).logical_and(x < hi)", "clamp: gradient 0 on the upper bound (kink)"),
    m(DP, "        return x >= lo\n", "        return x > lo\n", "clamp(min=): gradient 0 on the bound (kink)"),
    m(DP, "        return x <= hi\n", "        return x < hi\n", "clamp(max=): gradient 0 on the bound (kink)"),
    m(DP, "_C.where(self >= min, grad, 0.0))", "_C.where(self > min, grad, 0.0))", "clamp_min: gradient 0 on the bound (kink)"),
    m(DP, "_C.where(self <= max, grad, 0.0))", "_C.where(self < max, grad, 0.0))", "clamp_max: gradient 0 on the bound (kink)"),
    m(DR, "for d in sorted(dim):", "for d in sorted(dim, reverse=True):", "reductions: reduced dims restored in the wrong order"),
    m(DR, "grad.expand(self_shape) / max(math.prod(self_shape), 1))", "grad.expand(self_shape))", "mean: not divided by the count"),
    m(DR, "_expand_reduced(grad, self_shape, dim, keepdim) / _count(self_shape, dim))", "_expand_reduced(grad, self_shape, dim, keepdim) / _count(self_shape, None))", "mean_dim: divided by the total count"),
    m(DR, "return _C.where(mask, grad / mask.sum(), 0.0)", "return _C.where(mask, grad, 0.0)", "max/min: ties each get the whole gradient"),
    m(DR, "_expand_reduced(grad, self.shape, dim, keepdim) / count, 0.0)", "_expand_reduced(grad, self.shape, dim, keepdim), 0.0)", "amax/amin: ties each get the whole gradient"),
    m(DR, "_value_selecting_backward(grad, dim, result1, self_shape, keepdim))", "_value_selecting_backward(grad, dim, result1 * 0, self_shape, keepdim))", "max(dim): gradient to index 0", nth=1),
    m(DR, "_value_selecting_backward(grad, dim, result1, self_shape, True))", "_value_selecting_backward(grad.flip((dim,)), dim, result1, self_shape, True))", "sort: gradients reversed", nth=1),
    m(DR, "_value_selecting_backward(grad, dim, result1, self_shape, True))", "_value_selecting_backward(grad * 2, dim, result1, self_shape, True))", "topk: gradient doubled", nth=2),
    m(DR, "return g * _expand_reduced(result, self.shape, dim, keepdim) / self", "return g * _expand_reduced(result, self.shape, dim, keepdim)", "prod: not divided by self"),
    m(DR, "if not bool((self == 0).any()):", "if True:", "prod: zeros take the dividing path"),
    m(DR, "(2.0 / max(n - correction, 0))", "(2.0 / max(n, 1))", "var: correction ignored"),
    m(DR, "g = (grad / (result * 2)).masked_fill(result == 0, 0)", "g = grad / (result * 2)", "std: nan at std 0 (kink)"),
    m(DR, "g = (grad / (result * 2)).masked_fill(result == 0, 0)", "g = (grad / result).masked_fill(result == 0, 0)", "std: factor 2 dropped"),
    m(DR, "return g * (self / r).masked_fill(r == 0, 0)", "return g * (self / r)", "norm: nan at 0 (kink)"),
    m(DR, "return self.sign() * g", "return g", "norm(1): sign dropped"),
    m(DR, "return _C.where(mask, self.sign() * g / count, 0.0)", "return _C.where(mask, self.sign() * g, 0.0)", "norm(inf): ties each get the whole gradient"),
    m(DR, "scale = (g / r ** (ord - 1)).masked_fill(r == 0, 0)", "scale = (g / r ** ord).masked_fill(r == 0, 0)", "norm(p): wrong power of the norm"),
    m(DR, "return self * self.abs() ** (ord - 2) * scale", "return self * self.abs() ** (ord - 1) * scale", "norm(p > 2): wrong power of |x|"),
    m(DA, "_below(self, 0.0).exp()", "self.exp()", "elu: second derivative at 0 (kink)", nth=2),
    m(DA, "_below(self * beta, threshold).sigmoid()", "(self * beta).sigmoid()", "softplus: second derivative at the threshold (kink)"),
    m(DA, "_below(result, 0.0) + alpha", "result + alpha", "elu_: second derivative at 0 (kink)"),
    m(DR, "* (self - _expand_reduced(result, self.shape, dim, keepdim)).exp())", "* self.exp())", "logsumexp: not normalised"),
    m(DR, "(grad - (grad * result).sum(dim, keepdim=True)) * result)", "(grad - grad.sum(dim, keepdim=True)) * result)", "softmax: inner product dropped"),
    m(DR, "grad - result.exp() * grad.sum(dim, keepdim=True))", "grad - result * grad.sum(dim, keepdim=True))", "log_softmax: exp dropped"),
    m(DL, "self=lambda grad, mat2: grad.mm(mat2.t()),", "self=lambda grad, mat2: grad.mm(mat2.t()) * 2,", "mm: self's gradient doubled"),
    m(DL, "vec=lambda grad, self: self.t().mv(grad))", "vec=lambda grad, self: self.t().mv(grad) * 0)", "mv: vec's gradient zero"),
    m(DL, "self=lambda grad, mat2: grad.bmm(mat2.transpose(1, 2)),", "self=lambda grad, mat2: grad.bmm(mat2.transpose(1, 2)) * 2,", "bmm: self's gradient doubled"),
    m(DS, "grad.permute(tuple(np.argsort(dims))))", "grad.permute(tuple(dims)))", "permute: not inverted"),
    m(DS, "grad.roll(-shifts if dims is None else tuple(-k for k in shifts), dims))", "grad.roll(shifts, dims))", "roll: rolled forward"),
    m(DSC, "grad.flip((dim,)).cumsum(dim).flip((dim,)))", "grad.cumsum(dim))", "cumsum: forward cumsum"),
    m(DS, "self=lambda grad, diagonal: grad.tril(diagonal))", "self=lambda grad, diagonal: grad.tril(diagonal + 1))", "tril: off by one diagonal"),
    m(DI, "src=lambda grad, dim, index: grad.gather(dim, index))", "src=lambda grad, dim, index: grad.gather(dim, index) * 2)", "scatter_add: src's gradient doubled"),
    m(DI, "self=lambda grad, indices: grad._index_put(indices, 0.0),", "self=lambda grad, indices: grad,", "index_put: overwritten places pass the gradient"),
    m(DI, "self=lambda grad, self_shape, indices: grad._index_backward(self_shape, indices, True))", "self=lambda grad, self_shape, indices: grad._index_backward(self_shape, indices, False))", "index: repeated indices do not accumulate"),
    m(DS, "self=lambda grad: _C.zeros_like(grad), src=lambda grad: grad)", "self=lambda grad: grad, src=lambda grad: grad)", "copy_: the overwritten tensor gets the gradient"),
    m(DS, "[grad.select(dim, i) for i in range(len(tensors_shape))]", "[grad.select(dim, 0) for i in range(len(tensors_shape))]", "stack: every input gets the first slice"),
    m(DS, "self=lambda grad, dims: grad.flip(dims))", "self=lambda grad, dims: grad)", "flip: not flipped back"),
    m(DL, "grad.mm(mat2.t()) if alpha == 1 else grad.mm(mat2.t()) * alpha,", "grad.mm(mat2.t()) if alpha == 1 else grad.mm(mat2.t()),", "addmm: alpha ignored"),
    m(DL, "self=lambda grad, beta: grad if beta == 1 else grad * beta,", "self=lambda grad, beta: grad,", "addmm: beta ignored", nth=5),
    m(DLO, "target=lambda grad, self, target, reduction: -_mse_loss_backward(", "target=lambda grad, self, target, reduction: _mse_loss_backward(", "mse_loss: target's gradient sign"),
    m(DP, "grad * exponent * power(self, exponent=exponent - 1))", "grad * exponent * power(self, exponent=exponent))", "pow: wrong power"),
    m(DP, "zeros_like(grad) if exponent == 0 else", "zeros_like(grad) if exponent == 12345 else", "pow: x ** 0 at x = 0 gives nan (kink)"),
    m(DP, "return np.zeros_like(a) if isinstance(a, _ON_ARRAYS) else _C.zeros_like(a)", "return np.ones_like(a) if isinstance(a, _ON_ARRAYS) else _C.zeros_like(a)", "backward on arrays: zeros_like on arrays gives ones"),
    m(K, "            return a.copy()\n", "            return a\n", "pow: x ** 1 shares x's memory"),
    m(K, "            return a * a * a\n", "            return xp.power(a, 3)\n", "pow: x ** 3 by NumPy's pow, not as PyTorch's x * x * x"),
    m(TD, "    mark_view(result, args[0], (op.name, attrs))\n", "    mark_view(result, args[0], None)\n", "a generated view keeps no chain of view ops (an in-place op on it is not replayed)"),
    m(TD, "        result._requires_grad = not grad_state.enabled and requires_grad\n", "        result._requires_grad = False\n", "a generated view made in no-grad mode never requires grad"),
    m(TS, "    if not -size <= k < size:", "    if not -size <= k <= size:", "x[i]: an index one past the end reaches NumPy"),
    m(TS, "                return t if t is not self else _unary(OPS[\"alias\"], t)\n", "                return t\n", "m[:, :] of ints and slices gives the tensor itself, not an alias"),
    m(TS, "        lone_slice = isinstance(key, slice)\n", "        lone_slice = False\n", "x[:] is an alias, not a slice"),
    m(TS, "is out of bounds for dimension {position} with size", "is out of bounds for dimension {dim} with size", "an index out of bounds names the dimension left after the selects"),
    m(TS, "        if key == 0:\n", "        if key == 1:\n", "0-d: the message for index 0 goes to index 1"),
    m(TS, "    if type(k) is bool:\n        return 0\n", "    if type(k) is bool:\n        return 1\n", "a Python bool in a key counts as a dimension"),
    m(DP, 'power = row_function("pow")', 'power = row_function("sqrt")', "pow: the formula's power is another row"),
    m(DP, "return _C.where(exponent == 0, 0.0, grad * exponent * self ** (exponent - 1))", "return grad * exponent * self ** (exponent - 1)", "pow_tensor: base 0, exponent 0 gives nan (kink)"),
    m(DA, "return grad * (cdf + x * pdf)", "return grad * cdf", "gelu: pdf term dropped"),
    m(DA, "d_inner = k * (1 + 3 * 0.044715 * x * x)", "d_inner = k * (1 + 0.044715 * x * x)", "gelu(tanh): factor 3 dropped"),
    m(DA, "self=lambda grad, self: grad * (-self).sigmoid())", "self=lambda grad, self: grad * self.sigmoid())", "log_sigmoid: sign inside sigmoid"),
    m(DLO, "_C.where(d.abs() < beta, d / beta, d.sign())", "_C.where(d.abs() <= beta, d / beta, d.sign())", "smooth_l1: quadratic side at the threshold (kink)"),
    m(DLO, "_C.where(d.abs() < beta, d / beta, d.sign())", "_C.where(d.abs() < beta, d, d.sign())", "smooth_l1: beta dropped"),
    m(TM, "r = t.sum(kept, keepdim=True) if kept else t", "r = t.mean(kept, keepdim=True) if kept else t", "sum_to: means broadcast dims"),
    m(DLO, "_smooth_l1_backward(grad, self - target, reduction, delta) * delta,", "_smooth_l1_backward(grad, self - target, reduction, delta),", "huber_loss: delta dropped"),
    m(DN, "    return grad.sum((0,) + tuple(range(2, grad.dim())))", "    return grad.mean((0,) + tuple(range(2, grad.dim())))", "conv2d: bias gradient averaged"),
    m(DN, "bias=lambda grad, normalized_shape: _sum_leading(grad, len(normalized_shape)))", "bias=lambda grad, normalized_shape: _sum_leading(grad, len(normalized_shape)) * 2)", "layer_norm: bias gradient doubled"),
    m(DN, "bias=lambda grad, input: grad.sum((0,) + tuple(range(2, input.dim()))))", "bias=lambda grad, input: grad.mean((0,) + tuple(range(2, input.dim()))))", "batch_norm: bias gradient averaged"),
    # ---- the engine --------------------------------------------------------------------------
    m(GT, "entry = (-task.reentrant_depth, -task.node._sequence_nr_, next(_tiebreak), task)", "entry = (-task.reentrant_depth, task.node._sequence_nr_, next(_tiebreak), task)", "device queue: lowest sequence_nr first"),
    m(E, "as_tensors(inputs)  # (what hooks see, and what ``grad()`` gives back)", "pass", "carried arrays: grad() gives back a captured gradient as an array"),
    m(E, "and (info := exec_info.get(node)) is not _NEEDED  # or", "and (info := exec_info.get(node)) is None  # or", "plain pass: a node grad() captures at runs without capturing"),
    m(E, "and (info := exec_info.get(node)) is not _NEEDED  # run", "and (info := exec_info.get(node)) is None  # run", "grad(inputs=): a node that captures runs without capturing, in any pass"),
    m(E, "_NEEDED.needed = True", "_NEEDED.needed = False", "grad(inputs=): the nodes on a path to an input do not run"),
    m(B, 'return np.errstate(all="ignore")', 'return np.errstate(all="warn")', "quiet float errors: NumPy warns on IEEE special values"),
    m(E, "(-node._sequence_nr_, next(_tiebreak), node, buffer),", "(node._sequence_nr_, next(_tiebreak), node, buffer),", "CPU queue (_push_ready): lowest sequence_nr first"),
    m(E, "heappush(heap, (-seq, next(_tiebreak), fn, buf))", "heappush(heap, (seq, next(_tiebreak), fn, buf))", "routing: lowest sequence_nr first", nth=2),
    m(E, "heappush(heap, (-seq, next(_tiebreak), fn, buf))", "heappush(heap, (seq, next(_tiebreak), fn, buf))", "plain pass, routing: lowest sequence_nr first", nth=1),
    m(IB, "        return old + new\n", "        return new\n", "input buffer (create_graph): keeps only the last gradient", nth=1),
    m(IB, "            return old + new\n", "            return new\n", "input buffer, carried arrays: keeps only the last gradient"),
    m(IB, "return _np_add(old, new, out=old)", "return new", "input buffer, carried arrays in place: keeps only the last gradient"),
    m(IB, "and _getrefcount(old) == _SOLE_LOCAL", "and _getrefcount(old) >= _SOLE_LOCAL", "input buffer: sums in place into a carried array held elsewhere", nth=1),
    m(IB, "and _getrefcount(old) == _SOLE_LOCAL", "and _getrefcount(old) <= _SOLE_LOCAL + 1", "input buffer: sums in place into a carried array a second buffer holds", nth=1),
    m(IB, "return _wrap(a + b, old._device)", "return _wrap(b, old._device)", "input buffer: keeps only the last gradient"),
    m(IB, "                _np_add(a, b, out=a)\n", "                a[...] = b\n", "input buffer, in place: keeps only the last gradient"),
    m(IB, "a[()] = a.item() + b.item()", "a[()] = b.item()", "input buffer, 0-d float64 in place: keeps only the last gradient"),
    m(IB, "and _getrefcount(old) == _SOLE_LOCAL", "and _getrefcount(old) >= _SOLE_LOCAL", "input buffer: sums in place into a gradient held elsewhere", nth=2),
    m(IB, "and _getrefcount(old) == _SOLE_LOCAL", "and _getrefcount(old) <= _SOLE_LOCAL + 1", "input buffer: sums in place into a gradient a hook kept", nth=2),
    m(IB, "and _getrefcount(a) == _SOLE_LOCAL + 1", "and _getrefcount(a) <= _SOLE_LOCAL + 2", "input buffer: sums in place into memory another tensor shares"),
    m(IB, "    buffer[pos] = None  #", "    pass  #", "input buffer: the old gradient stays in its slot while summed (never in place)"),
    m(IB, "                    old._version_counter = [1]\n", "                    pass\n", "input buffer: a sum in place keeps the version"),
    m(E, "deps[nxt] = count + 1", "deps[nxt] = count", "dependencies: a second edge not counted"),
    m(E, "        exec_info.setdefault(root, _ExecInfo())\n", "        exec_info.setdefault(root, _ExecInfo()).needed = True\n", "grad(inputs=): the root runs though it reaches no input"),
    m(E, "if info is not None and (info.needed or info.captures is not None):", "if info is not None and info.needed:", "grad(inputs=): a captured child does not mark its parent"),
    m(E, "        for fn in reversed(order):\n", "        for fn in order:\n", "grad(inputs=): a node is decided before its next nodes"),
    m(E, "                    if not count:\n                        push(child)", "                    if count == 1:\n                        push(child)", "grad(inputs=): a node is ordered before the last edge into it"),
    m(E, "            if not info.needed:\n                inputs = self.call_tensor_pre_hooks(graph_task, node, inputs)", "            if False:\n                inputs = self.call_tensor_pre_hooks(graph_task, node, inputs)", "grad(inputs=): tensor hooks skipped on captured tensors"),
    m(E, "graph_task.captured_vars[output_idx] = inputs[input_idx]", "graph_task.captured_vars[output_idx] = inputs[0]", "grad(inputs=): captures the first input of the node"),
    m(E, "if node._tensor_pre_hooks or node._retains_grad_hooks:", "if node._tensor_pre_hooks:", "retain_grad alone never runs"),
    m(E, "        if node._pre_hooks:\n", "        if False:\n", "node prehooks never run"),
    m(E, "        if node._post_hooks:\n", "        if False:\n", "node post hooks never run"),
    m(E, "if heap and heap[0][0] <= -following._sequence_nr_:", "if False:", "routing: a ready node runs before higher-priority queued nodes", nth=2),
    m(E, "if heap and heap[0][0] <= -following._sequence_nr_:", "if False:", "plain pass, routing: a ready node runs before higher-priority queued nodes", nth=1),
    m(E, "if not count and n_inputs <= 1:", "if n_inputs <= 1:", "a node runs before all its gradients arrived", nth=2),
    m(E, "if not count and n_inputs <= 1:", "if n_inputs <= 1:", "plain pass: a node runs before all its gradients arrived", nth=1),
    m(E, "                        buf[input_nr] = (\n                            grad if", "                        buf[0] = (\n                            grad if", "routing: gradient into the wrong input slot"),
    m(E, "                            buf[input_nr] = (\n                                grad if", "                            buf[0] = (\n                                grad if", "plain pass, routing: gradient into the wrong input slot"),
    m(E, "                grads[i] = grad\n", "                pass\n", "validate_outputs: broadcast gradient not summed"),
    m(E, "grads[i] = grad = grad.to(meta.dtype)", "grads[i] = grad", "validate_outputs: dtype not cast"),
    m(E, "or data.dtype is not meta.dtype.np", "or False", "validation: dtype not validated", nth=2),
    m(E, "or data.dtype is not meta.dtype.np", "or False", "plain pass, validation: dtype not validated", nth=1),
    m(E, "and grad.dtype is meta.dtype.np", "and True", "plain pass, single-edge fast path: dtype not validated"),
    m(E, "            and deps[fn] == 1\n            and (grad := outputs[0])", "            and (grad := outputs[0])", "single-edge fast path: a node runs before its other gradients arrive"),
    m(E, "            and (not (not_ready := graph_task.not_ready) or fn not in not_ready)\n", "            and ((not_ready := graph_task.not_ready) or True)\n", "single-edge fast path: a gradient already waiting is dropped"),
    m(E, "                    inputs[k] = new\n", "                    inputs[k] = grad\n", "tensor hook's result ignored"),
    m(E, "                k = h.output_nr\n", "                k = 0\n", "tensor hook on the wrong output"),
    m(E, "t._grad = grad._detached_copy() if not graph_task.create_graph else grad.clone()", "t._grad = grad._detached_copy()", "retain_grad: no graph under create_graph"),
    m(E, "t._grad = grad._detached_copy() if not graph_task.create_graph else grad.clone()", "t._grad = grad if not graph_task.create_graph else grad.clone()", "retain_grad: aliases the flowing gradient"),
    m(E, "t._grad = t._grad + grad", "t._grad = grad", "retain_grad: overwrites instead of accumulating"),
    m(E, "                inputs = _check_hook_values(h.fn, before, new, node)\n", "                _check_hook_values(h.fn, before, new, node)\n", "prehook's result ignored"),
    m(E, "                outputs = _check_hook_values(h.fn, before, new, node)\n", "                _check_hook_values(h.fn, before, new, node)\n", "post hook's result ignored"),
    m(E, "new = h.fn(before, tuple(inputs))", "new = h.fn(tuple(inputs), before)", "post hook's arguments swapped"),
    m(E, "            cb()\n", "            pass\n", "queue_callback's callbacks never run"),
    m(E, "if len(outputs) != n_edges:", "if len(outputs) < n_edges:", "too many gradients from a node accepted"),
    m(E, "info.captures.append((edge.input_nr, idx))", "info.captures.append((0, idx))", "grad(inputs=): capture slot ignores output_nr"),
    m(E, "        if not graph_task.keep_graph:\n", "        if False:\n", "retain_graph=False keeps the graph"),
    m(E, "release = not graph_task.keep_graph", "release = False", "plain pass: retain_graph=False keeps the graph"),
    m(E, "                outputs = grad = data = following = following_buf = buf = None\n", "", "plain pass: a chain's stale names keep its gradients from being stolen"),
    m(TN, '        lines.append(f"{indent}if release:")', '        lines.append(f"{indent}if False:")', "carried arrays: a plain pass keeps the saved values of a row node"),
    m(E, "if new.shape != old.shape:", "if False:", "a hook may change the gradient's shape"),
    m(E, "if grad._device is not meta.device and grad._device != meta.device:", "if False:", "validate_outputs: device not moved"),
    # ---- the graph: nodes, AccumulateGrad, saved tensors --------------------------------------
    m(GN, "self._sequence_nr_ = next_sequence_nr() if sequence_nr is None else sequence_nr", "self._sequence_nr_ = 0 if sequence_nr is None else sequence_nr", "every node has sequence_nr 0"),
    m(GA, "super().__init__((), sequence_nr=UINT64_MAX)", "super().__init__(())", "AccumulateGrad gets an ordinary sequence_nr"),
    m(GA, "                if not h.enabled:\n", "                if False:\n", "disabled post-accumulate-grad hooks run"),
    m(GA, "            for h in tuple(hooks):\n", "            for h in tuple(hooks)[::-1]:\n", "post-accumulate-grad hooks in reverse order"),
    m(GA, "            var._grad = old + grad\n", "            var._grad = grad\n", "create_graph: .grad overwritten, not accumulated"),
    m(GA, "            var._grad = grad.new_empty(grad.shape).copy_(grad)\n", "            var._grad = grad.detach()\n", "create_graph: first .grad has no graph"),
    m(GA, "            var._grad = old + grad\n", "            var._grad = old.detach() + grad\n", "create_graph: accumulated .grad loses the old graph"),
    m(GA, "grad._detached_alias() if sole and _can_steal(grad) else grad._detached_copy()", "grad._detached_alias()", "AccumulateGrad always steals the gradient"),
    m(GA, "        old._add_inplace_data(grad)\n", "        var._grad = old + grad\n", "accumulation makes a new .grad tensor"),
    m(GA, "sole = _STEAL and _getrefcount(grad) == _SOLE_LOCAL", "sole = _STEAL and _getrefcount(grad) <= 100", "steals a gradient tensor others hold"),
    m(GA, "and _getrefcount(data) == _SOLE_LOCAL + 1", "and _getrefcount(data) <= 100", "steals a gradient array others hold"),
    # (issue 40: each count one too high, which the suite once let pass)
    m(GA, "sole = _STEAL and _getrefcount(grad) == _SOLE_LOCAL", "sole = _STEAL and _getrefcount(grad) <= _SOLE_LOCAL + 1", "steals a gradient tensor a hook kept"),
    m(GA, "and _getrefcount(data) == _SOLE_LOCAL + 1", "and _getrefcount(data) <= _SOLE_LOCAL + 2", "steals a gradient array a second leaf is fed"),
    m(GA, "sole = _STEAL and _getrefcount(grad) == _SOLE_LOCAL", "sole = False", "never steals a gradient"),
    m(GA, "        grads[0] = None\n", "        pass\n", "the input buffer's reference counts as a holder (never steals)"),
    m(GA, "and data.base is None", "and True", "steals a view's memory"),
    m(GA, "and not grad._requires_grad", "and True", "steals a gradient that requires grad"),
    m(GA, "if not var._data.flags.c_contiguous and _dense(var._data):", "if False:", ".grad of a transposed leaf in C order"),
    m(GS, "if self._counter[0] != self._version:\n            self._raise_version_error()", "if False:\n            self._raise_version_error()", "in-place changes to saved tensors not detected"),
    m(GS, "if self._counter[0] != self._version:\n            raise RuntimeError(ERR_PACK_INPLACE)", "if False:\n            raise RuntimeError(ERR_PACK_INPLACE)", "a pack hook may change its input in place"),
    m(GH, "            hooks.remove(self)\n", "            pass\n", "handle.remove() keeps the hook"),
    m(GH, "_saved_hooks.stack = _saved_hooks.stack[:-1]", "pass", "saved_tensors_hooks stay after the block"),
    m(GA, "                if observer is None:\n                    out = h.fn(var)\n", "                if observer is None:\n                    out = None\n", "post-accumulate-grad hooks never called"),
    m(GN, "self._retains_grad_hooks[output_nr] = weakref.ref(tensor)", "self._retains_grad_hooks[0] = weakref.ref(tensor)", "retain_grad on the wrong output"),
    m(GN, "return RemovableHandle(self._pre_hooks, fn, \"node_prehook\", owner=self)", "return RemovableHandle(self._pre_hooks, fn, \"node_prehook\", owner=self) if False else None", "register_prehook does not register"),
    # ---- custom Functions ----------------------------------------------------------------------
    m(F, "ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)", "ctx.needs_input_grad = tuple(isinstance(a, Tensor) for a in args)", "needs_input_grad: True for every tensor"),
    m(F, "is_executable = _grad_state.enabled and any(", "is_executable = any(", "Function records a graph under no_grad"),
    m(F, "        _grad_state.enabled = False\n        _fw.enabled = tangents", "        _grad_state.enabled = prev\n        _fw.enabled = tangents", "forward runs with grad enabled"),
    m(F, "        if self.materialize_grads:\n", "        if True:\n", "set_materialize_grads(False) ignored"),
    m(F, "        if self.materialize_grads:\n", "        if False:\n", "undefined gradients never materialised"),
    m(F, "            o._requires_grad = False\n", "            pass\n", "mark_non_differentiable: output still requires grad"),
    m(F, "o = o.view_as(o) if o._requires_grad else o.detach()", "o = o", "an input returned as output is not a new tensor"),
    m(F, "                _set_output(v, err, k)\n", "                pass\n", "once_differentiable: double backward not refused"),
    m(F, "        for pos in self._input_positions:\n", "        for pos in range(len(self._input_positions)):\n", "gradients misrouted with non-tensor inputs"),
    m(F, "        k = len(new_outs)\n        positions.append(k)\n", "        k = len(positions)\n        positions.append(len(new_outs))\n", "outputs numbered among the tensor ones only"),
    m(TI, "        grad_slice.copy_(region)\n", "        pass\n", "CopySlices: the view's region not updated"),
    m(TD, '("(fn0, fn1)", "(0, 0)")', '("(fn1, fn0)", "(0, 0)")', "generated forward result: the node's two edges swapped"),
    m(TD, "        if meta is None or numbered:\n", "        if meta is None:\n", "generated forward result: an input that is another output than its node's first gets edge number 0", nth=2),
    m(TD, "return [None if g is None else g.to(self.src_device)]", "return [g]", "ToCopyBackward0: gradient not moved back"),
    # ---- grad modes ------------------------------------------------------------------------------
    m(M, "        _set_mode(self.prev)\n", "        _set_mode(True)\n", "no_grad: exit always enables", nth=1),
    m(M, "        _set_mode(self.prev)\n", "        _set_mode(False)\n", "enable_grad: exit always disables", nth=2),
    m(M, "        _set_mode(self.prev)\n", "        _set_mode(True)\n", "set_grad_enabled: exit always enables", nth=4),
    m(M, "        _set_mode(self.prev)\n        return super().__call__(orig_func)", "        return super().__call__(orig_func)", "set_grad_enabled as a decorator changes the mode at once"),
    m(M, "        with ctx_factory():\n            return func(*args, **kwargs)", "        return func(*args, **kwargs)", "decorated functions run without the mode"),
    m(M, "        _state.enabled = not self.mode\n", "        _state.enabled = False\n", "inference_mode(False) disables grad"),
    m(M, "        _state.enabled, _state.inference, _state.grad_mode = self._prev\n", "        _state.enabled = self._prev[0]\n", "inference_mode: flag stays after the block"),
    m(M, "        _state.inference = self.mode\n", "        _state.inference = False\n", "inference_mode: flag not set"),
    m(M, "class _GradState(threading.local):", "class _GradState:", "grad mode shared between threads"),
    m(M, "        _set_mode(True)\n", "        pass\n", "enable_grad does not enable"),
    m(M, "        _state.enabled = not self.mode\n", "        _state.enabled = True\n", "inference_mode keeps grad enabled"),
    m(M, "        self.prev = _mode()\n        _set_mode(False)\n", "        self.prev = True\n        _set_mode(False)\n", "no_grad: remembers enabled, whatever it was"),
    m(M, "    if _state.inference:\n        _state.grad_mode = mode", "    if False:\n        _state.grad_mode = mode", "enable_grad records inside inference_mode"),
    # the bugs PyTorch's own TestAutograd found (issue 23), each a mutant now
    m(DP, "(self == 0) & (exponent >= 0)", "(self == 0) & (result >= 0)", "pow: exponent gradient at base 0 from the result's sign"),
    m(DP, 'return grad * _C.where(exponent >= 0, 0.0, result * log_base)', 'return grad * _C.where(result >= 0, 0.0, result * log_base)', "rpow: exponent gradient at base 0 from the result's sign"),
    m(TN, '            grads[i] = _tc._wrap(g)\n', '            pass\n', "carried arrays: a node without their path is given arrays"),
    m(E, "            if graph_task.carries_arrays:\n                as_tensors(inputs)\n            if node._tensor_pre_hooks", "            if node._tensor_pre_hooks", "carried arrays: hooks are given arrays"),
    m(GT, "            CARRY_ARRAYS\n            and observer is None\n", "            CARRY_ARRAYS\n", "carried arrays in an observed pass: the observer is given arrays"),
    m(TN, '_TENSOR_ATTRS = frozenset({"indices"})', "_TENSOR_ATTRS = frozenset()", "indexing: saved indices outlive the graph"),
    m(TN, '" and not grad._requires_grad else None",', '" else None",', "carried arrays: a gradient that requires grad is expanded as an array (its view would require grad)"),
    m(TN, '" and not grad_mode.enabled and not grad._requires_grad and not fw.active:",', '" and not grad_mode.enabled and not fw.active:",', "backward on arrays: a gradient that requires grad is expanded as an array (its view would require grad)"),
    m(TN, 'if slot.endswith("_shape"):  # a tuple of ints', 'if slot.endswith("_shapeless"):  # a tuple of ints', "backward on arrays: a saved shape sends the node to its Tensor path"),
    m(TN, 'lines.append(f"{indent}    g = g[()]")', 'lines.append(f"{indent}    g = g.item()")', "backward on 0-d scalars: a Python float loses the gradient's dtype"),
    m(TN, 'f"{indent}if t is ndarray and {a}.dtype is dtype or t is float', 'f"{indent}if t is ndarray or t is float', "backward on arrays: a saved array of another dtype is taken (NumPy's promotion)"),
    m(DS, "            shape[dim] = s\n", "            pass\n", "split backward: zeros of the wrong shape"),
    m(GS, "                return t._alias_with_grad_fn(self._weak_grad_fn, self._output_nr)", "                return t", "saved tensor hooks: double backward through the pack hook"),
    m(GA, "                if out is not None:\n                    raise", "                if False:\n                    raise", "a post-accumulate-grad hook may return a value"),
    m(E, "new = h.fn(grad)  # hook all the same, with None", "new = h.fn(grad) if grad is not None else None", "tensor hooks skipped for outputs with no gradient"),
    m(E, "                if observer is not None:\n                    observer.node_ready(graph_task, fn, CPU)\n", "", "routing does not report the node ready"),
    m(F, "if g is None and k not in keep_none", "if g is None", "_materialize_non_diff_grads ignored"),
    m(F, "                    o._no_grad_view = _IN_CUSTOM_FUNCTION\n            if tangents is not None:", "                    pass\n            if tangents is not None:", "in place allowed on a custom Function's view output"),
    # the wrong answers PyTorch's other autograd test classes found (issue 38)
    m(DR, "mask = self.isnan() if bool(result.isnan()) else self == result", "mask = self == result", "max/min/median: a NaN result gives the NaNs no gradient"),
    m(DP, "        return np.where(np.isinf(recip), 0, recip)\n", "        return recip\n", "atan2 on arrays: nan gradient at (0, 0)"),
    m(DP, "    return recip.masked_fill(recip.isinf(), 0)\n", "    return recip\n", "atan2: nan gradient at (0, 0)"),
    m(DI, "if grad_src._requires_grad and bool((src_num_zeros > 1).any()):", "if False:", "scatter_reduce/index_reduce prod: double backward through two zeros in one place gives 0, not an error"),
    m(TD, "        requires_grad = False  # NOTE [Inference tensors]\n", "        pass\n", "a generated view of an inference tensor that requires grad requires grad"),
    m(TV, "        if sizes == self._data.shape:  # as PyTorch", "        if False:  # as PyTorch", "resize_ to the same sizes bumps the version (and copies a transposed tensor)"),
    m(T, "            if value is self:\n", "            if False:\n", "x.grad = x accepted"),
    m(FN, "        _check_not_inference(out)  # (as PyTorch's: after the write)\n", "        pass\n", "out= an inference tensor outside inference mode is allowed"),
    m(TI, "    _mark_base_changed(base, modified)\n", "", "a view made without grad takes its base's new history (no error on rebase)"),
    m(MF, "        if shape[d] != 1:\n", "        if True:\n", "is_contiguous(channels_last): a dim of size 1 must have its stride"),
    m(DS, "storage = storage.index_add(0, out_places.to(grad.device), grad.reshape(-1))", "storage = storage.index_copy(0, out_places.to(grad.device), grad.reshape(-1))", "as_strided: overlapping places keep one gradient"),
    m(F, "o._rebase_history(ctx, k) if id(original) in dirty", "o._set_history(ctx, k) if id(original) in dirty", "mark_dirty on a view: the base's history not rebased (the other input loses its gradient)"),
]
# fmt: on


def _locate(text, mutant):
    """The offset of the fragment ``mutant`` changes in ``text`` (raises if ambiguous)."""
    count = text.count(mutant.original)
    if mutant.nth == 0 and count != 1:
        raise ValueError(f"{mutant.name}: fragment found {count} times (give nth)")
    if mutant.nth > count:
        raise ValueError(f"{mutant.name}: fragment found {count} times, wanted #{mutant.nth}")
    pos = -1
    for _ in range(max(mutant.nth, 1)):
        pos = text.index(mutant.original, pos + 1)
    return pos


def apply(text, mutant):
    pos = _locate(text, mutant)
    mutated = text[:pos] + mutant.replacement + text[pos + len(mutant.original) :]
    if mutated == text:
        raise ValueError(f"{mutant.name}: the replacement changes nothing")
    return mutated


def _copy_tree(dst):
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")
    shutil.copytree(os.path.join(ROOT, "nbgrad"), os.path.join(dst, "nbgrad"), ignore=ignore)
    shutil.copytree(os.path.join(ROOT, "tests"), os.path.join(dst, "tests"), ignore=ignore)
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), dst)


def run_tests(tests, mutant=None):
    """Run ``tests`` on a copy of the package, mutated by ``mutant``; return (passed, seconds,
    the last lines of the output)."""
    with tempfile.TemporaryDirectory(prefix="nbgrad-mutant-") as tmp:
        _copy_tree(tmp)
        if mutant is not None:
            path = os.path.join(tmp, mutant.file)
            with open(path) as f:
                text = f.read()
            with open(path, "w") as f:
                f.write(apply(text, mutant))
        env = dict(os.environ, PYTHONPATH=tmp, PYTHONDONTWRITEBYTECODE="1")
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
        cmd += ["--no-header", "-p", "no:randomly", *tests]
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=TIMEOUT
            )
        except subprocess.TimeoutExpired:
            return False, time.perf_counter() - start, f"timed out after {TIMEOUT} s"
        out = (proc.stdout + proc.stderr).strip().splitlines()
        return proc.returncode == 0, time.perf_counter() - start, "\n".join(out[-3:])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", default="", help="only mutants whose name contains this")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--jobs", type=int, default=2, help="mutants run in parallel")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run")
    args = parser.parse_args(argv)

    for mu in MUTANTS:  # every fragment must exist (and be unambiguous) in the checkout
        with open(os.path.join(ROOT, mu.file)) as f:
            apply(f.read(), mu)
    chosen = [mu for mu in MUTANTS if args.k.lower() in mu.name.lower()]
    if args.list:
        for i, mu in enumerate(chosen, 1):
            print(f"{i:3d}  {mu.name}")
        print(f"{len(chosen)} mutants")
        return 0
    if not chosen:
        print("no mutant matches")
        return 2

    if not args.no_baseline:
        for tests in sorted({tuple(TESTS[mu.file]) for mu in chosen}):
            ok, secs, tail = run_tests(list(tests))
            if not ok:
                print(f"the unmutated tests fail ({' '.join(tests)}):\n{tail}")
                return 2
            print(f"baseline {' '.join(tests)}: passed in {secs:.0f} s", flush=True)

    def one(mu):
        ok, secs, tail = run_tests(TESTS[mu.file], mu)
        return mu, not ok, secs, tail

    survivors, done = [], 0
    with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        for mu, killed, secs, _tail in pool.map(one, chosen):
            done += 1
            status = "killed  " if killed else "SURVIVED"
            print(f"[{done:3d}/{len(chosen)}] {status} {secs:5.0f} s  {mu.name}", flush=True)
            if not killed:
                survivors.append(mu)
    killed = len(chosen) - len(survivors)
    print(f"\n{killed}/{len(chosen)} mutants killed ({100 * killed / len(chosen):.1f}%)")
    for mu in survivors:
        print(f"  survived: {mu.name}\n    {mu.original.strip()!r} -> {mu.replacement.strip()!r}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
