"""Judging, pure: each claim's verdict from plain per-seed scores, Holm and magnitude over a look, and the two looks."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from driftbench.reproduce.claim import Claim, Premise
from driftbench.reproduce.effects import Values, ours_effect, paper_effect, seed_effects
from driftbench.reproduce.metrics import metric_spec
from driftbench.reproduce.verdict import (
    ALPHA,
    DIRECTION_ONLY,
    INCONCLUSIVE,
    INVALID_PREMISE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNTESTABLE,
    Effect,
    Test,
    adjusted,
    holm,
    level,
    magnitude,
    one_sided_p,
    test,
    tost_p,
)

COLLAPSE = "collapse_without_drift"  # the degeneracy flag every claim's implicit premise rules out
SeedValues = Mapping[int, Mapping[str, float | None]]  # seed -> method -> a metric's value there (None: the run has none)
Flags = Mapping[int, Mapping[str, tuple[str, ...]]]  # seed -> method -> its run's degeneracy flags


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
    """A claim's verdict, why, driftbench's figure, its p-value and its effect beside the paper's."""

    claim: Claim
    verdict: str
    reason: str
    figure: str = "-"
    p: float | None = None  # the test's p-value, before Holm (None: no test was made)
    ours: float | None = None  # driftbench's effect in the paper's unit (a ratio for speed-ups)
    paper: float | None = None  # the paper's effect
    excluded: str | None = None  # why the paper's effect is excluded (verdict.Effect), where it is
    seeds: tuple[int, ...] = ()  # the seeds the claim was judged on
    effect: Effect | None = None  # our effect at each seed, in the paper's unit (None: no effect to compare)

    @property
    def ratio(self) -> float | None:
        """Our effect over the paper's; None without both."""
        if self.ours is None or self.paper is None or self.paper == 0:
            return None
        return self.ours / self.paper


def judge(scored: Sequence[Scored], second: tuple[int, ...] = (), again: Sequence[Scored] = ()) -> list[ClaimResult]:
    """The claims' verdicts from their scores, in their order: pure, the same verdicts for the same arguments.

    Nothing is read but the arguments, plain numbers (``ClaimScores``, which ``scoring`` reads off the runs), so
    scores archived from a report judge again to the verdicts ``run.reproduce`` gave.

    ``scored``: each claim with its scores at the first stage's seeds, or why it is untestable. ``second``: the seeds
    of a second stage, declared before it runs: both looks then test at Pocock's level (``VERDICT_RULE``). ``again``:
    the claims the first look left open (``open_claims``) scored on the seeds of both stages; without it, the verdicts
    are the first look's.
    """
    alpha = level(2 if second else 1)
    first = [judge_claim(claim, scores, alpha) for claim, scores in scored]
    results = finalize(first, alpha)
    if not again:
        return results
    return second_look(results, first, [judge_claim(claim, scores, alpha) for claim, scores in again], second)


def open_claims(results: Sequence[ClaimResult]) -> list[Claim]:
    """The claims a second stage runs again: tested, inconclusive at the first look, and not literal twins."""
    return [r.claim for r in results if r.verdict == INCONCLUSIVE and r.p is not None and not r.claim.literal]


def judge_claim(claim: Claim, scores: ClaimScores | str, alpha: float = ALPHA) -> ClaimResult:
    """The claim's test from its scores (a str: why it is untestable), before Holm and magnitude (``finalize``).

    Premises first (every claim's implicit one: no run flagged ``collapse_without_drift``, whose numbers come from a
    defect, not the method), then the paired test at level ``alpha``.
    """
    if isinstance(scores, str):
        return ClaimResult(claim, UNTESTABLE, scores)
    values = compared_values(claim, scores.values)
    if isinstance(values, str):
        return ClaimResult(claim, UNTESTABLE, values)
    shown, paper, effect = figure(claim, values), paper_effect(claim), seed_effects(claim, values)
    untested = ClaimResult(claim, INVALID_PREMISE, "", shown, paper=paper, seeds=scores.seeds, effect=effect)
    unmet = premises_failure(claim, scores)
    if unmet:
        return replace(untested, reason=unmet)
    never = unreached(claim, scores.reached)
    if never:
        return replace(untested, verdict=NOT_REPRODUCED, reason=never)
    result = claim_test(claim, values, effect, alpha)
    ours = ours_effect(claim, values)
    return replace(untested, verdict=result.verdict, reason=result.reason, p=result.p, ours=ours, excluded=result.excluded)


