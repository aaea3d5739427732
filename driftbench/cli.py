"""Command-line interface: argument parsing only; the work happens in the modules it calls."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any, Sequence

from driftbench.config import parse_sets
from driftbench.errors import ConfigError, DriftbenchError

log = logging.getLogger("driftbench")

EPILOG = """examples:
  driftbench run --trace label-swap                       default comparison, seed 0
  driftbench run --trace label-swap --method oracle --seed 1 --set method.mu=0.01
  driftbench list traces
  driftbench trace make label-swap --set concepts=8 --out my.trace
  driftbench trace show my.trace
  driftbench run --trace my.trace --method fedavg
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``driftbench`` command; returns the exit status."""
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if getattr(args, "quiet", False) else logging.INFO, format="%(message)s")
    try:
        return args.func(args) or 0
    except DriftbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def parser() -> argparse.ArgumentParser:
    """The argument parser with its subcommands."""
    top = argparse.ArgumentParser(
        prog="driftbench",
        description="Benchmark clustered federated learning methods under data drift.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="replay a trace against methods and write run records",
                         description="Replay a trace against one or more methods; writes runs/<trace>/<method>/seed<k>/.")
    run.add_argument("--trace", required=True, help="a trace name (see 'driftbench list traces') or a trace file")
    run.add_argument("--method", action="append", default=[], metavar="NAME",
                     help="method name, repeatable or comma-separated (default: the trace's comparison)")
    run.add_argument("--rounds", type=int, help="override the trace's number of rounds")
    run.add_argument("--seed", type=int, default=0, help="run seed: model init, sampling, batches (default 0)")
    run.add_argument("--out", type=Path, default=Path("runs"), help="root of the run records (default runs/)")
    run.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="compute device (default auto)")
    run.add_argument("--target", type=float, help="time-to-accuracy target (default: FedAvg's final accuracy)")
    add_sets(run, "KEY: trace parameter, train.KEY, source, source.KEY or method.KEY")
    run.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    run.set_defaults(func=cmd_run)

    lst = sub.add_parser("list", help="list traces, methods or sources with a one-line description")
    lst.add_argument("what", choices=["traces", "methods", "sources"])
    lst.set_defaults(func=cmd_list)

    trace = sub.add_parser("trace", help="make or inspect trace files").add_subparsers(dest="action", required=True, metavar="ACTION")
    make = trace.add_parser("make", help="generate a named trace and save it as a replayable, hashed file")
    make.add_argument("name", help="trace name (see 'driftbench list traces')")
    make.add_argument("--out", type=Path, required=True, help="file to write (e.g. my.trace)")
    add_sets(make, "KEY: trace parameter, train.KEY, source or source.KEY")
    make.set_defaults(func=cmd_trace_make)
    show = trace.add_parser("show", help="print a trace's clients, rounds and drift events with magnitudes")
    show.add_argument("name", help="trace name or trace file")
    add_sets(show, "KEY: trace parameter, source or source.KEY")
    show.set_defaults(func=cmd_trace_show)
    return top


def add_sets(p: argparse.ArgumentParser, keys: str) -> None:
    """Add the repeatable ``--set key=value`` option."""
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=f"override a setting ({keys})")


def split_method_sets(sets: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Separate ``method.KEY`` overrides from the trace's."""
    method = {k.removeprefix("method."): v for k, v in sets.items() if k.startswith("method.")}
    return {k: v for k, v in sets.items() if not k.startswith("method.")}, method


def cmd_run(args: argparse.Namespace) -> int:
    """``driftbench run``."""
    from driftbench.comparison import run_comparison

    trace_sets, method_sets = split_method_sets(parse_sets(args.set))
    if args.rounds is not None:
        trace_sets["rounds"] = str(args.rounds)
    methods = [m for item in args.method for m in item.split(",") if m]
    summaries = run_comparison(args.trace, methods, trace_sets, method_sets, args.seed, args.device, args.out, args.target, args.quiet)
    print(format_table(summaries))
    return 0 if all(s["status"] == "ok" for s in summaries) else 1


def format_table(summaries: list[dict[str, Any]]) -> str:
    """The comparison table printed after a run."""
    from driftbench.comparison import table_rows

    rows = table_rows(summaries)
    headers = list(rows[0])
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) for h in headers]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths))]
    lines += ["  ".join(str(r[h]).ljust(w) for h, w in zip(headers, widths)) for r in rows]
    return "\n".join(lines)


def cmd_list(args: argparse.Namespace) -> int:
    """``driftbench list``."""
    for name, description in listing(args.what):
        print(f"{name:<18} {description}")
    return 0


def listing(what: str) -> list[tuple[str, str]]:
    """Names and one-line descriptions of the registered traces, methods or sources."""
    if what == "traces":
        from driftbench.traces.catalog import catalog, load_spec

        return [(name, load_spec(name).description) for name in catalog()]
    if what == "methods":
        from driftbench.methods.catalog import catalog, load_method

        return [(name, load_method(name).description) for name in catalog()]
    from driftbench.data import SOURCES

    return [(name, source.description) for name, source in sorted(SOURCES.items())]


def cmd_trace_make(args: argparse.Namespace) -> int:
    """``driftbench trace make``."""
    from driftbench.traces.catalog import apply_sets, generate, load_spec
    from driftbench.traces.io import save_trace

    sets = parse_sets(args.set)
    if any(k.startswith("method.") for k in sets):
        raise ConfigError("--set method.KEY: a trace holds no method settings; pass them to 'driftbench run'")
    spec = apply_sets(load_spec(args.name), sets)
    trace, _pool = generate(spec)
    digest = save_trace(trace, args.out, spec.defaults())
    print(f"wrote {args.out} ({spec.name}, {trace.num_clients} clients, {trace.rounds} rounds, "
          f"{len(trace.event_round)} drift events, sha256 {digest[:12]})")
    return 0


def cmd_trace_show(args: argparse.Namespace) -> int:
    """``driftbench trace show``."""
    from driftbench.traces.describe import describe_trace
    from driftbench.traces.catalog import resolve

    print(describe_trace(resolve(args.name, parse_sets(args.set)).trace))
    return 0


if __name__ == "__main__":
    sys.exit(main())
