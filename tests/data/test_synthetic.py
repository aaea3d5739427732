"""The synthetic source: shapes, determinism, validation and difficulty."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from torch import nn

from driftbench.data import load_pool
from driftbench.data.pool import Pool
from driftbench.data.synthetic import SyntheticParams, prototype
from driftbench.errors import ConfigError

SMALL = {"classes": 4, "size": 12, "channels": 2, "samples_per_class": 7}


def test_shapes_dtypes_and_balanced_labels() -> None:
    pool = load_pool("synthetic", SMALL)
    assert pool.name == "synthetic"
    assert pool.x.shape == (28, 2, 12, 12)
    assert pool.x.dtype == np.uint8
    assert pool.y.dtype == np.int64
    assert pool.num_classes == 4
    assert np.bincount(pool.y, minlength=4).tolist() == [7, 7, 7, 7]


def test_defaults() -> None:
    pool = load_pool("synthetic")
    assert pool.x.shape == (2000, 3, 32, 32)
    assert pool.num_classes == 10
    assert 100 < pool.x.mean() < 155  # mid-grey on average, not saturated


@pytest.mark.parametrize("size", [8, 64])
def test_extreme_sizes(size: int) -> None:
    pool = load_pool("synthetic", {"size": size, "samples_per_class": 3, "channels": 1})
    assert pool.x.shape == (30, 1, size, size)


def test_many_classes() -> None:
    pool = load_pool("synthetic", {"classes": 100, "samples_per_class": 2, "size": 16})
    assert pool.x.shape == (200, 3, 16, 16)
    assert np.bincount(pool.y).tolist() == [2] * 100


def test_same_seed_gives_identical_pools() -> None:
    a, b = load_pool("synthetic", SMALL), load_pool("synthetic", SMALL)
    assert a.fingerprint() == b.fingerprint()
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.y, b.y)


def test_different_seed_gives_different_pools() -> None:
    a = load_pool("synthetic", SMALL)
    b = load_pool("synthetic", {**SMALL, "seed": 1})
    assert not np.array_equal(a.x, b.x)


def test_samples_within_a_class_differ() -> None:
    x = load_pool("synthetic", SMALL).x
    assert len({sample.tobytes() for sample in x}) == len(x)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"classes": 1}, "source synthetic: classes must be >= 2, got 1"),
        ({"size": 4}, "source synthetic: size must be in 8..256, got 4"),
        ({"channels": 0}, "source synthetic: channels must be in 1..4, got 0"),
        ({"samples_per_class": 0}, "source synthetic: samples_per_class must be >= 1, got 0"),
        ({"noise": -0.1}, "source synthetic: noise must be in [0, 1], got -0.1"),
        ({"seed": -1}, "source synthetic: seed must be >= 0, got -1"),
        ({"shift": 0.6}, "source synthetic: shift must be in [0, 0.5], got 0.6"),
        ({"nuisance": 5}, "source synthetic: nuisance must be in [0, 4], got 5.0"),
        ({"family_size": 3}, "source synthetic: family_size must be >= 1 and divide classes (10), got 3"),
        ({"family_spread": 1.5}, "source synthetic: family_spread must be in [0, 1], got 1.5"),
    ],
)
def test_invalid_params_raise_config_error(values: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_pool("synthetic", values)
    assert str(info.value) == message


def test_wrong_type_and_unknown_key_raise_config_error() -> None:
    with pytest.raises(ConfigError):
        load_pool("synthetic", {"classes": "many"})
    with pytest.raises(ConfigError):
        load_pool("synthetic", {"colour": 3})


def _split(pool: Pool, train_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """A fixed random train/test split of the pool's indices."""
    order = np.random.default_rng(0).permutation(len(pool))
    cut = int(train_fraction * len(pool))
    return order[:cut], order[cut:]


def _lenet(channels: int, classes: int) -> nn.Module:
    """LeNet-5 for 32 x 32 inputs."""
    return nn.Sequential(
        nn.Conv2d(channels, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, classes),
    )  # fmt: skip


def _cnn_accuracy(x: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, epochs: int) -> float:
    """Test accuracy of LeNet-5 trained with Adam on the train indices."""
    torch.manual_seed(0)
    model = _lenet(x.shape[1], int(y.max()) + 1)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(epochs):
        for batch in torch.from_numpy(train)[torch.randperm(len(train))].split(32):
            optimiser.zero_grad()
            nn.functional.cross_entropy(model(xs[batch]), ys[batch]).backward()
            optimiser.step()
    with torch.no_grad():
        return (model(xs[test]).argmax(1) == ys[test]).float().mean().item()


def _linear_accuracy(x: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray) -> float:
    """Test accuracy of logistic regression on raw pixels."""
    flat = x.reshape(len(x), -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(max_iter=300).fit(flat[train], y[train])
    return float(model.score(flat[test], y[test]))


def test_cnn_learns_well_but_not_perfectly_and_beats_linear() -> None:
    # Measured at these defaults and seeds: LeNet-5 0.863, logistic regression 0.438.
    pool = load_pool("synthetic")
    x = pool.x.astype(np.float32) / 255.0
    train, test = _split(pool, 0.7)
    cnn = _cnn_accuracy(x, pool.y, train, test, epochs=15)
    linear = _linear_accuracy(x, pool.y, train, test)
    assert 0.75 <= cnn < 0.98
    assert linear <= cnn - 0.2


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a.ravel(), b.ravel())[0, 1])


def test_family_members_look_alike_and_labels_are_member_major() -> None:
    params = SyntheticParams(classes=12, size=8, family_size=3, family_spread=0.1)
    assert params.families == 4
    alike = [_correlation(prototype(params, f), prototype(params, f + m * 4)) for f in range(4) for m in (1, 2)]
    apart = [_correlation(prototype(params, f), prototype(params, g)) for f in range(4) for g in range(f + 1, 4)]
    assert min(alike) > 0.98 and max(map(abs, apart)) < 0.8
    assert not np.array_equal(prototype(params, 0), prototype(params, 4))


def test_family_spread_runs_from_identical_to_unrelated_members() -> None:
    plain = SyntheticParams(classes=4, size=8)
    identical, unrelated = (SyntheticParams(classes=4, size=8, family_size=2, family_spread=s) for s in (0.0, 1.0))
    assert np.allclose(prototype(identical, 1), prototype(plain, 1)) and np.allclose(prototype(identical, 3), prototype(plain, 1))
    assert abs(_correlation(prototype(unrelated, 1), prototype(unrelated, 3))) < 0.8


def test_a_model_tells_families_apart_far_better_than_their_members() -> None:
    pool = load_pool(
        "synthetic",
        {
            "classes": 20,
            "size": 8,
            "samples_per_class": 100,
            "noise": 0.1,
            "nuisance": 0.5,
            "shift": 0.0,
            "family_size": 2,
            "family_spread": 0.1,
        },
    )
    x = pool.x.reshape(len(pool), -1).astype(np.float32) / 255.0
    train, test = _split(pool, 0.7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        predicted = LogisticRegression(max_iter=300).fit(x[train], pool.y[train]).predict(x[test])
    exact = float(np.mean(predicted == pool.y[test]))
    family = float(np.mean(predicted % 10 == pool.y[test] % 10))
    assert family > 0.9 and exact < family - 0.2
