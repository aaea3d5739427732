"""``driftbench reproduce``, the pipeline: plan the runs the claims need, run them through the sweep, score, judge."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from driftbench.config import require
from driftbench.reproduce.claim import Claim
from driftbench.reproduce.judging import ClaimResult, Scored, judge, open_claims
from driftbench.reproduce.planning import RunKey, RunPlan, Tags, claim_needs, plan, run_key, run_tags, with_literal
from driftbench.reproduce.report import Report
from driftbench.reproduce.scoring import score_outcomes
from driftbench.runner import Execution, PoolOptions, RunJob, RunOutcome, run_pool

log = logging.getLogger(__name__)

QUIET = PoolOptions(quiet=True)  # a pool that prints no progress (the rendered pages judge archives in one)


def reproduce(
    claims: Sequence[Claim],
    seeds: tuple[int, ...],
    scale: str,
    pool: PoolOptions,
    execution: Execution,
    second: tuple[int, ...] = (),
) -> Report:
    """Run what the claims need and judge each claim; with ``second``, the claims the first stage leaves inconclusive
    run those seeds too and are judged again on all of them (the verdict rule's two stages).

    The runs go through the sweep (``driftbench.runner``): a trace, method and seed is one run however many claims use
    it, finished runs are skipped and interrupted ones resume. Each claim's runs are scored (``scoring``) and judged
    (``judging``).
    """
    require(
        not second or (len(second) == len(seeds) and not set(second) & set(seeds)),
        f"--second-stage {','.join(map(str, second))}: expected {len(seeds)} seeds (as many as --seeds), "
        f"none of them in --seeds {','.join(map(str, seeds))}",
    )
    started = time.perf_counter()
    claims = with_literal(claims)
    planned = plan(claims, seeds, scale, execution)
    log.info("reproduce: %d claims, %d runs in %d settings", len(claims), planned.count, len(planned.jobs))
    outcomes = execute_plan(planned, pool, run_tags(claims, planned, seeds, scale))
    scored = score_outcomes(claims, seeds, scale, planned.untestable, outcomes)
    results = judge(scored, second)
    if second:
        again = second_stage(open_claims(results), seeds, second, scale, pool, execution, outcomes)
        results = judge(scored, second, again)
    report = Report(results, seeds, scale, list(outcomes.values()), time.perf_counter() - started, second=second)
    return replace(report, paper_seconds=paper_seconds(results, seeds, scale, outcomes))


def reproduce_recorded(
    claims: Sequence[Claim],
    out: Path,
    seeds: tuple[int, ...],
    second: tuple[int, ...] = (),
    scale: str = "embedded",
    pool: PoolOptions = QUIET,
) -> Report:
    """``driftbench reproduce --recorded --out OUT``'s report: the claims judged on the runs recorded under ``out`` (a
    runs folder or an archive), none run; a claim missing a run reads untestable, "not recorded yet"."""
    return reproduce(claims, seeds, scale, pool, Execution(out=out, resume="recorded", threads=pool.threads), second)


def second_stage(
    reopened: Sequence[Claim],
    seeds: tuple[int, ...],
    second: tuple[int, ...],
    scale: str,
    pool: PoolOptions,
    execution: Execution,
    outcomes: dict[RunKey, RunOutcome],
) -> list[Scored]:
    """The second stage: the claims the first look left open run ``second`` (into ``outcomes``), scored on every seed."""
    planned = plan(reopened, second, scale, execution)
    log.info("reproduce, second stage: %d claims inconclusive, %d runs at seeds %s", len(reopened), planned.count, second)
    outcomes.update(execute_plan(planned, pool, run_tags(reopened, planned, second, scale)))
    return score_outcomes(reopened, seeds + second, scale, planned.untestable, outcomes)


def execute_plan(planned: RunPlan, pool: PoolOptions, tags: Mapping[RunKey, Tags] | None = None) -> dict[RunKey, RunOutcome]:
    """Run every planned job through the sweep, one wave of settings at a time; each run's outcome.

    A run logged to trackers (``--log``) carries its ``tags`` (``run_tags``: the papers and claims that use it).
    """
    outcomes: dict[RunKey, RunOutcome] = {}
    for wave in planned.waves():
        keyed = [(run_key(setting, job), job) for setting in wave for job in planned.jobs[setting]]
        jobs = [tagged(job, (tags or {}).get(key, ())) for key, job in keyed]
        outcomes.update(zip([key for key, _ in keyed], run_pool(jobs, pool)))
    return outcomes


def tagged(job: RunJob, tags: Tags) -> RunJob:
    """The job with ``tags`` for its trackers (unchanged when it logs to none)."""
    tracking = job.execution.tracking
    if not tracking.destinations:
        return job
    return replace(job, execution=replace(job.execution, tracking=replace(tracking, tags=tags)))


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
