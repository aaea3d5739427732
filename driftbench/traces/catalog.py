"""Named traces from the top-level ``traces/*.toml`` and resolution of ``--trace NAME|FILE``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from driftbench.config import (
    as_plain,
    build,
    catalog_files,
    check_table,
    check_types,
    described,
    lookup,
    read_toml,
    recorded_params,
    require,
)
from driftbench.data.pool import Pool
from driftbench.data.sources import SOURCES, load_pool, source_params, source_reference
from driftbench.errors import ConfigError, DataSourceError
from driftbench.paths import catalog_dir
from driftbench.registry import AddedTomls
from driftbench.traces.generators import GENERATORS
from driftbench.traces.io import load_trace
from driftbench.traces.model import Trace
from driftbench.train_config import TrainConfig

CATALOG_DIR = catalog_dir("traces")
PLUGIN_TOMLS = AddedTomls("trace")  # what plug-ins add: driftbench.discovery hands them over
SPEC_KEYS = {  # key -> TOML type
    "description": str,
    "generator": str,
    "variant_of": str,
    "paper": str,
    "drift": str,
    "methods": list,
    "params": dict,
    "source": dict,
    "train": dict,
    "scale": dict,
}
DRIFT_KINDS = {  # a named trace's kind of drift (its TOML's ``drift``) -> what drifts
    "none": "nothing drifts: clients keep their distribution (skew without drift)",
    "label": "the label distribution P(y) of clients changes",
    "concept": "the labelling P(y|x) of clients changes (label permutations)",
    "feature": "the input distribution P(x) of clients changes (rotated images)",
    "natural": "data arrive over time as in a real data set (dates, regions, seasons)",
}
SCALES = ("embedded", "paper")
DEFAULT_METHODS = ("fedavg",)  # the comparison of a trace whose TOML or file names none
SCALE_KEYS = {"params", "source", "train"}
SCALE_SET = "scale"  # the --set key (and --scale option) that picks a scale; resolve() takes it out of the sets
DATA_SEED = "seed"  # the generator parameter that follows a run's seed unless the trace's TOML or --set gives it


@dataclass(frozen=True)
class TraceSpec:
    """A named trace: generator and its parameters, source, training settings, default methods."""

    name: str
    description: str
    paper: str
    generator: str
    params: Any
    source: str
    source_params: Any
    train: TrainConfig
    methods: tuple[str, ...]
    drift: str | None = None  # a DRIFT_KINDS key; None for a trace whose TOML names none (a plug-in's)

    def defaults(self) -> dict[str, Any]:
        """Run defaults stored (unhashed) in a trace file made from this spec."""
        return {"train": recorded_params(self.train), "methods": list(self.methods)}


def catalog() -> dict[str, Path]:
    """Trace names and their TOML files, those of the plug-ins loaded (``driftbench.discovery.plugins``) included."""
    return PLUGIN_TOMLS.over(catalog_files(CATALOG_DIR, "trace"))


def scaled(raw: dict[str, Any], scale: str, path: Path) -> dict[str, Any]:
    """The trace TOML with ``[scale.<scale>]`` laid over it; a scale's source table replaces the default's if it names another."""
    require(scale in SCALES, f"--scale {scale!r}: allowed: {', '.join(SCALES)}")
    scales = raw.get("scale", {})
    check_table(scales, dict.fromkeys(SCALES[1:], dict), f"{path} [scale]")
    if scale == "embedded":
        return raw
    require(scale in scales, f"{path}: trace has no [scale.{scale}] table; scales: embedded")
    override = scales[scale]
    check_table(override, dict.fromkeys(SCALE_KEYS, dict), f"{path} [scale.{scale}]")
    return overlay(raw, override)


def read_spec(name: str, chain: tuple[str, ...] = ()) -> tuple[dict[str, Any], Path]:
    """The named trace's TOML table and path; a variant (``variant_of = "BASE"``) is laid over its base's table.

    A variant lists only what it changes: its ``params``, ``train`` and ``source`` keys replace the
    base's one by one (a source of another name replaces the base's source table), other keys whole.
    ``chain`` holds the variants that led here, to refuse a cycle.
    """
    path = lookup(catalog(), name, "trace")
    raw = read_toml(path)
    check_table(raw, SPEC_KEYS, str(path))
    if "variant_of" not in raw:
        return raw, path
    base_name = raw.pop("variant_of")
    if "generator" in raw or base_name in (*chain, name):
        raise ConfigError(
            f"{path}: a variant names in variant_of a base that does not lead back to it "
            f"({' -> '.join((*chain, name, base_name))}), and has no generator key"
        )
    base, _ = read_spec(base_name, (*chain, name))
    return overlay(base, raw), path


def overlay(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` laid on ``base``: params and train key by key; source key by key unless ``over`` names another source."""
    default_source, source = base.get("source", {}), over.get("source", {})
    if source.get("name", default_source.get("name")) == default_source.get("name"):
        source = {**default_source, **source}
    return {
        **base,
        **over,
        "params": {**base.get("params", {}), **over.get("params", {})},
        "train": {**base.get("train", {}), **over.get("train", {})},
        "source": source,
    }


