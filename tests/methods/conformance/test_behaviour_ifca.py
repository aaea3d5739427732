"""IFCA over rounds (Ghosh et al., NeurIPS 2020, Algorithm 1 and section 5, rotated MNIST): with the true number of
clusters K, machines that pick the lowest-loss model and train it separate into the data's groups, so the cluster
identities are recovered.

Replayed: ``rotation`` on 8x8 digits, two groups turned by 0 and 90 degrees, 8 clients that all take part in
every round, 10 rounds, no drift; IFCA with k = 2.
"""

import pytest

from tests.methods.conformance.behaviour import replay

ROUNDS = 10
SETS = {
    "clients": 8,
    "rounds": ROUNDS,
    "quarter_turns": "0,1",
    "drift_every": 100,
    "train_samples": 60,
    "train.local_steps": 10,
    "train.participants": 8,
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("rotation", "ifca", tmp_path_factory.mktemp("ifca"), SETS, {"k": 2})


def test_given_the_true_k_clients_recover_the_rotation_groups(run):
    """From independent initialisations the two models specialise: by the last rounds the lowest-loss choice
    puts each rotation group on its own model (ARI 1 over the last three rounds; measured: ARI 1 from round 5
    at seed 0), and every client's choice is logged as ``assign`` events.

    Fails when a machine picks its highest-loss model (``argmax`` for ``argmin`` in ``ifca.best_models``).
    """
    assert (run.rounds["ari"].iloc[-3:] == 1.0).all()
    assert len(run.kind("assign"))
