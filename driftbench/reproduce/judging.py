"""Judging, pure: each claim's verdict from plain per-seed scores, Holm and the decision table over a look, and two looks."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from driftbench.reproduce.claim import Claim
from driftbench.reproduce.effects import Values, logged, paper_effect, ratio_effect, seed_effects, tested
from driftbench.reproduce.metrics import metric_spec
from driftbench.reproduce.premises import Flags, findings
from driftbench.reproduce.premises import SeedValues as SeedValues  # scoring builds ClaimScores from it
from driftbench.reproduce.verdict import (
    ALPHA,
    DECISIONS,
    DETERMINISTIC,
    INCONCLUSIVE,
    INVALID_PREMISE,
    NOT_REPRODUCED,
    UNTESTABLE,
    Effect,
    Evidence,
    holm,
    judged,
    level,
    one_sided_p,
    one_value,
    relative,
    tost_p,
)


@dataclass(frozen=True)
class ClaimScores:
    """A claim's runs as judging reads them, already scored: plain numbers and flags per seed and method.

    ``values``: the claim's metric for each method it compares; ``flags``: every run's degeneracy flags (each method
    the claim runs, in its order); ``premises``: for each of the claim's premises in order, its metric for the methods
    it compares (empty for ``none degenerate``); ``reached``: for a time-to-accuracy claim, whether the method claimed
    faster (``Claim.faster``) reaches the target's final accuracy.
    """

    values: SeedValues
    flags: Flags
    premises: tuple[SeedValues, ...] = ()
    reached: Mapping[int, bool] = field(default_factory=dict)  # seed -> reached

    @property
    def seeds(self) -> tuple[int, ...]:
        """The seeds scored, in order."""
        return tuple(sorted(self.values))


Scored = tuple[Claim, ClaimScores | str]  # a claim and its scores, or why it has none (untestable)


@dataclass(frozen=True)
class ClaimResult:
    """A claim's verdict, why, driftbench's figure, the evidence it was tested on and its effect beside the paper's."""

    claim: Claim
    verdict: str
    reason: str
    figure: str = "-"
    ours: float | None = None  # driftbench's effect in the paper's unit (a ratio for ratio effects: geometric mean)
    paper: float | None = None  # the paper's effect
    seeds: tuple[int, ...] = ()  # the seeds the claim was judged on
    effect: Effect | None = None  # our effect at each seed, in the paper's unit (None: no effect to compare)
    evidence: Evidence | None = None  # its statistic and p-value (None: no test was made)
    shown: tuple[str, ...] = ()  # flags and premises shown beside the verdict, which void nothing (``premises``)
    decision: str | None = None  # the decision table's row (``DECISIONS``) that gave a tested claim its verdict
    holds: bool | None = None  # a deterministic claim: whether it holds at its one value (None: not deterministic)

    @property
    def p(self) -> float | None:
        """The test's p-value, before Holm; None where no test was made."""
        return None if self.evidence is None else self.evidence.p

    @property
    def ratio(self) -> float | None:
        """Our effect over the paper's (of the logs, for ratio effects: ``verdict.relative``); None without both."""
        return relative(self.ours, self.paper, ratio_effect(self.claim))


def judge(scored: Sequence[Scored], second: tuple[int, ...] = (), again: Sequence[Scored] = ()) -> list[ClaimResult]:
    """The claims' verdicts from their scores, in their order: pure, the same verdicts for the same arguments.

    Nothing is read but the arguments, plain numbers (``ClaimScores``, which ``scoring`` reads off the runs), so
    scores archived from a report judge again to the verdicts ``run.reproduce`` gave.

    ``scored``: each claim with its scores at the first stage's seeds, or why it is untestable. ``second``: the seeds
    of a second stage, declared before it runs: each claim with two looks then tests at Pocock's level at both
    (``VERDICT_RULE``). ``again``: the claims the first look left open (``open_claims``) scored on the seeds of both
    stages; without it, the verdicts are the first look's.
    """
    stages = 2 if second else 1
    first = [judge_claim(claim, scores, level(looks(claim, stages))) for claim, scores in scored]
    results = finalize(first, stages)
    if not again:
        return results
    return second_look(results, first, [judge_claim(claim, scores, level(2)) for claim, scores in again], second)


