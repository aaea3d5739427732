"""Command-line interface: ``main``, the parser built from one module per command, each holding its flags and handler.

The work happens in the modules the handlers call; ``common`` holds the argument helpers the commands share.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from collections.abc import Sequence
from typing import NoReturn

from driftbench.cli import (
    archive,
    bench,
    check,
    check_method,
    export,
    leaderboard,
    listing,
    matrix,
    place,
    render,
    reproduce,
    run,
    stale,
    sweep,
    trace,
    unlock,
    unpack,
)
from driftbench.cli.common import leaves, never
from driftbench.errors import DriftbenchError
from driftbench.forkserver import preload, start_early
from driftbench.registry import ENV
from driftbench.tracking.destinations import TRACKER_MODULES

# in --help's order
COMMANDS = (
    run, listing, trace, sweep, unlock, reproduce, leaderboard, matrix, export, archive, unpack, place, stale, render,
    check, bench,
    check_method,
)  # fmt: skip

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
  driftbench matrix results/matrix --out matrix/          the drift matrix: oracle's room per trace, ranks per kind of drift
  driftbench run --trace openimage-buckets --log tensorboard --log mlflow   each evaluation live in both trackers
  driftbench export mlflow runs/                          runs already on disk into MLflow (again: nothing new)
  driftbench archive runs/ --out results/demo             the complete runs as Parquet tables, read like runs/
  driftbench leaderboard results/demo --out leaderboard/  every reader takes an archive where it takes a runs folder
  driftbench unpack results/demo --out runs/              the archive's runs as folders again: a sweep into runs/ continues
  driftbench check runs/ci --reference evaluation/reference/ci.json
  driftbench run --trace openimage-buckets --scale paper --data-root /data/openimage
  driftbench run --trace openimage-buckets --device cuda --set precision=tf32   TF32 arithmetic (default fp32)
  driftbench run --trace label-swap --resume              continue an interrupted run
  driftbench bench engine --json
  driftbench bench clustering --json
  driftbench list methods --plugins examples/my-method/src/driftbench_my_method   a plug-in's methods beside the built-ins
  driftbench check-method my-method --plugins examples/my-method/src/driftbench_my_method
  driftbench place my-method --archive results/matrix --out placed/ --plugins examples/my-method/src/driftbench_my_method
                                                          your method on the matrix's traces and seeds, paired with its runs
  driftbench stale results/matrix                         a small slice of the archive's runs made again equals its records
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``driftbench`` command; returns the exit status."""
    args = parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for the command that resumes an interrupted run
    logging.basicConfig(level=logging.WARNING if getattr(args, "quiet", False) else logging.INFO, format="%(message)s")
    try:
        preload([TRACKER_MODULES[d.tracker] for d in getattr(args, "log", [])])  # a run's trackers, imported once too
        if args.early(args):
            start_early()  # the run pool's fork server imports driftbench while this process does
        from driftbench.discovery import add_plugins  # imports the catalogs, so after the parse and the fork server

        add_plugins(args.plugins)
        return args.func(args) or 0
    except DriftbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"error: interrupted{rerun_hint(args)}", file=sys.stderr)
        return 130


def rerun_hint(args: argparse.Namespace) -> str:
    """For a command that continues where it stopped when run again (``rerun``: sweep, reproduce), how to resume it."""
    if not getattr(args, "rerun", False):
        return ""
    command = shlex.join(["driftbench", *args.argv])
    return f"; finished runs are kept and the others continue from their last checkpoint; resume with: {command}"


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
    for command in COMMANDS:
        command.add_parser(sub)
    for leaf in leaves(top):
        leaf.add_argument(
            "--plugins",
            action="append",
            default=[],
            metavar="PATH",
            help=f"load plug-in methods and traces from a module file or folder (repeatable; also ${ENV})",
        )
        leaf.set_defaults(early=leaf.get_default("early") or never)
    return top
