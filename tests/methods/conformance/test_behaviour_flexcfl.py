"""FlexCFL over rounds (Duan et al., IEEE TPDS 2021, section 4: cold start by decomposed update directions, then
client migration): the cold-start groups follow the clients' data, and after a distribution shift each drifted
client migrates to the group whose direction matches its new update, so the groups keep following the data.

Replayed: ``label-shift`` on 8x8 digits with rho = 0.5 (two groups of 5 labels), 8 clients, 4 per round, 8
rounds; half the clients move to the other group at round 4. FlexCFL with the true k = 2.
"""

import pytest

from tests.methods.conformance.behaviour import replay

DRIFT, ROUNDS = 4, 8
SETS = {"source": "digits", "rho": 0.5, "clients": 8, "rounds": ROUNDS, "drift_round": DRIFT, "train.participants": 4}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("label-shift", "flexcfl", tmp_path_factory.mktemp("flexcfl"), SETS, {"k": 2})


def test_cold_start_finds_the_label_groups_and_drifted_clients_migrate_to_their_new_group(run):
    """ARI 1 from round 0 to the drift; at the drift round a ``move`` event names exactly the drifted clients,
    and ARI stays 1 afterwards (measured at seed 0: ARI 1 in every round).

    Fails when drifted clients do not migrate (``FlexCFL.migrate`` a no-op): ARI falls at the drift.
    """
    assert [run.ari(r) for r in range(ROUNDS)] == [1.0] * ROUNDS
    assert run.clients("move", DRIFT) == set(run.trace.changed_at(DRIFT).tolist())
