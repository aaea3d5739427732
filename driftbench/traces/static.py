"""``static``: no drift; clients in latent groups with group-specific label skew (FIELDING Fig. 9)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from driftbench.config import require
from driftbench.data.pool import Pool
from driftbench.traces.generators import ClientParams, Generator, register
from driftbench.traces.model import TraceBuilder
from driftbench.traces.sampling import by_label, draw_by_distribution, train_test_ids


@dataclass(frozen=True)
class StaticParams(ClientParams):
    """Parameters of the static trace: ``groups`` latent groups, each with a Dirichlet(``alpha``) label distribution."""

    rounds: int = 60
    groups: int = 4
    alpha: float = 0.3

    def __post_init__(self) -> None:
        super().__post_init__()
        require(1 <= self.groups <= self.clients, f"groups must be in 1..clients, got {self.groups}")
        require(self.alpha > 0, f"alpha must be > 0, got {self.alpha}")


def group_distributions(rng: np.random.Generator, groups: int, num_classes: int, alpha: float) -> np.ndarray:
    """One Dirichlet(alpha) label distribution per group."""
    return rng.dirichlet(np.full(num_classes, alpha), size=groups)


def make(params: StaticParams, pool: Pool) -> TraceBuilder:
    """Every client draws all its data at round 0 from its group's label distribution."""
    rng = np.random.default_rng([params.seed, 0x5747])
    train_ids, test_ids = train_test_ids(rng, pool, params.test_fraction)
    train_by_label = by_label(train_ids, pool.y, pool.num_classes)
    test_by_label = by_label(test_ids, pool.y, pool.num_classes)
    dists = group_distributions(rng, params.groups, pool.num_classes, params.alpha)
    group_of = rng.permutation(np.arange(params.clients) % params.groups)
    builder = TraceBuilder(params.clients, params.rounds, pool.num_classes)
    for client, group in enumerate(group_of):
        builder.samples(
            client,
            draw_by_distribution(rng, train_by_label, dists[group], params.train_samples),
            draw_by_distribution(rng, test_by_label, dists[group], params.test_samples),
        )
        builder.segment(client, 0, group=int(group))
    return builder


register(Generator("static", StaticParams, make))
