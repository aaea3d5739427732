"""FedDAG conformance (001 sections 3.2-3.4, Algorithms 2-3): hand-worked cases of the fused proximity and its clustering.

Eq. 5-6: V_ij = (1/C) sum_c V'_ijc W'_ijc, W_ijc = max(ln(n_ic + e), ln(n_jc + e)) / min(...) min-max scaled to
[1 - delta, 1 + delta]. Eq. 7: A_ij = w_i G_ij + (1 - w_i) V_ij for i < j, A_ji = A_ij. Eq. 8: w minimises the
mean row entropy of the row-softmax of A. Eq. 9-10: L = L1 + lam L2, L1 the clusters' compactness, L2 the mean
of exp(max(0, N/Z - gamma sigma - |C_z|) / tau). Algorithm 3: candidates from a threshold grid, the lowest loss
with relatively few clusters.
"""

import numpy as np
import pytest
import torch

from driftbench.methods.feddag_similarity import (
    clustering_loss,
    data_distance,
    entropy_loss,
    fuse,
    fusion_weights,
    optimal_clustering,
)

E = np.e


def test_eq5_eq6_class_angles_weighted_by_scaled_log_frequency_ratios():
    """Eq. 5-6 by hand, delta = 0.6, epsilon = e.

    Client 0 has n = (0, e^2 - e), client 1 has (e^2 - e, e^2 - e): ln(n + e) = (1, 2) and (2, 2).
    W for the pair (0, 1): class 0: 2 / 1 = 2, class 1: 1; every other entry (a client with itself) is 1.
    Min-max over all pairs and classes to [0.4, 1.6]: W'_01 = (1.6, 0.4). Class angles V'_01 = (90, 30)
    (class 0 on one side only: 90 degrees), so V_01 = (90 x 1.6 + 30 x 0.4) / 2 = 78; V_00 = V_11 = 0.
    Unweighted it would be 60; with the ratio inverted (min / max) 42.
    """
    counts = np.array([[0.0, E**2 - E], [E**2 - E, E**2 - E]])
    angles = np.zeros((2, 2, 2))
    angles[0, 1] = angles[1, 0] = [90.0, 30.0]
    assert data_distance(angles, counts, 0.6) == pytest.approx(np.array([[0.0, 78.0], [78.0, 0.0]]))


G3 = np.array([[0.0, 0.2, 0.8], [0.2, 0.0, 0.6], [0.8, 0.6, 0.0]])
V3 = np.array([[0.0, 1.0, 0.4], [1.0, 0.0, 0.0], [0.4, 0.0, 0.0]])


def test_eq7_each_pair_is_fused_with_the_weight_of_its_lower_index_client():
    """Eq. 7 with w = (0.25, 0.5, 0.9):

    A_01 = 0.25 x 0.2 + 0.75 x 1 = 0.8;  A_02 = 0.25 x 0.8 + 0.75 x 0.4 = 0.5;  A_12 = 0.5 x 0.6 + 0.5 x 0 = 0.3;
    mirrored, zero diagonal. w_2 (the last client's) enters no pair. With the upper index's weight A_01 would be 0.6.
    """
    expected = np.array([[0.0, 0.8, 0.5], [0.8, 0.0, 0.3], [0.5, 0.3, 0.0]])
    w = np.array([0.25, 0.5, 0.9])
    assert fuse(G3, V3, w) == pytest.approx(expected)
    assert fuse(G3, V3, torch.tensor(w)).numpy() == pytest.approx(expected)
    assert fuse(G3, V3, np.array([0.25, 0.5, 0.0])) == pytest.approx(expected)


def test_eq8_entropy_is_the_mean_over_rows_of_the_row_softmax_entropy():
    """Eq. 8 on A = [[0, ln 3], [0, 0]]: row 0's softmax is (1/4, 3/4), entropy 0.5623; row 1's (1/2, 1/2), ln 2.

    L_en = (0.5623 + 0.6931) / 2 = 0.6277.
    """
    row0 = -(0.25 * np.log(0.25) + 0.75 * np.log(0.75))
    loss = entropy_loss(torch.tensor([[0.0, np.log(3.0)], [0.0, 0.0]], dtype=torch.float64))
    assert float(loss) == pytest.approx((row0 + np.log(2.0)) / 2)


def test_eq8_weights_favour_the_view_that_separates_the_clients_and_only_free_weights_move():
    """Two clients, G_01 = 1 (gradients apart), V_01 = 0 (data alike): A_01 = w_0. Each row's softmax is that of
    (0, w_0), whose entropy falls as w_0 grows, so the minimum over [0, 1] is w_0 = 1; swapping the views gives
    w_0 = 0. w_1 enters no pair (Eq. 7): it keeps its start. A.8: a weight not marked free keeps its value.
    """
    g, v = np.array([[0.0, 1.0], [1.0, 0.0]]), np.zeros((2, 2))
    free = np.array([True, True])
    assert fusion_weights(g, v, np.array([0.5, 0.3]), free) == pytest.approx([1.0, 0.3])
    assert fusion_weights(v, g, np.array([0.5, 0.3]), free) == pytest.approx([0.0, 0.3])
    assert fusion_weights(g, v, np.array([0.5, 0.3]), np.array([False, True])) == pytest.approx([0.5, 0.3])


