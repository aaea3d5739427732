"""Replays a trace against a method: the only training loop, round by round, with checkpoints and resume."""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from driftbench.engine.batched import BatchedTrainer, TrainOutput, default_chunk_size
from driftbench.engine.clock import client_profiles
from driftbench.engine.device_data import DevicePool, resolve_device
from driftbench.engine.features import classifier_name
from driftbench.engine.models import build_model, forward_flops
from driftbench.errors import RunError, RunLocked, WriteError
from driftbench.methods.bank import bank_rows
from driftbench.methods.events import EventLog, clusters_in_use
from driftbench.methods.queries import ClientQueries, Overhead, RoundTraffic
from driftbench.methods.rounds import Phase, Plan, RunContext, TrainResult
from driftbench.methods.server_work import counting
from driftbench.record.files import run_dir
from driftbench.record.metrics import (
    adjusted_rand,
    collapsed_without_drift,
    degeneracy,
    has_groups,
    mean_client_distance,
    partition_changed,
)
from driftbench.record.schema import SCHEMA_VERSION, RoundRow, RunOverhead, Summary
from driftbench.record.summarize import summarize
from driftbench.scheduler import checkpoint
from driftbench.scheduler.clients import RoundClients
from driftbench.scheduler.clock import RunClock
from driftbench.scheduler.recorder import Recorder
from driftbench.scheduler.scoring import ScorecardPasses
from driftbench.scheduler.spec import RunSpec, run_config
from driftbench.traces.model import ClientStream

BATCH_STREAM, METHOD_STREAM, NEWCOMER_STREAM = 1, 2, 3  # independent RNG streams derived from (seed, stream, round)
log = logging.getLogger(__name__)


class RunInterrupted(RunError):
    """SIGINT stopped a run after a round; its checkpoint is written and ``--resume`` continues it."""

    exit_code = 130


def run(spec: RunSpec, lost: Callable[[], str | None] = lambda: None) -> Summary:
    """Replay the trace against the method, write the run record and return the summary.

    With ``checkpointing.resume`` a complete run returns its stored summary and an
    incomplete one continues from its checkpoint (from round 0 when it has none). In the
    main thread, SIGINT finishes the current round, checkpoints and raises ``RunInterrupted``.
    A failed write (``WriteError``) names how to continue once space is freed. ``lost`` says,
    after each round, why this process no longer holds the run's lock (None while it does): the
    run then stops with ``RunLocked`` before writing anything more.
    """
    scheduler = Scheduler(spec)
    try:
        return replay(scheduler, lost)
    except WriteError as exc:
        raise WriteError(f"{exc}; {scheduler.continuation()}") from None
    finally:
        scheduler.recorder.close()


def replay(scheduler: Scheduler, lost: Callable[[], str | None] = lambda: None) -> Summary:
    """Begin or resume the scheduler's run, step its rounds with checkpoints, and finish it (unless ``lost``, see ``run``)."""
    spec = scheduler.spec
    stored = scheduler.begin()
    if stored is not None:
        return stored
    rounds = tqdm(
        range(scheduler.next_round, spec.trace.rounds),
        desc=f"{spec.trace.name}/{spec.method.name}",
        initial=scheduler.next_round,
        total=spec.trace.rounds,
        disable=spec.quiet or not sys.stderr.isatty(),
    )
    with SigintFlag() as sigint:
        for rnd in rounds:
            stepped = scheduler.step(rnd)
            why = lost()
            if why is not None:
                raise RunLocked(f"{scheduler.out}: lost its run lock ({why}); stopped after round {rnd}, writing nothing more")
            if not stepped:
                break
            if sigint.raised:
                raise scheduler.interrupted(rnd)
            if scheduler.checkpoint_due(rnd):
                scheduler.checkpoint(rnd + 1)
    return scheduler.finish()


