"""The method contract every method keeps, built-in or plug-in: checked by the test suite and ``driftbench check-method``.

On a tiny label-swap trace, run twice: the run ends ``ok``, the two runs' metrics are
identical, the model traffic in ``rounds.csv`` is what the plans declared (participants
times models downloaded and uploaded) plus the query traffic the method's overhead counts,
and the method's state can be checkpointed (arrays, tensors, plain values and their containers).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd

from driftbench.errors import RunError
from driftbench.methods.base import Method
from driftbench.methods.catalog import MethodSpec
from driftbench.methods.rounds import Plan
from driftbench.record.files import ROUNDS, run_dir
from driftbench.scheduler import Checkpointing, RunSpec, run
from driftbench.scheduler.checkpoint import method_state
from driftbench.traces.catalog import TraceSpec, apply_sets, catalog, generate, load_spec

TINY_GENERATOR = {"clients": 8, "rounds": 6, "train_samples": 10, "test_samples": 5}  # the shared ClientParams
TINY_TRAIN = {"train.participants": "4", "train.local_steps": "2"}
DURATIONS = ("_round", "_rounds", "_every")  # endings of generator parameters counted in rounds
DETERMINISTIC = ("final_accuracy", "recovery", "ari_mean", "n_clusters_final", "mean_client_distance_final", "status")


def generator_trace(generator: str) -> str:
    """The first catalog trace that ``generator`` makes."""
    names = [t for t in catalog() if load_spec(t).generator == generator]
    if not names:
        raise AssertionError(f"generator {generator!r} has no trace TOML in traces/")
    return names[0]


def tiny_spec(generator: str) -> TraceSpec:
    """The generator's catalog trace shrunk to ``TINY_GENERATOR``; parameters counted in rounds shrink with the horizon."""
    spec = load_spec(generator_trace(generator))
    shrink = TINY_GENERATOR["rounds"] / (spec.params.rounds or TINY_GENERATOR["rounds"])  # 0: a horizon from elsewhere (a file)
    durations = {f.name: getattr(spec.params, f.name) for f in fields(spec.params) if f.name.endswith(DURATIONS)}
    sets = {**TINY_GENERATOR, **{k: max(1, int(v * shrink)) if v else 0 for k, v in durations.items()}}
    return apply_sets(spec, {**{k: str(v) for k, v in sets.items()}, **TINY_TRAIN})


@dataclass(frozen=True)
class RecordedSpec(MethodSpec):
    """A method configuration that keeps the instances it creates in ``methods`` and the plans they return in ``plans``."""

    methods: list[Method] = field(default_factory=list, compare=False)
    plans: list[Plan] = field(default_factory=list, compare=False)

    def create(self) -> Method:
        """A fresh instance whose ``plan`` is recorded."""
        method = super().create()
        self.methods.append(method)
        planned = method.plan

        def recorded(*args: Any) -> Plan:
            self.plans.append(planned(*args))
            return self.plans[-1]

        setattr(method, "plan", recorded)  # noqa: B010  (an instance attribute, so the class stays untouched)
        return method


def contract_failures(method: MethodSpec, out: Path) -> list[str]:
    """Run ``method`` twice on the tiny label-swap trace under ``out``; the contract clauses it breaks (none: it keeps it)."""
    spec = tiny_spec("label-swap")
    trace, pool = generate(spec)
    recorded = RecordedSpec(method.name, method.implementation, method.description, method.paper, method.params)
    summaries = [
        run(RunSpec(trace, pool, spec.train, recorded, 0, "cpu", out / o, quiet=True, checkpointing=Checkpointing(every=0)))
        for o in "ab"
    ]
    failures = []
    if summaries[0].status != "ok":
        failures.append(f"the run ended {summaries[0].status!r}, not 'ok'")
    first, second = ({k: getattr(s, k) for k in DETERMINISTIC} for s in summaries)
    failures += [f"two runs of one seed differ in {k}: {first[k]} vs {second[k]}" for k in first if first[k] != second[k]]
    plans = recorded.plans[: len(recorded.plans) // 2]
    if not sum(len(p.participants) for p in plans):
        failures.append("no client trained in any round")
    rounds = pd.read_csv(run_dir(out / "a", trace.name, method.name, 0) / ROUNDS)
    model_bytes, extra = recorded.methods[0].ctx.model_bytes, summaries[0].overhead
    for column, per_plan, query in (
        ("download_bytes", "models_downloaded", extra.extra_download_bytes),
        ("upload_bytes", "models_uploaded", extra.extra_upload_bytes),
    ):
        declared = sum(len(p.participants) * getattr(p, per_plan) for p in plans) * model_bytes + query
        if rounds[column].iloc[-1] != declared:
            failures.append(f"rounds.csv {column} {rounds[column].iloc[-1]} != plans' {per_plan} x {model_bytes} B + queries")
    method_object = recorded.methods[0]
    del vars(method_object)["plan"]  # the recording wrapper, not the method's own state
    try:
        method_state(method_object)
    except RunError as exc:
        failures.append(f"its state cannot be checkpointed ({exc})")
    return failures


def assert_keeps_contract(method: MethodSpec | str, out: Path) -> None:
    """Pytest helper: fail with the broken clauses unless ``method`` (a spec or a catalog name) keeps the contract."""
    from driftbench.methods.catalog import load_method

    spec = load_method(method) if isinstance(method, str) else method
    failures = contract_failures(spec, out)
    assert not failures, f"method {spec.name!r} breaks the contract: " + "; ".join(failures)
