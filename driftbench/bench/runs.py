"""``driftbench bench runs``: several methods' runs of one trace, stepped round by round in one process, timed per phase.

The runs advance in lockstep (round r of every method, then round r + 1), so each method
sees the same machine load and their ratios hold on a busy machine where absolute seconds
do not. Each round is split into the method's plan (its client queries included), local
training, the method's aggregation and the evaluation of every client; "other" is the rest
of the round (batch plans, the clock, checks). Records go to a scratch folder and are the
runs' usual records.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from driftbench.config import require
from driftbench.methods.catalog import load_method
from driftbench.runner import native_threads
from driftbench.scheduler import Checkpointing, Scheduler, run_spec
from driftbench.traces.catalog import resolve

PHASES = ("plan", "train", "aggregate", "evaluate")


@dataclass(frozen=True)
class RunsBench:
    """What ``driftbench bench runs`` times: a trace with overrides, its methods, a seed and the reference method."""

    trace: str = "openimage-buckets"
    methods: tuple[str, ...] = ("fedavg", "fielding", "auxo", "flexcfl")
    sets: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    reference: str = "fielding"
    threads: int | None = None  # torch and native threads; None: torch's default

    def __post_init__(self) -> None:
        require(bool(self.methods), "--methods: give at least one method")
        require(self.reference in self.methods, f"--reference {self.reference!r} must be one of --methods {self.methods}")


class PhaseClock:
    """Wall and CPU seconds per phase, accumulated over calls."""

    def __init__(self) -> None:
        self.wall = dict.fromkeys((*PHASES, "round"), 0.0)
        self.cpu = dict.fromkeys((*PHASES, "round"), 0.0)

    def timed(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` with its time added to ``phase``."""

        def call(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.wall[phase] += time.perf_counter() - wall
                self.cpu[phase] += time.process_time() - cpu

        return call


def instrument(scheduler: Scheduler, clock: PhaseClock) -> None:
    """Time the scheduler's phases by wrapping the bound methods it calls each round."""
    method = scheduler.method
    method.plan = clock.timed("plan", method.plan)  # type: ignore[method-assign]
    method.aggregate = clock.timed("aggregate", method.aggregate)  # type: ignore[method-assign]
    scheduler.trainer.train = clock.timed("train", scheduler.trainer.train)  # type: ignore[method-assign]
    scheduler.evaluate = clock.timed("evaluate", scheduler.evaluate)  # type: ignore[method-assign]


def run_runs_bench(bench: RunsBench, out: Path) -> dict[str, Any]:
    """Run every method of ``bench`` in lockstep into ``out``; seconds per phase, server time and ratios to the reference."""
    threads = bench.threads or torch.get_num_threads()
    torch.set_num_threads(threads)
    resolved = resolve(bench.trace, bench.sets)
    clocks: dict[str, PhaseClock] = {}
    schedulers: dict[str, Scheduler] = {}
    with native_threads(threads):
        for name in bench.methods:
            spec = run_spec(
                resolved, load_method(name), bench.seed, device="cpu", out=out, quiet=True, checkpointing=Checkpointing(every=0)
            )
            schedulers[name], clocks[name] = Scheduler(spec), PhaseClock()
            schedulers[name].begin()
            instrument(schedulers[name], clocks[name])
        for rnd in range(resolved.trace.rounds):
            for name, scheduler in schedulers.items():
                clocks[name].timed("round", scheduler.step)(rnd)
        summaries = {name: scheduler.finish() for name, scheduler in schedulers.items()}
    reference = clocks[bench.reference].wall["round"]
    return {
        "trace": resolved.trace.name,
        "rounds": resolved.trace.rounds,
        "seed": bench.seed,
        "threads": threads,
        "reference": bench.reference,
        "methods": {
            name: {
                "wall_seconds": {**clock.wall, "other": clock.wall["round"] - sum(clock.wall[p] for p in PHASES)},
                "cpu_seconds": {**clock.cpu, "other": clock.cpu["round"] - sum(clock.cpu[p] for p in PHASES)},
                "server_wall_seconds": summaries[name].overhead.server_wall_seconds,
                "cluster_seconds": summaries[name].overhead.cluster_seconds,
                "wall_vs_reference": clock.wall["round"] / reference,
                "final_accuracy": summaries[name].final_accuracy,
            }
            for name, clock in clocks.items()
        },
    }


def format_runs_bench(result: dict[str, Any]) -> str:
    """The human-readable report of ``run_runs_bench``: one line per method, wall (CPU) seconds per phase."""
    columns = ("round", *PHASES, "other")
    lines = [
        f"{result['trace']}, {result['rounds']} rounds, seed {result['seed']}, {result['threads']} threads, methods in lockstep; "
        f"wall seconds (CPU seconds) per run",
        f"{'method':<12}" + "".join(f"{c:>18}" for c in (*columns, "server_wall")) + f"{'vs ' + result['reference']:>16}",
    ]
    for name, m in result["methods"].items():
        cells = "".join(f"{m['wall_seconds'][c]:>9.2f} ({m['cpu_seconds'][c]:>6.2f})" for c in columns)
        lines.append(f"{name:<12}{cells}{m['server_wall_seconds']:>18.2f}{m['wall_vs_reference']:>15.2f}x")
    return "\n".join(lines)
