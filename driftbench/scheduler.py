"""Replays a trace against a method: the only training loop; checkpoints, resumes and writes the run record."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

import driftbench
from driftbench import checkpoint
from driftbench.config import as_plain, require
from driftbench.data.pool import Pool
from driftbench.engine.batched import BatchedTrainer, TrainOutput, default_chunk_size
from driftbench.engine.clock import client_profiles, client_seconds, round_seconds
from driftbench.engine.device_data import DevicePool, LocalWork, batch_plan, resolve_device
from driftbench.engine.evaluate import (
    DataSummary, OutputSummary, classifier_name, client_gradients, client_inputs, client_outputs, per_client_mean,
)
from driftbench.engine.models import build_model, forward_flops
from driftbench.train_config import TrainConfig
from driftbench.record.metrics import adjusted_rand, mean_client_distance
from driftbench.errors import ConfigError, RunError
from driftbench.record.files import (
    CHECKPOINT, CONFIG, ROUNDS, SUMMARY, clear_results, config_difference, read_json, run_dir, run_state, write_json, write_rounds,
)
from driftbench.record.summarize import summarize
from driftbench.methods.base import FLOAT_BYTES, ClientQueries, Overhead, Plan, RoundTraffic, RunContext, TrainResult
from driftbench.methods.catalog import MethodSpec
from driftbench.traces.model import Trace

BATCH_STREAM, METHOD_STREAM = 1, 2  # independent RNG streams derived from (seed, stream, round)
log = logging.getLogger("driftbench")


class RunInterrupted(RunError):
    """SIGINT stopped a run after a round; its checkpoint is written and ``--resume`` continues it."""

    exit_code = 130


@dataclass(frozen=True)
class Checkpointing:
    """When a run checkpoints, whether it resumes, whether the checkpoint outlives it, and how to resume it.

    Every 10 rounds by default: an embedded trace's checkpoint (model bank, method state,
    metrics so far) takes milliseconds against 0.1-1 s per round, so it costs well under 1%
    and a crash loses at most 10 rounds. ``every = 0`` checkpoints only on SIGINT.
    """

    every: int = 10
    resume: bool = False
    keep: bool = False
    resume_command: str = ""  # printed when SIGINT stops the run

    def __post_init__(self) -> None:
        require(self.every >= 0, f"--checkpoint-every must be >= 0 (0 = only on SIGINT), got {self.every}")


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
    checkpointing: Checkpointing = field(default_factory=Checkpointing)

    def __post_init__(self) -> None:
        clients, participants = self.trace.num_clients, self.train.participants
        require(
            participants <= clients,
            f"train.participants must be <= the trace's {clients} clients, got {participants}",
        )


def run(spec: RunSpec) -> dict[str, Any]:
    """Replay the trace against the method, write the run record and return the summary.

    With ``checkpointing.resume`` a complete run returns its stored summary and an
    incomplete one continues from its checkpoint (from round 0 when it has none). In the
    main thread, SIGINT finishes the current round, checkpoints and raises ``RunInterrupted``.
    """
    scheduler = Scheduler(spec)
    stored = scheduler.begin()
    if stored is not None:
        return stored
    rounds = tqdm(range(scheduler.next_round, spec.trace.rounds), desc=f"{spec.trace.name}/{spec.method.name}",
                  initial=scheduler.next_round, total=spec.trace.rounds, disable=spec.quiet or not sys.stderr.isatty())
    with SigintFlag() as sigint:
        for rnd in rounds:
            if not scheduler.step(rnd):
                break
            if sigint.raised:
                raise scheduler.interrupted(rnd)
            if scheduler.checkpoint_due(rnd):
                scheduler.checkpoint(rnd + 1)
    return scheduler.finish()


# Scheduler attributes a checkpoint carries (besides the overhead counters and the elapsed wall time).
CHECKPOINTED = ("sim_seconds", "server_seconds", "upload_bytes", "download_bytes", "rows", "status", "diverged_round", "last_round")


class Scheduler:
    """The state of one run: model bank (inside the method), engine, clock totals and evaluated rows."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec, self.trace, self.train = spec, spec.trace, spec.train
        self.out = run_dir(spec.out, spec.trace.name, spec.method.name, spec.seed)
        self.trace_hash = spec.trace.content_hash()
        self.device = resolve_device(spec.device)
        dtype = getattr(torch, self.train.dtype)
        self.model = build_model(self.train.model, spec.pool.input_shape, self.trace.num_classes, spec.seed, dtype).to(self.device)
        self.data = DevicePool(spec.pool, self.device, dtype)
        self.trainer = BatchedTrainer(self.model, self.data, default_chunk_size(self.model, self.device))
        init = {n: p.detach().clone() for n, p in self.model.named_parameters()}
        self.ctx = RunContext(self.trace.num_clients, self.trace.num_classes, init, self.train, spec.seed, classifier_name(self.model))
        self.method = spec.method.create()
        self.method.setup(self.ctx)
        self.profiles = client_profiles(self.trace.num_clients, spec.seed)
        self.flops = forward_flops(self.model, spec.pool.input_shape)
        self.overhead = Overhead()
        self.sim_seconds = self.server_seconds = 0.0
        self.upload_bytes = self.download_bytes = 0
        self.rows: list[dict[str, Any]] = []
        self.status, self.diverged_round, self.last_round = "ok", None, 0
        self.started = time.perf_counter()
        self.next_round = 0
        self.checkpoint_dir = self.out / CHECKPOINT

    def begin(self) -> dict[str, Any] | None:
        """Start a fresh record, or on resume check the stored configuration and restore the checkpoint.

        Returns the stored summary when resuming a complete run, None when rounds remain.
        """
        state = run_state(self.out) if self.spec.checkpointing.resume else "absent"
        if state == "absent":
            checkpoint.remove(self.checkpoint_dir)
            clear_results(self.out)
            write_json(self.out / CONFIG, self.config())
            return None
        self.check_config(read_json(self.out / CONFIG))
        if state != "incomplete":
            log.info("%s is complete (%s); --resume keeps it", self.out, state)
            return read_json(self.out / SUMMARY)
        if checkpoint.exists(self.checkpoint_dir):
            self.restore(checkpoint.load(self.checkpoint_dir, self.device))
            log.info("resuming %s at round %d", self.out, self.next_round)
        else:
            log.info("%s has no checkpoint; --resume starts it from round 0", self.out)
        return None

    def check_config(self, stored: dict[str, Any]) -> None:
        """Refuse to resume a run whose stored configuration differs from this one."""
        difference = config_difference(stored, self.config())
        if difference:
            key, before, now = difference
            raise ConfigError(
                f"--resume: {self.out / CONFIG} has {key} = {before!r} but this run has {now!r}; "
                "rerun with the stored settings or without --resume"
            )

    def state(self) -> dict[str, Any]:
        """The scheduler's share of a checkpoint: clock and traffic totals, metrics so far, run status."""
        kept = {name: getattr(self, name) for name in CHECKPOINTED}
        return {**kept, "overhead": asdict(self.overhead), "wall_seconds": time.perf_counter() - self.started}

    def restore(self, saved: dict[str, Any]) -> None:
        """Continue from a loaded checkpoint: scheduler totals, method state and global RNG states."""
        state = saved["scheduler"]
        for name in CHECKPOINTED:
            setattr(self, name, state[name])
        self.overhead = Overhead(**state["overhead"])
        self.started = time.perf_counter() - state["wall_seconds"]
        checkpoint.restore_method(self.method, saved["method"])
        checkpoint.restore_rng(saved["rng"])
        self.next_round = saved["next_round"]

    def checkpoint_due(self, rnd: int) -> bool:
        """Whether to checkpoint after round ``rnd`` (never after the last: the run then finishes)."""
        every = self.spec.checkpointing.every
        return every > 0 and (rnd + 1) % every == 0 and rnd + 1 < self.trace.rounds

    def checkpoint(self, next_round: int) -> Path:
        """Atomically write the checkpoint that resumes at ``next_round``."""
        return checkpoint.save(self.checkpoint_dir, next_round, self.state(), self.method)

    def interrupted(self, rnd: int) -> RunInterrupted:
        """Checkpoint after round ``rnd`` and describe how to resume."""
        path = self.checkpoint(rnd + 1)
        command = self.spec.checkpointing.resume_command or "rerun the same command with --resume"
        return RunInterrupted(f"interrupted after round {rnd}; checkpoint {path}; resume with: {command}")

    def config(self) -> dict[str, Any]:
        """config.json: everything needed to reproduce the run."""
        return run_config(self.spec, self.device, self.trace_hash)

    def step(self, rnd: int) -> bool:
        """One round: reports, plan, local training, aggregation, clock, evaluation; False once diverged."""
        segments = self.trace.segments_at(rnd)
        clients = RoundClients(self, segments)
        traffic = RoundTraffic.empty(self.trace.num_clients)
        queries = ClientQueries(
            self.trace.changed_at(rnd), clients, self.ctx.model_bytes, self.method.oracle, self.overhead, traffic
        )
        started = time.perf_counter()
        plan = self.method.plan(rnd, queries, np.random.default_rng([self.spec.seed, METHOD_STREAM, rnd]))
        server = time.perf_counter() - started - queries.seconds

        work = clients.work(plan.participants, np.random.default_rng([self.spec.seed, BATCH_STREAM, rnd]), plan.local_steps)
        rows = torch.as_tensor(plan.start_models, device=self.device)
        start = {n: p[rows] for n, p in self.method.models.items()}
        result = self.trainer.train(start, work, self.train, plan.mu, plan.masks, plan.record)
        self.last_round = rnd
        if not finite(result):
            self.status, self.diverged_round = "diverged", rnd
            return False
        samples = work.steps * self.train.batch_size
        started = time.perf_counter()
        self.method.aggregate(rnd, TrainResult(plan, result.params, samples, result.loss.cpu().numpy(), result.path))
        server += time.perf_counter() - started
        self.advance_clock(plan, samples, server, traffic, segments)
        if (rnd + 1) % self.train.eval_every == 0 or rnd == self.trace.rounds - 1:
            self.rows.append(self.evaluate(rnd, segments))
        return True

    def advance_clock(self, plan: Plan, samples: np.ndarray, server: float, traffic: RoundTraffic, segments: np.ndarray) -> None:
        """Add the round's duration and its model traffic.

        The round lasts as long as its slowest client, over participants (training and model
        transfer) and clients that answered queries (their extra passes and transfers), plus
        the server time (plan and aggregate).
        """
        extra = FLOAT_BYTES * plan.upload_floats
        involved = np.union1d(plan.participants, traffic.clients())
        at = np.searchsorted(involved, plan.participants)
        window = self.trace.seg_train[segments[involved], 1] - self.trace.seg_train[segments[involved], 0]
        trained = traffic.work[involved] * window
        down, up = traffic.download[involved], traffic.upload[involved]
        np.add.at(trained, at, samples)
        np.add.at(down, at, self.ctx.model_bytes * plan.models_downloaded)
        np.add.at(up, at, self.ctx.model_bytes * plan.models_uploaded + extra)
        times = client_seconds(self.profiles, involved, trained, self.flops, down, up)
        self.sim_seconds += round_seconds(times, server)
        self.server_seconds += server
        self.upload_bytes += self.ctx.model_bytes * plan.models_uploaded * len(plan.participants)
        self.overhead.upload_bytes += extra * len(plan.participants)
        self.download_bytes += self.ctx.model_bytes * plan.models_downloaded * len(plan.participants)

    def evaluate(self, rnd: int, segments: np.ndarray) -> dict[str, Any]:
        """One rounds.csv row: every client tested on its current test data with its current model."""
        t, method = self.trace, self.method
        tests = RoundClients(self, segments).views(np.arange(t.num_clients), test=True)
        acc = per_client_mean(self.model, self.data, method.models, method.assignment, *tests, "accuracy")
        truth = t.seg_group[segments]
        return {
            "round": rnd,
            "sim_seconds": self.sim_seconds,
            "wall_seconds": time.perf_counter() - self.started,
            "accuracy_mean": float(acc.mean()),
            "accuracy_p10": float(np.percentile(acc, 10)),
            "accuracy_p90": float(np.percentile(acc, 90)),
            "ari": adjusted_rand(truth, method.assignment) if (truth >= 0).any() else float("nan"),
            "n_clusters": int(len(np.unique(method.assignment))),
            "cluster_seconds": self.server_seconds,
            "upload_bytes": self.upload_bytes + self.overhead.upload_bytes,
            "download_bytes": self.download_bytes + self.overhead.download_bytes,
        }

    def finish(self) -> dict[str, Any]:
        """Write rounds.csv and summary.json; return the summary."""
        wall = time.perf_counter() - self.started
        if not self.rows:
            self.rows.append(self.evaluate(self.last_round, self.trace.segments_at(self.last_round)))
        write_rounds(self.out / ROUNDS, self.rows)
        table = pd.DataFrame(self.rows)
        final = RoundClients(self, self.trace.segments_at(int(table["round"].iloc[-1])))
        counts = final.label_histograms(np.arange(self.trace.num_clients))
        summary = {
            "trace": self.trace.name,
            "trace_hash": self.trace_hash,
            "method": self.spec.method.name,
            "oracle": self.method.oracle,
            "seed": self.spec.seed,
            "rounds": self.trace.rounds,
            **summarize(table, self.trace.event_round, self.spec.method.name, self.spec.target),
            "ari_reference": "ground_truth" if self.trace.num_groups else None,
            "mean_client_distance_final": mean_client_distance(counts / counts.sum(1, keepdims=True), self.method.assignment),
            "overhead": {
                "cluster_seconds": self.server_seconds,
                "upload_bytes": self.overhead.upload_bytes,
                "download_bytes": self.overhead.download_bytes,
                "client_extra_passes": self.overhead.client_extra_passes,
            },
            "sim_seconds": self.sim_seconds,
            "wall_seconds": wall,
            "status": self.status,
            "diverged_round": self.diverged_round,
            "run_dir": str(self.out),
        }
        write_json(self.out / SUMMARY, summary)
        if not self.spec.checkpointing.keep:
            checkpoint.remove(self.checkpoint_dir)
        return summary


