"""Recurrent layers against PyTorch: ``RNN``, ``LSTM``, ``GRU`` and their cells.

Each case builds the same module in both libraries (float64), loads torch's state dict into
nbgrad's, and compares every output, its ``grad_fn`` name, and the gradients of the inputs and of
every parameter for random upstream gradients (to 1e-6). Also: state_dict keys, reprs, default
initialisation, ``gradcheck``, errors, and a small character-level LSTM language model that
trains, whose first step equals torch's.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

TOL = dict(rtol=1e-6, atol=1e-6)


def _flat(out):
    """The tensors of a nested tuple output, in order."""
    if isinstance(out, tuple):
        return [t for o in out for t in _flat(o)]
    return [out]


def _nest(lib, structure, rng, arrays):
    """``structure``: a shape, a tuple of shapes (an LSTM's ``(h, c)``), or None."""
    if structure is None:
        return None
    if isinstance(structure[0], tuple):
        return tuple(_nest(lib, s, rng, arrays) for s in structure)
    arr = arrays.setdefault(id(structure), rng.standard_normal(structure))
    return lib.tensor(arr, requires_grad=True)


def _leaves(x):
    if x is None:
        return []
    if isinstance(x, tuple):
        return [t for v in x for t in _leaves(v)]
    return [x]


def copy_weights(th_mod, ng_mod):
    state = {k: ng.tensor(v.detach().numpy()) for k, v in th_mod.state_dict().items()}
    ng_mod.load_state_dict(state)


def check_parity(make, specs, seed=0, train=False):
    """Build with ``make(lib)``, copy torch's weights across, compare outputs and gradients."""
    torch.manual_seed(seed)
    th_mod = make(torch).double().train(train)
    ng_mod = make(ng).double().train(train)
    assert list(ng_mod.state_dict()) == list(th_mod.state_dict())
    copy_weights(th_mod, ng_mod)
    rng = np.random.default_rng(seed)
    arrays = {}
    th_in = [_nest(torch, s, rng, arrays) for s in specs]
    ng_in = [_nest(ng, s, rng, arrays) for s in specs]
    th_out, ng_out = _flat(th_mod(*th_in)), _flat(ng_mod(*ng_in))
    assert len(ng_out) == len(th_out)
    for a, b in zip(ng_out, th_out):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **TOL)
        assert a.grad_fn.name() == b.grad_fn.name()
    upstream = [rng.standard_normal(tuple(t.shape)) for t in th_out]
    th_wrt = [t for x in th_in for t in _leaves(x)] + list(th_mod.parameters())
    ng_wrt = [t for x in ng_in for t in _leaves(x)] + list(ng_mod.parameters())
    th_grads = torch.autograd.grad(
        th_out, th_wrt, [torch.tensor(u) for u in upstream], allow_unused=True
    )
    ng_grads = ng.autograd.grad(ng_out, ng_wrt, [ng.tensor(u) for u in upstream], allow_unused=True)
    assert len(ng_grads) == len(th_grads) == len(th_wrt)
    for i, (a, b) in enumerate(zip(ng_grads, th_grads)):
        assert (a is None) == (b is None), i
        if a is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), err_msg=f"gradient {i}", **TOL)
    return ng_mod, th_mod


T, B, IN, H = 4, 3, 5, 6

CELLS = {
    "RNNCell": (lambda lib: lib.nn.RNNCell(IN, H), [(B, IN)]),
    "RNNCell-hx": (lambda lib: lib.nn.RNNCell(IN, H), [(B, IN), (B, H)]),
    "RNNCell-relu": (lambda lib: lib.nn.RNNCell(IN, H, nonlinearity="relu"), [(B, IN), (B, H)]),
    "RNNCell-nobias": (lambda lib: lib.nn.RNNCell(IN, H, bias=False), [(B, IN), (B, H)]),
    "RNNCell-unbatched": (lambda lib: lib.nn.RNNCell(IN, H), [(IN,), (H,)]),
    "LSTMCell": (lambda lib: lib.nn.LSTMCell(IN, H), [(B, IN)]),
    "LSTMCell-hx": (lambda lib: lib.nn.LSTMCell(IN, H), [(B, IN), ((B, H), (B, H))]),
    "LSTMCell-nobias": (lambda lib: lib.nn.LSTMCell(IN, H, False), [(B, IN), ((B, H), (B, H))]),
    "LSTMCell-unbatched": (lambda lib: lib.nn.LSTMCell(IN, H), [(IN,), ((H,), (H,))]),
    "GRUCell": (lambda lib: lib.nn.GRUCell(IN, H), [(B, IN)]),
    "GRUCell-hx": (lambda lib: lib.nn.GRUCell(IN, H), [(B, IN), (B, H)]),
    "GRUCell-nobias": (lambda lib: lib.nn.GRUCell(IN, H, bias=False), [(B, IN), (B, H)]),
    "GRUCell-unbatched": (lambda lib: lib.nn.GRUCell(IN, H), [(IN,)]),
}


