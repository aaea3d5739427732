"""FedDrift over rounds (Jothimurugesan et al., AISTATS 2023, section 4, Algorithm 1): a client whose loss on its
best model jumps by more than delta is isolated in a new cluster (a new model for a new concept), and clusters
whose loss distance is below delta are merged by hierarchical clustering, so the clients of one new concept end
up sharing one model.

Replayed: ``label-swap`` on 8x8 digits, two concepts (identity and reversed labels), 8 clients that all take part
in every round, 9 rounds; 2 clients switch to the reversed labels at round 6. Training: 60 samples, 10 local
steps at lr 0.1 (the shared model is confident enough by round 6 for the swap to raise the loss beyond delta).
"""

import pytest

from tests.methods.conformance.behaviour import label_swap_of_two_concepts, replay

DRIFT, ROUNDS = 6, 9
SETS = label_swap_of_two_concepts(DRIFT, ROUNDS)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("label-swap", "feddrift", tmp_path_factory.mktemp("feddrift"), SETS)


def test_a_new_concept_opens_new_models_that_then_merge_into_one(run):
    """At the drift round exactly the drifted clients are isolated (``create``; measured loss rise 2.34 > delta =
    0.5 at seed 0), none before; their clusters, one concept, merge the round after (``merge``), leaving two
    models that match the two concepts (ARI 1 from then on).

    Fails when clusters never merge (``FedDrift.merge`` keeping every cluster apart): three clusters remain.
    """
    drifted = set(run.trace.changed_at(DRIFT).tolist())
    assert run.kind("create")["round"].tolist() == [DRIFT] and run.clients("create", DRIFT) == drifted
    assert run.clients("merge", DRIFT + 1) == drifted
    after = run.rounds.loc[DRIFT + 1 :]
    assert (after["n_clusters"] == 2).all() and (after["ari"] == 1.0).all()
