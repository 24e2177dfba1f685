"""The public names of PyTorch that nbgrad covers: for each checked module (``torch``,
``torch.autograd``, ``torch.autograd.graph``, ``torch.nn`` and the others below), every public
name is either out of nbgrad's scope (a rule below says why), known to be missing (listed, so
that the list shrinks as gaps close), or present in nbgrad's module of the same place.

Data-driven: a module is one ``Scope``: also ``torch.nn``, ``torch.nn.functional``,
``torch.optim``, ``torch.optim.lr_scheduler``, ``torch.utils.data``, ``torch.utils.checkpoint``,
``torch.utils.hooks``,
``torch.functional``, ``torch.autograd.forward_ad``, ``torch.autograd.functional``,
``torch.autograd.profiler``, ``torch.autograd.profiler_util`` and ``torch.profiler``; and one
class, ``torch.Tensor``, whose public
methods and attributes are checked against ``nbgrad.Tensor``'s under the ``torch`` scope's rules
and a few of its own.

``python tests/test_api_coverage.py`` prints the coverage figures (present / in scope).
"""

from __future__ import annotations

import importlib
import re
import types
from dataclasses import dataclass

import pytest

torch = pytest.importorskip("torch")


@dataclass
class Scope:
    torch_module: str
    nbgrad_module: str
    out_of_scope: list  # (regular expression over the name, reason)
    known_missing: str  # in scope, not built yet: names separated by white space


# ---- torch --------------------------------------------------------------------------------------
TORCH_OUT = [
    (
        r"quantiz|^q_|qint|quint|qscheme|per_channel|per_tensor|fake_quant|int_repr|choose_qparams"
        r"|fused_moving_avg",
        "quantization: nbgrad has no quantized tensors",
    ),
    (
        r"sparse|_coo|csr|csc|bsr|bsc|^crow_|^ccol_|^col_indices|^row_indices|^values_copy"
        r"|^indices_copy|^s?smm$|spmm|sspaddmm|hspmm|dsmm|hsmm|saddmm",
        "sparse tensors",
    ),
    (
        r"complex|view_as_real|^real$|^imag$|conj|^angle$|^polar$|^is_neg$|resolve_neg|^isreal$"
        r"|^sgn$",
        "complex numbers: nbgrad's dtypes are real",
    ),
    (
        r"^bfloat16$|^BFloat16|float8|float4|^bits?\d*(x\d+)?$|^u?int[1-7]$|^uint(16|32|64)$|^cdouble$|^cfloat$|^chalf$",
        "dtypes nbgrad lacks",
    ),
    (
        r"Script|^jit$|compile|^fork$|^wait$|Future|_ir$|_ir_|^parse_|IODescriptor|^Graph$|^Block$"
        r"|^Node$|^Value$|^Use$|Type$|TypeBuilder|CompilationUnit|^Code$|FileCheck|AliasDb"
        r"|^Argument|FunctionSchema|ErrorReport|ExecutionPlan|GraphExecutorState|^Gradient$"
        r"|DeepCopyMemoTable|StaticModule|ThroughputBenchmark|Benchmark|TracingState"
        r"|ConcreteModuleType|type_comment|unify_type_list|Capsule|^Tag$|OperatorInfo"
        r"|PRIVATE_OPS|AggregationType|^SUM$|^AVG$|Logger|^Sym|^sym_|^cond$|^while_loop$|^vmap$"
        r"|classproperty|^jagged$|ArgumentSpec|JITException",
        "TorchScript, torch.compile, export, functorch",
    ),
    (
        r"cuda|cudnn|miopen|mkldnn|fbgemm|mps|xpu|vulkan|^Stream$|^Event$|AcceleratorError"
        r"|OutOfMemoryError|autocast|GradScaler|^has_|compiled_with|get_device_module"
        r"|flush_denormal|num_threads|num_interop|matmul_precision|deterministic"
        r"|warn_always|thread_safe|multiprocessing|^profiler_|distributed",
        "accelerators, backends, threads, distributed",
    ),
    (
        r"Storage|PyTorchFile|SerializationStorage|^from_file$|^frombuffer$|^get_file_path$"
        r"|^is_storage$|^typename$|^USE_|^TYPE_CHECKING$|DisableTorchFunction|DispatchKey"
        r"|FatalError|BufferDict|ModuleDict|ParameterDict|CallStack|^hash_tensor$",
        "storages and the dispatcher's internals",
    ),
    (
        r"^strided$|^channels_last|contiguous_format$|^preserve_format$|^memory_format$|^layout$",
        "layouts and memory formats",
    ),
    (
        r"^(diagonal|select|slice)_scatter$|^as_strided|^slice_inverse$|^alias_copy$|^slice_copy$|^view_copy$|^unfold_copy$",
        "functionalization's view copies and scatters",
    ),
    (
        r"^native_|_backward|_elemt$|_stats$|gather_stats|norm_except_dim|_with_indices$"
        r"|^constant_pad_nd$|^conv_tbc$|^embedding_renorm_$|affine_grid_generator|grid_sampler"
        r"|channel_shuffle|^segment_reduce$|^nonzero_static$|^empty_permuted$",
        "ATen's kernels behind the public functions",
    ),
    (
        r"^symeig$|^eig$|^lstsq$|^qr$|^svd|^cholesky|^lu|^det$|slogdet|^logdet$|inverse$"
        r"|^matrix_rank$|^matrix_power$|^matrix_exp$|^solve$|^triangular_solve$|^geqrf$|^orgqr$"
        r"|^ormqr$|^lobpcg$|lowrank$|^chain_matmul$|^nuclear_norm$|^frobenius_norm$",
        "linear algebra: torch.linalg is out of scope",
    ),
    (r"stft$|_window$", "spectral ops: torch.fft is out of scope"),
    (
        r"^lgamma$|^digamma$|^polygamma$|^mvlgamma$|^igammac?$|^i0_?$",
        "special functions: torch.special is out of scope",
    ),
    (
        r"^conv|^dropout_?$|^alpha_dropout|^feature_|^batch_norm$|^instance_norm$|^layer_norm$"
        r"|^group_norm$|^rms_norm$|^lstm|^gru|^rnn_|^embedding|_loss$|^kl_div$|pool\dd$"
        r"|^pixel_|^prelu$|^rrelu|^selu|^celu|^hardshrink$|^threshold_?$|^bilinear$"
        r"|^cosine_similarity$|^pairwise_distance$|^pdist$|^binary_cross_entropy",
        "nn's functions: checked under torch.nn.functional, when it is",
    ),
]

