"""The leaderboard over a runs folder: per trace, methods ranked by final accuracy (mean and std over seeds).

Written as ``leaderboard.md``, ``leaderboard.csv``, one PNG per plot and a self-contained
``index.html``. Oracle methods are upper bounds, not competitors: they are listed after the
ranked methods, marked and unranked. Diverged runs count with the accuracy they reached;
incomplete runs are listed and left out of every number. The time-to-accuracy speed-up is
the geometric mean (the mean for ratios) over the seeds where both the method and FedAvg
reached the target; the other columns are arithmetic means over seeds (and drift events).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import gmean

from driftbench.atomic import atomic_write
from driftbench.errors import ConfigError
from driftbench.evaluation.html_page import Section, render_page
from driftbench.evaluation.plots import accuracy_plot, ari_plot, seed_mean_curves
from driftbench.record.metrics import speedup
from driftbench.record.runs import INCOMPLETE, RunRecord, find_runs
from driftbench.record.schema import Summary
from driftbench.record.summarize import REFERENCE, summary_tta

log = logging.getLogger("driftbench")

HEADERS = {  # CSV column -> table header
    "rank": "rank",
    "method": "method",
    "seeds": "seeds",
    "final_accuracy_mean": "final accuracy",
    "tta_speedup": "TTA speed-up",
    "mean_drop": "drop",
    "rounds_to_recover": "rounds to recover",
    "recovered": "recovered",
    "delta_permille": "delta ‰",
    "ari_mean": "ARI",
    "cluster_seconds": "cluster s",
    "overhead_mb": "extra MB",
    "client_extra_passes": "extra passes",
    "runs": "runs",
}


@dataclass(frozen=True)
class TraceBoard:
    """One trace's section: ranked rows, plots, and the runs left out."""

    trace: str
    trace_hash: str
    rows: pd.DataFrame
    plots: dict[str, bytes]  # file name -> PNG
    incomplete: list[str]


def write_leaderboard(root: Path, out: Path) -> list[Path]:
    """Read every run under ``root`` and write the leaderboard files into ``out``; return their paths."""
    boards = [trace_board(trace, list(group)) for trace, group in groupby(find_runs(root), key=lambda r: r.trace)]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = {"leaderboard.csv": pd.concat([b.rows for b in boards]).to_csv(index=False).encode()}
    files["leaderboard.md"] = markdown(boards).encode()
    files["index.html"] = render_page(f"driftbench leaderboard: {root}", [section(b) for b in boards]).encode()
    for board in boards:
        files.update(board.plots)
    for name, content in files.items():
        atomic_write(out / name, lambda fh, content=content: fh.write(content))
    return [out / name for name in files]


def trace_board(trace: str, records: list[RunRecord]) -> TraceBoard:
    """Rank one trace's methods and draw its plots; runs of differing trace hashes are refused."""
    hashes = {r.trace_hash: r for r in records}
    if len(hashes) > 1:
        a, b = list(hashes.values())[:2]
        raise ConfigError(
            f"runs of trace {trace!r} have different trace hashes: {a.trace_hash[:12]} ({a.path}) and "
            f"{b.trace_hash[:12]} ({b.path}); keep runs of one trace version per runs folder"
        )
    incomplete = [str(r.path) for r in records if r.summary is None]
    for path in incomplete:
        log.warning("%s: %s; left out of the leaderboard", path, INCOMPLETE)
    reference = {r.seed: r.summary for r in records if r.method == REFERENCE and r.summary is not None}
    by_method = groupby(sorted(records, key=lambda r: r.method), key=lambda r: r.method)
    rows = ranked([method_row(method, list(group), reference) for method, group in by_method])
    rows.insert(0, "trace_hash", records[0].trace_hash)
    rows.insert(0, "trace", trace)
    done = [r for r in records if r.summary is not None]
    events = [e.round for e in done[0].summary.recovery] if done and done[0].summary is not None else []
    curves = seed_mean_curves(done)
    plots = {f"{trace}-accuracy.png": accuracy_plot(trace, curves, events)} if curves else {}
    ari = ari_plot(trace, curves, events)
    if ari is not None:
        plots[f"{trace}-ari.png"] = ari
    return TraceBoard(trace, records[0].trace_hash, rows, plots, incomplete)


