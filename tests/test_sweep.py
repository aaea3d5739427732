"""Sweeps: the local pool and Ray give the same records, finished runs are skipped, failures stay isolated."""

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from driftbench.cli import main
from driftbench.errors import ConfigError
from driftbench.record.files import WALL_CLOCK_FIELDS, as_json
from driftbench.record.runs import find_runs
from driftbench.runner import Execution, PoolOptions, Request, execute, load_suite, plan_jobs, run_pool, suite_request
from driftbench.traces.catalog import load_spec, resolve

REPO = Path(__file__).resolve().parents[1]
TINY = {"clients": "10", "rounds": "4", "train.participants": "5", "train.local_steps": "2"}
TRACES = {"label-swap": {**TINY, "drift_every": "2"}, "static": TINY}
METHODS = ["fedavg", "oracle"]


def comparable(summary):
    """A summary (read back from JSON, or typed) without wall-clock fields and paths (TTA keeps its rounds)."""
    summary = summary if isinstance(summary, dict) else as_json(asdict(summary))
    drop = set(WALL_CLOCK_FIELDS) | {"run_dir", "overhead", "time_to_accuracy"}
    tta = summary["time_to_accuracy"]
    return {**{k: v for k, v in summary.items() if k not in drop}, "tta_rounds": tta and tta["rounds"]}


def records(root):
    return {
        str(p.parent.relative_to(root)): comparable(json.loads(p.read_text()))
        for p in sorted(root.glob("*/*/seed*/summary.json"))
    }


def sweep_with_a_broken_trace(tmp_path, backend):
    """Sweep a suite of TRACES x METHODS and a trace file that is none on ``backend``; its outcomes.

    The jobs skip ``validate_jobs`` (which refuses the file up front), so the runs of the file fail in the workers.
    """
    broken = tmp_path / "broken.trace"
    broken.write_bytes(b"not a trace file")
    suite = tmp_path / "suite.toml"
    tables = "".join(f'[traces."{t}"]\n' + "".join(f"{k} = {v}\n" for k, v in sets.items()) for t, sets in TRACES.items())
    suite.write_text(f'methods = {json.dumps(METHODS)}\nseeds = [0]\n{tables}[traces."{broken}"]\n')
    jobs = plan_jobs(suite_request(load_suite(suite), [], [], [], {}, {}), Execution("cpu", tmp_path / backend))
    return run_pool(jobs, PoolOptions(backend, 2, quiet=True))


def test_a_failed_run_is_reported_and_the_others_go_on(tmp_path):
    outcomes = sweep_with_a_broken_trace(tmp_path, "local")
    assert sorted(o.state for o in outcomes) == ["failed"] * 2 + ["ran"] * 4
    failed = [o for o in outcomes if o.state == "failed"]
    assert all(o.label.startswith("broken/") and o.error.startswith("TraceFileError") for o in failed)
    assert len(records(tmp_path / "local")) == 4


def test_ray_backend_matches_local_backend(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'driftbench[ray]')")
    for backend in ("local", "ray"):
        assert [o.state for o in sweep_with_a_broken_trace(tmp_path, backend)].count("failed") == 2, backend
    local, ray = records(tmp_path / "local"), records(tmp_path / "ray")
    assert len(local) == 4 and local == ray
    read = {r.method: r.summary for r in find_runs(tmp_path / "local") if r.trace == "label-swap"}
    assert read["oracle"].time_to_accuracy.target == read["fedavg"].time_to_accuracy.target, "FedAvg's run set the target"