# the in-place forms of functions (``torch.relu_``): PyTorch code calls them as Tensor methods
INPLACE_FORM = re.compile(r"^[a-z0-9_]+[a-z0-9]_$")
INPLACE_ONLY = {"zero_", "resize_as_"}  # (no out-of-place function of the same name)

TORCH_MISSING = ""

# ---- torch.Tensor: the torch rules (the functions' methods are left out for the same reasons),
# and these --------------------------------------------------------------------------------------
TENSOR_OUT = TORCH_OUT + [
    (
        r"storage|^share_memory_$|^is_shared$|^pin_memory$|^is_pinned$|^data_ptr_|^record_stream$",
        "storages, shared and pinned memory, CUDA streams",
    ),
    (
        r"^(is_)?(ipu|xla|maia|mtia|meta)$|^is_mkldnn$|^to_mkldnn$|^is_vulkan$",
        "accelerators and devices nbgrad lacks",
    ),
    (
        r"^to_dense$|^to_padded_tensor$|^is_nested$|^values$|^indices$|^coalesce$|^is_coalesced$"
        r"|^dense_dim$|^is_distributed$",
        "sparse and nested tensors",
    ),
    (r"^names?$|^refine_names$|^align_(to|as)$|^rename_?$|^unflatten_names", "named tensors"),
    (
        r"^(lgamma|digamma|polygamma|mvlgamma|igammac?|i0)_$",
        "special functions: torch.special is out of scope",
    ),
    (r"^sgn_$", "complex numbers: nbgrad's dtypes are real"),
    (r"^narrow_copy$", "functionalization's view copies"),
    (r"^index$", "functorch's first-class dims"),
    (r"^reinforce$", "removed from PyTorch (it raises, telling to use torch.distributions)"),
]
# in scope, not built yet
TENSOR_MISSING = ""

