"""Auxo conformance (Liu et al., SoCC 2023; as FIELDING's baseline, FIELDING section 2.1): selected clients re-clustered.

Each round the server clusters the clients it selected by their (normalised) updates, and only those clients
change cohort (drifted clients not selected stay where they were: FIELDING's Table 1, "Selected / Gradients").
driftbench fixes K cohorts: K-means of the unit updates, each K-means group matched to the cohort it overlaps
most (maximum-weight matching), a cohort that gets its first members copying the model most of them trained.

The matching case worked by hand: K = 2, clients 0-2 in cohort 0 and 3-5 in cohort 1 trained last round;
clients 0, 1, 3 moved along e1 and 2, 4, 5 along e2, with client 1's update 100 times longer. Unit updates put
{0, 1, 3} and {2, 4, 5} together (on raw updates K-means would isolate client 1). Overlaps with cohorts
(0, 1): {0, 1, 3} -> (2, 1), {2, 4, 5} -> (1, 2), so the matching of weight 4 keeps {0, 1, 3} in cohort 0 and
{2, 4, 5} in cohort 1 (the other matching weighs 2): client 3 moves to cohort 0 and client 2 to cohort 1.
Clients 6 and 7 were not selected and keep their cohorts.
"""

import numpy as np
import torch

from driftbench.methods.catalog import load_method
from driftbench.methods.rounds import Plan, TrainResult
from tests.methods.fakes import ScriptedClients, context, events, queries

E1, E2 = np.eye(2)


def auxo():
    method = load_method("auxo", {"k": "2"}).create()
    method.setup(context(8, participants=6))
    return method


def train(method, participants, updates):
    """``participants`` trained their cohorts' models and moved by ``updates``."""
    start = method.assignment[participants]
    trained = {"w": method.models["w"][torch.as_tensor(start)] + torch.as_tensor(updates)}
    method.aggregate(0, TrainResult(Plan(participants, start), trained, np.ones(len(participants)), np.zeros(len(participants))))


def test_selected_clients_join_the_cohort_their_update_group_overlaps_most():
    method = auxo()
    method.assignment[:] = [0, 0, 0, 1, 1, 1, 1, 0]
    method.used[:] = True
    updates = np.stack([E1, 100 * E1, E2, E1, E2, E2])
    train(method, np.arange(6), updates)
    method.plan(1, queries(ScriptedClients()), np.random.default_rng(0))
    assert method.assignment.tolist() == [0, 0, 1, 0, 1, 1, 1, 0]
    assert events(method) == [("move", "2 3", None)]
    assert [m["value"] for m in method.events.measures if m["quantity"] == "matched_overlap_fraction"] == [4 / 6]


def test_a_cohort_that_gets_its_first_members_starts_from_the_model_they_trained():
    """All in cohort 0; clients 0, 1 move along e1 and 2, 3 along e2: one group keeps cohort 0, the other makes
    cohort 1, whose model becomes a copy of cohort 0's (the model its members trained)."""
    method = auxo()
    train(method, np.arange(4), np.stack([E1, 2 * E1, E2, 3 * E2]))
    method.models["w"][1] = torch.tensor([7.0, -7.0], dtype=torch.float64)  # not a trained model
    method.plan(1, queries(ScriptedClients()), np.random.default_rng(0))
    a = method.assignment
    assert a[0] == a[1] != a[2] == a[3] and set(a[:4]) == {0, 1} and a[4:].tolist() == [0] * 4
    assert torch.equal(method.models["w"][1], method.models["w"][0]) and method.used.all()
    new = np.flatnonzero(a == 1)
    assert events(method) == [("create", " ".join(map(str, new)), 2.0)]
