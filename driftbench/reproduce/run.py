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
from driftbench.record.scores import reaches, run_rows
from driftbench.record.summarize import REFERENCE
from driftbench.reproduce.claim import CALIBRATION_TOLERANCE, UNITS, Claim, MethodRun, Premise
from driftbench.reproduce.metrics import Context, metric_spec
from driftbench.reproduce.verdict import (
    ALPHA,
    DIRECTION_ONLY,
    INCONCLUSIVE,
    INVALID_PREMISE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNTESTABLE,
    VERDICTS,
    Effect,
    Test,
    adjusted,
    holm,
    least_effect,
    level,
    magnitude,
    one_sided_p,
    test,
    tost_p,
)
from driftbench.runner import (
    NOT_RECORDED,
    Execution,
    PoolOptions,
    Request,
    RunJob,
    RunOutcome,
    check_trace,
    plan_jobs,
    run_pool,
)

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

    def twin(self, claim: Claim) -> Setting:
        """The claim's no-drift twin of this setting: its overrides and the claim's ``twin`` overrides."""
        assert claim.twin is not None
        return Setting(self.trace, tuple(sorted({**dict(self.sets), **claim.twin}.items())))

    def run_folder(self, out: Path, method: MethodRun) -> Path:
        """A method's runs' root: the setting's folder, and for a method with parameter overrides a folder of its own."""
        folder = self.folder(out)
        if not method.sets:
            return folder
        return folder / re.sub(r"[^\w.=,+-]", "_", f"{method.name}+" + ",".join(f"{k}={v}" for k, v in method.sets))

    def request(self, method: MethodRun, seeds: tuple[int, ...]) -> Request:
        """The runner's request for this method (with its overrides) and seeds."""
        return Request({self.trace: {"scale": "embedded", **dict(self.sets)}}, (method.name,), seeds, dict(method.sets))


RunKey = tuple[Setting, MethodRun, int]  # setting, method with its overrides, seed


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


def with_literal(claims: Sequence[Claim]) -> list[Claim]:
    """Each claim, followed by its literal twin where it runs a method whose default reads its paper (``literal`` in its
    TOML): the same claim with each such method's literal variant in its place."""
    literals = {m: literal for m in {m for c in claims for m in c.run_methods} if (literal := literal_variant(m))}
    out = []
    for claim in claims:
        out.append(claim)
        names = {m: literals[m] for m in claim.run_methods if m in literals}
        if names:
            out.append(claim.renamed(names))
    return out


def literal_variant(method: str) -> str | None:
    """The variant a catalogued method names as its paper's literal reading; None (or a broken TOML: untestable later)."""
    if method not in method_catalog.catalog():
        return None
    try:
        return method_catalog.load_method(method).literal
    except DriftbenchError:
        return None


def untestable_reason(claim: Claim, scale: str) -> str | None:
    """Why the claim cannot be run (a missing method or variant, flwr for one, an unknown trace or scale); None if it can."""
    if claim.workload:
        return f"workload differs: {claim.workload}"
    known = method_catalog.catalog()
    absent = [m for m in claim.run_methods if m not in known and not m.startswith(FLOWER)]
    if absent:
        return f"method {absent[0]!r} is not in methods/ (driftbench list methods)"
    try:
        for name in claim.run_methods:
            load_strategy(method_catalog.load_method(name, dict(claim.method_run(name).sets)).params)
        check_trace(claim.trace, dict(Setting.of(claim, scale).sets))
    except DriftbenchError as exc:
        return " ".join(str(exc).split())
    try:
        if claim.twin is not None:
            check_trace(claim.trace, dict(Setting.of(claim, scale).twin(claim).sets))
    except DriftbenchError as exc:
        return "no-drift twin: " + " ".join(str(exc).split())
    return None


def claim_needs(claim: Claim, scale: str) -> list[tuple[Setting, MethodRun]]:
    """The runs a claim needs at each seed: its methods (with their overrides) in its setting, and in its no-drift twin."""
    setting = Setting.of(claim, scale)
    needs = [(setting, claim.method_run(m)) for m in claim.run_methods]
    if claim.twin is not None:
        needs += [(setting.twin(claim), claim.method_run(m)) for m in claim.methods]
    return needs


def plan(claims: Sequence[Claim], seeds: tuple[int, ...], scale: str, execution: Execution) -> Plan:
    """The runs the claims need, one per setting, method (with its overrides) and seed, planned by the runner (FedAvg first)."""
    untestable: dict[str, str] = {}
    needs: dict[Setting, list[MethodRun]] = {}
    for claim in claims:
        reason = untestable_reason(claim, scale)
        if reason:
            untestable[claim.key] = reason
            continue
        for setting, method in claim_needs(claim, scale):
            needs.setdefault(setting, []).append(method)
    return Plan(planned_jobs(needs, seeds, execution), untestable)


