"""Clustering helpers shared by methods: torch distance kernels, k-means with K by silhouette, model-bank remixing.

Distance kernels run in torch, on the GPU when one is present and the input is large enough
to pay for the transfers (``kernel_device``); k-means, silhouette and hierarchical clustering
come from scikit-learn and scipy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.metrics import silhouette_score

from driftbench.config import require
from driftbench.engine.batched import Params
from driftbench.methods import server_work as work
from driftbench.methods.base import ProxParams

DISTANCES = ("l1", "js", "l2")
KERNEL_CHUNK = 1024  # rows per distance block; bounds the memory of the Jensen-Shannon kernel
ANGLE_CHUNK = 256  # subspace pairs' rows per batched SVD
# Input entries below which kernels stay on the CPU even with a GPU. On an H100 (issue 17), FIELDING's
# 5,078 x 100 kernels ran 1.8x (re-clustering) and 27x (per-client adjustment) slower than on 2 CPU
# cores, launch- and transfer-bound, while k-means over 100,000 x 10,000 ran 3.5x faster: the cut-off
# lies between 5e5 and 1e9 entries, and 1e7 is a choice inside that range.
GPU_MIN_ENTRIES = 10_000_000


@dataclass(frozen=True)
class ClusterCountParams(ProxParams):
    """A fixed number of clusters ``k`` and FedProx's ``mu``."""

    k: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.k >= 1, f"k must be >= 1, got {self.k}")


def unit_vectors(vectors: np.ndarray) -> np.ndarray:
    """Vectors (along the last axis) scaled to unit L2 norm; zero vectors stay zero."""
    work.charge(work.norms(vectors.size))
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    unit: np.ndarray = vectors / np.where(norms > 0, norms, np.inf)  # one pass; a zero vector divides to zeros
    return unit


def relabel(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered 0..K-1 in sorted order."""
    return np.unique(labels, return_inverse=True)[1].astype(np.int64)


def kernel_device(entries: int) -> torch.device:
    """Where a kernel over ``entries`` input numbers runs: the GPU when present and the input is large enough, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() and entries >= GPU_MIN_ENTRIES else "cpu")


def as_kernel_tensor(points: np.ndarray | torch.Tensor, device: torch.device | None = None) -> torch.Tensor:
    """Points as a float32 tensor on ``device`` (default: the kernel device for their size)."""
    return torch.as_tensor(points, dtype=torch.float32).to(device or kernel_device(int(np.prod(points.shape))))


def pairwise_distances(a: torch.Tensor, b: torch.Tensor, metric: str) -> torch.Tensor:
    """Distances (len(a) x len(b)): L1, Euclidean, or Jensen-Shannon distance (base 2, in [0, 1]) between distributions."""
    if metric not in DISTANCES:
        raise ValueError(f"metric must be one of {DISTANCES}, got {metric!r}")
    work.charge(work.distances(len(a), len(b), a.shape[1], metric))
    if metric == "l1":
        return torch.cdist(a, b, p=1)
    if metric == "l2":
        return torch.cdist(a, b, p=2)
    return torch.cat([_js_block(a[i : i + KERNEL_CHUNK], b) for i in range(0, len(a), KERNEL_CHUNK)])


