"""FedAvg conformance: the server's model is the sample-weighted mean of the participants' models.

McMahan et al. (AISTATS 2017), Algorithm 1 (FederatedAveraging), server step
``w_{t+1} <- sum_k (n_k / n) w^k_{t+1}`` with n = sum_k n_k over the round's participants.
"""

import numpy as np
import pytest
import torch

from driftbench.methods.catalog import load_method
from driftbench.methods.rounds import Plan, TrainResult
from tests.methods.fakes import ScriptedClients, context, queries


def test_server_model_is_the_sample_weighted_mean_of_participants_models():
    """Three participants hold 10, 30 and 60 samples and return w = 1, 2, 4 (every entry).

    By hand: (10 * 1 + 30 * 2 + 60 * 4) / 100 = 310 / 100 = 3.1; an unweighted mean would give 7/3.
    """
    method = load_method("fedavg").create()
    method.setup(context(5, participants=3))
    plan = method.plan(0, queries(ScriptedClients()), np.random.default_rng(0))
    assert len(plan.participants) == 3 and (plan.start_models == 0).all() and plan.mu == 0.0
    trained = {"w": torch.tensor([[1.0, 1.0], [2.0, 2.0], [4.0, 4.0]], dtype=torch.float64)}
    result = TrainResult(plan, trained, np.array([10, 30, 60]), np.zeros(3))
    method.aggregate(0, result)
    assert method.models["w"][0].tolist() == pytest.approx([3.1, 3.1])


def test_a_client_with_more_samples_pulls_the_mean_towards_its_model():
    """Two participants: 1 sample at w = 0, 3 samples at w = 8: (1 * 0 + 3 * 8) / 4 = 6 (not the plain mean 4)."""
    method = load_method("fedavg").create()
    method.setup(context(2, participants=2))
    plan = Plan(np.array([0, 1]), np.array([0, 0]))
    trained = {"w": torch.tensor([[0.0, 0.0], [8.0, 8.0]], dtype=torch.float64)}
    method.aggregate(0, TrainResult(plan, trained, np.array([1, 3]), np.zeros(2)))
    assert method.models["w"][0].tolist() == pytest.approx([6.0, 6.0])
