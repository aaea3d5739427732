"""MSCFL conformance (002, Algorithms 1-2 and the cluster migration strategy): masks that differ by construction.

Algorithm 2: for clients i, j the smallest of (pr_i, pr_j, rr_i, rr_j) chooses the pruned positions
(COUNTTARGET(m_i, m_j, pr, 0)) or the retained ones (COUNTTARGET(m_i, m_j, rr, 1)); COUNTTARGET counts
positions where both masks hold the target, divided by r x len(m). Migration: H_i^t is the Hamming distance
between client i's masks m_i^{t-1} and m_i^t; if H_i^t > tau x H_i^{t-1} the check returns false and the
server re-clusters (Algorithm 1, lines 13-14), otherwise it keeps C^{t-1} (line 16).
"""

import numpy as np
import pytest
import torch

from driftbench.methods.catalog import load_method
from driftbench.methods.mscfl import hamming_distances, inconsistent, mask_bits, structure_similarity
from driftbench.methods.rounds import Plan, TrainResult
from tests.methods.fakes import context


def rows(*masks: str) -> np.ndarray:
    """0/1 mask rows from strings of digits."""
    return np.array([[int(c) for c in m] for m in masks])


def test_hamming_distance_counts_the_positions_where_two_masks_differ_across_layers():
    """Two layers (2 x 3 and 5 entries, 11 positions, packed into 2 bytes). Client 1's second mask differs
    from its first at 3 positions (one in the first layer, two in the second, one of them past the first byte);
    client 0's is unchanged: H = (0, 3)."""
    first = {"a": torch.tensor([[[1, 0, 1], [1, 1, 0]], [[0, 0, 1], [1, 1, 1]]]), "b": torch.tensor([[1, 0, 0, 1, 1]] * 2)}
    second = {"a": first["a"].clone(), "b": first["b"].clone()}
    second["a"][1, 0, 0] = 1
    second["b"][1, 1] = 1
    second["b"][1, 4] = 0
    names = ("a", "b")
    assert hamming_distances(mask_bits(first, names), mask_bits(second, names)).tolist() == [0, 3]


def test_consistency_check_fires_only_when_the_distance_grows_by_more_than_tau():
    """tau = 1.1. H^{t-1} = 10: H^t = 11 is not above 11 (consistent), 12 is. H^{t-1} = 0 (identical masks):
    any change is above 0. A client without H^{t-1} (-1) is never inconsistent."""
    previous = np.array([10, 10, 0, 0, -1])
    current = np.array([11, 12, 1, 0, 50])
    assert inconsistent(previous, current, 1.1).tolist() == [False, True, True, False, False]


def test_algorithm2_count_target_on_the_side_of_the_smallest_ratio():
    """Masks of length 10 (1 = retained).

    m0 = 1111111000, m1 = 1111110100 (pr = 0.3, rr = 0.7): min is pr = 0.3, pruned side: both 0 at
    positions 8, 9 -> 2 / (0.3 x 10) = 0.667. m2 = 0001111111 (pr 0.3): no common pruned position with m0 -> 0.
    m3 = 1100000000 (pr 0.8, rr 0.2) with m0: min(0.3, 0.8, 0.7, 0.2) = rr 0.2, retained side: both 1 at 0, 1
    -> 2 / (0.2 x 10) = 1. m3 with m4 = 1010000000: both 1 at 0 -> 1 / 2 = 0.5.
    """
    sim = structure_similarity(rows("1111111000", "1111110100", "0001111111", "1100000000", "1010000000"))
    assert sim[0, 1] == pytest.approx(2 / 3)
    assert sim[0, 2] == pytest.approx(0.0)
    assert sim[0, 3] == pytest.approx(1.0)
    assert sim[3, 4] == pytest.approx(0.5)
    assert sim == pytest.approx(sim.T)


X, Y = "11110000", "00001111"


def after_training(new_masks: dict[int, str], migrate: bool = True):
    """MSCFL (K = 2) with clients 0, 1 clustered on mask X and 2, 3 on mask Y, each last distance H^{t-1} = 2;
    clients ``new_masks`` upload their pruned models with these masks; returns the method after aggregating."""
    method = load_method("mscfl", {"clusters": "2", "migrate": str(migrate).lower()}).create()
    method.setup(context(4, participants=2, params={"layer.weight": torch.zeros(2, 4, dtype=torch.float64)}))
    method.assignment = np.array([0, 0, 1, 1])
    method.clustered = True
    method.seen[:] = method.fresh[:] = True
    method.masks[:] = np.packbits(rows(X, X, Y, Y).astype(bool), axis=1)
    method.hamming[:] = 2
    participants = np.array(list(new_masks))
    mask = torch.as_tensor(rows(*new_masks.values()), dtype=torch.float64).view(len(participants), 2, 4)
    method.models = {"layer.weight": torch.zeros(2, 2, 4, dtype=torch.float64)}
    plan = Plan(participants, method.assignment[participants])
    trained = {"layer.weight": mask.clone()}
    result = TrainResult(plan, trained, np.ones(len(participants)), np.zeros(len(participants)), masks={"layer.weight": mask})
    method.aggregate(1, result)
    return method


def clusterings(method) -> int:
    return sum(row["kind"] == "recluster_global" for row in method.events.rows)


def test_masks_that_move_no_faster_than_tau_keep_the_clusters():
    """Client 0 uploads X again (H = 0), client 2 uploads 00011110 (H = 2 from Y, not above 1.1 x 2 = 2.2):
    consistent, C^t = C^{t-1} (line 16), the new distances are kept as H^{t-1} for the next check."""
    method = after_training({0: X, 2: "00011110"})
    assert clusterings(method) == 0
    assert method.assignment.tolist() == [0, 0, 1, 1] and method.hamming.tolist() == [0, 2, 2, 2]


@pytest.mark.parametrize("migrate", [True, False])
def test_a_mask_that_jumps_triggers_reclustering_on_every_clients_latest_mask(migrate):
    """Client 2 uploads X (H = 8 > 2.2): the check fails and Algorithm 2 re-clusters all four clients on their
    latest masks X, X, X, Y: K = 2 gives {0, 1, 2} and {3}; the Hamming history restarts. MSCFL-alpha
    (migrate = false) keeps its clusters."""
    method = after_training({0: X, 2: X}, migrate)
    labels = method.assignment
    if migrate:
        assert clusterings(method) == 1
        assert labels[0] == labels[1] == labels[2] != labels[3]
        assert method.hamming.tolist() == [-1] * 4
    else:
        assert clusterings(method) == 0 and labels.tolist() == [0, 0, 1, 1]
    inconsistent_clients = [m["value"] for m in method.events.measures if m["quantity"] == "mscfl_inconsistent_clients"]
    assert inconsistent_clients == [1]
