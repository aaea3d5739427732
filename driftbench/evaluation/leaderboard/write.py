"""The leaderboard's files: text cells under their headers, the glossary, Markdown, CSV, plots and the HTML page."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from driftbench.atomic import atomic_write
from driftbench.engine.clock import SERVER_FLOPS_PER_SECOND
from driftbench.evaluation.comparison import method_label
from driftbench.evaluation.html_page import Image, Links, Section, render_page
from driftbench.evaluation.leaderboard.aggregate import SORT_COLUMNS, TraceBoard, trace_boards
from driftbench.evaluation.matrix.cells import covers_room, read_matrix
from driftbench.evaluation.matrix.figures import HEATMAP_CAPTION, heatmap_png
from driftbench.evaluation.paired import CONFIDENCE, Interval
from driftbench.evaluation.scorecard_view import DRIFT_GLOSSARY, DriftBoard, drift_display
from driftbench.methods.events import EVENT_KINDS
from driftbench.record.metrics import (
    COLLAPSE_FALL,
    COLLAPSE_SPAN,
    FINAL_FRACTION_DENOMINATOR,
    NOISE_FRACTION_DENOMINATOR,
    PRE_WINDOW,
    RECOVERY_TOLERANCE,
    SMOOTHING,
    SUSTAIN,
    TARGET_BANDS,
)
from driftbench.record.runs import INCOMPLETE
from driftbench.record.summarize import REFERENCE

HEADERS = {  # display column -> table header
    "rank": "rank",
    "method": "method",
    "seeds": "seeds",
    "final_accuracy_mean": "final accuracy",
    "vs_reference": f"vs {REFERENCE}",
    "tta_speedup": "TTA speed-up",
    "tta_reached": "reached",
    "mean_accuracy": "mean acc",
    "worst_interval_accuracy": "worst interval",
    "post_drift_accuracy": "post-drift",
    "mean_drop": "drop",
    "rounds_to_recover": "rounds to recover",
    "recovered": "recovered",
    "delta_permille": "delta ‰",
    "ari_mean": "ARI",
    "cluster_seconds": "cluster s",
    "overhead_mb": "extra MB",
    "client_extra_passes": "extra passes",
    "events_recluster_global": "re-clusterings",
    "events_move": "moves",
    "other_events": "other events",
    "degenerate": "degenerate",
    "runs": "runs",
}
HEADLINE = {  # headline column -> header: what a reader compares first; the full table (HEADERS) follows
    "rank": "rank",
    "method": "method",
    "final_vs_reference": f"final accuracy (vs {REFERENCE})",
    "mean_accuracy": "mean acc",
    "worst_interval_accuracy": "worst interval",
    "tta_speedup": "TTA speed-up",
    "recovery": "recovery",
    "ari_mean": "ARI",
    "overhead": "overhead",
    "flags": "flags",
}
SHOWN_EVENTS = ("recluster_global", "move")  # event kinds with a column of their own; the rest share "other events"
TOLERANCE = f"{RECOVERY_TOLERANCE:g}"
GLOSSARY = {  # table header or term -> its meaning
    "rank": "position among the methods that compete by mean final accuracy, or by the column `driftbench leaderboard "
    "--sort` names (mean acc, worst interval, post-drift); oracles and methods without a complete run: -",
    "method": "the method; (oracle) marks an upper bound that knows every client's ground-truth group; it is not ranked; "
    "† marks a degenerate clustering or a collapse (see degenerate)",
    "seeds": "complete runs (one per seed) behind the numbers",
    f"final accuracy (vs {REFERENCE})": f"mean final accuracy over seeds, then (in brackets) its difference from {REFERENCE}'s "
    f"with the {CONFIDENCE:.0%} interval, as in the columns final accuracy and vs {REFERENCE} of the full table",
    "recovery": "drift events recovered / events with a drop (see recovered), and the mean rounds to recover them",
    "overhead": "extra MB and the server's clustering seconds per run (see extra MB and cluster s)",
    "flags": "what to read the row with: degenerate clusterings, seeds that reached the target at their first evaluation, "
    "and runs that diverged or are incomplete (see degenerate, reached and runs); - when none",
    "final accuracy": f"mean client accuracy over the last 1/{FINAL_FRACTION_DENOMINATOR} of evaluations (rounded up); "
    "mean +/- sample std over seeds",
    f"vs {REFERENCE}": f"final accuracy minus {REFERENCE}'s on the same seed: mean over seeds [{CONFIDENCE:.0%} t-interval, "
    f"paired by seed]; ≈ marks an interval that contains 0 (no difference shown)",
    "TTA speed-up": f"{REFERENCE}'s simulated time to the target / this method's; the target is {REFERENCE}'s plateau "
    f"(mean of its last 1/{NOISE_FRACTION_DENOMINATOR} of evaluations) less {TARGET_BANDS} of its noise bands (their std) "
    f"on the same seed; a run reaches it when its {SMOOTHING}-evaluation trailing mean holds it {SUSTAIN} evaluations "
    f"running; geometric mean over the seeds where both reached it [{CONFIDENCE:.0%} interval]; ≈ marks an interval that "
    "contains 1x",
    "reached": "seeds where the method reached the target / seeds; n.d.: seeds whose final accuracy is within the noise band "
    "of the target (not distinguishable: no speed-up is given for them); 1st eval: seeds that reached it at their first "
    "evaluation, where the speed-up is a lower bound set by the evaluation interval",
    "mean acc": "mean accuracy over every evaluation (prequential; the area under the accuracy curve per evaluation), "
    "mean over seeds",
    "worst interval": "the lowest mean accuracy over the intervals that the drift events cut the run into, mean over seeds",
    "post-drift": "mean accuracy over every evaluation at or after the first drift event, mean over seeds",
    "pre": f"mean accuracy of the last {PRE_WINDOW} evaluations before a drift event",
    "trough": "the lowest accuracy from the event to the next event (or the end): the event's interval",
    "post": f"mean accuracy of the interval's last {PRE_WINDOW} evaluations",
    "drop": "max(0, pre - trough), mean over drift events and seeds",
    "outcome": f"per event: no_baseline (no evaluation before it), no_drop (trough within {TOLERANCE} of pre), "
    f"recovered (back within {TOLERANCE} of pre inside the interval) or not_recovered",
    "rounds to recover": f"rounds from the event to the first evaluation after the trough within {TOLERANCE} of pre; "
    "mean over recovered events",
    "recovered": "k/n: events recovered over events that had a drop (recovered + not_recovered), summed over seeds",
    "delta ‰": "(pre - post) / pre x 1000, Fed-CM's delta; mean over events; negative: the interval ends above pre",
    "ARI": "adjusted Rand index of the method's clusters against the ground-truth groups, mean over the evaluations whose "
    "ground truth has >= 2 groups (only there is it defined), then over seeds",
    "cluster s": f"the server's clustering work per run on the simulated clock (counted FLOPs at "
    f"{SERVER_FLOPS_PER_SECOND / 1e9:g} GFLOP/s)",
    "extra MB": "MB (10^6 bytes) per run that clients upload and download beyond model training (queries, extra models)",
    "extra passes": "client passes over their data per run beyond training (answers to the method's queries)",
    "re-clusterings": f"global re-clusterings per run ({EVENT_KINDS['recluster_global']}), from events.csv",
    "moves": f"move events per run ({EVENT_KINDS['move']})",
    "other events": "the method's other events per run, by kind: "
    + "; ".join(f"{kind}: {meaning}" for kind, meaning in EVENT_KINDS.items() if kind not in SHOWN_EVENTS),
    "degenerate": "seeds at which a clustering method did nothing: one_cluster (one cluster at every evaluation), "
    "clustering_unchanged (a method designed to re-cluster whose partition of clients never changed from the first drift "
    "event on; a trace without events flags none); or at which a method collapsed: collapse_without_drift (between two trace "
    f"events, or after the last, the 3-evaluation trailing mean ends more than {COLLAPSE_FALL} below the highest it reached, "
    f"or {COLLAPSE_SPAN} evaluations in a row lie more than {COLLAPSE_FALL} below the highest reached by then, outside "
    "a fall from the segment's first evaluation that accuracy climbs back from: the method's start)",
    "runs": "run folders by status: ok, diverged (counted with the accuracy reached) or incomplete (left out)",
}
FULL_TABLE = "all columns"
PLOTS_NOTE = "Plots share one x axis, rounds; accuracy against simulated time is the second view."


def write_leaderboard(root: Path, out: Path, extra: Sequence[Section] = (), sort: str = "final") -> list[Path]:
    """Read every run under ``root`` and write the leaderboard files into ``out``; return their paths.

    ``extra`` sections (the paper-claims report) go on the page after the traces; ``sort``
    (a ``SORT_COLUMNS`` key) is the accuracy methods are ranked by.
    """
    boards = trace_boards(root, SORT_COLUMNS[sort])
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = {"leaderboard.csv": pd.concat([b.rows for b in boards]).to_csv(index=False).encode()}
    files["leaderboard.md"] = markdown(boards).encode()
    sections = [*matrix_sections(root), *(part for b in boards for part in (section(b, out), b.drift.section))]
    sections += [*extra, Section("Glossary", subtitle=PLOTS_NOTE, facts=GLOSSARY)]
    files["index.html"] = render_page("driftbench leaderboard", sections, intro=f"Run records under {root}.").encode()
    for board in boards:
        for plot in board.plots:
            files.update(plot.files)
        if board.drift.heatmap is not None:
            files.update(board.drift.heatmap.files)
    for name, content in files.items():
        atomic_write(out / name, lambda fh, content=content: fh.write(content))
    return [out / name for name in files]


def matrix_sections(root: Path) -> list[Section]:
    """The page's drift-matrix heatmap (``driftbench matrix``), where the runs hold FedAvg and the oracle on some trace."""
    cells = read_matrix(root).cells
    if not covers_room(cells):
        return []
    image = Image("Drift matrix: share of the oracle's room per method and trace", heatmap_png(cells))
    return [Section("Drift matrix", subtitle=HEATMAP_CAPTION + " driftbench matrix writes its numbers.", images=[image])]


