"""Scoring: a claim's runs read into the plain per-seed numbers that judging takes (``judging.ClaimScores``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from driftbench.record.schema import Summary
from driftbench.record.scores import reaches, run_rows
from driftbench.reproduce.claim import Claim, Premise
from driftbench.reproduce.judging import ClaimScores, Scored, SeedValues
from driftbench.reproduce.metrics import Context, metric_spec
from driftbench.reproduce.planning import RunKey, Setting
from driftbench.runner import NOT_RECORDED, RunOutcome

Summaries = Mapping[int, Mapping[str, Summary]]  # seed -> method -> its run's summary


def score_outcomes(
    claims: Sequence[Claim],
    seeds: tuple[int, ...],
    scale: str,
    untestable: Mapping[str, str],
    outcomes: Mapping[RunKey, RunOutcome],
) -> list[Scored]:
    """Each claim with its scores at ``seeds`` from the runs' outcomes, or why it has none (``untestable``, a run missing)."""
    return [(claim, outcome_scores(claim, seeds, scale, untestable, outcomes)) for claim in claims]


def outcome_scores(
    claim: Claim,
    seeds: tuple[int, ...],
    scale: str,
    untestable: Mapping[str, str],
    outcomes: Mapping[RunKey, RunOutcome],
) -> ClaimScores | str:
    """The claim's scores at ``seeds`` from its runs' outcomes (and its no-drift twins'), or why it has none."""
    if claim.key in untestable:
        return untestable[claim.key]
    setting = Setting.of(claim, scale)
    found = claim_summaries(claim, setting, seeds, outcomes, claim.run_methods)
    twins = claim_summaries(claim, setting.twin(claim), seeds, outcomes, claim.methods) if claim.twin else {}
    if isinstance(found, str):
        return found
    if isinstance(twins, str):
        return twins
    return score_claim(claim, found, twins)


def claim_summaries(
    claim: Claim, setting: Setting, seeds: tuple[int, ...], outcomes: Mapping[RunKey, RunOutcome], methods: Sequence[str]
) -> dict[int, dict[str, Summary]] | str:
    """The claim's runs of ``methods`` in ``setting``, seed -> method -> summary, or why one is missing (failed or diverged)."""
    summaries: dict[int, dict[str, Summary]] = {}
    for seed in seeds:
        for method in methods:
            outcome = outcomes[(setting, claim.method_run(method), seed)]
            if outcome.state == NOT_RECORDED:
                return f"run {outcome.label} not recorded yet (--recorded runs nothing)"
            if outcome.summary is None:
                return f"run {outcome.label} failed: {outcome.error}"
            if outcome.summary.status != "ok":
                return f"run {outcome.label} {outcome.summary.status} at round {outcome.summary.diverged_round}"
            summaries.setdefault(seed, {})[method] = outcome.summary
    return summaries


def score_claim(claim: Claim, summaries: Summaries, twins: Summaries | None = None) -> ClaimScores:
    """What judging reads of a claim's runs (``summaries``, every method of ``claim.run_methods`` at every seed;
    ``twins`` its no-drift twins): its metric per compared method, each premise's, every run's flags, reaching."""
    twins = twins or {}
    ordered = sorted(summaries.items())
    return ClaimScores(
        values={
            seed: {m: metric_value(claim, claim.metric, m, by, twins.get(seed, {})) for m in claim.methods}
            for seed, by in ordered
        },
        flags={seed: {m: summary.degenerate for m, summary in by.items()} for seed, by in ordered},
        premises=tuple(premise_values(claim, premise, summaries) for premise in claim.premises),
        reached=reached(claim, summaries),
    )


def metric_value(
    claim: Claim, metric: str, method: str, summaries: Mapping[str, Summary], twins: Mapping[str, Summary]
) -> float | None:
    """A metric of one method's run at one seed; ``summaries`` and ``twins`` hold that seed's runs and no-drift twins."""
    context = Context(summaries[claim.target] if claim.target else None, twins.get(method))
    value = metric_spec(metric).read(summaries[method], context)
    return None if value is None else float(value)


def premise_values(claim: Claim, premise: Premise, summaries: Summaries) -> SeedValues:
    """A premise's metric for the methods it compares, seed -> method -> value (none for ``none degenerate``)."""
    if premise.metric is None:
        return {}
    metric = premise.metric
    return {seed: {m: metric_value(claim, metric, m, by, {}) for m in premise.methods} for seed, by in sorted(summaries.items())}


def reached(claim: Claim, summaries: Summaries) -> dict[int, bool]:
    """Seed -> whether the method a time-to-accuracy claim says is faster reaches the target's final accuracy."""
    faster, target = claim.faster, claim.target
    if faster is None or target is None:
        return {}
    return {seed: reaches(run_rows(by[faster]), by[target].final_accuracy) for seed, by in sorted(summaries.items())}
