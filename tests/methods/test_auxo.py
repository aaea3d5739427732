"""Auxo: last round's participants are regrouped by their updates; new cohorts copy their source model."""

import numpy as np
import torch

from driftbench.methods.base import Plan, TrainResult
from driftbench.methods.catalog import load_method
from tests.methods.fakes import ScriptedClients, context, queries


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
