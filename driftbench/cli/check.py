"""``driftbench check``: the quality gate, run records against committed reference results."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from driftbench.cli.common import text_table
from driftbench.evaluation.tolerance import ACCURACY_TOLERANCE, ARI_TOLERANCE

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench check`` and its flags."""
    check = sub.add_parser(
        "check",
        help="quality gate: compare run records with committed reference results",
        description="Exit 1 with a table of regressions when a reference run is missing, incomplete, "
        "diverged, or its final accuracy or ARI fell by more than the tolerance.",
    )
    check.add_argument("runs", type=Path, metavar="RUNS_DIR", help="root of the run records, or an archive (driftbench archive)")
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