def planned_jobs(
    needs: Mapping[Setting, Sequence[MethodRun]], seeds: tuple[int, ...], execution: Execution
) -> dict[Setting, list[RunJob]]:
    """The runner's jobs for each setting's methods (with their overrides) at ``seeds``, FedAvg first."""
    jobs = {
        setting: [
            job
            for method in dict.fromkeys(methods)
            for job in plan_jobs(
                setting.request(method, seeds), replace(execution, out=setting.run_folder(execution.out, method))
            )
        ]
        for setting, methods in needs.items()
    }
    return {s: sorted(j, key=lambda job: job.method != REFERENCE) for s, j in jobs.items()}


def method_run(job: RunJob) -> MethodRun:
    """The method and overrides a job runs."""
    return MethodRun(job.method, tuple(sorted(job.method_sets.items())))


def execute_plan(runs: Plan, pool: PoolOptions, tags: Mapping[RunKey, Tags] | None = None) -> dict[RunKey, RunOutcome]:
    """Run every planned job through the sweep, one wave of settings at a time; each run's outcome.

    A run logged to trackers (``--log``) carries its ``tags`` (``run_tags``: the papers and claims that use it).
    """
    outcomes: dict[RunKey, RunOutcome] = {}
    for wave in runs.waves():
        keyed = [((setting, method_run(job), job.seed), job) for setting in wave for job in runs.jobs[setting]]
        jobs = [tagged(job, (tags or {}).get(key, ())) for key, job in keyed]
        outcomes.update(zip([key for key, _ in keyed], run_pool(jobs, pool)))
    return outcomes


Tags = tuple[tuple[str, str], ...]


def run_tags(claims: Sequence[Claim], runs: Plan, seeds: tuple[int, ...], scale: str) -> dict[RunKey, Tags]:
    """Per run, its trackers' tags ``paper`` and ``claims``: the papers (titles) and claim keys that use it, comma-separated."""
    users: dict[RunKey, list[Claim]] = {}
    for claim in claims:
        if claim.key not in runs.untestable:
            for setting, method in claim_needs(claim, scale):
                for seed in seeds:
                    users.setdefault((setting, method, seed), []).append(claim)
    return {
        key: (("paper", ",".join(dict.fromkeys(c.title for c in used))), ("claims", ",".join(dict.fromkeys(c.key for c in used))))
        for key, used in users.items()
    }


def tagged(job: RunJob, tags: Tags) -> RunJob:
    """The job with ``tags`` for its trackers (unchanged when it logs to none)."""
    tracking = job.execution.tracking
    if not tracking.destinations:
        return job
    return replace(job, execution=replace(job.execution, tracking=replace(tracking, tags=tags)))


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


Runs = Mapping[int, Mapping[str, Summary]]  # seed -> method -> summary


def metric_value(
    claim: Claim, metric: str, method: str, runs: Mapping[str, Summary], twins: Mapping[str, Summary]
) -> float | None:
    """A metric of one method's run at one seed; ``runs`` and ``twins`` hold that seed's runs and no-drift twins."""
    context = Context(runs[claim.target] if claim.target else None, twins.get(method))
    value = metric_spec(metric).read(runs[method], context)
    return None if value is None else float(value)