def _rnn_cases():
    cases = {}
    for name in ("RNN", "LSTM", "GRU"):
        lstm = name == "LSTM"

        def hx(layers, batch, size=H, cell=H, lstm=lstm):
            lead = (layers,) if batch is None else (layers, batch)
            return ((lead + (size,)), (lead + (cell,))) if lstm else lead + (size,)

        def mk(name=name, **kw):
            return lambda lib: getattr(lib.nn, name)(IN, H, **kw)

        cases[f"{name}"] = (mk(), [(T, B, IN)])
        cases[f"{name}-hx"] = (mk(), [(T, B, IN), hx(1, B)])
        cases[f"{name}-2layers"] = (mk(num_layers=2), [(T, B, IN), hx(2, B)])
        cases[f"{name}-bidir"] = (mk(bidirectional=True), [(T, B, IN), hx(2, B)])
        cases[f"{name}-2layers-bidir"] = (
            mk(num_layers=2, bidirectional=True),
            [(T, B, IN), hx(4, B)],
        )
        cases[f"{name}-batch_first"] = (mk(batch_first=True, num_layers=2), [(B, T, IN)])
        cases[f"{name}-batch_first-bidir"] = (
            mk(batch_first=True, bidirectional=True),
            [(B, T, IN), hx(2, B)],
        )
        cases[f"{name}-nobias"] = (mk(bias=False, num_layers=2), [(T, B, IN)])
        cases[f"{name}-unbatched"] = (mk(num_layers=2), [(T, IN), hx(2, None)])
        cases[f"{name}-unbatched-batch_first"] = (mk(batch_first=True), [(T, IN)])
        cases[f"{name}-dropout-eval"] = (mk(num_layers=2, dropout=0.5), [(T, B, IN)])
    cases["RNN-relu"] = (lambda lib: lib.nn.RNN(IN, H, 2, "relu"), [(T, B, IN)])
    cases["LSTM-proj"] = (
        lambda lib: lib.nn.LSTM(IN, H, num_layers=2, bidirectional=True, proj_size=2),
        [(T, B, IN), ((4, B, 2), (4, B, H))],
    )
    cases["LSTM-proj-batch_first"] = (
        lambda lib: lib.nn.LSTM(IN, H, batch_first=True, proj_size=3),
        [(B, T, IN)],
    )
    return cases


RNNS = _rnn_cases()


@pytest.mark.parametrize("case", sorted(CELLS))
def test_cell_matches_pytorch(case):
    make, specs = CELLS[case]
    check_parity(make, specs)


@pytest.mark.parametrize("case", sorted(RNNS))
def test_rnn_matches_pytorch(case):
    make, specs = RNNS[case]
    check_parity(make, specs)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_dropout_one_in_training_matches_pytorch(name):
    """With dropout 1 the second layer sees zeros in both libraries: a deterministic check
    that dropout is applied between layers (and only there) in training mode."""
    check_parity(lambda lib: getattr(lib.nn, name)(IN, H, 3, dropout=1.0), [(T, B, IN)], train=True)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_dropout_between_layers_is_random_in_training(name):
    ng.manual_seed(0)
    layer = getattr(ng.nn, name)(IN, H, 2, dropout=0.5).double()
    x = ng.randn(T, B, IN, dtype=ng.float64)
    first, second = layer(x)[0], layer(x)[0]
    assert not np.allclose(first.detach().numpy(), second.detach().numpy())
    layer.eval()
    # eval mode: the same kernels on the same inputs twice, the same bits
    np.testing.assert_array_equal(layer(x)[0].detach().numpy(), layer(x)[0].detach().numpy())


@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.LSTM(3, 4, num_layers=2, bias=False, bidirectional=True, proj_size=2),
        lambda nn: nn.GRU(3, 4, 3, batch_first=True, dropout=0.25),
        lambda nn: nn.RNN(3, 4, 1, "relu", False, True),
        lambda nn: nn.RNNCell(3, 4, False, "relu"),
        lambda nn: nn.LSTMCell(3, 4),
        lambda nn: nn.GRUCell(3, 4, bias=False),
    ],
)
def test_state_dict_keys_shapes_and_repr_match_pytorch(make):
    ours, theirs = make(ng.nn), make(torch.nn)
    assert repr(ours) == repr(theirs)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in theirs.state_dict().items()
    ]
    if hasattr(theirs, "all_weights"):
        assert [[tuple(p.shape) for p in ws] for ws in ours.all_weights] == [
            [tuple(p.shape) for p in ws] for ws in theirs.all_weights
        ]
        assert ours._flat_weights_names == theirs._flat_weights_names


