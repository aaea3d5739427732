"""``label-shift``: pathological label skew (Fed-CM section 5.6); one event moves clients to other label groups."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from driftbench.config import RECORDED_WHEN_SET, require
from driftbench.data.pool import Pool
from driftbench.traces.generators import ClientParams, Generator, register
from driftbench.traces.model import TraceBuilder
from driftbench.traces.sampling import by_label, draw_by_distribution, draw_counts, train_test_ids

MIN_TRAIN = 10  # samples every client keeps under quantity skew (NIID-bench's min_require_size, PACFL's partitioner)


@dataclass(frozen=True)
class LabelShiftParams(ClientParams):
    """Each client holds a ``rho`` share of the classes (disjoint label groups); at ``drift_round`` a ``fraction`` move.

    ``quantity_alpha`` (off by default) adds FedDAG's Dirichlet(alpha') quantity skew (``quantity_counts``).
    """

    clients: int = 100
    rounds: int = 200
    rho: float = 0.2
    drift_round: int = 61
    fraction: float = 0.5
    quantity_alpha: float | None = field(default=None, metadata={RECORDED_WHEN_SET: True})

    def __post_init__(self) -> None:
        super().__post_init__()
        require(0 < self.rho <= 0.5, f"rho must be in (0, 0.5] (at least 2 label groups), got {self.rho}")
        require(
            0 < self.drift_round < self.rounds, f"drift_round must be in 1..rounds-1 ({self.rounds - 1}), got {self.drift_round}"
        )
        require(0 <= self.fraction <= 1, f"fraction must be in [0, 1], got {self.fraction}")
        alpha = self.quantity_alpha
        require(
            alpha is None or (math.isfinite(alpha) and alpha > 0),
            f"quantity_alpha must be a number > 0 (or none: no quantity skew), got {alpha}",
        )


def label_groups(rng: np.random.Generator, num_classes: int, rho: float) -> np.ndarray:
    """floor(1 / rho) disjoint groups of round(rho x C) classes each, from a random class order: groups x labels."""
    per_group = max(1, round(rho * num_classes))
    groups = int(1 / rho + 1e-9)
    require(
        groups * per_group <= num_classes,
        f"label-shift: rho={rho} needs {groups} x {per_group} classes, the source has {num_classes}",
    )
    return rng.permutation(num_classes)[: groups * per_group].reshape(groups, per_group)


def quantity_counts(rng: np.random.Generator, group: np.ndarray, per_group: int, alpha: float, samples: int) -> np.ndarray:
    """Training samples of every client (rows) and label slot of its group (columns), skewed by Dirichlet(alpha).

    FedDAG's Data Distribution I "allocates samples of the assigned labels using the Dirichlet factor": each label's
    share of its group's ``samples`` x clients is split over the group's clients by Dirichlet(alpha), so clients
    differ in size and in label mix; every client keeps ``MIN_TRAIN`` of them, spread at random over its labels.
    """
    counts = np.zeros((len(group), per_group), dtype=np.int64)
    floor = min(MIN_TRAIN, samples)
    for g in np.unique(group):
        members = np.flatnonzero(group == g)
        shares = rng.dirichlet(np.full(len(members), alpha), size=per_group).T / per_group
        skewed = rng.multinomial(len(members) * (samples - floor), shares.ravel()).reshape(shares.shape)
        counts[members] = skewed + rng.multinomial(floor, np.full(per_group, 1 / per_group), size=len(members))
    return counts


def make(params: LabelShiftParams, pool: Pool) -> TraceBuilder:
    """Clients spread evenly over label groups, samples uniform over its labels; movers draw new data from another group.

    Fed-CM does not say how many clients drift at round 61 or where to; a ``fraction`` of
    clients each move to a different group drawn at random, with fresh samples of its labels.
    Under quantity skew a client's test samples follow its training label mix, and a mover keeps
    its per-slot counts on the new group's labels.
    """
    rng = np.random.default_rng([params.seed, 0x5F1])
    groups = label_groups(rng, pool.num_classes, params.rho)
    train_ids, test_ids = train_test_ids(rng, pool, params.test_fraction)
    train_by_label = by_label(train_ids, pool.y, pool.num_classes)
    test_by_label = by_label(test_ids, pool.y, pool.num_classes)

    group = rng.permutation(np.arange(params.clients) % len(groups))
    movers = np.sort(rng.choice(params.clients, size=round(params.fraction * params.clients), replace=False))
    target = (group + rng.integers(1, len(groups), size=params.clients)) % len(groups)
    alpha, per_group = params.quantity_alpha, groups.shape[1]
    counts = None if alpha is None else quantity_counts(rng, group, per_group, alpha, params.train_samples)

    def data(client: int, to: int) -> tuple[np.ndarray, np.ndarray]:
        mix = np.zeros(pool.num_classes)
        if counts is None:
            mix[groups[to]] = 1.0 / per_group
            train = draw_by_distribution(rng, train_by_label, mix, params.train_samples)
        else:
            mix[groups[to]] = counts[client]
            train = draw_counts(rng, train_by_label, mix.astype(np.int64))
            mix /= mix.sum()
        return train, draw_by_distribution(rng, test_by_label, mix, params.test_samples)

    builder = TraceBuilder(params.clients, params.rounds, pool.num_classes)
    builder.switch_once(group, target, movers, params.drift_round, data)
    return builder


register(Generator("label-shift", LabelShiftParams, make))
