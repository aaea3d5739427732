"""The scorecard's segment-end row on fmow-frequent (60 clients, 100 segments): each client's distinct test samples once.

Run: pytest benchmarks/test_scorecard.py --benchmark-only -s
Against: every (segment, client) window scored in full, as the row was computed before (33x the samples).
"""

import numpy as np
import torch

from driftbench.bench.scorecard_rows import row_paths


def test_scorecard_row_on_distinct_samples_vs_every_window(speed_ratio):
    row = row_paths("fmow-frequent", {}, torch.float32)
    assert np.array_equal(row.distinct_samples(), row.every_window())
    speed_ratio(row.distinct_samples, row.every_window, "one scorecard row, distinct samples vs every window")
