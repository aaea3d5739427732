"""The scorecard's segment-end rows: each client's distinct test samples scored once give every window's own mean."""

import numpy as np
import torch

from driftbench.bench.scorecard_rows import row_paths
from driftbench.engine.device_data import DevicePool
from driftbench.engine.evaluate import per_client_mean, per_sample
from driftbench.engine.models import build_model
from driftbench.traces.catalog import resolve


def test_distinct_samples_give_every_segment_and_clients_window_mean_exactly():
    row = row_paths("fmow-frequent", {"clients": "8", "rounds": "30", "turned_types": "true"}, torch.float64)

    assert np.array_equal(row.distinct_samples(), row.every_window())
    assert len(np.unique(row.distinct.rotations)) > 1  # the rotations are part of a sample's identity
    assert sum(len(w) for w in row.distinct.windows) * 3 < sum(len(w) for w in row.windows)  # the windows overlap


def test_per_sample_scores_are_per_client_means_before_averaging():
    resolved = resolve("label-swap", {"clients": "5", "rounds": "6"})
    stream = resolved.trace.stream
    model = build_model("mlp", resolved.pool.input_shape, stream.num_classes, seed=1, dtype=torch.float64)
    data = DevicePool(resolved.pool, torch.device("cpu"), torch.float64)
    bank = {n: torch.stack([p.detach(), p.detach() * 0.5]) for n, p in model.named_parameters()}
    segments = resolved.trace.segments_at(0)
    windows = [stream.test_indices(int(s)) for s in segments]
    maps, rotations = stream.label_maps[stream.seg_map[segments]], stream.seg_rotation[segments]
    served = np.array([0, 1, 1, 0, 1])
    for statistic in ("accuracy", "loss"):
        scores = per_sample(model, data, bank, served, windows, maps, rotations, statistic)
        ends = np.cumsum([len(w) for w in windows])
        means = [part.mean() for part in np.split(scores, ends[:-1])]
        assert np.allclose(means, per_client_mean(model, data, bank, served, windows, maps, rotations, statistic), atol=1e-12)
