"""nbgrad: a PyTorch-style reverse-mode autograd engine on NumPy (and CuPy), built to be seen.

``import nbgrad as ng`` stands in for ``import torch`` for autograd work: the same names,
signatures, gradients, ``grad_fn`` names, hook order and errors. In a notebook,
``%load_ext nbgrad`` adds the ``%%autograd`` cell magic (``pip install nbgrad[notebook]``).

The layers, bottom up. A module imports, at module level, only from its own layer or those below
it (``tests/test_import_layers.py`` checks this); a call that must go up, as ``Tensor.backward``
into the engine, goes through the root package at call time (``nbgrad.autograd.backward``).

0 arrays        backend.py          Device, the array module ``xp`` of each; the only cupy import
                dtypes.py           dtypes, promotion, the default dtype
                return_types.py     the named tuples of ``max(dim)``, ``sort``, ``topk``...
                _testing/strict_device.py   the strict test device (tests' stand-in for CUDA)
1 graph         _graph/node.py      Node, Edge, GraphRoot, sequence numbers, gradient edges
                _graph/accumulate_grad.py   AccumulateGrad: the only writer of ``.grad``
                _graph/saved_tensor.py  SavedTensor: saved for backward, version-checked
                _graph/hooks.py     RemovableHandle, hook lists, saved_tensors_hooks
                _graph/tensor_class.py  the Tensor class, bound late (the graph imports no Tensor)
                _graph/grad_state.py    no_grad, enable_grad, inference_mode (thread-local state)
                _graph/anomaly_state.py detect_anomaly and the forward tracebacks of nodes
                _graph/table_node.py    the node generator: an op-table row -> a Node class
                _graph/array_formulas.py    which formulas run on arrays, traced on probes
                _graph/observer.py  GraphObserver: forward calls and backward passes, watched
2 tensor        _tensor/views.py    views of a base, and the checks of in-place ops on them
                _tensor/conversion.py   Python data and arrays -> tensors (``tensor``, ``_wrap``)
                _tensor/dispatch.py     method -> op-table row -> kernel, and the Node recording it
                _tensor/creation.py     zeros, randn, arange, cat, stack, where...
                _tensor/printing.py     how a tensor prints (PyTorch's ``_tensor_str.py``)
                _tensor/math_methods.py   operators, pointwise math, comparisons, predicates
                _tensor/shape_methods.py  view, reshape, permute, expand, indexing
                _tensor/inplace.py      add_, copy_, setitem: versions, CopySlices, rebase
                _tensor/linalg_methods.py  matmul, mm, bmm, addmm, cross, kron; einsum, meshgrid...
                _tensor/reduction_methods.py  sum, mean, max...; scans, nan-reductions, histograms
                _tensor/index_methods.py  index_copy, index_put, scatter_reduce, put...
                tensor.py           the Tensor class: metadata, grad, hooks, backward, to()
                _tensor/legacy_types.py  ``FloatTensor``-style constructors; cuda.py: their cuda
                _functions/         the module-level ops by job (``nbgrad.exp``, ``nbgrad.cat``...)
                functional.py       ``torch.functional``: its functions, nbgrad's, re-exported
3 op table      derivatives/        the rows, one file per family: pointwise, activation,
                                    reductions, scans, shape, indexing, linalg, random,
                                    searching, nn, losses... (opinfo.py: the row itself)
                kernels/            their array kernels (functions of ``xp`` and arrays), one
                                    module per family, named as its rows' file; common.py:
                                    those several families share
4 autograd      autograd/engine.py  the Engine; graph_task.py, input_buffer.py: what it runs on
                autograd/__init__.py  backward, grad; function.py: custom Functions;
                functional.py (jacobian, hessian...); gradcheck.py; variable.py; and the
                public faces of the graph layer: graph.py, grad_mode.py, anomaly_mode.py
                autograd/forward_ad.py  forward-mode AD: dual levels, tangents of the rows
                autograd/profiler.py    the profiler (profile, record_function); profiler_util.py
5 nn, optim     nn/                 Module, layers (RNN, LSTM, attention, transformer...),
                                    functional, init; optim/: optimizers, lr_scheduler
                serialization.py    save and load
                utils/checkpoint.py activation checkpointing (``torch.utils.checkpoint``)
                utils/data/         datasets, samplers, the DataLoader (``torch.utils.data``)
                utils/hooks.py      RemovableHandle, BackwardHook (``torch.utils.hooks``)
                profiler/           ``torch.profiler``: autograd/profiler.py's profile, with
                                    activities and schedules
6 notebook      notebook/sources.py how a graph is read and watched (nbgrad's)
                notebook/torch_source.py  the same for PyTorch's graph (never imports torch)
                notebook/records.py     Record, ModuleCall, BackwardTrace, Step: what is kept
                notebook/calls.py       a forward call taken as the recorder sees it, kept flat
                notebook/recorder.py    the Recorder: forward calls, module groups, backward
                                    passes of a cell, through the sources' observers
                notebook/schema.py  the records sent to the browser, defined once
                notebook/snapshot.py    graph + records + hooks -> a snapshot (JSON-able)
                notebook/summaries.py   a gradient or tensor summarised: GradFacts, summaries
                notebook/fold.py    repeated structure -> series boxes
                notebook/layout.py  the layered layout (the widget's and the still SVG's)
                notebook/svg.py     the still pictures; graph_view.py, hook_editor.py,
                                    stepper.py: the widgets (with widgets/*.js); magics.py:
                                    ``%%autograd`` (loaded by ``%load_ext nbgrad`` only)
"""

from __future__ import annotations

import math as _math

# NOTE [Import order]
# the Tensor (through _functions), then the op table, which fills the
# Tensor's table of rows by name (NOTE [The op table, by name])
from . import (  # noqa: E402
    _functions,  # noqa: E402
    autograd,  # noqa: E402
    backend,
    cuda,  # noqa: E402
    derivatives,
    dtypes,
    functional,
    nn,
    optim,
    profiler,
    utils,
)
from ._functions import *  # noqa: E402,F401,F403
from ._functions.random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from ._tensor.creation import (
    empty_strided,
    logspace,
    normal,
    rand_like,
    randint_like,
    randn_like,
    randperm,
    tril_indices,
    triu_indices,
)
from ._tensor.legacy_types import TENSOR_TYPES as _TENSOR_TYPES
from ._tensor.memory_formats import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    memory_format,
    preserve_format,
)
from ._tensor.printing import set_printoptions
from ._tensor.storage import TypedStorage, UntypedStorage
from .autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .backend import Device as device
from .backend import get_default_device, set_default_device
from .dtypes import (
    bool,
    double,
    float,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    set_default_dtype,
    short,
    uint8,
)
from .dtypes import dtype as dtype
from .serialization import load, save
from .tensor import (
    Size,
    Tensor,
    arange,
    as_tensor,
    cat,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    stack,
    tensor,
    where,
    zeros,
    zeros_like,
)

# the constants PyTorch exports as ``torch.inf``, ``torch.nan``, ``torch.e``, ``torch.pi``
inf = _math.inf
nan = _math.nan
e = _math.e
pi = _math.pi
newaxis = None

# PyTorch's legacy tensor types: ``FloatTensor``, ``LongTensor``... (_tensor/legacy_types.py)
globals().update(_TENSOR_TYPES)

__version__ = "0.1.0"


def load_ipython_extension(ipython):
    """``%load_ext nbgrad``: register the ``%%autograd`` cell magic (needs nbgrad[notebook])."""
    # late: the notebook layer needs IPython and anywidget (the optional nbgrad[notebook])
    from .notebook import load_ipython_extension as _load

    _load(ipython)
