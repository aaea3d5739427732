"""``label-shift``: pathological label skew (Fed-CM section 5.6); one event moves clients to other label groups."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from driftbench.config import require
from driftbench.data.pool import Pool
from driftbench.traces.generators import ClientParams, Generator, register
from driftbench.traces.model import TraceBuilder
from driftbench.traces.sampling import by_label, draw_by_distribution, train_test_ids


@dataclass(frozen=True)
class LabelShiftParams(ClientParams):
    """Each client holds a ``rho`` share of the classes (disjoint label groups); at ``drift_round`` a ``fraction`` move."""

    clients: int = 100
    rounds: int = 200
    rho: float = 0.2
    drift_round: int = 61
    fraction: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        require(0 < self.rho <= 0.5, f"rho must be in (0, 0.5] (at least 2 label groups), got {self.rho}")
        require(
            0 < self.drift_round < self.rounds, f"drift_round must be in 1..rounds-1 ({self.rounds - 1}), got {self.drift_round}"
        )
        require(0 <= self.fraction <= 1, f"fraction must be in [0, 1], got {self.fraction}")


def label_groups(rng: np.random.Generator, num_classes: int, rho: float) -> np.ndarray:
    """floor(1 / rho) disjoint groups of round(rho x C) classes each, from a random class order: groups x labels."""
    per_group = max(1, round(rho * num_classes))
    groups = int(1 / rho + 1e-9)
    require(
        groups * per_group <= num_classes,
        f"label-shift: rho={rho} needs {groups} x {per_group} classes, the source has {num_classes}",
    )
    return rng.permutation(num_classes)[: groups * per_group].reshape(groups, per_group)


def make(params: LabelShiftParams, pool: Pool) -> TraceBuilder:
    """Clients spread evenly over label groups, samples uniform over its labels; movers draw new data from another group.

    Fed-CM does not say how many clients drift at round 61 or where to; a ``fraction`` of
    clients each move to a different group drawn at random, with fresh samples of its labels.
    """
    rng = np.random.default_rng([params.seed, 0x5F1])
    groups = label_groups(rng, pool.num_classes, params.rho)
    train_ids, test_ids = train_test_ids(rng, pool, params.test_fraction)
    train_by_label = by_label(train_ids, pool.y, pool.num_classes)
    test_by_label = by_label(test_ids, pool.y, pool.num_classes)

    def data(group: int) -> tuple[np.ndarray, np.ndarray]:
        uniform = np.zeros(pool.num_classes)
        uniform[groups[group]] = 1.0 / groups.shape[1]
        return (
            draw_by_distribution(rng, train_by_label, uniform, params.train_samples),
            draw_by_distribution(rng, test_by_label, uniform, params.test_samples),
        )

    group = rng.permutation(np.arange(params.clients) % len(groups))
    movers = np.sort(rng.choice(params.clients, size=round(params.fraction * params.clients), replace=False))
    target = (group + rng.integers(1, len(groups), size=params.clients)) % len(groups)
    builder = TraceBuilder(params.clients, params.rounds, pool.num_classes)
    builder.switch_once(group, target, movers, params.drift_round, data)
    return builder


register(Generator("label-shift", LabelShiftParams, make))
