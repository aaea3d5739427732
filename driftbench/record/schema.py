"""The run record's typed schema: summary, recovery, time-to-accuracy, overhead and round row; one reader and one writer each.

summary.json carries ``schema_version``; a record of another version, or one whose fields
or types are not this schema's, is refused with one line naming the file.
"""

from __future__ import annotations

import functools
import io
import types
from dataclasses import MISSING, asdict, dataclass, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, Union, get_args, get_origin, get_type_hints

import pandas as pd

from driftbench.atomic import atomic_write
from driftbench.errors import RecordError
from driftbench.methods.events import DIAGNOSTIC_COLUMNS, EVENT_COLUMNS
from driftbench.record.files import CONFIG, DIAGNOSTICS, EVENTS, ROUNDS, SUMMARY, read_json, write_json

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

D = TypeVar("D", bound="DataclassInstance")

SCHEMA_VERSION = 6
# 1: untyped, measured server time; 2: typed; 3: events, recovery outcomes, multi-group ARI, extra_* bytes;
# 4: time-to-accuracy with its target rule and outcome, streaming accuracy, degeneracy flags;
# 5: the drift scorecard (segment accuracy matrix, prequential accuracy, drift detection), degeneracy flag
#    collapse_without_drift; 6: clients' query seconds, and later newcomer_accuracy, with a default: records
#    written before it read it as null

TTA_OUTCOMES = ("reached", "not_reached", "not_distinguishable")
DEGENERACIES = ("one_cluster", "clustering_unchanged", "collapse_without_drift")


@dataclass(frozen=True)
class Target:
    """A time-to-accuracy target and how it was chosen (README "Time to accuracy").

    ``rule`` is ``reference`` (the reference method's plateau ``reference_level`` less two
    noise bands) or ``fixed`` (``--target``); ``noise`` is the reference's noise band (0 for
    a fixed target).
    """

    value: float
    rule: str
    reference: str | None
    reference_level: float | None
    noise: float


@dataclass(frozen=True)
class TimeToAccuracy:
    """When a run reached its target: ``outcome`` (``TTA_OUTCOMES``), and the round and simulated seconds if reached.

    ``band`` is the noise band the final accuracy is compared with: a final accuracy within
    it of the target is ``not_distinguishable`` from it.
    """

    target: Target
    outcome: str
    band: float
    rounds: int | None
    sim_seconds: float | None

    @property
    def reached(self) -> bool:
        """Whether the run reached the target (and its final accuracy is distinguishable from it)."""
        return self.outcome == "reached"


@dataclass(frozen=True)
class Streaming:
    """Target-free accuracy over the whole stream (README "Streaming accuracy").

    ``mean_accuracy``: over every evaluation (prequential, the area under the curve per
    evaluation); ``worst_interval_accuracy``: the lowest mean over the intervals the drift
    events cut the run into; ``post_drift_accuracy``: over every evaluation at or after the
    first event (null without events).
    """

    mean_accuracy: float
    worst_interval_accuracy: float
    post_drift_accuracy: float | None


@dataclass(frozen=True)
class Recovery:
    """How accuracy fell and recovered after one drift event, over its interval (to the next event or the end).

    ``outcome`` is ``no_baseline`` (no evaluation before the event: the rest is null),
    ``no_drop`` (the trough stays within the tolerance of ``pre``), ``recovered`` or
    ``not_recovered`` (within the interval). README "Run record" defines every field.
    """

    round: int
    kind: str
    outcome: str
    pre: float | None
    trough: float | None
    post: float | None
    drop: float | None
    rounds_to_recover: int | None
    delta_permille: float | None


@dataclass(frozen=True)
class EventDetection:
    """How a method's reactions answered one drift event (docs "Scorecard": drift detection).

    ``delay``: rounds from the event to the first reaction within the window that touches a
    drifted client (null: missed); ``clients_detected``: drifted clients some reaction in the
    window touched; ``client_delay_mean``: their mean rounds to the first reaction touching each.
    """

    round: int
    kind: str
    clients: int
    delay: int | None
    clients_detected: int
    client_delay_mean: float | None


@dataclass(frozen=True)
class Detection:
    """Drift-detection scoring of a run's reactions against the trace's events (docs "Scorecard").

    ``outcome`` is ``no_events`` (the trace has no drift event after round 0: nothing to
    detect, every reaction a false alarm) or ``scored``; ``window`` is how many rounds after an
    event (the event's round included) a reaction counts for it.
    """

    outcome: str
    window: int
    reactions: int
    events: tuple[EventDetection, ...]
    detected: int
    missed: int
    false_alarms: int
    delay_mean: float | None
    client_delay_mean: float | None
    clients_missed: int


