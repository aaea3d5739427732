"""FedDrift: drift detection by loss increase, a new cluster per drifted client, loss-distance merging."""

import numpy as np
import pytest

from driftbench.methods.base import Overhead
from driftbench.methods.catalog import load_method
from driftbench.methods.feddrift import drifted, loss_distance
from tests.methods.fakes import ScriptedClients, context, events, queries


def test_drift_is_a_loss_increase_above_delta_on_the_own_model():
    losses = np.array([[0.3, 2.0], [1.5, 0.2], [0.9, 0.1]])
    assert drifted(losses, np.array([0, 0, 1]), np.array([0.2, 0.4, 0.2]), delta=0.5).tolist() == [1]


def test_loss_distance_is_the_worse_direction():
    losses = np.array([[0.1, 0.9], [0.2, 0.7], [1.0, 0.3]])
    d = loss_distance(losses, np.array([0, 0, 1]), np.array([0, 1]))
    # cluster 0 on model 1: mean 0.8 vs own 0.15 -> 0.65; cluster 1 on model 0: 1.0 vs 0.3 -> 0.7
    assert d[0, 1] == d[1, 0] == pytest.approx(0.7)


def test_a_client_whose_loss_jumps_gets_a_new_cluster():
    method = load_method("feddrift", {"delta": "0.5"}).create()
    method.setup(context(4, participants=2))
    method.plan(0, queries(ScriptedClients(losses=np.full((4, 1), 0.3))), np.random.default_rng(0))
    assert method.num_models == 1 and method.previous.tolist() == [0.3] * 4
    jumped = np.array([[0.3], [0.35], [1.4], [0.3]])
    overhead = Overhead()
    method.plan(1, queries(ScriptedClients(losses=jumped), overhead=overhead, model_bytes=100), np.random.default_rng(1))
    assert method.num_models == 2 and method.assignment.tolist() == [0, 0, 1, 0]
    assert events(method) == [("create", "2", 2.0)]
    assert (overhead.download_bytes, overhead.upload_bytes, overhead.client_extra_passes) == (400, 16, 4)
    # next round the new model fits client 2 and the old one does not: no merge; once equal, they merge
    apart = np.array([[0.3, 2.0], [0.3, 2.0], [2.0, 0.3], [0.3, 2.0]])
    method.plan(2, queries(ScriptedClients(losses=apart)), np.random.default_rng(2))
    assert method.num_models == 2 and len(events(method)) == 1
    close = np.array([[0.3, 0.4], [0.3, 0.4], [0.4, 0.3], [0.3, 0.4]])
    method.plan(3, queries(ScriptedClients(losses=close)), np.random.default_rng(3))
    assert method.num_models == 1 and method.assignment.tolist() == [0] * 4
    assert events(method)[1:] == [("merge", "0 1 2 3", 1.0)]  # the clients of the merged clusters; 1 cluster left