def looks(claim: Claim, stages: int) -> int:
    """How many looks a claim gets in a report of ``stages`` stages: one for a literal twin, which is never run again."""
    return 1 if claim.literal else stages


def open_claims(results: Sequence[ClaimResult]) -> list[Claim]:
    """The claims a second stage runs again: tested, inconclusive at the first look, and not literal twins."""
    return [r.claim for r in results if r.verdict == INCONCLUSIVE and r.evidence is not None and not r.claim.literal]


def judge_claim(claim: Claim, scores: ClaimScores | str, alpha: float = ALPHA) -> ClaimResult:
    """The claim's verdict from its scores (a str: why it is untestable), alone at level ``alpha`` (before Holm).

    Premises and flags first (``premises.findings``), then reaching the target, one value, and the paired test.
    """
    if isinstance(scores, str):
        return ClaimResult(claim, UNTESTABLE, scores)
    values = compared_values(claim, scores.values)
    if isinstance(values, str):
        return ClaimResult(claim, UNTESTABLE, values)
    effect, found = seed_effects(claim, values), findings(claim, scores.flags, scores.premises)
    text, paper = figure(claim, values), paper_effect(claim)
    untested = ClaimResult(claim, INVALID_PREMISE, "", text, paper=paper, seeds=scores.seeds, effect=effect, shown=found.shown)
    if found.void:
        return replace(untested, reason=found.void)
    never = unreached(claim, scores.reached)
    if never:
        return replace(untested, verdict=NOT_REPRODUCED, reason=never)
    measured = replace(untested, ours=None if effect is None else effect.interval().mean)
    statistics, series = claim_statistics(claim, values)
    if one_value(series):
        reason = deterministic(claim, values, statistics)
        return replace(measured, verdict=DETERMINISTIC, reason=reason, holds=statistics[0] > 0)
    p = tost_p(series, claim.direction.margin) if claim.direction.relation == "=" else one_sided_p(statistics)
    evidence = Evidence(tuple(statistics), p)
    decision, reason = judged(evidence, effect, alpha)
    return replace(measured, verdict=DECISIONS[decision].verdict, reason=reason, evidence=evidence, decision=decision)


def compared_values(claim: Claim, values: SeedValues) -> dict[str, list[float]] | str:
    """Each compared method's values in seed order, or which run has none (or, for a ratio, none above 0) and why."""
    compared: dict[str, list[float]] = {m: [] for m in claim.methods}
    for seed, by_method in sorted(values.items()):
        for method in claim.methods:
            value = by_method[method]
            if value is None:
                return f"{method}, seed {seed}: {metric_spec(claim.metric).missing}"
            if logged(claim) and not value > 0:
                return f"{method}, seed {seed}: {claim.metric} {value:.3g}, where a ratio effect needs values above 0"
            compared[method].append(value)
    return compared


def claim_statistics(claim: Claim, values: Values) -> tuple[list[float], np.ndarray]:
    """The claim's statistic at each seed (``Direction.statistic`` on the tested scale: logs for a ratio effect), and
    the series its test reads: the statistics, or for "A = B within X" the differences A - B."""
    scaled = tested(claim, values)
    seeds = len(values[claim.methods[0]])
    statistics = [claim.direction.statistic({m: float(v[i]) for m, v in scaled.items()}) for i in range(seeds)]
    if claim.direction.relation != "=":
        return statistics, np.asarray(statistics)
    a, b = claim.methods
    return statistics, scaled[a] - scaled[b]


def deterministic(claim: Claim, values: Values, statistics: Sequence[float]) -> str:
    """Why a claim is ``DETERMINISTIC``: its compared runs give the same value at every seed, or its statistic does."""
    holds = "holds" if statistics[0] > 0 else "does not hold"
    per_seed = list(zip(*(values[m] for m in claim.methods)))
    if all(len(set(seen)) == 1 for seen in per_seed):
        at = f"{claim.metric} {float(per_seed[0][0]):g} at every seed" if len(set(per_seed)) == 1 else ""
        why = f"{' and '.join(claim.methods)} give {at or f'equal {claim.metric} at each seed'}"
    else:
        why = f"the claim's statistic is {statistics[0]:+.3g} at every seed"
    return f"deterministic: one value: {why}, so the seeds are one measurement and no test applies; the claim {holds} at it"


