"""Trackers against the real packages: TensorBoard's event files and MLflow's store, read back, hold the run record's
numbers exactly (same values, same steps; in TensorBoard each as the 32-bit float TensorBoard keeps), live and
exported; a tracker that fails mid-run changes nothing in the run.

The expected values are computed here from the record's files, independently of driftbench.tracking.values.
"""

import json
import math
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator

from driftbench.cli import main
from driftbench.record.files import VOLATILE_CONFIG, WALL_CLOCK_FIELDS
from driftbench.record.runs import find_runs
from driftbench.record.schema import ROUND_COLUMNS
from driftbench.scheduler import Checkpointing
from driftbench.scheduler import run as run_spec
from driftbench.tracking import feed
from driftbench.tracking.destinations import Destination, Tracking
from driftbench.tracking.mlflow_tracker import MlflowTracker

# the main job's trace, its six methods, shrunk to seconds
TINY = [f"--set={s}" for s in ("clients=16", "rounds=12", "bucket_rounds=4", "window_rounds=8")]
TINY += [f"--set=train.{s}" for s in ("participants=6", "local_steps=2", "eval_every=2")]
METHODS = ("fedavg", "static", "fielding", "auxo", "flexcfl", "oracle")
SUMMARY_IDENTITY = ("schema_version", "trace", "trace_hash", "method", "oracle", "seed", "rounds", "run_dir")


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    """One sqlite MLflow store for the module (creating one takes seconds); each test uses its own experiment."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture(scope="module")
def live(tmp_path_factory, store):
    """The main job shrunk, run with --log tensorboard --log mlflow (pool workers)."""
    root = tmp_path_factory.mktemp("live")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)  # MLflow puts an experiment's artifacts under ./mlruns
        patch.setenv("MLFLOW_EXPERIMENT_NAME", "live")
        args = ["run", "--trace", "openimage-buckets", "--out", "runs", "--quiet", *TINY]
        assert main([*args, "--log", "tensorboard", "--log", f"mlflow={store}"]) == 0
    return root


def numbers(table, prefix=""):
    """Every number of a JSON table outside its lists, by dotted key (booleans and nulls are not numbers)."""
    for key, value in table.items():
        if isinstance(value, dict):
            yield from numbers(value, f"{prefix}{key}.")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield prefix + key, value


def record_scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """What a tracker must hold of a run: tag -> [(step, value)], from rounds.csv, events.csv, config.json, summary.json."""
    rounds = pd.read_csv(run_dir / "rounds.csv")
    expected = {
        f"rounds/{column}": [(int(r), float(v)) for r, v in zip(rounds["round"], rounds[column]) if not math.isnan(v)]
        for column in ROUND_COLUMNS[1:]
    }
    expected = {tag: values for tag, values in expected.items() if values}
    for (rnd, kind), n in pd.read_csv(run_dir / "events.csv").groupby(["round", "kind"]).size().items():
        expected.setdefault(f"events/{kind}", []).append((int(rnd), float(n)))
    trace = json.loads((run_dir / "config.json").read_text())["trace"]
    for (rnd, kind), n in sorted(Counter(zip(trace["event_rounds"], trace["event_kinds"])).items()):
        expected.setdefault(f"drift/{kind}", []).append((rnd, float(n)))
    summary = json.loads((run_dir / "summary.json").read_text())
    for key, value in numbers(summary):
        if key not in SUMMARY_IDENTITY:
            expected[f"summary/{key}"] = [(summary["rounds"] - 1, float(value))]
    return expected


def tensorboard_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of a TensorBoard run folder, read back with EventAccumulator."""
    events = EventAccumulator(str(folder), size_guidance={SCALARS: 0})
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()[SCALARS]}


def float32(scalars: dict[str, list[tuple[int, float]]]) -> dict[str, list[tuple[int, float]]]:
    """The values as TensorBoard keeps a scalar: a 32-bit float."""
    return {tag: [(step, float(np.float32(value))) for step, value in values] for tag, values in scalars.items()}


def mlflow_runs(store: str, experiment: str) -> dict[str, object]:
    """The MLflow runs of an experiment by name (trace/method/seed<k>)."""
    client = MlflowClient(store)
    found = client.get_experiment_by_name(experiment)
    runs = client.search_runs([found.experiment_id]) if found else []
    by_name = {run.info.run_name: run for run in runs}
    assert len(by_name) == len(runs), "one MLflow run per record"
    return by_name


