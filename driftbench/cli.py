"""Command-line interface: argument parsing only; the work happens in the modules it calls."""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from driftbench.config import parse_sets, require
from driftbench.discovery import ENV, add_plugins
from driftbench.errors import ConfigError, DriftbenchError
from driftbench.evaluation.tolerance import ACCURACY_TOLERANCE, ARI_TOLERANCE
from driftbench.forkserver import start_early

if TYPE_CHECKING:
    from driftbench.record.schema import Summary

log = logging.getLogger("driftbench")

EPILOG = """examples:
  driftbench run --trace openimage-buckets                the main job: default comparison, seed 0
  driftbench run --trace label-swap                       default comparison on label-permutation drift
  driftbench run --trace label-swap --method oracle --seed 1 --set method.mu=0.01
  driftbench list traces
  driftbench trace make label-swap --set concepts=8 --out my.trace
  driftbench trace show my.trace
  driftbench trace make changepoints --set file=A.cp --out a.trace   a FedDrift drift schedule as a trace
  driftbench trace export my.trace --out my.cp            its ground truth as a changepoint matrix
  driftbench run --trace my.trace --method fedavg
  driftbench run --trace openimage-buckets --method flower:FedYogi   one global model, Flower's FedYogi aggregating
  driftbench run --trace openimage-buckets --method fielding --set method.aggregator=flower:QFedAvg
  driftbench run --trace label-swap --method ifca --set method.aggregator=flower:FedYogi --set method.aggregator_options=eta=0.01
                                                          a Flower strategy (options KEY=VALUE,...) inside every cluster
  driftbench sweep --traces label-swap,static --methods fedavg,oracle --seeds 0,1,2
  driftbench sweep --traces label-shift,rotation --seeds 0,1,2   each trace's own comparison
  driftbench reproduce fielding fedcm --seeds 0,1,2           check the papers' claims (claims/*.toml)
  driftbench leaderboard runs/ --out leaderboard/
  driftbench check runs/ci --reference evaluation/reference/ci.json
  driftbench run --trace openimage-buckets --scale paper --data-root /data/openimage
  driftbench run --trace openimage-buckets --device cuda --set precision=tf32   TF32 arithmetic (default fp32)
  driftbench run --trace label-swap --resume              continue an interrupted run
  driftbench bench engine --json
  driftbench bench clustering --json
  driftbench list methods --plugins examples/my-method/src/driftbench_my_method   a plug-in's methods beside the built-ins
  driftbench check-method my-method --plugins examples/my-method/src/driftbench_my_method
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``driftbench`` command; returns the exit status."""
    args = parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for the command that resumes an interrupted run
    logging.basicConfig(level=logging.WARNING if getattr(args, "quiet", False) else logging.INFO, format="%(message)s")
    try:
        if args.plugins:
            add_plugins(args.plugins)
        return args.func(args) or 0
    except DriftbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, naming the command and where its help is, with exit status 2."""

    def error(self, message: str) -> NoReturn:
        """Print ``error: PROG: MESSAGE`` and exit 2 (argparse would print the usage lines first)."""
        self.exit(2, f"error: {self.prog}: {message} (see '{self.prog} --help')\n")


def parser() -> argparse.ArgumentParser:
    """The argument parser with its subcommands (each subcommand's parser is a ``Parser`` too)."""
    top = Parser(
        prog="driftbench",
        description="Benchmark clustered federated learning methods under data drift.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
    run.set_defaults(func=cmd_run)

    lst = sub.add_parser("list", help="list traces, methods or sources with a one-line description")
    lst.add_argument("kind", metavar="KIND", choices=["traces", "methods", "sources"], help="traces, methods or sources")
    lst.set_defaults(func=cmd_list)

    trace = sub.add_parser("trace", help="make or inspect trace files").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    make = trace.add_parser("make", help="generate a named trace and save it as a replayable, hashed file")
    make.add_argument("name", help="trace name (see 'driftbench list traces')")
    make.add_argument("--out", type=Path, required=True, help="file to write (e.g. my.trace)")
    add_sets(make, "KEY: trace parameter, train.KEY, source or source.KEY")
    add_scale(make)
    add_data_root(make)
    make.set_defaults(func=cmd_trace_make)
    show = trace.add_parser("show", help="print a trace's clients, rounds and drift events with magnitudes")
    add_trace_source(show)
    show.set_defaults(func=cmd_trace_show)
    export = trace.add_parser(
        "export",
        help="write a trace's ground-truth groups as a changepoint matrix (FedDrift's format)",
        description="Write row t = the ground-truth group of every client at round t x N (-1: no group), "
        "space-separated, one line per row: the format 'driftbench trace make changepoints --set file=PATH' reads back.",
        epilog="examples:\n"
        "  driftbench trace export label-swap --out label-swap.cp --every 25    one row per drift period\n"
        "  driftbench trace export my.trace --out my.cp\n"
        "  driftbench trace make changepoints --set file=my.cp --set rounds_per_step=1 --out again.trace   and back",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_trace_source(export)
    export.add_argument("--out", type=Path, required=True, help="matrix file to write (e.g. my.cp)")
    export.add_argument("--every", type=int, default=1, metavar="N", help="one row every N rounds (default 1)")
    export.set_defaults(func=cmd_trace_export)

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
    sweep.set_defaults(func=cmd_sweep)

    unlock = sub.add_parser(
        "unlock",
        help="clear run locks left by a process that is gone (e.g. on another host)",
        description="Remove the run.lock of each run folder given, or of every run below a runs folder. A lock held "
        "by a process still running on this host is refused.",
    )
    unlock.add_argument("paths", nargs="+", type=Path, metavar="RUN_DIR", help="a run folder or a runs folder")
    unlock.set_defaults(func=cmd_unlock)

    repro = sub.add_parser(
        "reproduce",
        help="check each paper's claims (claims/*.toml) on the benchmark: reproduced, direction only, not reproduced, "
        "inconclusive, invalid premise or untestable",
        description="Run what the claims need (through the sweep: finished runs are skipped), then write reproduce.md and "
        "reproduce.csv, one row per claim: the paper's figure, driftbench's (mean +/- std over seeds) and a verdict. "
        "Exit status 0 whatever the verdicts.",
    )
    repro.add_argument("papers", nargs="*", metavar="PAPER", help="papers to check, by claim file name (default: all)")
    repro.add_argument("--seeds", type=seed_list, default=[0, 1, 2], metavar="0,1,2", help="run seeds (default 0,1,2)")
    add_scale(repro)
    repro.add_argument(
        "--backend", default="local", choices=["local", "ray"], help="local process pool or Ray tasks (default local)"
    )
    repro.add_argument(
        "--jobs", type=int, help="concurrent runs (local) or CPUs of a Ray cluster started here (default: CPU count)"
    )
    repro.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="compute device (default auto)")
    repro.add_argument("--out", type=Path, default=Path("runs"), help="root of the run records (default runs/)")
    repro.add_argument("--claims", type=Path, metavar="DIR", help="folder of claim files (default: the repository's claims/)")
    repro.add_argument("--report", type=Path, metavar="DIR", help="folder for reproduce.md and reproduce.csv (default: --out)")
    repro.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    repro.set_defaults(func=cmd_reproduce)

    board = sub.add_parser("leaderboard", help="rank methods per trace from run records: Markdown, CSV, PNG plots, HTML page")
    board.add_argument("runs", type=Path, metavar="RUNS_DIR", help="root of the run records (e.g. runs/)")
    board.add_argument("--out", type=Path, required=True, help="folder for leaderboard.md, leaderboard.csv, *.png and index.html")
    board.add_argument(
        "--sort",
        choices=["final", "mean", "worst-interval", "post-drift"],
        default="final",
        help="rank methods by final accuracy (default), mean accuracy over the run, worst-interval or post-drift accuracy",
    )
    board.set_defaults(func=cmd_leaderboard)

    check = sub.add_parser(
        "check",
        help="quality gate: compare run records with committed reference results",
        description="Exit 1 with a table of regressions when a reference run is missing, incomplete, "
        "diverged, or its final accuracy or ARI fell by more than the tolerance.",
    )
    check.add_argument("runs", type=Path, metavar="RUNS_DIR", help="root of the run records")
    check.add_argument("--reference", type=Path, required=True, help="reference file (e.g. evaluation/reference/ci.json)")
    check.add_argument(
        "--tolerance",
        type=float,
        default=ACCURACY_TOLERANCE,
        help=f"allowed absolute drop in final accuracy (default {ACCURACY_TOLERANCE})",
    )
    check.add_argument(
        "--ari-tolerance", type=float, default=ARI_TOLERANCE, help=f"allowed absolute drop in mean ARI (default {ARI_TOLERANCE})"
    )
    check.add_argument(
        "--update-reference", action="store_true", help="write the reference file from these runs instead of checking"
    )
    check.set_defaults(func=cmd_check)

    bench = sub.add_parser("bench", help="performance benchmarks on this machine").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    engine = bench.add_parser("engine", help="batched engine vs a plain sequential per-client loop, same workload, same process")
    engine.add_argument("--model", default="lenet5", help="model name (default lenet5)")
    engine.add_argument("--clients", type=int, default=10, help="clients per round (default 10)")
    engine.add_argument("--steps", type=int, default=10, help="local steps per client (default 10)")
    engine.add_argument("--batch", type=int, default=50, help="batch size (default 50)")
    engine.add_argument("--input", type=shape_arg, metavar="CxHxW", help="input shape (default 1x8x8 for mlp, else 3x32x32)")
    engine.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="compute device (default auto)")
    engine.add_argument("--repeats", type=int, default=5, help="interleaved timed rounds of each trainer (default 5)")
    engine.add_argument(
        "--precision",
        default="fp32",
        help="fp32 (TF32 off), tf32 (TF32 tensor cores, CUDA) or bf16 (bfloat16 autocast of forward passes); default fp32",
    )
    engine.add_argument("--compile", action="store_true", help="torch.compile the engine's forward pass (eager fallback)")
    engine.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="also profile one batched round: DIR/profile.txt (operators by own time) and DIR/trace.json (timeline)",
    )
    engine.add_argument("--json", action="store_true", help="print one JSON object")
    engine.set_defaults(func=cmd_bench_engine)
    clustering = bench.add_parser(
        "clustering", help="FIELDING's clustering costs (re-clustering, per-client moves, big k-means) vs the paper"
    )
    clustering.add_argument("--clients", type=int, default=5078, help="clients with label distributions (default 5078)")
    clustering.add_argument("--classes", type=int, default=100, help="labels per distribution (default 100)")
    clustering.add_argument("--kmeans-n", type=int, default=100_000, help="k-means points (default 100000)")
    clustering.add_argument("--kmeans-d", type=int, default=10_000, help="k-means dimensions (default 10000)")
    clustering.add_argument("--kmeans-k", type=int, default=10, help="k-means clusters (default 10)")
    clustering.add_argument("--json", action="store_true", help="print one JSON object")
    clustering.set_defaults(func=cmd_bench_clustering)
    runs = bench.add_parser(
        "runs", help="several methods' runs of one trace in lockstep, timed per phase (plan, train, aggregate, evaluate)"
    )
    runs.add_argument("--trace", default="openimage-buckets", help="trace name or file (default openimage-buckets)")
    runs.add_argument(
        "--methods", type=comma_list, default=["fedavg", "fielding", "auxo", "flexcfl"], help="comma-separated methods"
    )
    runs.add_argument("--reference", default="fielding", help="method the others' wall time is divided by (default fielding)")
    runs.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    runs.add_argument("--threads", type=int, help="torch and native threads (default: torch's)")
    add_sets(runs, "KEY: trace parameter, train.KEY, source or source.KEY")
    runs.add_argument("--out", type=Path, help="folder for the runs' records (default: a temporary folder)")
    runs.add_argument("--json", action="store_true", help="print one JSON object")
    runs.set_defaults(func=cmd_bench_runs)

    contract = sub.add_parser(
        "check-method",
        help="check that a method (a plug-in's, say) keeps the method contract the built-ins are tested with",
        description="Run the method twice on a tiny label-swap trace: it must end ok, give identical metrics, and "
        "record the model traffic its plans declare. Exit 1 with the broken clauses otherwise.",
    )
    contract.add_argument("name", metavar="NAME", help="method name (see 'driftbench list methods')")
    add_sets(contract, "method.KEY or KEY: a method parameter")
    contract.add_argument("--out", type=Path, help="keep the two runs' records here (default: a temporary folder)")
    contract.set_defaults(func=cmd_check_method)
    for leaf in leaves(top):
        leaf.add_argument(
            "--plugins",
            action="append",
            default=[],
            metavar="PATH",
            help=f"load plug-in methods and traces from a module file or folder (repeatable; also ${ENV})",
        )
    return top


