"""FlexCFL conformance (Duan et al., IEEE TPDS 2021): EDC group cold start and client migration.

Group cold start (section 4, "Decomposed Cosine Similarity"): the m x d matrix of update directions ΔW is
decomposed by truncated SVD into K directions V (the top-K right singular vectors); each client is described
by M_i = (cos(Δw_i, v_1), ..., cos(Δw_i, v_K)), EDC(i, j) = ||M_i - M_j||_2, and K-means on M gives the groups.
Client migration: a client whose distribution shifted is placed in the group whose update direction is the
least cosine-dissimilar to its own (argmin of 1 - cos, i.e. argmax of cos).

The cold-start case worked by hand: K = 2; clients 0-2 move along e1, clients 3-5 along e2, with norms 1, 10
and 100 in each group. ΔW has rank 2 and V spans {e1, e2}, so every client of a group has the same M row
(cosines are scale-free) and K-means must return the two directions. K-means on the raw updates instead
(no decomposition, no cosine) groups by norm: the two 100-norm updates are 141 apart, every other pair is
within 100 of some 100-norm update and 14 of each other, so its best split isolates a large update.
"""

import numpy as np
import pytest
import torch

from driftbench.methods.catalog import load_method
from driftbench.methods.flexcfl import decomposed_groups
from driftbench.methods.rounds import Plan, TrainResult
from tests.methods.fakes import ScriptedClients, context, events, queries

NORMS = np.array([1.0, 10.0, 100.0])
E1, E2, E3 = np.eye(3)
UPDATES = np.vstack([NORMS[:, None] * E1, NORMS[:, None] * E2])  # clients 0-2 along e1, 3-5 along e2


def test_decomposed_cosine_groups_are_the_directions_not_the_norms():
    labels = decomposed_groups(UPDATES, k=2, seed=0)
    assert len(set(labels[:3])) == 1 and len(set(labels[3:])) == 1 and labels[0] != labels[3]


def test_the_cold_start_groups_every_client_by_its_negative_gradient_at_the_initial_model():
    method = flexcfl()
    assert method.assignment[:3].tolist() == [method.assignment[0]] * 3 and method.assignment[3] != method.assignment[0]
    assert method.num_models == 2
    assert method.group_directions[method.assignment[0]] == pytest.approx(E1)


def flexcfl():
    """FlexCFL (K = 2) after its round-0 cold start on UPDATES (the clients report gradient = -update)."""
    method = load_method("flexcfl", {"k": "2"}).create()
    method.setup(context(6, participants=6, params={"w": torch.zeros(3, dtype=torch.float64)}))
    method.plan(0, queries(ScriptedClients(grads=-UPDATES)), np.random.default_rng(0))
    return method


def test_a_drifted_client_migrates_to_the_group_of_the_most_similar_update_direction():
    """Client 0 (group of e1) now moves along 0.3 e1 + e2 + 0.5 e3: cosine 0.26 with e1, 0.87 with e2, so it joins
    the e2 group; client 4 (e2 group) moves along -e1 + 0.2 e2 (cosine -0.98 with e1, 0.20 with e2) and stays."""
    method = flexcfl()
    e1_group, e2_group = int(method.assignment[0]), int(method.assignment[3])
    grads = -UPDATES.copy()
    grads[0] = -(0.3 * E1 + E2 + 0.5 * E3)
    grads[4] = -(-E1 + 0.2 * E2)
    method.plan(1, queries(ScriptedClients(grads=grads), changed=[0, 4]), np.random.default_rng(1))
    assert method.assignment[0] == e2_group and method.assignment[4] == e2_group
    assert method.assignment[1] == e1_group
    assert events(method)[-1] == ("move", "0", None)  # only client 0 changed group
    measured = {m["quantity"]: m["value"] for m in method.events.measures}
    own = (0.3 / np.sqrt(1.34) + 0.2 / np.sqrt(1.04)) / 2  # each client's cosine with the group it was in
    assert measured["migration_own_cosine_mean"] == pytest.approx(own)
    assert measured["migration_best_cosine_mean"] == pytest.approx((1 / np.sqrt(1.34) + 0.2 / np.sqrt(1.04)) / 2)


def test_a_group_direction_is_the_mean_unit_update_of_its_latest_participants():
    """Group e1's participants return updates 2 e1 and 3 e2 (unit vectors e1, e2): its direction becomes (e1 + e2) / 2."""
    method = flexcfl()
    g = int(method.assignment[0])
    plan = Plan(np.array([0, 1]), method.assignment[[0, 1]])
    trained = {"w": torch.as_tensor(np.stack([2 * E1, 3 * E2]))}
    method.aggregate(1, TrainResult(plan, trained, np.ones(2), np.zeros(2)))
    assert method.group_directions[g] == pytest.approx((E1 + E2) / 2)
    assert method.group_directions[1 - g] == pytest.approx(E2)