def _js_block(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    p, q = a[:, None, :], b[None, :, :]
    m = (p + q) / 2
    divergence = (torch.special.xlogy(p, p / m.clamp_min(1e-30)) + torch.special.xlogy(q, q / m.clamp_min(1e-30))).sum(-1) / 2
    distance: torch.Tensor = (divergence.clamp_min(0) / np.log(2)).sqrt()
    return distance


def cluster_centers(points: torch.Tensor, labels: np.ndarray, k: int, reducer: str = "mean") -> torch.Tensor:
    """Per-cluster mean (or coordinate-wise median) of ``points`` (k x D); NaN rows for empty clusters."""
    work.charge(points.numel())
    index = torch.as_tensor(labels, device=points.device)
    if reducer == "mean":
        sums = torch.zeros(k, points.shape[1], dtype=points.dtype, device=points.device).index_add_(0, index, points)
        counts = torch.bincount(index, minlength=k).to(points.dtype)[:, None]
        return torch.where(counts > 0, sums / counts.clamp_min(1), float("nan"))
    centers = torch.full((k, points.shape[1]), float("nan"), dtype=points.dtype, device=points.device)
    for c in np.unique(labels):
        centers[c] = points[index == c].median(0).values
    return centers


def nearest_center(points: torch.Tensor, centers: torch.Tensor, metric: str) -> np.ndarray:
    """Index of each point's nearest non-empty center."""
    dist = pairwise_distances(points, torch.nan_to_num(centers), metric)
    dist[:, torch.isnan(centers).any(1)] = float("inf")
    return dist.argmin(1).cpu().numpy()


def any_cluster_wider_than(points: torch.Tensor, labels: np.ndarray, metric: str, threshold: float) -> bool:
    """Whether two points of one cluster are farther apart than ``threshold``.

    Exact, with shortcuts: with r the largest distance from a member to the cluster mean,
    r <= diameter <= 2r for these metrics (a convex distance and the triangle inequality), so
    only clusters with r <= threshold < 2r need their pairwise distances, in blocks, stopping
    at the first pair over the threshold.
    """
    centers = cluster_centers(points, labels, int(labels.max()) + 1)
    index = torch.as_tensor(labels, device=points.device)
    radius = pairwise_distances(points, torch.nan_to_num(centers), metric).gather(1, index[:, None])[:, 0]
    by_cluster = torch.zeros(len(centers), dtype=radius.dtype, device=points.device).scatter_reduce(0, index, radius, "amax")
    if bool((by_cluster > threshold).any()):
        return True
    for c in torch.nonzero(2 * by_cluster > threshold).flatten().tolist():
        members = points[index == c]
        if any(
            bool((pairwise_distances(members[i : i + KERNEL_CHUNK], members, metric) > threshold).any())
            for i in range(0, len(members), KERNEL_CHUNK)
        ):
            return True
    return False


DUPLICATE_SCALE = 1e-9  # row pairs this close (squared, relative to the largest squared norm) are compared entry by entry
KMEANS_TOL = 1e-4  # scikit-learn's default: Lloyd stops once the centers move less than this x the mean coordinate variance


def span_coordinates(points: np.ndarray, unit: bool = False) -> np.ndarray:
    """The rows' coordinates (n x n) in an orthonormal basis of their centred span: every distance between rows kept.

    From the eigenvectors of the centred rows' Gram matrix, scaled by the square roots of its
    eigenvalues (those below zero by rounding taken as zero). Equal rows get equal
    coordinates, so that their distance stays exactly zero and their ties stay ties. ``unit``:
    the coordinates of ``unit_vectors(points)``, from the rows' own Gram matrix (one pass over them).
    """
    gram = points @ points.T
    if unit:
        work.charge(work.norms(points.size))
        norms = np.sqrt(np.diag(gram))
        scale = 1 / np.where(norms > 0, norms, np.inf)  # a zero row scales to zeros, as in unit_vectors
        gram = gram * scale[:, None] * scale[None, :]
    centred = gram - gram.mean(0)[None, :] - gram.mean(1)[:, None] + gram.mean()
    values, vectors = np.linalg.eigh(centred)
    coordinates: np.ndarray = vectors * np.sqrt(values.clip(min=0))
    squared = np.diag(centred)[:, None] + np.diag(centred)[None, :] - 2 * centred
    close = np.triu(squared <= DUPLICATE_SCALE * np.diag(centred).max(), 1)
    for i, j in zip(*np.nonzero(close)):
        a, b = points[i], points[j]
        if np.array_equal(a, b) or (unit and np.array_equal(a * scale[i], b * scale[j])):
            coordinates[j] = coordinates[i]
    return coordinates


def kmeans_of_few(points: np.ndarray, k: int, seed: int, restarts: int = 1, unit: bool = False) -> KMeans:
    """scikit-learn's KMeans of n points in D dimensions (``unit``: of ``unit_vectors(points)``), fitted on their
    ``span_coordinates`` when D > n.

    k-means++ seeding draws by the number of points and every step uses only distances to
    points and to means of points, which the n span coordinates keep: the labels and
    iterations are those of the fit on all D coordinates (up to float rounding, which
    ``tests/methods/test_clustering.py`` checks), at n numbers a point. ``tol`` is scaled by
    n / D so that its threshold, tol x the variance per coordinate, is the same.
    """
    n, dim = points.shape
    if dim <= n:
        return KMeans(n_clusters=k, n_init=restarts, random_state=seed).fit(unit_vectors(points) if unit else points)
    coordinates = span_coordinates(points, unit)
    model = KMeans(n_clusters=k, n_init=restarts, random_state=seed, tol=KMEANS_TOL * n / dim)
    return model.fit(coordinates)


SEEDING_SAMPLE = 10_000  # k-means++ seeding beyond this many points runs on a sample of this size


def kmeans(points: np.ndarray, k: int, seed: int, restarts: int = 10) -> np.ndarray:
    """k-means labels: scikit-learn's up to SEEDING_SAMPLE points; beyond, one run on the torch kernels.

    The large case seeds with scikit-learn's k-means++ on a seeded sample (as MiniBatchKMeans
    does with ``init_size``), then runs Lloyd iterations whose distances are one matrix
    multiply per pass (scikit-learn's blocked Cython loop ran at a fifth of the matmul rate).
    """
    if len(points) <= SEEDING_SAMPLE:
        model = KMeans(n_clusters=k, n_init=restarts, random_state=seed)
        labels: np.ndarray = model.fit_predict(points).astype(np.int64)
        work.charge(work.fitted_kmeans(model, *points.shape))
        return labels
    rows = np.sort(np.random.default_rng([seed, 1]).choice(len(points), SEEDING_SAMPLE, replace=False))
    centers, _ = kmeans_plusplus(points[rows], k, random_state=seed)
    work.charge(work.kmeans_plusplus(SEEDING_SAMPLE, k, points.shape[1]))
    on = as_kernel_tensor(points)
    return lloyd(on, as_kernel_tensor(centers, on.device))


def lloyd(points: torch.Tensor, centers: torch.Tensor, max_iter: int = 300, tol: float = 1e-4) -> np.ndarray:
    """Lloyd iterations from ``centers`` until they move less than scikit-learn's ``tol`` criterion; final labels."""
    threshold = tol * float(points.var(0).mean())
    labels = _closest(points, centers)
    members = torch.zeros(len(centers), len(points), dtype=points.dtype, device=points.device)
    for _ in range(max_iter):
        members.zero_()[torch.as_tensor(labels, device=points.device), torch.arange(len(points), device=points.device)] = 1
        counts = members.sum(1, keepdim=True)
        work.charge(work.matmul(members.shape[0], members.shape[1], points.shape[1]))
        moved = torch.where(counts > 0, members @ points / counts.clamp_min(1), centers)  # an emptied cluster stays put
        shift, centers = float((moved - centers).pow(2).sum()), moved
        labels = _closest(points, centers)
        if shift <= threshold:
            break
    return labels.astype(np.int64)


def _closest(points: torch.Tensor, centers: torch.Tensor) -> np.ndarray:
    """Nearest center in Euclidean distance: argmin of |c|^2 - 2 x.c, one matrix multiply."""
    work.charge(work.matmul(points.shape[0], points.shape[1], len(centers)))
    return torch.addmm(centers.pow(2).sum(1), points, centers.T, alpha=-2).argmin(1).cpu().numpy()


def kmeans_by_silhouette(
    points: np.ndarray,
    k_min: int,
    k_max: int,
    seed: int,
    metric: str = "euclidean",
    restarts: int = 10,
    sample: int | None = None,
) -> np.ndarray:
    """k-means labels for the K in ``k_min..k_max`` with the best silhouette score (one cluster if all points coincide).

    k-means is Euclidean (scikit-learn); the silhouette uses ``metric`` ("euclidean", or one of
    DISTANCES through the torch kernels). With more than ``sample`` points, K is searched on a
    seeded sample of ``sample`` points and the chosen K is then fitted on all of them.
    """
    rows = np.arange(len(points))
    if sample is not None and len(points) > sample:
        rows = np.sort(np.random.default_rng(seed).choice(len(points), sample, replace=False))
    searched = points[rows]
    scored, scored_metric = searched, metric
    if metric != "euclidean":
        subset = as_kernel_tensor(searched)
        scored, scored_metric = pairwise_distances(subset, subset, metric).fill_diagonal_(0).cpu().numpy(), "precomputed"
    distinct = len(np.unique(searched, axis=0))
    best, best_k, best_score = np.zeros(len(searched), dtype=np.int64), 1, -np.inf
    for k in range(k_min, min(k_max, distinct, len(searched) - 1) + 1):
        labels = kmeans(searched, k, seed, restarts)
        score = silhouette_score(scored, labels, metric=scored_metric)
        work.charge(work.silhouette(len(searched), 0 if scored_metric == "precomputed" else searched.shape[1]))
        if score > best_score:
            best, best_k, best_score = labels, k, score
    if len(rows) == len(points):
        return best
    if best_k == 1:
        return np.zeros(len(points), dtype=np.int64)
    return kmeans(points, best_k, seed, restarts)


def remix_models(bank: Params, old: np.ndarray, new: np.ndarray) -> Params:
    """A bank for clusters ``new``: each new cluster's model is the mean of its members' old cluster models."""
    device = next(iter(bank.values())).device
    dtype = next(iter(bank.values())).dtype
    weights = np.zeros((int(new.max()) + 1, len(next(iter(bank.values())))))
    np.add.at(weights, (new, old), 1.0)
    weights /= np.maximum(weights.sum(1, keepdims=True), 1)
    w = torch.as_tensor(weights, dtype=dtype, device=device)
    work.charge(work.matmul(*weights.shape, work.model_parameters(bank)))
    return {n: torch.tensordot(w, p, dims=1) for n, p in bank.items()}


def independent_inits(params: Params, copies: int, seed: int) -> Params:
    """``copies`` models: the given one, then copies whose every tensor's entries are shuffled (same i.i.d. init law)."""
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for name, p in params.items():
        flat = p.reshape(-1)
        perms = [torch.arange(flat.numel())] + [torch.randperm(flat.numel(), generator=gen) for _ in range(copies - 1)]
        out[name] = torch.stack([flat[perm.to(p.device)].reshape(p.shape) for perm in perms])
    return out


def per_cluster_participants(rng: np.random.Generator, assignment: np.ndarray, total: int) -> np.ndarray:
    """``total / K`` clients drawn from each of the K non-empty clusters (the first ``total % K`` get one more), sorted."""
    clusters = np.unique(assignment)
    quota = np.full(len(clusters), total // len(clusters)) + (np.arange(len(clusters)) < total % len(clusters))
    picked = [
        rng.choice(np.flatnonzero(assignment == c), size=min(max(q, 1), int((assignment == c).sum())), replace=False)
        for c, q in zip(clusters, quota)
    ]
    return np.sort(np.concatenate(picked))


def flat_updates(trained: Params, bank: Params, start: np.ndarray) -> np.ndarray:
    """Each participant's update (trained minus its start model), flattened to a row (float64 numpy)."""
    index = torch.as_tensor(start, device=next(iter(bank.values())).device)
    flat = torch.empty(len(start), work.model_parameters(bank), dtype=torch.float64)
    column = 0
    for name, p in bank.items():
        size = p[0].numel()
        flat[:, column : column + size] = (trained[name] - p[index]).reshape(len(start), -1)  # widened as written
        column += size
    work.charge(flat.numel())
    return flat.numpy()


def principal_vectors(inputs: torch.Tensor, labels: torch.Tensor, p: int) -> np.ndarray:
    """A client's upload: the top-``p`` left singular vectors of its data matrix (features x samples), flattened."""
    matrix = inputs.reshape(len(inputs), -1).double().T
    u: torch.Tensor = torch.linalg.svd(matrix, full_matrices=False).U[:, :p]
    if u.shape[1] < p:  # fewer samples than p: pad with zero columns, which add no angle information
        u = torch.nn.functional.pad(u, (0, p - u.shape[1]))
    return u.reshape(-1).cpu().numpy()


def smallest_principal_angles(bases: torch.Tensor, others: torch.Tensor | None = None) -> torch.Tensor:
    """Smallest principal angle in degrees between each subspace of ``bases`` and each of ``others`` (default:
    ``bases``; each n x D x p, orthonormal columns): len(bases) x len(others)."""
    others = bases if others is None else others
    n, dim, p = bases.shape
    work.charge(n * len(others) * (work.matmul(p, dim, p) + work.svd(p, p)))
    rows = []
    for i in range(0, len(bases), ANGLE_CHUNK):
        largest = torch.linalg.svdvals(torch.einsum("adp,bdq->abpq", bases[i : i + ANGLE_CHUNK], others))[..., 0]
        rows.append(torch.rad2deg(torch.arccos(largest.clamp(-1, 1))))
    return torch.cat(rows)
