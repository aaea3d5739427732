"""What a run is: the run specification, its checkpoint policy and the config.json that identifies it."""

from __future__ import annotations

import functools
import platform
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

import driftbench
from driftbench.config import recorded_params, require
from driftbench.data.pool import Pool
from driftbench.methods.catalog import MethodSpec
from driftbench.record.schema import Target
from driftbench.traces.catalog import ResolvedTrace
from driftbench.traces.model import Trace
from driftbench.tracking.destinations import NO_TRACKING, Tracking
from driftbench.train_config import TrainConfig


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
    target: Target | None = None  # None: a FedAvg run sets the default from its own curve; others get no TTA
    quiet: bool = False
    checkpointing: Checkpointing = field(default_factory=Checkpointing)
    data_seed: int | None = None  # the seed the trace was generated with; None: a fixed trace (a file, or given built)
    tracking: Tracking = NO_TRACKING  # the trackers the run logs to (never part of its configuration)

    def __post_init__(self) -> None:
        clients, participants = self.trace.num_clients, self.train.participants
        require(
            participants <= clients,
            f"train.participants must be <= the trace's {clients} clients, got {participants}",
        )


def run_spec(resolved: ResolvedTrace, method: MethodSpec, seed: int, **options: Any) -> RunSpec:
    """The run of ``method`` at ``seed`` on a resolved trace (its trace, pool, training settings and data seed)."""
    return RunSpec(resolved.trace, resolved.pool, resolved.train, method, seed, data_seed=resolved.data_seed, **options)


def run_config(spec: RunSpec, device: torch.device, trace_hash: str) -> dict[str, Any]:
    """config.json of the run ``spec`` on ``device``: everything needed to reproduce it."""
    return {
        "trace": {
            "name": spec.trace.name,
            "hash": trace_hash,
            **spec.trace.info,
            "event_rounds": spec.trace.event_round.tolist(),
        },
        "method": spec.method.as_config(),
        "train": recorded_params(spec.train),
        "seed": spec.seed,
        "data_seed": spec.data_seed,
        "rounds": spec.trace.rounds,
        "device": str(device),
        "driftbench_version": driftbench.__version__,
        "git_revision": git_revision(),
        "torch_version": torch.__version__,
        "provenance": provenance(),
    }


def provenance() -> dict[str, Any]:
    """Where and when a run started: command line, UTC time, Python and numpy versions, torch's CPU threads, the CPU."""
    return {
        "command": shlex.join(sys.argv),
        "cpu": cpu_identity(),
        "started_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "python_version": platform.python_version(),
        "numpy_version": np.__version__,
        "threads": torch.get_num_threads(),
    }


FLOAT_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "asimd", "sve")  # pick kernels


@functools.cache
def cpu_identity() -> str:
    """The CPU's model and the instruction sets that choose torch's float kernels (runs on CPUs that differ here may
    round differently); from /proc/cpuinfo, else the platform's processor name."""
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"{platform.machine()} {platform.processor()}".strip()
    fields = dict(line.partition(":")[::2] for line in info.splitlines() if ":" in line)
    fields = {key.strip(): value.strip() for key, value in fields.items()}
    model = fields.get("model name") or fields.get("CPU part") or platform.processor()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    return "; ".join([f"{platform.machine()} {model}".strip(), " ".join(f for f in FLOAT_FLAGS if f in flags)])


def git_revision() -> str | None:
    """The git commit of the driftbench checkout, when it is one."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(driftbench.__file__).parent, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None
