"""Tests of ``nbgrad/nn/modules/module.py``: registration, iterators, modes, state dicts, ``to``
and ``repr``, against PyTorch where it has the same API (``torch`` as the oracle)."""

from __future__ import annotations

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import nbgrad as ng
from nbgrad.autograd.graph import hook_inventory

torch = pytest.importorskip("torch")


def build(lib):
    """The same nested model in nbgrad or torch."""
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU())
            self.norm = nn.LayerNorm(2)
            self.emb = nn.Embedding(5, 2, padding_idx=0)
            self.heads = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
            self.loss = nn.CrossEntropyLoss(weight=lib.ones(2))
            self.register_buffer("steps", lib.zeros(1))
            self.register_buffer("scratch", lib.zeros(1), persistent=False)
            self.scale = nn.Parameter(lib.ones(1))

        def forward(self, x):
            return self.heads[0](self.norm(x)) * self.scale

    return Net()


def test_named_members_match_torch():
    ng_net, th_net = build(ng), build(torch)
    assert [n for n, _ in ng_net.named_parameters()] == [n for n, _ in th_net.named_parameters()]
    assert [n for n, _ in ng_net.named_buffers()] == [n for n, _ in th_net.named_buffers()]
    assert [n for n, _ in ng_net.named_modules()] == [n for n, _ in th_net.named_modules()]
    assert [n for n, _ in ng_net.named_children()] == [n for n, _ in th_net.named_children()]
    assert [tuple(p.shape) for p in ng_net.parameters()] == [
        tuple(p.shape) for p in th_net.parameters()
    ]
    assert len(list(ng_net.modules())) == len(list(th_net.modules()))
    assert [n for n, _ in ng_net.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in ng_net.heads.named_parameters(prefix="h")][:2] == [
        "h.0.weight",
        "h.0.bias",
    ]


def test_state_dict_keys_and_repr_match_torch():
    ng_net, th_net = build(ng), build(torch)
    assert list(ng_net.state_dict()) == list(th_net.state_dict())
    assert "scratch" not in ng_net.state_dict()
    assert repr(ng_net) == repr(th_net)


def test_repr_of_layers_matches_torch():
    def layers(nn):
        return nn.Sequential(
            nn.Linear(3, 4, bias=False),
            nn.Conv2d(2, 4, (3, 2), stride=2, padding=1, dilation=2, groups=2, bias=False),
            nn.Conv2d(1, 1, 3, padding="same"),
            nn.ReLU(inplace=True),
            nn.Tanh(),
            nn.Sigmoid(),
            nn.GELU(approximate="tanh"),
            nn.Softmax(dim=1),
            nn.LogSoftmax(1),
            nn.Dropout(0.2),
            nn.Embedding(10, 3, padding_idx=2, max_norm=1.0),
            nn.LayerNorm((2, 3), eps=1e-3),
            nn.Flatten(),
            nn.Identity(),
            nn.MSELoss(),
            nn.NLLLoss(),
            nn.CrossEntropyLoss(),
            nn.ModuleList([nn.Tanh(), nn.Tanh(), nn.ReLU()]),
            nn.ModuleList(),
            nn.Sequential(OrderedDict(first=nn.Linear(1, 1))),
        )

    assert repr(layers(ng.nn)) == repr(layers(torch.nn))


def test_attribute_registration():
    m = ng.nn.Module()
    m.w = ng.nn.Parameter(ng.ones(2))
    m.child = ng.nn.Linear(2, 2)
    m.register_buffer("buf", ng.zeros(2))
    m.plain = 3
    assert set(m._parameters) == {"w"} and set(m._modules) == {"child"}
    assert set(m._buffers) == {"buf"} and m.plain == 3
    m.w = None  # a parameter slot may be cleared
    assert m.w is None and list(m.parameters(recurse=False)) == []
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'w'"):
        m.w = ng.ones(2)
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'child'"):
        m.child = 1
    m.buf = ng.ones(3)  # a buffer may be replaced by any tensor
    assert m.buf.shape == (3,)
    with pytest.raises(TypeError, match="as buffer 'buf'"):
        m.buf = 1.0
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("plain", ng.zeros(1))
    with pytest.raises(KeyError, match="contain"):
        m.register_parameter("a.b", ng.nn.Parameter(ng.ones(1)))
    with pytest.raises(TypeError, match="nbgrad.nn.Parameter or None required"):
        m.register_parameter("q", ng.ones(1))
    with pytest.raises(AttributeError, match="object has no attribute 'nothing'"):
        _ = m.nothing
    del m.child
    assert "child" not in m._modules
    # a Parameter assigned where a buffer was moves to the parameters
    m.buf = ng.nn.Parameter(ng.ones(1))
    assert "buf" in m._parameters and "buf" not in m._buffers


