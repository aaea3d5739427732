"""PACFL conformance (Vahidian et al., AAAI 2023, Algorithm 1): principal angles of client data subspaces, then HC.

Each client k sends U_k^p, the p most significant left singular vectors of its data matrix D_k (features x
samples, truncated SVD); the server's proximity A_ij is the smallest principal angle Theta_1 between
span(U_i^p) and span(U_j^p), in degrees, and agglomerative hierarchical clustering merges clusters while
their linkage distance is below the threshold beta (one shot, before training).

The case worked by hand, p = 2 in R^6, two clients per group, c_t = cos(t), s_t = sin(t):
A = span{e1, e2}; B = span{c_10 e1 + s_10 e3, e4}; C = span{c_40 e1 + s_40 e5, c_40 e2 + s_40 e6}.
U_A^T U_B = [[c_10, 0], [0, 0]]: angles (10, 90). U_A^T U_C = c_40 I: angles (40, 40).
U_B^T U_C = [[c_10 c_40, 0], [0, 0]]: angles (arccos(0.7544) = 41.03, 90).
Smallest angles: A-B 10, A-C 40, B-C 41.03; 0 within a group. Average linkage: A, B, C form at 0, A and B
merge at 10, and (A+B) to C averages (40 + 41.03) / 2 = 40.51. So beta = 5 gives 3 clusters, 20 and 40.3
give {A, B}, {C}, and 41 gives one cluster. Single linkage would merge C at 40.3 (its distance 40), complete
linkage not at 41 (its distance 41.03), and the mean angle (A-B 50, A-C 40, B-C 65.5) would merge A with C
first and leave three clusters at 20.
"""

import numpy as np
import pytest
import torch

from driftbench.methods.catalog import load_method
from tests.methods.fakes import ScriptedClients, context, events, queries

A, B, C = [0, 1], [2, 3], [4, 5]


def group_bases():
    """The three groups' orthonormal bases (6 x 2) as worked out in the module docstring."""
    e = np.eye(6)
    c10, s10, c40, s40 = np.cos(np.radians(10)), np.sin(np.radians(10)), np.cos(np.radians(40)), np.sin(np.radians(40))
    return [
        np.stack([e[0], e[1]], 1),
        np.stack([c10 * e[0] + s10 * e[2], e[3]], 1),
        np.stack([c40 * e[0] + s40 * e[4], c40 * e[1] + s40 * e[5]], 1),
    ]


def client_data(seed=0):
    """Each client's 20 samples: random combinations of its group's two basis vectors (rank 2, so U^2 spans it)."""
    rng = np.random.default_rng(seed)
    bases = group_bases()
    return np.stack([rng.normal(size=(20, 2)) @ bases[c // 2].T for c in range(6)])


def pacfl_clusters(threshold):
    method = load_method("pacfl", {"p": "2", "threshold": str(threshold)}).create()
    method.setup(context(6, participants=6, params={"w": torch.zeros(6, dtype=torch.float64)}))
    method.plan(0, queries(ScriptedClients(inputs=client_data())), np.random.default_rng(0))
    return method


def groups(labels):
    """The partition as a set of frozensets of client ids."""
    return {frozenset(np.flatnonzero(labels == g).tolist()) for g in np.unique(labels)}


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [(5, [A, B, C]), (20, [A + B, C]), (40.3, [A + B, C]), (41, [A + B + C])],
)
def test_average_linkage_of_smallest_principal_angles_merges_below_the_threshold(threshold, expected):
    method = pacfl_clusters(threshold)
    assert groups(method.assignment) == {frozenset(g) for g in expected}
    assert method.num_models == len(expected)
    assert events(method) == [("recluster_global", "0 1 2 3 4 5", float(len(expected)))]


def test_the_recorded_angles_are_the_proximity_matrix():
    """Off-diagonal smallest angles: 0 within groups (6 pairs), 10 (A-B, 8), 40 (A-C, 8), 41.03 (B-C, 8)."""
    measured = {m["quantity"]: m["value"] for m in pacfl_clusters(5).events.measures}
    assert measured["angle_min"] == pytest.approx(0, abs=1e-4)
    assert measured["angle_max"] == pytest.approx(np.degrees(np.arccos(np.cos(np.radians(10)) * np.cos(np.radians(40)))))
    assert measured["angle_median"] == pytest.approx(40)  # 30 ordered pairs: 6 at 0, 8 at 10, 8 at 40, 8 at 41.03
