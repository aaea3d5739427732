"""One run of a request: how it executes (``Execution``), the job, and its execution in this process.

A job resumes "matching": its run is skipped when ``summary.json`` exists and its ``config.json``
has the same resolved config hash as the run would have now, so a stopped sweep continues where it
was (an incomplete run with the same hash resumes from its checkpoint). The hash leaves out the
fields ``--resume`` also ignores (``VOLATILE_CONFIG``: device, git revision, versions): they describe
the machine and checkout, not the experiment, so a sweep continued on another machine or after a
commit keeps its finished runs. After a code change that changes results, sweep into a fresh ``--out``. A job whose
folder would lie inside an archive (``reproduce --recorded`` on one) is read from the archive, never run.

A job holds its run folder's lock (``driftbench.locks``) from the skip check to the end of the run,
so two sweeps into one folder never run the same run: the second reports it as running elsewhere
(or waits for it, ``wait_locked``) and goes on with the others.
"""

from __future__ import annotations

import functools
import logging
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from threadpoolctl import threadpool_limits

from driftbench.config import require
from driftbench.discovery import plugins
from driftbench.engine.device_data import resolve_device
from driftbench.errors import ConfigError, RunError, RunLocked
from driftbench.locks import run_lock
from driftbench.methods.catalog import load_method
from driftbench.record.archive import archive_holding
from driftbench.record.files import CONFIG, SUMMARY, config_digest, read_json, run_dir, run_label
from driftbench.record.metrics import fixed_target
from driftbench.record.runs import archived_runs, folder_record, read_records
from driftbench.record.schema import Summary
from driftbench.runner.outcomes import LOCKED, NOT_RECORDED, RunOutcome, failed
from driftbench.scheduler import Checkpointing, run, run_config, run_spec
from driftbench.traces.catalog import ResolvedTrace, resolve, run_sets
from driftbench.tracking.destinations import NO_TRACKING, Tracking
from driftbench.tracking.feed import Feed

log = logging.getLogger(__name__)

RESUME = (
    "never",
    "always",
    "matching",
    "recorded",
)  # start afresh; continue (refusing another configuration); continue when the config hash matches; only keep matches


@dataclass(frozen=True)
class Execution:
    """How each run of a request executes: device, output root, TTA target, checkpoints, resume policy, threads."""

    device: str = "auto"
    out: Path = Path("runs")
    target: float | None = None  # None: the default target, set by FedAvg's run of the same trace and seed
    checkpointing: Checkpointing = field(default_factory=Checkpointing)
    resume: str = "matching"
    threads: int | None = None  # torch threads per run; None leaves torch's default
    quiet: bool = True
    wait_locked: bool = False  # a run that another process holds: wait for it (else it is reported as running elsewhere)
    tracking: Tracking = NO_TRACKING  # the trackers each run logs to (--log)

    def __post_init__(self) -> None:
        require(self.resume in RESUME, f"resume policy {self.resume!r}: allowed: {', '.join(RESUME)}")


@dataclass(frozen=True)
class RunJob:
    """One run: a trace and its overrides, a method and its overrides, a seed, and how to execute it."""

    trace: str
    trace_sets: dict[str, str]
    method: str
    method_sets: dict[str, str]
    seed: int
    execution: Execution

    @property
    def label(self) -> str:
        """``<trace>/<method>/seed<k>``, the run's folder under the output root."""
        return run_label(self.trace, self.method, self.seed)

    @property
    def trace_key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        """The trace and its overrides with its data seed (``run_sets``), hashable: jobs of one key replay the same trace."""
        return self.trace, tuple(sorted(run_sets(self.trace, self.trace_sets, self.seed).items()))


def stored_digest(folder: Path) -> str | None:
    """The config hash of the run record in ``folder``; None when it has no readable config.json."""
    try:
        return config_digest(read_json(folder / CONFIG)) if (folder / CONFIG).is_file() else None
    except RunError:
        return None


@functools.lru_cache(maxsize=2)
def resolved_trace(trace: str, sets: tuple[tuple[str, str], ...]) -> ResolvedTrace:
    """The trace, pool and settings a job names, built once per process for every method and seed that replays it."""
    return resolve(trace, dict(sets))


def job_trace(job: RunJob) -> ResolvedTrace:
    """The job's trace, pool and settings, built once per process for every method and seed that replays it."""
    return resolved_trace(*job.trace_key)


def job_config(job: RunJob) -> dict[str, Any]:
    """The config.json content the job's run would write here and now (its trace built, as the run builds it)."""
    resolved = job_trace(job)
    spec = run_spec(resolved, load_method(job.method, job.method_sets or None), job.seed, device=job.execution.device)
    return run_config(spec, resolve_device(job.execution.device), resolved.trace.content_hash())