def leaves(p: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers of the commands that run (``p`` itself when it has no subcommands)."""
    subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return [leaf for a in subs for child in dict.fromkeys(a.choices.values()) for leaf in leaves(child)] or [p]


def add_sets(p: argparse.ArgumentParser, keys: str) -> None:
    """Add the repeatable ``--set key=value`` option."""
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=f"override a setting ({keys})")


def add_scale(p: argparse.ArgumentParser) -> None:
    """Add ``--scale embedded|paper``: a named trace's offline default or its paper setup (``[scale.paper]``)."""
    p.add_argument(
        "--scale",
        default="embedded",
        choices=["embedded", "paper"],
        help="embedded: offline default (the default); paper: the paper's setup from the trace's [scale.paper]",
    )


def add_trace_source(p: argparse.ArgumentParser) -> None:
    """Add the trace to read (a name or a file) with its ``--set``, ``--scale`` and ``--data-root``."""
    p.add_argument("name", help="trace name or trace file")
    add_sets(p, "KEY: trace parameter, source or source.KEY")
    add_scale(p)
    add_data_root(p)


def add_data_root(p: argparse.ArgumentParser) -> None:
    """Add ``--data-root DIR``: the folder of a real source's files (sets ``source.root``)."""
    p.add_argument(
        "--data-root",
        type=Path,
        metavar="DIR",
        help="folder of a real data source's files, downloaded there when missing (default ~/.cache/driftbench/<source>)",
    )


def data_root_sets(args: argparse.Namespace) -> dict[str, str]:
    """``--data-root`` as a ``source.root`` override (sources that read no files ignore it)."""
    return {"source.root": str(args.data_root.expanduser().resolve())} if args.data_root else {}


def split_method_sets(sets: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Separate ``method.KEY`` overrides from the trace's."""
    method = {k.removeprefix("method."): v for k, v in sets.items() if k.startswith("method.")}
    return {k: v for k, v in sets.items() if not k.startswith("method.")}, method


def cmd_run(args: argparse.Namespace) -> int:
    """``driftbench run``: a request of one trace and one seed, executed in this process."""
    methods = tuple(dict.fromkeys(m for item in args.method for m in item.split(",") if m))
    if len(methods) != 1 and args.jobs != 1:  # a comparison: the pool's fork server imports while this process does
        start_early()
    from driftbench.runner import Execution, PoolOptions, Request, plan_jobs, run_here, run_pool, unfinished_exit, validate_jobs
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
    workers = min(args.jobs or os.cpu_count() or 1, len(jobs))
    unfinished = 0  # the exit status of a run that did not finish (a locked run, a failed write: 2)
    if workers == 1:
        summaries = run_here(jobs)
    else:
        pool = PoolOptions(jobs=workers, quiet=args.quiet)
        outcomes = run_pool(
            [replace(j, execution=replace(j.execution, threads=pool.threads, quiet=True)) for j in jobs], pool, "run"
        )
        summaries = [o.summary for o in outcomes if o.summary is not None]  # a failed run was logged with its error
        unfinished = unfinished_exit(outcomes)
        if not summaries:
            return unfinished or 1
    print(format_table(summaries))
    return unfinished or (0 if len(summaries) == len(jobs) and all(s.status == "ok" for s in summaries) else 1)


def resume_command(argv: list[str]) -> str:
    """The shell command that resumes the run started by ``argv``."""
    return shlex.join(["driftbench", *argv, *([] if "--resume" in argv else ["--resume"])])


def format_table(summaries: list[Summary]) -> str:
    """The comparison table printed after a run."""
    from driftbench.evaluation.comparison import table_rows, target_line

    return "\n".join([text_table(table_rows(summaries)), *target_line(summaries)])


def text_table(rows: list[dict[str, str]]) -> str:
    """Rows of text cells as aligned columns under their keys."""
    headers = list(rows[0])
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) for h in headers]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths))]
    lines += ["  ".join(str(r[h]).ljust(w) for h, w in zip(headers, widths)) for r in rows]
    return "\n".join(lines)


