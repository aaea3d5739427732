"""CFL conformance (Sattler et al., IEEE TNNLS 2021): the stationarity criterion and the optimal bipartition.

The paper's Algorithm (CFL) splits a cluster c when the server sees, for its clients' updates dθ_i,

    || sum_i |D_i| / |D_c| dθ_i || < eps1   and   max_i ||dθ_i|| > eps2            (stationary, yet conflicted)

and then splits c into the bipartition c1, c2 = argmin over c1 ∪ c2 = c of max_{i in c1, j in c2} α_ij, α the
cosine similarity of the updates (the "optimal bipartition", which merging pairs in order of decreasing
similarity until two groups remain, i.e. single linkage, computes exactly).
"""

import itertools

import numpy as np
import pytest
import torch

from driftbench.methods.catalog import load_method
from driftbench.methods.cfl import bipartition, cross_similarity, similarities
from driftbench.methods.rounds import Plan, TrainResult
from tests.methods.fakes import ScriptedClients, context, events, queries

EPS1, EPS2 = 0.4, 1.0
A, B = np.arange(0, 3), np.arange(3, 6)  # two client populations


def cfl(n=6):
    method = load_method("cfl", {"warmup": "0", "eps1": str(EPS1), "eps2": str(EPS2)}).create()
    method.setup(context(n, participants=n))
    return method


def train(method, rnd, updates, weights=None):
    """Every client trains its cluster's model and comes back moved by its row of ``updates``."""
    clients = np.arange(len(updates))
    start = method.assignment.copy()
    trained = {"w": method.models["w"][torch.as_tensor(start)] + torch.as_tensor(updates, dtype=torch.float64)}
    weights = np.ones(len(updates)) if weights is None else np.asarray(weights, dtype=float)
    method.aggregate(rnd, TrainResult(Plan(clients, start), trained, weights, np.zeros(len(updates))))


def opposite(common):
    """Population A moves along +x, B along -x (norm 2 > eps2), both also along the shared ``common`` vector."""
    rows = np.zeros((6, 2))
    rows[A, 0], rows[B, 0] = 2.0, -2.0
    rows[A, 1] = rows[B, 1] = 0.05 * np.arange(3)  # a little noise within each population
    return rows + np.asarray(common)


def test_two_opposite_populations_split_exactly_when_the_criterion_first_holds():
    """Rounds 0-2: the shared component (norm 1.5, 0.8, 0.3) sets the mean update's norm; only at round 2 is it below
    eps1 = 0.4 (max norm 2.x > eps2 throughout), so round 2 flags the cluster; the split at round 3 separates A from B
    by the members' gradients (the negative update directions)."""
    method = cfl()
    for rnd, shared in enumerate([1.5, 0.8, 0.3]):
        train(method, rnd, opposite([0, shared]))
        assert method.to_split.tolist() == ([0] if rnd == 2 else []), rnd
    method.plan(3, queries(ScriptedClients(grads=-opposite([0, 0]))), np.random.default_rng(0))
    a = method.assignment
    assert len(set(a[A])) == 1 and len(set(a[B])) == 1 and a[A[0]] != a[B[0]] and method.num_models == 2
    assert events(method) == [("split", "0 1 2 3 4 5", 2.0)]


def test_the_recorded_norms_are_the_criterion_quantities():
    method = cfl()
    updates = opposite([0, 0.3])
    train(method, 0, updates)
    measured = {m["quantity"]: m["value"] for m in method.events.measures}
    assert measured["mean_update_norm_cluster0"] == pytest.approx(np.linalg.norm(updates.mean(0)))
    assert measured["max_update_norm_cluster0"] == pytest.approx(np.linalg.norm(updates, axis=1).max())


def test_one_population_never_splits():
    """Aligned updates: the mean is as large as the updates (not stationary), so eps1 fails at any norm; small aligned
    updates near a stationary point fail eps2."""
    method = cfl()
    aligned = np.tile([[2.0, 0.0]], (6, 1)) + 0.05 * np.arange(6)[:, None]
    train(method, 0, aligned)
    assert method.to_split.tolist() == []
    train(method, 1, 0.1 * aligned - 0.1)  # mean norm ~0.1 < eps1 but no update above eps2
    assert method.to_split.tolist() == []


def test_the_mean_is_weighted_by_samples():
    """|D| = 3, 1 for updates +2, -2: the weighted mean is (3 * 2 - 2) / 4 = 1 > eps1 (the plain mean, 0, would split)."""
    method = cfl(2)
    train(method, 0, np.array([[2.0, 0.0], [-2.0, 0.0]]), weights=[3, 1])
    assert method.to_split.tolist() == []
    train(method, 1, np.array([[2.0, 0.0], [-2.0, 0.0]]), weights=[1, 1])
    assert method.to_split.tolist() == [0]


def brute_force_bipartition(similarity):
    """The paper's optimum by enumeration: the smallest largest cross-group similarity over all bipartitions."""
    n = len(similarity)
    best = min(
        (similarity[np.ix_(np.array(g) == 0, np.array(g) == 1)].max(), g)
        for g in itertools.product([0, 1], repeat=n)
        if 0 < sum(g) < n and g[0] == 0
    )
    return best[0], np.array(best[1])


def test_bipartition_minimises_the_largest_cross_cluster_similarity():
    """A chain of updates at 0, 30, 60, 90 degrees and a pair at 137 and 143 degrees: the weakest link is 90 -> 137
    (47 degrees), so the optimal split is {0..90} | {137, 143} with alpha_cross = cos 47° = 0.682. Cutting the chain
    instead ({0, 30} | the rest, complete linkage's answer) leaves a cross similarity of cos 30° = 0.866."""
    angles = np.radians([0, 30, 60, 90, 137, 143])
    similarity = similarities(np.stack([np.cos(angles), np.sin(angles)], axis=1))
    halves = bipartition(similarity)
    best, optimum = brute_force_bipartition(similarity)
    assert (halves == optimum).all() or (halves == 1 - optimum).all()
    assert cross_similarity(similarity, halves) == pytest.approx(best) == pytest.approx(np.cos(np.radians(47)))
    assert halves[:4].tolist() == [halves[0]] * 4 and halves[4] == halves[5] != halves[0]
