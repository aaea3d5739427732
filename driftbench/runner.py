"""One path from a request to runs: a request (traces x methods x seeds, with overrides) becomes run jobs.

Jobs execute in this process, on a local process pool or on Ray.

``driftbench run`` is a request of one trace and one seed executed in this process (SIGINT
checkpoints, errors propagate); ``driftbench sweep`` executes the same jobs on a pool or Ray,
where one failed run is reported and the others go on.

A sweep's job resumes "matching": its run is skipped when ``summary.json`` exists and its
``config.json`` has the same resolved config hash as the run would have now, so a stopped
sweep continues where it was (an incomplete run with the same hash resumes from its
checkpoint). The hash leaves out the fields ``--resume`` also ignores (``VOLATILE_CONFIG``:
device, git revision, versions): they describe the machine and checkout, not the
experiment, so a sweep continued on another machine or after a commit keeps its finished
runs. After a code change that changes results, sweep into a fresh ``--out`` folder.

A job holds its run folder's lock (``driftbench.locks``) from the skip check to the end of the
run, so two sweeps into one folder never run the same run: the second reports it as running
elsewhere (or waits for it, ``wait_locked``) and goes on with the others. A Ray task whose worker
died (killed, out of memory, its node lost) runs again, up to ``RETRIES`` times, waiting for the
run's lock: the dead worker's lock is stale at once on its own host and once its lease runs out on
any other, and the run resumes from its checkpoint. Should the worker still run after all (cut
off, not dead), the retry waits for it to finish and keeps its record: one training per run.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import torch
from threadpoolctl import threadpool_limits
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from driftbench.config import check_keys, flat_sets, read_toml, require
from driftbench.discovery import plugins
from driftbench.engine.device_data import resolve_device
from driftbench.errors import ConfigError, DriftbenchError, RunError, RunLocked, TraceFileError, one_line
from driftbench.forkserver import enter_worker_state, interruptible, pool_context, start_early, worker_state
from driftbench.locks import run_lock
from driftbench.methods.catalog import MethodSpec, load_method
from driftbench.record.files import CONFIG, SUMMARY, config_digest, read_json, run_dir, run_label
from driftbench.record.metrics import fixed_target
from driftbench.record.runs import read_records
from driftbench.record.schema import Summary
from driftbench.record.summarize import REFERENCE
from driftbench.registry import ENV
from driftbench.scheduler import Checkpointing, RunSpec, run, run_config
from driftbench.scheduler.loop import SigintFlag
from driftbench.traces.catalog import ResolvedTrace, default_methods, is_trace_file, named_spec, resolve, run_sets
from driftbench.tracking.destinations import NO_TRACKING, Destination, Tracking, destinations

log = logging.getLogger("driftbench")

SUITE_KEYS = {"description", "traces", "methods", "seeds", "log"}
BACKENDS = ("local", "ray")
RETRIES = 3  # times a run whose Ray worker died runs again (Ray's own default for its tasks)
WAIT_SECONDS = 0.25  # how often a sweep looks for Ctrl-C while it waits for its runs
LOCKED = "running elsewhere"  # the state of a run whose folder another process holds
NOT_RECORDED = "not recorded"  # the state of a run that policy "recorded" did not find and did not run
RESUME = (
    "never",
    "always",
    "matching",
    "recorded",
)  # start afresh; continue (refusing another configuration); continue when the config hash matches; only keep matches


@dataclass(frozen=True)
class Suite:
    """A named sweep from a TOML file: traces with their ``--set`` overrides, methods, seeds, and trackers (``log``)."""

    description: str
    traces: dict[str, dict[str, str]]
    methods: tuple[str, ...]
    seeds: tuple[int, ...]
    log: tuple[Destination, ...] = ()


@dataclass(frozen=True)
class Request:
    """What to run: traces with ``--set`` overrides, methods (empty: the trace's default comparison), seeds, method overrides."""

    traces: dict[str, dict[str, str]]
    methods: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0,)
    method_sets: dict[str, str] = field(default_factory=dict)


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


@dataclass(frozen=True)
class RunOutcome:
    """What became of one run: ``ran``, ``skipped`` (up to date), ``running elsewhere``, ``not recorded`` or ``failed``."""

    label: str
    state: str
    status: str | None  # the summary's status ("ok" | "diverged"); None when the run failed
    seconds: float
    error: str = ""
    summary: Summary | None = field(default=None, repr=False)
    error_trace: str = field(default="", repr=False)  # for failures that are not driftbench's own errors (bugs)
    exit_code: int = 0  # of the error, for a run that did not finish


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