# Six clients: A = {0, 1, 2} 0.1 apart; B = {3, 4} 0.1 apart, client 5 0.5 from both; A and B 0.9 apart.
SIX = np.full((6, 6), 0.9)
SIX[:3, :3] = 0.1
SIX[3:, 3:] = 0.5
SIX[3, 4] = SIX[4, 3] = 0.1
np.fill_diagonal(SIX, 0.0)


def test_eq9_eq10_compactness_and_degeneracy_of_a_partition_with_a_singleton():
    """Eq. 9-10 on SIX for {0,1,2}, {3,4}, {5} with lam = 0.1, gamma = 1, tau = 1.

    L1 (averaged over the Z = 3 clusters, the module's stated choice): (6 x 0.1 / 9 + 2 x 0.1 / 4 + 0) / 3 = 0.03889.
    Sizes (3, 2, 1): mean N / Z = 2, sigma = sqrt(2/3) = 0.8165, floor 1.1835; only the singleton is below it,
    L2 = (1 + 1 + exp(0.1835)) / 3 = 1.06714. L = 0.03889 + 0.1 x 1.06714 = 0.14560.
    {0,1,2}, {3,4,5}: L1 = (0.6 / 9 + 2.2 / 9) / 2 = 0.15556, sizes equal so L2 = 1: L = 0.25556.
    """
    l1 = (0.6 / 9 + 0.2 / 4) / 3
    l2 = (2 + np.exp(1 - np.sqrt(2 / 3))) / 3
    assert clustering_loss(SIX, np.array([0, 0, 0, 1, 1, 2]), 0.1, 1.0, 1.0) == pytest.approx(l1 + 0.1 * l2)
    assert clustering_loss(SIX, np.array([0, 0, 0, 1, 1, 1]), 0.1, 1.0, 1.0) == pytest.approx(2.8 / 18 + 0.1)


def test_algorithm3_the_degeneracy_penalty_decides_whether_an_outlier_is_split_off():
    """Algorithm 3 on SIX, threshold grid 1.0, 0.95, ..., 0.05 (average linkage).

    alpha >= 0.9: one cluster (3 thresholds); 0.5 <= alpha < 0.9: {0,1,2}, {3,4,5} (8 thresholds);
    0.1 <= alpha < 0.5: {0,1,2}, {3,4}, {5} (8 thresholds); 0.05: one client per cluster, never a candidate.
    The two plateaus tie, so the lower loss decides. tau = 1: 0.1456 (with the singleton) < 0.2556: the
    outlier is split off, at the largest alpha of that plateau, 0.45. tau = 0.1: the singleton's penalty is
    exp(1.835) = 6.27, L = 0.03889 + 0.1 x (2 + 6.27) / 3 = 0.3144 > 0.2556: it stays with {3, 4}, alpha 0.85.
    The one-cluster loss, 19 / 36 + 0.1 = 0.6278, is above both.
    """
    labels, alpha = optimal_clustering(SIX, 0.05, 0.1, 1.0, 1.0)
    assert labels.tolist() == [0, 0, 0, 1, 1, 2] and alpha == pytest.approx(0.45)
    labels, alpha = optimal_clustering(SIX, 0.05, 0.1, 1.0, 0.1)
    assert labels.tolist() == [0, 0, 0, 1, 1, 1] and alpha == pytest.approx(0.85)


def test_algorithm3_readings_the_paper_leaves_open_l1_summed_lowest_loss_and_no_size_penalty():
    """The readings docs/methods.md measures, on SIX and on NEAR (SIX with client 5 at 0.3 from {3, 4}).

    L1 summed as printed ({0,1,2}, {3,4}, {5}): 6 x 0.1 / 9 + 2 x 0.1 / 4 + 0 = 0.11667, 3x the averaged L1; with
    lam = 0 only compactness is left. On NEAR, {0,1,2}, {3,4,5} holds over 0.3 <= alpha < 0.9 (12 thresholds), the
    split-off singleton over 0.1 <= alpha < 0.3 (4). Its losses (lam 0.1, tau 1): L1 = (0.6 / 9 + 1.4 / 9) / 2 =
    0.1111, L = 0.2111; with the singleton 0.03889 + 0.1 x 1.06714 = 0.1456. The plateau reading takes the 12
    thresholds' two clusters; line 8 as the lowest loss takes the singleton.
    """
    l1 = 0.6 / 9 + 0.2 / 4
    assert clustering_loss(SIX, np.array([0, 0, 0, 1, 1, 2]), 0.0, 1.0, 1.0, summed=True) == pytest.approx(l1)
    assert clustering_loss(SIX, np.array([0, 0, 0, 1, 1, 2]), 0.0, 1.0, 1.0) == pytest.approx(l1 / 3)
    near = SIX.copy()
    near[5, 3:5] = near[3:5, 5] = 0.3
    assert clustering_loss(near, np.array([0, 0, 0, 1, 1, 1]), 0.1, 1.0, 1.0) == pytest.approx(0.2111, abs=1e-4)
    labels, alpha = optimal_clustering(near, 0.05, 0.1, 1.0, 1.0)
    assert labels.tolist() == [0, 0, 0, 1, 1, 1] and alpha == pytest.approx(0.85)
    labels, alpha = optimal_clustering(near, 0.05, 0.1, 1.0, 1.0, plateau=False)
    assert labels.tolist() == [0, 0, 0, 1, 1, 2] and alpha == pytest.approx(0.25)
