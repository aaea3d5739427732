"""``driftbench bench clustering``: FIELDING's server-side clustering costs beside the paper's figures (003, appendix C)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from driftbench.config import require
from driftbench.methods.clustering import kernel_device, kmeans
from driftbench.methods.fielding import Fielding, FieldingParams
from driftbench.methods.rounds import RunContext
from driftbench.train_config import TrainConfig

# FIELDING appendix C: 5,078 clients x 100 labels; k-means n = 100,000, d = 10,000, k = 10 single-threaded
PAPER_SECONDS = {"global_reclustering": 15.6, "per_client_adjustment": 2.0, "kmeans": 477.8}
GOAL_SECONDS = {"global_reclustering": 0.5, "per_client_adjustment": 0.02, "kmeans": 20.0}


@dataclass(frozen=True)
class ClusteringBenchSizes:
    """Problem sizes: the paper's by default; smaller ones for tests."""

    clients: int = 5078
    classes: int = 100
    kmeans_n: int = 100_000
    kmeans_d: int = 10_000
    kmeans_k: int = 10
    seed: int = 0

    def __post_init__(self) -> None:
        require(self.clients >= 20, f"clients must be >= 20, got {self.clients}")
        require(self.classes >= 2, f"classes must be >= 2, got {self.classes}")
        require(self.kmeans_n > self.kmeans_k >= 2, f"need kmeans_n > kmeans_k >= 2, got {self.kmeans_n}, {self.kmeans_k}")
        require(self.kmeans_d >= 1, f"kmeans_d must be >= 1, got {self.kmeans_d}")


def label_distributions(clients: int, classes: int, rng: np.random.Generator, groups: int = 8) -> np.ndarray:
    """Label distributions of clients in latent interest groups, each holding at least 10 classes (as the paper's trace)."""
    preference = rng.dirichlet(np.full(classes, 0.2), groups)
    member = rng.integers(0, groups, clients)
    counts = np.stack([rng.multinomial(200, p) for p in preference[member]]).astype(float)
    counts[:, :10] += rng.random((clients, 10)) < 0.5  # ensure variety in the first classes too
    counts[np.arange(clients)[:, None], rng.choice(classes, (clients, 10))] += 1
    distributions: np.ndarray = counts / counts.sum(1, keepdims=True)
    return distributions


def fielding_state(distributions: np.ndarray, seed: int) -> Fielding:
    """A FIELDING instance (default parameters) holding these label distributions, before clustering."""
    method = Fielding(FieldingParams())
    init = {"w": torch.zeros(1)}
    method.setup(RunContext(len(distributions), distributions.shape[1], init, TrainConfig(), seed))
    method.representations = distributions.copy()
    method.delta, method.reclustered_before = method.params.c, False
    return method


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds one call of ``fn`` takes (GPU work synchronised) and its result."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    started = time.perf_counter()
    out = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - started, out


def kmeans_blobs(n: int, d: int, k: int, seed: int) -> np.ndarray:
    """n points in d dimensions around k random centers (float32), generated in blocks."""
    gen = torch.Generator().manual_seed(seed)
    centers = torch.randn(k, d, generator=gen) * 2
    out = torch.empty(n, d)
    for start in range(0, n, 10_000):
        rows = min(10_000, n - start)
        out[start : start + rows] = centers[torch.randint(0, k, (rows,), generator=gen)] + torch.randn(rows, d, generator=gen)
    return out.numpy()


def run_clustering_bench(sizes: ClusteringBenchSizes) -> dict[str, Any]:
    """Time FIELDING's global re-clustering, its per-client adjustment of every client, and one big k-means."""
    rng = np.random.default_rng(sizes.seed)
    method = fielding_state(label_distributions(sizes.clients, sizes.classes, rng), sizes.seed)
    method.global_clusters()  # warm-up: library initialisation is not what is measured
    recluster_s, method.assignment = timed(method.global_clusters)
    method.models = {"w": torch.zeros(int(method.assignment.max()) + 1, 1)}
    everyone = np.arange(sizes.clients)
    drifted = label_distributions(sizes.clients, sizes.classes, rng)

    def adjust() -> bool:
        moved, points, centers = method.adjust(everyone, drifted)
        return method.needs_reclustering(points, moved, centers)

    adjust_s, triggered = timed(adjust)
    data = kmeans_blobs(sizes.kmeans_n, sizes.kmeans_d, sizes.kmeans_k, sizes.seed)
    kmeans_s, labels = timed(lambda: kmeans(data, sizes.kmeans_k, sizes.seed, restarts=1))
    seconds = {"global_reclustering": recluster_s, "per_client_adjustment": adjust_s, "kmeans": kmeans_s}
    entries = {"global_reclustering": sizes.clients * sizes.classes, "per_client_adjustment": sizes.clients * sizes.classes}
    entries["kmeans"] = sizes.kmeans_n * sizes.kmeans_d
    return {
        "sizes": {
            "clients": sizes.clients,
            "classes": sizes.classes,
            "kmeans_n": sizes.kmeans_n,
            "kmeans_d": sizes.kmeans_d,
            "kmeans_k": sizes.kmeans_k,
        },
        "threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "clusters_found": int(method.assignment.max()) + 1,
        "adjustment_triggered_reclustering": triggered,
        "kmeans_clusters_found": int(len(np.unique(labels))),
        "results": [
            {
                "name": name,
                "device": str(kernel_device(entries[name])),
                "seconds": s,
                "goal_seconds": GOAL_SECONDS[name],
                "paper_seconds": PAPER_SECONDS[name],
                "paper_over_ours": PAPER_SECONDS[name] / s if s > 0 else None,
                "meets_goal": s <= GOAL_SECONDS[name],
            }
            for name, s in seconds.items()
        ],
    }


def format_clustering_bench(report: dict[str, Any]) -> str:
    """The human-readable table of a clustering benchmark report."""
    s = report["sizes"]
    lines = [
        f"FIELDING clustering costs ({report['threads']} torch threads): "
        f"{s['clients']} clients x {s['classes']} labels; k-means n={s['kmeans_n']}, d={s['kmeans_d']}, k={s['kmeans_k']}",
        f"{'step':<24} {'device':>6} {'ours_s':>10} {'goal_s':>8} {'paper_s':>8} {'paper/ours':>11}  goal",
    ]
    for r in report["results"]:
        ratio = f"{r['paper_over_ours']:.1f}x" if r["paper_over_ours"] else "-"
        lines.append(
            f"{r['name']:<24} {r['device']:>6} {r['seconds']:>10.4f} {r['goal_seconds']:>8g} {r['paper_seconds']:>8g} "
            f"{ratio:>11}  {'met' if r['meets_goal'] else 'missed'}"
        )
    return "\n".join(lines)
