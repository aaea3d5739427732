"""Flower strategies as aggregators: parity with the built-in mean, per-cluster optimizer state, bad names."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from driftbench.errors import ConfigError
from driftbench.methods.aggregators import STRATEGIES, flower_average, remix_state
from driftbench.methods.catalog import load_method
from driftbench.methods.rounds import Plan, TrainResult
from driftbench.record.files import WALL_CLOCK_FIELDS
from driftbench.record.schema import ROUND_COLUMNS
from driftbench.scheduler import Checkpointing, RunSpec, Scheduler, checkpoint, run
from driftbench.scheduler.checkpoint import decode, method_state
from driftbench.traces.catalog import apply_sets, generate, load_spec
from tests.methods.fakes import context

pytest.importorskip("flwr", reason="Flower strategies as aggregators need flwr: pip install 'driftbench[flower]'")

TINY = {"clients": "8", "rounds": "3", "train_samples": "10", "test_samples": "5", "train.participants": "4"}


@pytest.fixture(scope="module")
def tiny_trace():
    spec = apply_sets(load_spec("label-swap"), TINY)
    return spec, *generate(spec)


def method_after(tiny_trace, method, sets, rounds, out):
    """``method`` after ``rounds`` rounds of a tiny label-swap run on the CPU."""
    spec, trace, pool = tiny_trace
    scheduler = Scheduler(RunSpec(trace, pool, spec.train, load_method(method, sets), 0, "cpu", out, quiet=True))
    scheduler.begin()
    for rnd in range(rounds):
        assert scheduler.step(rnd)
    return scheduler.method


def test_flower_fedavg_gives_the_built_in_fedavg_parameters(tiny_trace, tmp_path):
    built_in = method_after(tiny_trace, "fedavg", None, 3, tmp_path)
    flower = method_after(tiny_trace, "flower:FedAvg", None, 3, tmp_path).models
    assert set(built_in.models) == set(flower)
    for name, start in built_in.ctx.init_params.items():
        assert torch.allclose(built_in.models[name], flower[name], rtol=0, atol=1e-6), name
        assert not torch.allclose(built_in.models[name][0], start, rtol=0, atol=1e-4), name  # three rounds did train


def test_fedyogi_moves_fielding_elsewhere_than_the_mean(tiny_trace, tmp_path):
    yogi = method_after(tiny_trace, "fielding", {"aggregator": "flower:FedYogi"}, 3, tmp_path)
    mean = method_after(tiny_trace, "fielding", None, 3, tmp_path)
    assert yogi.aggregator_state and set(yogi.aggregator_state) <= set(range(yogi.num_models))
    assert all({"rounds", "m_t", "v_t"} <= set(held) for held in yogi.aggregator_state.values())
    assert mean.aggregator_state == {}
    assert any(not torch.allclose(yogi.models[n], mean.models[n]) for n in mean.models)


def two_cluster_round(method, trained_values, clusters):
    """A round whose participants (one per entry) trained ``trained_values`` from ``clusters``, 10 samples each."""
    trained = {"w": torch.tensor([[v, v] for v in trained_values], dtype=torch.float64)}
    plan = Plan(np.arange(len(clusters)), np.asarray(clusters))
    return TrainResult(plan, trained, np.full(len(clusters), 10), np.ones(len(clusters)))


def yogi_method(k):
    method = load_method("ifca", {"aggregator": "flower:FedYogi", "k": str(k)}).create()
    method.setup(context(4, 4))
    method.models = {"w": torch.zeros(k, 2, dtype=torch.float64)}
    return method


def test_fedyogi_state_is_created_per_cluster_merged_and_dropped():
    method = yogi_method(2)
    method.models = method.average(two_cluster_round(method, [1.0, 1.0, -1.0], [0, 0, 1]))
    state = method.aggregator_state
    assert sorted(state) == [0, 1] and state[0]["rounds"] == 1
    # Yogi's first step from zero moments: m = 0.1 delta, v = 0.01 delta^2 -> w = eta * 0.1 delta / (0.1 |delta| + tau)
    assert method.models["w"][0, 0].item() == pytest.approx(1e-2 * 0.1 / (0.1 + 1e-3), rel=1e-5)
    assert method.models["w"][1, 0].item() == pytest.approx(-1e-2 * 0.1 / (0.1 + 1e-3), rel=1e-5)
    assert state[0]["m_t"][0][0] == pytest.approx(0.1) and state[1]["m_t"][0][0] == pytest.approx(-0.1)

    # clients 0, 1, 2 (cluster 0) and 3 (cluster 1) merge into one cluster: moments mix 3:1, as the models do
    method.remix(np.array([0, 0, 0, 1]), np.zeros(4, dtype=np.int64), {"w": method.models["w"][:1] * 0})
    assert list(method.aggregator_state) == [0]
    merged = method.aggregator_state[0]
    assert merged["rounds"] == 1
    assert merged["m_t"][0][0] == pytest.approx(0.75 * 0.1 - 0.25 * 0.1)
    assert merged["v_t"][0][0] == pytest.approx(state[0]["v_t"][0][0] * 0.75 + state[1]["v_t"][0][0] * 0.25)

    # a second round continues the merged cluster's state; a cluster past the bank's end is dropped
    method.aggregator_state[5] = {"rounds": 3}
    method.models = method.average(two_cluster_round(method, [1.0], [0]))
    assert sorted(method.aggregator_state) == [0] and method.aggregator_state[0]["rounds"] == 2


def test_a_split_inherits_its_parent_state_and_a_fresh_cluster_starts_without():
    state = {0: {"rounds": 2, "m_t": [np.ones(2)], "v_t": [np.full(2, 3.0)]}}
    split = remix_state(state, np.array([0, 0]), np.array([0, 1]))
    assert sorted(split) == [0, 1] and split[1]["rounds"] == 2
    np.testing.assert_array_equal(split[1]["v_t"][0], [3.0, 3.0])
    assert split[0]["m_t"][0] is not split[1]["m_t"][0]  # each cluster its own copy
    bank = {"w": torch.zeros(2, 2)}
    trained = {"w": torch.ones(1, 2)}
    _, fresh = flower_average("flower:FedYogi", (), bank, trained, np.array([1]), np.array([5]), np.ones(1), 0.1, state)
    assert fresh[1]["rounds"] == 1 and fresh[0] is state[0]
    np.testing.assert_allclose(fresh[1]["m_t"][0], [0.1, 0.1])  # zero moments, then one step of delta = 1


def test_aggregator_state_survives_a_checkpoint():
    method = yogi_method(2)
    method.models = method.average(two_cluster_round(method, [1.0, -1.0], [0, 1]))
    restored = decode(method_state(method))["aggregator_state"]
    assert sorted(restored) == [0, 1]
    np.testing.assert_array_equal(restored[1]["v_t"][0], method.aggregator_state[1]["v_t"][0])


def test_strategy_options_reach_the_strategy():
    method = load_method("ifca", {"aggregator": "flower:FedAvgM", "aggregator_options": "server_momentum=0.5", "k": "1"}).create()
    method.setup(context(2, 2))
    result = two_cluster_round(method, [1.0, 1.0], [0, 0])
    first = method.average(result)
    method.models = first
    second = method.average(result)
    # server lr 1, momentum 0.5: round 1 steps to the mean (1); round 2's pseudo-gradient is 0, its momentum -0.5 -> 1.5
    assert first["w"][0, 0].item() == pytest.approx(1.0) and second["w"][0, 0].item() == pytest.approx(1.5)
    assert method.aggregator_state[0]["momentum_vector"][0][0] == pytest.approx(-0.5)


@pytest.mark.parametrize(
    ("method", "sets", "message"),
    [
        ("flower:FedYoga", None, f"flower:NAME with NAME one of {', '.join(STRATEGIES)}; got 'flower:FedYoga'"),
        ("fielding", {"aggregator": "yogi"}, "got 'yogi'"),
        ("fielding", {"aggregator": "flower:FedYogi", "aggregator_options": "etta=1"}, "has no option 'etta'; allowed: beta_1"),
        ("fielding", {"aggregator_options": "eta=1"}, "need a flower:NAME aggregator"),
        ("mscfl", {"aggregator": "flower:FedYogi"}, "mscfl averages under masks: aggregator must be 'mean'"),
        ("feddag", {"aggregator": "flower:FedAvg"}, "feddag aggregates clusters and local models together"),
    ],
)
def test_bad_aggregator_is_a_one_line_error(method, sets, message):
    with pytest.raises(ConfigError) as error:
        load_method(method, sets)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_the_default_mean_leaves_config_json_as_before():
    assert "aggregator" not in load_method("fielding").as_config()["params"]
    assert load_method("flower:FedYogi").as_config()["params"]["aggregator"] == "flower:FedYogi"


def test_a_missing_flower_stops_the_run_before_it_starts(monkeypatch):
    monkeypatch.setitem(sys.modules, "flwr.server", None)  # as if flwr were not installed
    with pytest.raises(ConfigError, match=r"^aggregator flower:FedYogi needs Flower: pip install 'driftbench\[flower\]'$"):
        load_method("flower:FedYogi").create()


def test_a_flower_aggregator_resumes_from_its_checkpoint_identically(tiny_trace, tmp_path):
    spec, trace, pool = tiny_trace

    def run_spec(**checkpointing):
        method = load_method("fielding-fedyogi")
        return RunSpec(
            trace, pool, spec.train, method, 0, "cpu", tmp_path, quiet=True, checkpointing=Checkpointing(**checkpointing)
        )

    uninterrupted = run(run_spec(every=2, keep=True))
    folder = Path(uninterrupted.run_dir)
    rounds = pd.read_csv(folder / "rounds.csv")
    assert checkpoint.load(folder / "checkpoint", torch.device("cpu"))["method"]["aggregator_state"]  # the moments were saved
    (folder / "summary.json").unlink()
    resumed = run(run_spec(resume=True))
    columns = [c for c in ROUND_COLUMNS if c not in WALL_CLOCK_FIELDS]
    pd.testing.assert_frame_equal(rounds[columns], pd.read_csv(folder / "rounds.csv")[columns])
    assert resumed.final_accuracy == uninterrupted.final_accuracy