def test_a_damaged_trace_file_stops_a_sweep_before_any_run(tmp_path, capsys):
    broken = tmp_path / "broken.trace"
    broken.write_bytes(b"not a trace file")
    out = tmp_path / "runs"
    assert main(["sweep", "--traces", f"static,{broken}", "--methods", "fedavg", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {broken}: not a driftbench trace file (not an npz archive)\n" and not out.exists()


def test_finished_runs_are_skipped_incomplete_and_changed_ones_run(tmp_path):
    options = Execution(device="cpu", out=tmp_path)
    job = plan_jobs(Request({"static": TINY}, ("fedavg",)), options)[0]
    first = execute(job)
    assert (first.state, first.status) == ("ran", "ok")
    again = execute(job)
    assert again.state == "skipped" and comparable(again.summary) == comparable(first.summary)

    folder = tmp_path / "static/fedavg/seed0"
    (folder / "summary.json").unlink()  # an interrupted run: config.json but no summary.json
    assert execute(job).state == "ran" and (folder / "summary.json").exists()

    changed = plan_jobs(Request({"static": {**TINY, "train.lr": "0.2"}}, ("fedavg",)), options)[0]
    rerun = execute(changed)
    assert rerun.state == "ran" and json.loads((folder / "config.json").read_text())["train"]["lr"] == 0.2


def test_jobs_put_fedavg_first_and_the_ci_suite_is_valid():
    options = Execution(out=Path("unused"))
    suite = load_suite(REPO / "evaluation/suites/ci.toml")
    jobs = plan_jobs(suite_request(suite, [], [], [], {}, {}), options)
    assert len(jobs) == len(suite.traces) * len(suite.methods) * len(suite.seeds)
    assert [j.method for j in jobs[: len(suite.traces)]] == ["fedavg"] * len(suite.traces)
    only = plan_jobs(suite_request(suite, ["static"], ["fedavg"], [3], {"train.lr": "0.1"}, {}), options)
    assert [(j.label, j.trace_sets["train.lr"]) for j in only] == [("static/fedavg/seed3", "0.1")]
    assert only[0].trace_sets["rounds"] == suite.traces["static"]["rounds"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--traces", "label-swap", "--methods", "fedavgg"], "unknown method 'fedavgg'"),
        (["--traces", "nope", "--methods", "fedavg"], "unknown trace 'nope'"),
        (
            ["--traces", "static", "--methods", "fedavg", "--set", "drift_every=3"],
            "--set drift_every: unknown key for trace 'static'",
        ),
        (["--traces", "static", "--methods", "fedavg", "--set", "method.tau=1"], "--set method.tau: no selected method"),
        (["--methods", "fedavg"], "give --traces (and optionally --methods), or a --suite file"),
        (["--traces", "static", "--methods", "fedavg", "--jobs", "0"], "--jobs must be >= 1, got 0"),
        (["--suite", "missing.toml"], "missing.toml: cannot read"),
        (
            ["--traces", "static", "--methods", "fedavg", "--set", "train.model=resnet19"],
            "--set train: unknown model 'resnet19' (did you mean 'resnet18'?)",
        ),
        (
            ["--traces", "static,label-swap", "--methods", "fedavg", "--set", "clients=10", "--set", "participants=11"],
            "trace 'static': train.participants must be <= the trace's 10 clients, got 11",
        ),
    ],
)
def test_bad_sweeps_fail_before_any_run(args, message, tmp_path, capsys):
    assert main(["sweep", "--out", str(tmp_path), "--quiet", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not any(tmp_path.iterdir())


def test_suite_file_errors_name_the_field(tmp_path):
    suite = tmp_path / "s.toml"
    shutil.copy(REPO / "evaluation/suites/ci.toml", suite)
    suite.write_text(suite.read_text().replace("seeds = [0]", "seeds = [-1]"))
    with pytest.raises(ConfigError, match=r"s.toml: seeds: expected a non-empty list of integers >= 0"):
        load_suite(suite)


def test_scale_is_accepted_and_repeated_methods_or_seeds_run_once():
    options = Execution(out=Path("unused"))
    jobs = plan_jobs(
        suite_request(None, ["label-swap"], ["fedavg", "static", "fedavg"], [0, 0, 1], {"scale": "embedded"}, {}), options
    )
    assert sorted(job.label for job in jobs) == [
        "label-swap/fedavg/seed0",
        "label-swap/fedavg/seed1",
        "label-swap/static/seed0",
        "label-swap/static/seed1",
    ]
    with pytest.raises(ConfigError, match="scale"):
        plan_jobs(suite_request(None, ["label-swap"], ["fedavg"], [0], {"scale": "huge"}, {}), options)


def test_without_methods_each_trace_runs_its_own_comparison(tmp_path):
    trace_file = tmp_path / "mine.trace"
    assert main(["trace", "make", "static", "--set", "clients=4", "--set", "rounds=2", "--out", str(trace_file)]) == 0
    options = Execution(out=tmp_path)
    jobs = plan_jobs(suite_request(None, ["label-shift", "rotation", str(trace_file)], [], [0], {}, {}), options)
    expected = {(t, m) for t in ("label-shift", "rotation") for m in load_spec(t).methods}
    expected |= {(str(trace_file), m) for m in load_spec("static").methods}
    assert {(job.trace, job.method) for job in jobs} == expected
    assert jobs[0].method == "fedavg" and len(jobs) == len(expected)


def test_a_run_of_several_methods_builds_its_trace_once(tmp_path, monkeypatch):
    from driftbench.runner import job

    built = []
    monkeypatch.setattr(job, "resolve", lambda trace, sets: built.append(trace) or resolve(trace, sets))
    job.resolved_trace.cache_clear()
    summaries = job.run_here(
        plan_jobs(Request({"static": {**TINY, "rounds": "2"}}, ("fedavg", "oracle", "static")), Execution("cpu", tmp_path))
    )
    assert [s.method for s in summaries] == ["fedavg", "oracle", "static"] and built == ["static"]
