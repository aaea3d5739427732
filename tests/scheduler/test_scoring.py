"""The scorecard's segment-end rows: each client's distinct test samples scored once give every window's own mean."""

import numpy as np
import torch

from driftbench.engine.device_data import DevicePool
from driftbench.engine.evaluate import per_client_mean, per_sample
from driftbench.engine.models import build_model
from driftbench.record.scorecard import segment_starts
from driftbench.scheduler.scoring import DistinctTests
from driftbench.traces.catalog import resolve


def test_distinct_samples_give_every_segment_and_clients_window_mean_exactly():
    resolved = resolve("fmow-frequent", {"clients": "8", "rounds": "30", "turned_types": "true"})
    trace, stream = resolved.trace, resolved.trace.stream
    columns = np.stack([trace.segments_at(int(s)) for s in segment_starts(trace.event_round, trace.rounds)])
    model = build_model("mlp", resolved.pool.input_shape, stream.num_classes, seed=0, dtype=torch.float64)
    data = DevicePool(resolved.pool, torch.device("cpu"), torch.float64)
    bank = {n: torch.stack([p.detach(), -p.detach(), p.detach() * 2]) for n, p in model.named_parameters()}
    assignment = np.random.default_rng(0).integers(0, 3, columns.shape[1])

    pairs = columns.reshape(-1)
    windows = [stream.test_indices(int(s)) for s in pairs]
    expected = per_client_mean(
        model,
        data,
        bank,
        np.tile(assignment, len(columns)),
        windows,
        stream.label_maps[stream.seg_map[pairs]],
        stream.seg_rotation[pairs],
    )
    distinct = DistinctTests(stream, columns)
    scores = per_sample(model, data, bank, assignment[distinct.owner], distinct.windows, distinct.maps, distinct.rotations)

    assert np.array_equal(distinct.window_means(scores), expected)
    assert len(np.unique(stream.seg_rotation[pairs])) > 1  # the rotations are part of a sample's identity
    assert sum(len(w) for w in distinct.windows) * 3 < sum(len(w) for w in windows)  # the windows overlap


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
