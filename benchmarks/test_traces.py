"""Trace generation at paper scale: openimage-buckets over a FedScale-shaped pool of 5,078 clients and 100 classes.

Run: pytest benchmarks/test_traces.py --benchmark-only -s   (seconds, file size and peak memory are in extra_info)
Goals: generation <= 30 s, trace file <= 50 MB, peak memory <= 1 GB. The pool's images are 1 x 1 x 1
pixels: only the index structure matters for generation.
"""

import time
import tracemalloc

import numpy as np
import pandas as pd

from driftbench.data.pool import Pool
from driftbench.traces.catalog import load_spec
from driftbench.traces.generators import GENERATORS
from driftbench.traces.io import save_trace

CLIENTS, CLASSES, TEST_PER_CLASS = 5078, 100, 50


def fedscale_shaped_pool(seed: int = 0) -> Pool:
    """Clients hold 10-30 of 100 Zipf-popular classes and 30-600 samples (about 1.1 million in all), plus a test split."""
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, CLASSES + 1)
    sizes = rng.integers(30, 600, size=CLIENTS)
    labels = []
    for size in sizes:
        held = rng.choice(CLASSES, size=rng.integers(10, 31), replace=False, p=popularity / popularity.sum())
        labels.append(np.concatenate([held, rng.choice(held, size=size - len(held))]))
    test = np.repeat(np.arange(CLASSES), TEST_PER_CLASS)
    y = np.concatenate([*labels, test]).astype(np.int64)
    meta = pd.DataFrame(
        {
            "client": np.concatenate([np.repeat(np.arange(CLIENTS), sizes), np.full(len(test), CLIENTS)]),
            "split": np.where(np.arange(len(y)) < sizes.sum(), "train", "test"),
        }
    )
    return Pool("fedscale-shaped", np.zeros((len(y), 1, 1, 1), np.uint8), y, CLASSES, meta)


def generate_and_save(pool: Pool, path) -> int:
    """Generate the paper-scale trace over ``pool``, save it and return the file size in bytes."""
    spec = load_spec("openimage-buckets", "paper")
    info = {"name": "openimage-buckets", "generator": spec.generator, "params": {}, "source": {"name": pool.name, "params": {}}}
    trace = GENERATORS[spec.generator].make(spec.params, pool).build(info, pool.y)
    save_trace(trace, path, spec.defaults())
    assert trace.num_clients == CLIENTS and len(trace.events()) == 7
    return path.stat().st_size


def test_openimage_buckets_paper_scale(benchmark, tmp_path):
    pool = fedscale_shaped_pool()
    path = tmp_path / "openimage-buckets-paper.trace"
    size = benchmark.pedantic(generate_and_save, args=(pool, path), rounds=1, iterations=1)
    assert size <= 50e6
    if benchmark.disabled:  # a smoke run (--benchmark-disable): no timing, no second, memory-traced run
        return
    seconds = benchmark.stats.stats.median
    tracemalloc.start()
    started = time.perf_counter()
    generate_and_save(pool, tmp_path / "again.trace")
    traced = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    benchmark.extra_info.update(generation_seconds=seconds, file_mb=size / 1e6, peak_mb=peak / 1e6, pool_samples=len(pool))
    print(
        f"\nopenimage-buckets paper scale ({len(pool):,} pool samples): {seconds:.1f} s, file {size / 1e6:.1f} MB, "
        f"peak traced memory {peak / 1e6:.0f} MB (traced run {traced:.1f} s)"
    )
