"""``driftbench run``: replay a trace against methods in this process or on a pool."""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from driftbench.cli.common import (
    add_data_root,
    add_log,
    add_scale,
    add_sets,
    data_root_sets,
    split_method_sets,
    text_table,
    tracking_of,
)
from driftbench.config import parse_sets, require

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers
    from driftbench.record.schema import Summary


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench run`` and its flags."""
    run = sub.add_parser(
        "run",
        help="replay a trace against methods and write run records",
        description="Replay a trace against one or more methods; writes runs/<trace>/<method>/seed<k>/.",
    )
    run.add_argument("--trace", required=True, help="a trace name (see 'driftbench list traces') or a trace file")
    run.add_argument(
        "--method",
        action="append",
        default=[],
        metavar="NAME",
        help="method name or flower:STRATEGY (FedAvg aggregated by a Flower strategy, extra 'flower'), "
        "repeatable or comma-separated (default: the trace's comparison)",
    )
    run.add_argument("--rounds", type=int, help="override the trace's number of rounds")
    run.add_argument("--seed", type=int, default=0, help="run seed: model init, sampling, batches (default 0)")
    run.add_argument("--out", type=Path, default=Path("runs"), help="root of the run records (default runs/)")
    run.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="compute device (default auto)")
    run.add_argument(
        "--target",
        type=float,
        help="time-to-accuracy target (default: FedAvg's plateau less two of its noise bands; see docs/record.md)",
    )
    add_sets(run, "KEY: trace parameter, train.KEY, source, source.KEY or method.KEY")
    add_scale(run)
    add_data_root(run)
    run.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    run.add_argument(
        "--jobs",
        type=int,
        help="runs at once, one process each with cores/jobs torch threads (default: the CPU count; 1: one after another here)",
    )
    run.add_argument(
        "--resume",
        action="store_true",
        help="continue incomplete runs from their checkpoint; keep complete ones (the configuration must match)",
    )
    run.add_argument(
        "--checkpoint-every", type=int, default=10, metavar="N", help="checkpoint every N rounds (default 10; 0 = only on Ctrl-C)"
    )
    run.add_argument("--keep-checkpoint", action="store_true", help="keep checkpoint/ in the run folder after the run ends")
    add_log(run)
    run.set_defaults(func=cmd_run, early=comparison)


def cmd_run(args: argparse.Namespace) -> int:
    """``driftbench run``: one trace and seed, run here (one method, or ``--jobs 1``) or on the local pool."""
    methods = run_methods(args)
    from driftbench.runner import (
        Execution,
        PoolOptions,
        Request,
        finished_summaries,
        plan_jobs,
        run_here,
        run_pool,
        unfinished_exit,
        validate_jobs,
    )
    from driftbench.scheduler import Checkpointing
    from driftbench.traces.catalog import is_trace_file

    require(args.seed >= 0, f"--seed must be >= 0, got {args.seed}")
    require(args.jobs is None or args.jobs >= 1, f"--jobs must be >= 1, got {args.jobs}")
    checkpointing = Checkpointing(args.checkpoint_every, args.resume, args.keep_checkpoint, resume_command(args.argv))
    trace_sets, method_sets = split_method_sets(parse_sets(args.set))
    if args.rounds is not None:
        require(args.rounds >= 1, f"--rounds must be >= 1, got {args.rounds}")
        require(
            not is_trace_file(args.trace),
            f"--rounds: {args.trace} is a trace file, whose rounds are fixed; remake it with trace make --set rounds=N",
        )
        trace_sets["rounds"] = str(args.rounds)
    trace_sets["scale"] = args.scale
    trace_sets.update(data_root_sets(args))
    request = Request({args.trace: trace_sets}, methods, (args.seed,), method_sets)
    execution = Execution(
        args.device, args.out, args.target, checkpointing, "always" if args.resume else "never", quiet=args.quiet
    )
    jobs = plan_jobs(request, execution)
    validate_jobs(jobs)
    if args.log:
        tracking = tracking_of(args.log, args.out)
        jobs = [replace(j, execution=replace(j.execution, tracking=tracking)) for j in jobs]
    workers = min(args.jobs or os.cpu_count() or 1, len(jobs))
    unfinished = 0  # the exit status of a run that did not finish (a locked run, a failed write: 2)
    if workers == 1:
        summaries = run_here(jobs)
    else:
        pool = PoolOptions(jobs=workers, quiet=args.quiet)
        outcomes = run_pool(
            [replace(j, execution=replace(j.execution, threads=pool.threads, quiet=True)) for j in jobs], pool, "run"
        )
        summaries = finished_summaries(outcomes)  # a failed run was logged with its error
        unfinished = unfinished_exit(outcomes)
        if not summaries:
            return unfinished or 1
    print(format_table(summaries))
    return unfinished or (0 if len(summaries) == len(jobs) and all(s.status == "ok" for s in summaries) else 1)


def run_methods(args: argparse.Namespace) -> tuple[str, ...]:
    """The methods ``--method`` names (repeatable or comma-separated), each once."""
    return tuple(dict.fromkeys(m for item in args.method for m in item.split(",") if m))


def comparison(args: argparse.Namespace) -> bool:
    """Whether ``driftbench run`` runs on a pool: a comparison (not one method) and ``--jobs`` not 1."""
    return len(run_methods(args)) != 1 and args.jobs != 1


def resume_command(argv: list[str]) -> str:
    """The shell command that resumes the run started by ``argv``."""
    return shlex.join(["driftbench", *argv, *([] if "--resume" in argv else ["--resume"])])


def format_table(summaries: list[Summary]) -> str:
    """The comparison table printed after a run."""
    from driftbench.evaluation.comparison import table_rows, target_line

    return "\n".join([text_table(table_rows(summaries)), *target_line(summaries)])
