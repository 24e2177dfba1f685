"""End-to-end training on scikit-learn's digits (8x8 images, bundled: no download): an MLP
trained with Adam reaches 95% test accuracy within the 60 s budget, and a small CNN with
Conv2d learns (its loss falls clearly)."""

from __future__ import annotations

import time

import numpy as np
import pytest

import nbgrad as ng

datasets = pytest.importorskip("sklearn.datasets")
model_selection = pytest.importorskip("sklearn.model_selection")


@pytest.fixture(scope="module")
def digits():
    x, y = datasets.load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    return model_selection.train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)


def batches(x, y, batch_size, rng):
    order = rng.permutation(len(x))
    for i in range(0, len(order), batch_size):
        idx = order[i : i + batch_size]
        yield ng.from_numpy(x[idx]), ng.from_numpy(y[idx].astype(np.int64))


def accuracy(model, x, y):
    model.eval()
    with ng.no_grad():
        pred = model(ng.from_numpy(x)).argmax(1).numpy()
    model.train()
    return float((pred == y).mean())


def test_mlp_with_adam_reaches_95_percent(digits):
    x_train, x_test, y_train, y_test = digits
    ng.manual_seed(0)
    rng = np.random.default_rng(0)
    model = ng.nn.Sequential(ng.nn.Linear(64, 128), ng.nn.ReLU(), ng.nn.Linear(128, 10))
    optimizer = ng.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = ng.nn.CrossEntropyLoss()
    start = time.perf_counter()
    for _ in range(15):
        for input, target in batches(x_train, y_train, 64, rng):
            optimizer.zero_grad()
            loss_fn(model(input), target).backward()
            optimizer.step()  # noqa: E702
    elapsed = time.perf_counter() - start
    acc = accuracy(model, x_test, y_test)
    print(f"digits MLP: test accuracy {acc:.4f} after {elapsed:.2f} s of training")
    assert acc >= 0.95
    assert elapsed < 60  # the budget, loosely (typically a few seconds)


def test_cnn_with_conv2d_learns(digits):
    x_train, x_test, y_train, y_test = digits
    x_train, x_test = x_train.reshape(-1, 1, 8, 8), x_test.reshape(-1, 1, 8, 8)
    ng.manual_seed(0)
    rng = np.random.default_rng(0)
    nn = ng.nn
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 10),
    )
    optimizer = ng.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    epoch_losses = []
    for _ in range(3):
        losses = []
        for input, target in batches(x_train, y_train, 64, rng):
            optimizer.zero_grad()
            loss = loss_fn(model(input), target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        epoch_losses.append(float(np.mean(losses)))
    print(f"digits CNN: mean loss per epoch {epoch_losses}")
    assert epoch_losses[-1] < 0.3 * epoch_losses[0]
    assert accuracy(model, x_test, y_test) > 0.85
