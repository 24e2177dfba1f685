"""Attention and transformer layers against PyTorch: ``F.scaled_dot_product_attention``,
``MultiheadAttention``, ``TransformerEncoderLayer``/``DecoderLayer``, ``TransformerEncoder``/
``Decoder`` and ``Transformer``.

Each case builds the same thing in both libraries (float64), loads torch's state dict into
nbgrad's module, and compares every output, its ``grad_fn`` name, and the gradients of the
inputs and of every parameter for random upstream gradients (to 1e-6). Also: state_dict keys,
reprs, initialisation, ``gradcheck``, dropout's statistics and errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

TOL = dict(rtol=1e-6, atol=1e-6)

# PyTorch's fused CPU kernel (taken for some masks and shapes) -> the node its math path, which
# nbgrad composes, ends in (NOTE [Attention from ops] in nbgrad/nn/_attention.py)
FUSED = {"ScaledDotProductFlashAttentionForCpuBackward0": "UnsafeViewBackward0"}


class Const:
    """An input that does not require grad (a mask)."""

    def __init__(self, values):
        self.values = np.asarray(values)


def _build(lib, spec, rng, cache, key):
    if spec is None or isinstance(spec, (bool, int, float)):
        return spec
    if isinstance(spec, Const):
        return lib.tensor(spec.values)
    if isinstance(spec, str):  # the same tensor object as an earlier input (self-attention)
        return cache[lib][spec]
    arr = cache.setdefault("np", {}).setdefault(key, None)
    if arr is None:
        arr = cache["np"][key] = rng.standard_normal(spec)
    t = lib.tensor(arr, requires_grad=True)
    cache.setdefault(lib, {})[key] = t
    return t


def _flat(out):
    if isinstance(out, tuple):
        return [t for o in out for t in _flat(o)]
    return [out]


def _compare(ng_out, th_out, ng_wrt, th_wrt, rng):
    ng_out, th_out = _flat(ng_out), _flat(th_out)
    assert len(ng_out) == len(th_out)
    for a, b in zip(ng_out, th_out):
        assert (a is None) == (b is None)
    pairs = [(a, b) for a, b in zip(ng_out, th_out) if b is not None]
    for a, b in pairs:
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **TOL)
        assert a.grad_fn.name() == FUSED.get(b.grad_fn.name(), b.grad_fn.name())
    upstream = [rng.standard_normal(tuple(b.shape)) for _, b in pairs]
    th_grads = torch.autograd.grad(
        [b for _, b in pairs], th_wrt, [torch.tensor(u) for u in upstream], allow_unused=True
    )
    ng_grads = ng.autograd.grad(
        [a for a, _ in pairs], ng_wrt, [ng.tensor(u) for u in upstream], allow_unused=True
    )
    for i, (a, b) in enumerate(zip(ng_grads, th_grads)):
        assert (a is None) == (b is None), i
        if a is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), err_msg=f"gradient {i}", **TOL)


def check_parity(make, args, kwargs=None, seed=0, train=False):
    """``make(lib)`` a module in each library; torch's weights into nbgrad's; compare.

    ``args``/``kwargs``: shapes (random inputs that require grad), ``Const`` masks, or the
    name (``"0"``, ``"1"``, ...) of an earlier positional input to pass the same tensor again.
    """
    kwargs = kwargs or {}
    torch.manual_seed(seed)
    th_mod = make(torch).double().train(train)
    ng_mod = make(ng).double().train(train)
    assert list(ng_mod.state_dict()) == list(th_mod.state_dict())
    ng_mod.load_state_dict({k: ng.tensor(v.numpy()) for k, v in th_mod.state_dict().items()})
    rng = np.random.default_rng(seed)
    cache = {}
    built = {}
    for lib in (torch, ng):
        a = [_build(lib, s, rng, cache, str(i)) for i, s in enumerate(args)]
        k = {n: _build(lib, s, rng, cache, n) for n, s in kwargs.items()}
        built[lib] = (a, k)
    th_out = th_mod(*built[torch][0], **built[torch][1])
    ng_out = ng_mod(*built[ng][0], **built[ng][1])

    def leaves(lib, mod):
        ins = list(cache.get(lib, {}).values())
        return ins + list(mod.parameters())

    _compare(ng_out, th_out, leaves(ng, ng_mod), leaves(torch, th_mod), rng)
    return ng_mod, th_mod


def _causal_bool(L, S=None):
    return Const(np.tril(np.ones((L, S or L), dtype=bool)))


def _padding(B, S, seed=0, dtype=bool):
    """True (padded) at random keys, never all of a row."""
    mask = np.random.default_rng(seed + 7).random((B, S)) < 0.4
    mask[:, 0] = False
    if dtype is bool:
        return Const(mask)
    return Const(np.where(mask, -np.inf, 0.0))


# ---- scaled_dot_product_attention ---------------------------------------------------------------
class SDPA:
    """``F.scaled_dot_product_attention`` as a module (no parameters), for ``check_parity``."""

    def __init__(self, lib, **kw):
        self.lib, self.kw = lib, kw

    def double(self):
        return self

    def train(self, mode):
        return self

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass

    def parameters(self):
        return []

    def __call__(self, q, k, v, attn_mask=None):
        return self.lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask, **self.kw)


SDPA_CASES = {
    "plain": ({}, [(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7)], {}),
    "3d": ({}, [(3, 4, 5), (3, 6, 5), (3, 6, 5)], {}),
    "2d": ({}, [(4, 5), (6, 5), (6, 2)], {}),
    "causal": ({"is_causal": True}, [(2, 3, 4, 5), (2, 3, 4, 5), (2, 3, 4, 5)], {}),
    "causal-rect": ({"is_causal": True}, [(2, 4, 5), (2, 6, 5), (2, 6, 5)], {}),
    "scale": ({"scale": 0.37}, [(2, 4, 5), (2, 6, 5), (2, 6, 3)], {}),
    "bool-mask": (
        {},
        [(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5)],
        {"attn_mask": _causal_bool(4, 6)},
    ),
    "bool-mask-broadcast": (
        {},
        [(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5)],
        {"attn_mask": Const(np.random.default_rng(3).random((2, 1, 1, 6)) < 0.7)},
    ),
    "float-mask": (
        {},
        [(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5)],
        {"attn_mask": Const(np.random.default_rng(4).standard_normal((3, 4, 6)))},
    ),
    "float-mask-grad": ({}, [(2, 4, 5), (2, 6, 5), (2, 6, 5)], {"attn_mask": (2, 4, 6)}),
    "fully-masked-row": (
        {},
        [(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5)],
        {"attn_mask": Const(np.tril(np.ones((4, 6), dtype=bool)) & (np.arange(4) != 1)[:, None])},
    ),
    "fully-masked-row-float": (
        {},
        [(2, 4, 5), (2, 6, 5), (2, 6, 5)],
        {"attn_mask": Const(np.where(np.arange(4)[:, None] == 1, -np.inf, np.zeros((4, 6))))},
    ),
    "gqa": ({"enable_gqa": True}, [(2, 4, 3, 5), (2, 2, 6, 5), (2, 2, 6, 5)], {}),
}


@pytest.mark.parametrize("case", sorted(SDPA_CASES))
def test_scaled_dot_product_attention_matches_pytorch(case):
    kw, args, kwargs = SDPA_CASES[case]
    check_parity(lambda lib: SDPA(lib, **kw), args, kwargs)


def test_scaled_dot_product_attention_dropout_is_unbiased_and_random():
    """Uniform attention over values of ones: each output is the mean of the kept weights
    scaled by 1/(1-p), which is 1 on average; two calls differ."""
    ng.manual_seed(0)
    q = ng.zeros(64, 8, 4, dtype=ng.float64)
    v = ng.ones(64, 16, 4, dtype=ng.float64)
    k = ng.zeros(64, 16, 4, dtype=ng.float64)
    F = ng.nn.functional
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    assert not np.array_equal(a, b)
    assert abs(a.mean() - 1) < 0.03
    assert set(np.unique(np.round(a * 8, 6))) <= set(range(0, 33))  # multiples of 1/8


def test_scaled_dot_product_attention_errors_as_pytorch():
    for lib in (torch, ng):
        q = lib.ones(2, 3, 4)
        with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
            lib.nn.functional.scaled_dot_product_attention(
                q, q, q, attn_mask=lib.ones(3, 3, dtype=lib.bool), is_causal=True
            )


# ---- MultiheadAttention -------------------------------------------------------------------------
E, NH, L, S, B = 8, 2, 4, 5, 3


def _mha(**kw):
    return lambda lib: lib.nn.MultiheadAttention(E, NH, **kw)


MHA_CASES = {
    "self": (_mha(), [(L, B, E), "0", "0"], {}),
    "cross": (_mha(), [(L, B, E), (S, B, E), (S, B, E)], {}),
    "kv-same": (_mha(), [(L, B, E), (S, B, E), "1"], {}),
    "batch_first": (_mha(batch_first=True), [(B, L, E), "0", "0"], {}),
    "batch_first-cross": (_mha(batch_first=True), [(B, L, E), (B, S, E), (B, S, E)], {}),
    "kdim-vdim": (_mha(kdim=5, vdim=3), [(L, B, E), (S, B, 5), (S, B, 3)], {}),
    "kdim-vdim-batch_first": (
        _mha(kdim=5, vdim=3, batch_first=True),
        [(B, L, E), (B, S, 5), (B, S, 3)],
        {},
    ),
    "no-bias": (_mha(bias=False), [(L, B, E), (S, B, E), (S, B, E)], {}),
    "bias_kv-zero_attn": (
        _mha(add_bias_kv=True, add_zero_attn=True),
        [(L, B, E), (S, B, E), (S, B, E)],
        {"key_padding_mask": _padding(B, S), "attn_mask": Const(np.zeros((L, S)))},
    ),
    "not-averaged": (_mha(), [(L, B, E), (S, B, E), (S, B, E)], {"average_attn_weights": False}),
    "no-weights": (_mha(), [(L, B, E), (S, B, E), (S, B, E)], {"need_weights": False}),
    "key_padding_bool": (
        _mha(),
        [(L, B, E), (S, B, E), (S, B, E)],
        {"key_padding_mask": _padding(B, S)},
    ),
    "key_padding_float-no-weights": (
        _mha(),
        [(L, B, E), (S, B, E), (S, B, E)],
        {"key_padding_mask": _padding(B, S, dtype=float), "need_weights": False},
    ),
    "attn_mask_2d_bool": (
        _mha(),
        [(L, B, E), "0", "0"],
        {"attn_mask": Const(np.triu(np.ones((L, L), dtype=bool), 1))},
    ),
    "attn_mask_3d_float": (
        _mha(),
        [(L, B, E), (S, B, E), (S, B, E)],
        {"attn_mask": Const(np.random.default_rng(5).standard_normal((B * NH, L, S)))},
    ),
    "attn_mask_3d_float-no-weights": (
        _mha(),
        [(L, B, E), (S, B, E), (S, B, E)],
        {
            "attn_mask": Const(np.random.default_rng(5).standard_normal((B * NH, L, S))),
            "need_weights": False,
        },
    ),
    "both-masks": (
        _mha(),
        [(L, B, E), (S, B, E), (S, B, E)],
        {
            "attn_mask": Const(np.random.default_rng(6).standard_normal((L, S))),
            "key_padding_mask": _padding(B, S, dtype=float),
        },
    ),
    "causal-no-weights": (
        _mha(),
        [(L, B, E), "0", "0"],
        {
            "attn_mask": Const(np.triu(np.full((L, L), -np.inf), 1)),
            "is_causal": True,
            "need_weights": False,
        },
    ),
    "unbatched": (
        _mha(),
        [(L, E), (S, E), (S, E)],
        {"key_padding_mask": Const(_padding(1, S).values[0])},
    ),
    "unbatched-no-weights": (_mha(), [(L, E), "0", "0"], {"need_weights": False}),
}


@pytest.mark.parametrize("case", sorted(MHA_CASES))
def test_multihead_attention_matches_pytorch(case):
    make, args, kwargs = MHA_CASES[case]
    check_parity(make, args, kwargs)


def test_multihead_attention_dropout_one_in_training():
    """With dropout 1 every attention weight is dropped: the output is out_proj's bias (and
    the weights zero), in both libraries; in eval mode dropout is off."""
    make = _mha(dropout=1.0)
    check_parity(make, [(L, B, E), (S, B, E), (S, B, E)], train=True)
    check_parity(make, [(L, B, E), (S, B, E), (S, B, E)], {"need_weights": False}, train=True)
    check_parity(make, [(L, B, E), (S, B, E), (S, B, E)], train=False)


# ---- transformer layers -------------------------------------------------------------------------
D, FF = 8, 12
T_SRC, T_TGT = 5, 4


def _enc_layer(**kw):
    return lambda lib: lib.nn.TransformerEncoderLayer(D, NH, FF, dropout=0.0, **kw)


def _dec_layer(**kw):
    return lambda lib: lib.nn.TransformerDecoderLayer(D, NH, FF, dropout=0.0, **kw)


def _square(n=T_TGT):
    return Const(np.triu(np.full((n, n), -np.inf), 1))


LAYER_CASES = {
    "enc": (_enc_layer(), [(T_SRC, B, D)], {}),
    "enc-norm_first": (_enc_layer(norm_first=True), [(T_SRC, B, D)], {}),
    "enc-gelu-batch_first": (_enc_layer(activation="gelu", batch_first=True), [(B, T_SRC, D)], {}),
    "enc-callable": (
        lambda lib: lib.nn.TransformerEncoderLayer(D, NH, FF, 0.0, lib.nn.functional.silu),
        [(T_SRC, B, D)],
        {},
    ),
    "enc-module-activation": (
        lambda lib: lib.nn.TransformerEncoderLayer(D, NH, FF, 0.0, lib.nn.GELU("tanh")),
        [(T_SRC, B, D)],
        {},
    ),
    "enc-no-bias": (_enc_layer(bias=False, layer_norm_eps=1e-3), [(T_SRC, B, D)], {}),
    "enc-masks": (
        _enc_layer(),
        [(T_SRC, B, D)],
        {"src_mask": _square(n=T_SRC), "src_key_padding_mask": _padding(B, T_SRC)},
    ),
    "enc-causal": (
        _enc_layer(),
        [(T_SRC, B, D)],
        {"src_mask": _square(n=T_SRC), "is_causal": True},
    ),
    "enc-unbatched": (_enc_layer(), [(T_SRC, D)], {}),
    "dec": (_dec_layer(), [(T_TGT, B, D), (T_SRC, B, D)], {}),
    "dec-norm_first-gelu": (
        _dec_layer(norm_first=True, activation="gelu"),
        [(T_TGT, B, D), (T_SRC, B, D)],
        {},
    ),
    "dec-batch_first-masks": (
        _dec_layer(batch_first=True),
        [(B, T_TGT, D), (B, T_SRC, D)],
        {
            "tgt_mask": _square(),
            "memory_key_padding_mask": _padding(B, T_SRC),
            "tgt_key_padding_mask": _padding(B, T_TGT, seed=1),
            "memory_mask": Const(np.random.default_rng(2).standard_normal((T_TGT, T_SRC))),
        },
    ),
    "dec-causal": (
        _dec_layer(),
        [(T_TGT, B, D), (T_SRC, B, D)],
        {"tgt_mask": _square(), "tgt_is_causal": True},
    ),
    "encoder": (
        lambda lib: lib.nn.TransformerEncoder(
            lib.nn.TransformerEncoderLayer(D, NH, FF, 0.0), 2, lib.nn.LayerNorm(D)
        ),
        [(T_SRC, B, D)],
        {"mask": _square(n=T_SRC)},
    ),
    "encoder-padding-batch_first": (
        lambda lib: lib.nn.TransformerEncoder(
            lib.nn.TransformerEncoderLayer(D, NH, FF, 0.0, batch_first=True), 2
        ),
        [(B, T_SRC, D)],
        {"src_key_padding_mask": _padding(B, T_SRC)},
    ),
    "decoder": (
        lambda lib: lib.nn.TransformerDecoder(
            lib.nn.TransformerDecoderLayer(D, NH, FF, 0.0, norm_first=True), 2, lib.nn.LayerNorm(D)
        ),
        [(T_TGT, B, D), (T_SRC, B, D)],
        {"tgt_mask": _square()},
    ),
    "transformer": (
        lambda lib: lib.nn.Transformer(D, NH, 2, 2, FF, dropout=0.0),
        [(T_SRC, B, D), (T_TGT, B, D)],
        {"tgt_mask": _square(), "src_key_padding_mask": _padding(B, T_SRC)},
    ),
    "transformer-batch_first-gelu": (
        lambda lib: lib.nn.Transformer(
            D, NH, 1, 1, FF, 0.0, "gelu", batch_first=True, norm_first=True
        ),
        [(B, T_SRC, D), (B, T_TGT, D)],
        {"tgt_mask": _square(), "memory_key_padding_mask": _padding(B, T_SRC)},
    ),
    "transformer-unbatched": (
        lambda lib: lib.nn.Transformer(D, NH, 1, 1, FF, dropout=0.0),
        [(T_SRC, D), (T_TGT, D)],
        {},
    ),
}


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("case", sorted(LAYER_CASES))
def test_transformer_layers_match_pytorch(case, train):
    make, args, kwargs = LAYER_CASES[case]
    check_parity(make, args, kwargs, train=train)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_encoder_inference_matches_pytorch_fast_path():
    """In eval mode without grad PyTorch takes its fused kernel; the values agree."""
    torch.manual_seed(0)
    th = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(D, NH, FF, batch_first=True), 2
    )
    th = th.double().eval()
    ours = ng.nn.TransformerEncoder(ng.nn.TransformerEncoderLayer(D, NH, FF, batch_first=True), 2)
    ours = ours.double().eval()
    ours.load_state_dict({k: ng.tensor(v.numpy()) for k, v in th.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((B, T_SRC, D))
    with torch.no_grad():
        expected = th(torch.tensor(x)).numpy()
    with ng.no_grad():
        got = ours(ng.tensor(x)).numpy()
    np.testing.assert_allclose(got, expected, **TOL)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("grad", [False, True])
def test_encoder_inference_with_padding_matches_pytorch_nested_path(aligned, grad):
    """Eval mode, a padding mask, no grad: PyTorch's nested-tensor path leaves zeros at the
    padded positions (before the final norm) when each sequence is padded at its end."""
    torch.manual_seed(0)
    norm = lambda nn: nn.LayerNorm(D)  # noqa: E731
    th = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(D, NH, FF, batch_first=True), 2, norm(torch.nn)
    )
    th = th.double().eval()
    with torch.no_grad():
        th.norm.bias.uniform_(-1, 1)
    ours = ng.nn.TransformerEncoder(
        ng.nn.TransformerEncoderLayer(D, NH, FF, batch_first=True), 2, norm(ng.nn)
    )
    ours = ours.double().eval()
    ours.load_state_dict({k: ng.tensor(v.numpy()) for k, v in th.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((B, T_SRC, D))
    lengths = [5, 2, 3]
    pad = np.arange(T_SRC)[None, :] >= np.array(lengths)[:, None]
    if not aligned:
        pad[:, 0], pad[:, -1] = pad[:, -1], False
    results = []
    for lib in (torch, ng):
        model = th if lib is torch else ours
        with lib.set_grad_enabled(grad):
            out = model(lib.tensor(x), src_key_padding_mask=lib.tensor(pad))
        results.append(out.detach().numpy())
    np.testing.assert_allclose(results[1], results[0], **TOL)


def test_transformer_dropout_is_random_in_training_only():
    ng.manual_seed(0)
    layer = ng.nn.TransformerEncoderLayer(D, NH, FF, dropout=0.5).double()
    x = ng.randn(T_SRC, B, D, dtype=ng.float64)
    assert not np.allclose(layer(x).detach().numpy(), layer(x).detach().numpy())
    layer.eval()
    # eval mode: the same kernels on the same inputs twice, the same bits
    np.testing.assert_array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.MultiheadAttention(8, 2, kdim=4, vdim=6, add_bias_kv=True),
        lambda nn: nn.MultiheadAttention(8, 4, bias=False, batch_first=True),
        lambda nn: nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", norm_first=True),
        lambda nn: nn.TransformerDecoderLayer(8, 2, 16, bias=False),
        lambda nn: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2, nn.LayerNorm(8)),
        lambda nn: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 3),
        lambda nn: nn.Transformer(8, 2, 1, 2, 16),
    ],
)
def test_state_dict_keys_shapes_and_repr_match_pytorch(make):
    ours, theirs = make(ng.nn), make(torch.nn)
    assert repr(ours) == repr(theirs)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in theirs.state_dict().items()
    ]


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.MultiheadAttention(8, 2),
        lambda nn: nn.MultiheadAttention(6, 2, kdim=3, vdim=5, add_bias_kv=True),
        lambda nn: nn.Transformer(8, 2, 1, 1, 16),
        lambda nn: nn.TransformerEncoderLayer(8, 2, 16),
    ],
)
def test_init_matches_pytorch_distributions(make):
    """Each parameter: constant ones exactly; random ones with torch's bounds, mean and std
    (over many draws)."""
    ng.manual_seed(0)
    torch.manual_seed(0)
    draws = {}
    for lib in (ng, torch):
        for _ in range(60):
            for name, p in make(lib.nn).named_parameters():
                draws.setdefault((lib.__name__, name), []).append(p.detach().numpy())
    names = [n for lib, n in draws if lib == "torch"]
    assert names == [n for lib, n in draws if lib == "nbgrad"]
    for name in names:
        a, b = np.stack(draws[("nbgrad", name)]), np.stack(draws[("torch", name)])
        if b.std() == 0:
            # constants (ones, zeros) written, not computed
            np.testing.assert_array_equal(a, b, err_msg=name)
            continue
        se = b.std() / np.sqrt(b.size)
        assert abs(a.mean() - b.mean()) < 6 * se, name
        assert abs(a.std() / b.std() - 1) < 0.06, name
        kurt_a, kurt_b = _excess_kurtosis(a), _excess_kurtosis(b)  # uniform -1.2, normal 0
        assert abs(kurt_a - kurt_b) < 0.5, (name, kurt_a, kurt_b)
        if kurt_b < -0.9:  # a uniform: the same bounds
            assert abs(np.abs(a).max() / np.abs(b).max() - 1) < 0.05, name


def _excess_kurtosis(x):
    z = (x - x.mean()) / x.std()
    return float(np.mean(z**4) - 3)


def test_generate_square_subsequent_mask_matches_pytorch():
    ours = ng.nn.Transformer.generate_square_subsequent_mask(4)
    theirs = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert ours.dtype == ng.float32
    # zeros and -inf written, not computed
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ---- gradcheck ----------------------------------------------------------------------------------
def _gradcheck(module, *inputs, **kwargs):
    params = list(module.parameters())
    n = len(inputs)

    def f(*args):
        return tuple(t for t in _flat(module(*args[:n], **kwargs)) if t is not None)

    return ng.autograd.gradcheck(f, tuple(inputs) + tuple(params))


def _rand(*shape):
    return ng.randn(*shape, dtype=ng.float64, requires_grad=True)


def test_gradcheck_scaled_dot_product_attention():
    ng.manual_seed(0)
    mask = ng.tensor(np.tril(np.ones((3, 4), dtype=bool)))
    F = ng.nn.functional
    assert ng.autograd.gradcheck(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        (_rand(2, 3, 2), _rand(2, 4, 2), _rand(2, 4, 3)),
    )
    assert ng.autograd.gradcheck(
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m, is_causal=False, scale=0.5),
        (_rand(2, 3, 2), _rand(2, 4, 2), _rand(2, 4, 3), _rand(3, 4)),
    )


def test_gradcheck_multihead_attention():
    ng.manual_seed(0)
    mha = ng.nn.MultiheadAttention(4, 2, kdim=3, vdim=2, add_bias_kv=True).double()
    padding = ng.tensor([[False, True, False], [False, False, False]])
    assert _gradcheck(mha, _rand(2, 2, 4), _rand(3, 2, 3), _rand(3, 2, 2), key_padding_mask=padding)


@pytest.mark.parametrize("norm_first", [False, True])
def test_gradcheck_transformer_layers(norm_first):
    ng.manual_seed(0)
    enc = ng.nn.TransformerEncoderLayer(4, 2, 6, 0.0, "gelu", norm_first=norm_first).double()
    assert _gradcheck(enc, _rand(3, 2, 4), src_mask=ng.tensor(np.triu(np.full((3, 3), -np.inf), 1)))
    dec = ng.nn.TransformerDecoderLayer(4, 2, 5, 0.0, norm_first=norm_first).double()
    assert _gradcheck(dec, _rand(2, 2, 4), _rand(3, 2, 4))


# ---- errors -------------------------------------------------------------------------------------
def _lib(nn):
    return torch if nn is torch.nn else ng


@pytest.mark.parametrize(
    "call",
    [
        lambda nn: nn.MultiheadAttention(7, 2),
        lambda nn: nn.MultiheadAttention(0, 2),
        lambda nn: nn.MultiheadAttention(8, 2)(*[_lib(nn).ones(3, 2, 8)] * 2, _lib(nn).ones(3, 8)),
        lambda nn: nn.MultiheadAttention(8, 2)(*[_lib(nn).ones(3, 2, 8)] * 3, is_causal=True),
        lambda nn: nn.MultiheadAttention(8, 2)(
            *[_lib(nn).ones(3, 2, 8)] * 3, attn_mask=_lib(nn).ones(3, 4)
        ),
        lambda nn: nn.MultiheadAttention(8, 2)(
            *[_lib(nn).ones(3, 2, 8)] * 3,
            key_padding_mask=_lib(nn).ones(2, 3, dtype=_lib(nn).int64),
        ),
        lambda nn: nn.TransformerEncoderLayer(8, 2, activation="tanh"),
        lambda nn: nn.Transformer(8, 2, 1, 1, 16)(_lib(nn).ones(3, 2, 8), _lib(nn).ones(3, 3, 8)),
        lambda nn: nn.Transformer(8, 2, 1, 1, 16)(_lib(nn).ones(3, 2, 8), _lib(nn).ones(3, 2, 4)),
    ],
)
@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_errors_match_pytorch(call):
    with pytest.raises(Exception) as theirs:
        call(torch.nn)
    with pytest.raises(type(theirs.value)) as ours:
        call(ng.nn)
    assert str(ours.value) == str(theirs.value).replace("torch.", "nbgrad.")


def test_nested_tensor_warning_as_pytorch():
    with pytest.warns(UserWarning, match="self.use_nested_tensor is False because encoder_layer"):
        ng.nn.TransformerEncoder(ng.nn.TransformerEncoderLayer(8, 2, 16), 1)
