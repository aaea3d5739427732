"""Planning: the settings and runs the claims need, each run planned once however many claims use it, and what cannot run."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from driftbench.errors import DriftbenchError
from driftbench.methods import catalog as method_catalog
from driftbench.methods.aggregators import PREFIX as FLOWER
from driftbench.methods.aggregators import load_strategy
from driftbench.record.summarize import REFERENCE
from driftbench.reproduce.claim import Claim, MethodRun
from driftbench.runner import Execution, Request, RunJob, check_trace, plan_jobs


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
Tags = tuple[tuple[str, str], ...]  # a run's trackers' tags: (name, value)


def run_key(setting: Setting, job: RunJob) -> RunKey:
    """The key of a job planned in ``setting``: the setting, the method and overrides it runs, its seed."""
    return setting, MethodRun(job.method, tuple(sorted(job.method_sets.items()))), job.seed


@dataclass(frozen=True)
class RunPlan:
    """The runs the claims need, per setting, and the claims that cannot be tested with the reason."""

    jobs: dict[Setting, list[RunJob]]
    untestable: dict[str, str]  # claim key -> reason

    @property
    def count(self) -> int:
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


def plan(claims: Sequence[Claim], seeds: tuple[int, ...], scale: str, execution: Execution) -> RunPlan:
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
    return plan_needs(needs, seeds, execution, untestable)


def plan_needs(
    needs: Mapping[Setting, Sequence[MethodRun]],
    seeds: tuple[int, ...],
    execution: Execution,
    untestable: Mapping[str, str] | None = None,
) -> RunPlan:
    """The runner's jobs for each setting's methods (with their overrides) at ``seeds``, FedAvg first; ``untestable``:
    the claims left out, with the reason."""
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
    ordered = {s: sorted(j, key=lambda job: job.method != REFERENCE) for s, j in jobs.items()}
    return RunPlan(ordered, dict(untestable or {}))


def run_tags(claims: Sequence[Claim], planned: RunPlan, seeds: tuple[int, ...], scale: str) -> dict[RunKey, Tags]:
    """Per run, its trackers' tags ``paper`` and ``claims``: the papers (titles) and claim keys that use it, comma-separated."""
    users: dict[RunKey, list[Claim]] = {}
    for claim in claims:
        if claim.key not in planned.untestable:
            for setting, method in claim_needs(claim, scale):
                for seed in seeds:
                    users.setdefault((setting, method, seed), []).append(claim)
    return {
        key: (("paper", ",".join(dict.fromkeys(c.title for c in used))), ("claims", ",".join(dict.fromkeys(c.key for c in used))))
        for key, used in users.items()
    }
