"""FIELDING's threshold schedule, order-independent moves, re-clustering with model averaging, its overhead and event log."""

import numpy as np
import pytest
import torch

from driftbench.errors import ConfigError
from driftbench.methods.catalog import load_method
from driftbench.methods.fielding import next_delta
from driftbench.methods.queries import Overhead
from tests.methods.fakes import ScriptedClients, context, events, id_text, queries

# two tight groups of label distributions over 3 classes
GROUPS = np.array([[9, 1, 0], [8, 2, 0], [9, 0, 1], [0, 1, 9], [1, 0, 9], [0, 2, 8]], dtype=float)
EVERYONE = id_text(range(len(GROUPS)))


def fielding(**sets):
    method = load_method("fielding", {k: str(v) for k, v in sets.items()}).create()
    method.setup(context(len(GROUPS), participants=4))
    return method


def test_delta_follows_the_scripted_series_of_drift_rounds():
    delta, before, seen = 0.1, False, []
    for reclustered in [True, True, True, False, False, True, False]:
        delta, before = next_delta(delta, reclustered, before, c=0.1, m=2.0), reclustered
        seen.append(round(delta, 10))
    # first re-clustering has no predecessor: max(c, 0.1 - 0.1); then x2, x2; then -0.1 steps down to c
    assert seen == [0.1, 0.2, 0.4, 0.3, 0.2, 0.1, 0.1]


def test_initial_clusters_and_label_upload():
    method, overhead = fielding(), Overhead()
    plan = method.plan(0, queries(ScriptedClients(GROUPS), overhead=overhead), np.random.default_rng(0))
    a = method.assignment
    assert len(set(a[:3])) == 1 and len(set(a[3:])) == 1 and a[0] != a[3]
    assert method.num_models == 2 and method.delta == 0.1
    assert events(method) == [("recluster_global", EVERYONE, 2.0)]
    assert (overhead.upload_bytes, overhead.download_bytes, overhead.client_extra_passes) == (6 * 3 * 4, 0, 0)
    assert sorted(np.bincount(a[plan.participants]).tolist()) == [2, 2]  # M/K = 4/2 per cluster


def test_moves_use_frozen_centers_so_order_does_not_matter():
    drifted = GROUPS.copy()
    drifted[0] = [1, 0, 9]  # clearly the second group
    drifted[1] = [6, 0, 4]  # between the groups, nearer the first group's center (L1 0.73 vs 0.93)
    results = []
    for order in ([0, 1], [1, 0]):
        method = fielding(c=10.0)  # a huge Delta: moves only, never re-clusters
        method.plan(0, queries(ScriptedClients(GROUPS)), np.random.default_rng(0))
        first, second = method.assignment[2], method.assignment[3]
        overhead = Overhead()
        method.plan(1, queries(ScriptedClients(drifted), changed=order, overhead=overhead), np.random.default_rng(1))
        assert overhead.upload_bytes == 2 * 3 * 4
        assert method.assignment[0] == second and method.assignment[1] == first
        assert events(method)[1:] == [("move", "0", None)]  # client 1 stays; Delta = c stays; no re-clustering
        results.append(method.assignment.tolist())
    assert results[0] == results[1]


def test_reclustering_averages_members_previous_models_after_their_moves():
    method = fielding()
    method.plan(0, queries(ScriptedClients(GROUPS)), np.random.default_rng(0))
    a, b = method.assignment[0], method.assignment[3]
    values = np.zeros(2)
    values[[a, b]] = [1.0, 3.0]
    method.models = {"w": torch.tensor(values, dtype=torch.float64)[:, None].repeat(1, 2)}
    drifted = GROUPS.copy()
    drifted[0] = [0, 1, 9]  # moves to the second group (model 3.0)
    drifted[3] = [5, 5, 0]  # moves to the first group (model 1.0), 0.6 away from client 1 > Delta = 0.1
    assert method.handle_drift(queries(ScriptedClients(drifted)), np.array([0, 3]))
    moved_model = np.array([3.0, 1.0, 1.0, 1.0, 3.0, 3.0])
    new = method.assignment
    for k in np.unique(new):
        assert method.models["w"][k, 0].item() == pytest.approx(moved_model[new == k].mean())
    assert method.num_models == len(np.unique(new))
    assert method.delta == 0.1 and method.reclustered_before
    assert events(method)[1:] == [("move", "0 3", None), ("recluster_global", EVERYONE, float(method.num_models))]


