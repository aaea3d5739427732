"""FedAvg over rounds (McMahan et al., AISTATS 2017, Algorithm 1 FederatedAveraging): one shared global model that
every round's participants train and the server replaces by their average, so all clients are served one model and
that model learns from the union of their data.

Replayed: ``label-swap`` on 8x8 digits without a drift (every client holds the identity concept: IID), 8
clients, 4 per round, 8 rounds of 10 local steps.
"""

import pytest

from tests.methods.conformance.behaviour import replay

ROUNDS = 8
SETS = {"clients": 8, "rounds": ROUNDS, "drift_every": 100, "train_samples": 60, "train.local_steps": 10, "train.participants": 4}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("label-swap", "fedavg", tmp_path_factory.mktemp("fedavg"), SETS)


def test_one_global_model_serves_every_client_and_learns_over_rounds(run):
    """Algorithm 1: every client holds the one global model (one cluster in every round, all clients on model 0),
    and the server's averaging carries the participants' training into it: mean test accuracy rises from
    round 0 to the last round by more than 0.3 (measured at seed 0: 0.100 -> 0.600).

    Fails when the server keeps the old global model instead of averaging (``FedAvg.aggregate`` a no-op):
    accuracy stays at its round-0 level.
    """
    assert (run.rounds["n_clusters"] == 1).all() and not run.partitions.any()
    accuracy = run.rounds["accuracy_mean"]
    assert accuracy[ROUNDS - 1] > accuracy[0] + 0.3, accuracy.round(3).tolist()
