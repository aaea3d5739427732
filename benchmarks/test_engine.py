"""Engine vs the sequential reference loop, timed in the same process; the ratio is the figure that matters.

Run: pytest benchmarks --benchmark-only   (the speed-up is in each benchmark's extra_info)
"""

import statistics
import time

import pytest

from driftbench.engine.workload import Workload

WORKLOADS = {
    "lenet5-3x32x32-10clients": dict(model="lenet5", input_shape=(3, 32, 32), clients=10, steps=10, batch=50),
    "mlp-digits-50clients": dict(model="mlp", input_shape=(1, 8, 8), clients=50, steps=10, batch=20),
}


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_engine_vs_sequential(benchmark, name):
    workload = Workload(**WORKLOADS[name])
    workload.batched(), workload.sequential()  # warm-up
    sequential = median_seconds(workload.sequential, repeats=3)
    benchmark.pedantic(workload.batched, rounds=5, warmup_rounds=1)
    batched = benchmark.stats.stats.median if benchmark.stats else median_seconds(workload.batched, repeats=1)
    benchmark.extra_info.update(sequential_seconds=sequential, batched_seconds=batched, speedup_vs_sequential=sequential / batched)
    print(f"\n{name}: batched {batched:.3f} s/round, sequential {sequential:.3f} s/round, speed-up {sequential / batched:.2f}x")
