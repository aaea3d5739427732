"""The scheduler: replays a trace against a method, keeps the simulated clock, checkpoints and writes the run record."""

from driftbench.scheduler.loop import RunInterrupted, Scheduler, run
from driftbench.scheduler.spec import Checkpointing, RunSpec, run_config, run_spec

__all__ = ["Checkpointing", "RunInterrupted", "RunSpec", "Scheduler", "run", "run_config", "run_spec"]
