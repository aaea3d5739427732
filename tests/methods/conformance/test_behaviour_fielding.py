"""FIELDING over rounds (paper 003, section 2.2 and Algorithms 1-2): without drift nothing is re-clustered; when
clients' label distributions drift, each drifted client moves to the nearest cluster center, and a global
re-clustering happens only if a cluster then grows wider than Delta.

Replayed: ``label-shift`` on 8x8 digits with rho = 0.5 (two groups of 5 labels), 8 clients, 4 per round, 8
rounds; half the clients move to the other label group at round 4.
"""

import pytest

from tests.methods.conformance.behaviour import replay

DRIFT, ROUNDS = 4, 8
SETS = {"source": "digits", "rho": 0.5, "clients": 8, "rounds": ROUNDS, "drift_round": DRIFT, "train.participants": 4}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("label-shift", "fielding", tmp_path_factory.mktemp("fielding"), SETS)


def test_no_reclustering_without_drift_and_drifted_clients_move_to_their_new_group(run):
    """Rounds before the drift: only round 0's clustering (on the label groups, ARI 1). At the drift round a
    ``move`` event names exactly the drifted clients, and the clusters still match the label groups after it
    (ARI 1). Global re-clusterings after round 0 happen exactly where the widest cluster exceeded Delta
    (measured at seed 0: diameter 0.67 > Delta = 0.1 at round 4, so one re-clustering there).

    Fails when FIELDING moves no client (``Fielding.adjust`` leaving drifted clients in their cluster).
    """
    reclustered = run.kind("recluster_global")["round"].tolist()
    diameter, delta = run.measured("fielding_max_diameter"), run.measured("fielding_delta")
    assert reclustered[0] == 0 and reclustered[1:] == diameter.index[diameter > delta].tolist()
    assert not 0 < min(reclustered[1:], default=DRIFT) < DRIFT
    assert (run.rounds["ari"] == 1.0).all()
    assert run.clients("move", DRIFT) == set(run.trace.changed_at(DRIFT).tolist())
