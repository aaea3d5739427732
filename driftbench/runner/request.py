"""What to run: a request (traces x methods x seeds, with overrides), from a suite file or the command line, as run jobs."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

from driftbench.config import check_keys, flat_sets, read_toml, require
from driftbench.errors import ConfigError, TraceFileError
from driftbench.methods.catalog import MethodSpec, load_method
from driftbench.record.summarize import REFERENCE
from driftbench.runner.job import Execution, RunJob, resolved_trace
from driftbench.traces.catalog import default_methods, is_trace_file, named_spec
from driftbench.tracking.destinations import Destination, destinations

log = logging.getLogger(__name__)

SUITE_KEYS = {"description", "traces", "methods", "seeds", "log"}


@dataclass(frozen=True)
class Suite:
    """A named sweep from a TOML file: traces with their ``--set`` overrides, methods, seeds, and trackers (``log``)."""

    description: str
    traces: dict[str, dict[str, str]]
    methods: tuple[str, ...]
    seeds: tuple[int, ...]
    log: tuple[Destination, ...] = ()


@dataclass(frozen=True)
class Request:
    """What to run: traces with ``--set`` overrides, methods (empty: the trace's default comparison), seeds, method overrides."""

    traces: dict[str, dict[str, str]]
    methods: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0,)
    method_sets: dict[str, str] = field(default_factory=dict)


def load_suite(path: Path) -> Suite:
    """Parse a suite TOML: ``methods``, ``seeds`` and one ``[traces.NAME]`` table of overrides per trace."""
    raw = read_toml(path)
    check_keys(raw, SUITE_KEYS, str(path))
    traces, methods, seeds, trackers = raw.get("traces"), raw.get("methods"), raw.get("seeds", [0]), raw.get("log", [])
    require(
        isinstance(traces, dict) and bool(traces) and all(isinstance(t, dict) for t in traces.values()),
        f"{path}: traces: expected one [traces.NAME] table per trace (empty tables allowed)",
    )
    require(
        isinstance(methods, list) and bool(methods) and all(isinstance(m, str) for m in methods),
        f"{path}: methods: expected a non-empty list of method names",
    )
    require(
        isinstance(seeds, list) and bool(seeds) and all(type(s) is int and s >= 0 for s in seeds),
        f"{path}: seeds: expected a non-empty list of integers >= 0",
    )
    require(
        isinstance(trackers, list) and all(isinstance(s, str) for s in trackers),
        f'{path}: log: expected a list of trackers, e.g. ["tensorboard", "mlflow=sqlite:///mlflow.db"]',
    )
    assert isinstance(traces, dict) and isinstance(methods, list) and isinstance(trackers, list)  # require()d above
    try:
        log = destinations(trackers)
    except ConfigError as exc:
        raise ConfigError(f"{path}: log: {exc}") from None
    return Suite(
        description=str(raw.get("description", "")),
        traces={name: flat_sets(table) for name, table in traces.items()},
        methods=tuple(methods),
        seeds=tuple(seeds),
        log=log,
    )


def suite_request(
    suite: Suite | None,
    traces: list[str],
    methods: list[str],
    seeds: list[int],
    trace_sets: dict[str, str],
    method_sets: dict[str, str],
) -> Request:
    """A suite's request, or the command line's; traces, methods or seeds given on the command line replace the suite's.

    Each trace gets the suite's overrides for it, then the command line's ``--set`` values.
    """
    traces = traces or list(suite.traces if suite else [])
    require(bool(traces), "sweep: give --traces (and optionally --methods), or a --suite file")
    return Request(
        traces={t: {**(suite.traces.get(t, {}) if suite else {}), **trace_sets} for t in traces},
        methods=tuple(dict.fromkeys(methods or (suite.methods if suite else []))),  # a repeat would share a run folder
        seeds=tuple(dict.fromkeys(seeds or (suite.seeds if suite else [0]))),
        method_sets=method_sets,
    )


def plan_jobs(request: Request, execution: Execution) -> list[RunJob]:
    """Validate the request and list its runs, FedAvg's first (the others' time-to-accuracy target, the pool's first start).

    Without methods, each trace runs its own default comparison (its TOML's or trace file's ``methods``).
    """
    stems: dict[str, str] = {}
    for name, sets in request.traces.items():
        check_trace(name, sets)
        other = stems.setdefault(Path(name).stem, name)
        require(other == name, f"--traces: {other!r} and {name!r} would share the run folder {Path(name).stem!r}")
    execution = replace(execution, out=execution.out.resolve())
    jobs = [
        RunJob(str(Path(trace).resolve()) if is_trace_file(trace) else trace, sets, spec.name, method_sets, seed, execution)
        for trace, sets in request.traces.items()
        for spec, method_sets in method_configs(request.methods or default_methods(trace, sets), request.method_sets)
        for seed in request.seeds
    ]
    return sorted(jobs, key=lambda job: job.method != REFERENCE)


def method_configs(names: tuple[str, ...] | list[str], sets: dict[str, str]) -> list[tuple[MethodSpec, dict[str, str]]]:
    """Each named method with its share of the ``method.KEY`` overrides; a key that no selected method has is an error."""
    specs = [load_method(name) for name in names]
    fields = [set(spec.params.__dataclass_fields__) for spec in specs]
    unknown = sorted(set(sets) - set().union(*fields))
    if unknown:
        allowed = "; ".join(f"{spec.name}: {', '.join(sorted(f)) or '(none)'}" for spec, f in zip(specs, fields))
        raise ConfigError(f"--set method.{unknown[0]}: no selected method has this parameter ({allowed})")
    return [(spec, {k: v for k, v in sets.items() if k in f}) for spec, f in zip(specs, fields)]


def check_trace(name: str, sets: dict[str, str]) -> None:
    """Raise the usual one-line error for an unknown trace, a missing trace file or a bad override."""
    if is_trace_file(name):
        if not Path(name).is_file():
            raise TraceFileError(f"{name}: no such trace file")
    else:
        named_spec(name, sets)


def validate_jobs(jobs: list[RunJob]) -> None:
    """Build each trace of ``jobs`` before any run starts, so that what only a built trace can refuse stops them all.

    That is a given ``train.participants`` above the trace's clients or a damaged trace file. A trace
    without a drift event within its rounds is reported once, as a warning.
    """
    quiet: set[str] = set()
    for key in dict.fromkeys(job.trace_key for job in jobs):
        trace = resolved_trace(*key).trace
        if not len(trace.event_round) and trace.name not in quiet:
            quiet.add(trace.name)
            log.warning("%s: no drift event within its %d rounds; recovery is not measured", trace.name, trace.rounds)