def display_rows(rows: pd.DataFrame) -> list[dict[str, str]]:
    """The full table as text cells under the headers of ``HEADERS``."""
    return [{HEADERS[k]: v for k, v in cells.items() if k in HEADERS} for cells in row_cells(rows)]


def headline_rows(rows: pd.DataFrame) -> list[dict[str, str]]:
    """The headline table, at most ten columns, as text cells under the headers of ``HEADLINE``."""
    return [{HEADLINE[k]: cells[k] for k in HEADLINE} for cells in row_cells(rows)]


def row_cells(rows: pd.DataFrame) -> list[dict[str, str]]:
    """Every display column of each row as text, keyed by the names of ``HEADERS`` and ``HEADLINE``."""
    out = []
    for row in rows.to_dict("records"):
        std = row["final_accuracy_std"]
        final = _num(row["final_accuracy_mean"], "{:.3f}")
        vs_reference = interval_text(row, "vs_reference", lambda v: f"{v:+.3f}")
        recovered = f"{row['recovered_events']}/{row['dropped_events']}"
        cluster_seconds = None if _missing(row["cluster_seconds"]) else seconds(row["cluster_seconds"])
        megabytes = None if _missing(row["overhead_bytes"]) else row["overhead_bytes"] / 1e6
        overhead = ([] if megabytes is None else [f"{readable(megabytes)} MB"]) + (
            [] if cluster_seconds is None else [f"{cluster_seconds} s"]
        )
        cells = {
            "rank": "-" if pd.isna(row["rank"]) else str(row["rank"]),
            "method": method_label(row["method"], row["oracle"], bool(row["degenerate"])),
            "seeds": str(row["seeds"]),
            "final_accuracy_mean": final + ("" if _missing(std) else f" ± {std:.3f}"),
            "vs_reference": vs_reference,
            "final_vs_reference": final + ("" if vs_reference == "-" else f" ({vs_reference})"),
            "tta_speedup": interval_text(row, "tta_log_speedup", lambda v: f"{np.exp(v):.2f}x"),
            "tta_reached": reached_text(row),
            "mean_accuracy": _num(row["mean_accuracy"], "{:.3f}"),
            "worst_interval_accuracy": _num(row["worst_interval_accuracy"], "{:.3f}"),
            "post_drift_accuracy": _num(row["post_drift_accuracy"], "{:.3f}"),
            "mean_drop": _num(row["mean_drop"], "{:.3f}"),
            "rounds_to_recover": _num(row["rounds_to_recover"], "{:.1f}"),
            "recovered": recovered,
            "recovery": recovered + ("" if _missing(row["rounds_to_recover"]) else f" in {row['rounds_to_recover']:.1f} rounds"),
            "delta_permille": _num(row["delta_permille"], "{:.0f}"),
            "ari_mean": _num(row["ari_mean"], "{:.3f}"),
            "cluster_seconds": "-" if cluster_seconds is None else cluster_seconds,
            "overhead_mb": "-" if megabytes is None else readable(megabytes),
            "overhead": ", ".join(overhead) or "-",
            "client_extra_passes": _num(row["client_extra_passes"], "{:,.0f}"),
            **{f"events_{kind}": readable_or_dash(row[f"events_{kind}"]) for kind in SHOWN_EVENTS},
            "other_events": other_events(row),
            "degenerate": row["degenerate"] or "-",
            "runs": row["runs"],
            "flags": flags(row),
        }
        out.append(cells)
    return out


