"""``openimage-buckets`` (FIELDING section 3): each client's labels split into buckets that stream in one at a time."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations_with_replacement

import numpy as np

from driftbench.config import require
from driftbench.data.pool import Pool
from driftbench.errors import DataSourceError
from driftbench.traces.generators import ClientParams, Generator, register
from driftbench.traces.model import TraceBuilder
from driftbench.traces.sampling import by_label, draw, draw_by_distribution, train_test_ids
from driftbench.traces.windows import SlidingWindows, arrival_rounds, window_bounds


@dataclass(frozen=True)
class OpenImageBucketsParams(ClientParams):
    """Bucket streaming over FedScale clients (a pool with a ``client`` column) or synthetic interest groups.

    FedScale pools: clients holding >= ``min_classes`` of the ``top_classes`` most frequent
    classes, at most ``clients`` of them; each client's labels split at random into ``buckets``.
    Other pools: ``clients`` clients; the classes are split into ``groups`` disjoint interests,
    and each bucket of a client holds ``bucket_classes`` classes of the interest it follows
    then (drawn anew for every bucket). ``train_samples`` is per synthetic client,
    ``test_samples`` per bucket.
    """

    clients: int = 300
    rounds: int = 200
    train_samples: int = 200
    test_samples: int = 10
    buckets: int = 10
    bucket_rounds: int = 50
    window_rounds: int = 100
    top_classes: int = 100
    min_classes: int = 10
    groups: int = 4
    bucket_classes: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.buckets >= 2, f"buckets must be >= 2, got {self.buckets}")
        require(self.bucket_rounds >= 1, f"bucket_rounds must be >= 1, got {self.bucket_rounds}")
        require(
            self.bucket_rounds <= self.window_rounds <= self.buckets * self.bucket_rounds,
            f"window_rounds must be in bucket_rounds..buckets x bucket_rounds ({self.bucket_rounds}.."
            f"{self.buckets * self.bucket_rounds}), got {self.window_rounds}",
        )
        require(
            self.rounds <= self.buckets * self.bucket_rounds,
            f"rounds must be <= buckets x bucket_rounds ({self.buckets * self.bucket_rounds}), or windows run dry; "
            f"got {self.rounds}",
        )
        require(
            self.buckets <= self.min_classes <= self.top_classes,
            f"need buckets <= min_classes <= top_classes, got {self.buckets}, {self.min_classes}, {self.top_classes}",
        )
        require(self.groups >= 1, f"groups must be >= 1, got {self.groups}")
        require(self.bucket_classes >= 1, f"bucket_classes must be >= 1, got {self.bucket_classes}")


@dataclass(frozen=True)
class BucketedClient:
    """A client's train samples in bucket order, the bucket of each, and the interest each bucket follows (-1: none)."""

    ids: np.ndarray
    bucket: np.ndarray
    interest: np.ndarray


def fedscale_clients(
    rng: np.random.Generator, params: OpenImageBucketsParams, pool: Pool, train_ids: np.ndarray
) -> list[BucketedClient]:
    """FedScale clients holding >= ``min_classes`` top classes (by client id); their labels split at random into buckets."""
    require(
        params.top_classes <= pool.num_classes,
        f"openimage-buckets: top_classes must be <= the source's {pool.num_classes} classes",
    )
    top = np.argsort(-np.bincount(pool.y[train_ids], minlength=pool.num_classes), kind="stable")[: params.top_classes]
    ids = train_ids[np.isin(pool.y[train_ids], top)]
    assert pool.meta is not None, "make() takes FedScale clients only from a pool with meta"
    owner = pool.meta["client"].to_numpy()[ids]
    order = np.argsort(owner, kind="stable")
    ids, owner = ids[order], owner[order]
    per_client = np.split(ids, np.unique(owner, return_index=True)[1][1:])
    kept = [c for c in per_client if len(np.unique(pool.y[c])) >= params.min_classes][: params.clients]
    if len(kept) < 2:
        raise DataSourceError(
            f"openimage-buckets: only {len(kept)} FedScale clients hold >= {params.min_classes} of the top "
            f"{params.top_classes} classes; need 2"
        )
    none = np.full(params.buckets, -1)
    return [BucketedClient(*random_buckets(rng, c, pool.y, params.buckets), none) for c in kept]