def test_attributes_before_init_raise():
    class Early(ng.nn.Module):
        def __init__(self):
            self.w = ng.nn.Parameter(ng.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_shared_parameters_are_listed_once():
    lin = ng.nn.Linear(2, 2)
    seq = ng.nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    names = [n for n, _ in seq.named_parameters(remove_duplicate=False)]
    assert names == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert len(list(seq.modules())) == 2


def test_train_eval_recursive_and_dropout():
    net = ng.nn.Sequential(ng.nn.Linear(4, 4), ng.nn.Sequential(ng.nn.Dropout(0.5)))
    assert net.eval() is net
    assert all(not m.training for m in net.modules())
    x = ng.randn(3, 4)
    assert net[1](x) is x  # Dropout in eval mode is the identity
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")


def test_zero_grad_sets_none_by_default():
    lin = ng.nn.Linear(3, 2)
    lin(ng.randn(4, 3)).sum().backward()
    assert lin.weight.grad is not None
    lin.zero_grad(set_to_none=False)
    # zeros written, not computed
    np.testing.assert_array_equal(lin.weight.grad.numpy(), 0)
    lin.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None


def test_requires_grad_and_apply():
    lin = ng.nn.Linear(2, 2)
    lin.requires_grad_(False)
    assert not any(p.requires_grad for p in lin.parameters())
    seen = []
    ng.nn.Sequential(lin, ng.nn.ReLU()).apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "ReLU", "Sequential"]


def test_state_dict_round_trip_and_sharing():
    a, b = build(ng), build(ng)
    sd = a.state_dict()
    assert np.shares_memory(sd["heads.0.weight"].numpy(), a.heads[0].weight.detach().numpy())
    assert not sd["heads.0.weight"].requires_grad
    assert sd["heads.0.weight"] is not a.heads[0].weight
    assert a.state_dict(keep_vars=True)["heads.0.weight"] is a.heads[0].weight
    result = b.load_state_dict(sd)
    assert repr(result) == "<All keys matched successfully>"
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        # loading copies the values: the same bits
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=n)
    assert b.heads[0].weight is b.heads[0].weight  # loaded in place
    w = b.heads[0].weight
    b.load_state_dict(sd)
    assert b.heads[0].weight is w


def _load_error(lib, mutate, strict=True):
    net = build(lib)
    sd = OrderedDict(net.state_dict())
    mutate(sd, lib)
    try:
        result = net.load_state_dict(sd, strict=strict)
    except RuntimeError as e:
        return str(e).replace("torch.Size", "Size").replace("nbgrad.Size", "Size")
    return result


@pytest.mark.parametrize(
    "mutate",
    [
        lambda sd, lib: sd.pop("norm.weight"),
        lambda sd, lib: sd.__setitem__("extra", lib.zeros(1)),
        lambda sd, lib: sd.__setitem__("heads.7.weight", lib.zeros(1)),
        lambda sd, lib: (sd.pop("steps"), sd.__setitem__("norm.other", lib.zeros(1))),
        lambda sd, lib: sd.__setitem__("heads.1.bias", lib.zeros(3)),
        lambda sd, lib: sd.__setitem__("scale", 1.5),
    ],
    ids=["missing", "unexpected", "unexpected-child", "both", "size-mismatch", "not-a-tensor"],
)
def test_load_state_dict_errors_match_torch(mutate):
    ng_msg = _load_error(ng, mutate)
    th_msg = _load_error(torch, mutate)
    assert isinstance(ng_msg, str) and isinstance(th_msg, str)
    assert ng_msg == th_msg.replace("torch.Tensor", "nbgrad.Tensor")


