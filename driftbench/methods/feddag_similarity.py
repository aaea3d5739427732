"""FedDAG's client proximity and clustering (001 sections 3.1-3.4, appendix A.9): the math, on plain arrays.

Angles are in degrees throughout; matrices are clients x clients, class-wise tensors
clients x clients x classes.
"""

from __future__ import annotations

from typing import overload

import numpy as np
import torch
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.optimize import minimize
from scipy.spatial.distance import squareform
from scipy.stats import wasserstein_distance

from driftbench.methods import server_work as work
from driftbench.methods.clustering import principal_vectors, unit_vectors

LOG_OFFSET = np.e  # Eq. 5's epsilon: ln(n + e) >= 1, so a class missing on one client (n = 0) still gives a finite ratio


def class_subspaces(inputs: torch.Tensor, labels: torch.Tensor, num_classes: int, p: int) -> np.ndarray:
    """A client's upload: per-class sample counts, then per class the top-``p`` left singular vectors of its features x samples.

    Classes the client lacks, and columns beyond a class's sample count, are zero vectors.
    The data are not centred (as in PACFL).
    """
    dim = inputs[0].numel() if len(inputs) else 0
    counts = torch.bincount(labels, minlength=num_classes)[:num_classes].double().cpu().numpy()
    vectors = np.zeros((num_classes, dim * p))
    for c in np.flatnonzero(counts):
        vectors[c] = principal_vectors(inputs[labels == c], labels[labels == c], p)
    return np.concatenate([counts, vectors.reshape(-1)])


