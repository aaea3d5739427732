"""FedDrift: drift detection by loss increase, a new cluster per drifted client, loss-distance merging."""

import numpy as np
import pytest

from driftbench.methods.bank import replicate
from driftbench.methods.catalog import load_method
from driftbench.methods.feddrift import loss_distance
from driftbench.methods.queries import Overhead
from tests.methods.fakes import ScriptedClients, context, events, queries


def feddrift(n, assignment):
    """FedDrift (delta 0.5) with clients already in clusters ``assignment`` and no previous losses."""
    method = load_method("feddrift", {"delta": "0.5"}).create()
    method.setup(context(n, participants=2))
    method.models = replicate(method.ctx.init_params, int(max(assignment)) + 1)
    method.assignment = np.array(assignment)
    return method


def test_a_client_that_another_model_fits_joins_it_instead_of_founding_a_cluster():
    """Regression: the old code tested only the own model, so client 1 (own loss 0.3 -> 2.0, model 1 fits at 0.3)
    was isolated in a new cluster; FedDrift assigns every client to its lowest-loss model first."""
    method = feddrift(4, [0, 0, 1, 1])
    method.plan(
        0, queries(ScriptedClients(losses=np.array([[0.3, 2.0], [0.3, 2.0], [2.0, 0.3], [2.0, 0.3]]))), np.random.default_rng(0)
    )
    moved = np.array([[0.3, 2.0], [2.0, 0.3], [2.0, 0.3], [2.0, 0.3]])
    method.plan(1, queries(ScriptedClients(losses=moved)), np.random.default_rng(1))
    assert method.assignment.tolist() == [0, 1, 1, 1] and method.num_models == 2
    assert events(method) == [("assign", "1", None)]


def test_the_previous_loss_is_taken_on_the_model_used_before_clusters_merge():
    """Regression: after a merge renumbered the clusters, the old code read each client's previous loss from the
    column of its new number, i.e. another model's loss (2.0 for clients 4, 5 here), and missed their later rise
    from 0.3 to 1.0 (> delta = 0.5)."""
    method = feddrift(6, [0, 0, 1, 1, 2, 2])
    first = np.array([[0.3, 0.4, 2.0]] * 2 + [[0.4, 0.3, 2.0]] * 2 + [[2.0, 2.0, 0.3]] * 2)
    method.plan(0, queries(ScriptedClients(losses=first)), np.random.default_rng(0))
    assert method.num_models == 2 and method.previous.tolist() == [0.3] * 6  # clusters 0 and 1 merged (distance 0.1)
    own = method.assignment
    later = np.full((6, 2), 2.0)
    later[np.arange(6), own] = [0.3, 0.3, 0.3, 0.3, 1.0, 1.0]
    method.plan(1, queries(ScriptedClients(losses=later)), np.random.default_rng(1))
    assert ("create", "4 5", 3.0) in events(method)


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