def load_suite(path: Path) -> Suite:
    """Parse a suite TOML: ``methods``, ``seeds`` and one ``[traces.NAME]`` table of overrides per trace."""
    raw = read_toml(path)
    check_keys(raw, SUITE_KEYS, str(path))
    traces, methods, seeds, sinks = raw.get("traces"), raw.get("methods"), raw.get("seeds", [0]), raw.get("log", [])
    require(
        isinstance(traces, dict) and bool(traces) and all(isinstance(t, dict) for t in traces.values()),
        f"{path}: traces: expected one [traces.NAME] table per trace (empty tables allowed)",
    )
    require(
        isinstance(methods, list) and bool(methods) and all(isinstance(m, str) for m in methods),
        f"{path}: methods: expected a non-empty list of method names",
    )
    require(
        isinstance(seeds, list) and bool(seeds) and all(type(s) is int and s >= 0 for s in seeds),
        f"{path}: seeds: expected a non-empty list of integers >= 0",
    )
    require(
        isinstance(sinks, list) and all(isinstance(s, str) for s in sinks),
        f'{path}: log: expected a list of trackers, e.g. ["tensorboard", "mlflow=sqlite:///mlflow.db"]',
    )
    assert isinstance(traces, dict) and isinstance(methods, list) and isinstance(sinks, list)  # require()d above
    try:
        log = destinations(sinks)
    except ConfigError as exc:
        raise ConfigError(f"{path}: log: {exc}") from None
    return Suite(
        description=str(raw.get("description", "")),
        traces={name: flat_sets(table) for name, table in traces.items()},
        methods=tuple(methods),
        seeds=tuple(seeds),
        log=log,
    )


def suite_request(
    suite: Suite | None,
    traces: list[str],
    methods: list[str],
    seeds: list[int],
    trace_sets: dict[str, str],
    method_sets: dict[str, str],
) -> Request:
    """A suite's request, or the command line's; traces, methods or seeds given on the command line replace the suite's.

    Each trace gets the suite's overrides for it, then the command line's ``--set`` values.
    """
    traces = traces or list(suite.traces if suite else [])
    require(bool(traces), "sweep: give --traces (and optionally --methods), or a --suite file")
    return Request(
        traces={t: {**(suite.traces.get(t, {}) if suite else {}), **trace_sets} for t in traces},
        methods=tuple(dict.fromkeys(methods or (suite.methods if suite else []))),  # a repeat would share a run folder
        seeds=tuple(dict.fromkeys(seeds or (suite.seeds if suite else [0]))),
        method_sets=method_sets,
    )


def plan_jobs(request: Request, execution: Execution) -> list[RunJob]:
    """Validate the request and list its runs, FedAvg's first (the others' time-to-accuracy target, the pool's first start).

    Without methods, each trace runs its own default comparison (its TOML's or trace file's ``methods``).
    """
    stems: dict[str, str] = {}
    for name, sets in request.traces.items():
        check_trace(name, sets)
        other = stems.setdefault(Path(name).stem, name)
        require(other == name, f"--traces: {other!r} and {name!r} would share the run folder {Path(name).stem!r}")
    execution = replace(execution, out=execution.out.resolve())
    jobs = [
        RunJob(str(Path(trace).resolve()) if is_trace_file(trace) else trace, sets, spec.name, method_sets, seed, execution)
        for trace, sets in request.traces.items()
        for spec, method_sets in method_configs(request.methods or default_methods(trace, sets), request.method_sets)
        for seed in request.seeds
    ]
    return sorted(jobs, key=lambda job: job.method != REFERENCE)


def method_configs(names: tuple[str, ...] | list[str], sets: dict[str, str]) -> list[tuple[MethodSpec, dict[str, str]]]:
    """Each named method with its share of the ``method.KEY`` overrides; a key that no selected method has is an error."""
    specs = [load_method(name) for name in names]
    fields = [set(spec.params.__dataclass_fields__) for spec in specs]
    unknown = sorted(set(sets) - set().union(*fields))
    if unknown:
        allowed = "; ".join(f"{spec.name}: {', '.join(sorted(f)) or '(none)'}" for spec, f in zip(specs, fields))
        raise ConfigError(f"--set method.{unknown[0]}: no selected method has this parameter ({allowed})")
    return [(spec, {k: v for k, v in sets.items() if k in f}) for spec, f in zip(specs, fields)]


def check_trace(name: str, sets: dict[str, str]) -> None:
    """Raise the usual one-line error for an unknown trace, a missing trace file or a bad override."""
    if is_trace_file(name):
        if not Path(name).is_file():
            raise TraceFileError(f"{name}: no such trace file")
    else:
        named_spec(name, sets)


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


