"""Crash-safe runs: exact checkpoints, resume after SIGKILL or SIGINT, divergence, unambiguous run-folder states."""

import io
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from driftbench.cli import main
from driftbench.engine.batched import TrainOutput, operators_on_one_thread
from driftbench.errors import RunError
from driftbench.methods.catalog import IMPLEMENTATIONS, MethodSpec
from driftbench.record.files import WALL_CLOCK_FIELDS, as_json
from driftbench.record.schema import ROUND_COLUMNS, read_summary, run_state
from driftbench.scheduler import Checkpointing, RunSpec, Scheduler, checkpoint, run
from driftbench.scheduler.loop import finite
from driftbench.traces.catalog import apply_sets, generate, load_spec

ROOT = Path(__file__).resolve().parents[1]
TINY = {
    "clients": "8",
    "rounds": "6",
    "drift_every": "3",
    "train_samples": "10",
    "test_samples": "5",
    "train.participants": "4",
    "train.local_steps": "2",
}
# Long enough (about 0.01 s a round, 1.9 s from the first checkpoint to the summary) that a kill
# up to 0.4 s after the first checkpoint lands mid-run.
SUBPROCESS_RUN = [
    "run",
    "--trace",
    "label-swap",
    "--method",
    "static",
    "--quiet",
    "--checkpoint-every",
    "2",
    "--set",
    "clients=12",
    "--set",
    "rounds=150",
    "--set",
    "drift_every=8",
    "--set",
    "fraction=0.5",
    "--set",
    "train.participants=6",
    "--set",
    "train.local_steps=4",
]


def deterministic(value):
    """``value`` without wall-clock fields (at any depth) and paths."""
    if isinstance(value, dict):
        return {k: deterministic(v) for k, v in value.items() if k not in WALL_CLOCK_FIELDS and k != "run_dir"}
    if isinstance(value, list):
        return [deterministic(v) for v in value]
    return value


def assert_same_record(a: Path, b: Path) -> None:
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a, b))
    assert deterministic(sa) == deterministic(sb)
    columns = [c for c in ROUND_COLUMNS if c not in WALL_CLOCK_FIELDS]
    ra, rb = (pd.read_csv(d / "rounds.csv")[columns] for d in (a, b))
    pd.testing.assert_frame_equal(ra, rb)
    assert (a / "events.csv").read_text() == (b / "events.csv").read_text()
    assert (a / "diagnostics.csv").read_text() == (b / "diagnostics.csv").read_text()


def test_encoding_round_trips_exactly():
    state = {
        "bank": {"w": torch.arange(6, dtype=torch.float64).reshape(2, 3).t()},
        "arrays": [
            np.arange(5, dtype=np.int8),
            np.ones((2, 0), dtype=np.float32),
            np.array([True, False]),
            np.array(["a", "bc"]),
            np.array(["2015-01-01"], dtype="datetime64[ns]"),
            np.arange(4, dtype=np.uint32)[::2],
        ],
        "scalars": (np.float64(0.1), np.int64(-3), 2**70, 0.5, True, None, "s"),
        "nested": {3: [(1, 2), {"k": np.float16(1.5)}]},
    }
    buffer = io.BytesIO()
    torch.save(checkpoint.encode(state, "state"), buffer)
    buffer.seek(0)
    back = checkpoint.decode(torch.load(buffer, weights_only=True))
    assert torch.equal(back["bank"]["w"], state["bank"]["w"]) and back["bank"]["w"].stride() == (1, 3)
    for got, want in zip(back["arrays"], state["arrays"]):
        assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    assert back["scalars"] == state["scalars"] and type(back["scalars"]) is tuple
    assert [type(v) for v in back["scalars"]] == [type(v) for v in state["scalars"]]
    assert back["nested"] == state["nested"] and type(back["nested"][3][0]) is tuple
    assert type(back["nested"][3][1]["k"]) is np.float16


@pytest.mark.parametrize("value,kind", [(lambda: 0, "function"), ({1, 2}, "set"), (np.array([object()]), "dtype object")])
def test_state_outside_the_contract_is_named(value, kind):
    class Holder:
        name = "mine"

    holder = Holder()
    holder.good, holder.bad = [1, 2], {"deep": [value]}
    with pytest.raises(RunError, match=rf"method mine: attribute bad\['deep'\]\[0\]: .*{kind}"):
        checkpoint.method_state(holder)


def tiny(implementation, out, **checkpointing):
    spec = apply_sets(load_spec("label-swap"), TINY)
    trace, pool = generate(spec)
    method = MethodSpec(implementation, implementation, "", "", IMPLEMENTATIONS[implementation].Params())
    return RunSpec(
        trace, pool, spec.train, method, seed=0, device="cpu", out=out, quiet=True, checkpointing=Checkpointing(**checkpointing)
    )


