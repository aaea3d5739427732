"""``driftbench leaderboard``: rank methods per trace from run records (a runs folder or an archive)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench leaderboard`` and its flags."""
    board = sub.add_parser("leaderboard", help="rank methods per trace from run records: Markdown, CSV, PNG plots, HTML page")
    board.add_argument(
        "runs", type=Path, metavar="RUNS_DIR", help="root of the run records (e.g. runs/), or an archive (driftbench archive)"
    )
    board.add_argument("--out", type=Path, required=True, help="folder for leaderboard.md, leaderboard.csv, *.png and index.html")
    board.add_argument(
        "--sort",
        choices=["final", "mean", "worst-interval", "post-drift"],
        default="final",
        help="rank methods by final accuracy (default), mean accuracy over the run, worst-interval or post-drift accuracy",
    )
    board.set_defaults(func=cmd_leaderboard)


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """``driftbench leaderboard``."""
    from driftbench.evaluation.leaderboard.write import write_leaderboard
    from driftbench.reproduce.report import REPORT_FILES, read_report, report_section

    claims = args.runs / REPORT_FILES[1]
    extra = [report_section(read_report(claims))] if claims.is_file() else []
    paths = write_leaderboard(args.runs, args.out, extra, args.sort)
    print(f"wrote {', '.join(p.name for p in paths)} to {args.out}")
    return 0
