"""The run record's typed schema: summary, recovery event, time-to-accuracy, overhead and round row, with one reader and one writer each.

summary.json carries ``schema_version``; a record of another version, or one whose fields
or types are not this schema's, is refused with one line naming the file.
"""

from __future__ import annotations

import io
import types
from dataclasses import asdict, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

import pandas as pd

from driftbench.atomic import atomic_write
from driftbench.errors import RunError
from driftbench.record.files import CONFIG, SUMMARY, read_json, write_json

SCHEMA_VERSION = 2  # version 1: the untyped summaries before the schema (measured server time on the clock)


@dataclass(frozen=True)
class TimeToAccuracy:
    """The evaluation from which accuracy stays at or above a target."""

    target: float
    rounds: int
    sim_seconds: float


@dataclass(frozen=True)
class Recovery:
    """How accuracy fell and recovered around one drift event."""

    round: int
    pre: float | None
    trough: float | None
    drop: float | None
    rounds_to_recover: int | None
    delta_permille: float | None


@dataclass(frozen=True)
class RunOverhead:
    """A run's cost beyond plain model training: simulated server seconds, measured server seconds, extra traffic and passes."""

    cluster_seconds: float
    server_wall_seconds: float
    upload_bytes: int
    download_bytes: int
    client_extra_passes: int


@dataclass(frozen=True)
class Summary:
    """summary.json: a finished run's identity, results and costs."""

    schema_version: int
    trace: str
    trace_hash: str
    method: str
    oracle: bool
    seed: int
    rounds: int
    final_accuracy: float
    time_to_accuracy: TimeToAccuracy | None
    tta_target: float | None
    recovery: tuple[Recovery, ...]
    ari_mean: float | None
    ari_final: float | None
    n_clusters_final: int
    ari_reference: str | None
    mean_client_distance_final: float
    overhead: RunOverhead
    sim_seconds: float
    wall_seconds: float
    status: str  # "ok" | "diverged"
    diverged_round: int | None
    run_dir: str


@dataclass(frozen=True)
class RoundRow:
    """One rounds.csv row: an evaluation of every client; seconds and bytes are cumulative since round 0."""

    round: int
    sim_seconds: float
    wall_seconds: float
    accuracy_mean: float
    accuracy_p10: float
    accuracy_p90: float
    ari: float  # NaN when the trace defines no ground truth
    n_clusters: int
    cluster_seconds: float
    server_wall_seconds: float
    upload_bytes: int
    download_bytes: int


ROUND_COLUMNS = tuple(f.name for f in fields(RoundRow))


def write_summary(path: Path, summary: Summary) -> None:
    """Write summary.json atomically."""
    write_json(path, asdict(summary))


def read_summary(path: Path) -> Summary:
    """Read summary.json; another schema version or a foreign file raises ``RunError`` naming it."""
    data = read_json(path)
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version != SCHEMA_VERSION:
        raise RunError(
            f"{path}: run record schema version {version if version is not None else '(none)'}, "
            f"but this driftbench reads version {SCHEMA_VERSION}; rerun the run into a fresh --out"
        )
    return from_plain(Summary, data, str(path))


def write_rounds(path: Path, rows: list[RoundRow]) -> None:
    """Write rounds.csv (one row per evaluation, columns in schema order) atomically."""
    buffer = io.StringIO()
    pd.DataFrame([asdict(r) for r in rows], columns=list(ROUND_COLUMNS)).to_csv(buffer, index=False)
    atomic_write(path, lambda fh: fh.write(buffer.getvalue().encode()))


def read_rounds(path: Path) -> pd.DataFrame:
    """Read rounds.csv; a file without exactly the schema's columns raises ``RunError`` naming it."""
    try:
        table = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise RunError(f"{path}: unreadable rounds table ({exc})") from None
    if tuple(table.columns) != ROUND_COLUMNS:
        raise RunError(f"{path}: rounds table columns {list(table.columns)} are not schema version {SCHEMA_VERSION}'s")
    return table


def run_state(run: Path) -> str:
    """``absent``, ``incomplete`` or the summary's status (``ok`` / ``diverged``) of a run folder."""
    run = Path(run)
    if (run / SUMMARY).is_file():
        return read_summary(run / SUMMARY).status
    return "incomplete" if (run / CONFIG).is_file() else "absent"


def from_plain(cls: type, data: Any, where: str) -> Any:
    """The dataclass ``cls`` from its JSON form, checking every field's presence and type."""
    if not isinstance(data, dict):
        raise RunError(f"{where}: expected a table for {cls.__name__}, got {type(data).__name__}")
    names = [f.name for f in fields(cls)]
    missing, extra = [n for n in names if n not in data], sorted(set(data) - set(names))
    if missing or extra:
        raise RunError(
            f"{where}: not a {cls.__name__} of schema version {SCHEMA_VERSION} (missing {missing}, unexpected {extra})"
        )
    hints = get_type_hints(cls)
    return cls(**{n: _typed(hints[n], data[n], f"{where}: {n}") for n in names})


def _typed(kind: Any, value: Any, where: str) -> Any:
    origin, args = get_origin(kind), get_args(kind)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (kind,) = [a for a in args if a is not type(None)]
        return _typed(kind, value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise RunError(f"{where}: expected a list, got {value!r}")
        return tuple(_typed(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
    if is_dataclass(kind):
        return from_plain(kind, value, where)
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    raise RunError(f"{where}: expected {kind.__name__}, got {value!r}")
