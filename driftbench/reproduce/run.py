"""``driftbench reproduce``: plan the runs the claims need, run them through the sweep, judge each claim.

A claim names a trace and its ``--set`` overrides, the methods it compares, a metric, the
paper's figure as published and a direction (``claims``). The claims' runs go through the sweep
(``driftbench.runner``): a trace, method and seed is one run however many claims use it,
finished runs are skipped and interrupted ones resume. Each claim gets a verdict (``verdict``)
and a row in the report (``report``).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from driftbench.errors import DriftbenchError
from driftbench.methods import catalog as method_catalog
from driftbench.methods.aggregators import PREFIX as FLOWER
from driftbench.methods.aggregators import load_strategy
from driftbench.record.schema import Summary
from driftbench.reproduce.claims import Claim, metric_spec
from driftbench.reproduce.verdict import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, UNTESTABLE, judge
from driftbench.runner import Execution, PoolOptions, Request, RunJob, RunOutcome, check_trace, plan_jobs, run_pool

log = logging.getLogger("driftbench")
COLLAPSE = "collapse_without_drift"


@dataclass(frozen=True)
class Setting:
    """A trace with its overrides (and scale): the runs of every claim on it share one folder."""

    trace: str
    sets: tuple[tuple[str, str], ...]

    @staticmethod
    def of(claim: Claim, scale: str) -> Setting:
        """The setting a claim runs in at ``scale``."""
        sets = {**claim.sets, **({"scale": scale} if scale != "embedded" else {})}
        return Setting(claim.trace, tuple(sorted(sets.items())))

    def folder(self, out: Path) -> Path:
        """The runs' root: ``out`` for a trace's defaults, ``out/<trace>+<key=value,...>`` for other settings."""
        if not self.sets:
            return out
        return out / re.sub(r"[^\w.=,+-]", "_", f"{self.trace}+" + ",".join(f"{k}={v}" for k, v in self.sets))

    def request(self, methods: Sequence[str], seeds: tuple[int, ...]) -> Request:
        """The runner's request for these methods and seeds."""
        return Request({self.trace: {"scale": "embedded", **dict(self.sets)}}, tuple(methods), seeds)


RunKey = tuple[Setting, str, int]  # setting, method, seed


@dataclass(frozen=True)
class Plan:
    """The runs the claims need, per setting, and the claims that cannot be tested with the reason."""

    jobs: dict[Setting, list[RunJob]]
    untestable: dict[str, str]  # claim key -> reason

    @property
    def runs(self) -> int:
        """Distinct runs planned."""
        return sum(len(jobs) for jobs in self.jobs.values())

    def waves(self) -> list[list[Setting]]:
        """Settings in groups that share no trace name, as one sweep's run folders and FedAvg targets go by trace name."""
        by_trace: dict[str, list[Setting]] = {}
        for setting in self.jobs:
            by_trace.setdefault(setting.trace, []).append(setting)
        depth = max((len(group) for group in by_trace.values()), default=0)
        return [[group[i] for group in by_trace.values() if i < len(group)] for i in range(depth)]


def untestable_reason(claim: Claim, scale: str) -> str | None:
    """Why the claim cannot be run (a missing method or variant, flwr for one, an unknown trace or scale); None if it can."""
    known = method_catalog.catalog()
    absent = [m for m in claim.runs if m not in known and not m.startswith(FLOWER)]
    if absent:
        return f"method {absent[0]!r} is not in methods/ (driftbench list methods)"
    try:
        for name in claim.runs:
            load_strategy(method_catalog.load_method(name).params)
        check_trace(claim.trace, dict(Setting.of(claim, scale).sets))
    except DriftbenchError as exc:
        return " ".join(str(exc).split())
    return None


def plan(claims: Sequence[Claim], seeds: tuple[int, ...], scale: str, execution: Execution) -> Plan:
    """The runs the claims need, one per setting, method and seed, planned by the runner (FedAvg first)."""
    untestable: dict[str, str] = {}
    needs: dict[Setting, list[str]] = {}
    for claim in claims:
        reason = untestable_reason(claim, scale)
        if reason:
            untestable[claim.key] = reason
        else:
            needs.setdefault(Setting.of(claim, scale), []).extend(claim.runs)
    jobs = {
        setting: plan_jobs(
            setting.request(list(dict.fromkeys(methods)), seeds), replace(execution, out=setting.folder(execution.out))
        )
        for setting, methods in needs.items()
    }
    return Plan(jobs, untestable)


def execute_plan(runs: Plan, pool: PoolOptions) -> dict[RunKey, RunOutcome]:
    """Run every planned job through the sweep, one wave of settings at a time; each run's outcome."""
    outcomes: dict[RunKey, RunOutcome] = {}
    for wave in runs.waves():
        keyed = [((setting, job.method, job.seed), job) for setting in wave for job in runs.jobs[setting]]
        outcomes.update(zip([key for key, _ in keyed], run_pool([job for _, job in keyed], pool)))
    return outcomes


@dataclass(frozen=True)
class ClaimResult:
    """A claim's verdict, why, and driftbench's figure."""

    claim: Claim
    verdict: str
    reason: str
    figure: str = "-"