# ---- torch.autograd ---------------------------------------------------------------------------
AUTOGRAD_OUT = [
    (
        r"^ProfilerConfig$|^ProfilerState$|^ProfilerEvent$",
        "the C++ profiler's configuration and raw events (nbgrad's profiler is Python)",
    ),
    (r"^NestedIOFunction$", "the legacy Function with nested inputs"),
    (
        r"^handle_torch_function$|^has_torch_function$|^is_tensor_like$",
        "__torch_function__ overrides",
    ),
    (r"view_replay|grad_layout_policy", "the C++ engine's switches"),
]
AUTOGRAD_MISSING = ""

GRAPH_OUT = [
    (r"^Variable$", "re-exported from torch.autograd, where it is checked"),
    (r"^TorchDispatchMode$", "__torch_dispatch__ modes"),
    (r"stream|^region_activation_memory_budget$", "CUDA streams and activation memory budgets"),
]
GRAPH_MISSING = ""
FORWARD_AD_OUT = []
FORWARD_AD_MISSING = ""
AUTOGRAD_FUNCTIONAL_OUT = []
AUTOGRAD_FUNCTIONAL_MISSING = ""

# ---- torch.autograd.profiler, torch.autograd.profiler_util, torch.profiler ---------------------
PROFILER_OUT = [
    (
        r"^emit_itt$|^emit_nvtx$|nvprof",
        "vendor tracing ranges (Intel ITT, NVIDIA NVTX / nvprof): nbgrad profiles the CPU itself",
    ),
    (
        r"^KinetoStepTracker$|^ProfilerConfig$|^ProfilerState$|^RecordScope$|^is_fbcode$"
        r"|^ExecutionTraceObserver$|^register_optimizer_step_post_hook$",
        "Kineto's and the C++ profiler's configuration, execution traces and internal hooks",
    ),
    (r"MemRecords|^Kernel$", "memory and device-kernel records: nbgrad records CPU time only"),
    (
        r"^EnforceUnique$|^StringTable$|^FormattedTimesMixin$|^EventMetadata$",
        "internal helpers of PyTorch's tables",
    ),
    (r"^Future$|^Optimizer$", "re-exported (torch.futures, torch.optim)"),
]
PROFILER_MISSING = ""

# ---- torch.nn, torch.nn.functional ----------------------------------------------------------
NN_OUT = [
    (r"^Lazy|^Uninitialized", "lazy modules: an nbgrad module knows its shapes when it is made"),
    (r"^SyncBatchNorm$", "data parallelism over several processes or GPUs"),
    (
        r"^Container$|^NLLLoss2d$|^CrossMapLRN2d$",
        "deprecated or legacy (torch keeps them for old code)",
    ),
    (r"^factory_kwargs$", "a helper torch.nn exports for its own modules"),
]
NN_MISSING = ""
F_OUT = [
    (
        r"^BroadcastingList\d$|^boolean_dispatch$|^assert_int_or_pair$",
        "TorchScript's typing helpers",
    ),
    (r"^handle_torch_function$|^has_torch_function", "__torch_function__ overrides"),
    (
        r"^scaled_mm$|^grouped_mm$|^scaled_grouped_mm$|^ScalingType$|^SwizzleType$",
        "low-precision (float8) GPU matrix products",
    ),
    (r"^conv_tbc$|^native_channel_shuffle$", "legacy or internal kernels"),
]
F_MISSING = ""

# ---- torch.optim, torch.optim.lr_scheduler -----------------------------------------------------
OPTIM_OUT = [
    (r"^SparseAdam$", "sparse gradients"),
    (r"^swap_in_optimizer_params_and_state$", "a helper for sharded (FSDP) training"),
]
OPTIM_MISSING = ""
SCHED_OUT = [(r"^Tensor$", "torch.Tensor, re-exported")]
SCHED_MISSING = ""

