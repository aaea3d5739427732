"""An archive's runs written back as run folders, so that a command continues from them (a resumed sweep keeps them)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path

from tqdm import tqdm

from driftbench.errors import ConfigError
from driftbench.record.archive import TABLE_OF, ArchivedRun, is_archive, open_archive
from driftbench.record.files import CONFIG, SUMMARY, write_json
from driftbench.record.schema import write_summary, write_table


@dataclass(frozen=True)
class Unpacked:
    """What an unpack did: the runs it wrote, and those it left because a run folder was already there."""

    written: int
    kept: tuple[str, ...]


def unpack(archive: Path, out: Path, quiet: bool = True) -> Unpacked:
    """Write each run of ``archive`` to its folder below ``out``: config.json, its tables, summary.json last.

    A run whose folder already has a config.json is left as it is. The summary names its new folder
    (``run_dir``); everything else is the archive's, so a sweep or report into ``out`` finds each run
    up to date where its configuration still matches.
    """
    if not is_archive(Path(archive)):
        raise ConfigError(f"{archive}: not an archive (no archive.json; make one with driftbench archive)")
    opened = open_archive(Path(archive))
    written, kept = 0, []
    for row in tqdm(opened.runs, desc="unpack", unit="run", disable=quiet or not sys.stderr.isatty()):
        folder = Path(out) / row.place
        if (folder / CONFIG).exists():
            kept.append(row.place)
            continue
        run = ArchivedRun(opened, row.place)
        write_json(folder / CONFIG, row.config)
        for name in TABLE_OF:
            if run.holds(name):
                write_table(folder / name, name, run.table(name))
        write_summary(folder / SUMMARY, replace(row.summary, run_dir=str(folder.resolve())))
        written += 1
    return Unpacked(written, tuple(kept))
