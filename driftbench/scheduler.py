"""Replays a trace against a method: the only training loop; writes the run record."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

import driftbench
from driftbench.config import as_plain
from driftbench.data.pool import Pool
from driftbench.engine.batched import BatchedTrainer, default_chunk_size
from driftbench.engine.clock import client_profiles, client_seconds, round_seconds
from driftbench.engine.device_data import DevicePool, LocalWork, batch_plan, resolve_device
from driftbench.engine.evaluate import client_accuracy
from driftbench.engine.models import build_model, forward_flops
from driftbench.engine.train_config import TrainConfig
from driftbench.evaluation.metrics import adjusted_rand, mean_client_distance
from driftbench.evaluation.record import run_dir, write_json, write_rounds
from driftbench.evaluation.summary import summarize
from driftbench.methods.base import ClientQueries, Overhead, RunContext, TrainResult
from driftbench.methods.catalog import MethodSpec
from driftbench.traces.model import Trace

BATCH_STREAM, METHOD_STREAM = 1, 2  # independent RNG streams derived from (seed, stream, round)


@dataclass(frozen=True)
class RunSpec:
    """Everything a run depends on; the run is a function of (trace hash, method config, train, seed)."""

    trace: Trace
    pool: Pool
    train: TrainConfig
    method: MethodSpec
    seed: int
    device: str = "auto"
    out: Path = Path("runs")
    target: float | None = None
    quiet: bool = False


def git_revision() -> str | None:
    """The git commit of the driftbench checkout, when it is one."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(driftbench.__file__).parent, capture_output=True, text=True, timeout=5
        )
    except OSError:
        return None
    return result.stdout.strip() or None


def resolved_config(spec: RunSpec, device: torch.device) -> dict[str, Any]:
    """config.json: everything needed to reproduce the run."""
    return {
        "trace": {"name": spec.trace.name, "hash": spec.trace.content_hash(), **spec.trace.info},
        "method": spec.method.as_config(),
        "train": as_plain(spec.train),
        "seed": spec.seed,
        "rounds": spec.trace.rounds,
        "device": str(device),
        "driftbench_version": driftbench.__version__,
        "git_revision": git_revision(),
        "torch_version": torch.__version__,
    }


class Replay:
    """Per-round views of a trace for the scheduler: windows, transforms, label counts."""

    def __init__(self, trace: Trace, pool: Pool) -> None:
        self.trace, self.pool = trace, pool

    def label_histograms(self, segments: np.ndarray, clients: np.ndarray) -> np.ndarray:
        """Label counts of ``clients``' current train windows after their label maps."""
        t = self.trace
        return np.stack([
            np.bincount(t.label_maps[t.seg_map[segments[c]]][self.pool.y[t.train_indices(segments[c])]], minlength=t.num_classes)
            for c in clients
        ]).astype(np.float64)

    def work(self, segments: np.ndarray, clients: np.ndarray, train: TrainConfig, rng: np.random.Generator) -> LocalWork:
        """This round's local work for ``clients``: batches from their windows and their transforms."""
        t, segs = self.trace, segments[clients]
        windows = [t.train_indices(s) for s in segs]
        return LocalWork(
            clients=clients,
            batches=batch_plan(rng, windows, train.local_steps, train.batch_size),
            steps=np.full(len(clients), train.local_steps),
            label_maps=t.label_maps[t.seg_map[segs]],
            rotations=t.seg_rotation[segs],
        )


