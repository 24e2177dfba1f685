"""KLDivLoss, CosineEmbeddingLoss, MarginRankingLoss, TripletMarginLoss, HingeEmbeddingLoss,
GaussianNLLLoss, PoissonNLLLoss, SoftMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss,
CTCLoss, CosineSimilarity, PairwiseDistance (``nbgrad/nn/_functional_losses.py`` and
``_functional_distance.py``) against PyTorch: values, gradients (float64, 1e-6), second order,
``grad_fn`` names, reprs and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

TOL = dict(rtol=1e-6, atol=1e-6)
REDUCTIONS = ["none", "mean", "sum"]
R = np.random.default_rng(0)
X, Y, Z = (R.standard_normal((4, 6)) for _ in range(3))
SIGNS = np.sign(R.standard_normal(4))
SIGNS6 = np.sign(R.standard_normal((4, 6)))
PROBS = R.random((4, 6))
VAR = R.random((4, 6)) + 0.1
LOG_P = np.log(R.dirichlet(np.ones(5), size=(8, 3)))


class Arr:
    """An argument that requires grad (a plain ndarray does not)."""

    def __init__(self, a):
        self.a = a


def _args(lib, args):
    out, leaves = [], []
    for a in args:
        if isinstance(a, Arr):
            t = lib.tensor(a.a, requires_grad=True)
            leaves.append(t)
        elif isinstance(a, np.ndarray):
            t = lib.tensor(a)
        else:
            t = a
        out.append(t)
    return out, leaves


def _cases():
    c = []
    for red in REDUCTIONS + ["batchmean"]:
        c.append(("kl_div", (Arr(np.log(PROBS)), Arr(PROBS)), {"reduction": red}))
    c.append(("kl_div", (Arr(X), Arr(Y)), {"reduction": "sum", "log_target": True}))
    for red in REDUCTIONS:
        kw = {"reduction": red}
        c += [
            ("cosine_embedding_loss", (Arr(X), Arr(Y), SIGNS), {**kw, "margin": 0.2}),
            ("cosine_embedding_loss", (Arr(X[0]), Arr(Y[0]), np.array(SIGNS[0])), kw),
            ("margin_ranking_loss", (Arr(X[0]), Arr(Y[0]), SIGNS6[0]), {**kw, "margin": 0.3}),
            ("triplet_margin_loss", (Arr(X), Arr(Y), Arr(Z)), kw),
            ("triplet_margin_loss", (Arr(X), Arr(Y), Arr(Z)), {**kw, "swap": True, "p": 1.5}),
            ("hinge_embedding_loss", (Arr(X), SIGNS6), {**kw, "margin": 0.5}),
            ("gaussian_nll_loss", (Arr(X), Arr(Y), Arr(VAR)), {**kw, "full": True}),
            ("gaussian_nll_loss", (Arr(X), Arr(Y), Arr(VAR[:, 0])), kw),
            ("gaussian_nll_loss", (Arr(X), Arr(Y), Arr(VAR[:, :1])), {**kw, "eps": 0.5}),
            ("poisson_nll_loss", (Arr(X), PROBS * 3), {**kw, "full": True}),
            ("poisson_nll_loss", (Arr(PROBS), PROBS * 3), {**kw, "log_input": False}),
            ("soft_margin_loss", (Arr(X), SIGNS6), kw),
            ("multilabel_soft_margin_loss", (Arr(X), (SIGNS6 > 0) * 1.0), kw),
            ("multilabel_soft_margin_loss", (Arr(X), PROBS), {**kw, "weight": PROBS[0]}),
            ("multi_margin_loss", (Arr(X), np.array([0, 3, 5, 2])), kw),
            ("multi_margin_loss", (Arr(X[0]), np.array(3)), kw),
            (
                "multi_margin_loss",
                (Arr(X), np.array([0, 3, 5, 2]), 2, 0.8, PROBS[0]),
                kw,
            ),
            (
                "ctc_loss",
                (Arr(LOG_P), np.array([[1, 2, 2], [3, 1, 4], [1, 1, 1]]), (8, 7, 8), (3, 2, 0)),
                kw,
            ),
            (
                "ctc_loss",
                (
                    Arr(LOG_P),
                    np.array([1, 2, 2, 3, 1, 1]),
                    np.array([8, 7, 8]),
                    np.array([3, 2, 1]),
                ),
                {**kw, "blank": 4},
            ),
            (
                "ctc_loss",
                (Arr(LOG_P[:2]), np.array([[1, 1, 1], [1, 2, 1], [3, 3, 3]]), (2, 2, 2), (3, 1, 1)),
                {**kw, "zero_infinity": True},
            ),
            ("ctc_loss", (Arr(LOG_P[:, 0]), np.array([1, 2, 2]), (8,), (3,)), kw),
        ]
    c += [
        ("cosine_similarity", (Arr(X), Arr(Y)), {}),
        ("cosine_similarity", (Arr(X), Arr(Y[:1])), {"dim": 1, "eps": 1e-3}),
        ("cosine_similarity", (Arr(X), Arr(Y)), {"dim": 0}),
        ("pairwise_distance", (Arr(X), Arr(Y)), {}),
        ("pairwise_distance", (Arr(X), Arr(Y)), {"p": 3, "keepdim": True}),
        ("pairwise_distance", (Arr(X), Arr(Y[0])), {"p": 1.0, "eps": 0.0}),
    ]
    return c


CASES = _cases()
IDS = [f"{n}-{i}" for i, (n, _, _) in enumerate(CASES)]


def _call(lib, name, args, kw):
    args, leaves = _args(lib, args)
    kw = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(lib.nn.functional, name)(*args, **kw), leaves


@pytest.mark.parametrize("name,args,kw", CASES, ids=IDS)
def test_functional_matches_pytorch(name, args, kw):
    out_a, leaves_a = _call(ng, name, args, kw)
    out_b, leaves_b = _call(torch, name, args, kw)
    np.testing.assert_allclose(out_a.detach().numpy(), out_b.detach().numpy(), **TOL)
    assert out_a.grad_fn.name() == out_b.grad_fn.name()
    g = np.random.default_rng(1).standard_normal(tuple(out_b.shape))
    ga = ng.autograd.grad(out_a, leaves_a, ng.tensor(g))
    gb = torch.autograd.grad(out_b, leaves_b, torch.tensor(g))
    for u, v in zip(ga, gb):
        np.testing.assert_allclose(u.numpy(), v.numpy(), **TOL)


SECOND_ORDER = [
    ("kl_div", (Arr(np.log(PROBS)), Arr(PROBS)), {"reduction": "batchmean"}),
    ("cosine_embedding_loss", (Arr(X), Arr(Y), SIGNS), {"margin": -0.5}),
    ("triplet_margin_loss", (Arr(X), Arr(Y), Arr(Z)), {"margin": 3.0, "p": 3}),
    ("gaussian_nll_loss", (Arr(X), Arr(Y), Arr(VAR)), {}),
    ("poisson_nll_loss", (Arr(X), PROBS * 3), {"reduction": "sum"}),
    ("soft_margin_loss", (Arr(X), SIGNS6), {"reduction": "none"}),
    ("multilabel_soft_margin_loss", (Arr(X), PROBS), {}),
    ("cosine_similarity", (Arr(X), Arr(Y)), {}),
    ("pairwise_distance", (Arr(X), Arr(Y)), {"p": 1.5}),
]


@pytest.mark.parametrize("name,args,kw", SECOND_ORDER, ids=[c[0] for c in SECOND_ORDER])
def test_second_order_matches_pytorch(name, args, kw):
    out_a, leaves_a = _call(ng, name, args, kw)
    out_b, leaves_b = _call(torch, name, args, kw)
    g = np.random.default_rng(2).standard_normal(tuple(out_b.shape))
    ga = ng.autograd.grad(out_a, leaves_a, ng.tensor(g), create_graph=True)
    gb = torch.autograd.grad(out_b, leaves_b, torch.tensor(g), create_graph=True)
    gga = ng.autograd.grad(sum((u * u).sum() for u in ga), leaves_a)
    ggb = torch.autograd.grad(sum((u * u).sum() for u in gb), leaves_b)
    for u, v in zip(gga, ggb):
        np.testing.assert_allclose(u.numpy(), v.numpy(), **TOL)


@pytest.mark.parametrize(
    "name,args,kw",
    [
        ("kl_div", (Arr(np.log(PROBS[:2, :3])), Arr(PROBS[:2, :3])), {"reduction": "batchmean"}),
        ("cosine_embedding_loss", (Arr(X[:2, :3]), Arr(Y[:2, :3]), SIGNS[:2]), {}),
        ("triplet_margin_loss", (Arr(X[:2, :3]), Arr(Y[:2, :3]), Arr(Z[:2, :3])), {"margin": 5.0}),
        ("gaussian_nll_loss", (Arr(X[:2, :3]), Arr(Y[:2, :3]), Arr(VAR[:2, :3])), {}),
        ("soft_margin_loss", (Arr(X[:2, :3]), SIGNS6[:2, :3]), {}),
        ("multi_margin_loss", (Arr(X[:2, :3] * 0.1), np.array([0, 2]), 2), {}),
        ("cosine_similarity", (Arr(X[:2, :3]), Arr(Y[:2, :3])), {}),
        ("pairwise_distance", (Arr(X[:2, :3]), Arr(Y[:2, :3])), {}),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_gradcheck(name, args, kw):
    base, leaves = _args(ng, args)
    idx = [i for i, a in enumerate(args) if isinstance(a, Arr)]

    def f(*xs):
        full = list(base)
        for i, x in zip(idx, xs):
            full[i] = x
        return getattr(ng.nn.functional, name)(*full, **kw)

    assert ng.autograd.gradcheck(f, tuple(leaves))
    if name != "multi_margin_loss":  # PyTorch has no double backward for it
        assert ng.autograd.gradgradcheck(f, tuple(leaves))


def test_ctc_gradcheck_through_log_softmax():
    """The CTC row's gradient is PyTorch's (w.r.t. the logits under a log_softmax), so check
    it numerically through ``log_softmax``."""
    logits = ng.tensor(np.random.default_rng(3).standard_normal((5, 2, 4)), requires_grad=True)
    targets = ng.tensor([[1, 2], [3, 3]])

    def f(x):
        return ng.nn.functional.ctc_loss(x.log_softmax(2), targets, (5, 4), (2, 2))

    assert ng.autograd.gradcheck(f, (logits,))


MODULES = [
    ("KLDivLoss", (), {}),
    ("KLDivLoss", (), {"reduction": "batchmean", "log_target": True}),
    ("CosineEmbeddingLoss", (0.5,), {"reduction": "sum"}),
    ("MarginRankingLoss", (), {"margin": 0.1}),
    ("TripletMarginLoss", (), {"swap": True}),
    ("HingeEmbeddingLoss", (2.0,), {}),
    ("GaussianNLLLoss", (), {"full": True}),
    ("PoissonNLLLoss", (False,), {}),
    ("SoftMarginLoss", (), {"reduction": "none"}),
    ("MultiLabelSoftMarginLoss", (), {}),
    ("MultiMarginLoss", (2, 0.5), {}),
    ("CTCLoss", (), {"blank": 3, "zero_infinity": True}),
    ("CosineSimilarity", (0,), {}),
    ("PairwiseDistance", (1.0,), {"keepdim": True}),
]
MODULE_INPUTS = {
    "KLDivLoss": (np.log(PROBS), PROBS),
    "CosineEmbeddingLoss": (X, Y, SIGNS),
    "MarginRankingLoss": (X[0], Y[0], SIGNS6[0]),
    "TripletMarginLoss": (X, Y, Z),
    "HingeEmbeddingLoss": (X, SIGNS6),
    "GaussianNLLLoss": (X, Y, VAR),
    "PoissonNLLLoss": (PROBS, PROBS * 2),
    "SoftMarginLoss": (X, SIGNS6),
    "MultiLabelSoftMarginLoss": (X, PROBS),
    "MultiMarginLoss": (X, np.array([1, 2, 3, 4])),
    "CTCLoss": (LOG_P, np.array([[1, 2, 2], [0, 1, 4], [1, 1, 1]]), (8, 7, 8), (3, 2, 1)),
    "CosineSimilarity": (X, Y),
    "PairwiseDistance": (X, Y),
}


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
@pytest.mark.parametrize("name,args,kw", MODULES, ids=[m[0] for m in MODULES])
def test_module_repr_and_forward_match_pytorch(name, args, kw):
    ours, theirs = getattr(ng.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    assert ours.reduction == theirs.reduction if hasattr(theirs, "reduction") else True
    inputs = MODULE_INPUTS[name]
    a, _ = _args(ng, inputs)
    b, _ = _args(torch, inputs)
    np.testing.assert_allclose(ours(*a).numpy(), theirs(*b).numpy(), **TOL)


def test_kl_div_mean_warns_as_pytorch():
    for lib in (ng, torch):
        with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
            lib.nn.functional.kl_div(lib.tensor(X), lib.tensor(PROBS))


def _raises_like(call):
    with pytest.raises(Exception) as expected:
        call(torch)
    with pytest.raises(type(expected.value)) as got:
        call(ng)
    return str(got.value), str(expected.value)


def _t(lib, a):
    return lib.tensor(a)


ERRORS = {
    "reduction": lambda lib: lib.nn.functional.soft_margin_loss(
        _t(lib, X), _t(lib, Y), reduction="avg"
    ),
    "kl-reduction": lambda lib: lib.nn.functional.kl_div(_t(lib, X), _t(lib, Y), reduction="x"),
    "hinge-reduction": lambda lib: lib.nn.functional.hinge_embedding_loss(
        _t(lib, X), _t(lib, Y), reduction="x"
    ),
    "poisson-reduction": lambda lib: lib.nn.functional.poisson_nll_loss(
        _t(lib, X), _t(lib, Y), reduction="x"
    ),
    "gaussian-reduction": lambda lib: lib.nn.functional.gaussian_nll_loss(
        _t(lib, X), _t(lib, Y), _t(lib, VAR), reduction="x"
    ),
    "multilabel-reduction": lambda lib: lib.nn.functional.multilabel_soft_margin_loss(
        _t(lib, X), _t(lib, Y), reduction="x"
    ),
    "gaussian-var-size": lambda lib: lib.nn.functional.gaussian_nll_loss(
        _t(lib, X), _t(lib, Y), _t(lib, VAR[:2, :2])
    ),
    "gaussian-var-negative": lambda lib: lib.nn.functional.gaussian_nll_loss(
        _t(lib, X), _t(lib, Y), _t(lib, -VAR)
    ),
    "ranking-dims": lambda lib: lib.nn.functional.margin_ranking_loss(
        _t(lib, X), _t(lib, Y), _t(lib, SIGNS)
    ),
    "triplet-margin": lambda lib: lib.nn.functional.triplet_margin_loss(
        _t(lib, X), _t(lib, Y), _t(lib, Z), margin=0.0
    ),
    "triplet-dims": lambda lib: lib.nn.functional.triplet_margin_loss(
        _t(lib, X), _t(lib, Y[0]), _t(lib, Z)
    ),
    "cosine-embedding-target": lambda lib: lib.nn.functional.cosine_embedding_loss(
        _t(lib, X), _t(lib, Y), _t(lib, SIGNS6)
    ),
    "cosine-embedding-1d": lambda lib: lib.nn.functional.cosine_embedding_loss(
        _t(lib, X), _t(lib, Y), _t(lib, np.array(SIGNS[0]))
    ),
    "multi-margin-p": lambda lib: lib.nn.functional.multi_margin_loss(
        _t(lib, X), _t(lib, np.array([0, 1, 2, 3])), p=3
    ),
    "multi-margin-target": lambda lib: lib.nn.functional.multi_margin_loss(
        _t(lib, X), _t(lib, np.array([0, 1]))
    ),
    "multi-margin-weight": lambda lib: lib.nn.functional.multi_margin_loss(
        _t(lib, X), _t(lib, np.array([0, 1, 2, 3])), weight=_t(lib, VAR)
    ),
    "ctc-input-length": lambda lib: lib.nn.functional.ctc_loss(
        _t(lib, LOG_P), _t(lib, np.ones((3, 2), np.int64)), (9, 8, 8), (2, 2, 2)
    ),
    "ctc-target-length": lambda lib: lib.nn.functional.ctc_loss(
        _t(lib, LOG_P), _t(lib, np.ones((3, 2), np.int64)), (8, 8, 8), (3, 2, 2)
    ),
    "soft-margin-target-grad": lambda lib: lib.nn.functional.soft_margin_loss(
        _t(lib, X), lib.tensor(Y, requires_grad=True)
    ),
    "triplet-module-margin": lambda lib: lib.nn.TripletMarginLoss(margin=-1.0),
    "multi-margin-module-p": lambda lib: lib.nn.MultiMarginLoss(p=3),
}


@pytest.mark.parametrize("key", list(ERRORS))
def test_errors_match_pytorch(key):
    ours, theirs = _raises_like(ERRORS[key])
    assert ours.replace("nbgrad.Size", "torch.Size") == theirs