def test_load_state_dict_non_strict_reports_keys_like_torch():
    def mutate(sd, lib):
        sd.pop("norm.bias")
        sd["unknown.weight"] = lib.zeros(1)

    ng_res = _load_error(ng, mutate, strict=False)
    th_res = _load_error(torch, mutate, strict=False)
    assert ng_res.missing_keys == th_res.missing_keys == ["norm.bias"]
    assert ng_res.unexpected_keys == th_res.unexpected_keys == ["unknown.weight"]
    assert repr(ng_res) == repr(th_res)


def test_load_state_dict_from_torch_weights():
    th_net = build(torch)
    ng_net = build(ng)
    sd = {k: ng.tensor(v.detach().numpy()) for k, v in th_net.state_dict().items()}
    ng_net.load_state_dict(sd)
    x = np.random.default_rng(0).standard_normal((3, 2)).astype(np.float32)
    np.testing.assert_allclose(
        ng_net(ng.tensor(x)).detach().numpy(),
        th_net(torch.tensor(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-6,
    )


def test_load_state_dict_assign():
    net = ng.nn.Linear(2, 2)
    new = {"weight": ng.ones(2, 2), "bias": ng.zeros(2)}
    net.load_state_dict(new, assign=True)
    assert isinstance(net.weight, ng.nn.Parameter) and net.weight.requires_grad
    # the tensor assigned, not computed
    np.testing.assert_array_equal(net.weight.detach().numpy(), 1)


def test_to_keeps_parameter_objects_and_resets_accumulators():
    net = ng.nn.Sequential(ng.nn.Linear(3, 2), ng.nn.LayerNorm(2))
    params = list(net.parameters())
    opt = ng.optim.SGD(net.parameters(), lr=0.1)
    net(ng.randn(4, 3)).sum().backward()  # creates float32 AccumulateGrads
    assert net.to(ng.float64) is net
    assert [p is q for p, q in zip(net.parameters(), params)] == [True] * len(params)
    assert all(p.dtype is ng.float64 for p in net.parameters())
    assert all(p.grad.dtype is ng.float64 for p in net.parameters())
    net.zero_grad()
    (net(ng.randn(4, 3, dtype=ng.float64)) ** 2).sum().backward()
    assert net[0].weight.grad.dtype is ng.float64
    before = net[0].weight.detach().clone()
    opt.step()
    assert not np.allclose(before.numpy(), net[0].weight.detach().numpy())
    net.float()
    assert net[0].weight.dtype is ng.float32
    with pytest.raises(TypeError, match="floating point"):
        net.to(ng.int64)
    buf_net = ng.nn.Module()
    buf_net.register_buffer("count", ng.zeros(2, dtype=ng.int64))
    buf_net.register_buffer("stat", ng.zeros(2))
    buf_net.to(dtype=ng.float64)
    assert buf_net.count.dtype is ng.int64 and buf_net.stat.dtype is ng.float64
    buf_net.to("cpu")
    assert buf_net.stat.device == ng.device("cpu")


def test_deepcopy_and_pickle():
    net = build(ng)
    # (copies and pickles below keep the values: the same bits)
    clone = copy.deepcopy(net)
    assert isinstance(clone.scale, ng.nn.Parameter)
    assert clone.scale is not net.scale
    np.testing.assert_array_equal(
        clone.heads[1].weight.detach().numpy(), net.heads[1].weight.detach().numpy()
    )
    with ng.no_grad():
        clone.scale.mul_(3)
    assert net.scale.item() == 1.0
    seq = ng.nn.Sequential(ng.nn.Linear(2, 3), ng.nn.LayerNorm(3))
    restored = pickle.loads(pickle.dumps(seq))
    assert list(restored.state_dict()) == list(seq.state_dict())
    assert isinstance(restored[0].weight, ng.nn.Parameter) and restored[0].weight.requires_grad
    np.testing.assert_array_equal(
        restored[0].weight.detach().numpy(), seq[0].weight.detach().numpy()
    )


def test_forward_not_implemented():
    with pytest.raises(NotImplementedError, match='missing the required "forward" function'):
        ng.nn.ModuleList([ng.nn.ReLU()])(ng.ones(1))


def test_get_submodule_and_parameter():
    net = build(ng)
    assert net.get_submodule("heads.2") is net.heads[2]
    assert net.get_parameter("heads.2.bias") is net.heads[2].bias
    with pytest.raises(AttributeError):
        net.get_submodule("heads.9")


def test_sequential_and_module_list_containers():
    layers = [ng.nn.Linear(2, 2), ng.nn.ReLU(), ng.nn.Linear(2, 1)]
    seq = ng.nn.Sequential(*layers)
    assert len(seq) == 3 and seq[-1] is layers[2] and list(seq) == layers
    assert isinstance(seq[1:], ng.nn.Sequential) and list(seq[1:]) == layers[1:]
    del seq[1]
    assert list(seq._modules) == ["0", "1"] and seq[1] is layers[2]
    seq.append(ng.nn.Tanh())
    assert len(seq) == 3
    named = ng.nn.Sequential(OrderedDict(a=layers[0], b=layers[1]))
    assert named.a is layers[0] and list(named._modules) == ["a", "b"]
    with pytest.raises(IndexError):
        seq[5]
    ml = ng.nn.ModuleList(layers)
    ml.append(ng.nn.Tanh())
    ml.insert(0, ng.nn.Sigmoid())
    assert [type(m).__name__ for m in ml] == ["Sigmoid", "Linear", "ReLU", "Linear", "Tanh"]
    ml += [ng.nn.GELU()]
    assert len(ml) == 6 and len(list(ml.parameters())) == 4
    assert isinstance(ml[1:3], ng.nn.ModuleList) and len(ml[1:3]) == 2
    with pytest.raises(TypeError, match="iterable"):
        ml.extend(ng.nn.ReLU())


def test_parameter_is_a_tensor_subclass():
    p = ng.nn.Parameter(ng.tensor([1.0, -2.0]))
    assert isinstance(p, ng.Tensor) and p.is_leaf and p.requires_grad
    y = p * 2
    assert type(y) is ng.Tensor and y.grad_fn.name() == "MulBackward0"
    assert repr(p).startswith("Parameter containing:\ntensor([ 1., -2.]")
    assert str(p) == repr(p)
    assert not ng.nn.Parameter(ng.ones(1), requires_grad=False).requires_grad
    assert ng.nn.Parameter().shape == (0,)
    (p.relu() * ng.tensor([3.0, 3.0])).sum().backward()
    # exact: 3 * 1 and 0
    np.testing.assert_array_equal(p.grad.numpy(), [3.0, 0.0])
    # a Parameter shares memory with its source, as in PyTorch
    src = ng.zeros(2)
    q = ng.nn.Parameter(src)
    with ng.no_grad():
        q.add_(1.0)
    # 0 + 1, exact, through shared memory
    np.testing.assert_array_equal(src.numpy(), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="floating point"):
        ng.nn.Parameter(ng.tensor([1, 2]))
    # mixed with other dtypes, it promotes as a Tensor
    assert (ng.nn.Parameter(ng.ones(2, dtype=ng.float64)) * ng.ones(2)).dtype is ng.float64


def test_hook_inventory_lists_module_hooks():
    net = ng.nn.Sequential(ng.nn.Linear(2, 2), ng.nn.ReLU())
    h1 = net.register_forward_pre_hook(lambda m, a: None)
    h2 = net[0].register_forward_hook(lambda m, a, o: None)
    h3 = net[1].register_full_backward_pre_hook(lambda m, g: None)
    h4 = net[1].register_full_backward_hook(lambda m, gi, go: None)
    infos = hook_inventory(net)
    assert [(i.kind, i.target_kind, i.target, i.handle) for i in infos] == [
        ("forward_pre", "module", net, h1),
        ("forward", "module", net[0], h2),
        ("backward_pre", "module", net[1], h3),
        ("backward", "module", net[1], h4),
    ]
    h2.enabled = False
    assert [i.enabled for i in hook_inventory(net)] == [True, False, True, True]
    h1.remove()
    assert len(hook_inventory(net)) == 3
    assert all(isinstance(i.name, str) for i in infos)