def method_row(method: str, records: list[RunRecord], reference: dict[int, Summary]) -> dict[str, Any]:
    """One method's numbers over its complete runs (seeds); speed-ups against FedAvg's run of the same seed."""
    summaries = [r.summary for r in records if r.summary is not None]
    events = [e for s in summaries for e in s.recovery]
    gains = [speedup(summary_tta(reference.get(s.seed)), s.time_to_accuracy) for s in summaries]
    accuracy = [s.final_accuracy for s in summaries]
    statuses = pd.Series([r.status for r in records]).value_counts()
    return {
        "method": method,
        "oracle": any(s.oracle for s in summaries),
        "seeds": len(summaries),
        "final_accuracy_mean": mean(accuracy),
        "final_accuracy_std": float(np.std(accuracy, ddof=1)) if len(accuracy) > 1 else None,
        "tta_speedup": geometric_mean(gains),
        "mean_drop": mean(e.drop for e in events),
        "rounds_to_recover": mean(e.rounds_to_recover for e in events),
        "recovered_events": sum(e.rounds_to_recover is not None for e in events),
        "events": len(events),
        "delta_permille": mean(e.delta_permille for e in events),
        "ari_mean": mean(s.ari_mean for s in summaries),
        "cluster_seconds": mean(s.overhead.cluster_seconds for s in summaries),
        "overhead_bytes": mean(s.overhead.upload_bytes + s.overhead.download_bytes for s in summaries),
        "client_extra_passes": mean(s.overhead.client_extra_passes for s in summaries),
        "runs": ", ".join(f"{n} {status}" for status, n in statuses.items()),
    }


def mean(values: Any) -> float | None:
    """Mean of the values that are not None; None when there are none."""
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def geometric_mean(values: list[float | None]) -> float | None:
    """Geometric mean of the values that are not None; None when there are none."""
    kept = [v for v in values if v is not None]
    return float(gmean(kept)) if kept else None


def ranked(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Methods with results by descending final accuracy and ranked; then oracles and methods without results, unranked."""
    table = pd.DataFrame(rows)
    competing = (~table["oracle"]) & table["final_accuracy_mean"].notna()
    ranked_part = table[competing].sort_values("final_accuracy_mean", ascending=False, kind="stable")
    rest = table[~competing].sort_values(["oracle", "final_accuracy_mean"], ascending=False, kind="stable")
    ranks = pd.array(list(range(1, len(ranked_part) + 1)) + [None] * len(rest), dtype="Int64")
    table = pd.concat([ranked_part, rest], ignore_index=True)
    table.insert(0, "rank", ranks)
    return table


def display_rows(rows: pd.DataFrame) -> list[dict[str, str]]:
    """The table as text cells under the headers of ``HEADERS``."""
    out = []
    for row in rows.to_dict("records"):
        std = row["final_accuracy_std"]
        cells = {
            "rank": "-" if pd.isna(row["rank"]) else str(row["rank"]),
            "method": row["method"] + (" (oracle)" if row["oracle"] else ""),
            "seeds": str(row["seeds"]),
            "final_accuracy_mean": _num(row["final_accuracy_mean"], "{:.3f}") + ("" if _missing(std) else f" ± {std:.3f}"),
            "tta_speedup": _num(row["tta_speedup"], "{:.2f}x"),
            "mean_drop": _num(row["mean_drop"], "{:.3f}"),
            "rounds_to_recover": _num(row["rounds_to_recover"], "{:.1f}"),
            "recovered": f"{row['recovered_events']}/{row['events']}",
            "delta_permille": _num(row["delta_permille"], "{:.0f}"),
            "ari_mean": _num(row["ari_mean"], "{:.3f}"),
            "cluster_seconds": _num(row["cluster_seconds"], "{:.2f}"),
            "overhead_mb": _num(None if _missing(row["overhead_bytes"]) else row["overhead_bytes"] / 1e6, "{:.3g}"),
            "client_extra_passes": _num(row["client_extra_passes"], "{:.0f}"),
            "runs": row["runs"],
        }
        out.append({HEADERS[k]: v for k, v in cells.items()})
    return out


def _missing(value: Any) -> bool:
    return value is None or bool(pd.isna(value))


def _num(value: Any, fmt: str) -> str:
    return "-" if _missing(value) else fmt.format(value)


def markdown(boards: list[TraceBoard]) -> str:
    """leaderboard.md: one section per trace with its table, plots and left-out runs."""
    parts = ["# driftbench leaderboard", ""]
    for board in boards:
        parts += [
            f"## {board.trace}",
            "",
            f"trace hash `{board.trace_hash[:12]}`",
            "",
            markdown_table(display_rows(board.rows)),
            "",
        ]
        parts += [f"![{name}]({name})" for name in board.plots] + [""]
        parts += [f"- {path}: {INCOMPLETE}" for path in board.incomplete]
    return "\n".join(parts).rstrip() + "\n"


def markdown_table(rows: list[dict[str, str]]) -> str:
    """A GitHub-flavoured Markdown table of text rows."""
    headers = list(rows[0])
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(row[h].replace("|", "\\|") for h in headers) + " |" for row in rows]
    return "\n".join(lines)


def section(board: TraceBoard) -> Section:
    """The HTML page's section for one trace."""
    notes = [f"{path}: {INCOMPLETE}" for path in board.incomplete]
    return Section(board.trace, f"trace hash {board.trace_hash[:12]}", display_rows(board.rows), board.plots, notes)
