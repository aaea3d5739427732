"""Per trace x method leaderboard rows: means over seeds, paired intervals against the reference, ranking, the trace's board."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from driftbench.evaluation.leaderboard.gather import RunRow, hash_text, run_rows, run_settings, seed_hashes
from driftbench.evaluation.paired import Interval, Ratio, paired_interval
from driftbench.evaluation.plots import Plot, method_runs, trace_plots
from driftbench.evaluation.scorecard_view import DriftBoard, drift_board
from driftbench.methods.events import EVENT_KINDS
from driftbench.record.runs import RunRecord, find_runs
from driftbench.record.schema import DEGENERACIES
from driftbench.record.summarize import REFERENCE

SORT_COLUMNS = {  # --sort choice -> the leaderboard.csv column methods are ranked by (descending)
    "final": "final_accuracy_mean",
    "mean": "mean_accuracy",
    "worst-interval": "worst_interval_accuracy",
    "post-drift": "post_drift_accuracy",
}


@dataclass(frozen=True)
class TraceBoard:
    """One trace's section: ranked rows, run settings, plots, the run folders and the runs left out."""

    trace: str
    trace_hash: str
    rows: pd.DataFrame
    settings: dict[str, str]
    plots: list[Plot]
    records: list[RunRecord]  # every run folder, by method and seed
    incomplete: list[str]
    drift: DriftBoard  # the drift scorecard: its own table and heatmaps, after the trace's section


def trace_boards(root: Path, by: str = SORT_COLUMNS["final"]) -> list[TraceBoard]:
    """The board of each trace with runs under ``root``, methods ranked by column ``by``."""
    return [trace_board(trace, list(group), by) for trace, group in groupby(find_runs(root), key=lambda r: r.trace)]


def trace_rows(root: Path, by: str = SORT_COLUMNS["final"]) -> pd.DataFrame:
    """leaderboard.csv's rows of every trace with runs under ``root``, without drawing a plot."""
    boards = groupby(find_runs(root), key=lambda r: r.trace)
    return pd.concat([ranked_rows(trace, list(group), by)[0] for trace, group in boards], ignore_index=True)


def ranked_rows(trace: str, records: list[RunRecord], by: str = SORT_COLUMNS["final"]) -> tuple[pd.DataFrame, list[RunRow]]:
    """One trace's methods ranked (its leaderboard.csv rows) and its complete runs; a seed's hash mix is refused."""
    hashes = seed_hashes(trace, records)
    runs = run_rows(records)
    by_method = {m: list(group) for m, group in groupby(sorted(records, key=lambda r: r.method), key=lambda r: r.method)}
    rows = ranked([method_row(m, group, [run for run in runs if run.record.method == m]) for m, group in by_method.items()], by)
    rows.insert(0, "trace_hash", hash_text(hashes))
    rows.insert(0, "trace", trace)
    return rows, runs


def trace_board(trace: str, records: list[RunRecord], by: str = SORT_COLUMNS["final"]) -> TraceBoard:
    """Rank one trace's methods and draw its plots; runs of one seed with differing trace hashes are refused."""
    rows, runs = ranked_rows(trace, records, by)
    incomplete = [str(r.path) for r in records if r.summary is None]
    done = {m: [run.record for run in runs if run.record.method == m] for m in rows["method"]}
    curves = [method_runs(m, group) for m, group in done.items() if group]
    first = next((group[0].summary for group in done.values() if group), None)
    events = sorted({e.round for e in first.recovery}) if first is not None else []
    plots = trace_plots(trace, curves, events, rows) if curves else []
    drift = drift_board(trace, list(zip(rows["method"], rows["oracle"])), records)
    settings = run_settings(records, seed_hashes(trace, records))
    return TraceBoard(trace, str(rows["trace_hash"].iloc[0]), rows, settings, plots, records, incomplete, drift)