def metric_value(claim: Claim, summary: Summary, runs: Mapping[str, Summary]) -> float | None:
    """The claim's metric for one run; ``runs`` holds the same seed's runs (the time-to-accuracy target's among them)."""
    value = metric_spec(claim.metric).read(summary, runs[claim.target] if claim.target else None)
    return None if value is None else float(value)


def evaluate(claim: Claim, runs: Mapping[int, Mapping[str, Summary]]) -> ClaimResult:
    """The claim's verdict from its runs: seed -> method -> summary (every method of ``claim.runs`` at every seed).

    A run flagged ``collapse_without_drift`` makes the claim untestable: its numbers come from a defect, not the method.
    """
    for seed, by_method in sorted(runs.items()):
        for method, summary in by_method.items():
            if COLLAPSE in summary.degenerate:
                return ClaimResult(claim, UNTESTABLE, f"{method}, seed {seed}: degenerate run ({COLLAPSE})")
    values: dict[str, list[float]] = {m: [] for m in claim.methods}
    for seed, by_method in sorted(runs.items()):
        for method in claim.methods:
            value = metric_value(claim, by_method[method], by_method)
            if value is None:
                return ClaimResult(claim, UNTESTABLE, f"{method}, seed {seed}: {metric_spec(claim.metric).missing}")
            values[method].append(value)
    statistics = [claim.direction.statistic({m: v[i] for m, v in values.items()}) for i in range(len(runs))]
    verdict, reason = judge(statistics)
    return ClaimResult(claim, verdict, reason, figure(claim, values))


def figure(claim: Claim, values: Mapping[str, list[float]]) -> str:
    """driftbench's figure: the metric, each method's mean +/- std over seeds; for a time-to-accuracy pair, the speed-up."""
    spec = metric_spec(claim.metric)

    def spread(v: list[float]) -> str:
        shown = [spec.shown(x) for x in v]
        mean = spec.fmt.format(float(np.mean(shown)))
        return f"{mean} ± {spec.fmt.format(float(np.std(shown, ddof=1)))}" if len(v) > 1 else mean

    target = f" (time to {claim.target}'s final accuracy)" if claim.target else ""
    text = f"{claim.metric}{target}: " + "; ".join(f"{m} {spread(v)}" for m, v in values.items())
    if claim.target and len(claim.methods) == 2:
        a, b = claim.methods
        ratio = math.exp(float(np.mean(np.subtract(values[a], values[b]))))  # values are -ln(time)
        text += f"; {a} over {b} {ratio:.2f}x (geometric mean)"
    return text


def claim_runs(
    claim: Claim, setting: Setting, seeds: tuple[int, ...], outcomes: Mapping[RunKey, RunOutcome]
) -> dict[int, dict[str, Summary]] | str:
    """The claim's runs, seed -> method -> summary, or why one is missing (failed or diverged)."""
    runs: dict[int, dict[str, Summary]] = {}
    for seed in seeds:
        for method in claim.runs:
            outcome = outcomes[(setting, method, seed)]
            if outcome.summary is None:
                return f"run {outcome.label} failed: {outcome.error}"
            if outcome.summary.status != "ok":
                return f"run {outcome.label} {outcome.summary.status} at round {outcome.summary.diverged_round}"
            runs.setdefault(seed, {})[method] = outcome.summary
    return runs


@dataclass(frozen=True)
class Report:
    """What ``reproduce`` found: one result per claim, the runs behind them and how long it took."""

    results: list[ClaimResult]
    seeds: tuple[int, ...]
    scale: str
    outcomes: list[RunOutcome] = field(default_factory=list)
    seconds: float = 0.0

    def headline(self) -> str:
        """Seeds, scale, runs and wall time, and the verdict counts, on one line."""
        states = [o.state for o in self.outcomes]
        verdicts = [r.verdict for r in self.results]
        counts = ", ".join(f"{verdicts.count(v)} {v}" for v in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, UNTESTABLE))
        return (
            f"{len(self.results)} claims: {counts}. Seeds {', '.join(map(str, self.seeds))}, scale {self.scale}; "
            f"{len(states)} runs ({states.count('ran')} ran, {states.count('skipped')} up to date, "
            f"{states.count('failed')} failed) in {self.seconds / 60:.1f} min wall."
        )


def reproduce(claims: Sequence[Claim], seeds: tuple[int, ...], scale: str, pool: PoolOptions, execution: Execution) -> Report:
    """Run what the claims need (skipping finished runs) and judge each claim."""
    started = time.perf_counter()
    runs = plan(claims, seeds, scale, execution)
    log.info("reproduce: %d claims, %d runs in %d settings", len(claims), runs.runs, len(runs.jobs))
    outcomes = execute_plan(runs, pool)
    results = []
    for claim in claims:
        if claim.key in runs.untestable:
            results.append(ClaimResult(claim, UNTESTABLE, runs.untestable[claim.key]))
            continue
        found = claim_runs(claim, Setting.of(claim, scale), seeds, outcomes)
        results.append(ClaimResult(claim, UNTESTABLE, found) if isinstance(found, str) else evaluate(claim, found))
    return Report(results, seeds, scale, list(outcomes.values()), time.perf_counter() - started)