def evaluate(claim: Claim, runs: Runs, twins: Runs | None = None, alpha: float = ALPHA) -> ClaimResult:
    """The claim's test from its runs (every method of ``claim.run_methods`` at every seed; ``twins`` its no-drift twins).

    Premises first (every claim's implicit one: no run flagged ``collapse_without_drift``, whose numbers come from a
    defect, not the method), then the paired test at level ``alpha``; Holm and the paper's magnitude come after, over the
    paper (``finalize``).
    """
    values: dict[str, list[float]] = {m: [] for m in claim.methods}
    for seed, by_method in sorted(runs.items()):
        for method in claim.methods:
            value = metric_value(claim, claim.metric, method, by_method, (twins or {}).get(seed, {}))
            if value is None:
                return ClaimResult(claim, UNTESTABLE, f"{method}, seed {seed}: {metric_spec(claim.metric).missing}")
            values[method].append(value)
    shown, paper, effect = figure(claim, values), paper_effect(claim), seed_effects(claim, values)
    untested = ClaimResult(claim, INVALID_PREMISE, "", shown, paper=paper, seeds=tuple(sorted(runs)), effect=effect)
    collapsed = first_flagged(runs, (COLLAPSE,))
    if collapsed:
        method, _, seed = collapsed
        return replace(untested, reason=f"premise 'no run collapses without drift' fails: {method} at seed {seed}")
    unmet = next((why for why in (premise_failure(claim, p, runs) for p in claim.premises) if why), None)
    if unmet:
        return replace(untested, reason=unmet)
    never = unreached(claim, runs)
    if never:
        return replace(untested, verdict=NOT_REPRODUCED, reason=never)
    statistics = [claim.direction.statistic({m: v[i] for m, v in values.items()}) for i in range(len(runs))]
    if claim.direction.relation == "=":
        a, b = claim.methods
        p = tost_p(np.subtract(values[a], values[b]), claim.direction.margin)
    else:
        p = one_sided_p(statistics)
    result = test(statistics, p, effect, alpha)
    ours = ours_effect(claim, values)
    return replace(untested, verdict=result.verdict, reason=result.reason, p=result.p, ours=ours, excluded=result.excluded)


def first_flagged(runs: Runs, only: tuple[str, ...] | None = None) -> tuple[str, tuple[str, ...], int] | None:
    """The first run (by seed) with a ``degenerate`` flag, among ``only`` if given: (method, its flags, seed); None if none."""
    for seed, by_method in sorted(runs.items()):
        for method, summary in by_method.items():
            if summary.degenerate and (only is None or set(only) & set(summary.degenerate)):
                return method, summary.degenerate, seed
    return None


def premise_failure(claim: Claim, premise: Premise, runs: Runs) -> str | None:
    """Why the premise fails on these runs, with the failing value; None when it holds (on the seed means)."""
    if premise.metric is None:
        flagged = first_flagged(runs)
        if flagged is None:
            return None
        method, flags, seed = flagged
        return f"premise {premise.text!r} fails: {method} {'+'.join(flags)} at seed {seed}"
    assert premise.direction is not None
    means: dict[str, float] = {}
    for method in premise.methods:
        seen = [metric_value(claim, premise.metric, method, by, {}) for _, by in sorted(runs.items())]
        if any(v is None for v in seen):
            return f"premise {premise.text!r} has no value: {method}: {metric_spec(premise.metric).missing}"
        means[method] = float(np.mean([v for v in seen if v is not None]))
    if premise.direction.statistic(means) >= 0:
        return None
    spec = metric_spec(premise.metric)
    return f"premise {premise.text!r} fails: " + ", ".join(f"{m} {spec.fmt.format(v)}" for m, v in means.items())


def unreached(claim: Claim, runs: Runs) -> str | None:
    """For a time-to-accuracy claim: the seeds at which the method claimed faster never reaches the target (no speed-up)."""
    if claim.target is None or claim.direction.relation not in (">", "<"):
        return None
    faster = claim.methods[0] if claim.direction.relation == ">" else claim.methods[1]
    seeds = [seed for seed, by in sorted(runs.items()) if not reaches(run_rows(by[faster]), by[claim.target].final_accuracy)]
    if not seeds:
        return None
    return f"{faster} never reaches {claim.target}'s final accuracy at seed {', '.join(map(str, seeds))}: no speed-up there"


def ends(claim: Claim) -> tuple[str, str] | None:
    """The two methods whose values form the claim's effect, the larger-claimed first; None for "A = B within X"."""
    d = claim.direction
    pairs = {">": (0, -1), "<": (-1, 0), "decreasing": (0, -1), "increasing": (-1, 0)}
    if d.relation not in pairs:
        return None
    hi, lo = pairs[d.relation]
    return d.methods[hi], d.methods[lo]


def ratio_effect(claim: Claim) -> bool:
    """Whether the claim's effect is a ratio (a speed-up, or ``effect = "ratio"``) rather than a difference."""
    return claim.metric == "tta_speedup" or claim.effect == "ratio"


def seed_effects(claim: Claim, values: Mapping[str, list[float]]) -> Effect | None:
    """Our effect at each seed in the paper's unit, beside the least the paper allows; None for an equivalence claim
    or a ratio that is not positive at every seed."""
    pair = ends(claim)
    if pair is None:
        return None
    hi, lo = (np.asarray(values[m], dtype=float) for m in pair)
    if claim.metric == "tta_speedup":
        effects = np.exp(hi - lo)  # values are -ln(time)
    elif claim.effect == "ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            effects = hi / lo
    else:
        effects = (hi - lo) * UNITS[claim.unit]
    ratio = ratio_effect(claim)
    if ratio and not (np.isfinite(effects).all() and (effects > 0).all()):
        return None
    return Effect(tuple(float(e) for e in effects), least_effect(paper_effect(claim), claim.bound, ratio), ratio)


