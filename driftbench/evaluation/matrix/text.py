"""The matrix in Markdown: where its runs come from, the share of the room per method and trace, every cell's numbers,
the rankings, and the glossary; ``report`` and the docs page put the same pieces together."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from driftbench.evaluation.leaderboard.write import interval_text, markdown_table, reached_text, readable, seconds
from driftbench.evaluation.matrix.cells import CONTAINS_ZERO, NO_ROOM, ORACLE, ROOM, ROOM_MEAN, Matrix, no_room, room_frame
from driftbench.evaluation.matrix.ranking import ALPHA, MIN_BLOCKS, OVERALL, SEED_BLOCKS, Ranking
from driftbench.evaluation.paired import CONFIDENCE
from driftbench.record.summarize import REFERENCE
from driftbench.traces.catalog import DRIFT_KINDS

GLOSSARY = {
    "share of the room": f"(method - {REFERENCE}) / ({ORACLE} - {REFERENCE}) in final accuracy: the ratio of the mean "
    f"differences over the seeds where all three ran (one trace hash each), [{CONFIDENCE:.0%} Fieller interval, paired by "
    f"seed]; 0 is {REFERENCE}, 1 the {ORACLE}; ≈ marks a share whose set contains 0 (the paired t-test of method - "
    f"{REFERENCE} does not reject 0: not distinguishable from {REFERENCE}), bounded or not; unbounded: the room itself is "
    f"not distinguishable from 0 at these seeds; no room: the {ORACLE} does not beat {REFERENCE} (the mean of {ORACLE} - "
    f"{REFERENCE} over these seeds is not above 0), so there is no share",
    "final accuracy": "mean client accuracy over the last tenth of the evaluations; mean ± std over seeds",
    "post-drift": "mean accuracy over every evaluation at or after the first drift event, mean over seeds (- without events)",
    "recovery": "drift events recovered / events with a drop, summed over seeds, and the mean rounds to recover them",
    "TTA speed-up": f"{REFERENCE}'s simulated time to its target / the method's, geometric mean over the seeds where both "
    f"reached it [{CONFIDENCE:.0%} interval]; the target is {REFERENCE}'s plateau less two noise bands (docs/record.md)",
    "reached": "seeds that reached the target / seeds with one (n.d.: not distinguishable from it)",
    "time to target": "simulated seconds to the target, mean over the seeds that reached it",
    "overhead": "MB per run clients exchange beyond training, and the server's clustering seconds (simulated clock)",
    "note": "why a cell lacks runs: not run yet; incomplete (config.json but no summary.json: crashed or still running); "
    "diverged (counted with the accuracy it reached)",
    "mean rank": "the method's rank in final accuracy (1 best) averaged over the blocks: traces (each method's mean over "
    f"the trace's seeds every method ran), or (trace, seed) pairs where fewer than {MIN_BLOCKS} traces have every "
    "method's run",
    "not separated from": f"methods the evidence does not separate from this one: all of them when Friedman's test finds "
    f"no difference (p >= {ALPHA}); else those whose mean ranks differ by less than Nemenyi's critical difference (two "
    f"methods: where Wilcoxon's two-sided signed-rank test finds no difference, p >= {ALPHA})",
}


def source_text(matrix: Matrix, where: str) -> str:
    """A paragraph: the runs (``runs_text``) and how many cells lack runs."""
    lacking = f"{int((matrix.cells['status'] != 'ok').sum())} of the {len(matrix.cells)} cells"
    return f"{runs_text(matrix, where)} {lacking} lack some or all of their runs (their note says why)."


def runs_text(matrix: Matrix, where: str) -> str:
    """A sentence: how many complete runs in ``where``, of how many methods and traces, at which seeds and commits."""
    runs, cells = matrix.runs, matrix.cells
    commits = ", ".join(sorted(str(c)[:7] if c else "unknown" for c in set(runs["commit"]))) or "-"
    seeds = ", ".join(str(s) for s in sorted(set(runs["seed"]))) or "-"
    return (
        f"{len(runs)} complete runs in `{where}`: {cells['method'].nunique()} methods on {cells['trace'].nunique()} traces, "
        f"seeds {seeds}, at commit {commits}."
    )


def kinds_text(kinds: dict[str, str]) -> str:
    """The kinds of drift of ``kinds`` (trace -> its kind), each with its traces and what drifts there."""
    lines = []
    for kind in dict.fromkeys(kinds.values()):
        names = ", ".join(f"`{trace}`" for trace, its in kinds.items() if its == kind)
        lines.append(f"- **{kind}** ({names}): {DRIFT_KINDS.get(kind, 'not a named trace of the catalog')}")
    return "\n".join(lines) + "\n"


def trace_kinds(cells: pd.DataFrame) -> dict[str, str]:
    """Each trace of the cells and its kind of drift, in the cells' order."""
    return dict(zip(cells["trace"], cells["drift"]))


