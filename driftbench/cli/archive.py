"""``driftbench archive``: pack a runs folder's complete runs into an archive that every reader takes like the folder."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers


DESCRIPTION = (
    "Write the complete runs below RUNS_DIR (at any depth: reproduce's setting folders too) into the folder --out: "
    "runs.parquet (each run's config and summary), evaluations.parquet (rounds.csv rows), events.parquet and "
    "archive.json. leaderboard, check, export, reproduce --recorded and driftbench.results take the archive wherever they "
    "take a runs folder. Incomplete runs are left out and named. The archive is written beside --out and renamed into "
    "place; an existing one is kept unless --force."
)
EXAMPLE = "example:\n  driftbench archive runs/ --out results/demo && driftbench leaderboard results/demo --out leaderboard/"


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench archive`` and its flags."""
    from driftbench.cli.common import add_command

    line = "pack a runs folder's complete runs into an archive (Parquet tables) that every reader takes like the folder"
    archive = add_command(sub, "archive", line, DESCRIPTION, EXAMPLE)
    archive.add_argument("runs", type=Path, metavar="RUNS_DIR", help="the runs folder to archive")
    archive.add_argument("--out", type=Path, required=True, metavar="ARCHIVE", help="the archive's folder (e.g. results/NAME)")
    archive.add_argument(
        "--diagnostics",
        action="store_true",
        help="also archive diagnostics.csv's rows (the quantities methods decided on; default: left out, to keep it small)",
    )
    archive.add_argument("--force", action="store_true", help="replace the archive at --out (any other folder is refused)")
    archive.add_argument("--quiet", action="store_true", help="no progress bar")
    archive.set_defaults(func=cmd_archive)


def cmd_archive(args: argparse.Namespace) -> int:
    """``driftbench archive``: what it wrote, file by file, and the incomplete runs it left out."""
    from driftbench.atomic import human_size
    from driftbench.cli.common import text_table
    from driftbench.record.archive import MANIFEST, table_file
    from driftbench.record.archive_write import write_archive

    written = write_archive(args.runs, args.out, args.diagnostics, args.force, args.quiet)
    files = [{"file": table_file(t), "rows": str(rows), "bytes": str(size)} for t, (rows, size) in written.tables.items()]
    files.append({"file": MANIFEST, "rows": "-", "bytes": str(written.manifest_bytes)})
    print(f"wrote {written.path}: {written.runs} runs, {written.size} bytes ({human_size(written.size)})")
    print(text_table(files))
    skipped = f": {', '.join(written.skipped)}" if written.skipped else ""
    print(f"skipped {len(written.skipped)} incomplete runs{skipped}")
    return 0