def mlflow_scalars(store: str, run) -> dict[str, list[tuple[int, float]]]:
    """Every metric of an MLflow run with its whole history, read back with MlflowClient.get_metric_history."""
    client = MlflowClient(store)
    return {key: sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)) for key in run.data.metrics}


def test_run_logs_every_number_of_the_record_to_tensorboard_and_mlflow(live, store):
    runs = mlflow_runs(store, "live")
    assert sorted(runs) == sorted(f"openimage-buckets/{m}/seed0" for m in METHODS)
    for method in METHODS:
        name = f"openimage-buckets/{method}/seed0"
        record = live / "runs" / name
        expected = record_scalars(record)
        assert {"rounds/accuracy_mean", "rounds/accuracy_p10", "rounds/n_clusters", "rounds/sim_seconds"} <= set(expected)
        assert {"rounds/cluster_seconds", "rounds/upload_bytes", "drift/arrival", "summary/final_accuracy"} <= set(expected)
        assert tensorboard_scalars(live / "tensorboard" / name) == float32(expected)
        run = runs[name]
        assert mlflow_scalars(store, run) == expected
        config = json.loads((record / "config.json").read_text())
        summary = json.loads((record / "summary.json").read_text())
        assert run.info.status == "FINISHED" and run.data.tags["status"] == summary["status"] == "ok"
        assert run.data.tags["driftbench.record"] == str(record.resolve())
        params = run.data.params
        assert (params["trace"], params["method"], params["seed"]) == ("openimage-buckets", method, "0")
        assert params["trace_hash"] == config["trace"]["hash"] and params["commit"] == config["git_revision"]
        shown = {f"method.{k}": v if isinstance(v, str) else json.dumps(v) for k, v in config["method"]["params"].items()}
        assert shown and shown.items() <= params.items()
        own = summary["time_to_accuracy"]  # FedAvg's own; the others' is derived on reading, after their runs ended
        assert (own is None) == (method != "fedavg")
        assert run.data.tags.get("time_to_accuracy.outcome") == (own and own["outcome"])
        scorecard = Path(run.info.artifact_uri.removeprefix("file://")) / "scorecard.json"
        assert json.loads(scorecard.read_text()) == summary["scorecard"]
    assert "events/recluster_global" in record_scalars(live / "runs/openimage-buckets/fielding/seed0")


def test_export_logs_what_the_live_run_logged_and_a_second_export_adds_nothing(live, store, monkeypatch, capsys):
    monkeypatch.chdir(live)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "export")
    for destination in ("tensorboard=exported", f"mlflow={store}"):
        assert main(["export", destination, "runs", "--quiet"]) == 0
        assert capsys.readouterr().out.endswith(": 6 runs logged, 0 already there, 0 incomplete (skipped), 0 failed\n")
    exported, logged = mlflow_runs(store, "export"), mlflow_runs(store, "live")
    assert sorted(exported) == sorted(logged)
    derived = {f"openimage-buckets/{r.method}/seed0": r.summary.time_to_accuracy for r in find_runs(live / "runs")}
    for name, run in exported.items():
        live_scalars, more = tensorboard_scalars(live / "tensorboard" / name), tensorboard_scalars(live / "exported" / name)
        added = {tag: values for tag, values in more.items() if tag not in live_scalars}
        assert {tag: more[tag] for tag in live_scalars} == live_scalars  # what the live run logged, and
        assert bool(added) == (not name.endswith("/fedavg/seed0"))  # the time to FedAvg's target the export derives
        assert all(tag.startswith("summary/time_to_accuracy.") for tag in added)
        assert mlflow_scalars(store, run) == {
            **mlflow_scalars(store, logged[name]),
            **{t: mlflow_scalars(store, run)[t] for t in added},
        }
        assert run.data.params == logged[name].data.params
        tags, before = ({k: v for k, v in r.data.tags.items() if not k.startswith("mlflow.")} for r in (run, logged[name]))
        assert {k: tags[k] for k in before} == before and all(k.startswith("time_to_accuracy.") for k in tags.keys() - before)
        assert tags["time_to_accuracy.outcome"] == derived[name].outcome
    files = sorted(p.name for p in (live / "exported").rglob("events.out.tfevents.*"))
    ids = sorted(run.info.run_id for run in exported.values())
    for destination in ("tensorboard=exported", f"mlflow={store}"):
        assert main(["export", destination, "runs", "--quiet"]) == 0
        assert capsys.readouterr().out.endswith(": 0 runs logged, 6 already there, 0 incomplete (skipped), 0 failed\n")
    assert sorted(p.name for p in (live / "exported").rglob("events.out.tfevents.*")) == files
    assert sorted(run.info.run_id for run in mlflow_runs(store, "export").values()) == ids


