"""FIELDING conformance (paper 003, sections 2.2-2.3, Algorithms 1-3, appendix E.1).

Label distributions over 3 classes, L1 distance (section 2.3). Two groups of 4 clients:
A = [1, 0, 0] (clients 0-3) and B = [0, 0, 1] (clients 4-7), 2 apart; k-means by silhouette
finds them at round 0 (Algorithm 3).
"""

import numpy as np
import pytest
import torch

from driftbench.methods.catalog import load_method
from driftbench.methods.queries import Overhead
from tests.methods.fakes import ScriptedClients, context, queries

A, B = [4.0, 0.0, 0.0], [0.0, 0.0, 4.0]
HOME = np.array([A] * 4 + [B] * 4)


def fielding(histograms=HOME, **sets):
    """FIELDING (paper parameters unless ``sets``) after its round-0 clustering of ``histograms``."""
    method = load_method("fielding", {k: str(v) for k, v in sets.items()}).create()
    method.setup(context(len(histograms), participants=4))
    method.plan(0, queries(ScriptedClients(histograms)), np.random.default_rng(0))
    return method


def drift(method, client, histogram, rnd=1):
    """Client ``client`` reports ``histogram`` this round; returns whether FIELDING re-clustered globally."""
    reports = HOME.copy()
    reports[client] = histogram
    before = sum(row["kind"] == "recluster_global" for row in method.events.rows)
    method.plan(rnd, queries(ScriptedClients(reports), changed=[client]), np.random.default_rng(rnd))
    return sum(row["kind"] == "recluster_global" for row in method.events.rows) > before


def test_delta_doubles_after_two_consecutive_reclusterings_and_otherwise_steps_down_by_c():
    """Section 2.2 / E.1: Delta starts at c = 0.1; after each drift event Delta <- m Delta (m = 2) if global
    re-clustering happened at this and the previous event, else Delta <- max(c, Delta - c).

    Client 0 reports "far" = [3, 1, 0] (L1 0.5 from A's other members, 1.5 from B) or "home" = A.
    It stays nearest to A, so A's diameter is 0.5 after "far" and 0 after "home":
      far:  0.5 > 0.1 re-cluster, no previous one -> max(0.1, 0.1 - 0.1) = 0.1
      far:  0.5 > 0.1 re-cluster, previous too   -> 2 x 0.1 = 0.2
      far:  0.5 > 0.2 re-cluster, previous too   -> 2 x 0.2 = 0.4
      home: 0   <= 0.4 no re-clustering         -> max(0.1, 0.4 - 0.1) = 0.3
      far:  0.5 > 0.3 re-cluster, previous not   -> max(0.1, 0.3 - 0.1) = 0.2
      far:  0.5 > 0.2 re-cluster, previous too   -> 2 x 0.2 = 0.4
    """
    method = fielding()
    assert method.delta == 0.1
    far = [3.0, 1.0, 0.0]
    seen = []
    for rnd, report in enumerate([far, far, far, A, far, far], start=1):
        reclustered = drift(method, 0, report, rnd)
        seen.append((reclustered, round(method.delta, 10)))
    assert seen == [(True, 0.1), (True, 0.2), (True, 0.4), (False, 0.3), (True, 0.2), (True, 0.4)]


def test_drifted_clients_move_to_the_nearest_center_as_it_was_before_the_moves():
    """Algorithm 2 line 2 and section 2.2: each drifted client joins the closest center, centers not updated.

    Three groups of 3 with centers a = [1, 0, 0], b = [0, 1, 0], c = [0, 0, 1]. Client 0 (in a) reports
    [0.1, 0.3, 0.6]: L1 distances to a, b, c are 1.8, 1.4, 0.8 -> c. Client 3 (in b) reports
    [0.5, 0.45, 0.05]: 1.0 to a, 1.1 to b, 1.9 to c -> a. Huge Delta (c = 10): moves only.
    """
    home = np.array([[3.0, 0, 0]] * 3 + [[0, 3.0, 0]] * 3 + [[0, 0, 3.0]] * 3)
    method = fielding(home, c=10)
    a, b, c = method.assignment[[0, 3, 6]]
    assert len({a, b, c}) == 3
    reports = home.copy()
    reports[0], reports[3] = [1.0, 3.0, 6.0], [10.0, 9.0, 1.0]
    method.plan(1, queries(ScriptedClients(reports), changed=[0, 3]), np.random.default_rng(1))
    assert method.assignment[0] == c and method.assignment[3] == a
    assert method.assignment[[1, 2, 4, 5, 6, 7, 8]].tolist() == [a, a, b, b, c, c, c]


def test_global_reclustering_fires_when_two_clients_of_one_cluster_are_farther_apart_than_delta():
    """Algorithm 2 line 4: re-cluster when some pair i, j of one cluster has ||r_i - r_j|| > Delta.

    Delta = 0.5 set by hand. Client 0 of A reports [2.8, 1.2, 0]: L1 0.6 from its cluster mates
    (> 0.5: re-cluster), although its distance to A's mean after the move, [0.925, 0.075, 0],
    is only 0.45 (a radius test would not fire). Reporting [3.2, 0.8, 0] (0.4 apart) does not fire.
    """
    method = fielding()
    method.delta = 0.5
    assert not drift(method, 0, [3.2, 0.8, 0.0])
    method = fielding()
    method.delta = 0.5
    assert drift(method, 0, [2.8, 1.2, 0.0])


