"""``driftbench export``: log runs already on disk to TensorBoard or MLflow."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from driftbench.cli.common import LOG_HELP, log_destination

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench export`` and its arguments."""
    export = sub.add_parser(
        "export",
        help="log the runs under a runs folder (or in an archive) to TensorBoard or MLflow, as --log would have live",
        description="Log every complete run below RUNS_DIR (at any depth: reproduce's setting folders too), or in an "
        "archive, to one tracker, with the names, parameters and values a live --log gives. A run the tracker already "
        "holds is left alone, so exporting twice adds nothing.",
        epilog="examples:\n  driftbench export tensorboard runs/ && tensorboard --logdir tensorboard\n"
        "  driftbench export mlflow runs/ && mlflow ui --backend-store-uri sqlite:///mlflow.db\n"
        "  driftbench export mlflow=sqlite:///report.db runs/report",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    export.add_argument("destination", type=log_destination, metavar="TRACKER[=WHERE]", help=LOG_HELP)
    export.add_argument(
        "runs",
        type=Path,
        metavar="RUNS_DIR",
        help="a runs folder (each run's path below it names it), or an archive (each run's place in it names it)",
    )
    export.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    export.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    """``driftbench export``: exit status 1 when a run could not be exported."""
    from driftbench.tracking.export import export

    done = export(args.destination, args.runs, args.quiet)
    print(done.line(args.destination))
    return 1 if done.failed else 0
