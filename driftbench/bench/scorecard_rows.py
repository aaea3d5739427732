"""A scorecard row over a trace both ways: every (segment, client) test window in full, and the passes' distinct samples
(the reference and the fast path, which the tests hold equal and the benchmarks time against each other)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from driftbench.engine.device_data import DevicePool
from driftbench.engine.evaluate import per_client_mean, per_sample
from driftbench.engine.models import build_model
from driftbench.scheduler.scoring import DistinctTests, ScorecardPasses
from driftbench.traces.catalog import resolve


@dataclass
class RowPaths:
    """The pairs' own windows, the passes' distinct samples, and the row computed from each."""

    windows: list[np.ndarray]
    distinct: DistinctTests
    every_window: Callable[[], np.ndarray]
    distinct_samples: Callable[[], np.ndarray]


def row_paths(trace_name: str, sets: dict[str, str], dtype: torch.dtype) -> RowPaths:
    """Both ways to score one row of ``trace_name`` (with ``sets``): an MLP bank of 3 models, clients assigned at random."""
    resolved = resolve(trace_name, sets)
    stream, passes = resolved.trace.stream, ScorecardPasses(resolved.trace)
    model = build_model("mlp", resolved.pool.input_shape, stream.num_classes, seed=0, dtype=dtype)
    data = DevicePool(resolved.pool, torch.device("cpu"), dtype)
    bank = {n: torch.stack([p.detach(), -p.detach(), p.detach() * 2]) for n, p in model.named_parameters()}
    assignment = np.random.default_rng(0).integers(0, 3, size=(int(passes.columns.shape[1]),))
    pairs, d = passes.columns.reshape(-1), passes.distinct
    windows = [stream.test_indices(int(s)) for s in pairs]
    maps, rotations = stream.label_maps[stream.seg_map[pairs]], stream.seg_rotation[pairs]

    def every_window() -> np.ndarray:
        return per_client_mean(model, data, bank, np.tile(assignment, len(passes.columns)), windows, maps, rotations)

    def distinct_samples() -> np.ndarray:
        return d.window_means(per_sample(model, data, bank, assignment[d.owner], d.windows, d.maps, d.rotations))

    return RowPaths(windows, d, every_window, distinct_samples)
