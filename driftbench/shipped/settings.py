"""A recorded run's settings as ``--set`` overrides: what its config.json holds beyond the catalog entries now.

A run's config.json holds its named trace's generator parameters, source and training settings,
and its method's parameters, all resolved. The overrides that made them are what differs from the
trace's and the method's catalog entries; run again, they build the trace of the same hash and the
same configuration, unless the catalog or the code changed since, which the hashes then show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from driftbench.config import as_plain, flat_sets, recorded_params, set_text
from driftbench.errors import RecordError
from driftbench.methods.catalog import load_method
from driftbench.record.files import as_json
from driftbench.record.runs import RunRecord
from driftbench.traces.catalog import DATA_SEED, catalog, named_spec


@dataclass(frozen=True)
class ShippedTrace:
    """A trace of an archive: its name, the overrides its runs were made with, and each seed's trace hash and a config."""

    name: str
    sets: dict[str, str]
    hashes: dict[int, str]  # seed -> the trace hash of its runs
    configs: dict[int, dict[str, Any]]  # seed -> the config.json content of one of its runs

    @property
    def seeds(self) -> tuple[int, ...]:
        """The seeds its runs were made at, in order."""
        return tuple(self.hashes)


def shipped_traces(archive: Path, records: Sequence[RunRecord]) -> list[ShippedTrace]:
    """The traces of an archive's runs ``records``, each with its overrides and seeds, in the records' order.

    Runs of one trace made with different overrides, or of one trace and seed replaying traces of
    different hashes, are no one trace to pair with: ``RecordError`` naming the archive.
    """
    by_trace: dict[str, list[RunRecord]] = {}
    for record in records:
        by_trace.setdefault(record.trace, []).append(record)
    return [shipped_trace(archive, name, runs) for name, runs in by_trace.items()]


def shipped_trace(archive: Path, name: str, runs: list[RunRecord]) -> ShippedTrace:
    """The trace ``name`` of an archive from its runs."""
    hashes: dict[int, str] = {}
    configs: dict[int, dict[str, Any]] = {}
    for run in sorted(runs, key=lambda r: r.seed):
        known = hashes.setdefault(run.seed, run.trace_hash)
        if known != run.trace_hash:
            raise RecordError(
                f"{archive}: {name} seed {run.seed}: its runs replay traces of different hashes "
                f"({known[:12]}, {run.trace_hash[:12]}), so no new run pairs with them all"
            )
        configs.setdefault(run.seed, run.config())
    return ShippedTrace(name, trace_sets(archive, name, [r.config() for r in runs]), hashes, configs)


def trace_sets(where: Path, name: str, configs: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The overrides of the named trace ``name`` that the runs of ``configs`` share; the data seed among them only where
    it does not follow each run's seed (``driftbench.traces.catalog.run_sets`` adds it then)."""
    if name not in catalog():
        raise RecordError(f"{where}: trace {name!r} is not a named trace, so it cannot be built again (a trace file's runs)")
    try:
        each = [trace_overrides(config) for config in configs]
        data_seeds = {config.get("data_seed") for config in configs}
        follows = None in data_seeds or all(config.get("data_seed") == config["seed"] for config in configs)
    except (KeyError, TypeError, AttributeError) as exc:
        why = f"{type(exc).__name__}: {exc}"
        raise RecordError(f"{where}: a run of {name} has no readable settings in its config ({why})") from None
    other = next((sets for sets in each if sets != each[0]), None)
    if other is not None:
        raise RecordError(f"{where}: the runs of {name} were made with different overrides ({text(each[0])}; {text(other)})")
    if follows:
        return each[0]
    if len(data_seeds) > 1:
        seeds = ", ".join(sorted(map(str, data_seeds)))
        raise RecordError(f"{where}: the runs of {name} were made at different data seeds ({seeds})")
    return {**each[0], DATA_SEED: str(data_seeds.pop())}


def trace_overrides(config: Mapping[str, Any]) -> dict[str, str]:
    """The ``--set`` values, the data seed aside, that build a run's named trace and training settings from the catalog."""
    trace = config["trace"]
    spec = named_spec(trace["name"], {})
    params = {k: v for k, v in trace["params"].items() if k != DATA_SEED}
    sets = changed(params, recorded_params(spec.params), "")
    source = trace["source"]
    if source["name"] == spec.source:
        sets |= changed(source["params"], as_plain(spec.source_params), "source.")
    else:
        sets |= {"source": source["name"], **flat_sets(source["params"], "source.")}
    return sets | changed(config["train"], recorded_params(spec.train), "train.")


def method_overrides(config: Mapping[str, Any]) -> dict[str, str]:
    """The ``--set method.KEY`` values (keys without ``method.``) that make a run's method from its catalog entry."""
    method = config["method"]
    return changed(method["params"], load_method(method["name"]).as_config()["params"], "")


def changed(recorded: Mapping[str, Any], default: Mapping[str, Any], prefix: str) -> dict[str, str]:
    """The ``--set`` values (keys after ``prefix``) of the parameters ``recorded`` holds at other values than ``default``."""
    defaults = as_json(dict(default))
    return {prefix + key: set_text(value) for key, value in recorded.items() if key not in defaults or defaults[key] != value}


def text(sets: Mapping[str, str]) -> str:
    """Overrides as ``KEY=VALUE`` words, or ``no overrides``."""
    return " ".join(f"{key}={value}" for key, value in sets.items()) or "no overrides"