def method_row(method: str, records: list[RunRecord], runs: list[RunRow]) -> dict[str, Any]:
    """One method's numbers over its complete ``runs`` (seeds), of all its run folders ``records``."""
    summaries = [run.summary for run in runs]
    events = [e for s in summaries for e in s.recovery]
    logs = [float(np.log(run.speedup)) for run in runs if run.speedup is not None and 0 < run.speedup < np.inf]
    paired = [run.vs_reference for run in runs if run.vs_reference is not None]
    tta = [run.time_to_accuracy for run in runs if run.time_to_accuracy is not None]
    accuracy = [s.final_accuracy for s in summaries]
    statuses = pd.Series([r.status for r in records]).value_counts()
    return {
        "method": method,
        "oracle": any(s.oracle for s in summaries),
        "seeds": len(summaries),
        "final_accuracy_mean": mean(accuracy),
        "final_accuracy_std": float(np.std(accuracy, ddof=1)) if len(accuracy) > 1 else None,
        **interval_fields("vs_reference", None if method == REFERENCE else paired_interval(paired)),
        **interval_fields("tta_log_speedup", paired_interval(logs)),
        "tta_reached": sum(t.reached for t in tta),
        "tta_not_distinguishable": sum(t.outcome == "not_distinguishable" for t in tta),
        "tta_first_evaluation": sum(run.first_evaluation for run in runs),
        "tta_runs": len(tta),
        "mean_accuracy": mean(s.streaming.mean_accuracy for s in summaries),
        "worst_interval_accuracy": mean(s.streaming.worst_interval_accuracy for s in summaries),
        "post_drift_accuracy": mean(s.streaming.post_drift_accuracy for s in summaries),
        "mean_drop": mean(e.drop for e in events),
        "rounds_to_recover": mean(e.rounds_to_recover for e in events),
        "recovered_events": sum(e.outcome == "recovered" for e in events),
        "dropped_events": sum(e.outcome in ("recovered", "not_recovered") for e in events),
        "delta_permille": mean(e.delta_permille for e in events),
        "ari_mean": mean(s.ari_mean for s in summaries),
        "cluster_seconds": mean(s.overhead.cluster_seconds for s in summaries),
        "overhead_bytes": mean(s.overhead.extra_upload_bytes + s.overhead.extra_download_bytes for s in summaries),
        "client_extra_passes": mean(s.overhead.client_extra_passes for s in summaries),
        **{f"events_{kind}": mean(s.events.get(kind, 0) for s in summaries) for kind in EVENT_KINDS},
        "degenerate": ", ".join(
            f"{flag} {n}/{len(summaries)}" for flag in DEGENERACIES if (n := sum(flag in s.degenerate for s in summaries))
        ),
        "runs": ", ".join(f"{n} {status}" for status, n in statuses.items()),
    }


def interval_fields(name: str, interval: Interval | Ratio | None) -> dict[str, float | int | None]:
    """``name``, ``name_low``, ``name_high`` and ``name_seeds``: an interval as leaderboard.csv columns (null if none)."""
    if interval is None:
        return {name: None, f"{name}_low": None, f"{name}_high": None, f"{name}_seeds": 0}
    return {name: interval.mean, f"{name}_low": interval.low, f"{name}_high": interval.high, f"{name}_seeds": interval.n}


def mean(values: Any) -> float | None:
    """Mean of the values that are not None; None when there are none."""
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def ranked(rows: list[dict[str, Any]], by: str = SORT_COLUMNS["final"]) -> pd.DataFrame:
    """Methods with a value of ``by`` in descending order and ranked; then oracles and methods without one, unranked."""
    table = pd.DataFrame(rows)
    competing = (~table["oracle"]) & table[by].notna()
    ranked_part = table[competing].sort_values(by, ascending=False, kind="stable")
    rest = table[~competing].sort_values(["oracle", by], ascending=False, kind="stable")
    ranks = pd.Series(list(range(1, len(ranked_part) + 1)) + [None] * len(rest), dtype="Int64")  # index 0.., as table's
    table = pd.concat([ranked_part, rest], ignore_index=True)
    table.insert(0, "rank", ranks)
    return table
