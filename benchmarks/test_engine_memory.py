"""Peak memory of one 100-client LeNet-5 round: the batched engine against the plain sequential loop.

Each trainer runs in its own fresh process (peak RSS is per process); the gate is the ratio.
Run: pytest benchmarks/test_engine_memory.py -s
"""

import json
import subprocess
import sys

PEAK_RSS_RATIO = 1.2  # the engine may use at most this multiple of the plain loop's peak memory

ROUND = """
import json, resource, sys
from driftbench.bench.workload import Workload
workload = Workload("lenet5", (3, 32, 32), clients=100, steps=1, batch=50)
getattr(workload, sys.argv[1])()
print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def peak_rss_mb(trainer: str) -> float:
    out = subprocess.run([sys.executable, "-c", ROUND, trainer], capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])["peak_rss_mb"]


def test_engine_peak_memory_is_close_to_the_plain_loop():
    batched, sequential = peak_rss_mb("batched"), peak_rss_mb("sequential")
    print(f"\npeak RSS: batched {batched:.0f} MB, sequential {sequential:.0f} MB, ratio {batched / sequential:.2f}")
    assert batched <= PEAK_RSS_RATIO * sequential
