"""``driftbench matrix``: the drift matrix of a runs folder or an archive, written into a folder."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers

DESCRIPTION = (
    "The drift matrix of the runs in RUNS (a runs folder or an archive): per trace and method the final accuracy, the "
    "share of the oracle's room over FedAvg with its 95% interval paired by seed, recovery after drift, time to FedAvg's "
    "target and overhead, or why a cell has no run; the methods ranked per kind of drift and over every trace (Friedman's "
    "test and Nemenyi's critical difference). Writes matrix.md, matrix-heatmap.png with its data matrix.csv, "
    "matrix-ranking.csv and the critical-difference diagrams matrix-cd-GROUP.png into --out. With --suite, the cells of "
    "the suite's traces x methods x seeds that have no run are named too."
)
EXAMPLE = (
    "examples:\n"
    "  driftbench matrix results/matrix --out matrix           the shipped matrix's report\n"
    "  driftbench matrix runs --out matrix --suite evaluation/suites/matrix.toml   a sweep in progress: what is missing"
)


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench matrix`` and its flags."""
    from driftbench.cli.common import add_command

    line = "the drift matrix of run records: heatmap of the oracle's room, rankings per kind of drift, matrix.md"
    matrix = add_command(sub, "matrix", line, DESCRIPTION, EXAMPLE)
    matrix.add_argument("runs", type=Path, metavar="RUNS", help="a runs folder (e.g. runs/) or an archive (driftbench archive)")
    matrix.add_argument("--out", type=Path, required=True, help="folder for matrix.md, its CSVs and PNGs")
    matrix.add_argument("--suite", type=Path, help="a suite TOML whose traces x methods x seeds the matrix expects")
    matrix.set_defaults(func=cmd_matrix)


def cmd_matrix(args: argparse.Namespace) -> int:
    """``driftbench matrix``."""
    from driftbench.evaluation.matrix.cells import Grid
    from driftbench.evaluation.matrix.report import matrix_report
    from driftbench.runner import load_suite

    suite = load_suite(args.suite) if args.suite else None
    grid = Grid(tuple(suite.traces), suite.methods, suite.seeds) if suite else None
    paths = matrix_report(args.runs, args.out, grid)
    print(f"wrote {', '.join(p.name for p in paths)} to {args.out}")
    return 0