@pytest.mark.parametrize("implementation", sorted(IMPLEMENTATIONS))
def test_every_method_resumes_from_its_checkpoint_identically(implementation, tmp_path):
    """Run 6 rounds keeping the round-4 checkpoint, then drop the results (a crash) and resume from it."""
    spec = tiny(implementation, tmp_path, every=4, keep=True)
    uninterrupted = run(spec)
    folder = Path(uninterrupted.run_dir)
    saved = (
        json.loads((folder / "summary.json").read_text()),
        (folder / "rounds.csv").read_text(),
        (folder / "events.csv").read_text(),
        (folder / "diagnostics.csv").read_text(),
    )
    assert checkpoint.load(folder / "checkpoint", torch.device("cpu"))["next_round"] == 4
    (folder / "summary.json").unlink()
    (folder / "events.csv").unlink()  # so the resumed run must write both again
    (folder / "diagnostics.csv").unlink()
    assert run_state(folder) == "incomplete"
    resumed = run(tiny(implementation, tmp_path, resume=True))
    assert deterministic(as_json(asdict(resumed))) == deterministic(saved[0])
    rows = [pd.read_csv(io.StringIO(saved[1])), pd.read_csv(folder / "rounds.csv")]
    columns = [c for c in ROUND_COLUMNS if c not in WALL_CLOCK_FIELDS]
    pd.testing.assert_frame_equal(rows[0][columns], rows[1][columns])
    assert (folder / "events.csv").read_text() == saved[2]  # events before the checkpoint restored, later ones relogged
    assert (folder / "diagnostics.csv").read_text() == saved[3]
    assert not (folder / "checkpoint").exists()


def test_fresh_start_clears_a_previous_record_and_resume_keeps_a_complete_one(tmp_path):
    first = run(tiny("fedavg", tmp_path, keep=True, every=2))
    folder = Path(first.run_dir)
    assert run_state(folder) == "ok" and (folder / "checkpoint/state.pt").exists()
    written = (folder / "summary.json").stat().st_mtime_ns
    again = run(tiny("fedavg", tmp_path, resume=True))
    assert again == read_summary(folder / "summary.json") and again.final_accuracy == first.final_accuracy
    assert (folder / "summary.json").stat().st_mtime_ns == written  # kept, not rerun
    Scheduler(tiny("fedavg", tmp_path)).begin()
    assert run_state(folder) == "incomplete"
    assert not (folder / "summary.json").exists() and not (folder / "rounds.csv").exists()
    assert not (folder / "checkpoint").exists() and (folder / "config.json").exists()


def test_a_diverging_run_stops_keeps_its_metrics_and_exits_non_zero(tmp_path, capsys):
    args = [
        "run",
        "--trace",
        "label-swap",
        "--method",
        "fedavg,static",
        "--out",
        str(tmp_path),
        "--quiet",
        "--set",
        "clients=8",
        "--set",
        "rounds=12",
        "--set",
        "drift_every=4",
        "--set",
        "train.participants=4",
        "--set",
        "train.local_steps=2",
    ]
    assert main([*args, "--set", "train.lr=1e12"]) == 1
    table = capsys.readouterr().out
    assert table.count("diverged") == 2  # the comparison carries on after the first diverged run
    for method in ("fedavg", "static"):
        folder = tmp_path / "label-swap" / method / "seed0"
        summary = json.loads((folder / "summary.json").read_text())
        rounds = pd.read_csv(folder / "rounds.csv")
        assert summary["status"] == "diverged" and run_state(folder) == "diverged"
        assert 0 <= summary["diverged_round"] < 12 and len(rounds) >= 1
        assert rounds["round"].max() <= max(summary["diverged_round"] - 1, 0)
        assert not (folder / "checkpoint").exists()


@pytest.mark.parametrize(
    "bad, expected",
    [(None, True), (float("nan"), False), (float("inf"), False), (-float("inf"), False)],
    ids=["finite", "nan", "inf", "-inf"],
)
def test_finite_is_exact_even_where_a_sum_overflows(bad, expected):
    huge = torch.full((4, 1000), 3e38)  # every entry finite, their float32 sum is not
    if bad is not None:
        huge[2, 7] = bad
    result = TrainOutput({"w": huge, "b": torch.zeros(4, 3)}, torch.ones(4))
    assert finite(result) is expected
    assert finite(TrainOutput({"w": torch.ones(4, 2)}, torch.tensor([1.0, bad if bad is not None else 2.0]))) is expected


def start(out: Path) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "driftbench.cli", *SUBPROCESS_RUN, "--out", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_first_checkpoint(proc: subprocess.Popen, folder: Path) -> None:
    deadline = time.monotonic() + 120
    while not (folder / "checkpoint/state.pt").exists():
        assert proc.poll() is None, f"run ended before its first checkpoint: {proc.communicate()}"
        assert time.monotonic() < deadline, "no checkpoint within 120 s"
        time.sleep(0.01)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("uninterrupted")
    with operators_on_one_thread():
        assert main([*SUBPROCESS_RUN, "--out", str(out)]) == 0
    return out / "label-swap/static/seed0"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_killed_run_resumes_to_the_uninterrupted_record(sig, uninterrupted, tmp_path, capsys):
    folder = tmp_path / "label-swap/static/seed0"
    proc = start(tmp_path)
    wait_for_first_checkpoint(proc, folder)
    delay = float(np.random.default_rng().uniform(0, 0.4))  # lands on a random later round
    time.sleep(delay)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert run_state(folder) == "incomplete", f"run finished before the signal (delay {delay:.2f} s)"
    if sig == signal.SIGINT:
        assert proc.returncode == 130
        line = err.strip().splitlines()[-1]
        assert line.startswith("error: interrupted after round ") and "resume with: driftbench run " in line
        command = shlex.split(line.split("resume with: ", 1)[1])
        assert command[:2] == ["driftbench", "run"] and command[-1] == "--resume"
    else:
        assert proc.returncode == -signal.SIGKILL
        command = ["driftbench", *SUBPROCESS_RUN, "--out", str(tmp_path), "--resume"]
    with operators_on_one_thread():
        assert main(command[1:]) == 0
    assert_same_record(uninterrupted, folder)
    assert not (folder / "checkpoint").exists()
