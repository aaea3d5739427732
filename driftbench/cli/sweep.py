"""``driftbench sweep``: traces x methods x seeds on a local process pool or Ray."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from driftbench.cli.common import add_log, add_sets, comma_list, seed_list, split_method_sets, text_table, tracking_of
from driftbench.config import parse_sets

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench sweep`` and its flags."""
    sweep = sub.add_parser(
        "sweep",
        help="run traces x methods x seeds on a local process pool or Ray; finished runs are skipped",
        description="Run every (trace, method, seed); runs whose summary.json exists with the same resolved "
        "config hash are skipped, so a stopped sweep continues.",
    )
    sweep.add_argument(
        "--suite", type=Path, help="a suite TOML (e.g. evaluation/suites/ci.toml): traces with overrides, methods, seeds"
    )
    sweep.add_argument("--traces", type=comma_list, default=[], metavar="A,B", help="trace names or files (replace the suite's)")
    sweep.add_argument(
        "--methods",
        type=comma_list,
        default=[],
        metavar="X,Y",
        help="method names (replace the suite's; default: each trace's own comparison)",
    )
    sweep.add_argument("--seeds", type=seed_list, default=[], metavar="0,1,2", help="run seeds (default: the suite's, or 0)")
    sweep.add_argument(
        "--backend", default="local", choices=["local", "ray"], help="local process pool or Ray tasks (default local)"
    )
    sweep.add_argument(
        "--jobs", type=int, help="concurrent runs (local) or CPUs of a Ray cluster started here (default: CPU count)"
    )
    sweep.add_argument("--address", help="Ray: join this cluster (e.g. auto or HOST:PORT) instead of starting a local one")
    sweep.add_argument("--cpus-per-run", type=float, default=1.0, help="Ray: CPUs per run (default 1)")
    sweep.add_argument("--gpus-per-run", type=float, default=0.0, help="Ray: GPUs per run (default 0)")
    sweep.add_argument("--out", type=Path, default=Path("runs"), help="root of the run records (default runs/)")
    sweep.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="compute device (default auto)")
    add_sets(sweep, "KEY: for every trace; method.KEY for every method that has it")
    sweep.add_argument(
        "--wait-locked",
        action="store_true",
        help="wait for runs that another process is running (default: report them as running elsewhere and go on)",
    )
    sweep.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    add_log(sweep)
    sweep.set_defaults(func=cmd_sweep, rerun=True)  # Ctrl-C: rerunning resumes (main)


def cmd_sweep(args: argparse.Namespace) -> int:
    """``driftbench sweep``."""
    from driftbench.runner import (
        Execution,
        PoolOptions,
        load_suite,
        outcome_line,
        outcome_table,
        plan_jobs,
        run_pool,
        suite_request,
        validate_jobs,
    )

    pool = PoolOptions(args.backend, args.jobs, args.address, args.cpus_per_run, args.gpus_per_run, args.quiet)
    trace_sets, method_sets = split_method_sets(parse_sets(args.set))
    suite = load_suite(args.suite) if args.suite else None
    request = suite_request(suite, args.traces, args.methods, args.seeds, trace_sets, method_sets)
    execution = Execution(args.device, args.out, threads=pool.threads, wait_locked=args.wait_locked)
    jobs = plan_jobs(request, execution)
    if not args.address:  # the nodes of a joined Ray cluster may hold data that this machine lacks
        validate_jobs(jobs)
    log = args.log or (suite.log if suite else ())  # --log replaces the suite's, as --traces and --methods do
    if log:
        tracking = tracking_of(log, args.out)
        jobs = [replace(j, execution=replace(j.execution, tracking=tracking)) for j in jobs]
    outcomes = run_pool(jobs, pool)
    print(text_table(outcome_table(outcomes)))
    print(outcome_line(outcomes))
    return 0 if all(o.status == "ok" for o in outcomes) else 1