def split_subspaces(summaries: np.ndarray, num_classes: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of ``class_subspaces`` for stacked uploads: counts (N x C) and bases (N x C x p x D)."""
    counts = summaries[:, :num_classes]
    bases = summaries[:, num_classes:].reshape(len(summaries), num_classes, -1, p)
    return counts, np.ascontiguousarray(bases.transpose(0, 1, 3, 2))


def class_angles(bases_a: np.ndarray, counts_a: np.ndarray, bases_b: np.ndarray, counts_b: np.ndarray) -> np.ndarray:
    """Eq. 4 with its rules: per class, the smallest angle between any basis vector of ``a`` and any of ``b``.

    90 degrees where the class is on one side only, 0 where on neither. Zero (padding)
    vectors never give the smallest angle. Returns (len(a) x len(b) x C) degrees.
    """
    num_classes = counts_a.shape[1]
    has_a, has_b = counts_a > 0, counts_b > 0
    out = np.where(has_a[:, None, :] != has_b[None, :, :], 90.0, 0.0)
    for c in range(num_classes):
        rows, cols = np.flatnonzero(has_a[:, c]), np.flatnonzero(has_b[:, c])
        if len(rows) and len(cols):
            ua, ub = unit_vectors(bases_a[rows, c]), unit_vectors(bases_b[cols, c])
            work.charge(work.matmul(len(rows) * ua.shape[1], ua.shape[2], len(cols) * ub.shape[1]))
            cosine = np.abs(np.einsum("apd,bqd->abpq", ua, ub)).max(axis=(2, 3))
            out[np.ix_(rows, cols, np.array([c]))] = np.degrees(np.arccos(np.clip(cosine, 0.0, 1.0)))[..., None]
    return out


def frequency_weights(counts: np.ndarray, delta: float) -> np.ndarray:
    """Eq. 5, min-max scaled over all pairs and classes to [1 - delta, 1 + delta] (all 1 when every ratio is equal)."""
    logs = np.log(counts + LOG_OFFSET)
    a, b = logs[:, None, :], logs[None, :, :]
    ratio = np.maximum(a, b) / np.minimum(a, b)
    return 1.0 + delta * (2.0 * minmax(ratio) - 1.0) if np.ptp(ratio) > 0 else np.ones_like(ratio)


def data_distance(angles: np.ndarray, counts: np.ndarray, delta: float) -> np.ndarray:
    """Eq. 6: the class-mean of weighted class-wise angles (N x N)."""
    work.charge(12 * angles.size)  # Eq. 5's ratios and their scaling (about 10 per entry), the weighting and the class mean
    distance: np.ndarray = (angles * frequency_weights(counts, delta)).mean(axis=2)
    return distance


def gradient_angles(updates: np.ndarray) -> np.ndarray:
    """Eq. 3: angle in degrees between every pair of (sparsified) updates; 90 against a zero update."""
    unit = unit_vectors(updates)
    work.charge(work.matmul(updates.shape[0], updates.shape[1], len(updates)) + len(updates) ** 2)
    cosine = np.clip(unit @ unit.T, -1.0, 1.0)
    zero = np.linalg.norm(updates, axis=1) == 0
    cosine[zero, :] = cosine[:, zero] = 0.0
    np.fill_diagonal(cosine, 1.0)
    angles: np.ndarray = np.degrees(np.arccos(cosine))
    return angles


def minmax(values: np.ndarray) -> np.ndarray:
    """Min-max normalisation to [0, 1] (zeros when all values are equal)."""
    span = np.ptp(values)
    return (values - values.min()) / span if span > 0 else np.zeros_like(values, dtype=np.float64)


@overload
def fuse(gradient: np.ndarray, data: np.ndarray, w: np.ndarray) -> np.ndarray: ...


@overload
def fuse(gradient: np.ndarray, data: np.ndarray, w: torch.Tensor) -> torch.Tensor: ...


def fuse(gradient: np.ndarray, data: np.ndarray, w: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
    """Eq. 7: A_ij = w_i G_ij + (1 - w_i) V_ij for i < j, mirrored (row i's weight is that of the lower index)."""
    n = len(gradient)
    lower = np.minimum.outer(np.arange(n), np.arange(n))
    if isinstance(w, torch.Tensor):
        g, v = torch.as_tensor(gradient, dtype=w.dtype), torch.as_tensor(data, dtype=w.dtype)
        row_weight = w[torch.as_tensor(lower)]
        fused: torch.Tensor = row_weight * g + (1 - row_weight) * v
        return fused
    weight = np.asarray(w)[lower]
    adjacency: np.ndarray = weight * gradient + (1 - weight) * data
    return adjacency


def entropy_loss(adjacency: torch.Tensor) -> torch.Tensor:
    """Eq. 8: mean over rows of the entropy of the row-softmax of the fused matrix."""
    soft = torch.softmax(adjacency, dim=1)
    return -(soft * torch.log(soft)).sum(dim=1).mean()


def fusion_weights(gradient: np.ndarray, data: np.ndarray, start: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Eq. 8: per-client weights in [0, 1] minimising the fused matrix's row-softmax entropy (L-BFGS-B, bounded).

    Only entries marked ``free`` move (A.8: newcomers and re-evaluated clients learn their own
    weight and keep the others'). Simplification: w is optimised directly rather than as an MLP's output.
    """

    def loss_and_grad(w: np.ndarray) -> tuple[float, np.ndarray]:
        weights = torch.tensor(w, dtype=torch.float64, requires_grad=True)
        loss = entropy_loss(fuse(gradient, data, weights))
        torch.autograd.backward(loss)  # what loss.backward() runs, through torch's typed entry point
        assert weights.grad is not None  # a leaf that requires grad has one after backward
        return float(loss.detach()), weights.grad.numpy()

    bounds = [(0.0, 1.0) if f else (float(s), float(s)) for s, f in zip(start, free)]
    result = minimize(loss_and_grad, np.asarray(start, dtype=np.float64), jac=True, method="L-BFGS-B", bounds=bounds)
    work.charge(work.entropy_minimisation(result.nfev, len(start)))
    optimum: np.ndarray = result.x
    return optimum


def clustering_loss(
    adjacency: np.ndarray, labels: np.ndarray, lam: float, gamma: float, tau: float, summed: bool = False
) -> float:
    """Eq. 9-10: compactness (mean intra-cluster distance, averaged over clusters) + lam x degeneracy penalty.

    Choice: L1 is averaged over the Z clusters (``summed``: as printed). Summed, it grows with the number of
    equally tight clusters, and on a planted 11-group matrix it ranks one cluster above the 11.
    """
    clusters, sizes = np.unique(labels, return_counts=True)
    work.charge(adjacency.size)
    tightness = [adjacency[np.ix_(labels == z, labels == z)].sum() / size**2 for z, size in zip(clusters, sizes)]
    compact = np.sum(tightness) if summed else np.mean(tightness)
    floor = len(labels) / len(clusters) - gamma * sizes.std()
    degenerate = np.exp(np.maximum(0.0, floor - sizes) / tau).mean()
    return float(compact + lam * degenerate)


def threshold_grid(step: float) -> np.ndarray:
    """Thresholds alpha from 1.0 down to ``step`` in steps of ``step`` (001 appendix B.10)."""
    return np.round(np.arange(1.0, step / 2, -step), 10)


def cut(adjacency: np.ndarray, alpha: float) -> np.ndarray:
    """Average-linkage agglomerative clusters merged while their distance is at most ``alpha``, labelled 0.. by first member."""
    if len(adjacency) < 2:
        return np.zeros(len(adjacency), dtype=np.int64)
    tree = linkage(squareform((adjacency + adjacency.T) / 2, checks=False), method="average")
    work.charge(work.linkage(len(adjacency)))
    return first_seen_labels(fcluster(tree, alpha, criterion="distance"))


def first_seen_labels(labels: np.ndarray) -> np.ndarray:
    """Relabel clusters 0, 1, ... in order of their first member."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    return np.argsort(np.argsort(first))[inverse].astype(np.int64)


def optimal_clustering(
    adjacency: np.ndarray,
    step: float,
    lam: float,
    gamma: float,
    tau: float,
    summed: bool = False,
    plateau: bool = True,
) -> tuple[np.ndarray, float]:
    """Algorithm 3: the clustering of the threshold grid with low loss and relatively few clusters, and its alpha.

    Line 8 ("select alpha* with low score and relatively small Z") made operational, after
    appendix B.10's reading of its Table 19: among candidates whose loss is below the
    one-cluster candidate's, take the cluster count held over the most thresholds (the
    plateau), then the lowest loss, then the fewest clusters (``plateau`` false: the lowest
    loss, then the fewest clusters). One cluster per client is never a candidate; with no
    candidate below the one-cluster loss, the lowest loss wins. ``summed``: Eq. 9's L1 as printed.
    """
    n = len(adjacency)
    candidates = [(alpha, cut(adjacency, alpha)) for alpha in threshold_grid(step)]
    candidates = [(a, labels) for a, labels in candidates if labels.max() + 1 < n] or candidates[:1]
    losses = np.array([clustering_loss(adjacency, labels, lam, gamma, tau, summed) for _, labels in candidates])
    counts = np.array([labels.max() + 1 for _, labels in candidates])
    single = losses[counts == 1]
    eligible = np.flatnonzero(losses < single.min()) if len(single) else np.arange(len(candidates))
    if not len(eligible):
        eligible = np.array([int(losses.argmin())])
    held = {z: int((counts[eligible] == z).sum()) if plateau else 0 for z in counts[eligible]}
    best = min(eligible, key=lambda i: (-held[counts[i]], losses[i], counts[i]))
    return candidates[best][1], float(candidates[best][0])


def label_shift(current: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """Eq. 41's statistic: W1 between each client's normalised label histograms (classes on the line 0..C-1).

    NaN where either histogram is empty (such a client is never flagged).
    """
    num_classes = current.shape[1]
    support = np.arange(num_classes)
    work.charge(work.sort(len(current), 2 * num_classes))
    distances = np.full(len(current), np.nan)
    for i, (now, before) in enumerate(zip(current, previous)):
        if now.sum() > 0 and before.sum() > 0:
            distances[i] = wasserstein_distance(support, support, now, before)
    return distances


def shifted(distances: np.ndarray, num_classes: int, fraction: float) -> np.ndarray:
    """Eq. 41 as printed: clients whose W1 exceeds fraction / C.

    Histograms are normalised, i.e. Eq. 41's n_i is the client's window size. At unit class spacing
    the rule flags a client when a share ``fraction`` / C of its data moves one class: C times more
    sensitive than A.9's gloss ("roughly 20% of local data has changed"); the printed rule is kept.
    """
    flags: np.ndarray = np.nan_to_num(distances, nan=-np.inf) > fraction / num_classes
    return flags
