"""IFCA: each participant trains its lowest-loss model; K - 1 extra downloads, K losses and passes each."""

import numpy as np
import pytest

from driftbench.errors import ConfigError
from driftbench.methods.catalog import load_method
from driftbench.methods.ifca import best_models
from driftbench.methods.queries import Overhead
from tests.methods.fakes import ScriptedClients, context, events, queries


def test_best_models_is_the_row_argmin():
    losses = np.array([[0.5, 0.2, 0.9], [0.1, 0.3, 0.2], [0.7, 0.7, 0.4]])
    assert best_models(losses).tolist() == [1, 0, 2]


def test_participants_train_their_lowest_loss_model_and_overhead_is_counted():
    method = load_method("ifca", {"k": "3"}).create()
    method.setup(context(6, participants=6))
    losses = np.array([[0.5, 0.2, 0.9], [0.1, 0.3, 0.2], [0.7, 0.7, 0.4], [0.3, 0.1, 0.2], [0.0, 1.0, 1.0], [2.0, 1.0, 0.5]])
    overhead = Overhead()
    plan = method.plan(0, queries(ScriptedClients(losses=losses), overhead=overhead, model_bytes=100), np.random.default_rng(0))
    assert plan.participants.tolist() == list(range(6))
    assert plan.start_models.tolist() == [1, 0, 2, 1, 0, 2] == method.assignment.tolist()
    assert method.num_models == 3 and plan.models_downloaded == 1
    # 6 participants x (3 - 1) extra models; 3 losses up and 3 forward passes each
    assert (overhead.download_bytes, overhead.upload_bytes, overhead.client_extra_passes) == (1200, 72, 18)


def test_frozen_ifca_assigns_every_client_at_the_freeze_round_then_nobody_evaluates_or_moves():
    method = load_method("ifca", {"k": "2", "freeze_after": "2"}).create()
    method.setup(context(4, participants=2))
    assert not method.reclusters
    losses = np.array([[0.5, 0.2], [0.1, 0.3], [0.7, 0.4], [0.1, 0.5]])
    for rnd in range(2):
        method.plan(rnd, queries(ScriptedClients(losses=losses)), np.random.default_rng(rnd))
    overhead = Overhead()
    method.plan(2, queries(ScriptedClients(losses=losses), overhead=overhead), np.random.default_rng(2))
    assert method.assignment.tolist() == [1, 0, 1, 0]  # every client, sampled or not
    assert overhead.client_extra_passes == 4 * 2
    frozen = Overhead()
    swapped = losses[:, ::-1].copy()
    for rnd in range(3, 6):
        plan = method.plan(rnd, queries(ScriptedClients(losses=swapped), overhead=frozen), np.random.default_rng(rnd))
        assert plan.start_models.tolist() == method.assignment[plan.participants].tolist()
    assert method.assignment.tolist() == [1, 0, 1, 0] and frozen.client_extra_passes == 0


def test_freeze_after_must_be_a_round():
    with pytest.raises(ConfigError, match="freeze_after must be >= 0"):
        load_method("ifca", {"freeze_after": "-1"}).create()


def test_clients_whose_lowest_loss_model_changed_are_logged_as_assigned():
    method = load_method("ifca", {"k": "3"}).create()
    method.setup(context(4, participants=4))
    losses = np.array([[0.5, 0.2, 0.9], [0.1, 0.3, 0.2], [0.7, 0.7, 0.4], [0.1, 0.5, 0.2]])
    method.plan(0, queries(ScriptedClients(losses=losses)), np.random.default_rng(0))
    assert events(method) == [("assign", "0 2", None)]  # clients 1 and 3 keep model 0
    method.plan(1, queries(ScriptedClients(losses=losses)), np.random.default_rng(1))
    assert len(events(method)) == 1  # nobody changed: no event
    losses[3] = [0.9, 0.1, 0.5]
    method.plan(2, queries(ScriptedClients(losses=losses)), np.random.default_rng(2))
    assert events(method)[1:] == [("assign", "3", None)]