@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.LSTM(4, 8, num_layers=2, bidirectional=True),
        lambda nn: nn.GRU(4, 3),
        lambda nn: nn.RNN(4, 25),
        lambda nn: nn.LSTM(4, 8, proj_size=3),
        lambda nn: nn.LSTMCell(4, 8),
        lambda nn: nn.GRUCell(2, 5),
    ],
)
def test_default_init_is_uniform_with_pytorch_bound(make):
    ng.manual_seed(0)
    draws = {}
    for _ in range(200):
        for name, p in make(ng.nn).named_parameters():
            draws.setdefault(name, []).append(p.detach().numpy())
    hidden = make(torch.nn).hidden_size
    bound = 1 / np.sqrt(hidden)
    for name, values in draws.items():
        v = np.stack(values)
        assert v.min() >= -bound and v.max() <= bound, name
        assert v.min() < -0.95 * bound and v.max() > 0.95 * bound, name
        assert abs(v.mean()) < 5 * bound / np.sqrt(3 * v.size), name
        assert abs(v.std() / (bound / np.sqrt(3)) - 1) < 0.05, name


def _gradcheck_module(module, *inputs):
    """gradcheck w.r.t. the inputs and every parameter (perturbed in place by gradcheck)."""
    params = list(module.parameters())
    n = len(inputs)

    def f(*args):
        return tuple(_flat(module(*args[:n])))

    return ng.autograd.gradcheck(f, tuple(inputs) + tuple(params))


@pytest.mark.parametrize(
    "make, hx",
    [
        (lambda: ng.nn.RNN(2, 3, 2, bidirectional=True), lambda: ng.randn(4, 2, 3)),
        (lambda: ng.nn.LSTM(2, 3, proj_size=2), lambda: (ng.randn(1, 2, 2), ng.randn(1, 2, 3))),
        (lambda: ng.nn.GRU(2, 3, batch_first=True), lambda: ng.randn(1, 3, 3)),
    ],
)
def test_gradcheck_layers(make, hx):
    ng.manual_seed(0)
    module = make().double()
    x = ng.randn(3, 2, 2, dtype=ng.float64, requires_grad=True)
    h = hx()
    h = (
        tuple(t.double().requires_grad_() for t in h)
        if isinstance(h, tuple)
        else h.double().requires_grad_()
    )
    if isinstance(h, tuple):
        assert _gradcheck_module(_TupleArgs(module), x, *h)
    else:
        assert _gradcheck_module(module, x, h)


class _TupleArgs(ng.nn.Module):
    """``module(x, h, c)`` -> ``module(x, (h, c))`` (gradcheck takes flat tensors)."""

    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x, h, c):
        return self.module(x, (h, c))


@pytest.mark.parametrize("cell", ["RNNCell", "LSTMCell", "GRUCell"])
def test_gradcheck_cells(cell):
    ng.manual_seed(0)
    module = getattr(ng.nn, cell)(3, 2).double()
    x = ng.randn(2, 3, dtype=ng.float64, requires_grad=True)
    h = ng.randn(2, 2, dtype=ng.float64, requires_grad=True)
    if cell == "LSTMCell":
        c = ng.randn(2, 2, dtype=ng.float64, requires_grad=True)
        assert _gradcheck_module(_TupleArgs(module), x, h, c)
    else:
        assert _gradcheck_module(module, x, h)


def test_second_order_gradient_through_lstm_matches_pytorch():
    torch.manual_seed(1)
    th = torch.nn.LSTM(3, 4).double()
    ours = ng.nn.LSTM(3, 4).double()
    copy_weights(th, ours)
    xs = np.random.default_rng(1).standard_normal((3, 2, 3))
    results = []
    for lib, mod in ((torch, th), (ng, ours)):
        x = lib.tensor(xs, requires_grad=True)
        out = mod(x)[0]
        (g,) = lib.autograd.grad((out**2).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g**2).sum(), x)
        results.append(gg.detach().numpy())
    np.testing.assert_allclose(results[1], results[0], **TOL)


