"""CFL: the split condition and the cosine bipartition of a cluster's members."""

import numpy as np
import pytest
import torch

from driftbench.methods.catalog import load_method
from driftbench.methods.cfl import bipartition, should_split, similarities, update_norms
from driftbench.methods.queries import Overhead
from driftbench.methods.rounds import Plan, TrainResult
from tests.methods.fakes import ScriptedClients, context, events, queries


def test_split_needs_a_small_mean_and_a_large_maximum():
    opposite = update_norms(np.array([[2.0, 0.0], [-2.0, 0.1]]), np.ones(2))
    assert opposite == pytest.approx((0.05, np.hypot(2.0, 0.1)))
    assert should_split(*opposite, eps1=0.4, eps2=1.0)
    assert not should_split(*opposite, eps1=0.4, eps2=3.0)  # no large update
    aligned = update_norms(np.array([[2.0, 0.0], [1.5, 0.0]]), np.ones(2))
    assert not should_split(*aligned, eps1=0.4, eps2=1.0)  # the mean is still large
    first = update_norms(np.array([[2.0, 0.0], [-2.0, 0.1]]), np.array([1.0, 0.0]))
    assert not should_split(*first, eps1=0.4, eps2=1.0)  # weighted mean = first update


def test_bipartition_separates_opposite_directions():
    rows = np.array([[1, 0.1, 0], [1, -0.1, 0], [-1, 0, 0.1], [-1, 0.1, 0.1]])
    halves = bipartition(similarities(rows))
    assert halves[0] == halves[1] != halves[2] == halves[3]


def test_flagged_cluster_is_split_by_all_members_gradients_next_round():
    method = load_method("cfl", {"warmup": "0"}).create()
    method.setup(context(4, participants=2))
    plan = Plan(np.array([0, 2]), np.array([0, 0]))
    trained = {"w": torch.tensor([[2.0, 0.0], [-2.0, 0.1]], dtype=torch.float64)}
    method.aggregate(0, TrainResult(plan, trained, np.array([1, 1]), np.zeros(2)))
    assert method.to_split.tolist() == [0]
    grads = np.array([[-1.0, 0.0], [-1.0, 0.1], [1.0, 0.0], [1.0, 0.1]])
    overhead = Overhead()
    method.plan(1, queries(ScriptedClients(grads=grads), overhead=overhead, model_bytes=100), np.random.default_rng(0))
    a = method.assignment
    assert a[0] == a[1] != a[2] == a[3] and method.num_models == 2
    assert torch.equal(method.models["w"][0], method.models["w"][1])  # the new half copies the cluster model
    assert events(method) == [("split", "0 1 2 3", 2.0)]  # the members of the split cluster; 2 clusters now
    # 4 members: the model down, a 2-number gradient up, one pass each
    assert (overhead.download_bytes, overhead.upload_bytes, overhead.client_extra_passes) == (400, 32, 4)