def share_text(row: dict[str, Any], short: bool = False) -> str:
    """A cell's share of the room: "0.85 [0.70, 1.02]", "≈ " first where its set contains 0; only the value if ``short``;
    ``NO_ROOM`` ("no room" if ``short``) where the oracle does not beat FedAvg."""
    value = row[ROOM]
    if value is None or not np.isfinite(value):
        if row["status"] == "not run":
            return "not run"
        return ("no room" if short else NO_ROOM) if no_room(row[ROOM_MEAN]) else "-"
    if row["method"] in (REFERENCE, ORACLE):
        return f"{value:.0f}"
    low, high = row[f"{ROOM}_low"], row[f"{ROOM}_high"]
    mark = "≈ " if row[CONTAINS_ZERO] else ""
    if short:
        return f"{mark}{value:.2f}"
    if math.isinf(low):
        return f"{mark}{value:.2f} ({'1 seed' if row[f'{ROOM}_seeds'] < 2 else 'unbounded'})"
    return f"{mark}{value:.2f} [{low:.2f}, {high:.2f}]"


def room_table(cells: pd.DataFrame) -> str:
    """Methods x traces (headed by their kind of drift), each cell its share of the room, short."""
    shares = room_frame(cells)
    rows = cells.set_index(["method", "trace"])
    kinds = dict(zip(cells["trace"], cells["drift"]))
    table = [
        {"method": str(method)}
        | {f"{trace} ({kinds[trace]})": share_text({**rows.loc[(method, trace)], "method": method}, True) for trace in shares}
        for method in shares.index
    ]
    return markdown_table(table)


def cell_rows(cells: pd.DataFrame) -> list[dict[str, str]]:
    """Every cell's numbers as text (a cell without runs: its note)."""
    out = []
    for row in cells.to_dict("records"):
        ran = row["seeds"] > 0
        std = "" if missing(row["final_accuracy_std"]) else f" ± {row['final_accuracy_std']:.3f}"
        megabytes = row["overhead_bytes"] / 1e6 if ran and not missing(row["overhead_bytes"]) else None
        recovery = f"{row['recovered_events']}/{row['dropped_events']}" if ran else "-"
        if ran and not missing(row["rounds_to_recover"]):
            recovery += f" in {row['rounds_to_recover']:.1f} rounds"
        out.append(
            {
                "trace": row["trace"],
                "method": row["method"] + (" (oracle)" if row["oracle"] else ""),
                "seeds": str(row["seeds"]),
                "final accuracy": f"{row['final_accuracy_mean']:.3f}{std}" if ran else "-",
                "share of the room": share_text(row),
                "post-drift": number(row["post_drift_accuracy"], "{:.3f}"),
                "recovery": recovery,
                "TTA speed-up": interval_text(row, "tta_log_speedup", lambda v: f"{np.exp(v):.2f}x") if ran else "-",
                "reached": reached_text(row) if ran else "-",
                "time to target": "-" if missing(row["tta_seconds"]) else f"{seconds(row['tta_seconds'])} s",
                "overhead": "-" if megabytes is None else f"{readable(megabytes)} MB, {seconds(row['cluster_seconds'])} s",
                "note": row["note"] or "-",
            }
        )
    return out


def ranking_markdown(found: list[Ranking], image: Callable[[Ranking], str | None]) -> str:
    """Each group's ranking: its test, its methods by mean rank with those not separated from each, its diagram's image
    (the path ``image`` gives it, or none), and what was left out or why there is no test."""
    parts = []
    for ranking in found:
        title = "every trace" if ranking.group == OVERALL else f"drift: {ranking.group}"
        if ranking.table.empty:
            parts += [f"**{title}**: {ranking.note}.", ""]
            continue
        first = ranking.table.iloc[0]
        unit = "(trace, seed) pairs" if first["block_unit"] == SEED_BLOCKS else "traces"
        cd = "" if missing(first["critical_difference"]) else f", critical difference {first['critical_difference']:.2f}"
        friedman = first["test"] == "friedman"
        test = "Friedman's test" if friedman else "Wilcoxon's signed-rank test (two-sided)"
        parts += [f"**{title}**: {first['blocks']} {unit}; {test} p = {pvalue(first['pvalue'])}{cd}.", ""]
        rows = [
            {"mean rank": f"{r['mean_rank']:.2f}", "method": r["method"], "not separated from": r["tied_with"] or "-"}
            for r in ranking.table.to_dict("records")
        ]
        parts += [markdown_table(rows), ""]
        path = image(ranking)
        parts += [f"![{title}: critical-difference diagram]({path})", ""] if path else []
        if friedman and not ranking.diagram:
            parts += [f"No critical-difference diagram: Friedman's test finds no difference (p >= {ALPHA}), so all tie.", ""]
        parts += [f"{ranking.note[0].upper()}{ranking.note[1:]}.", ""] if ranking.note else []
    return "\n".join(parts).rstrip() + "\n"


def glossary_markdown() -> str:
    """The glossary as a Markdown list."""
    return "\n".join(f"- **{term}**: {text}" for term, text in GLOSSARY.items()) + "\n"


def pvalue(value: float) -> str:
    """A p-value for reading; "-" where the test had none (every value alike)."""
    if missing(value):
        return "- (every value alike)"
    return f"{value:.2g}" if value >= 0.001 else "< 0.001"


def number(value: Any, fmt: str) -> str:
    """``value`` formatted, "-" where missing."""
    return "-" if missing(value) else fmt.format(value)


def missing(value: Any) -> bool:
    """Whether a cell value is absent (None or NaN)."""
    return value is None or bool(pd.isna(value))
