"""Auxo over rounds (Liu et al., SoCC 2023, sections 4-5, as FIELDING section 3 runs it): every round the
participants are re-clustered by their model updates into cohorts, so cohorts follow the clients' data groups,
and a client whose data drifted joins the matching cohort the next time it takes part.

Replayed: ``label-shift`` on 8x8 digits with rho = 0.5 (two groups of 5 labels), 8 clients that all take part in
every round, 8 rounds; half the clients move to the other group at round 4. Auxo with k = 2 cohorts.
"""

import pytest

from tests.methods.conformance.behaviour import replay

DRIFT, ROUNDS = 4, 8
SETS = {"source": "digits", "rho": 0.5, "clients": 8, "rounds": ROUNDS, "drift_round": DRIFT, "train.participants": 8}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("label-shift", "auxo", tmp_path_factory.mktemp("auxo"), SETS, {"k": 2})


def test_cohorts_follow_the_label_groups_and_regroup_after_the_drift(run):
    """From the first regrouping (after round 0's updates) the cohorts are the label groups (ARI 1), except at the
    drift round itself: the round after it, participants are regrouped (``move`` events) and the cohorts match the
    groups again (measured at seed 0: ARI 1 at rounds 1-3 and 5-7, -0.17 at round 4).

    Fails when participants are never regrouped (``Auxo.regroup`` a no-op): everyone stays in cohort 0.
    """
    ari = run.rounds["ari"]
    assert (ari.drop([0, DRIFT]) == 1.0).all(), ari.round(2).tolist()
    assert run.clients("move", DRIFT + 1)
