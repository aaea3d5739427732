"""The drift matrix's cells: per (trace, method), its numbers over seeds from a runs folder or an archive, or why none.

A cell's numbers are the leaderboard's (``leaderboard.aggregate.method_row``: final accuracy,
post-drift accuracy, recovery, time to FedAvg's target, overhead) plus the share of the
oracle's room: (method - fedavg) / (oracle - fedavg) in final accuracy, the ratio of the mean
differences over the seeds where all three ran, with Fieller's 95% set for a ratio of paired
means (``paired.paired_ratio_interval``). The pairs are runs of one trace hash and seed (a seed
whose runs differ in hash is refused, as the leaderboard refuses it). Fieller's rather than a
t-interval of per-seed ratios: a seed where the oracle barely beats FedAvg would make its ratio,
and so the mean, swing; where the room itself is not distinguishable from 0 the set is
unbounded, which says so. 0 is FedAvg, 1 the oracle; below 0, worse than FedAvg. Where the
room's mean (oracle - fedavg) is not above 0 there is no share (``NO_ROOM``): dividing by it
would turn a method above FedAvg into one below.

The matrix expects a grid (traces x methods at seeds, e.g. a suite's); a cell of the grid without
a complete run says why: not run yet, or its runs' state (incomplete: crashed or still running;
diverged, counted with the accuracy it reached, as on the leaderboard).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from driftbench.evaluation.leaderboard.aggregate import interval_fields, mean, method_row
from driftbench.evaluation.leaderboard.gather import RunRow, run_rows, seed_hashes
from driftbench.evaluation.paired import paired_ratio_interval
from driftbench.record.runs import INCOMPLETE, RunRecord, find_runs
from driftbench.record.summarize import REFERENCE
from driftbench.traces.catalog import DRIFT_KINDS, drift_kind

ORACLE = "oracle"  # the method whose final accuracy is the top of the room (driftbench.methods.oracle)
UNCLASSIFIED = "unclassified"  # the kind of a trace the catalog does not know (a trace file, a plug-in's)
NOT_RUN = "not run yet"
ROOM = "room_share"
ROOM_MEAN = "room"  # the room itself: the mean of oracle - fedavg over the seeds of the share
CONTAINS_ZERO = f"{ROOM}_contains_zero"  # whether the share's set holds 0: the method not distinguishable from FedAvg
NO_ROOM = "no room: the oracle does not beat FedAvg"
COUNTS = (  # columns that count seeds or events: whole numbers, empty where a cell has no run
    "seeds",
    "recovered_events",
    "dropped_events",
    "tta_reached",
    "tta_not_distinguishable",
    "tta_first_evaluation",
    "tta_runs",
)
CELL_COLUMNS = (  # leaderboard row columns a cell keeps, after trace, drift, method, status and note
    "oracle",
    "seeds",
    "final_accuracy_mean",
    "final_accuracy_std",
    "vs_reference",
    "vs_reference_low",
    "vs_reference_high",
    "vs_reference_seeds",
    "post_drift_accuracy",
    "mean_drop",
    "recovered_events",
    "dropped_events",
    "rounds_to_recover",
    "tta_reached",
    "tta_not_distinguishable",
    "tta_first_evaluation",
    "tta_runs",
    "tta_log_speedup",
    "tta_log_speedup_low",
    "tta_log_speedup_high",
    "tta_log_speedup_seeds",
    "cluster_seconds",
    "overhead_bytes",
    "degenerate",
    "runs",
)


@dataclass(frozen=True)
class Grid:
    """The cells a matrix expects: every trace x method, at ``seeds`` (None: the seeds any run of the trace has)."""

    traces: tuple[str, ...]
    methods: tuple[str, ...]
    seeds: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Matrix:
    """A matrix read: one row per (trace, method) cell, and one row per complete run (what the ranking ranks)."""

    cells: pd.DataFrame
    runs: pd.DataFrame  # trace, drift, method, seed, oracle, final_accuracy, commit


def read_matrix(root: Path, grid: Grid | None = None) -> Matrix:
    """The matrix of the runs under ``root`` (a runs folder or an archive) over ``grid`` and every trace and method found."""
    records = find_runs(Path(root))
    grid = widened(grid or Grid((), ()), records)
    cells, runs = [], []
    for trace in kinds_of(grid.traces):
        held = [r for r in records if r.trace == trace]
        seed_hashes(trace, held)
        rows = run_rows([r for r in held if r.summary is not None])  # the others' state is in their cells' notes
        seeds = grid.seeds if grid.seeds is not None else tuple(sorted({r.seed for r in held}))
        for method in grid.methods:
            mine = [r for r in held if r.method == method]
            cells.append(cell(trace, method, mine, [run for run in rows if run.record.method == method], rows, seeds))
        runs += [run_values(run) for run in rows]
    table = pd.DataFrame(cells)
    counts = [c for c in table.columns if c in COUNTS or c.endswith("_seeds")]
    types = dict.fromkeys(counts, "Int64") | {CONTAINS_ZERO: "boolean"}
    return Matrix(table.astype(types), pd.DataFrame(runs, columns=list(RUN_COLUMNS)))


RUN_COLUMNS = ("trace", "drift", "method", "seed", "oracle", "final_accuracy", "commit")


def run_values(run: RunRow) -> dict[str, Any]:
    """A complete run as the ranking reads it."""
    record, summary = run.record, run.summary
    values = (record.trace, kind_of(record.trace), record.method, record.seed, summary.oracle, summary.final_accuracy)
    return dict(zip(RUN_COLUMNS, (*values, record.config().get("git_revision"))))


def widened(grid: Grid, records: Sequence[RunRecord]) -> Grid:
    """``grid`` with the traces and methods of ``records`` it lacks after its own; methods found: FedAvg first, oracle last."""
    found = sorted({r.method for r in records}, key=lambda m: (m == ORACLE, m != REFERENCE, m))
    return Grid(
        tuple(dict.fromkeys([*grid.traces, *sorted({r.trace for r in records})])),
        tuple(dict.fromkeys([*grid.methods, *found])),
        grid.seeds,
    )


def kinds_of(traces: Iterable[str]) -> dict[str, str]:
    """Each trace and its kind of drift, ordered by kind (``DRIFT_KINDS``' order, unclassified last), else as given."""
    kinds = {trace: kind_of(trace) for trace in traces}
    return dict(sorted(kinds.items(), key=lambda item: kind_order(item[1])))


def kind_of(trace: str) -> str:
    """The trace's kind of drift (``traces.catalog.DRIFT_KINDS``), or ``UNCLASSIFIED``."""
    return drift_kind(trace) or UNCLASSIFIED


def kind_order(kind: str) -> int:
    """A kind's place: ``DRIFT_KINDS``' order, unclassified last."""
    return list(DRIFT_KINDS).index(kind) if kind in DRIFT_KINDS else len(DRIFT_KINDS)


def cell(
    trace: str, method: str, records: list[RunRecord], runs: list[RunRow], trace_runs: list[RunRow], seeds: Iterable[int]
) -> dict[str, Any]:
    """One cell: the method's numbers on the trace over its complete ``runs``, its share of the room, and its state."""
    status, note = state(records, seeds)
    numbers = method_row(method, records, runs) if records else {}
    row: dict[str, Any] = {"trace": trace, "drift": kind_of(trace), "method": method, "status": status, "note": note}
    row |= {column: numbers.get(column) for column in CELL_COLUMNS}
    row["oracle"] = bool(numbers.get("oracle")) or method == ORACLE
    row["seeds"] = numbers.get("seeds", 0)
    over, room = room_pairs(runs, trace_runs)
    share = paired_ratio_interval(over, room) if room and np.mean(room) > 0 else None
    row |= interval_fields(ROOM, share) | {CONTAINS_ZERO: None if share is None else share.contains_zero, ROOM_MEAN: mean(room)}
    row["tta_seconds"] = mean(
        run.time_to_accuracy.sim_seconds for run in runs if run.time_to_accuracy is not None and run.time_to_accuracy.reached
    )
    return row


def room_pairs(runs: list[RunRow], trace_runs: list[RunRow]) -> tuple[list[float], list[float]]:
    """Per seed where the method, FedAvg and the oracle all have a complete run: method - fedavg and oracle - fedavg."""
    accuracy = {(run.record.method, run.record.seed): run.summary.final_accuracy for run in trace_runs}
    over, room = [], []
    for run in runs:
        reference, top = accuracy.get((REFERENCE, run.record.seed)), accuracy.get((ORACLE, run.record.seed))
        if reference is not None and top is not None:
            over.append(run.summary.final_accuracy - reference)
            room.append(top - reference)
    return over, room


def state(records: list[RunRecord], seeds: Iterable[int]) -> tuple[str, str]:
    """A cell's status (ok, partial, incomplete, not run) and why it lacks runs ("" when it lacks none)."""
    if not records:
        return "not run", NOT_RUN
    missing = sorted(set(seeds) - {r.seed for r in records})
    incomplete = sorted(r.seed for r in records if r.summary is None)
    diverged = {r.seed: r.summary.diverged_round for r in records if r.summary is not None and r.summary.status == "diverged"}
    notes = [f"{seed_text(missing)}: {NOT_RUN}"] if missing else []
    notes += [f"{seed_text(incomplete)} {INCOMPLETE}"] if incomplete else []
    notes += [f"seed {seed}: diverged at round {at}" for seed, at in sorted(diverged.items())]
    status = "incomplete" if len(incomplete) == len(records) else "partial" if missing or incomplete else "ok"
    return status, "; ".join(notes)


def seed_text(seeds: list[int]) -> str:
    """``seed 3`` or ``seeds 3, 4``."""
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(str(s) for s in seeds)}"


def room_frame(cells: pd.DataFrame) -> pd.DataFrame:
    """The share of the oracle's room as a methods x traces table (traces in the cells' order, NaN where none)."""
    table = cells.pivot(index="method", columns="trace", values=ROOM)
    return table.loc[list(dict.fromkeys(cells["method"])), list(dict.fromkeys(cells["trace"]))].astype(float)


def covers_room(cells: pd.DataFrame) -> bool:
    """Whether some trace's cells have a room, a share or none (FedAvg and the oracle both ran there)."""
    return bool(np.isfinite(cells[ROOM_MEAN].astype(float)).any())


def no_room(room: float | None) -> bool:
    """Whether a cell's room (``ROOM_MEAN``) is there but not above 0: the oracle does not beat FedAvg, so no share."""
    return room is not None and not pd.isna(room) and room <= 0
