"""Behavioural conformance: replay a small catalog trace through the real scheduler and read back the run record.

``replay`` resolves ``--trace NAME --set KEY=VALUE`` and ``--set method.KEY=VALUE`` as ``driftbench run``
does and runs ``driftbench.scheduler.run`` on CPU; the test then reads rounds.csv, events.csv,
diagnostics.csv and summary.json. Where the record holds no per-round partition, ``Replay.partitions``
holds the method's assignment after every round, ``Replay.participants`` each round's participants,
``Replay.local_distance`` how far they moved from the model they started from, and ``Replay.admitted`` its
assignment once it placed the trace's newcomers (the method object is watched, never changed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from sklearn.metrics import adjusted_rand_score

from driftbench.engine.batched import Params
from driftbench.methods.base import Method
from driftbench.methods.catalog import MethodSpec, load_method
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import TrainResult
from driftbench.record.files import DIAGNOSTICS, EVENTS, ROUNDS, run_dir
from driftbench.record.schema import Summary, read_diagnostics, read_events, read_rounds
from driftbench.scheduler import Checkpointing, RunSpec, run
from driftbench.traces.catalog import resolve
from driftbench.traces.model import Trace

SEED = 0  # every measured value quoted in the tests is at this seed
SMALL = {"train_samples": "30", "test_samples": "10", "train.local_steps": "5", "train.eval_every": "1"}


@dataclass(frozen=True)
class WatchedSpec(MethodSpec):
    """A method configuration whose instance's assignment, participants and local training are copied out after every round."""

    partitions: list[np.ndarray] = field(default_factory=list, compare=False)
    participants: list[np.ndarray] = field(default_factory=list, compare=False)
    local_distance: list[float] = field(default_factory=list, compare=False)
    admitted: list[np.ndarray] = field(default_factory=list, compare=False)

    def create(self) -> Method:
        """A fresh instance whose ``aggregate`` and ``admit`` are watched (instance attributes: the class stays untouched)."""
        method = super().create()
        aggregate, admit = method.aggregate, method.admit

        def watched(rnd: int, result: TrainResult) -> None:
            start = {n: p[torch.as_tensor(result.plan.start_models, device=p.device)] for n, p in method.models.items()}
            self.local_distance.append(distance_moved(start, result.params))
            self.participants.append(result.plan.participants.copy())
            aggregate(rnd, result)
            self.partitions.append(method.assignment.copy())

        def watched_admit(newcomers: np.ndarray, clients: ClientQueries, rng: np.random.Generator) -> Params:
            start = admit(newcomers, clients, rng)
            self.admitted.append(method.assignment.copy())
            return start

        setattr(method, "aggregate", watched)  # noqa: B010
        setattr(method, "admit", watched_admit)  # noqa: B010
        return method


def distance_moved(start: dict[str, torch.Tensor], trained: dict[str, torch.Tensor]) -> float:
    """Mean over participants of the L2 distance between the trained model and the model it started from."""
    squared = sum((trained[n] - start[n]).double().pow(2).reshape(len(trained[n]), -1).sum(1) for n in trained)
    return float(torch.as_tensor(squared).sqrt().mean())


@dataclass(frozen=True)
class Replay:
    """One replayed run: the trace, its summary and record files, and the watched per-round state."""

    trace: Trace
    summary: Summary
    rounds: pd.DataFrame  # rounds.csv, indexed by round
    events: pd.DataFrame  # events.csv
    diagnostics: pd.DataFrame  # diagnostics.csv
    partitions: np.ndarray  # rounds x clients: the method's assignment after each round
    participants: list[np.ndarray]  # per round: the clients that trained
    local_distance: np.ndarray  # per round: participants' mean distance from their start model
    admitted: np.ndarray | None  # the method's assignment right after it placed the trace's newcomers (None: none)

    def truth(self, rnd: int) -> np.ndarray:
        """Every client's true group at round ``rnd``."""
        groups: np.ndarray = self.trace.seg_group[self.trace.segments_at(rnd)]
        return groups

    def ari(self, rnd: int) -> float:
        """Adjusted Rand index of the method's partition after round ``rnd`` against the true groups then."""
        return float(adjusted_rand_score(self.truth(rnd), self.partitions[rnd]))

    def kind(self, kind: str) -> pd.DataFrame:
        """The events of ``kind``, in order."""
        return self.events[self.events["kind"] == kind]

    def clients(self, kind: str, rnd: int) -> set[int]:
        """Every client named in an event of ``kind`` at round ``rnd``."""
        rows = self.kind(kind)
        return {int(c) for ids in rows[rows["round"] == rnd]["clients"] for c in ids.split()}

    def measured(self, quantity: str) -> pd.Series:
        """A diagnostics quantity's values by round (the last value where a round logged several)."""
        rows = self.diagnostics[self.diagnostics["quantity"] == quantity]
        return rows.groupby("round")["value"].last()


def label_swap_of_two_concepts(drift: int, rounds: int) -> dict[str, Any]:
    """``label-swap`` on 8 digit clients, all in every round, two concepts; a quarter switch at ``drift``.

    60 samples and 10 local steps at lr 0.1 make a round's update reach the scale of CFL's absolute thresholds and of
    FedDrift's loss-rise delta.
    """
    return {
        "clients": 8,
        "rounds": rounds,
        "concepts": 2,
        "drift_every": drift,
        "fraction": 0.25,
        "train_samples": 60,
        "train.local_steps": 10,
        "train.lr": 0.1,
        "train.participants": 8,
    }


def two_concepts_held(incumbents: int, rounds: int, newcomers: int = 0) -> dict[str, Any]:
    """``label-swap`` on 8x8 digits with two concepts (identity and reversed labels) held from round 0 and no drift;
    every one of the ``incumbents`` trains every round (60 samples, 10 local steps); ``newcomers`` join after the run."""
    return {
        "clients": incumbents + newcomers,
        "newcomers": newcomers,
        "rounds": rounds,
        "concepts": 2,
        "initial_concepts": 2,
        "drift_every": 100,
        "train_samples": 60,
        "train.local_steps": 10,
        "train.participants": incumbents,
    }


def replay(
    trace: str,
    method: str,
    out: Path,
    sets: dict[str, Any] | None = None,
    method_sets: dict[str, Any] | None = None,
) -> Replay:
    """Run ``method`` (``method_sets`` as ``--set method.KEY``) on the catalog ``trace`` (``SMALL`` and ``sets`` as ``--set``)."""
    resolved = resolve(trace, {k: str(v) for k, v in {**SMALL, **(sets or {})}.items()})
    base = load_method(method, {k: str(v) for k, v in (method_sets or {}).items()} or None)
    spec = WatchedSpec(base.name, base.implementation, base.description, base.paper, base.params)
    summary = run(
        RunSpec(resolved.trace, resolved.pool, resolved.train, spec, SEED, "cpu", out, quiet=True, checkpointing=Checkpointing(0))
    )
    folder = run_dir(out, resolved.trace.name, spec.name, SEED)
    return Replay(
        resolved.trace,
        summary,
        read_rounds(folder / ROUNDS).set_index("round"),
        read_events(folder / EVENTS),
        read_diagnostics(folder / DIAGNOSTICS),
        np.stack(spec.partitions),
        spec.participants,
        np.asarray(spec.local_distance),
        spec.admitted[0] if spec.admitted else None,
    )