def form_effect(claim: Claim, hi: float, lo: float) -> float | None:
    """The effect of two values: their difference, or their ratio (``effect = "ratio"``)."""
    if claim.effect == "difference":
        return hi - lo
    return hi / lo if lo else None


def ours_effect(claim: Claim, values: Mapping[str, list[float]]) -> float | None:
    """driftbench's effect in the paper's unit: a speed-up (geometric mean) for time to accuracy, else from the seed means."""
    pair = ends(claim)
    if pair is None:
        return None
    hi, lo = (float(np.mean(values[m])) for m in pair)
    if claim.metric == "tta_speedup":
        return math.exp(hi - lo)  # values are -ln(time)
    scale = UNITS[claim.unit]
    return form_effect(claim, hi * scale, lo * scale)


def paper_effect(claim: Claim) -> float | None:
    """The paper's effect: its number, or the effect of its values for the two methods that form it."""
    value, pair = claim.paper_value, ends(claim)
    if value is None or not isinstance(value, dict):
        return value
    if pair is None:
        return None
    return value[pair[0]] / value[pair[1]] if claim.metric == "tta_speedup" else form_effect(claim, *(value[m] for m in pair))


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


def figure(claim: Claim, values: Mapping[str, list[float]]) -> str:
    """driftbench's figure: the metric, each method's mean +/- std over seeds; for a time-to-accuracy pair, the speed-up."""
    spec = metric_spec(claim.metric)

    def spread(v: list[float]) -> str:
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


def claim_runs(
    claim: Claim, setting: Setting, seeds: tuple[int, ...], outcomes: Mapping[RunKey, RunOutcome], methods: Sequence[str]
) -> dict[int, dict[str, Summary]] | str:
    """The claim's runs of ``methods`` in ``setting``, seed -> method -> summary, or why one is missing (failed or diverged)."""
    runs: dict[int, dict[str, Summary]] = {}
    for seed in seeds:
        for method in methods:
            outcome = outcomes[(setting, claim.method_run(method), seed)]
            if outcome.state == NOT_RECORDED:
                return f"run {outcome.label} not recorded yet (--recorded runs nothing)"
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
    paper_seconds: Mapping[str, float] = field(default_factory=dict)  # each paper's runs' recorded walls, summed
    second: tuple[int, ...] = ()  # the second stage's seeds (the verdict rule), for the claims the first left open

    def run_time(self) -> str:
        """Each paper's run time: the recorded wall seconds of the runs its claims need, a shared run in each paper."""
        hours = ", ".join(f"{paper} {seconds / 3600:.2f} h" for paper, seconds in self.paper_seconds.items())
        return f"Run time by paper (the runs' recorded walls, one process each; a run two papers share counts in both): {hours}."

    def headline(self) -> str:
        """The paper claims' verdict counts, the driftbench claims' apart, then seeds, scale, runs and wall time."""
        states = [o.state for o in self.outcomes]
        paper = [r.verdict for r in self.results if r.claim.kind != "driftbench" and not r.claim.literal]
        own = [r.verdict for r in self.results if r.claim.kind == "driftbench" and not r.claim.literal]
        literal = [r.verdict for r in self.results if r.claim.literal]

        def counts(verdicts: list[str]) -> str:
            return ", ".join(f"{verdicts.count(v)} {v}" for v in VERDICTS)

        pending = f", {states.count(NOT_RECORDED)} {NOT_RECORDED}" if NOT_RECORDED in states else ""
        calibrated = [r.claim.calibrated_to for r in self.results if r.claim.calibrated_to]
        off = sum(not c.within for c in calibrated)
        looks = f"Holm over each paper's claims at level {level(1):g}."
        if self.second:
            went = sum(set(self.second) <= set(r.seeds) for r in self.results)
            looks = (
                f"Holm over each paper's claims at each of two looks, at Pocock's level {level(2):g}: seeds "
                f"{seed_range(self.seeds)}, then seeds {seed_range(self.second)} for the {went} claims the first left "
                "inconclusive."
            )
        twins = (
            f"{len(literal)} literal twins (claims run again with methods as their papers are written, where the "
            f"default is a reading; their own Holm families, first look only): {counts(literal)}. "
            if literal
            else ""
        )
        return (
            f"{len(paper)} paper claims: {counts(paper)}. {len(own)} driftbench claims (figures the papers do not "
            f"report): {counts(own)}. {twins}{looks} {len(calibrated)} claims run on calibrated "
            f"stand-ins, {off} of them more than {CALIBRATION_TOLERANCE:g} points off. "
            f"Seeds {', '.join(map(str, self.seeds + self.second))}, scale "
            f"{self.scale}; {len(states)} runs ({states.count('ran')} ran, {states.count('skipped')} up to date, "
            f"{states.count('failed')} failed{pending}) in {self.seconds / 60:.1f} min wall."
        )


