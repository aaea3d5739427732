"""Faults injected: a Ray worker killed mid-sweep, resumed.

It ends with every run trained once to completion and records equal to those of a sweep nobody
interrupted, wall-clock fields aside.
"""

import json
import logging
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import torch

from driftbench.locks import LEASE_ENV, LOCK, flocked, lock_text, read_holder
from driftbench.record.files import WALL_CLOCK_FIELDS
from driftbench.record.schema import ROUND_COLUMNS
from driftbench.runner import Execution, PoolOptions, Request, outcome_line, plan_jobs, run_here, run_pool
from driftbench.scheduler import Checkpointing, checkpoint

LEASE = 3.0  # seconds: the lease of the Ray workers' locks, so that a lost node's run is taken over in seconds
SWEEP = {
    "clients": "8",
    "rounds": "40",
    "drift_every": "10",
    "train_samples": "10",
    "test_samples": "5",
    "train.participants": "4",
    "train.local_steps": "2",
}


def deterministic(value):
    """``value`` without wall-clock fields (at any depth) and paths."""
    if isinstance(value, dict):
        return {k: deterministic(v) for k, v in value.items() if k not in WALL_CLOCK_FIELDS and k != "run_dir"}
    if isinstance(value, list):
        return [deterministic(v) for v in value]
    return value


def records(root: Path) -> dict[str, object]:
    """Every run record below ``root``: its summary, rounds, events and diagnostics, wall-clock fields aside."""
    columns = [c for c in ROUND_COLUMNS if c not in WALL_CLOCK_FIELDS]
    return {
        str(folder.relative_to(root)): (
            deterministic(json.loads((folder / "summary.json").read_text())),
            pd.read_csv(folder / "rounds.csv")[columns].to_csv(index=False),
            (folder / "events.csv").read_text(),
            (folder / "diagnostics.csv").read_text(),
        )
        for folder in sorted(path.parent for path in root.rglob("summary.json"))
    }


def wait_for(condition, what: str, seconds: float = 300.0) -> None:
    """Poll ``condition`` every 5 ms until it holds; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {seconds:.0f} s"
        time.sleep(0.005)


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster of two worker CPUs whose workers take locks with a lease of ``LEASE`` seconds."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'driftbench[ray]')")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
        runtime_env={"env_vars": {LEASE_ENV: str(LEASE)}},
    )
    yield ray
    ray.shutdown()


def test_a_ray_worker_killed_mid_sweep_is_retried_after_its_lease_and_resumes_from_its_checkpoint(ray_cluster, tmp_path, caplog):
    """Four runs on two Ray workers; one worker is killed after its run's first checkpoint, as if its node were lost.

    The lock is made to name another host before the kill, so only its lease can free it: the retried
    task waits for it, takes the run over and resumes from the checkpoint the dead worker wrote.
    """
    execution = Execution("cpu", tmp_path / "killed", checkpointing=Checkpointing(every=4))
    request = Request({"label-swap": SWEEP}, ("fedavg", "oracle"), (0, 1))
    jobs = plan_jobs(request, execution)
    victim = execution.out.resolve() / jobs[0].label
    with caplog.at_level(logging.INFO, logger="driftbench"), ThreadPoolExecutor(1) as thread:
        sweep = thread.submit(run_pool, jobs, PoolOptions("ray", 2, quiet=True))
        wait_for(lambda: checkpoint.exists(victim / "checkpoint") or sweep.done(), "checkpoint")
        holder = read_holder(victim)
        assert holder is not None and not sweep.done()
        os.kill(holder.pid, signal.SIGSTOP)  # frozen: it writes nothing more
        saved = checkpoint.load(victim / "checkpoint", torch.device("cpu"))
        with flocked(victim):  # the lock now tells of a worker on a lost node: no process check can free it
            (victim / LOCK).write_text(lock_text(replace(holder, host="lost-node")))
        os.kill(holder.pid, signal.SIGKILL)
        outcomes = sweep.result(timeout=600)
    assert [o.state for o in outcomes] == ["ran"] * 4, outcome_line(outcomes)  # each run trained once, to the end
    died = [r.getMessage() for r in caplog.records if "its worker died" in r.getMessage()]
    assert len(died) == 1 and died[0].startswith(f"{jobs[0].label}: its worker died (")
    assert not list(execution.out.rglob(LOCK)) and not list(execution.out.rglob("*.tmp"))

    rows = pd.read_csv(victim / "rounds.csv")
    before = rows[rows["round"] < saved["next_round"]]
    kept = pd.DataFrame(saved["scheduler"]["rows"])
    assert len(before) == len(kept) > 0  # the rows up to the checkpoint are the dead worker's, wall seconds and all
    assert before["wall_seconds"].tolist() == pytest.approx(kept["wall_seconds"].tolist(), rel=1e-12, abs=0)

    run_here(plan_jobs(request, Execution("cpu", tmp_path / "whole", checkpointing=Checkpointing(every=4))))
    assert records(execution.out) == records(tmp_path / "whole") and len(records(execution.out)) == 4
