"""``driftbench place``: a method of your own run on a shipped archive's traces and seeds, and paired with its runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers

REPORT = "report"  # below --out: the combined archive's report
DESCRIPTION = (
    "Run METHOD, and only it, on every trace and seed of ARCHIVE (a shipped archive such as results/matrix), each trace "
    "built from its name and the overrides its runs recorded, into OUT/runs; then write the archive's runs with the new "
    "ones to OUT/archive, and its report to OUT/report. Finished runs in OUT/runs are kept, as a sweep keeps them. "
    "Nothing runs, and nothing is written, when a new run would not pair with the archived runs of its trace and seed "
    "(the trace built now has another hash: its data changed since; or a run made now would record other settings), "
    "when METHOD is unknown, or when ARCHIVE holds METHOD already."
)
EXAMPLE = (
    "example:\n  driftbench place my-method --archive results/matrix --out placed/ "
    "--plugins examples/my-method/src/driftbench_my_method"
)


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench place`` and its flags."""
    from driftbench.cli.common import add_command

    line = "run your method on a shipped archive's traces and seeds only, and pair its runs with the archived ones"
    place = add_command(sub, "place", line, DESCRIPTION, EXAMPLE)
    place.add_argument("method", metavar="METHOD", help="the method to place (a plug-in's: give --plugins too)")
    place.add_argument("--archive", type=Path, required=True, help="the shipped archive (e.g. results/matrix)")
    place.add_argument("--out", type=Path, required=True, help="folder for runs/ (the new runs), archive/ and report/")
    place.add_argument("--jobs", type=int, help="concurrent runs (default: CPU count)")
    place.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="compute device (default auto)")
    place.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    place.set_defaults(func=cmd_place, rerun=True)  # Ctrl-C: rerunning resumes (main)


def cmd_place(args: argparse.Namespace) -> int:
    """``driftbench place``: each new run's outcome, then what it wrote."""
    from driftbench.cli.common import text_table
    from driftbench.runner import PoolOptions, outcome_line, outcome_table
    from driftbench.shipped.place import ARCHIVE, place

    placed = place(args.archive, args.method, args.out, args.device, PoolOptions(jobs=args.jobs, quiet=args.quiet))
    print(text_table(outcome_table(placed.outcomes)))
    print(outcome_line(placed.outcomes))
    if placed.archive is None:
        print(f"{args.out / ARCHIVE}: not written, as a run did not finish; run the same command again to continue")
        return 1
    report = write_report(placed.archive.path, args.out / REPORT)
    print(
        f"paired {len(placed.outcomes)} runs of {args.method} with the runs of {args.archive}: wrote {placed.archive.path} "
        f"({placed.archive.runs} runs) and its report to {args.out / REPORT} ({len(report)} files)"
    )
    return 0 if all(outcome.status == "ok" for outcome in placed.outcomes) else 1


def write_report(archive: Path, out: Path) -> list[Path]:
    """The combined archive's report in ``out``: the drift matrix with the new method in it (matrix.md, the heatmap, the
    ranking), and the leaderboard below ``out/leaderboard``."""
    from driftbench.evaluation.leaderboard.write import write_leaderboard
    from driftbench.evaluation.matrix.report import matrix_report

    return [*matrix_report(archive, out), *write_leaderboard(archive, out / "leaderboard")]
