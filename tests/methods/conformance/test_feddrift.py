"""FedDrift conformance (Jothimurugesan et al., AISTATS 2023: local drift detection and hierarchical merging).

Each time step (here a round) every client evaluates every cluster model on its data and joins
the one with the lowest loss; if that lowest loss exceeds the client's loss of the previous step
by more than delta, the client has drifted and is isolated in a new cluster. Clusters i, j are
merged by complete-linkage hierarchical clustering while their distance
D(i, j) = max(L_i(w_j) - L_i(w_i), L_j(w_i) - L_j(w_j), 0) is at most delta, L_i being the
loss on cluster i's clients. delta = 0.5 throughout.
"""

import numpy as np
import pytest
import torch

from driftbench.methods.bank import replicate
from driftbench.methods.catalog import load_method
from tests.methods.fakes import ScriptedClients, context, events, queries


def feddrift(assignment):
    """FedDrift with clients already in clusters ``assignment`` (models 0..K-1), no previous losses."""
    method = load_method("feddrift", {"delta": "0.5"}).create()
    method.setup(context(len(assignment), participants=2))
    method.models = replicate(method.ctx.init_params, int(max(assignment)) + 1)
    method.assignment = np.array(assignment)
    return method


def step(method, rnd, losses):
    method.plan(rnd, queries(ScriptedClients(losses=np.array(losses, dtype=float))), np.random.default_rng(rnd))


def test_a_new_cluster_when_the_best_loss_rises_by_more_than_delta():
    """Two clusters, far apart (D = 1.7), clients' losses 0.3 on their own model at step 0.

    Step 1: client 0's best loss is 0.9 (rise 0.6 > 0.5): a new cluster for it alone; client 2's is
    0.75 (rise 0.45 <= 0.5): it stays; client 1 is unchanged. 2 + 1 = 3 clusters.
    """
    method = feddrift([0, 0, 1, 1])
    step(method, 0, [[0.3, 2.0], [0.3, 2.0], [2.0, 0.3], [2.0, 0.3]])
    assert method.num_models == 2 and method.previous.tolist() == [0.3] * 4
    step(method, 1, [[0.9, 2.5], [0.3, 2.0], [2.0, 0.75], [2.0, 0.3]])
    assert method.num_models == 3 and len(np.unique(method.assignment)) == 3
    assert method.assignment[1] != method.assignment[0] != method.assignment[2] == method.assignment[3]
    assert events(method) == [("create", "0", 3.0)]


def test_clients_join_the_model_with_their_lowest_loss():
    """No rise (0.3 -> 0.3 on another model): client 1 moves from cluster 0 to cluster 1, no cluster is created."""
    method = feddrift([0, 0, 1, 1])
    step(method, 0, [[0.3, 2.0], [0.3, 2.0], [2.0, 0.3], [2.0, 0.3]])
    step(method, 1, [[0.3, 2.0], [2.0, 0.3], [2.0, 0.3], [2.0, 0.3]])
    assert method.assignment.tolist() == [0, 1, 1, 1] and method.num_models == 2


@pytest.mark.parametrize(
    "loss_01, loss_10, merged",
    [
        (0.6, 0.7, True),  # D = max(0.6 - 0.3, 0.7 - 0.3) = 0.4 <= 0.5
        (0.4, 1.1, False),  # D = max(0.4 - 0.3, 1.1 - 0.3) = 0.8: one direction is enough to keep them apart
        (1.0, 0.9, False),  # D = max(0.7, 0.6) = 0.7
    ],
)
def test_two_clusters_merge_when_their_loss_distance_is_at_most_delta(loss_01, loss_10, merged):
    """Clients of cluster 0 have loss 0.3 on model 0 and ``loss_01`` on model 1; those of cluster 1 have 0.3 on
    model 1 and ``loss_10`` on model 0. A merged model is the member-count-weighted mean of the two (1 and 3 -> 2)."""
    method = feddrift([0, 0, 1, 1])
    method.models = {"w": torch.tensor([[1.0, 1.0], [3.0, 3.0]], dtype=torch.float64)}
    step(method, 0, [[0.3, loss_01], [0.3, loss_01], [loss_10, 0.3], [loss_10, 0.3]])
    assert (method.num_models == 1) is merged
    if merged:
        assert method.assignment.tolist() == [0] * 4 and method.models["w"][0].tolist() == pytest.approx([2.0, 2.0])
        assert events(method) == [("merge", "0 1 2 3", 1.0)]
    else:
        assert method.assignment.tolist() == [0, 0, 1, 1] and events(method) == []


def test_a_merged_cluster_is_as_far_from_a_third_as_its_farthest_part():
    """Complete linkage: three clusters of two clients, each 0.3 on its own model; D(0, 1) = D(1, 2) = 0.4,
    D(0, 2) = 0.8. One of the 0.4 pairs merges; the merged cluster is max(0.4, 0.8) = 0.8 > 0.5 from the third,
    which stays apart: 2 clusters, cluster 1's clients with exactly one of the others. Single linkage (the
    merged cluster as far as its nearest part, 0.4) would chain all three into one."""
    method = feddrift([0, 0, 1, 1, 2, 2])
    near, far = [0.3, 0.7, 1.1], [0.7, 0.3, 0.7]
    step(method, 0, [near, near, far, far, near[::-1], near[::-1]])
    a = method.assignment
    assert method.num_models == 2
    assert a[0] == a[1] and a[2] == a[3] and a[4] == a[5] and (a[2] == a[0]) != (a[2] == a[4])
