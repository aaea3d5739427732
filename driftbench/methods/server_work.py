"""The server's work in FLOPs, counted from operation sizes where a method does it, for the simulated clock.

The scheduler makes a ``ServerWork`` counter current (``counting``) around a method's plan
and aggregate steps; the shared helpers and the methods ``charge`` the cost of each
significant computation next to it, from the sizes involved only, so the count (and the
simulated server time) is the same in every run with the same inputs. Outside a counter a
charge does nothing; while a client answers a query (``paused``) nothing is charged to the
server. Costs are the leading terms of the usual implementations (a multiply-add is 2 FLOPs;
comparisons, logarithms and bit operations count as one each).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from sklearn.cluster import KMeans

# per coordinate of a pair: difference, |.| or square, sum; Jensen-Shannon: the mean, two ratios, two x log x, sums
DISTANCE_FLOPS = {"euclidean": 3, "l2": 3, "l1": 3, "js": 12}
AFFINITY_PROPAGATION_FLOPS = 14  # per similarity entry and iteration: responsibility and availability updates, damping
LINKAGE_FLOPS = 4  # per pair: scipy's nearest-neighbour chain reads each distance and updates it (Lance-Williams)
LOUVAIN_SWEEPS = 10  # networkx reports no sweep count; local moves settle within a few sweeps over the edges
ENTROPY_GRADIENT_FLOPS = 30  # per entry: fusion (4), row softmax (3), entropy (3), backward twice the forward


@dataclass
class ServerWork:
    """FLOPs charged to the server while this counter is current."""

    flops: int = 0


_current: ContextVar[ServerWork | None] = ContextVar("server_work", default=None)


@contextmanager
def counting() -> Iterator[ServerWork]:
    """Make a fresh counter current for the block; charges inside it add to its ``flops``."""
    work = ServerWork()
    token = _current.set(work)
    try:
        yield work
    finally:
        _current.reset(token)


@contextmanager
def paused() -> Iterator[None]:
    """No counter for the block (clients' own computation is not the server's)."""
    token = _current.set(None)
    try:
        yield
    finally:
        _current.reset(token)


def charge(flops: int) -> None:
    """Add ``flops`` to the current counter; nothing outside ``counting``."""
    work = _current.get()
    if work is not None:
        work.flops += int(flops)


def model_parameters(bank: Mapping[str, Any]) -> int:
    """Parameters of one model of a bank (models stacked along the first axis of every tensor)."""
    return sum(p[0].numel() for p in bank.values())


def matmul(n: int, k: int, m: int) -> int:
    """An (n x k) by (k x m) matrix product."""
    return 2 * n * k * m


def distances(n: int, m: int, d: int, metric: str = "euclidean") -> int:
    """A matrix of distances between n and m points of dimension d."""
    return DISTANCE_FLOPS[metric] * n * m * d


def norms(entries: int) -> int:
    """Vectors with ``entries`` entries in all scaled to unit L2 norm (square, sum, divide per entry)."""
    return 3 * entries


def cosine_similarity(n: int, m: int, d: int) -> int:
    """Cosine similarities between n and m vectors of dimension d: unit vectors, then their dot products."""
    return norms(n * d) + norms(m * d) + matmul(n, d, m)


def kmeans_plusplus(n: int, k: int, d: int) -> int:
    """k-means++ seeding as scikit-learn does it: 2 + ln k candidates per center, each compared with every point."""
    return matmul(n, d, k * (2 + int(math.log(k))))


def kmeans(n: int, k: int, d: int, iterations: int, restarts: int = 1) -> int:
    """k-means of n points in d dimensions: per restart, k-means++ seeding and Lloyd iterations (assignment and means)."""
    return restarts * (kmeans_plusplus(n, k, d) + iterations * (matmul(n, d, k) + n * d))


def fitted_kmeans(model: KMeans, n: int, d: int) -> int:
    """A fitted scikit-learn KMeans on n points: every restart counted as long as the kept one (``n_iter_``)."""
    return kmeans(n, model.n_clusters, d, model.n_iter_, model.n_init)


def silhouette(n: int, d: int = 0, metric: str = "euclidean") -> int:
    """Silhouette score of n points: their distances (none when precomputed, ``d`` = 0), then per-cluster sums of each row."""
    return distances(n, n, d, metric) + n * n


def linkage(n: int) -> int:
    """Hierarchical (average or complete) linkage of n points from their precomputed distances."""
    return LINKAGE_FLOPS * n * n


def dbscan(n: int) -> int:
    """DBSCAN on a precomputed n x n distance matrix: each distance compared with eps, then the neighbourhoods expanded."""
    return 2 * n * n


def affinity_propagation(n: int, iterations: int) -> int:
    """Affinity Propagation on an n x n similarity matrix for ``iterations`` iterations."""
    return AFFINITY_PROPAGATION_FLOPS * iterations * n * n


def modularity_moves(edges: int) -> int:
    """Louvain's first level (local moves) on a graph with ``edges`` edges: each sweep weighs every edge both ways."""
    return LOUVAIN_SWEEPS * 2 * edges


def svd(m: int, n: int) -> int:
    """A singular value decomposition of an m x n matrix (bidiagonalisation, the leading term)."""
    return 4 * m * n * min(m, n)


def hungarian(rows: int, cols: int) -> int:
    """An optimal assignment on a rows x cols cost matrix (shortest augmenting paths, cubic in the smaller side)."""
    return rows * cols * min(rows, cols)


def sort(n: int, length: int) -> int:
    """n sorts of ``length`` values each."""
    return n * length * max(1, math.ceil(math.log2(max(length, 2))))


def aggregation(models: int, parameters: int) -> int:
    """A weighted sum of ``models`` models of ``parameters`` parameters each (a multiply-add per entry)."""
    return 2 * models * parameters


def entropy_minimisation(evaluations: int, n: int) -> int:
    """FedDAG's fusion-weight search: ``evaluations`` evaluations of an n x n matrix's row-softmax entropy and its gradient."""
    return ENTROPY_GRADIENT_FLOPS * evaluations * n * n