class Scheduler:
    """The state of one run: the method (with its model bank), the engine, the clock and the evaluated rows."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec, self.trace, self.train = spec, spec.trace.incumbents(), spec.train
        self.device = resolve_device(spec.device)
        dtype = getattr(torch, self.train.dtype)
        self.model = build_model(
            self.train.model, spec.pool.input_shape, self.trace.num_classes, spec.seed, dtype, self.train.width
        ).to(self.device)
        self.data = DevicePool(spec.pool, self.device, dtype)
        self.trainer = BatchedTrainer(self.model, self.data, default_chunk_size(self.model, self.device), self.train.precision)
        init = {n: p.detach().clone() for n, p in self.model.named_parameters()}
        self.ctx = RunContext(
            self.trace.num_clients, self.trace.num_classes, init, self.train, spec.seed, classifier_name(self.model)
        )
        self.method = spec.method.create()
        self.method.setup(self.ctx)
        self.stream = self.trace.stream
        self.clock = RunClock(
            client_profiles(self.trace.num_clients, spec.seed),
            forward_flops(self.model, spec.pool.input_shape),
            self.ctx.model_bytes,
        )
        out = run_dir(spec.out, spec.trace.name, spec.method.name, spec.seed)
        self.recorder = Recorder(out, run_config(spec, self.device, spec.trace.content_hash()), spec.tracking)
        self.rows: list[RoundRow] = []
        self.partition = self.method.partition.copy()
        self.change_rounds: list[int] = []  # rounds > 0 at whose end the partition of clients changed
        self.scoring = ScorecardPasses(self.trace)
        self.status, self.last_round = "ok", 0
        self.diverged_round: int | None = None
        self.started = time.perf_counter()
        self.next_round = 0
        self.checkpointed = 0  # the round the last checkpoint resumes at (0: none)

    @property
    def out(self) -> Path:
        """The run folder."""
        return self.recorder.out

    def begin(self) -> Summary | None:
        """Start a fresh record, or on resume check the stored configuration and restore the checkpoint.

        Returns the stored summary when resuming a complete run, None when rounds remain.
        """
        state = self.recorder.state(self.spec.checkpointing.resume)
        if state == "absent":
            self.recorder.start()
            return None
        if state != "incomplete":
            return self.recorder.stored_summary()
        if checkpoint.exists(self.recorder.checkpoint_dir):
            self.restore(checkpoint.load(self.recorder.checkpoint_dir, self.device))
            log.info("resuming %s at round %d", self.out, self.next_round)
        else:
            log.info("%s has no checkpoint; --resume starts it from round 0", self.out)
        self.recorder.resumed(self.next_round, self.rows, self.method.events)
        return None

    def state(self) -> dict[str, Any]:
        """The scheduler's share of a checkpoint: clock totals, metrics so far, run status."""
        return {
            "clock": self.clock.state(),
            "rows": [asdict(r) for r in self.rows],
            "events": self.method.events.rows,
            "diagnostics": self.method.events.measures,
            "change_rounds": self.change_rounds,
            "scorecard": self.scoring.state(),
            "status": self.status,
            "diverged_round": self.diverged_round,
            "last_round": self.last_round,
            "wall_seconds": time.perf_counter() - self.started,
        }

    def restore(self, saved: dict[str, Any]) -> None:
        """Continue from a loaded checkpoint: scheduler totals, method state and global RNG states."""
        state = saved["scheduler"]
        self.clock.restore(state["clock"])
        self.rows = [RoundRow(**row) for row in state["rows"]]
        self.method.events.rows = list(state["events"])
        self.method.events.measures = list(state["diagnostics"])
        self.change_rounds = list(state["change_rounds"])
        self.scoring.restore(state["scorecard"])
        self.status, self.diverged_round, self.last_round = state["status"], state["diverged_round"], state["last_round"]
        self.started = time.perf_counter() - state["wall_seconds"]
        checkpoint.restore_method(self.method, saved["method"])
        self.partition = self.method.partition.copy()
        checkpoint.restore_rng(saved["rng"])
        self.next_round = self.checkpointed = saved["next_round"]

    def checkpoint_due(self, rnd: int) -> bool:
        """Whether to checkpoint after round ``rnd`` (never after the last: the run then finishes)."""
        every = self.spec.checkpointing.every
        return every > 0 and (rnd + 1) % every == 0 and rnd + 1 < self.trace.rounds

    def checkpoint(self, next_round: int) -> Path:
        """Atomically write the checkpoint that resumes at ``next_round``."""
        path = checkpoint.save(self.recorder.checkpoint_dir, next_round, self.state(), self.method)
        self.checkpointed = next_round
        return path

    def continuation(self) -> str:
        """How a run stopped by a failed write continues: the resume command and the round it starts from."""
        command = self.spec.checkpointing.resume_command or "the same sweep (or --resume)"
        where = f"the last checkpoint (round {self.checkpointed})" if self.checkpointed else "round 0 (no checkpoint was written)"
        return f"what was written before is intact; after freeing space, {command} continues from {where}"

    def interrupted(self, rnd: int) -> RunInterrupted:
        """Checkpoint after round ``rnd`` and describe how to resume."""
        path = self.checkpoint(rnd + 1)
        command = self.spec.checkpointing.resume_command or "rerun the same command with --resume"
        return RunInterrupted(f"interrupted after round {rnd}; checkpoint {path}; resume with: {command}")

    def clients(self, segments: np.ndarray, stream: ClientStream | None = None) -> RoundClients:
        """The clients' side of the round whose segments are ``segments`` (of ``stream``, default the incumbents')."""
        stream = self.stream if stream is None else stream
        return RoundClients(stream, segments, self.spec.pool.y, self.model, self.data, self.method, self.train, self.trainer)

    def step(self, rnd: int) -> bool:
        """One round: reports, plan, local training, aggregation, clock, evaluation; False once diverged."""
        segments = self.trace.segments_at(rnd)
        clients = self.clients(segments)
        self.method.events.round = rnd
        traffic = RoundTraffic.empty(self.trace.num_clients)
        truth = self.trace.seg_group[segments] if self.method.oracle else None
        queries = ClientQueries(self.trace.changed_at(rnd), clients, self.ctx.model_bytes, self.clock.overhead, traffic, truth)
        started = time.perf_counter()
        with counting() as planning:
            plan = self.method.plan(rnd, queries, np.random.default_rng([self.spec.seed, METHOD_STREAM, rnd]))
        server_wall = time.perf_counter() - started - queries.seconds

        result = self.local_training(rnd, plan, clients, queries)
        self.last_round = rnd
        if result is None:
            self.status, self.diverged_round = "diverged", rnd
            return False
        started = time.perf_counter()
        with counting() as aggregating:
            self.method.aggregate(rnd, result)
        server_wall += time.perf_counter() - started
        self.clock.advance(
            plan, result.num_samples, clients.window_sizes(), traffic, planning.flops + aggregating.flops, server_wall
        )
        self.track_partition(rnd)
        self.scoring.segment_end(rnd, clients, self.method.assignment)
        if (rnd + 1) % self.train.eval_every == 0 or rnd == self.trace.rounds - 1:
            self.rows.append(self.evaluate(rnd, segments))
        self.recorder.track(rnd, self.rows, self.method.events)
        return True

    def local_training(self, rnd: int, plan: Plan, clients: RoundClients, queries: ClientQueries) -> TrainResult | None:
        """Train the plan's phases in turn, then collect the participants' reports; None once a result is not finite.

        The main line chains from the plan's start models; a side branch starts from its own bank
        rows. The prequential score is taken on the main line's first batches. A phase's pruning
        runs here, on the clients' side, so the server's work counter does not see it.
        """
        rng = np.random.default_rng([self.spec.seed, BATCH_STREAM, rnd])
        line, main = bank_rows(self.method.models, plan.start_models), None
        outputs, samples, pruned = [], np.zeros(len(plan.participants), dtype=np.int64), {}
        for phase in plan.stages():
            work = clients.work(plan.participants, rng, phase)
            if phase.start is None and main is None:
                self.scoring.score_batches(rnd, clients, plan, work)
            start = line if phase.start is None else bank_rows(self.method.models, phase.start)
            masks = phase.masks
            if phase.prune is not None:
                masks = pruned = phase.prune(start)
                start = {n: p * masks[n] if n in masks else p for n, p in start.items()}
            cfg = self.train if phase.lr_scale == 1 else replace(self.train, lr=self.train.lr * phase.lr_scale)
            output = self.trainer.train(start, work, cfg, plan.mu, masks, phase.record, phase.penalty)
            if not finite(output):
                return None
            outputs.append(output.params)
            samples += work.steps * self.train.batch_size
            if phase.start is None:
                line, main = output.params, output
        assert main is not None  # Plan refuses phases without a main line
        reports = None if plan.report is None else queries.reports(plan.participants, main.params, plan.report)
        phases = tuple(outputs) if plan.phases else ()
        return TrainResult(plan, main.params, samples, main.loss.cpu().numpy(), main.path, phases, reports, pruned)

    def track_partition(self, rnd: int) -> None:
        """Note ``rnd`` when the method's partition of clients differs from the previous round's (round 0 sets it)."""
        if rnd > 0 and partition_changed(self.partition, self.method.partition):
            self.change_rounds.append(rnd)
        self.partition = self.method.partition.copy()

    def evaluate(self, rnd: int, segments: np.ndarray) -> RoundRow:
        """One rounds.csv row: every client tested on its current test data with its current model."""
        acc = self.clients(segments).accuracy(self.method.assignment)
        truth = self.trace.seg_group[segments]
        clock = self.clock
        previous = self.rows[-1].round if self.rows else -1
        events = self.trace.event_round
        return RoundRow(
            round=rnd,
            sim_seconds=clock.sim_seconds,
            wall_seconds=time.perf_counter() - self.started,
            accuracy_mean=float(acc.mean()),
            accuracy_p10=float(np.percentile(acc, 10)),
            accuracy_p90=float(np.percentile(acc, 90)),
            drift_event=int(((events > previous) & (events <= rnd)).any()),
            ari=adjusted_rand(truth, self.method.partition) if has_groups(truth) else float("nan"),
            n_clusters=clusters_in_use(self.method.partition),
            cluster_seconds=clock.server_seconds,
            server_wall_seconds=clock.server_wall_seconds,
            upload_bytes=clock.total_upload_bytes,
            download_bytes=clock.total_download_bytes,
        )

    def degenerate(self, table: pd.DataFrame) -> tuple[str, ...]:
        """The run's degeneracy flags: ``metrics.degeneracy`` (never for an oracle, whose clustering is the truth's),
        then ``collapse_without_drift`` (``metrics.collapsed_without_drift``, any method)."""
        method, events = self.method, self.trace.event_round
        changes = np.asarray(self.change_rounds, dtype=np.int64)
        clustering = (
            ()
            if method.oracle
            else degeneracy(table["n_clusters"].to_numpy(), changes, events, method.clustering, method.reclusters)
        )
        collapsed = collapsed_without_drift(table["round"].to_numpy(), table["accuracy_mean"].to_numpy(), events)
        return clustering + (("collapse_without_drift",) if collapsed else ())

    def finish(self) -> Summary:
        """Write rounds.csv and summary.json; return the summary."""
        wall = time.perf_counter() - self.started
        if not self.rows:
            self.rows.append(self.evaluate(self.last_round, self.trace.segments_at(self.last_round)))
        table = pd.DataFrame([asdict(r) for r in self.rows])
        final = self.clients(self.trace.segments_at(self.rows[-1].round))
        counts = final.label_histograms(np.arange(self.trace.num_clients))
        clock, spec, overhead = self.clock, self.spec, self.clock.overhead
        summary = Summary(
            schema_version=SCHEMA_VERSION,
            trace=self.trace.name,
            trace_hash=self.recorder.config["trace"]["hash"],
            method=spec.method.name,
            oracle=self.method.oracle,
            seed=spec.seed,
            rounds=self.trace.rounds,
            **summarize(table, self.trace.event_round, [e.kind for e in self.trace.events()], spec.method.name, spec.target),
            partition_changes=len(self.change_rounds),
            degenerate=self.degenerate(table),
            ari_reference="ground_truth" if self.trace.num_groups else None,
            mean_client_distance_final=mean_client_distance(counts / counts.sum(1, keepdims=True), self.method.partition),
            overhead=RunOverhead(
                cluster_seconds=clock.server_seconds,
                client_query_seconds=clock.client_query_seconds,
                server_wall_seconds=clock.server_wall_seconds,
                extra_upload_bytes=overhead.upload_bytes,
                extra_download_bytes=overhead.download_bytes,
                client_extra_passes=overhead.client_extra_passes,
            ),
            events=self.method.events.counts(),
            scorecard=self.scoring.scorecard(self.method.events.rows),
            sim_seconds=clock.sim_seconds,
            wall_seconds=wall,
            status=self.status,
            diverged_round=self.diverged_round,
            run_dir=str(self.out),
        )
        if self.status == "ok" and self.spec.trace.newcomers:  # last: placing newcomers may grow the method's state
            summary = replace(summary, newcomer_accuracy=self.welcome(), wall_seconds=time.perf_counter() - self.started)
        self.recorder.finish(self.rows, self.method.events, summary, spec.checkpointing.keep)
        return summary

    def welcome(self) -> float:
        """The newcomers' mean test accuracy: after the last round each joins (FedDAG B.6), the method places it
        (``Method.admit``), and it trains its placed model ``newcomer_epochs`` local epochs on its window (0: none).

        Their queries count towards no total of the run, and the method's events while placing them are dropped.
        """
        trace = self.spec.trace
        newcomers = np.arange(self.trace.num_clients, trace.num_clients)
        clients = self.clients(trace.segments_at(trace.rounds - 1), trace.stream)
        queries = ClientQueries(newcomers, clients, self.ctx.model_bytes, Overhead())
        rng = np.random.default_rng([self.spec.seed, NEWCOMER_STREAM])
        events, self.method.events = self.method.events, EventLog()
        try:
            start = self.method.admit(newcomers, queries, rng)
        finally:
            self.method.events = events
        if trace.newcomer_epochs:
            work = clients.work(newcomers, rng, Phase(epochs=trace.newcomer_epochs))
            start = self.trainer.train(start, work, self.train, 0.0, self.method.newcomer_masks(len(newcomers))).params
        return float(clients.test_accuracy(newcomers, start).mean())


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


def finite(result: TrainOutput) -> bool:
    """Whether every loss and trained parameter is finite.

    A non-finite entry makes its tensor's sum non-finite, so finite sums (one pass, one device
    sync) settle it; only where a sum is not finite (a non-finite entry, or an overflow of
    finite ones) is every entry checked.
    """
    tensors = [result.loss, *result.params.values()]
    if bool(torch.stack([t.sum().float() for t in tensors]).isfinite().all()):
        return True
    return all(bool(torch.isfinite(t).all()) for t in tensors)
