"""Writing an archive (``driftbench.record.archive``) of a runs folder's complete runs: gathered, written, renamed.

The archive is written whole into a temporary folder beside its place, then renamed there, so a
reader sees the previous archive or the new one, never a part. An existing folder is kept unless
asked to replace it, and then only when it is an archive.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

import driftbench
from driftbench.atomic import write_error
from driftbench.errors import ConfigError
from driftbench.record.archive import (
    FORMAT,
    MANIFEST,
    PLACE,
    RUNS,
    TABLE_OF,
    VERSION,
    arrow_schema,
    is_archive,
    open_archive,
    read_parquet,
    table_file,
)
from driftbench.record.files import DIAGNOSTICS, EVENTS, ROUNDS, SUMMARY, config_digest, read_json, write_json
from driftbench.record.runs import load_record, record_folders
from driftbench.record.schema import SCHEMA_VERSION

# zstd at a high level: an archive is written once and read often; where zstd is missing, gzip
CODEC, LEVEL = ("zstd", 19) if pa.Codec.is_available("zstd") else ("gzip", 9)


@dataclass(frozen=True)
class Written:
    """An archive written: its folder, each table's rows and bytes, the manifest's bytes, and the runs left out."""

    path: Path
    tables: dict[str, tuple[int, int]]  # table -> (rows, bytes)
    manifest_bytes: int
    skipped: tuple[str, ...]  # the places of the incomplete runs, not archived

    @property
    def runs(self) -> int:
        """How many runs the archive holds."""
        return self.tables[RUNS][0]

    @property
    def size(self) -> int:
        """The archive's bytes on disk: its tables and manifest."""
        return sum(size for _, size in self.tables.values()) + self.manifest_bytes


def write_archive(runs: Path, out: Path, diagnostics: bool = False, force: bool = False, quiet: bool = True) -> Written:
    """Archive the complete runs below the runs folder ``runs`` (at any depth) into the folder ``out``.

    ``diagnostics`` adds diagnostics.csv's rows; ``force`` replaces an archive at ``out`` (any other
    folder there is refused). Incomplete runs are left out and named in the result.
    """
    runs, out = Path(runs), Path(out)
    if is_archive(runs):
        raise ConfigError(f"{runs}: an archive already; archive a runs folder")
    check_out(out, force)
    frames, skipped = gather(runs, record_folders(runs), table_names(diagnostics), quiet)
    if frames[RUNS].empty:
        raise ConfigError(f"{runs}: no complete run to archive ({len(skipped)} incomplete)")
    return write_frames(frames, out, tuple(skipped))


def write_combined(archive: Path, runs: Path, folders: list[Path], out: Path) -> Written:
    """Write into ``out`` (replacing an archive there) the runs of ``archive`` and the complete runs in ``folders``
    (below the runs folder ``runs``), each new run at its place below ``runs``; a place the archive holds is refused."""
    shipped = open_archive(archive)
    check_out(out, force=True)
    frames, skipped = gather(runs, folders, table_names(shipped.holds(DIAGNOSTICS)), quiet=True)
    taken = sorted(set(frames[RUNS].get(PLACE, [])) & set(shipped.by_place))
    if taken:
        raise ConfigError(f"{runs / taken[0]}: {archive} holds a run at this place already; give the new runs another name")
    combined = {
        table: stacked([read_parquet(archive / table_file(table), shipped.rows[table]), rows]) for table, rows in frames.items()
    }
    return write_frames(combined, out, tuple(skipped))


def stacked(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The rows of ``frames`` one after another (those without rows left out: they have no columns)."""
    found = [frame for frame in frames if len(frame)]
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame()


def table_names(diagnostics: bool) -> list[str]:
    """The run table files an archive holds: rounds.csv and events.csv, and diagnostics.csv when asked."""
    return [ROUNDS, EVENTS, *([DIAGNOSTICS] if diagnostics else [])]


def check_out(out: Path, force: bool) -> None:
    """Refuse an ``out`` that exists, unless ``force`` and it is an archive (which the write then replaces)."""
    if out.exists() and not (force and is_archive(out)):
        why = "not an archive: --force replaces an archive only" if force else "exists; --force replaces the archive there"
        raise ConfigError(f"{out}: {why}")


def write_frames(frames: dict[str, pd.DataFrame], out: Path, skipped: tuple[str, ...]) -> Written:
    """Write the archive tables ``frames`` and their manifest into a folder beside ``out``, then rename it to ``out``."""
    temporary = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        temporary.mkdir(parents=True)
        tables = {table: (len(rows), write_table(temporary / table_file(table), rows, table)) for table, rows in frames.items()}
        write_json(temporary / MANIFEST, manifest(tables))
        replace_folder(temporary, out)
    except OSError as exc:
        raise write_error(exc, out, "writing its tables into a temporary folder beside it") from None
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return Written(out, tables, (out / MANIFEST).stat().st_size, skipped)


def gather(runs: Path, folders: list[Path], names: list[str], quiet: bool) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """The archive's tables from the run ``folders`` below ``runs`` (the run table files ``names``), and the incomplete
    runs."""
    rows: list[dict[str, Any]] = []
    parts: dict[str, list[pd.DataFrame]] = {TABLE_OF[name]: [] for name in names}
    skipped = []
    for folder in tqdm(folders, desc="archive", unit="run", disable=quiet or not sys.stderr.isatty()):
        record, place = load_record(folder), folder.relative_to(runs).as_posix()
        if record.summary is None:
            skipped.append(place)
            continue
        config = record.config()
        rows.append(
            {
                PLACE: place,
                "trace": record.trace,
                "method": record.method,
                "seed": record.seed,
                "trace_hash": record.trace_hash,
                "config_hash": config_digest(config),
                "commit": config.get("git_revision"),
                "status": record.status,
                "config": compact(config),
                "summary": compact(read_json(folder / SUMMARY)),
            }
        )
        for name in names:
            table = record.source.table(name)
            table.insert(0, PLACE, place)
            if len(table):  # a run without rows adds none; the archive gives it the table its file gives
                parts[TABLE_OF[name]].append(table)
    frames = {table: stacked(found) for table, found in parts.items()}
    return {RUNS: pd.DataFrame(rows), **frames}, skipped


def compact(data: dict[str, Any]) -> str:
    """JSON text without spaces: the record's file content, as small as it goes."""
    return json.dumps(data, separators=(",", ":"))


def write_table(path: Path, frame: pd.DataFrame, table: str) -> int:
    """Write ``frame`` as the Parquet file of archive ``table`` (its schema, no pandas metadata); return its bytes."""
    schema = arrow_schema(table)
    data = pa.Table.from_pandas(frame, schema=schema, preserve_index=False) if len(frame) else schema.empty_table()
    pq.write_table(data.replace_schema_metadata(None), path, compression=CODEC, compression_level=LEVEL, use_dictionary=False)
    return path.stat().st_size


def manifest(tables: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """archive.json: format name and version, the versions that wrote it, runs, and each table's rows."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "driftbench_version": driftbench.__version__,
        "record_schema_version": SCHEMA_VERSION,
        "runs": tables[RUNS][0],
        "tables": {table: rows for table, (rows, _) in tables.items()},
    }


def replace_folder(new: Path, out: Path) -> None:
    """Rename the folder ``new`` to ``out``; an archive there is moved aside first and removed once ``new`` is in place."""
    if not out.exists():
        new.rename(out)
        return
    old = out.with_name(f".{out.name}.{os.getpid()}.old")
    out.rename(old)
    try:
        new.rename(out)
    except OSError:
        old.rename(out)
        raise
    shutil.rmtree(old)
