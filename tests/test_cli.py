"""End-to-end: the CLI drives generation, runs, trace files and errors; the run record follows the contract."""

import json
import subprocess
import sys
from dataclasses import asdict

import pandas as pd
import pytest

from driftbench.cli import main
from driftbench.methods import catalog as method_catalog
from driftbench.record.files import WALL_CLOCK_FIELDS, as_json
from driftbench.record.runs import read_records
from driftbench.record.schema import ROUND_COLUMNS
from driftbench.traces import catalog as trace_catalog
from driftbench.traces.catalog import load_spec

SMALL = [
    "--set",
    "clients=12",
    "--set",
    "rounds=16",
    "--set",
    "drift_every=5",
    "--set",
    "fraction=0.5",
    "--set",
    "train.participants=6",
    "--set",
    "train.local_steps=4",
]


def run_cli(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def metrics_of(summary):
    """The summary without wall-clock fields and paths."""
    overhead = {k: v for k, v in summary["overhead"].items() if k not in WALL_CLOCK_FIELDS}
    return {**{k: v for k, v in summary.items() if k not in (*WALL_CLOCK_FIELDS, "run_dir")}, "overhead": overhead}


def test_run_writes_the_record_and_prints_the_table(tmp_path, capsys):
    code, out, _ = run_cli(["run", "--trace", "label-swap", "--out", str(tmp_path), "--quiet", *SMALL], capsys)
    assert code == 0
    assert out.splitlines()[0].split()[:3] == ["method", "final_acc", "tta_speedup"]
    for method in load_spec("label-swap").methods:
        run = tmp_path / "label-swap" / method / "seed0"
        config = json.loads((run / "config.json").read_text())
        summary = json.loads((run / "summary.json").read_text())
        rounds = pd.read_csv(run / "rounds.csv")
        assert tuple(rounds.columns) == ROUND_COLUMNS
        assert len(rounds) == 16 and rounds["round"].tolist() == list(range(16))
        assert config["trace"]["hash"] == summary["trace_hash"] and config["method"]["name"] == method
        assert config["train"]["participants"] == 6 and config["seed"] == 0
        assert "width" not in config["train"]  # added after runs were recorded: only when set (their hashes stay)
        assert [r["round"] for r in summary["recovery"]] == [5, 10, 15]
        assert summary["status"] == "ok" and method in out
        for key in (
            "final_accuracy",
            "time_to_accuracy",
            "ari_mean",
            "ari_final",
            "n_clusters_final",
            "overhead",
            "sim_seconds",
            "wall_seconds",
        ):
            assert key in summary
        assert rounds["sim_seconds"].is_monotonic_increasing and rounds["upload_bytes"].iloc[-1] > 0
    oracle = json.loads((tmp_path / "label-swap/oracle/seed0/summary.json").read_text())
    fedavg = json.loads((tmp_path / "label-swap/fedavg/seed0/summary.json").read_text())
    assert oracle["ari_mean"] >= 0.99 and oracle["oracle"] is True
    target = fedavg["time_to_accuracy"]["target"]
    plateau = pd.read_csv(tmp_path / "label-swap/fedavg/seed0/rounds.csv")["accuracy_mean"].iloc[-8:]  # the second half
    assert target["rule"] == "reference" and target["reference_level"] == pytest.approx(plateau.mean())
    assert target["value"] == pytest.approx(plateau.mean() - 2 * plateau.std(ddof=1))
    assert oracle["time_to_accuracy"] is None, "the record holds no time it could not know when its run ended"
    [read] = read_records([tmp_path / "label-swap/oracle/seed0"])
    assert as_json(asdict(read.summary.time_to_accuracy.target)) == target, "readers measure every method against FedAvg's"
    assert f"time-to-accuracy target {target['value']:.3f}: fedavg's plateau" in out
    assert set(fedavg["streaming"]) == {"mean_accuracy", "worst_interval_accuracy", "post_drift_accuracy"}


def test_runs_are_deterministic_seeded_and_the_same_in_parallel(tmp_path, capsys):
    """One after another (--jobs 1) or in parallel (2 processes, 1 thread each): the same records and table."""
    args = ["run", "--trace", "label-swap", "--method", "fedavg,static,fielding", "--quiet", *SMALL]
    tables = [run_cli([*args, "--out", str(tmp_path / out), "--jobs", jobs], capsys) for out, jobs in (("a", "1"), ("b", "2"))]
    assert [code for code, _, _ in tables] == [0, 0]
    assert tables[0][1].replace(str(tmp_path / "a"), "") == tables[1][1].replace(str(tmp_path / "b"), "")
    assert run_cli([*args, "--out", str(tmp_path / "c"), "--seed", "1"], capsys)[0] == 0
    for method in ("fedavg", "static", "fielding"):
        a, b = (json.loads((tmp_path / o / "label-swap" / method / "seed0/summary.json").read_text()) for o in "ab")
        c = json.loads((tmp_path / "c/label-swap" / method / "seed1/summary.json").read_text())
        assert metrics_of(a) == metrics_of(b) and (a["time_to_accuracy"] is None) == (method != "fedavg")
        ra, rb = (pd.read_csv(tmp_path / o / "label-swap" / method / "seed0/rounds.csv") for o in "ab")
        deterministic = [c for c in ROUND_COLUMNS if c not in WALL_CLOCK_FIELDS]
        pd.testing.assert_frame_equal(ra[deterministic], rb[deterministic])
        ea, eb = ((tmp_path / o / "label-swap" / method / "seed0/events.csv").read_text() for o in "ab")
        assert ea == eb
        assert a["final_accuracy"] != c["final_accuracy"]


def test_trace_file_replays_the_named_trace(tmp_path, capsys):
    path = tmp_path / "my.trace"
    code, out, _ = run_cli(["trace", "make", "label-swap", "--out", str(path), *SMALL], capsys)
    assert code == 0 and path.exists() and "wrote" in out
    code, shown, _ = run_cli(["trace", "show", str(path)], capsys)
    assert code == 0 and "clients    12" in shown and "mean L1 shift" in shown
    common = ["--method", "fedavg", "--quiet", "--set", "train.participants=6", "--set", "train.local_steps=4"]
    run_cli(["run", "--trace", str(path), "--out", str(tmp_path / "file"), *common], capsys)
    run_cli(["run", "--trace", "label-swap", "--out", str(tmp_path / "named"), *common, *SMALL], capsys)
    from_file = json.loads((tmp_path / "file/my/fedavg/seed0/summary.json").read_text())
    named = json.loads((tmp_path / "named/label-swap/fedavg/seed0/summary.json").read_text())
    assert from_file["trace_hash"] == named["trace_hash"]
    assert from_file["final_accuracy"] == named["final_accuracy"]


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["run", "--trace", "nope"],
            "unknown trace 'nope'; valid: changepoints, fmow-frequent, fmow-small, fmow-timeline, label-combos, label-shift,",
        ),
        (["run", "--trace", "label-swap", "--method", "fedavgg"], "did you mean 'fedavg'"),
        (["run", "--trace", "label-swap", "--set", "fraction=2"], "fraction must be in [0, 1], got 2.0"),
        (["run", "--trace", "label-swap", "--set", "oops"], "--set 'oops': expected key=value"),
        (
            ["run", "--trace", "label-swap", "--set", "method.colour=1"],
            "--set method.colour: no selected method has this parameter",
        ),
        (["run", "--trace", "label-swap", "--set", "source=mnistt"], "unknown source 'mnistt'"),
        (["run", "--trace", "missing.trace"], "missing.trace: no such trace file"),
        (["trace", "show", "label-swap", "--set", "train.lr=-1"], "lr must be > 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, capsys, tmp_path):
    code, _, err = run_cli([*args, "--out", str(tmp_path)] if args[0] == "run" else args, capsys)
    assert code == 2
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_list_and_help_teach_the_commands(capsys):
    for what, catalog in (("traces", trace_catalog), ("methods", method_catalog)):
        lines = run_cli(["list", what], capsys)[1].splitlines()
        assert [line.split()[0] for line in lines] == list(catalog.catalog()) and all(len(line.split()) > 1 for line in lines)
    assert "digits" in run_cli(["list", "sources"], capsys)[1]
    help_text = subprocess.run([sys.executable, "-m", "driftbench.cli", "--help"], capture_output=True, text=True).stdout
    assert "driftbench run --trace label-swap" in help_text and "trace make" in help_text