def compared_values(claim: Claim, values: SeedValues) -> dict[str, list[float]] | str:
    """Each compared method's values in seed order, or which run has none and why."""
    compared: dict[str, list[float]] = {m: [] for m in claim.methods}
    for seed, by_method in sorted(values.items()):
        for method in claim.methods:
            value = by_method[method]
            if value is None:
                return f"{method}, seed {seed}: {metric_spec(claim.metric).missing}"
            compared[method].append(value)
    return compared


def claim_test(claim: Claim, values: Values, effect: Effect | None, alpha: float) -> Test:
    """The paired test of the claim's per-seed statistic (TOST for "A = B within X") at level ``alpha``."""
    seeds = len(values[claim.methods[0]])
    statistics = [claim.direction.statistic({m: v[i] for m, v in values.items()}) for i in range(seeds)]
    if claim.direction.relation == "=":
        a, b = claim.methods
        p = tost_p(np.subtract(values[a], values[b]), claim.direction.margin)
    else:
        p = one_sided_p(statistics)
    return test(statistics, p, effect, alpha)


def premises_failure(claim: Claim, scores: ClaimScores) -> str | None:
    """Why the first failing premise fails, the implicit one (no collapse without drift) first; None if all hold."""
    collapsed = first_flagged(scores.flags, (COLLAPSE,))
    if collapsed:
        method, _, seed = collapsed
        return f"premise 'no run collapses without drift' fails: {method} at seed {seed}"
    failures = (premise_failure(p, values, scores.flags) for p, values in zip(claim.premises, scores.premises, strict=True))
    return next((why for why in failures if why), None)


def first_flagged(flags: Flags, only: tuple[str, ...] | None = None) -> tuple[str, tuple[str, ...], int] | None:
    """The first run (by seed) with a degeneracy flag, among ``only`` if given: (method, its flags, seed); None if none."""
    for seed, by_method in sorted(flags.items()):
        for method, flagged in by_method.items():
            if flagged and (only is None or set(only) & set(flagged)):
                return method, flagged, seed
    return None


def premise_failure(premise: Premise, values: SeedValues, flags: Flags) -> str | None:
    """Why the premise fails on these values (its metric's) or flags, with the failing value; None when it holds."""
    if premise.metric is None:
        flagged = first_flagged(flags)
        if flagged is None:
            return None
        method, found, seed = flagged
        return f"premise {premise.text!r} fails: {method} {'+'.join(found)} at seed {seed}"
    assert premise.direction is not None
    means: dict[str, float] = {}
    for method in premise.methods:
        seen = [by[method] for _, by in sorted(values.items())]
        if any(v is None for v in seen):
            return f"premise {premise.text!r} has no value: {method}: {metric_spec(premise.metric).missing}"
        means[method] = float(np.mean([v for v in seen if v is not None]))
    if premise.direction.statistic(means) >= 0:
        return None
    spec = metric_spec(premise.metric)
    return f"premise {premise.text!r} fails: " + ", ".join(f"{m} {spec.fmt.format(v)}" for m, v in means.items())


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


def finalize(results: Sequence[ClaimResult], alpha: float = ALPHA) -> list[ClaimResult]:
    """Holm over each paper's tested claims (its driftbench claims and literal twins apart) at ``alpha``, then magnitude."""
    families: dict[tuple[str, bool, bool], list[int]] = {}
    for i, result in enumerate(results):
        if result.p is not None:
            c = result.claim
            families.setdefault((c.paper, c.kind == "driftbench", c.literal), []).append(i)
    done = list(results)
    for members in families.values():
        for i, p_holm in zip(members, holm([results[i].p or 0.0 for i in members])):
            r = results[i]
            checked = adjusted(Test(r.verdict, r.reason, r.p or 0.0, r.excluded), p_holm, len(members), alpha)
            verdict = checked.verdict
            if verdict == REPRODUCED and not magnitude(r.ours, r.paper, r.claim.bound):
                verdict = DIRECTION_ONLY
            done[i] = replace(r, verdict=verdict, reason=checked.reason)
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
    final = finalize([later[r.claim.key] if r.claim.key in looked else r for r in first], level(2))
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
