"""``fmow-timeline`` (FIELDING sections 2.1 and 3): one client per region; timestamped samples arrive by date."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from driftbench.config import require
from driftbench.data.pool import Pool
from driftbench.errors import DataSourceError
from driftbench.traces.generators import ClientParams, Generator, register
from driftbench.traces.model import TraceBuilder
from driftbench.traces.sampling import by_label, train_test_ids
from driftbench.traces.windows import SlidingWindows, arrival_rounds

Stream = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # train ids, their days, test ids, their days


@dataclass(frozen=True)
class FmowTimelineParams(ClientParams):
    """A day lasts ``rounds_per_day`` rounds; clients keep the last ``window_rounds``; windows move every ``update_every`` rounds.

    FMoW pools (``timestamp`` and ``region`` columns): one client per region, at most ``clients``.
    Other pools: ``clients`` synthetic regions of ``types`` latent types; a type's label
    distribution is Dirichlet(``alpha``) modulated by a yearly-style cycle of ``season_days``
    days and strength ``amplitude``; at ``event_round`` an ``event_fraction`` of the regions
    switch type at once (no event when ``event_round`` >= ``rounds``). ``train_samples`` and
    ``test_samples`` count per region over the whole timeline. ``turned_types``: type ``t``'s
    images are turned by (t mod 4) x 90 degrees, so that types also differ in appearance, as
    FMoW's regions do, which their label distributions do not show.
    """

    clients: int = 60
    rounds: int = 200
    train_samples: int = 300
    test_samples: int = 100
    rounds_per_day: int = 2
    window_rounds: int = 100
    update_every: int = 10
    min_window: int = 10
    types: int = 4
    alpha: float = 0.5
    season_days: int = 60
    amplitude: float = 1.5
    event_round: int = 100
    event_fraction: float = 0.5
    turned_types: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.rounds_per_day >= 1, f"rounds_per_day must be >= 1, got {self.rounds_per_day}")
        require(self.window_rounds >= self.rounds_per_day, f"window_rounds must be >= rounds_per_day, got {self.window_rounds}")
        require(self.update_every >= 1, f"update_every must be >= 1, got {self.update_every}")
        require(self.min_window >= 1, f"min_window must be >= 1, got {self.min_window}")
        require(self.types >= 1, f"types must be >= 1, got {self.types}")
        require(self.alpha > 0, f"alpha must be > 0, got {self.alpha}")
        require(self.season_days >= 1, f"season_days must be >= 1, got {self.season_days}")
        require(self.amplitude >= 0, f"amplitude must be >= 0, got {self.amplitude}")
        require(self.event_round >= 1, f"event_round must be >= 1 (at or past rounds: no event), got {self.event_round}")
        require(0 <= self.event_fraction <= 1, f"event_fraction must be in [0, 1], got {self.event_fraction}")


def fmow_regions(rng: np.random.Generator, params: FmowTimelineParams, pool: Pool) -> list[Stream]:
    """Per region (sorted by id, at most ``clients``): its samples by date, a random ``test_fraction`` held out.

    WILDS' own split is by year, so it cannot give test data of a client's current period.
    """
    meta = pool.meta
    assert meta is not None, "make() reads regions only from a pool with meta"
    stamps = meta["timestamp"].to_numpy()
    day = ((stamps - stamps.min()) // np.timedelta64(1, "D")).astype(np.int64)
    region = meta["region"].to_numpy()
    order = np.lexsort((day, region))
    per_region = [ids for ids in np.split(order, np.unique(region[order], return_index=True)[1][1:]) if len(ids) >= 2]
    if len(per_region) < 2:
        raise DataSourceError(f"fmow-timeline: only {len(per_region)} regions have 2 or more samples; need 2")
    streams = []
    for ids in per_region[: params.clients]:
        is_test = np.zeros(len(ids), dtype=bool)
        is_test[rng.choice(len(ids), size=min(max(1, round(params.test_fraction * len(ids))), len(ids) - 1), replace=False)] = (
            True
        )
        streams.append((ids[~is_test], day[ids[~is_test]], ids[is_test], day[ids[is_test]]))
    return streams


class SyntheticRegions:
    """Latent region types with seasonal label distributions; some regions switch type at the event."""

    def __init__(self, rng: np.random.Generator, params: FmowTimelineParams, num_classes: int) -> None:
        self.params, self.rng = params, rng
        self.base = rng.dirichlet(np.full(num_classes, params.alpha), size=params.types)
        self.phase = rng.uniform(0, 2 * math.pi, size=(params.types, num_classes))
        self.type = rng.permutation(np.arange(params.clients) % params.types)
        movers = rng.choice(params.clients, size=round(params.event_fraction * params.clients), replace=False)
        self.later = self.type.copy()
        if params.types > 1:
            self.later[movers] = (self.type[movers] + rng.integers(1, params.types, size=len(movers))) % params.types
        self.movers = np.sort(np.flatnonzero(self.later != self.type))

    def type_at(self, region: int, rounds: np.ndarray) -> np.ndarray:
        """The region's type at each round (its later type from ``event_round`` on)."""
        types: np.ndarray = np.where(rounds >= self.params.event_round, self.later[region], self.type[region])
        return types

    def labels(self, region: int, days: np.ndarray) -> np.ndarray:
        """A label for a sample of each day, from the region's type distribution in that season."""
        p = self.params
        types = self.type_at(region, arrival_rounds(days, p.rounds_per_day, p.window_rounds))
        season = np.sin(2 * math.pi * days[:, None] / p.season_days + self.phase[types])
        weights = self.base[types] * np.exp(p.amplitude * season)
        cumulative = np.cumsum(weights / weights.sum(axis=1, keepdims=True), axis=1)
        labels: np.ndarray = np.minimum((cumulative < self.rng.random((len(days), 1))).sum(axis=1), weights.shape[1] - 1)
        return labels

    def stream(self, region: int, ids_by_label: list[list[np.ndarray]], days: int) -> Stream:
        """The region's train and test samples at uniformly random days, labels by its type and season."""
        out = []
        for ids, count in zip(ids_by_label, (self.params.train_samples, self.params.test_samples)):
            sample_days = np.sort(self.rng.integers(0, days, size=count))
            labels = self.labels(region, sample_days)
            picked = np.empty(count, dtype=np.int64)
            for c in np.unique(labels):
                picked[labels == c] = self.rng.choice(ids[c], size=int((labels == c).sum()))
            out += [picked, sample_days]
        return tuple(out)  # type: ignore[return-value]


