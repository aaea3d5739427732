"""``rotation``: feature drift (MSCFL); groups see images rotated by different quarter turns, clients switch group at events."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from driftbench.config import require
from driftbench.data.pool import Pool
from driftbench.traces.generators import ClientParams, Generator, register
from driftbench.traces.model import TraceBuilder
from driftbench.traces.sampling import draw, train_test_ids


@dataclass(frozen=True)
class RotationParams(ClientParams):
    """Group ``g`` sees images turned by ``quarter_turns[g]`` x 90 degrees; each ``drift_every`` rounds a ``fraction`` switch."""

    quarter_turns: tuple[int, ...] = (0, 2)
    drift_every: int = 20
    fraction: float = 0.3

    def __post_init__(self) -> None:
        super().__post_init__()
        require(len(self.quarter_turns) >= 2, f"quarter_turns needs at least 2 groups, got {self.quarter_turns}")
        require(
            len(set(self.quarter_turns)) == len(self.quarter_turns) and set(self.quarter_turns) <= {0, 1, 2, 3},
            f"quarter_turns must be distinct values in 0..3, got {self.quarter_turns}",
        )
        require(self.drift_every >= 1, f"drift_every must be >= 1, got {self.drift_every}")
        require(0 <= self.fraction <= 1, f"fraction must be in [0, 1], got {self.fraction}")


def make(params: RotationParams, pool: Pool) -> TraceBuilder:
    """IID samples per client, groups spread evenly; each mover switches to a different group drawn at random.

    MSCFL does not say how many clients drift at an event; ``fraction`` chooses it.
    """
    rng = np.random.default_rng([params.seed, 0x207])
    groups = len(params.quarter_turns)
    train_ids, test_ids = train_test_ids(rng, pool, params.test_fraction)
    group = rng.permutation(np.arange(params.clients) % groups)
    builder = TraceBuilder(params.clients, params.rounds, pool.num_classes)
    for client in range(params.clients):
        builder.samples(client, draw(rng, train_ids, params.train_samples), draw(rng, test_ids, params.test_samples))
        builder.segment(client, 0, rotation=90 * params.quarter_turns[group[client]], group=int(group[client]))
    movers_per_event = round(params.fraction * params.clients)
    for rnd in range(params.drift_every, params.rounds, params.drift_every):
        movers = np.sort(rng.choice(params.clients, size=movers_per_event, replace=False))
        if len(movers) == 0:
            continue
        group[movers] = (group[movers] + rng.integers(1, groups, size=len(movers))) % groups
        for client in movers:
            builder.segment(int(client), rnd, rotation=90 * params.quarter_turns[group[client]], group=int(group[client]))
        builder.event(rnd, movers, "feature")
    return builder


register(Generator("rotation", RotationParams, make))