def load_spec(name: str, scale: str = "embedded") -> TraceSpec:
    """Parse and validate the TOML of the named trace at ``scale`` (``embedded`` or ``paper``)."""
    raw, path = read_spec(name)
    raw = scaled(raw, scale, path)
    drift = drift_of(raw, path)
    generator = lookup(GENERATORS, raw.get("generator", ""), f"generator in {path}")
    source = dict(raw.get("source", {}))
    check_types(source, {"name": str}, f"{path} [source]")
    source_name, implied = source_reference(source.pop("name", ""), f"source in {path}")
    source = source_params(source_name, {**implied, **source}, f"{path} [source]")
    params = build(generator.params, raw.get("params", {}), f"{path} [params]")
    train = build(TrainConfig, raw.get("train", {}), f"{path} [train]")
    return TraceSpec(
        name=name,
        description=described(raw, path),
        paper=raw.get("paper", ""),
        generator=generator.name,
        params=params,
        source=source_name,
        source_params=source,
        train=train,
        methods=tuple(raw.get("methods", DEFAULT_METHODS)),
        drift=drift,
    )


def drift_of(raw: dict[str, Any], path: Path) -> str | None:
    """A trace TOML's kind of drift (``drift``, a ``DRIFT_KINDS`` key, inherited by a variant); None where it names none."""
    drift = raw.get("drift")
    require(drift is None or drift in DRIFT_KINDS, f"{path}: drift = {drift!r}; allowed: {', '.join(DRIFT_KINDS)}")
    return drift


def drift_kind(name: str) -> str | None:
    """The kind of drift of the catalog trace ``name``; None for a name the catalog lacks or a trace that names none."""
    if name not in catalog():
        return None
    return drift_of(*read_spec(name))


def apply_sets(spec: TraceSpec, sets: dict[str, str]) -> TraceSpec:
    """Apply ``--set`` values for trace parameters (bare or ``params.``), ``source``/``source.KEY`` and ``train.KEY``.

    A bare key names a generator parameter or, if there is none by that name, a training setting.
    """
    params: dict[str, str] = {}
    train: dict[str, str] = {}
    source: dict[str, str] = {}
    source_name = spec.source
    param_fields = set(spec.params.__dataclass_fields__)
    train_fields = set(TrainConfig.__dataclass_fields__)
    for key, value in sets.items():
        section, _, field = key.rpartition(".")
        if key == "source":
            source_name, implied = source_reference(value)
            source = {**implied, **source}
        elif section == "source":
            source[field] = value
        elif section in ("params", "") and field in param_fields:
            params[field] = value
        elif section in ("train", "") and field in train_fields:
            train[field] = value
        else:
            raise ConfigError(
                f"--set {key}: unknown key for trace {spec.name!r}; trace parameters: "
                f"{', '.join(sorted(param_fields))}; training: {', '.join(sorted(train_fields))}; "
                "source: source, source.KEY; method: method.KEY"
            )
    if "root" not in SOURCES[source_name].params.__dataclass_fields__:
        source.pop("root", None)  # source.root (--data-root) concerns only sources that read files
    base = spec.source_params if source_name == spec.source else None
    return replace(
        spec,
        params=build(type(spec.params), params, f"--set ({spec.name})", base=spec.params),
        train=build(TrainConfig, train, "--set train", base=spec.train),
        source=source_name,
        source_params=build(SOURCES[source_name].params, source, f"--set source ({source_name})", base=base),
    )


@dataclass(frozen=True)
class ResolvedTrace:
    """What ``--trace NAME|FILE`` resolves to: the trace, its pool, training settings and default methods."""

    trace: Trace
    pool: Pool
    train: TrainConfig
    methods: tuple[str, ...]
    data_seed: int | None  # the generator's seed; None for a trace file, whose data is fixed


def generate(spec: TraceSpec) -> tuple[Trace, Pool]:
    """Load the spec's pool and run its generator; the same spec always gives the same trace."""
    pool = SOURCES[spec.source].load(spec.source_params)
    generator = GENERATORS[spec.generator]
    info = {
        "name": spec.name,
        "generator": spec.generator,
        "params": recorded_params(spec.params),
        "source": {"name": spec.source, "params": as_plain(spec.source_params)},
        "pool_fingerprint": pool.fingerprint(),
    }
    return generator.make(spec.params, pool).build(info, pool.y), pool


