"""Scoring: a claim's runs read into the plain per-seed numbers that judging takes (``judging.ClaimScores``).

A run is read through its record (``record.runs.RunRecord``), from its folder or an archive alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from driftbench.record.runs import RunRecord
from driftbench.record.schema import Summary
from driftbench.record.scores import reaches
from driftbench.reproduce.claim import Claim, Premise
from driftbench.reproduce.judging import ClaimScores, Scored, SeedValues
from driftbench.reproduce.metrics import Context, metric_spec
from driftbench.reproduce.planning import RunKey, Setting
from driftbench.runner import NOT_RECORDED, RunOutcome

Runs = Mapping[int, Mapping[str, RunRecord]]  # seed -> method -> its finished run's record


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
    found = claim_runs(claim, setting, seeds, outcomes, claim.run_methods)
    twins = claim_runs(claim, setting.twin(claim), seeds, outcomes, claim.methods) if claim.twin else {}
    if isinstance(found, str):
        return found
    if isinstance(twins, str):
        return twins
    return score_claim(claim, found, twins)


def claim_runs(
    claim: Claim, setting: Setting, seeds: tuple[int, ...], outcomes: Mapping[RunKey, RunOutcome], methods: Sequence[str]
) -> dict[int, dict[str, RunRecord]] | str:
    """The claim's runs of ``methods`` in ``setting``, seed -> method -> record, or why one is missing (failed or diverged)."""
    runs: dict[int, dict[str, RunRecord]] = {}
    for seed in seeds:
        for method in methods:
            outcome = outcomes[(setting, claim.method_run(method), seed)]
            if outcome.state == NOT_RECORDED:
                return f"run {outcome.label} not recorded yet (--recorded runs nothing)"
            if outcome.record is None or outcome.record.summary is None:
                return f"run {outcome.label} failed: {outcome.error}"
            if outcome.record.summary.status != "ok":
                summary = outcome.record.summary
                return f"run {outcome.label} {summary.status} at round {summary.diverged_round}"
            runs.setdefault(seed, {})[method] = outcome.record
    return runs


def score_claim(claim: Claim, runs: Runs, twins: Runs | None = None) -> ClaimScores:
    """What judging reads of a claim's runs (``runs``, finished, every method of ``claim.run_methods`` at every seed;
    ``twins`` its no-drift twins): its metric per compared method, each premise's, every run's flags, reaching."""
    twins = twins or {}
    ordered = sorted(runs.items())
    return ClaimScores(
        values={
            seed: {m: metric_value(claim, claim.metric, m, by, twins.get(seed, {})) for m in claim.methods}
            for seed, by in ordered
        },
        flags={seed: {m: finished(record).degenerate for m, record in by.items()} for seed, by in ordered},
        premises=tuple(premise_values(claim, premise, runs) for premise in claim.premises),
        reached=reached(claim, runs),
    )


def finished(record: RunRecord) -> Summary:
    """A scored run's summary (scoring is given finished runs only)."""
    assert record.summary is not None  # claim_runs keeps finished runs
    return record.summary


def metric_value(
    claim: Claim, metric: str, method: str, runs: Mapping[str, RunRecord], twins: Mapping[str, RunRecord]
) -> float | None:
    """A metric of one method's run at one seed; ``runs`` and ``twins`` hold that seed's runs and no-drift twins."""
    twin = twins.get(method)
    target = finished(runs[claim.target]) if claim.target else None
    context = Context(target, None if twin is None else finished(twin), runs[method].rounds)
    value = metric_spec(metric).read(finished(runs[method]), context)
    return None if value is None else float(value)


def premise_values(claim: Claim, premise: Premise, runs: Runs) -> SeedValues:
    """A premise's metric for the methods it compares, seed -> method -> value (none for ``none degenerate``)."""
    if premise.metric is None:
        return {}
    metric = premise.metric
    return {seed: {m: metric_value(claim, metric, m, by, {}) for m in premise.methods} for seed, by in sorted(runs.items())}


def reached(claim: Claim, runs: Runs) -> dict[int, bool]:
    """Seed -> whether the method a time-to-accuracy claim says is faster reaches the target's final accuracy."""
    faster, target = claim.faster, claim.target
    if faster is None or target is None:
        return {}
    return {seed: reaches(by[faster].rounds(), finished(by[target]).final_accuracy) for seed, by in sorted(runs.items())}