def test_two_consecutive_reclusterings_double_delta_and_a_quiet_round_lowers_it():
    method = fielding()
    method.plan(0, queries(ScriptedClients(GROUPS)), np.random.default_rng(0))
    far = GROUPS.copy()
    far[[0, 3]] = [[5, 5, 0], [0, 5, 5]]
    assert method.handle_drift(queries(ScriptedClients(far)), np.array([0, 3]))
    back = GROUPS.copy()
    back[[0, 3]] = [[0, 5, 5], [5, 5, 0]]
    assert method.handle_drift(queries(ScriptedClients(back)), np.array([0, 3]))
    assert method.delta == pytest.approx(0.2)
    kinds = [kind for kind, _, _ in events(method)]
    assert kinds.count("recluster_global") == 3 and kinds[-1] == "threshold"  # Delta = c at the first: no change
    assert events(method)[-1] == ("threshold", "", pytest.approx(0.2))
    method = fielding()
    method.plan(0, queries(ScriptedClients(GROUPS)), np.random.default_rng(0))
    method.delta, method.reclustered_before = 0.4, True  # the groups' diameter is 0.4: not wider than Delta
    assert not method.handle_drift(queries(ScriptedClients(GROUPS)), np.array([0]))
    assert method.delta == pytest.approx(0.3)
    assert events(method)[1:] == [("threshold", "", pytest.approx(0.3))]  # client 0 reported no change: no move


def test_center_shift_trigger_logs_no_threshold_events():
    method = fielding(trigger="center_shift")
    method.plan(0, queries(ScriptedClients(GROUPS)), np.random.default_rng(0))
    method.delta = 0.4
    method.handle_drift(queries(ScriptedClients(GROUPS)), np.array([0]))
    assert method.delta == pytest.approx(0.3)  # still updated, but not the trigger's threshold
    assert "threshold" not in [kind for kind, _, _ in events(method)]


def test_bad_parameters_name_the_field():
    with pytest.raises(ConfigError, match="distance 'js' does not suit representation 'gradient': use l2"):
        load_method("fielding", {"distance": "js", "representation": "gradient"})
    with pytest.raises(ConfigError, match="trigger must be one of diameter, center_shift, every_drift, got 'sometimes'"):
        load_method("fielding", {"trigger": "sometimes"})
    with pytest.raises(ConfigError, match="scope must be one of drifted, participants, got 'sampled'"):
        load_method("fielding", {"scope": "sampled"})


def test_figure_2_variants_leave_fieldings_recorded_config_as_it_was():
    """``scope`` entered after FIELDING runs were recorded: at its default it stays out of a run's config (and so
    out of its config hash); the variants record what they change. Fails when ``scope`` loses RECORDED_WHEN_SET."""
    recorded = load_method("fielding").as_config()["params"]
    assert list(recorded) == [
        "mu",
        "representation",
        "distance",
        "trigger",
        "c",
        "m",
        "k_min",
        "k_max",
        "restarts",
        "silhouette_sample",
    ]
    assert load_method("fielding", {"scope": "drifted"}).as_config()["params"] == recorded
    assert load_method("fielding-participants").as_config()["params"] == {**recorded, "scope": "participants"}
    assert load_method("fielding-every-drift").as_config()["params"] == {**recorded, "trigger": "every_drift"}


def test_unit_vector_representations_use_l2_on_deltas_scale():
    """Regression: fielding-gradient measured L1 between unit-norm gradients (up to ~sqrt(2P), 187 on label-swap)
    against Delta = c = 0.1 set for distances of at most 2, so every drift event re-clustered; now L1 there is refused."""
    with pytest.raises(ConfigError, match="distance 'l1' does not suit representation 'gradient': use l2"):
        load_method("fielding", {"representation": "gradient"})
    assert load_method("fielding-gradient").params.distance == "l2"
    method = load_method("fielding-gradient").create()
    method.setup(context(len(GROUPS), participants=4))
    grads = np.random.default_rng(0).normal(size=(len(GROUPS), 500))
    method.plan(0, queries(ScriptedClients(grads=grads)), np.random.default_rng(0))
    drifted = grads.copy()
    drifted[0] = -grads[0]
    method.handle_drift(queries(ScriptedClients(grads=drifted)), np.array([0]))
    measured = {row["quantity"]: row["value"] for row in method.events.measures}
    assert 0 < measured["fielding_max_diameter"] <= 2  # L2 between unit vectors