@pytest.mark.parametrize(
    "call",
    [
        lambda nn: nn.LSTM(3, 4)(torch_or_ng(nn).randn(2, 2, 2, 3)),
        lambda nn: nn.GRU(3, 4)(torch_or_ng(nn).randn(5, 2, 2)),
        lambda nn: nn.RNN(3, 4)(torch_or_ng(nn).randn(5, 2, 3), torch_or_ng(nn).randn(2, 2, 4)),
        lambda nn: nn.RNN(3, 4)(torch_or_ng(nn).randn(5, 2, 3), torch_or_ng(nn).randn(2, 4)),
        lambda nn: nn.RNN(3, 4, nonlinearity="sigmoid"),
        lambda nn: nn.GRU(3, 4, proj_size=2),
        lambda nn: nn.LSTM(3, 4, proj_size=4),
        lambda nn: nn.LSTM(3, 4, dropout=1.5),
        lambda nn: nn.RNNCell(3, 4)(torch_or_ng(nn).randn(2, 2, 3)),
        lambda nn: nn.GRUCell(3, 4)(torch_or_ng(nn).randn(2, 3), torch_or_ng(nn).randn(1, 2, 4)),
        lambda nn: nn.LSTM(3, 4)(torch_or_ng(nn).randn(5, 3).double()),
        lambda nn: nn.LSTM(3, 4)(
            torch_or_ng(nn).randn(5, 2, 3),
            (torch_or_ng(nn).randn(2, 4), torch_or_ng(nn).randn(1, 2, 4)),
        ),
        lambda nn: nn.LSTM(3, 4)(
            torch_or_ng(nn).randn(5, 3), (torch_or_ng(nn).randn(1, 4), torch_or_ng(nn).randn(4))
        ),
        lambda nn: nn.LSTM(3, 4, 2)(
            torch_or_ng(nn).randn(5, 2, 3),
            (torch_or_ng(nn).randn(2, 2, 4), torch_or_ng(nn).randn(1, 2, 4)),
        ),
        lambda nn: nn.LSTMCell(3, 4)(
            torch_or_ng(nn).randn(2, 3), (torch_or_ng(nn).randn(2, 2, 4),) * 2
        ),
        lambda nn: nn.RNN(3, 4)(torch_or_ng(nn).randn(5, 2, 4)),
    ],
)
def test_errors_match_pytorch(call):
    with pytest.raises(Exception) as theirs:
        call(torch.nn)
    with pytest.raises(type(theirs.value)) as ours:
        call(ng.nn)
    assert str(ours.value) == str(theirs.value).replace("torch.", "nbgrad.")


def torch_or_ng(nn):
    return torch if nn is torch.nn else ng


def test_dropout_with_one_layer_warns_as_pytorch():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        ng.nn.GRU(3, 4, dropout=0.2)


# ---- a character-level LSTM language model ------------------------------------------------------
TEXT = (
    "the quick brown fox jumps over the lazy dog. the dog sleeps; the fox runs. "
    "a fox and a dog are friends, and the friends run over the hills together. "
) * 2


class CharLM:
    """Embedding -> LSTM -> Linear, built in either library."""

    @staticmethod
    def build(lib, vocab):
        class Model(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = lib.nn.Embedding(vocab, 16)
                self.lstm = lib.nn.LSTM(16, 32, batch_first=True)
                self.head = lib.nn.Linear(32, vocab)

            def forward(self, x):
                out, _ = self.lstm(self.embed(x))
                return self.head(out)

        return Model()


def _char_batches(text, seq_len):
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text], dtype=np.int64)
    starts = np.arange(0, len(ids) - seq_len - 1, seq_len)
    x = np.stack([ids[s : s + seq_len] for s in starts])
    y = np.stack([ids[s + 1 : s + seq_len + 1] for s in starts])
    return len(chars), x, y


def test_char_lstm_first_step_matches_pytorch():
    vocab, x, y = _char_batches(TEXT, 16)
    torch.manual_seed(0)
    th = CharLM.build(torch, vocab).double()
    ours = CharLM.build(ng, vocab).double()
    copy_weights(th, ours)
    th_loss = torch.nn.functional.cross_entropy(
        th(torch.tensor(x)).flatten(0, 1), torch.tensor(y).flatten()
    )
    ng_loss = ng.nn.functional.cross_entropy(
        ours(ng.tensor(x)).flatten(0, 1), ng.tensor(y).flatten()
    )
    th_loss.backward()
    ng_loss.backward()
    np.testing.assert_allclose(ng_loss.item(), th_loss.item(), **TOL)
    th_params = dict(th.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(
            p.grad.numpy(), th_params[name].grad.numpy(), err_msg=name, **TOL
        )


def test_char_lstm_language_model_trains():
    vocab, x, y = _char_batches(TEXT, 16)
    ng.manual_seed(0)
    model = CharLM.build(ng, vocab)
    optimizer = ng.optim.Adam(model.parameters(), lr=2e-2)
    inputs, targets = ng.tensor(x), ng.tensor(y).flatten()
    losses = []
    start = time.perf_counter()
    for _ in range(30):
        optimizer.zero_grad()
        loss = ng.nn.functional.cross_entropy(model(inputs).flatten(0, 1), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    elapsed = time.perf_counter() - start
    print(f"char LSTM: loss {losses[0]:.3f} -> {losses[-1]:.3f} in {elapsed:.2f} s")
    assert losses[-1] < losses[0] / 2
    assert elapsed < 30
