"""Server time on the simulated clock comes from counted work, so a run is a function of its inputs."""

import csv
import io
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from sklearn.cluster import KMeans

from driftbench.engine.clock import SERVER_FLOPS_PER_SECOND, client_profiles
from driftbench.methods import server_work as work
from driftbench.methods.catalog import IMPLEMENTATIONS, MethodSpec
from driftbench.methods.clustering import kmeans
from driftbench.methods.queries import RoundTraffic
from driftbench.methods.rounds import Plan
from driftbench.record.files import WALL_CLOCK_FIELDS
from driftbench.scheduler import RunSpec, run
from driftbench.scheduler.clock import RunClock
from driftbench.traces.catalog import apply_sets, generate, load_spec

WALL = ("wall_seconds", "server_wall_seconds")  # the only fields measured on the wall clock
TINY = {
    "clients": "8",
    "rounds": "6",
    "drift_every": "3",
    "train_samples": "10",
    "test_samples": "5",
    "train.participants": "4",
    "train.local_steps": "2",
}
PARTICIPANTS, ROUNDS = 4, 6
MLP_PARAMETERS = 64 * 200 + 200 + 200 * 200 + 200 + 200 * 10 + 10  # the MLP on 8x8 digits
CLUSTER_WITHIN_TINY = {
    "cflgt": {"pretrain_rounds": 2, "recluster_every": 2},
    "cfl": {"warmup": 1},
    "flhc": {"warmup": 2},
}  # else they never cluster in 6 rounds


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """``records(implementation)``: the run folders of two identical tiny runs of the method (made on first use)."""
    spec = apply_sets(load_spec("label-swap"), TINY)
    trace, pool = generate(spec)
    made: dict[str, list[Path]] = {}

    def folders(implementation: str) -> list[Path]:
        if implementation not in made:
            params = replace(IMPLEMENTATIONS[implementation].Params(), **CLUSTER_WITHIN_TINY.get(implementation, {}))
            method = MethodSpec(implementation, implementation, "", "", params)
            root = tmp_path_factory.mktemp(implementation)
            for out in ("a", "b"):
                run(RunSpec(trace, pool, spec.train, method, seed=0, device="cpu", out=root / out, quiet=True))
            made[implementation] = [root / out / "label-swap" / implementation / "seed0" for out in ("a", "b")]
        return made[implementation]

    return folders


def without_wall_time(value):
    """``value`` without wall-clock fields (at any depth) and the run folder."""
    if isinstance(value, dict):
        return {k: without_wall_time(v) for k, v in value.items() if k not in (*WALL, "run_dir")}
    return value


def summary_text(folder: Path) -> str:
    return json.dumps(without_wall_time(json.loads((folder / "summary.json").read_text())))


def rounds_text(folder: Path) -> str:
    """rounds.csv's bytes with the wall-clock columns cut out."""
    rows = list(csv.reader(io.StringIO((folder / "rounds.csv").read_text())))
    keep = [i for i, name in enumerate(rows[0]) if name not in WALL]
    assert len(keep) == len(rows[0]) - len(WALL)
    return "\n".join(",".join(row[i] for i in keep) for row in rows)


def test_only_wall_clock_measurements_are_marked_as_varying():
    assert sorted(WALL_CLOCK_FIELDS) == sorted(WALL)


@pytest.mark.parametrize("implementation", sorted(IMPLEMENTATIONS))
def test_two_runs_of_every_method_give_the_same_record(implementation, records):
    a, b = records(implementation)
    assert rounds_text(a) == rounds_text(b)
    assert summary_text(a) == summary_text(b)


def test_fedavg_is_charged_its_aggregation_and_clustering_methods_more(records):
    def summary(name):
        return json.loads((records(name)[0] / "summary.json").read_text())

    per_round = 2 * PARTICIPANTS * MLP_PARAMETERS  # a multiply-add per parameter of each participant's model
    fedavg = summary("fedavg")
    assert fedavg["overhead"]["cluster_seconds"] == pytest.approx(ROUNDS * per_round / SERVER_FLOPS_PER_SECOND, rel=1e-12)
    for clustering in ("static", "cflgt"):  # same uniform participants as FedAvg, plus clustering
        assert summary(clustering)["overhead"]["cluster_seconds"] > fedavg["overhead"]["cluster_seconds"] * (1 + 1e-6)


