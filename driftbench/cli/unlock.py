"""``driftbench unlock``: clear the run locks of processes that are gone."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench unlock`` and its arguments."""
    unlock = sub.add_parser(
        "unlock",
        help="clear run locks left by a process that is gone (e.g. on another host)",
        description="Remove the run.lock of each run folder given, or of every run below a runs folder. A lock held "
        "by a process still running on this host is refused.",
    )
    unlock.add_argument("paths", nargs="+", type=Path, metavar="RUN_DIR", help="a run folder or a runs folder")
    unlock.set_defaults(func=cmd_unlock)


def cmd_unlock(args: argparse.Namespace) -> int:
    """``driftbench unlock``."""
    from driftbench.locks import unlock

    print("\n".join(unlock(args.paths)))
    return 0