def cmd_list(args: argparse.Namespace) -> int:
    """``driftbench list``."""
    for name, description in listing(args.kind):
        print(f"{name:<18} {description}")
    return 0


def listing(kind: str) -> list[tuple[str, str]]:
    """Names and one-line descriptions of the registered traces, methods or sources."""
    if kind == "traces":
        from driftbench.traces.catalog import catalog, load_spec

        return [(name, load_spec(name).description) for name in catalog()]
    if kind == "methods":
        from driftbench.methods.catalog import catalog, load_method

        return [(name, load_method(name).description) for name in catalog()]
    from driftbench.data import SOURCES

    return [(name, source.description) for name, source in sorted(SOURCES.items())]


def cmd_trace_make(args: argparse.Namespace) -> int:
    """``driftbench trace make``."""
    from driftbench.traces.catalog import SCALE_SET, build_named
    from driftbench.traces.io import save_trace

    sets = {**parse_sets(args.set), **data_root_sets(args)}
    if any(k.startswith("method.") for k in sets):
        raise ConfigError("--set method.KEY: a trace holds no method settings; pass them to 'driftbench run'")
    spec, trace, _pool = build_named(args.name, {**sets, SCALE_SET: args.scale})
    digest = save_trace(trace, args.out, spec.defaults())
    print(
        f"wrote {args.out} ({spec.name}, {trace.num_clients} clients, {trace.rounds} rounds, "
        f"{len(trace.event_round)} drift events, sha256 {digest[:12]})"
    )
    return 0