def readable(value: float) -> str:
    """A number for reading, never in exponent notation: three significant digits below 100, whole numbers above."""
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) < 0.001:
        return "< 0.001" if value > 0 else "> -0.001"
    return f"{value:.3g}"


def readable_or_dash(value: Any) -> str:
    """``readable`` of a value, "-" where it is missing."""
    return "-" if _missing(value) else readable(value)


def seconds(value: float) -> str:
    """Seconds for reading: two decimals below 10 s, one below 100 s, whole seconds above (no exponent)."""
    if value < 10:
        return f"{value:.2f}"
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def flags(row: dict[Any, Any]) -> str:
    """What to read a row with: degenerate clusterings, targets reached at the first evaluation, runs not ok; "-" if none."""
    notes = [row["degenerate"]] if row["degenerate"] else []
    notes += [f"{row['tta_first_evaluation']} at 1st eval"] if row["tta_first_evaluation"] else []
    notes += [part for part in row["runs"].split(", ") if not part.endswith(" ok")]
    return "; ".join(notes) or "-"


def interval_text(row: dict[Any, Any], name: str, fmt: Callable[[float], str]) -> str:
    """An interval column (a difference, or a log ratio) as "value [low, high]", "≈ " first where it contains 0."""
    if _missing(row[name]):
        return "-"
    interval = Interval(row[name], row[f"{name}_low"], row[f"{name}_high"], row[f"{name}_seeds"])
    if not np.isfinite(interval.low):
        return f"{fmt(interval.mean)} (1 seed)"
    return f"{'≈ ' if interval.contains(0.0) else ''}{fmt(interval.mean)} [{fmt(interval.low)}, {fmt(interval.high)}]"


