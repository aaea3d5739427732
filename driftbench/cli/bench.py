"""``driftbench bench engine|clustering|runs``: performance benchmarks on this machine."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from driftbench.cli.common import add_sets, comma_list
from driftbench.config import parse_sets, require

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench bench`` and its flags."""
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
