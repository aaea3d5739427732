"""Engine vs the sequential reference loop, timed interleaved in the same process; the ratio is the figure that matters.

Run: pytest benchmarks   (each ratio is checked against thresholds.json and kept in the benchmark's extra_info)
"""

import pytest

from driftbench.bench.workload import Workload

WORKLOADS = {
    "lenet5-3x32x32-10clients": dict(model="lenet5", input_shape=(3, 32, 32), clients=10, steps=10, batch=50),
    "mlp-digits-50clients": dict(model="mlp", input_shape=(1, 8, 8), clients=50, steps=10, batch=20),
}


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_engine_vs_sequential(speed_ratio, name):
    workload = Workload(**WORKLOADS[name])
    speed_ratio(workload.batched, workload.sequential, "batched engine vs sequential loop")
