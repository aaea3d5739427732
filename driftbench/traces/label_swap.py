"""``label-swap``: concept drift; clients move between label-permutation concepts at drift events."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from driftbench.config import RECORDED_WHEN_SET, require
from driftbench.data.pool import Pool
from driftbench.traces.generators import ClientParams, Generator, register
from driftbench.traces.model import TraceBuilder
from driftbench.traces.sampling import draw, train_test_ids

SWAPS = ("global", "client")


@dataclass(frozen=True)
class LabelSwapParams(ClientParams):
    """Parameters of the label-swap trace; ``ramp_rounds`` > 1 makes each event incremental.

    ``swap = "global"`` moves clients to the shared concepts; ``swap = "client"`` has each moving
    client transpose two labels of its own (FIELDING E.2.1), so ``concepts`` only sets the starting maps.
    """

    concepts: int = 4
    initial_concepts: int = 1
    drift_every: int = 25
    fraction: float = 0.3
    ramp_rounds: int = 1
    swap: str = field(default="global", metadata={RECORDED_WHEN_SET: True})

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
        require(self.swap in SWAPS, f"swap must be one of {', '.join(SWAPS)}, got {self.swap!r}")


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
    """Clients start spread over the first concepts; at each event a fraction of them drifts as ``params.swap`` says."""
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
    drift = client_swaps if params.swap == "client" else concept_moves
    drift(params, rng, builder, maps, concept)
    return builder


def concept_moves(
    params: LabelSwapParams, rng: np.random.Generator, builder: TraceBuilder, maps: list[np.ndarray], concept: np.ndarray
) -> None:
    """Event j moves a fraction of the clients not yet there to concept (initial + j - 1) mod K; a group is a concept."""
    for j, start in enumerate(range(params.drift_every, params.rounds, params.drift_every), start=1):
        target = (params.initial_concepts + j - 1) % params.concepts
        candidates = np.flatnonzero(concept != target)
        movers = rng.choice(candidates, size=min(len(candidates), round(params.fraction * params.clients)), replace=False)
        for rnd, chunk in ramped(params, start, movers):
            for client in chunk:
                builder.segment(int(client), rnd, label_map=maps[target], group=target)
            concept[chunk] = target
            builder.event(rnd, chunk, "concept")


def client_swaps(
    params: LabelSwapParams, rng: np.random.Generator, builder: TraceBuilder, maps: list[np.ndarray], concept: np.ndarray
) -> None:
    """Each event, a fraction of all clients each swap two labels drawn for it, after its current map.

    Ground truth: clients holding the same label map form one group (the starting concepts keep
    their ids; each new map gets the next id in order of appearance).
    """
    current = [maps[k] for k in concept]
    groups = {maps[k].tobytes(): k for k in range(params.initial_concepts)}
    for start in range(params.drift_every, params.rounds, params.drift_every):
        movers = rng.choice(params.clients, size=round(params.fraction * params.clients), replace=False)
        for rnd, chunk in ramped(params, start, movers):
            for client in chunk:
                current[client] = swapped(current[client], rng.choice(builder.num_classes, size=2, replace=False))
                group = groups.setdefault(current[client].tobytes(), len(groups))
                builder.segment(int(client), rnd, label_map=current[client], group=group)
            builder.event(rnd, chunk, "concept")


def swapped(mapping: np.ndarray, pair: np.ndarray) -> np.ndarray:
    """``mapping`` followed by the transposition of the labels in ``pair``: samples labelled a become b and b become a."""
    a, b = pair
    out = mapping.copy()
    out[mapping == a], out[mapping == b] = b, a
    return out


def ramped(params: LabelSwapParams, start: int, movers: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """The event's rounds within the horizon, each with its non-empty share of ``movers`` (spread over ``ramp_rounds``)."""
    for offset, chunk in enumerate(np.array_split(movers, params.ramp_rounds)):
        if start + offset < params.rounds and len(chunk):
            yield start + offset, chunk


register(Generator("label-swap", LabelSwapParams, make))
