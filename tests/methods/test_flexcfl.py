"""FlexCFL: groups from decomposed update directions; drifted clients migrate to the closest group direction."""

import numpy as np

from driftbench.methods.catalog import load_method
from driftbench.methods.flexcfl import decomposed_groups
from driftbench.methods.queries import Overhead
from tests.methods.fakes import ScriptedClients, context, events, queries

PLANTED = np.array([[1, 0.1, 0, 0], [1, -0.1, 0, 0], [0.9, 0, 0.1, 0], [0, 0, 1, 0.1], [0, 0.1, 1, 0], [0, 0, 0.9, -0.1]])


def test_decomposed_groups_recover_planted_directions():
    groups = decomposed_groups(PLANTED, 2, seed=0)
    assert len(set(groups[:3])) == 1 and len(set(groups[3:])) == 1 and groups[0] != groups[3]


def test_drifted_client_migrates_to_the_closest_group():
    method = load_method("flexcfl", {"k": "2"}).create()
    method.setup(context(6, participants=2))
    overhead = Overhead()
    method.plan(0, queries(ScriptedClients(grads=-PLANTED), overhead=overhead, model_bytes=100), np.random.default_rng(0))
    assert (overhead.download_bytes, overhead.upload_bytes, overhead.client_extra_passes) == (600, 96, 6)
    a = method.assignment.copy()
    moved = -PLANTED.copy()
    moved[0] = -PLANTED[4]
    method.plan(1, queries(ScriptedClients(grads=moved), changed=[0]), np.random.default_rng(1))
    assert method.assignment[0] == a[4] and method.assignment[1:].tolist() == a[1:].tolist()
    assert events(method) == [("recluster_global", "0 1 2 3 4 5", 2.0), ("move", "0", None)]


def test_a_client_migrating_into_a_later_group_is_queried_once():
    method = load_method("flexcfl", {"k": "2"}).create()
    method.setup(context(6, participants=2))
    method.plan(0, queries(ScriptedClients(grads=-PLANTED)), np.random.default_rng(0))
    low, high = (0, 4) if method.assignment[0] < method.assignment[4] else (4, 0)
    moved = -PLANTED.copy()
    moved[low] = -PLANTED[high]
    overhead = Overhead()
    method.plan(1, queries(ScriptedClients(grads=moved), changed=[low, high], overhead=overhead), np.random.default_rng(1))
    # two drifted clients, one gradient each: the one that moved into the group handled second is not asked again
    assert (overhead.upload_bytes, overhead.client_extra_passes) == (32, 2)
    assert method.assignment[low] == method.assignment[high]
