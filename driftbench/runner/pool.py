"""Where a sweep's runs execute at once: a local pool of fork-server workers, or Ray tasks.

A Ray task whose worker died (killed, out of memory, its node lost) runs again, up to ``RETRIES``
times, waiting for the run's lock: the dead worker's lock is stale at once on its own host and once
its lease runs out on any other, and the run resumes from its checkpoint. Should the worker still
run after all (cut off, not dead), the retry waits for it to finish and keeps its record: one
training per run.
"""

from __future__ import annotations

import logging
import os
import sys
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any, Protocol

from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from driftbench.config import require
from driftbench.errors import ConfigError, one_line
from driftbench.forkserver import enter_worker_state, interruptible, pool_context, start_early, worker_state
from driftbench.locks import LEASE_ENV
from driftbench.registry import ENV
from driftbench.runner.job import RunJob, execute, resolved_trace
from driftbench.runner.outcomes import LOCKED, RunOutcome
from driftbench.scheduler.loop import SigintFlag

log = logging.getLogger(__name__)

BACKENDS = ("local", "ray")

RETRIES = 3  # times a run whose Ray worker died runs again (Ray's own default for its tasks)

WAIT_SECONDS = 0.25  # how often a sweep looks for Ctrl-C while it waits for its runs


@dataclass(frozen=True)
class PoolOptions:
    """Where a sweep's runs execute: backend and its resources."""

    backend: str = "local"
    jobs: int | None = None  # concurrent runs (local) or CPUs of a Ray cluster started here; None = the CPU count
    address: str | None = None  # an existing Ray cluster to join
    cpus_per_run: float = 1.0
    gpus_per_run: float = 0.0
    quiet: bool = False

    def __post_init__(self) -> None:
        require(self.backend in BACKENDS, f"--backend {self.backend!r}: allowed: {', '.join(BACKENDS)}")
        require(self.jobs is None or self.jobs >= 1, f"--jobs must be >= 1, got {self.jobs}")
        require(self.cpus_per_run > 0, f"--cpus-per-run must be > 0, got {self.cpus_per_run}")
        require(self.gpus_per_run >= 0, f"--gpus-per-run must be >= 0, got {self.gpus_per_run}")

    @property
    def workers(self) -> int:
        """Concurrent runs on this machine."""
        return self.jobs or os.cpu_count() or 1

    @property
    def threads(self) -> int:
        """Torch threads per run, so that concurrent runs share the CPUs."""
        if self.backend == "ray":
            return max(1, int(self.cpus_per_run))
        return max(1, (os.cpu_count() or 1) // self.workers)


class Backend(Protocol):
    """Where runs execute: submit a job, wait for some to finish, collect an outcome, close.

    ``retries``: how many times a job whose worker died runs again (0 where a dead worker breaks the pool).
    """

    retries: int

    def submit(self, job: RunJob) -> Any:
        """Start ``job``; returns a handle."""

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        """Block until at least one of ``handles`` is done or ``timeout`` seconds passed; returns the done ones."""

    def result(self, handle: Any) -> RunOutcome:
        """The outcome of a done handle."""

    def close(self) -> None:
        """Release the workers."""


class LocalBackend:
    """One run per process in a pool of fork-server workers (``driftbench.forkserver``), in this directory, with its plug-ins."""

    retries = 0  # a worker that dies breaks the pool: its runs and the pending ones fail, and the next sweep resumes them

    def __init__(self, options: PoolOptions) -> None:
        start_early()  # unless started already: its workers ignore Ctrl-C between jobs
        self.pool = ProcessPoolExecutor(
            options.workers, mp_context=pool_context(), initializer=enter_worker_state, initargs=worker_state()
        )

    def submit(self, job: RunJob) -> Future[RunOutcome]:
        """Queue ``job`` on the pool."""
        return self.pool.submit(interruptible, execute, job)

    def wait(self, handles: list[Future[RunOutcome]], timeout: float) -> list[Future[RunOutcome]]:
        """Block until at least one job is done or ``timeout`` seconds passed; return the finished ones."""
        return list(wait(handles, timeout, return_when=FIRST_COMPLETED).done)

    def result(self, handle: Future[RunOutcome]) -> RunOutcome:
        """The outcome of a finished job (raises if its worker process died)."""
        return handle.result()

    def close(self) -> None:
        """Shut the pool down."""
        self.pool.shutdown(cancel_futures=True)


class RayBackend:
    """One Ray task per run, on the cluster at ``address`` or on a local cluster started here.

    Ray does not retry a task itself: ``run_pool`` does, with the run's lock deciding (module docstring).
    """

    retries = RETRIES

    def __init__(self, options: PoolOptions) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError("--backend ray needs Ray: pip install 'driftbench[ray]'") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        # the tasks load this sweep's plug-ins and lock runs with its lease, also on nodes started without its environment
        passed = {name: os.environ[name] for name in (ENV, LEASE_ENV) if os.environ.get(name)}
        env = {"env_vars": passed} if passed else None
        if self.started and options.address:
            ray.init(address=options.address, log_to_driver=False, logging_level=logging.WARNING, runtime_env=env)
        elif self.started:
            ray.init(
                num_cpus=options.workers,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
                runtime_env=env,
            )
        self.task = ray.remote(num_cpus=options.cpus_per_run, num_gpus=options.gpus_per_run, max_retries=0)(execute)

    def submit(self, job: RunJob) -> Any:
        """Submit ``job`` as a Ray task."""
        return self.task.remote(job)

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        """Block until at least one task is done or ``timeout`` seconds passed; return the finished ones."""
        done: list[Any] = self.ray.wait(handles, num_returns=1, timeout=timeout)[0]
        return done

    def result(self, handle: Any) -> RunOutcome:
        """The outcome of a finished task (raises if its worker died)."""
        outcome: RunOutcome = self.ray.get(handle)  # ray is untyped: get() returns Any
        return outcome

    def close(self) -> None:
        """Disconnect, stopping the local cluster if this sweep started it."""
        if self.started:
            self.ray.shutdown()


def open_backend(options: PoolOptions) -> Backend:
    """The backend ``options.backend`` names."""
    return RayBackend(options) if options.backend == "ray" else LocalBackend(options)


def run_pool(jobs: list[RunJob], options: PoolOptions, desc: str = "sweep") -> list[RunOutcome]:
    """Run every job on the backend, all at once; each record is final when its run ends.

    Ctrl-C raises ``KeyboardInterrupt`` here, between two waits, not inside the pool's own code, whose
    processes it would leave half started; the workers, which got it too, checkpoint their runs first.
    """
    resolved_trace.cache_clear()  # the runs build their traces in their own processes
    backend = open_backend(options)
    outcomes: dict[int, RunOutcome] = {}  # by position: jobs that differ only in overrides or folder share a label
    bar = tqdm(total=len(jobs), desc=desc, unit="run", disable=options.quiet or not sys.stderr.isatty())
    try:
        with bar, logging_redirect_tqdm(), SigintFlag() as sigint:
            running = {backend.submit(job): (i, 0) for i, job in enumerate(jobs)}  # handle -> job, times it ran again
            while running:
                done = backend.wait(list(running), WAIT_SECONDS)
                if sigint.raised:
                    raise KeyboardInterrupt
                for handle in done:
                    i, again = running.pop(handle)
                    outcome = collect(backend, handle, jobs[i], again < backend.retries)
                    if outcome is None:
                        running[backend.submit(waiting(jobs[i]))] = (i, again + 1)
                    else:
                        outcomes[i] = outcome
                        bar.update()
    finally:
        backend.close()
    return [outcomes[i] for i in range(len(jobs))]


def waiting(job: RunJob) -> RunJob:
    """``job`` waiting for its run's lock instead of reporting it as running elsewhere: a retry after its worker died."""
    return replace(job, execution=replace(job.execution, wait_locked=True))


def collect(backend: Backend, handle: Any, job: RunJob, retry: bool) -> RunOutcome | None:
    """The job's outcome, logged; a worker that died: None when the job may run again (``retry``), else a failed outcome."""
    try:
        outcome = backend.result(handle)
    except Exception as exc:  # the worker process or Ray task itself died
        if retry:
            log.warning("%s: its worker died (%s); running it again once its lock is free", job.label, one_line(exc))
            return None
        outcome = RunOutcome(job.label, "failed", None, 0.0, error=one_line(exc), exit_code=1)
    if outcome.state == LOCKED:
        log.warning("%s", outcome.error)
    elif outcome.state == "failed":
        log.warning("%s failed: %s%s", outcome.label, outcome.error, f"\n{outcome.error_trace}" if outcome.error_trace else "")
    else:
        log.info("%s %s (%s, %.1f s)", outcome.label, outcome.state, outcome.status, outcome.seconds)
    return outcome