def cmd_trace_show(args: argparse.Namespace) -> int:
    """``driftbench trace show``."""
    from driftbench.traces.catalog import resolve
    from driftbench.traces.describe import describe_trace

    resolved = resolve(args.name, {**parse_sets(args.set), "scale": args.scale, **data_root_sets(args)})
    print(describe_trace(resolved.trace, resolved.pool.y))
    return 0


def cmd_trace_export(args: argparse.Namespace) -> int:
    """``driftbench trace export``."""
    from driftbench.traces.changepoints import ground_truth, named_or_file, write_changepoints

    trace = named_or_file(args.name, {**parse_sets(args.set), "scale": args.scale, **data_root_sets(args)})
    matrix = ground_truth(trace, args.every)
    write_changepoints(matrix, args.out)
    print(f"wrote {args.out} ({matrix.shape[0]} rows, one every {args.every} rounds; {matrix.shape[1]} clients)")
    return 0


def comma_list(value: str) -> list[str]:
    """``a,b`` -> ``["a", "b"]``."""
    return [v.strip() for v in value.split(",") if v.strip()]


def seed_list(value: str) -> list[int]:
    """``0,1,2`` -> ``[0, 1, 2]``."""
    try:
        seeds = [int(v) for v in comma_list(value)]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0:
        raise argparse.ArgumentTypeError(f"{value!r}: expected comma-separated integers >= 0")
    return seeds


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
    outcomes = run_pool(jobs, pool)
    print(text_table(outcome_table(outcomes)))
    print(outcome_line(outcomes))
    return 0 if all(o.status == "ok" for o in outcomes) else 1


