"""``label-shift``: pathological or random label skew (Fed-CM section 5); drift events move clients to other label sets."""

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
SKEWS = ("pathological", "random")


@dataclass(frozen=True)
class LabelShiftParams(ClientParams):
    """Each client holds a ``rho`` share of the classes (disjoint label groups); at ``drift_round`` a ``fraction`` move.

    ``quantity_alpha`` (off by default) adds FedDAG's Dirichlet(alpha') quantity skew (``quantity_counts``).
    ``drift_every`` (0, off, by default) repeats the event every that many rounds from ``drift_round`` on (MSCFL Figure 6).
    ``skew = "random"`` is Fed-CM's random label skew (Table 1): each client's labels are drawn at random (``RandomSets``).
    """

    clients: int = 100
    rounds: int = 200
    rho: float = 0.2
    drift_round: int = 61
    fraction: float = 0.5
    quantity_alpha: float | None = field(default=None, metadata={RECORDED_WHEN_SET: True})
    drift_every: int = field(default=0, metadata={RECORDED_WHEN_SET: True})
    skew: str = field(default="pathological", metadata={RECORDED_WHEN_SET: True})

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
        require(self.drift_every >= 0, f"drift_every must be >= 0 (0: one event at drift_round), got {self.drift_every}")
        require(self.skew in SKEWS, f"skew must be one of {', '.join(SKEWS)}, got {self.skew!r}")

    def drift_rounds(self) -> range:
        """The rounds of the drift events: ``drift_round``, then every ``drift_every`` rounds while in the horizon."""
        return range(self.drift_round, self.rounds, self.drift_every or self.rounds)


def labels_per_client(num_classes: int, rho: float) -> int:
    """round(rho x C) labels, at least one."""
    return max(1, round(rho * num_classes))


def label_groups(rng: np.random.Generator, num_classes: int, rho: float) -> np.ndarray:
    """floor(1 / rho) disjoint groups of round(rho x C) classes each, from a random class order: groups x labels."""
    per_group = labels_per_client(num_classes, rho)
    groups = int(1 / rho + 1e-9)
    require(
        groups * per_group <= num_classes,
        f"label-shift: rho={rho} needs {groups} x {per_group} classes, the source has {num_classes}",
    )
    return rng.permutation(num_classes)[: groups * per_group].reshape(groups, per_group)


class DisjointGroups:
    """Pathological skew: clients spread evenly over ``label_groups``; a mover goes to another group drawn at random."""

    def __init__(self, rng: np.random.Generator, num_classes: int, rho: float) -> None:
        self.sets: list[np.ndarray] = list(label_groups(rng, num_classes, rho))

    def assign(self, rng: np.random.Generator, clients: int) -> np.ndarray:
        """Every client's group."""
        return rng.permutation(np.arange(clients) % len(self.sets))

    def move(self, rng: np.random.Generator, group: np.ndarray, movers: np.ndarray) -> np.ndarray:
        """The groups ``movers`` move to (an offset is drawn for every client, as the single event always did)."""
        return np.take((group + rng.integers(1, len(self.sets), size=len(group))) % len(self.sets), movers)

    def labels(self, group: int) -> np.ndarray:
        """The labels of ``group``."""
        return self.sets[group]


class RandomSets:
    """Random skew: every client draws round(rho x C) distinct labels at random, so clients' label sets overlap.

    Fed-CM's "standard" skew (section 5.1) says only that each client sees rho of the labels, distributed at
    random; here label sets are drawn uniformly, every label equally likely. Ground truth: clients holding the
    same label set form a group, ids in order of appearance; a mover draws a set other than its current one.
    """

    def __init__(self, num_classes: int, rho: float) -> None:
        self.num_classes, self.per_client = num_classes, labels_per_client(num_classes, rho)
        self.sets: list[np.ndarray] = []
        self._ids: dict[bytes, int] = {}

    def assign(self, rng: np.random.Generator, clients: int) -> np.ndarray:
        """Every client's group: the id of the label set it draws."""
        return np.array([self._draw(rng) for _ in range(clients)], dtype=np.int64)

    def move(self, rng: np.random.Generator, group: np.ndarray, movers: np.ndarray) -> np.ndarray:
        """The groups ``movers`` move to: a freshly drawn label set each, unlike its current one."""
        return np.array([self._draw(rng, unlike=int(group[c])) for c in movers], dtype=np.int64)

    def labels(self, group: int) -> np.ndarray:
        """The labels of ``group``."""
        return self.sets[group]

    def _draw(self, rng: np.random.Generator, unlike: int = -1) -> int:
        while True:
            labels = np.sort(rng.choice(self.num_classes, size=self.per_client, replace=False))
            group = self._ids.setdefault(labels.tobytes(), len(self.sets))
            if group == len(self.sets):
                self.sets.append(labels)
            if group != unlike:
                return group


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
    """Clients hold label sets as ``params.skew`` says, samples uniform over them; movers draw new data from another set.

    Fed-CM does not say how many clients drift at round 61 or where to; at each event a ``fraction`` of
    clients each move to a different label set drawn at random, with fresh samples of its labels.
    Under quantity skew a client's test samples follow its training label mix, and a mover keeps
    its per-slot counts on the new set's labels.
    """
    rng = np.random.default_rng([params.seed, 0x5F1])
    skew = (
        DisjointGroups(rng, pool.num_classes, params.rho)
        if params.skew == "pathological"
        else RandomSets(pool.num_classes, params.rho)
    )
    train_ids, test_ids = train_test_ids(rng, pool, params.test_fraction)
    train_by_label = by_label(train_ids, pool.y, pool.num_classes)
    test_by_label = by_label(test_ids, pool.y, pool.num_classes)

    group = skew.assign(rng, params.clients)
    held, moves = group.copy(), []
    for rnd in params.drift_rounds():
        movers = np.sort(rng.choice(params.clients, size=round(params.fraction * params.clients), replace=False))
        to = skew.move(rng, held, movers)
        held[movers] = to
        moves.append((rnd, movers, to))
    alpha, per_group = params.quantity_alpha, labels_per_client(pool.num_classes, params.rho)
    counts = None if alpha is None else quantity_counts(rng, group, per_group, alpha, params.train_samples)

    def data(client: int, to: int) -> tuple[np.ndarray, np.ndarray]:
        mix = np.zeros(pool.num_classes)
        if counts is None:
            mix[skew.labels(to)] = 1.0 / per_group
            train = draw_by_distribution(rng, train_by_label, mix, params.train_samples)
        else:
            mix[skew.labels(to)] = counts[client]
            train = draw_counts(rng, train_by_label, mix.astype(np.int64))
            mix /= mix.sum()
        return train, draw_by_distribution(rng, test_by_label, mix, params.test_samples)

    builder = TraceBuilder(params.clients, params.rounds, pool.num_classes)
    builder.switches(group, moves, data)
    return builder


register(Generator("label-shift", LabelShiftParams, make))
