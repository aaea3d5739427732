"""Whether a shipped archive is stale: a small, fixed slice of its runs made again here, each compared with its record.

The slice is each method's cheapest run by recorded wall time (ties by trace, then seed), the
cheapest method first, as many as a budget of recorded wall seconds holds (at least one). A run made
again, with the overrides its config recorded (``driftbench.shipped.settings``), on its recorded
device and torch threads, must record the archived configuration (the volatile fields aside) and
the archived summary: every field equal, numbers to a relative ``TOLERANCE``, except the machine's
own (``MACHINE_FIELDS``: the wall times and the run's folder). A CPU run is a function of its trace
hash, configuration and seed on one CPU, so a difference means that the code now makes other results.
A run whose record names another CPU than this one (``provenance.cpu``: its model and the instruction
sets that pick torch's float kernels), or none (runs made before it was recorded), rounds otherwise
and may drift apart over rounds without any change of code: it is compared as ``driftbench check``
compares a run with its reference (``QUALITY``: final accuracy and mean ARI within the quality gate's
tolerances), and the report says how each run was compared.
"""

from __future__ import annotations

import dataclasses
import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from driftbench.errors import ConfigError
from driftbench.evaluation.tolerance import ACCURACY_TOLERANCE, ARI_TOLERANCE
from driftbench.record.archive import ArchivedRunRow, is_archive, open_archive
from driftbench.record.files import SUMMARY, config_difference
from driftbench.record.schema import read_summary
from driftbench.runner import Execution, PoolOptions, RunJob, job_config, run_pool
from driftbench.scheduler.spec import cpu_identity
from driftbench.shipped.settings import method_overrides, trace_sets

TOLERANCE = 1e-9  # relative, for every number of a summary made on the same CPU
QUALITY = {"final_accuracy": ACCURACY_TOLERANCE, "ari_mean": ARI_TOLERANCE}  # absolute, on another CPU
MACHINE_FIELDS = ("wall_seconds", "overhead.server_wall_seconds", "run_dir")  # a summary's fields the machine sets


@dataclass(frozen=True)
class Difference:
    """A run made again that differs from its record: the run, its first differing field and both values."""

    run: ArchivedRunRow
    field: str
    archived: Any
    now: Any


@dataclass(frozen=True)
class Staleness:
    """What the check made again (the slice of the archive's runs) and where the runs made now differ."""

    archive: Path
    runs: int  # the archive's runs
    slice: list[ArchivedRunRow]
    differences: list[Difference]
    elsewhere: int = 0  # runs of the slice recorded on another (or an unnamed) CPU: compared as the quality gate does

    @property
    def recorded_seconds(self) -> float:
        """The recorded wall seconds of the slice: what the check cost when the archive was made."""
        return sum(run.summary.wall_seconds for run in self.slice)


def check_stale(archive: Path, budget: float, limit: int | None, out: Path, jobs: int = 1) -> Staleness:
    """Make the slice of ``archive`` (``budget`` recorded wall seconds, at most ``limit`` runs) again below ``out``, on
    ``jobs`` processes, and compare each run with its record."""
    if not is_archive(archive):
        raise ConfigError(f"{archive}: not an archive (driftbench archive RUNS_DIR --out {archive} makes one)")
    shipped = open_archive(archive)
    chosen = cheap_slice(shipped.runs, budget, limit)
    planned = [(run, rerun_job(archive, run, out)) for run in chosen]
    differences, to_run = [], []
    for run, job in planned:
        found = config_difference(run.config, job_config(job))  # a configuration made otherwise now: not worth running
        if found is None:
            to_run.append((run, job))
        else:
            differences.append(Difference(run, f"config.{found[0]}", found[1], found[2]))
    outcomes = run_pool([job for _, job in to_run], PoolOptions(jobs=jobs, quiet=True), desc="stale")
    for (run, _), outcome in zip(to_run, outcomes):
        if outcome.record is None:
            differences.append(Difference(run, "run", "finished", f"{outcome.state}: {outcome.error}"))
            continue
        remade = read_summary(outcome.record.path / SUMMARY)  # as written: JSON holds no NaN, for one
        archived, now = dataclasses.asdict(run.summary), dataclasses.asdict(remade)
        found = first_difference(archived, now) if made_here(run) else quality_difference(archived, now)
        if found is not None:
            differences.append(Difference(run, *found))
    return Staleness(archive, len(shipped.runs), chosen, differences, sum(not made_here(run) for run in chosen))


