"""The matrix's ranking: per kind of drift and overall, the methods' mean ranks in final accuracy, Friedman's test and
Nemenyi's critical difference (``autorank``), and which methods the evidence does not separate.

A (trace, seed) pair enters only where every ranked method has a run of it (the pairs some method
lacks are left out, and named), so that the methods are compared on the same data draws. A block
is then a trace (each method's final accuracy averaged over the trace's seeds kept) where a group
keeps at least ``MIN_BLOCKS`` traces, as Demšar's procedure ranks classifiers over data sets; a
kind of drift with fewer ranks over the (trace, seed) pairs instead, each seed of a named trace
drawing its own data, so that its test speaks for these traces' draws rather than for other traces
of the kind. The oracle is an upper bound, not ranked. Methods are tied where the Friedman test
finds no difference, or, where it does, where their mean ranks differ by less than the critical
difference (with two methods, where Wilcoxon's two-sided signed-rank test finds none). The
critical-difference diagram is drawn only where Friedman's test finds a difference. A group with
fewer than two methods or ``MIN_BLOCKS`` blocks gets no test and says why.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

from driftbench.errors import ConfigError
from driftbench.evaluation.matrix.cells import seed_text

ALPHA = 0.05
MIN_BLOCKS = 5  # autorank refuses fewer samples
OVERALL = "all"
TRACE_BLOCKS, SEED_BLOCKS = "traces", "trace x seed"
RANK_COLUMNS = ("group", "method", "mean_rank", "tied_with", "blocks", "block_unit", "test", "pvalue", "critical_difference")


@dataclass(frozen=True)
class Ranking:
    """One group's ranking: its methods by mean rank (best first), the test, and what was left out or why none was run."""

    group: str  # a kind of drift, or OVERALL
    table: pd.DataFrame  # RANK_COLUMNS, one row per method; empty without a test
    note: str  # blocks or methods left out, or why there is no test
    result: Any = None  # autorank's RankResult, for its critical-difference diagram; None without a test

    @property
    def diagram(self) -> bool:
        """Whether the ranking has a critical-difference diagram: Nemenyi's test (three methods or more) after Friedman's
        test found a difference."""
        return self.result is not None and self.result.posthoc == "nemenyi" and bool(self.result.pvalue < ALPHA)


def rankings(runs: pd.DataFrame, kinds: list[str]) -> list[Ranking]:
    """The overall ranking, then one per kind of drift in ``kinds``, of the complete runs ``runs`` (``cells.RUN_COLUMNS``)."""
    ranked = runs[~runs["oracle"].astype(bool)]
    return [rank_group(OVERALL, ranked)] + [rank_group(kind, ranked[ranked["drift"] == kind]) for kind in kinds]


def rank_group(group: str, runs: pd.DataFrame) -> Ranking:
    """Rank the methods of ``runs`` over traces, or over (trace, seed) pairs where too few traces have every method's run."""
    pairs = runs.pivot_table(index=["trace", "seed"], columns="method", values="final_accuracy")
    complete = pairs.dropna()
    note = left_out(pairs.index.difference(complete.index))
    if complete.index.get_level_values("trace").nunique() >= MIN_BLOCKS:
        unit, blocks = TRACE_BLOCKS, complete.groupby(level="trace").mean()
    else:
        unit, blocks = SEED_BLOCKS, complete
    if blocks.shape[1] < 2 or len(blocks) < MIN_BLOCKS:
        why = (
            f"no test: {blocks.shape[1]} method(s) on {len(blocks)} complete {unit} block(s); Friedman's test "
            f"(autorank) needs at least 2 methods and {MIN_BLOCKS} blocks"
        )
        return Ranking(group, pd.DataFrame(columns=list(RANK_COLUMNS)), "; ".join(filter(None, [why, note])))
    result = autorank_quietly(blocks)
    return Ranking(group, rank_table(group, result, len(blocks), unit), note, result)


def left_out(pairs: pd.Index) -> str:
    """What was left out for lack of some method's run: the (trace, seed) ``pairs``, by trace; "" without any."""
    seeds: dict[str, list[int]] = {}
    for trace, seed in pairs:
        seeds.setdefault(str(trace), []).append(int(seed))
    named = ", ".join(f"{trace} ({seed_text(kept)})" for trace, kept in seeds.items())
    return f"left out, for lack of some method's run: {named}" if named else ""


def autorank_module() -> Any:
    """The ``autorank`` package (the ``matrix`` extra), or a one-line error saying how to install it."""
    try:
        import autorank
    except ImportError:
        raise ConfigError("the matrix's ranking needs autorank: pip install 'driftbench[matrix]'") from None
    return autorank


def autorank_quietly(blocks: pd.DataFrame) -> Any:
    """autorank's nonparametric ranking (higher accuracy ranks first), without the lines and warnings it prints; with two
    methods its p is Wilcoxon's two-sided (autorank's own is one-sided, in the direction the medians pick)."""
    autorank = autorank_module().autorank
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = autorank(blocks, alpha=ALPHA, force_mode="nonparametric", order="descending")
        except ValueError as exc:
            raise ConfigError(f"the matrix's ranking: autorank refused {blocks.shape} blocks x methods ({exc})") from None
        if result.omnibus != "wilcoxon":
            return result
        return result._replace(pvalue=float(wilcoxon(blocks.iloc[:, 0], blocks.iloc[:, 1]).pvalue))


def rank_table(group: str, result: Any, blocks: int, unit: str) -> pd.DataFrame:
    """The methods by mean rank with the ones each is tied with, from autorank's ``result``."""
    ranks = result.rankdf["meanrank"].astype(float).sort_values(kind="stable")
    separated = bool(np.isfinite(result.pvalue) and result.pvalue < ALPHA)
    cd = float(result.cd) if result.cd is not None else None
    rows = []
    for method, rank in ranks.items():
        tied = [
            str(other)
            for other, their in ranks.items()
            if other != method and not (separated and (cd is None or abs(rank - their) >= cd))
        ]
        rows.append((group, str(method), float(rank), ", ".join(tied), blocks, unit, result.omnibus, float(result.pvalue), cd))
    return pd.DataFrame(rows, columns=list(RANK_COLUMNS))


def ranking_frame(found: list[Ranking]) -> pd.DataFrame:
    """Every group's table, stacked: the ranking's CSV."""
    tables = [r.table for r in found if not r.table.empty]
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=list(RANK_COLUMNS))
