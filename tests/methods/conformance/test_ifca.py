"""IFCA conformance (Ghosh et al., NeurIPS 2020, Algorithm 1): cluster identity by the lowest loss, then per-model averaging.

Algorithm 1, for each selected machine i: estimate its cluster identity ĵ = argmin_j F_i(θ_j), train θ_ĵ
locally; the server then sets each θ_j to the average of the trained models of the machines with ĵ = j
("model averaging"; a model that no machine chose stays as it was).

The case worked by hand: scalar models θ = (0, 10, 50) and machines with quadratic losses F_i(θ) = (θ - c_i)^2,
c = (1, 2, 9, 8, 4.9, 5.1). Lowest loss: c = 1, 2, 4.9 are nearer 0 than 10 (4.9^2 = 24.01 < 5.1^2 = 26.01), so
ĵ = (0, 0, 1, 1, 0, 1); nobody picks θ_2 = 50. One local gradient step with step size 1/4 moves each machine
half-way to its c_i: the trained models are (0.5, 1, 9.5, 9, 2.45, 7.55), so θ_0 = (0.5 + 1 + 2.45) / 3 = 1.31667,
θ_1 = (9.5 + 9 + 7.55) / 3 = 8.68333 and θ_2 = 50.
"""

import numpy as np
import pytest
import torch

from driftbench.methods.catalog import load_method
from driftbench.methods.rounds import TrainResult
from tests.methods.fakes import ScriptedClients, context, queries

CENTERS = np.array([1.0, 2.0, 9.0, 8.0, 4.9, 5.1])
THETA = np.array([0.0, 10.0, 50.0])


def test_machines_train_their_lowest_loss_model_and_each_model_averages_its_machines():
    method = load_method("ifca", {"k": "3"}).create()
    method.setup(context(6, participants=6, params={"w": torch.zeros(1, dtype=torch.float64)}))
    losses = (THETA[None, :] - CENTERS[:, None]) ** 2
    method.plan(0, queries(ScriptedClients(losses=losses)), np.random.default_rng(0))
    method.models = {"w": torch.as_tensor(THETA[:, None])}
    plan = method.plan(1, queries(ScriptedClients(losses=losses)), np.random.default_rng(0))
    assert plan.start_models.tolist() == [0, 0, 1, 1, 0, 1] == method.assignment.tolist()
    start = THETA[plan.start_models]
    trained = start - 0.25 * 2 * (start - CENTERS)  # one gradient step on (θ - c)^2
    method.aggregate(1, TrainResult(plan, {"w": torch.as_tensor(trained[:, None])}, np.ones(6), np.zeros(6)))
    assert method.models["w"][:, 0].tolist() == pytest.approx([3.95 / 3, 26.05 / 3, 50.0])
    measured = {m["quantity"]: m["value"] for m in method.events.measures if m["quantity"] == "loss_gap_mean"}
    gaps = np.sort(losses, axis=1)
    assert measured["loss_gap_mean"] == pytest.approx((gaps[:, 1] - gaps[:, 0]).mean())


def test_the_k_models_start_from_distinct_initialisations():
    """With identical models every loss ties and Algorithm 1 could never separate the machines."""
    method = load_method("ifca", {"k": "3"}).create()
    method.setup(context(6, participants=6, params={"w": torch.arange(8, dtype=torch.float64)}))
    method.plan(0, queries(ScriptedClients(losses=np.zeros((6, 3)))), np.random.default_rng(0))
    w = method.models["w"]
    assert not torch.equal(w[0], w[1]) and not torch.equal(w[1], w[2]) and torch.equal(w[0], torch.arange(8.0).double())
