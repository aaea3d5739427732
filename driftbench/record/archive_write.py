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
    if out.exists() and not (force and is_archive(out)):
        why = "not an archive: --force replaces an archive only" if force else "exists; --force replaces the archive there"
        raise ConfigError(f"{out}: {why}")
    frames, skipped = gather(runs, [ROUNDS, EVENTS, *([DIAGNOSTICS] if diagnostics else [])], quiet)
    if frames[RUNS].empty:
        raise ConfigError(f"{runs}: no complete run to archive ({len(skipped)} incomplete)")
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
    return Written(out, tables, (out / MANIFEST).stat().st_size, tuple(skipped))


def gather(runs: Path, names: list[str], quiet: bool) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """The archive's tables from the run folders below ``runs`` (the run table files ``names``), and the incomplete runs."""
    rows: list[dict[str, Any]] = []
    parts: dict[str, list[pd.DataFrame]] = {TABLE_OF[name]: [] for name in names}
    skipped = []
    folders = record_folders(runs)
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
    frames = {table: pd.concat(found, ignore_index=True) if found else pd.DataFrame() for table, found in parts.items()}
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