def run(spec: RunSpec) -> dict[str, Any]:
    """Replay the trace against the method, write the run record and return the summary."""
    trace, train = spec.trace, spec.train
    device = resolve_device(spec.device)
    dtype = getattr(torch, train.dtype)
    out = run_dir(spec.out, trace.name, spec.method.name, spec.seed)
    write_json(out / "config.json", resolved_config(spec, device))

    model = build_model(train.model, spec.pool.input_shape, trace.num_classes, spec.seed, dtype).to(device)
    data = DevicePool(spec.pool, device, dtype)
    trainer = BatchedTrainer(model, data, default_chunk_size(model, device))
    init = {n: p.detach().clone() for n, p in model.named_parameters()}
    method = spec.method.create()
    ctx = RunContext(trace.num_clients, trace.num_classes, init, train, spec.seed)
    method.setup(ctx)
    replay = Replay(trace, spec.pool)
    profiles = client_profiles(trace.num_clients, spec.seed)
    flops = forward_flops(model, spec.pool.input_shape)
    overhead = Overhead()
    totals = {"sim": 0.0, "server": 0.0, "up": 0, "down": 0}
    rows: list[dict[str, Any]] = []
    status, diverged_round = "ok", None
    started = time.perf_counter()

    for rnd in tqdm(range(trace.rounds), desc=f"{trace.name}/{spec.method.name}", disable=spec.quiet or not sys.stderr.isatty()):
        segments = trace.segments_at(rnd)
        truth = (lambda: trace.seg_group[segments]) if method.oracle else None
        queries = ClientQueries(trace.changed_at(rnd), lambda c: replay.label_histograms(segments, c), truth, overhead)
        t0 = time.perf_counter()
        plan = method.plan(rnd, queries, np.random.default_rng([spec.seed, METHOD_STREAM, rnd]))
        server = time.perf_counter() - t0 - queries.seconds

        work = replay.work(segments, plan.participants, train, np.random.default_rng([spec.seed, BATCH_STREAM, rnd]))
        start = {n: p[torch.as_tensor(plan.start_models, device=device)] for n, p in method.models.items()}
        result = trainer.train(start, work, train, plan.mu)
        if not (torch.isfinite(result.loss).all() and all(torch.isfinite(p).all() for p in result.params.values())):
            status, diverged_round = "diverged", rnd
            break
        samples = np.array([train.local_steps * train.batch_size] * len(plan.participants))
        method.aggregate(rnd, TrainResult(plan, result.params, samples, result.loss.cpu().numpy()))

        down = np.full(len(plan.participants), ctx.model_bytes * plan.models_downloaded)
        up = np.full(len(plan.participants), ctx.model_bytes)
        times = client_seconds(profiles, plan.participants, samples, flops, down, up)
        totals["sim"] += round_seconds(times, server)
        totals["server"] += server
        totals["up"] += int(up.sum())
        totals["down"] += int(down.sum())
        if (rnd + 1) % train.eval_every == 0 or rnd == trace.rounds - 1:
            rows.append(evaluate_round(rnd, trace, replay, segments, model, data, method, totals, overhead, started))

    wall = time.perf_counter() - started
    if not rows:
        rows.append(evaluate_round(rnd, trace, replay, trace.segments_at(rnd), model, data, method, totals, overhead, started))
    table = pd.DataFrame(rows)
    write_rounds(out / "rounds.csv", rows)
    final_segments = trace.segments_at(int(table["round"].iloc[-1]))
    counts = replay.label_histograms(final_segments, np.arange(trace.num_clients))
    summary = {
        "trace": trace.name,
        "trace_hash": trace.content_hash(),
        "method": spec.method.name,
        "oracle": method.oracle,
        "seed": spec.seed,
        "rounds": trace.rounds,
        **summarize(table, trace.event_round, spec.method.name, spec.target),
        "ari_reference": "ground_truth" if trace.num_groups else None,
        "mean_client_distance_final": mean_client_distance(counts / counts.sum(1, keepdims=True), method.assignment),
        "overhead": {
            "cluster_seconds": totals["server"],
            "upload_bytes": overhead.upload_bytes,
            "download_bytes": overhead.download_bytes,
            "client_extra_passes": overhead.client_extra_passes,
        },
        "sim_seconds": totals["sim"],
        "wall_seconds": wall,
        "status": status,
        "diverged_round": diverged_round,
        "run_dir": str(out),
    }
    write_json(out / "summary.json", summary)
    return summary


def evaluate_round(
    rnd: int, trace: Trace, replay: Replay, segments: np.ndarray, model: torch.nn.Module, data: DevicePool,
    method: Any, totals: dict[str, float], overhead: Overhead, started: float,
) -> dict[str, Any]:
    """One rounds.csv row: every client tested on its current test data with its current model."""
    acc = client_accuracy(
        model, data, method.models, method.assignment,
        [trace.test_indices(s) for s in segments], trace.label_maps[trace.seg_map[segments]], trace.seg_rotation[segments],
    )
    truth = trace.seg_group[segments]
    return {
        "round": rnd,
        "sim_seconds": totals["sim"],
        "wall_seconds": time.perf_counter() - started,
        "accuracy_mean": float(acc.mean()),
        "accuracy_p10": float(np.percentile(acc, 10)),
        "accuracy_p90": float(np.percentile(acc, 90)),
        "ari": adjusted_rand(truth, method.assignment) if (truth >= 0).any() else float("nan"),
        "n_clusters": int(len(np.unique(method.assignment))),
        "cluster_seconds": totals["server"],
        "upload_bytes": totals["up"] + overhead.upload_bytes,
        "download_bytes": totals["down"] + overhead.download_bytes,
    }
