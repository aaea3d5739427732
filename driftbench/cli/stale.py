"""``driftbench stale``: whether a shipped archive's runs are still what this code makes, from a small slice made again."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers

BUDGET = 120.0  # default recorded wall seconds of the slice
DESCRIPTION = (
    "Make a small, fixed slice of ARCHIVE's runs again and compare each with its record: each method's cheapest run by "
    "recorded wall time, cheapest first, while their recorded wall seconds fit --budget (at least one run). A run made "
    "again must record the archived configuration and summary: every field equal, numbers to a relative 1e-9, except "
    "the wall times and the run's folder. Exit 0 saying how many runs it made again; exit 1 with one line per differing "
    "run (method, trace, seed, the first differing field with both values) and the commands that make ARCHIVE again."
)
EXAMPLE = "example:\n  driftbench stale results/matrix --budget 60"


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench stale`` and its flags."""
    from driftbench.cli.common import add_command

    line = "check that a shipped archive is not stale: a small slice of its runs made again equals their records"
    stale = add_command(sub, "stale", line, DESCRIPTION, EXAMPLE)
    stale.add_argument("archive", type=Path, metavar="ARCHIVE", help="the archive's folder (e.g. results/matrix)")
    stale.add_argument(
        "--budget", type=float, default=BUDGET, help=f"recorded wall seconds the slice may sum to (default {BUDGET:g})"
    )
    stale.add_argument("--runs", type=int, metavar="N", help="make at most N runs again (default: one per method in the budget)")
    stale.add_argument("--jobs", type=int, default=1, help="concurrent runs (default 1)")
    stale.add_argument("--out", type=Path, metavar="RUNS_DIR", help="keep the runs made again here (default: a temporary folder)")
    stale.add_argument("--quiet", action="store_true", help="no log line per run made again")
    stale.set_defaults(func=cmd_stale)


def cmd_stale(args: argparse.Namespace) -> int:
    """``driftbench stale``: how many runs it made again, or one line per run that differs from its record."""
    from driftbench.errors import ConfigError
    from driftbench.shipped.stale import QUALITY, TOLERANCE, check_stale, remake_command

    if args.out is not None and args.out.exists() and any(args.out.iterdir()):
        raise ConfigError(f"--out {args.out}: not empty; the runs must be made again, so give a new or empty folder")
    with tempfile.TemporaryDirectory(prefix="driftbench-stale-") as temporary:
        found = check_stale(args.archive, args.budget, args.runs, args.out or Path(temporary), args.jobs)
    made = f"{len(found.slice)} of its {found.runs} runs ({found.recorded_seconds:.0f} s of recorded wall time)"
    here = len(found.slice) - found.elsewhere
    compared = [f"{here} on this CPU: every number to a relative {TOLERANCE:g}, wall times and run folder aside"] * bool(here)
    if found.elsewhere:
        within = ", ".join(f"{metric} within {tolerance}" for metric, tolerance in QUALITY.items())
        compared.append(f"{found.elsewhere} recorded on another or an unnamed CPU: {within}, as driftbench check compares")
    if not found.differences:
        print(
            f"{args.archive}: not stale: made {made} again, one per method "
            f"({', '.join(run.summary.method for run in found.slice)}), each equal to its record ({'; '.join(compared)})"
        )
        return 0
    print(f"{args.archive}: stale: {len(found.differences)} of the {made} made again differ from their records")
    for d in found.differences:
        summary = d.run.summary
        print(
            f"{summary.method}: {summary.trace} seed {summary.seed}: {d.field} archived {d.archived!r}, now {d.now!r}; "
            f"re-make {args.archive}: {remake_command(args.archive, d.run)}"
        )
    return 1
