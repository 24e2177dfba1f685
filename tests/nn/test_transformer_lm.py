"""A 2-layer causal transformer language model (``Embedding`` -> ``TransformerEncoder`` with a
causal mask -> ``Linear``) on a tiny text: it trains, and its first step equals PyTorch's with
the same weights (float64). The LSTM version is in test_rnn."""

from __future__ import annotations

import time

import numpy as np
import pytest

import nbgrad as ng

torch = pytest.importorskip("torch")

TOL = dict(rtol=1e-6, atol=1e-6)

TEXT = (
    "the quick brown fox jumps over the lazy dog. the dog sleeps; the fox runs. "
    "a fox and a dog are friends, and the friends run over the hills together. "
) * 2


def build(lib, vocab, seq_len, d_model=32, nhead=4, ff=64):
    """Token and position embeddings, two causal encoder layers, a Linear head."""

    class Model(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = lib.nn.Embedding(vocab, d_model)
            self.pos = lib.nn.Embedding(seq_len, d_model)
            layer = lib.nn.TransformerEncoderLayer(
                d_model, nhead, ff, dropout=0.0, batch_first=True
            )
            self.encoder = lib.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = lib.nn.Linear(d_model, vocab)

        def forward(self, x):
            t = x.shape[1]
            h = self.embed(x) + self.pos(lib.arange(t))
            mask = lib.nn.Transformer.generate_square_subsequent_mask(t, dtype=h.dtype)
            return self.head(self.encoder(h, mask=mask, is_causal=True))

    return Model()


def _batches(text, seq_len):
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text], dtype=np.int64)
    starts = np.arange(0, len(ids) - seq_len - 1, seq_len)
    x = np.stack([ids[s : s + seq_len] for s in starts])
    y = np.stack([ids[s + 1 : s + seq_len + 1] for s in starts])
    return len(chars), x, y


def _copy_weights(th_mod, ng_mod):
    state = {k: ng.tensor(v.detach().numpy()) for k, v in th_mod.state_dict().items()}
    ng_mod.load_state_dict(state)


def test_transformer_lm_first_step_matches_pytorch():
    vocab, x, y = _batches(TEXT, 16)
    torch.manual_seed(0)
    th = build(torch, vocab, 16).double()
    ours = build(ng, vocab, 16).double()
    _copy_weights(th, ours)
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
    assert sorted(th_params) == sorted(n for n, _ in ours.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(
            p.grad.numpy(), th_params[name].grad.numpy(), err_msg=name, **TOL
        )


def test_transformer_lm_mask_is_causal():
    """Changing a later token leaves the logits of earlier positions unchanged."""
    vocab, x, _ = _batches(TEXT, 16)
    ng.manual_seed(0)
    model = build(ng, vocab, 16).double()
    a = ng.tensor(x[:2])
    b = x[:2].copy()
    b[:, 10] = (b[:, 10] + 1) % vocab
    out_a, out_b = model(a).detach().numpy(), model(ng.tensor(b)).detach().numpy()
    np.testing.assert_allclose(out_a[:, :10], out_b[:, :10], rtol=1e-12, atol=1e-12)
    assert np.abs(out_a[:, 10:] - out_b[:, 10:]).max() > 1e-6


def test_transformer_lm_trains():
    vocab, x, y = _batches(TEXT, 16)
    ng.manual_seed(0)
    model = build(ng, vocab, 16)
    optimizer = ng.optim.Adam(model.parameters(), lr=1e-2)
    inputs, targets = ng.tensor(x), ng.tensor(y).flatten()
    losses = []
    start = time.perf_counter()
    for _ in range(25):
        optimizer.zero_grad()
        loss = ng.nn.functional.cross_entropy(model(inputs).flatten(0, 1), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    elapsed = time.perf_counter() - start
    print(f"transformer LM: loss {losses[0]:.3f} -> {losses[-1]:.3f} in {elapsed:.2f} s")
    assert losses[-1] < losses[0] / 2
    assert elapsed < 30