def make(params: FmowTimelineParams, pool: Pool) -> TraceBuilder:
    """Windows hold the samples of the last ``window_rounds`` rounds, moved every ``update_every`` rounds (not every
    round, so the trace stays small) and widened to ``min_window`` samples; each move is an arrival event.

    Ground truth is the synthetic region type (none, -1, for FMoW); the type switch is also a
    ``label`` event at the first window move that brings post-switch samples.
    """
    rng = np.random.default_rng([params.seed, 0xF30])
    updates = np.arange(0, params.rounds, params.update_every)
    if pool.meta is not None and {"timestamp", "region"} <= set(pool.meta):
        streams, regions = fmow_regions(rng, params, pool), None
        groups = [np.full(len(updates), -1)] * len(streams)
        turns = [np.zeros(len(updates), dtype=np.int64)] * len(streams)
    else:
        train_ids, test_ids = train_test_ids(rng, pool, params.test_fraction)
        ids_by_label = [by_label(ids, pool.y, pool.num_classes) for ids in (train_ids, test_ids)]
        require(
            all(len(ids) for split in ids_by_label for ids in split),
            "fmow-timeline: every class needs train and test samples in the source",
        )
        regions = SyntheticRegions(rng, params, pool.num_classes)
        days = math.ceil((params.rounds + params.window_rounds) / params.rounds_per_day)
        streams = [regions.stream(r, ids_by_label, days) for r in range(params.clients)]
        groups = [regions.type_at(r, updates) for r in range(params.clients)]
        turns = [90 * (g % 4) * params.turned_types for g in groups]
    builder = TraceBuilder(len(streams), params.rounds, pool.num_classes)
    windows = SlidingWindows(builder, updates, params.window_rounds, params.min_window)
    for client, (train, train_days, test, test_days) in enumerate(streams):
        builder.samples(client, train, test)
        train_arrive = arrival_rounds(train_days, params.rounds_per_day, params.window_rounds)
        test_arrive = arrival_rounds(test_days, params.rounds_per_day, params.window_rounds)
        windows.client(client, train_arrive, test_arrive, groups[client], turns[client])
    windows.events("arrival")
    switch = updates[updates >= params.event_round]
    if regions is not None and len(regions.movers) and len(switch):
        builder.event(int(switch[0]), regions.movers, "label")
    return builder


register(Generator("fmow-timeline", FmowTimelineParams, make))