def reproduce(
    claims: Sequence[Claim],
    seeds: tuple[int, ...],
    scale: str,
    pool: PoolOptions,
    execution: Execution,
    second: tuple[int, ...] = (),
) -> Report:
    """Run what the claims need (skipping finished runs) and judge each claim; with ``second``, the claims the first
    stage leaves inconclusive run those seeds too and are judged again on all of them (the verdict rule's two stages)."""
    started = time.perf_counter()
    alpha = level(2 if second else 1)
    claims = with_literal(claims)
    runs = plan(claims, seeds, scale, execution)
    log.info("reproduce: %d claims, %d runs in %d settings", len(claims), runs.runs, len(runs.jobs))
    outcomes = execute_plan(runs, pool, run_tags(claims, runs, seeds, scale))
    first = judge(claims, seeds, scale, runs.untestable, outcomes, alpha)
    results = finalize(first, alpha)
    if second:
        results = second_stage(results, first, seeds, second, scale, pool, execution, outcomes)
    report = Report(results, seeds, scale, list(outcomes.values()), time.perf_counter() - started, second=second)
    return replace(report, paper_seconds=paper_seconds(results, seeds, scale, outcomes))


def second_stage(
    results: list[ClaimResult],
    first: list[ClaimResult],
    seeds: tuple[int, ...],
    second: tuple[int, ...],
    scale: str,
    pool: PoolOptions,
    execution: Execution,
    outcomes: dict[RunKey, RunOutcome],
) -> list[ClaimResult]:
    """The second stage: the first look's inconclusive claims run ``second`` (into ``outcomes``), then ``second_look``."""
    open_claims = [r.claim for r in results if r.verdict == INCONCLUSIVE and r.p is not None and not r.claim.literal]
    runs = plan(open_claims, second, scale, execution)
    log.info("reproduce, second stage: %d claims inconclusive, %d runs at seeds %s", len(open_claims), runs.runs, second)
    outcomes.update(execute_plan(runs, pool, run_tags(open_claims, runs, second, scale)))
    again = judge(open_claims, seeds + second, scale, runs.untestable, outcomes, level(2))
    return second_look(results, first, again, second)


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


def judge(
    claims: Sequence[Claim],
    seeds: tuple[int, ...],
    scale: str,
    untestable: Mapping[str, str],
    outcomes: Mapping[RunKey, RunOutcome],
    alpha: float,
) -> list[ClaimResult]:
    """Each claim's test at ``seeds`` from the runs' outcomes (before Holm and magnitude), or why it is untestable."""
    results = []
    for claim in claims:
        if claim.key in untestable:
            results.append(ClaimResult(claim, UNTESTABLE, untestable[claim.key]))
            continue
        setting = Setting.of(claim, scale)
        found = claim_runs(claim, setting, seeds, outcomes, claim.run_methods)
        twins = claim_runs(claim, setting.twin(claim), seeds, outcomes, claim.methods) if claim.twin else {}
        missing = next((f for f in (found, twins) if isinstance(f, str)), None)
        if missing is not None:
            results.append(ClaimResult(claim, UNTESTABLE, missing))
        else:
            assert not isinstance(found, str) and not isinstance(twins, str)
            results.append(evaluate(claim, found, twins, alpha))
    return results


def paper_seconds(
    results: Sequence[ClaimResult], seeds: tuple[int, ...], scale: str, outcomes: Mapping[RunKey, RunOutcome]
) -> dict[str, float]:
    """Per paper (in the claims' order), the summed recorded wall seconds of the distinct runs its claims were judged on."""
    keys: dict[str, set[RunKey]] = {}
    for result in results:
        needed = keys.setdefault(result.claim.title, set())
        on = result.seeds or seeds
        needed.update((setting, method, seed) for setting, method in claim_needs(result.claim, scale) for seed in on)
    return {
        paper: sum(o.summary.wall_seconds for key in needed if (o := outcomes.get(key)) is not None and o.summary)
        for paper, needed in keys.items()
    }
