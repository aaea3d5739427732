"""One path from a request to runs: a request (traces x methods x seeds, with overrides) becomes run jobs.

``request`` turns a suite or the command line into jobs; ``job`` executes one job in this
process; ``pool`` executes many at once on a local pool of fork-server workers or on Ray;
``outcomes`` says what became of each. ``driftbench run`` executes its jobs one after another in
this process (``run_here``: one method, or ``--jobs 1``; SIGINT checkpoints, errors propagate)
and a comparison on the local pool, as ``driftbench sweep`` does, where one failed run is
reported and the others go on. This package's public names are re-exported here.
"""

from driftbench.runner.job import (
    Execution,
    RunJob,
    execute,
    finished_summaries,
    job_config,
    job_trace,
    native_threads,
    run_here,
    run_job,
)
from driftbench.runner.outcomes import LOCKED, NOT_RECORDED, RunOutcome, failed, outcome_line, outcome_table, unfinished_exit
from driftbench.runner.pool import BACKENDS, RETRIES, LocalBackend, PoolOptions, RayBackend, run_pool
from driftbench.runner.request import (
    Request,
    Suite,
    check_trace,
    load_suite,
    method_configs,
    plan_jobs,
    suite_request,
    validate_jobs,
)

__all__ = [
    "BACKENDS",
    "LOCKED",
    "NOT_RECORDED",
    "RETRIES",
    "Execution",
    "LocalBackend",
    "PoolOptions",
    "RayBackend",
    "Request",
    "RunJob",
    "RunOutcome",
    "Suite",
    "check_trace",
    "execute",
    "failed",
    "finished_summaries",
    "job_config",
    "job_trace",
    "load_suite",
    "method_configs",
    "native_threads",
    "outcome_line",
    "outcome_table",
    "plan_jobs",
    "run_here",
    "run_job",
    "run_pool",
    "suite_request",
    "unfinished_exit",
    "validate_jobs",
]