class FailingMlflow(MlflowTracker):
    """The real MLflow tracker, whose MLflow run is deleted under it at its third log call: MLflow then refuses it."""

    calls = failures = late = 0

    def log(self, scalars, tags):
        FailingMlflow.calls += 1
        FailingMlflow.late += FailingMlflow.failures  # a call after the failure
        if FailingMlflow.calls == 3:
            self.client.delete_run(self.run_id)
        try:
            super().log(scalars, tags)
        except Exception:
            FailingMlflow.failures += 1
            raise


def deterministic_record(run_dir: Path) -> dict[str, object]:
    """A record's files without wall-clock fields, paths and the machine's config fields."""
    summary = json.loads((run_dir / "summary.json").read_text())
    summary = {k: v for k, v in summary.items() if k not in (*WALL_CLOCK_FIELDS, "run_dir")}
    summary["overhead"] = {k: v for k, v in summary["overhead"].items() if k not in WALL_CLOCK_FIELDS}
    config = {k: v for k, v in json.loads((run_dir / "config.json").read_text()).items() if k not in VOLATILE_CONFIG}
    rounds = pd.read_csv(run_dir / "rounds.csv").drop(columns=list(WALL_CLOCK_FIELDS))
    texts = {name: (run_dir / name).read_text() for name in ("events.csv", "diagnostics.csv")}
    return {"summary": summary, "config": config, "rounds": rounds.to_dict("list"), **texts}


def test_a_tracker_failing_mid_run_warns_once_and_changes_nothing(tmp_path, store, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "failing")
    real = feed.open_tracker  # every log call of the failing tracker writes (no flush delay): it fails where it is made to
    monkeypatch.setattr(feed, "open_tracker", lambda d: FailingMlflow(d, 0.0) if d.tracker == "mlflow" else real(d))
    args = ["run", "--trace", "openimage-buckets", "--method", "fielding", "--quiet", *TINY]
    assert main([*args, "--out", "plain"]) == 0
    assert main([*args, "--out", "logged", "--log", "tensorboard", "--log", f"mlflow={store}"]) == 0  # run here, one method
    warnings = [r.getMessage() for r in caplog.records if "stopped logging" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].startswith("openimage-buckets/fielding/seed0: mlflow stopped logging")
    assert "must be in the 'active' state" in warnings[0] and "\n" not in warnings[0]
    assert (FailingMlflow.calls, FailingMlflow.failures, FailingMlflow.late) == (3, 1, 0)  # dropped once it failed
    name = "openimage-buckets/fielding/seed0"
    assert deterministic_record(tmp_path / "plain" / name) == deterministic_record(tmp_path / "logged" / name)
    assert tensorboard_scalars(tmp_path / "tensorboard" / name) == float32(record_scalars(tmp_path / "logged" / name))


def test_a_resumed_run_logs_what_an_uninterrupted_one_does(tmp_path):
    from tests.test_resume import tiny

    tracking = Tracking((Destination("tensorboard", str(tmp_path / "tb")),), str(tmp_path / "runs"))
    spec = replace(tiny("fielding", tmp_path / "runs", every=4, keep=True), tracking=tracking)
    folder = Path(run_spec(spec).run_dir)
    uninterrupted = tensorboard_scalars(tmp_path / "tb/label-swap/fielding/seed0")
    (folder / "summary.json").unlink()  # a crash after the round-4 checkpoint
    run_spec(replace(spec, checkpointing=Checkpointing(every=4, resume=True)))
    resumed = tensorboard_scalars(tmp_path / "tb/label-swap/fielding/seed0")
    wall = [f"rounds/{f}" for f in WALL_CLOCK_FIELDS] + ["summary/wall_seconds", "summary/overhead.server_wall_seconds"]
    assert {k: v for k, v in resumed.items() if k not in wall} == {k: v for k, v in uninterrupted.items() if k not in wall}
    assert resumed == float32(record_scalars(folder))