def test_the_clock_adds_counted_server_time_and_keeps_the_measured_one_apart():
    clock = RunClock(client_profiles(3, 0), forward_flops=1e6, model_bytes=100)
    nobody = Plan(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    clock.advance(nobody, np.zeros(0), np.full(3, 10), RoundTraffic.empty(3), 3 * SERVER_FLOPS_PER_SECOND, 123.0)
    assert (clock.sim_seconds, clock.server_seconds, clock.server_wall_seconds) == (3.0, 3.0, 123.0)


def test_the_clock_sums_clients_query_passes_apart_from_training_and_server_time():
    profiles = client_profiles(3, 0)
    clock = RunClock(profiles, forward_flops=1e6, model_bytes=0)
    traffic = RoundTraffic.empty(3)
    traffic.work[[0, 2]] = [2 / 3, 1 / 3]  # client 0: two forward passes over its window, client 2: one
    trains = Plan(np.array([1]), np.array([0]))
    clock.advance(trains, np.array([50]), np.full(3, 10), traffic, 0, 0.0)
    # 3 forward-pass units per training sample; 1 MFLOP per forward pass; ms per MFLOP from the profile
    expected = sum(3 * work * 10 * 1.0 * profiles.ms_per_mflop[c] / 1e3 for c, work in ((0, 2 / 3), (2, 1 / 3)))
    assert clock.client_query_seconds == pytest.approx(expected, rel=1e-12)
    assert clock.server_seconds == 0.0


def test_ifcas_clients_loss_evaluations_are_its_clustering_cost_and_fedavg_has_none(records):
    def overhead(name):
        return json.loads((records(name)[0] / "summary.json").read_text())["overhead"]

    assert overhead("fedavg")["client_query_seconds"] == 0.0
    ifca = overhead("ifca")
    assert ifca["client_query_seconds"] > ifca["cluster_seconds"] > 0


def test_server_rate_is_fieldings_kmeans_measurement():
    # FIELDING 003 appendix C: one thread, n = 1e5, d = 1e4, k = 10, 477.8 s; 10 restarts of 30 Lloyd iterations
    assert work.kmeans(100_000, 10, 10_000, iterations=30, restarts=10) / 477.8 == pytest.approx(
        SERVER_FLOPS_PER_SECOND, rel=0.01
    )


def test_cost_functions_on_known_sizes():
    assert work.matmul(2, 3, 4) == 48
    assert work.distances(10, 20, 5) == 3 * 1000 and work.distances(10, 20, 5, "js") == 12 * 1000
    assert work.cosine_similarity(10, 20, 5) == 3 * 50 + 3 * 100 + 2000
    # seeding: 2 + floor(ln 3) = 3 candidates per center, 9 in all; each Lloyd iteration 2nkd + nd
    assert work.kmeans(100, 3, 4, iterations=5, restarts=2) == 2 * (2 * 100 * 4 * 9 + 5 * (2 * 100 * 4 * 3 + 400))
    assert work.silhouette(10, 4) == 3 * 100 * 4 + 100 and work.silhouette(10) == 100
    assert work.linkage(10) == 400
    assert work.dbscan(10) == 200
    assert work.affinity_propagation(10, 7) == 14 * 7 * 100
    assert work.svd(10, 4) == 4 * 10 * 4 * 4 == work.svd(4, 10)
    assert work.hungarian(3, 5) == 45
    assert work.sort(2, 8) == 2 * 8 * 3
    assert work.aggregation(4, 1000) == 8000
    assert work.entropy_minimisation(5, 10) == 30 * 5 * 100


def test_charges_add_up_only_inside_a_counter_and_not_while_clients_answer():
    work.charge(10**9)  # no counter: nothing to count into
    with work.counting() as outer:
        work.charge(5)
        with work.counting() as inner:
            work.charge(7)
        with work.paused():
            work.charge(11)
        work.charge(1)
    assert (outer.flops, inner.flops) == (6, 7)


def test_kmeans_is_charged_from_the_iterations_scikit_learn_ran():
    points = np.random.default_rng(0).normal(size=(60, 3)) + np.repeat(np.eye(3) * 5, 20, axis=0)
    fitted = KMeans(n_clusters=3, n_init=4, random_state=0).fit(points)
    with work.counting() as counter:
        labels = kmeans(points, 3, seed=0, restarts=4)
    assert np.array_equal(labels, fitted.labels_)
    assert counter.flops == work.kmeans(60, 3, 3, fitted.n_iter_, 4) > 0
