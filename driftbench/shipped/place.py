"""Placing a method in a shipped archive: only it runs, on exactly the archive's traces and seeds, and its runs join the
archived ones in one archive.

A new run pairs with the archived runs of its trace and seed only where it replays the same trace
under the same settings: each trace is built now from its name and the overrides its runs recorded
(``driftbench.shipped.settings``), and its hash, and the configuration a run made now would record
(the method aside), must equal the archived runs'. Otherwise nothing runs and the first difference
is named in one line, as it is for an unknown method or one the archive holds already.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from driftbench.errors import ConfigError
from driftbench.methods.catalog import load_method
from driftbench.record.archive import is_archive
from driftbench.record.archive_write import Written, write_combined
from driftbench.record.files import config_difference
from driftbench.record.runs import find_runs
from driftbench.runner import Execution, PoolOptions, Request, RunJob, RunOutcome, job_config, plan_jobs, run_pool
from driftbench.shipped.settings import ShippedTrace, shipped_traces, text

RUNS, ARCHIVE = "runs", "archive"  # below the output folder: the new runs' folder, the combined archive


@dataclass(frozen=True)
class Placement:
    """A method placed: each new run's outcome, and the combined archive (None when a run did not finish)."""

    outcomes: list[RunOutcome]
    archive: Written | None


def place(archive: Path, method: str, out: Path, device: str, pool: PoolOptions) -> Placement:
    """Run ``method`` on every trace and seed of ``archive`` into ``out/runs`` (finished runs kept, as a sweep keeps
    them), then write the archive's runs and the new ones to ``out/archive``."""
    execution = Execution(device, (out / RUNS).resolve(), threads=pool.threads)  # where the runs' records say they are
    jobs = placement_jobs(archive, method, execution)
    outcomes = run_pool(jobs, pool, desc="place")
    if any(outcome.record is None for outcome in outcomes):
        return Placement(outcomes, None)
    folders = [outcome.record.path for outcome in outcomes if outcome.record is not None]
    return Placement(outcomes, write_combined(archive, execution.out, folders, out / ARCHIVE))


def placement_jobs(archive: Path, method: str, execution: Execution) -> list[RunJob]:
    """The runs that place ``method`` in ``archive``, one per trace and seed of it, each checked to pair (``ConfigError``
    in one line, before anything runs, when one would not, when the method is unknown or the archive holds it)."""
    if not is_archive(archive):
        raise ConfigError(f"{archive}: not an archive (driftbench archive RUNS_DIR --out {archive} makes one)")
    name = load_method(method).name
    records = find_runs(archive)
    held = sum(record.method == name for record in records)
    if held:
        raise ConfigError(
            f"{archive}: holds {held} runs of method {name!r} already; place yours under another name "
            "(its TOML copied to a new name)"
        )
    jobs = []
    for trace in shipped_traces(archive, records):
        for job in plan_jobs(Request({trace.name: trace.sets}, (method,), trace.seeds), execution):
            check_pairs(archive, trace, job, job_config(job))
            jobs.append(job)
    return jobs


def check_pairs(archive: Path, trace: ShippedTrace, job: RunJob, config: dict[str, Any]) -> None:
    """Refuse ``job``, whose run would record ``config``, unless its trace and settings are those of the archived runs of
    its trace and seed."""
    where = f"{archive}: {trace.name} seed {job.seed}"
    shipped, now = trace.hashes[job.seed], config["trace"]["hash"]
    if now != shipped:
        raise ConfigError(
            f"{where}: the trace built now from its name and the archived runs' overrides ({text(trace.sets)}) has hash "
            f"{now[:12]}, the archived runs' {shipped[:12]}: its data changed since the archive was made, so new runs "
            "would not pair with them; place against an archive made at this commit"
        )
    difference = config_difference({**trace.configs[job.seed], "method": None}, {**config, "method": None})
    if difference is not None:
        key, archived, made = difference
        raise ConfigError(
            f"{where}: {key} is {archived!r} in the archived runs but {made!r} in a run made now, so new runs would not "
            "pair with them; place against an archive made at this commit"
        )