# ---- torch.utils.data, torch.utils.hooks, torch.functional -------------------------------------
DATA_OUT = [
    (
        r"DataPipe|^DataChunk$|datapipe|^argument_validation$|^runtime_validation"
        r"|^non_deterministic$",
        "DataPipes: PyTorch's deprecated torchdata graph of iterables",
    ),
    (r"^DistributedSampler$", "distributed training over several processes"),
]
DATA_MISSING = ""
CHECKPOINT_OUT = [
    (
        r"^CheckpointPolicy$|^SelectiveCheckpointContext$|^create_selective_checkpoint_contexts$"
        r"|^TorchDispatchMode$|^LoggingTensorMode$|^capture_logs$|^tree_map$",
        "selective activation checkpointing: it needs PyTorch's dispatcher (TorchDispatchMode)",
    ),
]
# the RNG states of the non-CPU devices a checkpointed segment touches (nbgrad restores the CPU
# generator's state only)
CHECKPOINT_MISSING = "DefaultDeviceType get_device_states set_device_states"
HOOKS_OUT = []
# warns on saving a tensor whose register_hook hooks are not marked unserializable: nbgrad
# keeps those hooks on the graph's nodes, not in the tensor's ``_backward_hooks`` dict it reads
HOOKS_MISSING = "warn_if_has_hooks"
FUNCTIONAL_OUT = [
    (r"^chain_matmul$|^lu$|lowrank$", "linear algebra: torch.linalg is out of scope"),
    (r"stft$", "spectral ops: torch.fft is out of scope"),
    (
        r"^boolean_dispatch$|^overload$|torch_function",
        "TorchScript's typing helpers and __torch_function__ overrides",
    ),
]
FUNCTIONAL_MISSING = ""

SCOPES = [
    Scope("torch", "nbgrad", TORCH_OUT, TORCH_MISSING),
    Scope("torch.Tensor", "nbgrad.Tensor", TENSOR_OUT, TENSOR_MISSING),
    Scope("torch.autograd", "nbgrad.autograd", AUTOGRAD_OUT, AUTOGRAD_MISSING),
    Scope("torch.autograd.graph", "nbgrad.autograd.graph", GRAPH_OUT, GRAPH_MISSING),
    Scope(
        "torch.autograd.forward_ad",
        "nbgrad.autograd.forward_ad",
        FORWARD_AD_OUT,
        FORWARD_AD_MISSING,
    ),
    Scope(
        "torch.autograd.functional",
        "nbgrad.autograd.functional",
        AUTOGRAD_FUNCTIONAL_OUT,
        AUTOGRAD_FUNCTIONAL_MISSING,
    ),
    Scope("torch.autograd.profiler", "nbgrad.autograd.profiler", PROFILER_OUT, PROFILER_MISSING),
    Scope(
        "torch.autograd.profiler_util",
        "nbgrad.autograd.profiler_util",
        PROFILER_OUT,
        PROFILER_MISSING,
    ),
    Scope("torch.profiler", "nbgrad.profiler", PROFILER_OUT, PROFILER_MISSING),
    Scope("torch.nn", "nbgrad.nn", NN_OUT, NN_MISSING),
    Scope("torch.nn.functional", "nbgrad.nn.functional", F_OUT, F_MISSING),
    Scope("torch.optim", "nbgrad.optim", OPTIM_OUT, OPTIM_MISSING),
    Scope("torch.optim.lr_scheduler", "nbgrad.optim.lr_scheduler", SCHED_OUT, SCHED_MISSING),
    Scope("torch.utils.data", "nbgrad.utils.data", DATA_OUT, DATA_MISSING),
    Scope(
        "torch.utils.checkpoint",
        "nbgrad.utils.checkpoint",
        CHECKPOINT_OUT,
        CHECKPOINT_MISSING,
    ),
    Scope("torch.utils.hooks", "nbgrad.utils.hooks", HOOKS_OUT, HOOKS_MISSING),
    Scope("torch.functional", "nbgrad.functional", FUNCTIONAL_OUT, FUNCTIONAL_MISSING),
]