class RoundClients:
    """The clients' side of one round: their current windows and transforms under the current model bank."""

    def __init__(self, scheduler: Scheduler, segments: np.ndarray) -> None:
        self.s, self.segments = scheduler, segments

    def views(self, clients: np.ndarray, test: bool = False) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """The clients' current train (or test) windows, label maps and rotations."""
        t, segs = self.s.trace, self.segments[clients]
        windows = t.test_indices if test else t.train_indices
        return [windows(seg) for seg in segs], t.label_maps[t.seg_map[segs]], t.seg_rotation[segs]

    def work(self, clients: np.ndarray, rng: np.random.Generator, local_steps: int | None = None) -> LocalWork:
        """This round's local training for ``clients`` (``local_steps`` or the trace's): batches from their windows."""
        windows, maps, rotations = self.views(clients)
        train = self.s.train
        steps = train.local_steps if local_steps is None else local_steps
        return LocalWork(
            clients=clients,
            batches=batch_plan(rng, windows, steps, train.batch_size),
            steps=np.full(len(clients), steps),
            label_maps=maps,
            rotations=rotations,
        )

    def label_histograms(self, clients: np.ndarray) -> np.ndarray:
        """Label counts of the clients' current train windows after their label maps."""
        t, y = self.s.trace, self.s.spec.pool.y
        return np.stack([np.bincount(t.train_labels(seg, y), minlength=t.num_classes) for seg in self.segments[clients]]).astype(np.float64)

    def losses(self, clients: np.ndarray, models: np.ndarray) -> np.ndarray:
        """Mean train-window loss of each bank model in ``models`` on each client."""
        windows, maps, rotations = self.views(clients)
        s = self.s
        columns = [
            per_client_mean(s.model, s.data, s.method.models, np.full(len(clients), m), windows, maps, rotations, "loss")
            for m in models
        ]
        return np.stack(columns, axis=1) if columns else np.zeros((len(clients), 0))

    def gradients(self, clients: np.ndarray, model: int) -> np.ndarray:
        """Flattened gradients of the clients' mean train-window loss at bank model ``model``."""
        windows, maps, rotations = self.views(clients)
        params = {n: p[model] for n, p in self.s.method.models.items()}
        return client_gradients(self.s.model, self.s.data, params, windows, maps, rotations).cpu().numpy()

    def outputs(self, clients: np.ndarray, model: int, summarize: OutputSummary) -> np.ndarray:
        """Stacked ``summarize(features, probs, labels)`` of each client's window under bank model ``model``."""
        windows, maps, rotations = self.views(clients)
        params = {n: p[model] for n, p in self.s.method.models.items()}
        return client_outputs(self.s.model, self.s.data, params, windows, maps, rotations, summarize)

    def inputs(self, clients: np.ndarray, summarize: DataSummary) -> np.ndarray:
        """Stacked ``summarize(inputs, labels)`` of each client's window."""
        return client_inputs(self.s.data, *self.views(clients), summarize)

    def ground_truth(self) -> np.ndarray:
        """Every client's true group now."""
        return self.s.trace.seg_group[self.segments]