def test_new_clusters_models_average_their_members_old_cluster_models():
    """Algorithm 2 last lines: after global re-clustering, c^(k) <- avg over i in C_k of x_i, x_i the model of
    client i's cluster (after the moves).

    Set by hand: A split into clusters {0, 1} (model 1) and {2, 3} (model 3), B = {4..7} (model 5).
    Client 4 reports [0, 1, 3]: nearest B, B's diameter 0.5 > Delta = 0.1 -> re-cluster. A's four
    identical distributions land in one new cluster, whose model must be (1 + 1 + 3 + 3) / 4 = 2;
    every new cluster of B's clients gets 5.
    """
    method = fielding()
    method.assignment = np.array([0, 0, 1, 1, 2, 2, 2, 2])
    method.models = {"w": torch.tensor([[1.0, 1.0], [3.0, 3.0], [5.0, 5.0]], dtype=torch.float64)}
    assert drift(method, 4, [0.0, 1.0, 3.0])
    new = method.assignment
    assert len(np.unique(new[:4])) == 1 and not np.isin(new[:4], new[4:]).any()
    assert method.models["w"][new[0]].tolist() == pytest.approx([2.0, 2.0])
    for k in np.unique(new[4:]):
        assert method.models["w"][k].tolist() == pytest.approx([5.0, 5.0])
    assert method.num_models == len(np.unique(new))


def test_every_drift_trigger_reclusters_globally_where_no_cluster_is_wider_than_delta():
    """Figure 2a's baseline (section 2.1): re-cluster all clients "after every drift event", not past Delta.

    Client 0 reports [3.9, 0.1, 0]: 0.05 from its cluster mates, not wider than Delta = c = 0.1, so FIELDING
    only keeps it in A. With ``trigger = "every_drift"`` the same report re-clusters everyone, at this and at
    the next drift event, and Delta stays c (unused: no ``threshold`` event). A round without drift
    re-clusters nothing.

    Fails when ``needs_reclustering`` applies the diameter rule to "every_drift", or when Delta is still
    updated there (it doubles to 0.2 after two consecutive re-clusterings).
    """
    near = [3.9, 0.1, 0.0]
    assert [drift(fielding(), 0, near, rnd) for rnd in (1, 2)] == [False, False]
    method = fielding(trigger="every_drift")
    assert [drift(method, 0, near, rnd) for rnd in (1, 2)] == [True, True]
    assert method.delta == 0.1 and "threshold" not in [row["kind"] for row in method.events.rows]
    before = len(method.events.rows)
    method.plan(3, queries(ScriptedClients(HOME)), np.random.default_rng(3))
    assert len(method.events.rows) == before


def test_participants_scope_moves_only_the_sampled_drifted_clients_and_the_others_once_sampled():
    """Figure 2b's baseline (section 2.1): only the selected clients are re-clustered; "unselected clients
    drift but remain in their previous clusters".

    At round 1 clients 0, 1 (in A) report B and clients 4, 5 (in B) report A; clusters stay pure, so no
    global re-clustering. Default scope: all four move, four histograms are uploaded. ``scope =
    "participants"``: the round's 4 participants (2 per cluster) are drawn first; only the drifted ones
    among them report (3 float32 each) and move, the others keep their cluster. At round 2 (no new drift)
    the drifted clients sampled then that were not sampled at round 1 report and move.

    Fails when the participants scope handles every drifted client (``plan`` ignoring ``scope``), or when
    it forgets a drifted client that was not sampled (only this round's drifted participants report).
    """
    reports = HOME.copy()
    reports[[0, 1]], reports[[4, 5]] = B, A
    drifted, a, b = {0, 1, 4, 5}, *fielding().assignment[[0, 4]]
    swapped = {0: b, 1: b, 4: a, 5: a}

    default, overhead = fielding(), Overhead()
    default.plan(1, queries(ScriptedClients(reports), changed=sorted(drifted), overhead=overhead), np.random.default_rng(1))
    assert all(default.assignment[c] == swapped[c] for c in drifted) and overhead.upload_bytes == 4 * 3 * 4

    method, moved = fielding(scope="participants"), []
    for rnd, changed in ((1, sorted(drifted)), (2, [])):
        overhead = Overhead()
        before = method.assignment.copy()
        plan = method.plan(rnd, queries(ScriptedClients(reports), changed=changed, overhead=overhead), np.random.default_rng(rnd))
        reporting = drifted.intersection(plan.participants.tolist()).difference(*moved)
        assert {int(c) for c in np.flatnonzero(method.assignment != before)} == reporting
        assert all(method.assignment[c] == swapped[c] for c in reporting)
        assert overhead.upload_bytes == len(reporting) * 3 * 4
        moved.append(reporting)
    assert moved == [{0, 5}, {1, 4}]  # at these seeds: half of the drifted clients wait for round 2
    assert "recluster_global" not in [row["kind"] for row in method.events.rows[1:]]
