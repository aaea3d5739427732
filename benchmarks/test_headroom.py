"""Headroom gate: on every named trace's embedded default, the oracle must beat a plateaued FedAvg by a margin.

A benchmark separates methods only where clustering can pay: this runs ``fedavg`` and
``oracle`` on each trace in ``traces/`` for seeds 0-4, each seed with its own data (a local
sweep, two runs at a time) and fails with the whole table when the mean final-accuracy gap falls below the
trace's bound, or when FedAvg is still moving at the end (so the gap would be an artefact of
stopping early). The table is printed (``pytest benchmarks/test_headroom.py -s``) and is the
README's "oracle - fedavg" column.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from driftbench.record.files import ROUNDS
from driftbench.record.metrics import final_accuracy, plateau_change
from driftbench.record.schema import read_rounds
from driftbench.runner import Execution, PoolOptions, Request, plan_jobs, run_pool
from driftbench.traces.catalog import catalog

SEEDS = [0, 1, 2, 3, 4]
DEFAULT_BOUND = 0.10
BOUNDS = {"rotation": 0.05}  # feature drift: a global model can learn both orientations, only look-alikes conflict
PLATEAU = 0.01  # FedAvg's seed-mean accuracy may move at most this much over the last 20% of evaluations


def headroom_table(root: Path, traces: list[str]) -> pd.DataFrame:
    """Per trace, over the seeds: fedavg's and oracle's final accuracy, their gap, its bound, how far FedAvg's curve moves."""
    rows = []
    for trace in traces:
        curves = {
            m: [read_rounds(root / trace / m / f"seed{s}" / ROUNDS)["accuracy_mean"].to_numpy() for s in SEEDS]
            for m in ("fedavg", "oracle")
        }
        fedavg, oracle = (float(np.mean([final_accuracy(c) for c in curves[m]])) for m in ("fedavg", "oracle"))
        rows.append(
            {
                "trace": trace,
                "fedavg": fedavg,
                "oracle": oracle,
                "headroom": oracle - fedavg,
                "bound": BOUNDS.get(trace, DEFAULT_BOUND),
                "fedavg_plateau_change": plateau_change(np.mean(curves["fedavg"], axis=0)),
            }
        )
    return pd.DataFrame(rows)


def test_every_trace_leaves_room_for_clustering(tmp_path: Path) -> None:
    traces = sorted(catalog())
    pool = PoolOptions(jobs=min(2, os.cpu_count() or 1), quiet=True)
    request = Request({t: {} for t in traces}, ("fedavg", "oracle"), tuple(SEEDS))
    outcomes = run_pool(plan_jobs(request, Execution(out=tmp_path, threads=pool.threads)), pool)
    failed = [f"{o.label}: {o.error}" for o in outcomes if o.state == "failed" or o.status != "ok"]
    assert not failed, "runs failed:\n" + "\n".join(failed)
    table = headroom_table(tmp_path, traces)
    print("\n" + table.to_string(index=False, float_format="%.3f"))
    short = table[(table.headroom < table.bound) | (table.fedavg_plateau_change >= PLATEAU)]
    assert short.empty, f"oracle - fedavg below its bound, or FedAvg not plateaued (change >= {PLATEAU}):\n" + table.to_string(
        index=False, float_format="%.3f"
    )