def made_here(run: ArchivedRunRow) -> bool:
    """Whether ``run``'s record names this machine's CPU (model and float instruction sets)."""
    return bool(run.config.get("provenance", {}).get("cpu") == cpu_identity())


def quality_difference(archived: dict[str, Any], now: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """The first ``QUALITY`` metric that moved beyond its tolerance, either way, with both values."""
    for metric, tolerance in QUALITY.items():
        a, b = archived.get(metric), now.get(metric)
        if (a is None) != (b is None) or (a is not None and b is not None and abs(a - b) > tolerance):
            return f"{metric} (another CPU: within {tolerance})", a, b
    return None


def cheap_slice(runs: Sequence[ArchivedRunRow], budget: float, limit: int | None = None) -> list[ArchivedRunRow]:
    """Each method's cheapest run by recorded wall seconds, cheapest first, while their sum stays within ``budget``
    (the first always), at most ``limit``."""
    cheapest: dict[str, ArchivedRunRow] = {}
    for run in sorted(runs, key=cost):
        cheapest.setdefault(run.summary.method, run)
    chosen: list[ArchivedRunRow] = []
    spent = 0.0
    for run in list(cheapest.values())[:limit]:
        if chosen and spent + run.summary.wall_seconds > budget:
            break
        chosen.append(run)
        spent += run.summary.wall_seconds
    return chosen


def cost(run: ArchivedRunRow) -> tuple[float, str, int, str]:
    """A run's order in the slice: recorded wall seconds, then trace, seed and place."""
    return run.summary.wall_seconds, run.summary.trace, run.summary.seed, run.place


def rerun_job(archive: Path, run: ArchivedRunRow, out: Path) -> RunJob:
    """The job that makes ``run`` again below ``out``: its trace and method overrides, seed, device kind and threads."""
    config, summary = run.config, run.summary
    execution = Execution(
        device=str(config.get("device", "cpu")).partition(":")[0],
        out=out,
        threads=config.get("provenance", {}).get("threads"),
        quiet=True,
    )
    sets = trace_sets(archive, summary.trace, [config])
    return RunJob(summary.trace, sets, summary.method, method_overrides(config), summary.seed, execution)


def first_difference(archived: Any, now: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first dotted field (``MACHINE_FIELDS`` aside) where two summaries' contents differ, with both values."""
    if path in MACHINE_FIELDS:
        return None
    if isinstance(archived, dict) and isinstance(now, dict):
        for key in dict.fromkeys([*archived, *now]):
            field = f"{path}.{key}" if path else key
            if key not in archived or key not in now:
                return field, archived.get(key, "(absent)"), now.get(key, "(absent)")
            found = first_difference(archived[key], now[key], field)
            if found is not None:
                return found
        return None
    if isinstance(archived, list | tuple) and isinstance(now, list | tuple) and len(archived) == len(now):
        items = (first_difference(a, b, f"{path}[{i}]") for i, (a, b) in enumerate(zip(archived, now)))
        return next((found for found in items if found is not None), None)
    return None if same(archived, now) else (path, archived, now)


def same(archived: Any, now: Any) -> bool:
    """Whether two values of a summary agree: numbers to the relative ``TOLERANCE`` (NaN equal to NaN), others equal."""
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (archived, now))
    if not numbers:
        return bool(archived == now)
    both_nan = math.isnan(archived) and math.isnan(now)
    return both_nan or math.isclose(archived, now, rel_tol=TOLERANCE, abs_tol=0.0)


def remake_command(archive: Path, run: ArchivedRunRow) -> str:
    """How to make ``archive`` again: the command that made ``run``, into a fresh runs folder, then archived over it."""
    fresh = f"runs-{archive.name}-remade"
    recorded = run.config.get("provenance", {}).get("command")
    if not recorded:
        return f"make its runs again into {fresh}, then driftbench archive {fresh} --out {archive} --force"
    argv = ["driftbench", *without_out(shlex.split(recorded)[1:]), "--out", fresh]
    return f"{shlex.join(argv)} && driftbench archive {fresh} --out {archive} --force"


def without_out(argv: list[str]) -> list[str]:
    """A command line's arguments without its ``--out FOLDER`` (or ``--out=FOLDER``)."""
    kept: list[str] = []
    for arg in argv:
        if kept[-1:] == ["--out"]:
            kept.pop()
        elif not arg.startswith("--out="):
            kept.append(arg)
    return kept