def unreached(claim: Claim, reached: Mapping[int, bool]) -> str | None:
    """For a time-to-accuracy claim: the seeds at which the method claimed faster never reaches the target (no speed-up)."""
    if claim.faster is None:
        return None
    seeds = [seed for seed, did in sorted(reached.items()) if not did]
    if not seeds:
        return None
    return f"{claim.faster} never reaches {claim.target}'s final accuracy at seed {', '.join(map(str, seeds))}: no speed-up there"


def figure(claim: Claim, values: Values) -> str:
    """driftbench's figure: the metric, each method's mean +/- std over seeds; for a time-to-accuracy pair, the speed-up."""
    spec = metric_spec(claim.metric)

    def spread(v: Sequence[float]) -> str:
        shown = [spec.shown(x) for x in v]
        mean = spec.fmt.format(float(np.mean(shown)))
        return f"{mean} ± {spec.fmt.format(float(np.std(shown, ddof=1)))}" if len(v) > 1 else mean

    target = f" (time to {claim.target}'s final accuracy)" if claim.target else ""
    text = f"{claim.metric}{target}: " + "; ".join(f"{claim.method_run(m).label} {spread(v)}" for m, v in values.items())
    if claim.target and len(claim.methods) == 2:
        a, b = claim.methods
        ratio = math.exp(float(np.mean(np.subtract(values[a], values[b]))))  # values are -ln(time)
        text += f"; {a} over {b} {ratio:.2f}x (geometric mean)"
    return text


def finalize(results: Sequence[ClaimResult], stages: int = 1) -> list[ClaimResult]:
    """Holm over each paper's tested claims (its driftbench claims and literal twins apart), then the decision table at
    each claim's level in a report of ``stages`` stages (``looks``)."""
    families: dict[tuple[str, bool, bool], list[int]] = {}
    for i, result in enumerate(results):
        if result.evidence is not None:
            c = result.claim
            families.setdefault((c.paper, c.kind == "driftbench", c.literal), []).append(i)
    done = list(results)
    for members in families.values():
        evidence = [results[i].evidence for i in members]
        for i, p_holm in zip(members, holm([e.p for e in evidence if e is not None])):
            r = results[i]
            assert r.evidence is not None
            alpha = level(looks(r.claim, stages))
            decision, reason = judged(r.evidence, r.effect, alpha, (p_holm, len(members)))
            done[i] = replace(r, verdict=DECISIONS[decision].verdict, reason=reason, decision=decision)
    return done


def second_look(
    results: Sequence[ClaimResult], first: Sequence[ClaimResult], again: Sequence[ClaimResult], second: tuple[int, ...]
) -> list[ClaimResult]:
    """The verdicts after the second look (``again``: the open claims judged on every seed, before Holm).

    Holm over each family holds every claim's last look (``first`` for the claims decided at the first, whose
    ``results`` stand); an open claim whose second stage has no runs keeps its first verdict, saying why.
    """
    later = {r.claim.key: r for r in again}
    looked = {key for key, r in later.items() if r.verdict != UNTESTABLE}
    final = finalize([later[r.claim.key] if r.claim.key in looked else r for r in first], 2)
    missing = f"second stage (seeds {seed_range(second)})"
    return [
        final[i]
        if r.claim.key in looked
        else replace(r, reason=f"{r.reason}; {missing}: {later[r.claim.key].reason}")
        if r.claim.key in later
        else r
        for i, r in enumerate(results)
    ]


def seed_range(seeds: Sequence[int]) -> str:
    """``5-9`` for consecutive seeds, else ``1, 4, 7``."""
    ordered = sorted(seeds)
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}-{ordered[-1]}"
    return ", ".join(map(str, ordered))
