"""Clustering helpers shared by methods."""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import silhouette_score


def kmeans_by_silhouette(points: np.ndarray, k_min: int, k_max: int, seed: int) -> np.ndarray:
    """k-means labels for the K in ``k_min..k_max`` with the best silhouette score (one cluster if all points coincide)."""
    distinct = len(np.unique(points, axis=0))
    best, best_score = np.zeros(len(points), dtype=np.int64), -np.inf
    for k in range(k_min, min(k_max, distinct, len(points) - 1) + 1):
        labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(points)
        score = silhouette_score(points, labels)
        if score > best_score:
            best, best_score = labels.astype(np.int64), score
    return best
