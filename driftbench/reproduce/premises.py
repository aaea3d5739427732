"""Premises: whether a claim's premises and its runs' flags void it (invalid premise), and what shows beside its verdict."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from driftbench.evaluation.paired import paired_interval
from driftbench.reproduce.claim import Claim, Direction, Premise
from driftbench.reproduce.metrics import metric_spec

COLLAPSE = "collapse_without_drift"  # the degeneracy flag every claim's implicit premise rules out
IMPLICIT = Premise("no run collapses without drift", None)  # every claim's premise, checked first
SeedValues = Mapping[int, Mapping[str, float | None]]  # seed -> method -> a metric's value there (None: the run has none)
Flags = Mapping[int, Mapping[str, tuple[str, ...]]]  # seed -> method -> its run's degeneracy flags


@dataclass(frozen=True)
class Findings:
    """What a claim's premises and flags say: why it is not judged (None: it is), and what shows beside its verdict."""

    void: str | None = None
    shown: tuple[str, ...] = ()


def findings(claim: Claim, flags: Flags, premises: tuple[SeedValues, ...]) -> Findings:
    """The implicit premise first (no run collapses without drift), then the claim's premises in order (``premises``:
    each one's metric for the methods it compares, empty for ``none degenerate``); the first that voids the claim wins."""
    shown: list[str] = []
    for premise, values in [(IMPLICIT, {}), *zip(claim.premises, premises, strict=True)]:
        void, seen = flag_check(claim, premise, flags) if premise.metric is None else metric_check(premise, values)
        if void:
            return Findings(void, tuple(dict.fromkeys(shown)))
        shown += seen
    return Findings(None, tuple(dict.fromkeys(shown)))


def voids(claim: Claim, method: str, flag: str) -> bool:
    """Whether a run's flag voids the claim: on a method other than the claimed ones (``Claim.claimed``), or a collapse
    under a metric read from the run's own level before a drift (``Metric.healthy``); else the claim measures it."""
    return method not in claim.claimed or (flag == COLLAPSE and metric_spec(claim.metric).healthy)


def flag_check(claim: Claim, premise: Premise, flags: Flags) -> tuple[str | None, list[str]]:
    """A premise on the runs' flags (``IMPLICIT``: collapses only; ``none degenerate``: every flag): why the first run whose
    flags void the claim does, else None; and the flags of the claimed methods shown instead, one per method and flag."""
    only = (COLLAPSE,) if premise is IMPLICIT else None
    seen: dict[tuple[str, str], list[int]] = {}
    for seed, by_method in sorted(flags.items()):
        for method, flagged in by_method.items():
            relevant = [f for f in flagged if only is None or f in only]
            voiding = [f for f in relevant if voids(claim, method, f)]
            if voiding:
                return f"premise {premise.text!r} fails: {method} {'+'.join(voiding)} at seed {seed}", []
            for flag in relevant:
                seen.setdefault((method, flag), []).append(seed)
    claimed = "the claimed method's own behaviour, which the claim measures"
    return None, [f"{m} {f} at seed {', '.join(map(str, s))} ({claimed})" for (m, f), s in seen.items()]


def metric_check(premise: Premise, values: SeedValues) -> tuple[str | None, list[str]]:
    """A premise on a metric's seed means: why the seeds exclude it, else None; and, where the means miss it without the
    seeds excluding it, that note to show beside the verdict."""
    metric = premise.metric
    assert metric is not None and premise.direction is not None
    seen: dict[str, list[float]] = {}
    for method in premise.methods:
        found = [by[method] for _, by in sorted(values.items())]
        if any(v is None for v in found):
            return f"premise {premise.text!r} has no value: {method}: {metric_spec(metric).missing}", []
        seen[method] = [float(v) for v in found if v is not None]
    means = {m: float(np.mean(v)) for m, v in seen.items()}
    if premise.direction.statistic(means) >= 0:
        return None, []
    spec = metric_spec(metric)
    shown = ", ".join(f"{m} {spec.fmt.format(v)}" for m, v in means.items())
    if excluded(premise.direction, seen):
        return f"premise {premise.text!r} fails: {shown}", []
    return None, [f"premise {premise.text!r} missed on the seed means ({shown}), not excluded by the seeds"]


def excluded(direction: Direction, seen: Mapping[str, list[float]]) -> bool:
    """Whether the seeds exclude a premise's relation: the 95% interval of its statistic's mean lies below 0, or, for
    "within X", that of the mean difference lies outside -X to X (one seed excludes nothing)."""
    a, b = (np.asarray(seen[m], dtype=float) for m in direction.methods)
    if direction.relation == "=":
        difference = paired_interval(a - b)
        assert difference is not None  # a claim is judged on at least one seed
        return difference.low > direction.margin or difference.high < -direction.margin
    statistic = paired_interval([direction.statistic(dict(zip(direction.methods, pair))) for pair in zip(a, b)])
    assert statistic is not None
    return statistic.high < 0