def native_threads(threads: int) -> AbstractContextManager[object]:
    """Every native thread pool (numpy's and scipy's BLAS, scikit-learn's and torch's OpenMP) at ``threads`` in a block.

    Left alone, each pool starts one thread per core beside torch's; on a busy machine their
    spinning threads then wait on each other (a 20-point k-means took 20x longer).
    """
    limits: AbstractContextManager[object] = threadpool_limits(limits=threads)  # threadpoolctl is untyped
    return limits


def run_job(job: RunJob) -> RunOutcome:
    """Execute one job in this process; errors propagate (``driftbench run``)."""
    ex = job.execution
    threads = ex.threads or torch.get_num_threads()
    torch.set_num_threads(threads)
    with native_threads(threads):
        return _run_job(job)


def _run_job(job: RunJob) -> RunOutcome:
    started = time.perf_counter()
    plugins()  # a pool's worker loads the plug-ins DRIFTBENCH_PLUGINS names (once a process)
    ex = job.execution
    resolved = job_trace(job)
    method = load_method(job.method, job.method_sets or None)
    target = None if ex.target is None else fixed_target(ex.target)
    spec = run_spec(
        resolved,
        method,
        job.seed,
        device=ex.device,
        out=ex.out,
        target=target,
        quiet=ex.quiet,
        checkpointing=ex.checkpointing,
        tracking=ex.tracking,
    )
    folder = run_dir(ex.out, resolved.trace.name, method.name, job.seed)

    def digest() -> str:
        return config_digest(job_config(job))

    archive = archive_holding(folder)
    if archive is not None:
        return archived_outcome(job, folder, archive, digest(), started)

    def matching() -> bool:
        return stored_digest(folder) == digest()

    if ex.resume == "recorded" and not (matching() and (folder / SUMMARY).is_file()):  # before the lock makes the folder
        log.info("not recorded: %s", job.label)
        error = f"{folder}: no finished run of this configuration"
        return RunOutcome(job.label, NOT_RECORDED, None, time.perf_counter() - started, error=error)
    with run_lock(folder, ex.wait_locked) as lease:
        resume = ex.resume in ("always", "recorded") or (ex.resume == "matching" and matching())  # recorded: matched above
        kept = resume and (folder / SUMMARY).is_file()
        log.info("%s %s", "keeping" if kept else "running", job.label)
        summary = run(replace(spec, checkpointing=replace(ex.checkpointing, resume=resume)), lambda: lease.lost)
    state = "skipped" if kept else "ran"
    return RunOutcome(job.label, state, summary.status, time.perf_counter() - started, record=folder_record(folder, summary))


def archived_outcome(job: RunJob, folder: Path, archive: Path, digest: str, started: float) -> RunOutcome:
    """A run whose folder would lie in an archive: read from it, never run (resume policy "recorded" only: an archive is
    not written into); not recorded unless the archive holds it with the config hash ``digest``."""
    if job.execution.resume != "recorded":
        raise ConfigError(f"{folder}: inside the archive {archive}, which runs never write into; run into a runs folder")
    record = next((r for r in archived_runs(archive) if r.path == folder), None)
    if record is None or config_digest(record.config()) != digest:
        log.info("not recorded: %s", job.label)
        error = f"{folder}: no finished run of this configuration in the archive"
        return RunOutcome(job.label, NOT_RECORDED, None, time.perf_counter() - started, error=error)
    log.info("keeping %s", job.label)
    feed = Feed.open(job.execution.tracking, folder, record.config())  # its trackers, as a kept run's in a folder
    try:
        feed.push(lambda: record)
    finally:
        feed.close()
    return RunOutcome(job.label, "skipped", record.status, time.perf_counter() - started, record=record)


def execute(job: RunJob) -> RunOutcome:
    """Execute one job in a pool worker or Ray task: like ``run_job``, but a failure becomes a failed outcome."""
    started = time.perf_counter()
    try:
        return run_job(job)
    except RunLocked as exc:
        return RunOutcome(job.label, LOCKED, None, time.perf_counter() - started, error=str(exc), exit_code=exc.exit_code)
    except Exception as exc:  # one failed run is reported; the sweep goes on
        return failed(job.label, exc, time.perf_counter() - started)


def run_here(jobs: list[RunJob]) -> list[Summary]:
    """Execute the jobs one after another in this process, in order; return their summaries as readers see them."""
    return finished_summaries([run_job(job) for job in jobs])


def finished_summaries(outcomes: list[RunOutcome]) -> list[Summary]:
    """The summaries of the finished runs among ``outcomes``, read back with what depends on other runs derived."""
    records = read_records([Path(o.summary.run_dir) for o in outcomes if o.summary is not None])
    return [record.summary for record in records if record.summary is not None]
