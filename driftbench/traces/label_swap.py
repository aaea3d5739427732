"""``label-swap``: concept drift; clients move between label-permutation concepts at drift events."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from driftbench.config import require
from driftbench.data.pool import Pool
from driftbench.traces.generators import ClientParams, Generator, register
from driftbench.traces.model import TraceBuilder
from driftbench.traces.sampling import draw, train_test_ids


@dataclass(frozen=True)
class LabelSwapParams(ClientParams):
    """Parameters of the label-swap trace; ``ramp_rounds`` > 1 makes each event incremental."""

    concepts: int = 4
    initial_concepts: int = 1
    drift_every: int = 25
    fraction: float = 0.3
    ramp_rounds: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.concepts >= 2, f"concepts must be >= 2, got {self.concepts}")
        require(
            1 <= self.initial_concepts <= self.concepts,
            f"initial_concepts must be in 1..concepts ({self.concepts}), got {self.initial_concepts}",
        )
        require(self.drift_every >= 1, f"drift_every must be >= 1, got {self.drift_every}")
        require(0 <= self.fraction <= 1, f"fraction must be in [0, 1], got {self.fraction}")
        require(self.ramp_rounds >= 1, f"ramp_rounds must be >= 1, got {self.ramp_rounds}")


def concept_permutation(k: int, num_classes: int) -> np.ndarray:
    """Label map of concept ``k``: identity, y -> C-1-y, (y+1) mod C, (y+2) mod C, pairs 1<->2 3<->4 5<->6, then (y+k-2) mod C.

    Swapped pairs agrees with the identity on most labels, so it comes after the strongly conflicting maps.
    """
    y = np.arange(num_classes)
    if k == 0:
        return y
    if k == 1:
        return num_classes - 1 - y
    if k == 4:
        mapping = y.copy()
        for a in (1, 3, 5):
            if a + 1 < num_classes:
                mapping[[a, a + 1]] = mapping[[a + 1, a]]
        return mapping
    return (y + (k - 1 if k < 4 else k - 2)) % num_classes


def make(params: LabelSwapParams, pool: Pool) -> TraceBuilder:
    """Clients start spread over the first concepts; event j moves a fraction to concept (initial + j - 1) mod K."""
    require(
        params.concepts <= pool.num_classes,
        f"label-swap: concepts must be <= the source's {pool.num_classes} classes, got {params.concepts}",
    )
    rng = np.random.default_rng([params.seed, 0x5A9])
    maps = [concept_permutation(k, pool.num_classes) for k in range(params.concepts)]
    train_ids, test_ids = train_test_ids(rng, pool, params.test_fraction)
    concept = rng.permutation(np.arange(params.clients) % params.initial_concepts)
    builder = TraceBuilder(params.clients, params.rounds, pool.num_classes)
    for client in range(params.clients):
        builder.samples(client, draw(rng, train_ids, params.train_samples), draw(rng, test_ids, params.test_samples))
        builder.segment(client, 0, label_map=maps[concept[client]], group=int(concept[client]))
    for j, start in enumerate(range(params.drift_every, params.rounds, params.drift_every), start=1):
        target = (params.initial_concepts + j - 1) % params.concepts
        candidates = np.flatnonzero(concept != target)
        movers = rng.choice(candidates, size=min(len(candidates), round(params.fraction * params.clients)), replace=False)
        for offset, chunk in enumerate(np.array_split(movers, params.ramp_rounds)):
            rnd = start + offset
            if rnd >= params.rounds or len(chunk) == 0:
                continue
            for client in chunk:
                builder.segment(int(client), rnd, label_map=maps[target], group=target)
            concept[chunk] = target
            builder.event(rnd, chunk, "concept")
    return builder


register(Generator("label-swap", LabelSwapParams, make))
