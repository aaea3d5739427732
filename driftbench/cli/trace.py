"""``driftbench trace make|show|export``: make trace files and inspect them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from driftbench.cli.common import add_data_root, add_scale, add_sets, add_trace_source, data_root_sets
from driftbench.config import parse_sets
from driftbench.errors import ConfigError

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench trace`` and its flags."""
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