def reached_text(row: dict[Any, Any]) -> str:
    """Seeds that reached the target over seeds with one, and how many were not distinguishable from it."""
    if not row["tta_runs"]:
        return "-"
    notes = [f"{row['tta_not_distinguishable']} n.d."] if row["tta_not_distinguishable"] else []
    notes += [f"{row['tta_first_evaluation']} at 1st eval"] if row["tta_first_evaluation"] else []
    return f"{row['tta_reached']}/{row['tta_runs']}" + (f" ({'; '.join(notes)})" if notes else "")


def _missing(value: Any) -> bool:
    return value is None or bool(pd.isna(value))


def _num(value: Any, fmt: str) -> str:
    return "-" if _missing(value) else fmt.format(value)


def other_events(row: dict[Any, Any]) -> str:
    """The per-run means of the event kinds without a column of their own, e.g. "split 1, merge 0.5"; "-" if none."""
    counts = {kind: row[f"events_{kind}"] for kind in EVENT_KINDS if kind not in SHOWN_EVENTS}
    return ", ".join(f"{kind} {readable(n)}" for kind, n in counts.items() if not _missing(n) and n > 0) or "-"


def markdown(boards: list[TraceBoard]) -> str:
    """leaderboard.md: per trace its settings, headline and full tables, plots (PNG and SVG), left-out runs; the glossary."""
    parts = ["# driftbench leaderboard", ""]
    for board in boards:
        settings = "; ".join(f"{name} `{value}`" for name, value in board.settings.items())
        parts += [f"## {board.trace}", "", settings, "", markdown_table(headline_rows(board.rows)), ""]
        parts += [f"### {board.trace}: {FULL_TABLE}", "", markdown_table(display_rows(board.rows)), ""]
        for plot in board.plots:
            parts += [f"![{plot.name}]({plot.name}.png)", "", f"*{plot.caption}* ([SVG]({plot.name}.svg))", ""]
        parts += [f"- {path}: {INCOMPLETE}" for path in board.incomplete] + [""]
        parts += drift_markdown(board.drift)
    parts += ["## Glossary", "", PLOTS_NOTE, ""] + [f"- **{term}**: {text}" for term, text in GLOSSARY.items()]
    return "\n".join(parts).rstrip() + "\n"


