"""Sampling helpers shared by trace generators."""

from __future__ import annotations

import numpy as np

from driftbench.config import require
from driftbench.data.pool import Pool


def split_pool(rng: np.random.Generator, n: int, test_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Shuffle ``range(n)`` and split it into disjoint train and test index arrays."""
    order = rng.permutation(n)
    n_test = int(round(n * test_fraction))
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def train_test_ids(rng: np.random.Generator, pool: Pool, test_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Train and test pool indices: the pool's own ``split`` column when it has both, else ``split_pool``.

    A pool loaded as one split (``split=test``) or whose splits have other names (WILDS'
    val/test after 2015) has no train/test pair, so it is split at random like an unsplit pool.
    """
    if pool.meta is not None and "split" in pool.meta:
        split = pool.meta["split"].to_numpy()
        train, test = np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
        if len(train) and len(test):
            return train, test
    return split_pool(rng, len(pool), test_fraction)


def draw(rng: np.random.Generator, candidates: np.ndarray, n: int) -> np.ndarray:
    """``n`` of ``candidates``, without replacement when there are enough, with replacement otherwise."""
    return rng.choice(candidates, size=n, replace=n > len(candidates))


def by_label(ids: np.ndarray, labels: np.ndarray, num_classes: int) -> list[np.ndarray]:
    """``ids`` grouped by their label."""
    return [ids[labels[ids] == c] for c in range(num_classes)]


def draw_by_distribution(
    rng: np.random.Generator, ids_by_label: list[np.ndarray], distribution: np.ndarray, n: int
) -> np.ndarray:
    """``n`` ids whose label counts follow a multinomial draw from ``distribution``, shuffled."""
    available = np.array([len(ids) > 0 for ids in ids_by_label])
    p = np.where(available, distribution, 0.0)
    return draw_counts(rng, ids_by_label, rng.multinomial(n, p / p.sum()))


def draw_counts(rng: np.random.Generator, ids_by_label: list[np.ndarray], counts: np.ndarray) -> np.ndarray:
    """``counts[c]`` ids of every label ``c``, shuffled."""
    empty = [c for c, k in enumerate(counts) if k and not len(ids_by_label[c])]
    require(not empty, f"labels {empty} have no samples in the source to draw from; use more samples per class")
    picked = [draw(rng, ids_by_label[c], k) for c, k in enumerate(counts) if k]
    return rng.permutation(np.concatenate(picked))