def test_reproduce_tags_each_run_with_its_papers_and_claims(tmp_path, store, monkeypatch):
    from tests.test_reproduce import KIND, claim_file
    from tests.test_reproduce import TINY as CLAIM_TINY

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "reproduce")
    claim = 'where = "Table 1"\nclaim = "c"\ntrace = "static"\nmetric = "final_accuracy"\npaper_figure = "1 vs 2"\n' + KIND
    both = f'methods = ["oracle", "fedavg"]\ndirection = "oracle > fedavg"\nset = {{ {CLAIM_TINY} }}\n'
    other = claim.replace("final_accuracy", "mean_accuracy")  # the same runs, compared on another metric
    claim_file(tmp_path / "claims", f'[[claims]]\nid = "a"\n{claim}{both}[[claims]]\nid = "b"\n{other}{both}', "one")
    (tmp_path / "claims/two.toml").write_text(
        f'paper = "B paper"\n[[claims]]\nid = "c"\n{claim}methods = ["fedavg", "oracle"]\ndirection = "fedavg > oracle"\n'
        f"set = {{ {CLAIM_TINY} }}\n"
    )
    args = ["reproduce", "one", "two", "--claims", str(tmp_path / "claims"), "--seeds", "0", "--device", "cpu", "--quiet"]
    assert main([*args, "--out", str(tmp_path / "runs"), "--report", str(tmp_path), "--log", f"mlflow={store}"]) == 0
    runs = mlflow_runs(store, "reproduce")
    assert sorted(runs) == ["static/fedavg/seed0", "static/oracle/seed0"]
    for run in runs.values():
        assert run.data.tags["paper"] == "A paper,B paper"
        assert run.data.tags["claims"] == "one/a,one/b,two/c"
    client = MlflowClient(store)
    experiment = client.get_experiment_by_name("reproduce").experiment_id
    assert len(client.search_runs([experiment], "tags.claims LIKE '%one/b%'")) == 2


def test_without_the_tracking_extra_log_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # what an environment without mlflow imports
    monkeypatch.delitem(sys.modules, "driftbench.tracking.mlflow_tracker", raising=False)
    args = ["run", "--trace", "openimage-buckets", "--method", "fedavg", "--out", str(tmp_path), *TINY]
    assert main([*args, "--log", "mlflow"]) == 2
    err = capsys.readouterr().err
    assert err == "error: --log mlflow needs the mlflow package: pip install 'driftbench[tracking]'\n"
    assert not (tmp_path / "openimage-buckets").exists()
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--log", "wandb"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith("error: driftbench run: argument --log: unknown tracker 'wandb'; allowed: ")


def test_a_suite_file_names_its_trackers(tmp_path, monkeypatch):
    from driftbench.runner import load_suite

    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    suite = tmp_path / "s.toml"
    suite.write_text(f'methods = ["fedavg"]\nlog = ["tensorboard={tmp_path}/tb", "mlflow=sqlite:///x.db"]\n[traces.static]\n')
    assert load_suite(suite).log == (
        Destination("tensorboard", str(tmp_path / "tb")),
        Destination("mlflow", "sqlite:///x.db", "driftbench"),
    )
    suite.write_text('methods = ["fedavg"]\nlog = ["neptune"]\n[traces.static]\n')
    with pytest.raises(Exception, match=r"s.toml: log: --log 'neptune': unknown tracker 'neptune'; allowed: tensorboard, mlflow"):
        load_suite(suite)


def test_a_process_opens_each_store_once_and_a_relative_store_where_it_was_named(tmp_path, store, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shared = Destination("mlflow", store, "opened-once")
    first, second = MlflowTracker(shared, 5.0), MlflowTracker(shared, 5.0)
    assert first.client is second.client and first.experiment == second.experiment  # one client, one experiment id
    relative = MlflowTracker(Destination("mlflow", "sqlite:///here.db", "relative"), 5.0)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert MlflowTracker(Destination("mlflow", "sqlite:///here.db", "relative"), 5.0).client is not relative.client
    assert (tmp_path / "here.db").is_file() and (tmp_path / "elsewhere" / "here.db").is_file()
