"""``driftbench unpack``: write an archive's runs back as run folders, for a sweep or report that continues from them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers

DESCRIPTION = (
    "Write each run of ARCHIVE (made by driftbench archive) to its folder below --out: config.json, rounds.csv, "
    "events.csv, diagnostics.csv where archived, and summary.json. A sweep, run or reproduce into that folder then "
    "keeps every run whose configuration still matches and makes only the others, so long work continues on another "
    "machine from an archive in the repository. A run folder already there is left as it is."
)
EXAMPLE = (
    "example:\n  driftbench unpack results/demo --out runs/ && driftbench sweep --traces label-swap --seeds 0,1,2 --out runs/"
)


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench unpack`` and its flags."""
    from driftbench.cli.common import add_command

    line = "write an archive's runs back as run folders, so that a sweep or report continues from them"
    unpack = add_command(sub, "unpack", line, DESCRIPTION, EXAMPLE)
    unpack.add_argument("archive", type=Path, metavar="ARCHIVE", help="the archive's folder (e.g. results/NAME)")
    unpack.add_argument("--out", type=Path, required=True, metavar="RUNS_DIR", help="the runs folder to write the runs to")
    unpack.add_argument("--quiet", action="store_true", help="no progress bar")
    unpack.set_defaults(func=cmd_unpack)


def cmd_unpack(args: argparse.Namespace) -> int:
    """``driftbench unpack``: how many runs it wrote, and which folders it left as they were."""
    from driftbench.record.unpack import unpack

    done = unpack(args.archive, args.out, args.quiet)
    kept = f": {', '.join(done.kept)}" if done.kept else ""
    print(f"wrote {done.written} runs below {args.out}; left {len(done.kept)} run folders already there{kept}")
    return 0