def resolve(path):
    """A module, or a class in one (``torch.Tensor``), by its dotted path."""
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError:
        parent, _, name = path.rpartition(".")
        return getattr(importlib.import_module(parent), name)


def public_names(module_name):
    """The module's public names defined by PyTorch: no submodules, no re-exported typing or
    standard-library names; a class's: all its public methods and attributes."""
    module = resolve(module_name)
    if isinstance(module, type):
        return [n for n in dir(module) if not n.startswith("_")]
    names = []
    for name in dir(module):
        if name.startswith("_"):
            continue
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType):
            continue
        owner = getattr(obj, "__module__", None) or type(obj).__module__
        if isinstance(owner, str) and not owner.startswith("torch"):
            continue
        names.append(name)
    return names


def out_of_scope_reason(scope, name):
    for pattern, reason in scope.out_of_scope:
        if re.search(pattern, name):
            return reason
    inplace = INPLACE_FORM.match(name) and (hasattr(torch, name[:-1]) or name in INPLACE_ONLY)
    if scope.torch_module == "torch" and inplace:
        return "in-place forms of functions: nbgrad has them as Tensor methods"
    if scope.torch_module == "torch" and name.endswith("_copy") and hasattr(torch, name[:-5]):
        return "functionalization's view copies"
    return None


def in_scope(scope):
    return [n for n in public_names(scope.torch_module) if out_of_scope_reason(scope, n) is None]


def coverage(scope, nbgrad_module=None):
    """``(present, in scope)`` for one scope (against an nbgrad module given, or the one of the
    scope)."""
    module = nbgrad_module or resolve(scope.nbgrad_module)
    names = in_scope(scope)
    return sum(hasattr(module, n) for n in names), len(names)


@pytest.mark.parametrize("scope", SCOPES, ids=[s.torch_module for s in SCOPES])
def test_every_in_scope_name_is_present_or_known_missing(scope):
    module = resolve(scope.nbgrad_module)
    known = set(scope.known_missing.split())
    names = in_scope(scope)
    absent = sorted(n for n in names if not hasattr(module, n) and n not in known)
    assert absent == [], f"{scope.torch_module}: in scope, missing from {scope.nbgrad_module}"
    # the list of gaps shrinks as they close, and names only real gaps
    closed = sorted(n for n in known if hasattr(module, n))
    assert closed == [], f"now present: remove them from {scope.torch_module}'s missing list"
    unknown = sorted(known - set(names))
    assert unknown == [], f"not in scope in {scope.torch_module} (or not a torch name)"


def test_the_issue_names_are_present():
    """The names the issue asked for (ops, creation functions, graph helpers) are all there."""
    import nbgrad as ng

    wanted = """all any isclose einsum outer cross diag diagonal trace logaddexp lerp addmm baddbmm
        meshgrid logspace randn_like rand_like randint_like normal bernoulli multinomial nonzero
        unique masked_select scatter scatter_add index_add repeat_interleave tile broadcast_to
        movedim swapaxes take cumprod atan2 hypot fmod logical_and logical_or logical_not
        logical_xor median quantile kron tensordot std_mean var_mean nan_to_num count_nonzero
        triu_indices tril_indices erf erfinv set_printoptions""".split()
    assert [n for n in wanted if not hasattr(ng, n)] == []
    methods = [n for n in wanted if hasattr(torch.Tensor, n)]
    assert [n for n in methods if not hasattr(ng.Tensor, n)] == []
    graph = "save_on_cpu disable_saved_tensors_hooks register_multi_grad_hook GradientEdge"
    graph += " get_gradient_edge increment_version"
    assert [n for n in graph.split() if not hasattr(ng.autograd.graph, n)] == []


if __name__ == "__main__":
    for scope in SCOPES:
        present, total = coverage(scope)
        print(f"{scope.torch_module}: {present} of {total} in-scope names ({present / total:.0%})")
