"""examples/my-method, the worked plug-in: found through --plugins and through its entry point, run, keeps the contract."""

import json
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

import pandas as pd
import pytest

from driftbench import discovery
from driftbench.cli import main
from driftbench.contracts import assert_keeps_contract
from driftbench.methods import catalog as method_catalog
from driftbench.record.files import CONFIG, ROUNDS, SUMMARY

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "my-method"
PACKAGE = EXAMPLE / "src" / "driftbench_my_method"
SMALL = ["--set", "rounds=8", "--set", "clients=8", "--set", "drift_every=4", "--set", "train.participants=4"]
SMALL += ["--set", "train.local_steps=2", "--set", "method.warmup=2"]


def test_run_through_plugins_path_writes_a_complete_record(plugin_state, tmp_path, capsys):
    out = tmp_path / "runs"
    args = ["run", "--trace", "label-swap", "--method", "my-method", "--plugins", str(PACKAGE), "--out", str(out), "--quiet"]
    assert main([*args, *SMALL]) == 0
    assert "my-method" in capsys.readouterr().out
    run = out / "label-swap" / "my-method" / "seed0"
    assert {CONFIG, ROUNDS, SUMMARY, "events.csv", "diagnostics.csv"} <= {p.name for p in run.iterdir()}
    config, summary = json.loads((run / CONFIG).read_text()), json.loads((run / SUMMARY).read_text())
    assert config["method"] == {"name": "my-method", "class": "threshold-ifca", "params": {**config["method"]["params"]}}
    assert config["method"]["params"]["warmup"] == 2 and summary["status"] == "ok"
    assert pd.read_csv(run / ROUNDS)["round"].tolist() == list(range(8))
    diagnostics = pd.read_csv(run / "diagnostics.csv")
    assert diagnostics["quantity"].unique().tolist() == ["lowest_loss_max"] and len(diagnostics) == 8
    events = pd.read_csv(run / "events.csv")
    created = events[events["kind"] == "create"]
    assert len(created) >= 1 and (created["round"] >= 2).all()  # clusters open from round warmup = 2 on
    assert created["round"].is_unique  # at most one new cluster a round


def test_the_declared_entry_point_finds_the_method(plugin_state, monkeypatch):
    declared = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]["entry-points"]["driftbench.methods"]
    assert declared == {"my-method": "driftbench_my_method"}
    monkeypatch.syspath_prepend(str(PACKAGE.parent))  # where pip install puts the package
    monkeypatch.setattr(discovery, "installed", lambda: (EntryPoint("my-method", declared["my-method"], "driftbench.methods"),))
    discovery.plugins()
    spec = method_catalog.load_method("my-method")
    assert spec.implementation == "threshold-ifca" and spec.params.threshold == 1.0
    assert "my-method" in method_catalog.catalog() and discovery.plugins()[0].folder == PACKAGE


@pytest.mark.parametrize("via", ["name", "spec"])
def test_the_example_keeps_the_method_contract(via, plugin_state, tmp_path):
    discovery.add_plugins([PACKAGE])
    assert_keeps_contract("my-method" if via == "name" else method_catalog.load_method("my-method", {"warmup": "1"}), tmp_path)