@dataclass(frozen=True)
class Scorecard:
    """The drift scorecard (docs "Scorecard"): segment accuracy matrix, its summaries, prequential accuracy, detection.

    ``accuracy_matrix[i][j]``: mean client accuracy, with the models at the end of segment
    ``i``, on the test data of segment ``j`` (segments start at ``segment_starts``; null where
    no client has test data). Summaries are null where they need more segments than the run has.
    """

    segment_starts: tuple[int, ...]
    accuracy_matrix: tuple[tuple[float | None, ...], ...]
    in_segment_accuracy: float | None
    next_segment_accuracy: float | None
    next_segment_worst: float | None
    backward_transfer: float | None
    forgetting: float | None
    prequential_accuracy: float | None
    prequential_after_events: tuple[float | None, ...]
    detection: Detection


@dataclass(frozen=True)
class RunOverhead:
    """A run's cost beyond plain training: simulated server and client-query seconds, measured server seconds, traffic, passes."""

    cluster_seconds: float
    client_query_seconds: float
    server_wall_seconds: float
    extra_upload_bytes: int
    extra_download_bytes: int
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
    time_to_accuracy: TimeToAccuracy | None  # null without a target (a non-reference method run alone)
    streaming: Streaming
    recovery: tuple[Recovery, ...]
    ari_mean: float | None  # over evaluations whose ground truth has >= 2 groups; null if none has
    ari_final: float | None
    ari_rounds: int  # how many evaluations ari_mean averages
    n_clusters_final: int
    partition_changes: int  # rounds after round 0 at whose end the partition of clients differed from the round before's
    degenerate: tuple[str, ...]  # DEGENERACIES that apply: a clustering that did nothing, a collapse (docs/record.md)
    ari_reference: str | None
    mean_client_distance_final: float
    overhead: RunOverhead
    events: dict[str, int]  # method events per kind (events.csv)
    scorecard: Scorecard
    sim_seconds: float
    wall_seconds: float
    status: str  # "ok" | "diverged"
    diverged_round: int | None
    run_dir: str
    newcomer_accuracy: float | None = None  # the trace's newcomers' mean test accuracy after joining; null without newcomers


@dataclass(frozen=True)
class RoundRow:
    """One rounds.csv row: an evaluation of every client; seconds and bytes are cumulative since round 0."""

    round: int
    sim_seconds: float
    wall_seconds: float
    accuracy_mean: float
    accuracy_p10: float
    accuracy_p90: float
    drift_event: int  # 1 if a drift event fell after the previous evaluation and at or before this round
    ari: float  # NaN unless the ground truth has >= 2 groups at this round
    n_clusters: int
    cluster_seconds: float
    server_wall_seconds: float
    upload_bytes: int
    download_bytes: int


ROUND_COLUMNS = tuple(f.name for f in fields(RoundRow))
TABLES = {ROUNDS: ROUND_COLUMNS, EVENTS: EVENT_COLUMNS, DIAGNOSTICS: DIAGNOSTIC_COLUMNS}  # a run's table files: columns
_READ_OPTIONS: dict[str, dict[str, Any]] = {
    EVENTS: {"dtype": {"clients": str}, "keep_default_na": False, "na_values": {"value": [""]}}
}


def write_summary(path: Path, summary: Summary) -> None:
    """Write summary.json atomically."""
    write_json(path, asdict(summary))


def read_summary(path: Path) -> Summary:
    """Read summary.json; another schema version or a foreign file raises ``RecordError`` naming it."""
    return summary_from(read_json(path), str(path))


def summary_from(data: Any, where: str) -> Summary:
    """The summary in summary.json's content ``data``; another schema version or a foreign one raises ``RecordError``."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version != SCHEMA_VERSION:
        raise RecordError(
            f"{where}: run record schema version {version if version is not None else '(none)'}, "
            f"but this driftbench reads version {SCHEMA_VERSION}; rerun the run into a fresh --out"
        )
    return from_plain(Summary, data, where)


def write_rounds(path: Path, rows: list[RoundRow]) -> None:
    """Write rounds.csv (one row per evaluation, columns in schema order) atomically."""
    _write_csv(path, [asdict(r) for r in rows], ROUND_COLUMNS)


def read_rounds(path: Path) -> pd.DataFrame:
    """Read rounds.csv; a file without exactly the schema's columns raises ``RecordError`` naming it."""
    return read_table(path, ROUNDS)


def write_events(path: Path, method: str, rows: list[dict[str, Any]]) -> None:
    """Write events.csv (``EVENT_COLUMNS``: one row per method event; no clients or value: blank) atomically."""
    _write_csv(path, [{**r, "method": method} for r in rows], EVENT_COLUMNS)