def validate_jobs(jobs: list[RunJob]) -> None:
    """Build each trace of ``jobs`` before any run starts, so that what only a built trace can refuse stops them all.

    That is a given ``train.participants`` above the trace's clients or a damaged trace file. A trace
    without a drift event within its rounds is reported once, as a warning.
    """
    quiet: set[str] = set()
    for key in dict.fromkeys(job.trace_key for job in jobs):
        trace = resolved_trace(*key).trace
        if not len(trace.event_round) and trace.name not in quiet:
            quiet.add(trace.name)
            log.warning("%s: no drift event within its %d rounds; recovery is not measured", trace.name, trace.rounds)


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
    spec = RunSpec(
        resolved.trace,
        resolved.pool,
        resolved.train,
        method,
        job.seed,
        ex.device,
        ex.out,
        target,
        ex.quiet,
        ex.checkpointing,
        resolved.data_seed,
        ex.tracking,
    )
    folder = run_dir(ex.out, resolved.trace.name, method.name, job.seed)

    def matching() -> bool:
        return stored_digest(folder) == config_digest(run_config(spec, resolve_device(ex.device), resolved.trace.content_hash()))

    if ex.resume == "recorded" and not (matching() and (folder / SUMMARY).is_file()):  # before the lock makes the folder
        log.info("not recorded: %s", job.label)
        error = f"{folder}: no finished run of this configuration"
        return RunOutcome(job.label, NOT_RECORDED, None, time.perf_counter() - started, error=error)
    with run_lock(folder, ex.wait_locked) as lease:
        resume = ex.resume in ("always", "recorded") or (ex.resume == "matching" and matching())  # recorded: matched above
        kept = resume and (folder / SUMMARY).is_file()
        log.info("%s %s", "keeping" if kept else "running", job.label)
        summary = run(replace(spec, checkpointing=replace(ex.checkpointing, resume=resume)), lambda: lease.lost)
    return RunOutcome(job.label, "skipped" if kept else "ran", summary.status, time.perf_counter() - started, summary=summary)


def execute(job: RunJob) -> RunOutcome:
    """Execute one job in a pool worker or Ray task: like ``run_job``, but a failure becomes a failed outcome."""
    started = time.perf_counter()
    try:
        return run_job(job)
    except RunLocked as exc:
        return RunOutcome(job.label, LOCKED, None, time.perf_counter() - started, error=str(exc), exit_code=exc.exit_code)
    except Exception as exc:  # one failed run is reported; the sweep goes on
        return failed(job.label, exc, time.perf_counter() - started)


def failed(label: str, exc: Exception, seconds: float) -> RunOutcome:
    """The outcome of a run that ``exc`` stopped (with the traceback when it is not one of driftbench's own errors)."""
    trace = "" if isinstance(exc, DriftbenchError) else traceback.format_exc()
    code = exc.exit_code if isinstance(exc, DriftbenchError) else 1
    return RunOutcome(label, "failed", None, seconds, error=one_line(exc), error_trace=trace, exit_code=code)


def run_here(jobs: list[RunJob]) -> list[Summary]:
    """Execute the jobs one after another in this process, in order; return their summaries as readers see them."""
    return finished_summaries([run_job(job) for job in jobs])


def finished_summaries(outcomes: list[RunOutcome]) -> list[Summary]:
    """The summaries of the finished runs among ``outcomes``, read back with what depends on other runs derived."""
    records = read_records([Path(o.summary.run_dir) for o in outcomes if o.summary is not None])
    return [record.summary for record in records if record.summary is not None]


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
        plugins = {"env_vars": {ENV: os.environ[ENV]}} if os.environ.get(ENV) else None  # the tasks load the plug-ins too
        if self.started and options.address:
            ray.init(address=options.address, log_to_driver=False, logging_level=logging.WARNING, runtime_env=plugins)
        elif self.started:
            ray.init(
                num_cpus=options.workers,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
                runtime_env=plugins,
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


def outcome_table(outcomes: list[RunOutcome]) -> list[dict[str, str]]:
    """One printable row per run."""
    return [
        {"run": o.label, "state": o.state, "status": o.status or "-", "seconds": f"{o.seconds:.1f}", "error": o.error or "-"}
        for o in outcomes
    ]


def outcome_line(outcomes: list[RunOutcome]) -> str:
    """The count of each state: ``N ran, N skipped (up to date)[, N running elsewhere][, N not recorded], N failed``."""
    states = [o.state for o in outcomes]
    elsewhere = "".join(f", {states.count(state)} {state}" for state in (LOCKED, NOT_RECORDED) if state in states)
    counts = f"{states.count('ran')} ran, {states.count('skipped')} skipped (up to date)"
    return f"{counts}{elsewhere}, {states.count('failed')} failed"


def unfinished_exit(outcomes: list[RunOutcome]) -> int:
    """The exit status of runs that did not finish: the highest of their errors' (0 when all finished)."""
    return max((o.exit_code for o in outcomes), default=0)
