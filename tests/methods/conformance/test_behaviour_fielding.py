"""FIELDING over rounds (paper 003, section 2.2 and Algorithms 1-2): without drift nothing is re-clustered; when
clients' label distributions drift, each drifted client moves to the nearest cluster center, and a global
re-clustering happens only if a cluster then grows wider than Delta.

Replayed: ``label-shift`` on 8x8 digits with rho = 0.5 (two groups of 5 labels), 8 clients, 4 per round, 8
rounds; half the clients move to the other label group at round 4. The Figure 2 baselines (section 2.1) are
replayed beside it: ``fielding-participants`` on the same trace, and ``fielding-every-drift`` against
``fielding`` on ``label-swap`` with a minor drift every round (two digit clients swap concept: their label
histograms change only by the label map), 8 clients, 4 per round, 10 rounds.
"""

import pytest
from sklearn.metrics import adjusted_rand_score

from tests.methods.conformance.behaviour import replay

DRIFT, ROUNDS = 4, 8
SETS = {"source": "digits", "rho": 0.5, "clients": 8, "rounds": ROUNDS, "drift_round": DRIFT, "train.participants": 4}
MINOR = {"clients": 8, "rounds": 10, "concepts": 2, "drift_every": 1, "fraction": 0.25, "train.participants": 4}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("label-shift", "fielding", tmp_path_factory.mktemp("fielding"), SETS)


@pytest.fixture(scope="module")
def participants_run(tmp_path_factory):
    return replay("label-shift", "fielding-participants", tmp_path_factory.mktemp("participants"), SETS)


@pytest.fixture(scope="module")
def minor_runs(tmp_path_factory):
    return [replay("label-swap", name, tmp_path_factory.mktemp(name), MINOR) for name in ("fielding", "fielding-every-drift")]


def reclusterings(run):
    """Rounds after round 0 with a global re-clustering."""
    return [r for r in run.kind("recluster_global")["round"].tolist() if r > 0]


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


def test_every_drift_reclusters_at_each_minor_drift_where_fielding_stops_and_keeps_no_partition(minor_runs):
    """Figure 2a's baseline re-clusters globally after every drift event; FIELDING's Delta doubles while it
    re-clusters at consecutive events until it exceeds the clusters' width, then only moves clients. Measured
    at seed 0: FIELDING re-clusters at rounds 1-5 (Delta 0.1 -> 1.6, widest cluster 0.6-0.87) and not at 6-9;
    the baseline at all of rounds 1-9, and its partition changes at every round (FIELDING keeps it at 2).

    Fails when "every_drift" is handled as "diameter" (``needs_reclustering``'s rule and the Delta update).
    (The diameter rule alone at a fixed Delta = c would pass here, every cluster being wider than c: the unit
    test in test_fielding.py covers that.)
    """
    fielding, every = minor_runs
    drift_rounds = [r for r in range(1, MINOR["rounds"]) if len(every.trace.changed_at(r))]
    assert drift_rounds == list(range(1, MINOR["rounds"]))
    assert reclusterings(every) == drift_rounds
    diameter, delta = fielding.measured("fielding_max_diameter"), fielding.measured("fielding_delta")
    assert reclusterings(fielding) == diameter.index[diameter > delta].tolist()
    assert len(reclusterings(fielding)) < len(drift_rounds)
    assert (every.measured("fielding_delta") == 0.1).all() and every.kind("threshold").empty

    def kept(run):
        return sum(adjusted_rand_score(run.partitions[r - 1], run.partitions[r]) == 1.0 for r in drift_rounds)

    assert kept(every) < kept(fielding)


def test_participants_scope_leaves_unsampled_drifted_clients_in_their_old_cluster(run, participants_run):
    """Figure 2b's baseline re-clusters only the selected clients: a drifted client moves in the first round
    that samples it, never before, and while one has not been sampled the clusters mix the groups. FIELDING
    moves every drifted client at the drift round and keeps ARI 1. Measured at seed 0: clients 3, 4, 1 move at
    rounds 4, 5, 6; client 0 is never sampled, and ARI is below 1 from round 4 to the end.

    Fails when the participants scope handles every drifted client at once (``plan`` ignoring ``scope``).
    """
    drifted = set(run.trace.changed_at(DRIFT).tolist())
    assert run.clients("move", DRIFT) == drifted and (run.rounds["ari"] == 1.0).all()
    waiting = set(drifted)
    for rnd in range(ROUNDS):
        sampled = set(participants_run.participants[rnd].tolist()) if rnd >= DRIFT else set()
        assert participants_run.clients("move", rnd) == waiting & sampled
        waiting -= sampled
        assert (participants_run.rounds["ari"][rnd] < 1.0) == (rnd >= DRIFT and bool(waiting))
    assert waiting  # at this seed one drifted client is never sampled, so its cluster stays wrong to the end
