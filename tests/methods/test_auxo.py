"""Auxo: last round's participants are regrouped by their updates; new cohorts copy their source model; events."""

import numpy as np
import torch

from driftbench.methods.catalog import load_method
from driftbench.methods.rounds import Plan, TrainResult
from tests.methods.fakes import ScriptedClients, context, events, id_text, queries


def test_participants_are_regrouped_by_update_direction():
    method = load_method("auxo", {"k": "2"}).create()
    method.setup(context(6, participants=4))
    plan = method.plan(0, queries(ScriptedClients()), np.random.default_rng(0))
    assert method.num_models == 2 and (plan.start_models == 0).all()
    ids = np.array([0, 1, 2, 3])
    trained = {"w": torch.tensor([[1.0, 0.1], [1.0, -0.1], [-1.0, 0.1], [-1.0, 0.0]], dtype=torch.float64)}
    method.aggregate(0, TrainResult(Plan(ids, np.zeros(4, dtype=np.int64)), trained, np.ones(4), np.zeros(4)))
    method.plan(1, queries(ScriptedClients()), np.random.default_rng(1))
    a = method.assignment
    assert a[0] == a[1] != a[2] == a[3] and a[4] == a[5] == 0  # only participants move
    assert torch.equal(method.models["w"][0], method.models["w"][1])  # the new cohort copies cohort 0's model
    assert events(method) == [("create", id_text(np.flatnonzero(a == 1)), 2.0)]  # the group that got cohort 1


def train_round(method, rnd, directions):
    """Plan round ``rnd``; clients 0-3 then return their start model moved along ``directions`` (rows)."""
    method.plan(rnd, queries(ScriptedClients()), np.random.default_rng(rnd))
    participants = np.arange(4)
    start = method.assignment[participants]
    trained = {"w": method.models["w"][torch.as_tensor(start)] + torch.tensor(directions, dtype=torch.float64)}
    method.aggregate(rnd, TrainResult(Plan(participants, start), trained, np.ones(4), np.zeros(4)))


def test_a_participant_regrouped_into_another_existing_cohort_is_logged_as_moved():
    method = load_method("auxo", {"k": "2"}).create()
    method.setup(context(6, participants=4))
    train_round(method, 0, [[1.0, 0.1], [1.0, -0.1], [-1.0, 0.1], [-1.0, 0.0]])
    train_round(method, 1, [[-1.0, 0.1], [1.0, -0.1], [-1.0, 0.1], [-1.0, 0.0]])  # client 0 turns to 2 and 3's side
    before = method.assignment.copy()
    method.plan(2, queries(ScriptedClients()), np.random.default_rng(2))
    assert method.assignment[0] == before[2] != before[0]
    assert events(method)[1:] == [("move", "0", None)]