class SigintFlag:
    """While active in the main thread, the first SIGINT sets ``raised`` instead of raising; a second one raises."""

    def __init__(self) -> None:
        self.raised = False
        self._previous: Any = None

    def __enter__(self) -> SigintFlag:
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, self._handle)
            self._previous = signal.default_int_handler if previous is None else previous
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum: int, frame: object) -> None:
        self.raised = True
        signal.signal(signal.SIGINT, self._previous)


def run_config(spec: RunSpec, device: torch.device, trace_hash: str) -> dict[str, Any]:
    """config.json of the run ``spec`` on ``device``: everything needed to reproduce it."""
    return {
        "trace": {"name": spec.trace.name, "hash": trace_hash, **spec.trace.info},
        "method": spec.method.as_config(),
        "train": as_plain(spec.train),
        "seed": spec.seed,
        "rounds": spec.trace.rounds,
        "device": str(device),
        "driftbench_version": driftbench.__version__,
        "git_revision": git_revision(),
        "torch_version": torch.__version__,
    }


def finite(result: TrainOutput) -> bool:
    """Whether every loss and trained parameter is finite (one device sync for all of them)."""
    checks = [torch.isfinite(result.loss).all(), *(torch.isfinite(p).all() for p in result.params.values())]
    return bool(torch.stack(checks).all())


def git_revision() -> str | None:
    """The git commit of the driftbench checkout, when it is one."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(driftbench.__file__).parent, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None
