"""The scorecard's segment-end row on fmow-frequent (60 clients, 100 segments): each client's distinct test samples once.

Run: pytest benchmarks/test_scorecard.py --benchmark-only -s
Against: every (segment, client) window scored in full, as the row was computed before (33x the samples).
"""

import numpy as np
import torch

from driftbench.engine.device_data import DevicePool
from driftbench.engine.evaluate import per_client_mean, per_sample
from driftbench.engine.models import build_model
from driftbench.record.scorecard import segment_starts
from driftbench.scheduler.scoring import DistinctTests
from driftbench.traces.catalog import resolve


def test_scorecard_row_on_distinct_samples_vs_every_window(speed_ratio):
    resolved = resolve("fmow-frequent", {})
    trace, stream = resolved.trace, resolved.trace.stream
    columns = np.stack([trace.segments_at(int(s)) for s in segment_starts(trace.event_round, trace.rounds)])
    model = build_model("mlp", resolved.pool.input_shape, stream.num_classes, seed=0, dtype=torch.float32)
    data = DevicePool(resolved.pool, torch.device("cpu"), torch.float32)
    bank = {n: torch.stack([p.detach(), -p.detach(), p.detach() * 2]) for n, p in model.named_parameters()}
    assignment = np.random.default_rng(0).integers(0, 3, columns.shape[1])
    pairs = columns.reshape(-1)
    windows = [stream.test_indices(int(s)) for s in pairs]
    maps, rotations = stream.label_maps[stream.seg_map[pairs]], stream.seg_rotation[pairs]
    distinct = DistinctTests(stream, columns)

    def every_window() -> np.ndarray:
        return per_client_mean(model, data, bank, np.tile(assignment, len(columns)), windows, maps, rotations)

    def distinct_samples() -> np.ndarray:
        owners = assignment[distinct.owner]
        return distinct.window_means(per_sample(model, data, bank, owners, distinct.windows, distinct.maps, distinct.rotations))

    assert np.array_equal(distinct_samples(), every_window())
    speed_ratio(distinct_samples, every_window, "one scorecard row, distinct samples vs every window")
