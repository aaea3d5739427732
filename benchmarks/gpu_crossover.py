"""Where the GPU starts to pay for the clustering kernels: Lloyd (k = 10) and Jensen-Shannon distances, CPU against CUDA.

Run on a CUDA host from the repository root: ``PYTHONPATH=. python benchmarks/gpu_crossover.py OUT.json THREADS JS_SIZES``
(for example ``2,16 1000,2000``); prints one JSON line per size, the best of three timings on each device, transfers included.
Not collected by pytest: it needs a GPU, and docs/performance.md gives its numbers.
"""

import json
import sys
import time
from collections.abc import Callable

import numpy as np
import torch

from driftbench.methods.clustering import as_kernel_tensor, lloyd, pairwise_distances

LLOYD_SHAPES = [(1000, 100), (3000, 100), (10000, 100), (1000, 1000), (10000, 1000), (30000, 1000), (100000, 1000)]


def best_seconds(fn: Callable[[], object], repeats: int = 3) -> float:
    """The fastest of ``repeats`` synchronised runs of ``fn`` after one warm-up."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return min(times)


def lloyd_row(points: np.ndarray, device: str) -> float:
    """Seconds for ten Lloyd passes over ``points`` on ``device``."""

    def go() -> None:
        on = as_kernel_tensor(points, torch.device(device))
        lloyd(on, as_kernel_tensor(points[:10], on.device), max_iter=10, tol=-1.0)

    return best_seconds(go)


def js_row(dists: np.ndarray, device: str) -> float:
    """Seconds for all pairwise Jensen-Shannon distances of ``dists`` on ``device``, back on the CPU."""

    def go() -> None:
        on = as_kernel_tensor(dists, torch.device(device))
        pairwise_distances(on, on, "js").cpu()

    return best_seconds(go)


def main(out: str, threads: str, js_sizes: str) -> None:
    """Time every shape at every thread count and write the rows to ``out``."""
    rng = np.random.default_rng(0)
    rows = []
    for count in (int(t) for t in threads.split(",")):
        torch.set_num_threads(count)
        cases: list[tuple[str, np.ndarray, Callable[[np.ndarray, str], float]]]
        cases = [("lloyd10", rng.standard_normal(shape).astype(np.float32), lloyd_row) for shape in LLOYD_SHAPES]
        cases += [("js", rng.dirichlet(np.ones(100), int(n)).astype(np.float32), js_row) for n in js_sizes.split(",")]
        for kernel, data, timer in cases:
            row = {"kernel": kernel, "n": len(data), "d": data.shape[1], "entries": data.size, "threads": count}
            row |= {device: timer(data, device) for device in ("cpu", "cuda")}
            row["cpu/cuda"] = row["cpu"] / row["cuda"]
            rows.append(row)
            print(json.dumps(row), flush=True)
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:4])