def drift_markdown(drift: DriftBoard) -> list[str]:
    """leaderboard.md lines of a trace's drift scorecard: its table and heatmap (PNG, linking the SVG); none without runs."""
    if drift.rows.empty:
        return []
    lines = [f"### {drift.trace}: drift scorecard", "", markdown_table(drift_display(drift.rows)), ""]
    if drift.heatmap is not None:
        plot = drift.heatmap
        lines += [f"![{plot.name}]({plot.name}.png)", "", f"*{plot.caption}* ([SVG]({plot.name}.svg))", ""]
    return lines + [f"- **{term}**: {text}" for term, text in DRIFT_GLOSSARY.items()] + [""]


def markdown_table(rows: list[dict[str, str]]) -> str:
    """A GitHub-flavoured Markdown table of text rows."""
    headers = list(rows[0])
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(row[h].replace("|", "\\|") for h in headers) + " |" for row in rows]
    return "\n".join(lines)


def section(board: TraceBoard, out: Path) -> Section:
    """The HTML page's section for one trace; links to run folders are relative to the page's folder ``out`` (runs read
    from an archive have no folder: no links)."""
    folders = groupby((r for r in board.records if r.path.is_dir()), key=lambda r: r.method)
    links = {method: {f"seed{r.seed}": folder_href(r.path, out) for r in runs} for method, runs in folders}
    return Section(
        board.trace,
        rows=headline_rows(board.rows),
        more_rows=(FULL_TABLE, display_rows(board.rows)),
        images=[Image(p.caption, p.png, f"{p.name}.svg") for p in board.plots],
        notes=[f"{path}: {INCOMPLETE}" for path in board.incomplete],
        facts=board.settings,
        links=Links("Run folders", links) if links else None,
    )


def folder_href(folder: Path, out: Path) -> str:
    """A link to a run folder: relative to ``out`` where one exists (same drive), else a file URI."""
    try:
        return Path(os.path.relpath(folder.resolve(), out.resolve())).as_posix() + "/"
    except ValueError:
        return folder.resolve().as_uri() + "/"