def pool_of(trace: Trace, where: str, root: str | None = None) -> Pool:
    """Reload the pool a trace was made from (from data folder ``root`` if given) and check it is the same data."""
    source = trace.info["source"]
    params = {**source["params"], "root": root} if root is not None and "root" in source["params"] else source["params"]
    pool = load_pool(source["name"], params)
    if pool.fingerprint() != trace.info["pool_fingerprint"]:
        raise DataSourceError(f"{where}: source {source['name']!r} now yields different data than the trace was made from")
    return pool


def is_trace_file(name: str) -> bool:
    """Whether ``--trace`` names a file rather than a catalog entry."""
    return name not in catalog() and (Path(name).suffix in (".trace", ".npz") or Path(name).exists())


def named_spec(name: str, sets: dict[str, str]) -> TraceSpec:
    """The catalog trace ``name`` at the scale ``sets["scale"]`` (default embedded) with the other ``--set`` values applied."""
    sets = dict(sets)
    scale = sets.pop(SCALE_SET, "embedded")
    return apply_sets(load_spec(name, scale), sets)


def default_methods(name: str, sets: dict[str, str]) -> tuple[str, ...]:
    """The default comparison of ``--trace NAME|FILE``, without loading its data."""
    if is_trace_file(name):
        return tuple(load_trace(Path(name))[1].get("methods", DEFAULT_METHODS))
    return named_spec(name, sets).methods


def resolve(name: str, sets: dict[str, str]) -> ResolvedTrace:
    """The trace, pool, training settings and default methods for ``--trace NAME|FILE`` with ``--set`` values.

    ``sets["scale"]`` (from ``--scale``) picks the named trace's scale.
    """
    if not is_trace_file(name):
        spec, trace, pool = build_named(name, sets)
        return ResolvedTrace(trace, pool, spec.train, spec.methods, getattr(spec.params, DATA_SEED, None))
    sets = dict(sets)
    scale = sets.pop(SCALE_SET, "embedded")
    require(scale == "embedded", f"--scale {scale}: {name} is a trace file, whose data is fixed; scale a named trace")
    trace, defaults = load_trace(Path(name))
    trace = replace(trace, info={**trace.info, "name": Path(name).stem})
    root = sets.pop("source.root", None)
    train_sets = {}
    for key, value in sets.items():
        field = key.removeprefix("train.")
        require(
            field in TrainConfig.__dataclass_fields__,
            f"--set {key}: a trace file's data is fixed (remake it with 'driftbench trace make'); "
            f"training keys: {', '.join(sorted(TrainConfig.__dataclass_fields__))}",
        )
        train_sets[field] = value
    train = build(TrainConfig, defaults.get("train", {}), f"{name} defaults")
    train = build(TrainConfig, train_sets, "--set train", base=train)
    return ResolvedTrace(
        trace,
        pool_of(trace, name, root),
        fit_participants(train, trace, "participants" in train_sets),
        tuple(defaults.get("methods", DEFAULT_METHODS)),
        None,
    )


def run_sets(name: str, sets: dict[str, str], seed: int) -> dict[str, str]:
    """The ``--set`` values that build the trace of a run at ``seed``.

    A named trace's generator seed follows the run's seed, so each seed draws its own clients'
    samples, groups and drift events from the same pool; a seed given by ``--set seed=N`` or the
    trace's TOML pins them. A trace file's data is fixed at every seed.
    """
    if is_trace_file(name) or DATA_SEED in sets or f"params.{DATA_SEED}" in sets:
        return sets
    raw, path = read_spec(name)
    params = scaled(raw, sets.get(SCALE_SET, "embedded"), path).get("params", {})
    generator = lookup(GENERATORS, raw.get("generator", ""), f"generator in {path}")
    if DATA_SEED in params or DATA_SEED not in generator.params.__dataclass_fields__:
        return sets
    return {**sets, DATA_SEED: str(seed)}


def build_named(name: str, sets: dict[str, str]) -> tuple[TraceSpec, Trace, Pool]:
    """The catalog trace ``name`` with ``--set`` values, generated, and its spec with training settings fitted to it."""
    spec = named_spec(name, sets)
    trace, pool = generate(spec)
    given = "train.participants" in sets or ("participants" in sets and "participants" not in spec.params.__dataclass_fields__)
    return replace(spec, train=fit_participants(spec.train, trace, given)), trace, pool


def fit_participants(train: TrainConfig, trace: Trace, given: bool) -> TrainConfig:
    """``train`` for ``trace``: a default participant count is capped at the trace's clients; a given one must fit."""
    clients = trace.num_clients
    if not given:
        return replace(train, participants=min(train.participants, clients))
    require(
        train.participants <= clients,
        f"trace {trace.name!r}: train.participants must be <= the trace's {clients} clients, got {train.participants}",
    )
    return train