def cmd_unlock(args: argparse.Namespace) -> int:
    """``driftbench unlock``."""
    from driftbench.locks import unlock

    print("\n".join(unlock(args.paths)))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    """``driftbench reproduce``."""
    from driftbench.reproduce.claims import load_claims
    from driftbench.reproduce.report import rows, write_report
    from driftbench.reproduce.run import reproduce
    from driftbench.runner import Execution, PoolOptions

    claims = load_claims(args.claims, args.papers)
    pool = PoolOptions(args.backend, args.jobs, quiet=args.quiet)
    report = reproduce(claims, tuple(args.seeds), args.scale, pool, Execution(args.device, args.out, threads=pool.threads))
    paths = write_report(report, args.report or args.out)
    columns = ("paper", "id", "kind", "paper_value", "ours", "ratio", "verdict", "reason")
    print(text_table([{k: row[k] for k in columns} for row in rows(report)]))
    print(report.headline())
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """``driftbench leaderboard``."""
    from driftbench.evaluation.leaderboard import write_leaderboard
    from driftbench.reproduce.report import REPORT_FILES, read_report, report_section

    claims = args.runs / REPORT_FILES[1]
    extra = [report_section(read_report(claims))] if claims.is_file() else []
    paths = write_leaderboard(args.runs, args.out, extra, args.sort)
    print(f"wrote {', '.join(p.name for p in paths)} to {args.out}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """``driftbench check``."""
    from driftbench.evaluation.check import read_reference, regression_rows, regressions, write_reference
    from driftbench.record.runs import find_runs

    if args.update_reference:
        print(f"wrote {args.reference} ({write_reference(args.runs, args.reference)} runs)")
        return 0
    reference = read_reference(args.reference)
    problems = regressions(find_runs(args.runs), reference, args.tolerance, args.ari_tolerance)
    if problems:
        print(f"check failed: {len(problems)} problem(s) against {args.reference}")
        print(text_table(regression_rows(problems)))
        return 1
    print(f"check passed: {len(reference)} runs within tolerance (final accuracy {args.tolerance}, ARI {args.ari_tolerance})")
    return 0


def cmd_check_method(args: argparse.Namespace) -> int:
    """``driftbench check-method``."""
    import tempfile

    from driftbench.contracts import contract_failures
    from driftbench.methods.catalog import load_method

    sets = {k.removeprefix("method."): v for k, v in parse_sets(args.set).items()}
    method = load_method(args.name, sets or None)
    with tempfile.TemporaryDirectory() as scratch:
        failures = contract_failures(method, args.out or Path(scratch))
    if failures:
        print(f"check-method {args.name}: breaks the method contract:")
        print("\n".join(f"  - {failure}" for failure in failures))
        return 1
    kept = "2 tiny label-swap runs: ok, identical, traffic as declared, state checkpoints"
    print(f"check-method {args.name}: keeps the method contract ({kept})")
    return 0


def shape_arg(text: str) -> tuple[int, int, int]:
    """Parse ``CxHxW`` (e.g. 3x32x32)."""
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r}: expected CxHxW, e.g. 3x32x32")
    return int(parts[0]), int(parts[1]), int(parts[2])


def cmd_bench_engine(args: argparse.Namespace) -> int:
    """``driftbench bench engine``."""
    import json

    from driftbench.bench.engine import EngineBench, format_engine_bench, run_engine_bench

    bench = EngineBench(
        args.model, args.clients, args.steps, args.batch, args.device, args.repeats, args.input, args.precision, args.compile
    )
    result = run_engine_bench(bench, args.profile)
    print(json.dumps(result) if args.json else format_engine_bench(result))
    return 0


def cmd_bench_clustering(args: argparse.Namespace) -> int:
    """``driftbench bench clustering``."""
    import json

    from driftbench.bench.clustering import ClusteringBenchSizes, format_clustering_bench, run_clustering_bench

    sizes = ClusteringBenchSizes(args.clients, args.classes, args.kmeans_n, args.kmeans_d, args.kmeans_k)
    report = run_clustering_bench(sizes)
    print(json.dumps(report) if args.json else format_clustering_bench(report))
    return 0


def cmd_bench_runs(args: argparse.Namespace) -> int:
    """``driftbench bench runs``."""
    import json
    import tempfile

    from driftbench.bench.runs import RunsBench, format_runs_bench, run_runs_bench

    require(args.threads is None or args.threads >= 1, f"--threads must be >= 1, got {args.threads}")
    bench = RunsBench(args.trace, tuple(args.methods), parse_sets(args.set), args.seed, args.reference, args.threads)
    with tempfile.TemporaryDirectory() as scratch:
        result = run_runs_bench(bench, args.out or Path(scratch))
    print(json.dumps(result) if args.json else format_runs_bench(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
