"""``label-combos``: CFLGT scenarios 1-3; every client holds one of G label combinations, optionally re-picked at one event."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from driftbench.config import require
from driftbench.data.pool import Pool
from driftbench.traces.generators import ClientParams, Generator, register
from driftbench.traces.model import TraceBuilder
from driftbench.traces.sampling import by_label, draw, train_test_ids


@dataclass(frozen=True)
class LabelCombosParams(ClientParams):
    """``combos`` distinct combinations of ``labels`` classes; ``train_samples`` and ``test_samples`` count per label.

    ``drift_round`` = 0 means no drift; otherwise a ``fraction`` of clients re-pick a different
    combination at that round.
    """

    clients: int = 100
    train_samples: int = 50
    test_samples: int = 10
    combos: int = 5
    labels: int = 2
    drift_round: int = 0
    fraction: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.combos >= 2, f"combos must be >= 2, got {self.combos}")
        require(self.labels >= 1, f"labels must be >= 1, got {self.labels}")
        require(
            0 <= self.drift_round < self.rounds, f"drift_round must be in 0..rounds-1 ({self.rounds - 1}), got {self.drift_round}"
        )
        require(0 <= self.fraction <= 1, f"fraction must be in [0, 1], got {self.fraction}")


def combinations(rng: np.random.Generator, count: int, labels: int, num_classes: int) -> np.ndarray:
    """``count`` distinct random ``labels``-subsets of the classes, each sorted: count x labels."""
    require(labels <= num_classes, f"label-combos: labels must be <= the source's {num_classes} classes, got {labels}")
    available = math.comb(num_classes, labels)
    require(
        count <= available,
        f"label-combos: only {available} combinations of {labels} of {num_classes} classes exist, asked for {count}",
    )
    found: dict[bytes, np.ndarray] = {}
    while len(found) < count:
        combo = np.sort(rng.choice(num_classes, size=labels, replace=False))
        found.setdefault(combo.tobytes(), combo)
    return np.stack(list(found.values()))


def make(params: LabelCombosParams, pool: Pool) -> TraceBuilder:
    """Each client picks a combination uniformly and gets a fixed number of samples per label; ground truth = combination.

    CFLGT never reuses a sample; here samples are distinct within a client and may repeat
    across clients when the pool is small (digits has ~180 per class).
    """
    rng = np.random.default_rng([params.seed, 0xC0B])
    combos = combinations(rng, params.combos, params.labels, pool.num_classes)
    train_ids, test_ids = train_test_ids(rng, pool, params.test_fraction)
    train_by_label = by_label(train_ids, pool.y, pool.num_classes)
    test_by_label = by_label(test_ids, pool.y, pool.num_classes)
    require(
        all(len(train_by_label[c]) and len(test_by_label[c]) for c in range(pool.num_classes)),
        "label-combos: every class needs train and test samples in the source; use more samples per class",
    )

    def data(_client: int, combo: int) -> tuple[np.ndarray, np.ndarray]:
        labels = combos[combo]
        return (
            np.concatenate([draw(rng, train_by_label[c], params.train_samples) for c in labels]),
            np.concatenate([draw(rng, test_by_label[c], params.test_samples) for c in labels]),
        )

    choice = rng.integers(params.combos, size=params.clients)
    count = round(params.fraction * params.clients) if params.drift_round else 0
    movers = np.sort(rng.choice(params.clients, size=count, replace=False))
    repick = (choice + rng.integers(1, params.combos, size=params.clients)) % params.combos
    builder = TraceBuilder(params.clients, params.rounds, pool.num_classes)
    builder.switches(choice, [(params.drift_round, movers, repick[movers])], data)
    return builder


register(Generator("label-combos", LabelCombosParams, make))