def read_events(path: Path) -> pd.DataFrame:
    """Read events.csv (clients as space-separated ids); a file without exactly its columns raises ``RecordError``."""
    return read_table(path, EVENTS)


def write_diagnostics(path: Path, method: str, rows: list[dict[str, Any]]) -> None:
    """Write diagnostics.csv (``DIAGNOSTIC_COLUMNS``: one row per decision quantity a method measured) atomically."""
    _write_csv(path, [{**r, "method": method} for r in rows], DIAGNOSTIC_COLUMNS)


def read_diagnostics(path: Path) -> pd.DataFrame:
    """Read diagnostics.csv; a file without exactly its columns raises ``RecordError``."""
    return read_table(path, DIAGNOSTICS)


def read_table(path: Path, name: str) -> pd.DataFrame:
    """Read the run's table file ``name`` (``TABLES``) at ``path``; one without exactly its columns raises ``RecordError``."""
    try:
        text = path.read_text()
        if not text.endswith("\n"):  # every table is written whole, ending its last line; this one was cut off
            raise ValueError("cut off: its last line has no end")
        table = _parse_csv(text, name)
    except (OSError, ValueError) as exc:
        raise RecordError(f"{path}: unreadable {name.removesuffix('.csv')} table ({exc})") from None
    columns = TABLES[name]
    if tuple(table.columns) != columns:
        missing, extra = [c for c in columns if c not in table.columns], [c for c in table.columns if c not in columns]
        raise RecordError(
            f"{path}: columns differ from schema version {SCHEMA_VERSION}'s {name.removesuffix('.csv')} table "
            f"(missing {missing}, unexpected {extra}{', out of order' if not missing and not extra else ''})"
        )
    return table


def empty_table(name: str) -> pd.DataFrame:
    """The table ``name`` of a run that has no rows of it, as its file holding only the header reads (pandas leaves
    such a table's columns untyped), so that tables stacked from a runs folder and from an archive are alike."""
    return _parse_csv(",".join(TABLES[name]) + "\n", name)


def _parse_csv(text: str, name: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text), **_READ_OPTIONS.get(name, {}))


def write_table(path: Path, name: str, table: pd.DataFrame) -> None:
    """Write the run's table file ``name`` (``TABLES``) from its rows, as ``read_table`` reads them, atomically."""
    _write_csv(path, table.to_dict("records"), TABLES[name])


def _write_csv(path: Path, records: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
    buffer = io.StringIO()
    pd.DataFrame(records, columns=list(columns)).to_csv(buffer, index=False)
    atomic_write(path, lambda fh: fh.write(buffer.getvalue().encode()))


def run_state(run: Path) -> str:
    """``absent``, ``incomplete`` or the summary's status (``ok`` / ``diverged``) of a run folder."""
    run = Path(run)
    if (run / SUMMARY).is_file():
        return read_summary(run / SUMMARY).status
    return "incomplete" if (run / CONFIG).is_file() else "absent"


def from_plain(cls: type[D], data: Any, where: str) -> D:
    """The dataclass ``cls`` from its JSON form, checking every field's presence and type.

    A field with a default may be absent: it was added to the version after records were written.
    """
    if not isinstance(data, dict):
        raise RecordError(f"{where}: expected a table for {cls.__name__}, got {type(data).__name__}")
    names = [f.name for f in fields(cls)]
    optional = {f.name for f in fields(cls) if f.default is not MISSING}
    missing = [n for n in names if n not in data and n not in optional]
    extra = sorted(set(data) - set(names))
    if missing or extra:
        raise RecordError(
            f"{where}: not a {cls.__name__} of schema version {SCHEMA_VERSION} (missing {missing}, unexpected {extra})"
        )
    hints = field_types(cls)
    return cls(**{n: _typed(hints[n], data[n], f"{where}: {n}") for n in names if n in data})


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """A dataclass's field types, resolved once (``get_type_hints`` took most of the time reading a summary)."""
    return get_type_hints(cls)


def _typed(kind: Any, value: Any, where: str) -> Any:
    origin, args = get_origin(kind), get_args(kind)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (kind,) = [a for a in args if a is not type(None)]
        return _typed(kind, value, where)
    if origin is dict:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise RecordError(f"{where}: expected a table, got {value!r}")
        return {k: _typed(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if origin is tuple:
        if not isinstance(value, list):
            raise RecordError(f"{where}: expected a list, got {value!r}")
        return tuple(_typed(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(kind, type) and is_dataclass(kind):
        return from_plain(kind, value, where)
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    raise RecordError(f"{where}: expected {kind.__name__}, got {value!r}")