def random_buckets(rng: np.random.Generator, ids: np.ndarray, pool_y: np.ndarray, buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """The client's labels split at random into ``buckets`` (a bucket holds all samples of its labels): ids by bucket, buckets."""
    labels = rng.permutation(np.unique(pool_y[ids]))
    bucket_of_label = np.full(labels.max() + 1, -1)
    for b, chunk in enumerate(np.array_split(labels, buckets)):
        bucket_of_label[chunk] = b
    bucket = bucket_of_label[pool_y[ids]]
    order = np.argsort(bucket, kind="stable")
    return ids[order], bucket[order]


def interest_clients(
    rng: np.random.Generator, params: OpenImageBucketsParams, pool: Pool, train_ids: np.ndarray
) -> list[BucketedClient]:
    """Synthetic clients: every bucket follows an interest drawn at random and holds ``bucket_classes`` of its classes."""
    require(
        params.groups * params.bucket_classes <= pool.num_classes,
        f"openimage-buckets: groups x bucket_classes must be <= the source's {pool.num_classes} classes",
    )
    interests = np.array_split(np.arange(pool.num_classes), params.groups)
    train_by_label = by_label(train_ids, pool.y, pool.num_classes)
    per_label = max(1, params.train_samples // (params.buckets * params.bucket_classes))
    clients = []
    for _ in range(params.clients):
        interest = rng.integers(params.groups, size=params.buckets)
        labels = [rng.choice(interests[g], size=params.bucket_classes, replace=False) for g in interest]
        ids = [np.concatenate([draw(rng, train_by_label[c], per_label) for c in chunk]) for chunk in labels]
        clients.append(BucketedClient(np.concatenate(ids), np.repeat(np.arange(params.buckets), list(map(len, ids))), interest))
    return clients


def bucket_tests(
    rng: np.random.Generator, client: BucketedClient, pool_y: np.ndarray, test_by_label: list[np.ndarray], n: int
) -> np.ndarray:
    """Per bucket, ``n`` test samples following the bucket's label mix, in bucket order."""
    tests = []
    for b in range(len(client.interest)):
        counts = np.bincount(pool_y[client.ids[client.bucket == b]], minlength=len(test_by_label)).astype(float)
        if not any(len(test_by_label[c]) for c in np.flatnonzero(counts)):
            raise DataSourceError(f"openimage-buckets: no test samples for classes {np.flatnonzero(counts).tolist()}")
        tests.append(draw_by_distribution(rng, test_by_label, counts / counts.sum(), n))
    return np.concatenate(tests)


def interest_mixes(bounds: np.ndarray, groups: int) -> dict[tuple[int, ...], int]:
    """Every multiset of interests a window can hold, numbered; full windows first, so their ids start at 0."""
    widths = range(int((bounds[:, 1] - bounds[:, 0]).max()), 0, -1)
    combos = (combo for width in widths for combo in combinations_with_replacement(range(groups), width))
    return {combo: k for k, combo in enumerate(combos)}


def window_groups(interest: np.ndarray, bounds: np.ndarray, mixes: dict[tuple[int, ...], int]) -> np.ndarray:
    """Ground truth per window: the number of the multiset of interests of the buckets in it (-1 without interests)."""
    if (interest < 0).any():
        return np.full(len(bounds), -1)
    return np.array([mixes[tuple(sorted(interest[lo:hi]))] for lo, hi in bounds])


def make(params: OpenImageBucketsParams, pool: Pool) -> TraceBuilder:
    """One bucket arrives every ``bucket_rounds``; clients start with ``window_rounds`` worth and keep the last ``window_rounds``.

    Ground truth (synthetic clients) is the combination of interests in a client's window, so
    clients in one group share a label mix at every round while groups re-form at each
    arrival; FedScale clients have none (-1). Test samples come from the pool's test side,
    matching each bucket's label mix (FedScale's test split has other clients, so no client
    has test data of its own).
    """
    rng = np.random.default_rng([params.seed, 0x0B1])
    train_ids, test_ids = train_test_ids(rng, pool, params.test_fraction)
    fedscale = pool.meta is not None and "client" in pool.meta
    clients = (fedscale_clients if fedscale else interest_clients)(rng, params, pool, train_ids)
    test_by_label = by_label(test_ids, pool.y, pool.num_classes)
    builder = TraceBuilder(len(clients), params.rounds, pool.num_classes)
    updates = np.arange(0, params.rounds, params.bucket_rounds)
    windows = SlidingWindows(builder, updates, params.window_rounds, min_size=1)
    bucket_arrival = arrival_rounds(np.arange(params.buckets), params.bucket_rounds, params.window_rounds)
    in_window = window_bounds(bucket_arrival, updates, params.window_rounds, min_size=1)
    mixes = interest_mixes(in_window, params.groups)
    test_bucket = np.repeat(np.arange(params.buckets), params.test_samples)
    test_arrival = arrival_rounds(test_bucket, params.bucket_rounds, params.window_rounds)
    for index, client in enumerate(clients):
        builder.samples(index, client.ids, bucket_tests(rng, client, pool.y, test_by_label, params.test_samples))
        arrival = arrival_rounds(client.bucket, params.bucket_rounds, params.window_rounds)
        windows.client(index, arrival, test_arrival, window_groups(client.interest, in_window, mixes))
    windows.events("arrival")
    return builder


register(Generator("openimage-buckets", OpenImageBucketsParams, make))
