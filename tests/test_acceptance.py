"""The foundation's acceptance run: the default label-swap comparison at its shipped settings."""

import json

import pandas as pd

from driftbench.cli import main
from driftbench.traces.catalog import load_spec


def test_default_label_swap_comparison(tmp_path, capsys):
    assert (
        main(
            ["run", "--trace", "label-swap", "--method", "fedavg,static,oracle", "--seed", "0", "--out", str(tmp_path), "--quiet"]
        )
        == 0
    )
    table = capsys.readouterr().out
    assert all(m in table for m in ("fedavg", "static", "oracle (oracle)"))
    params = load_spec("label-swap").params
    events = list(range(params.drift_every, params.rounds, params.drift_every))

    oracle = json.loads((tmp_path / "label-swap/oracle/seed0/summary.json").read_text())
    assert oracle["ari_mean"] >= 0.99

    fedavg = json.loads((tmp_path / "label-swap/fedavg/seed0/summary.json").read_text())
    assert [r["round"] for r in fedavg["recovery"]] == events
    rounds = pd.read_csv(tmp_path / "label-swap/fedavg/seed0/rounds.csv").set_index("round")["accuracy_mean"]
    for event in events:
        assert rounds[event] < rounds[event - 1] - 0.02, f"no FedAvg drop at round {event}"
    assert oracle["final_accuracy"] > fedavg["final_accuracy"]
