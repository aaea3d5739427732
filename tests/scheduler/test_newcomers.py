"""Newcomers (FedDAG B.6): the trace's last ``newcomers`` clients are absent for its rounds, join after them, are placed
by the method (``Method.admit``), train their placed model ``newcomer_epochs`` local epochs and are tested."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from driftbench.errors import ConfigError
from driftbench.methods.catalog import load_method
from driftbench.record.schema import read_summary
from driftbench.reproduce.metrics import Context, metric_spec
from driftbench.traces.catalog import resolve
from tests.methods.conformance.behaviour import SMALL, replay, two_concepts_held
from tests.methods.fakes import ScriptedClients, context, queries

TWO_CONCEPTS = two_concepts_held(8, 8, newcomers=4)


def two_concepts(**sets):
    return resolve("label-swap", {k: str(v) for k, v in {**SMALL, **TWO_CONCEPTS, **sets}.items()}).trace


def test_incumbents_are_the_trace_without_its_last_clients():
    trace = two_concepts(drift_every=3, fraction=0.5)
    kept = trace.incumbents()
    assert (trace.newcomers, kept.num_clients, kept.rounds) == (4, 8, trace.rounds)
    for rnd in range(trace.rounds):
        whole, part = trace.segments_at(rnd), kept.segments_at(rnd)
        assert np.array_equal(trace.seg_group[whole[:8]], kept.seg_group[part])
        for c in range(8):
            assert np.array_equal(trace.train_indices(whole[c]), kept.train_indices(part[c]))
            assert np.array_equal(trace.test_indices(whole[c]), kept.test_indices(part[c]))
    moved = [e.clients for e in trace.events()]
    assert [e.clients.tolist() for e in kept.events()] == [m[m < 8].tolist() for m in moved if (m < 8).any()]
    assert two_concepts(newcomers=0).incumbents().num_clients == 12


def test_newcomers_must_leave_two_clients_to_train():
    with pytest.raises(ConfigError, match=r"newcomers must be in 0\.\.clients-2 \(10.*got 11"):
        two_concepts(newcomers=11)
    trace = two_concepts(newcomers=0)
    crowded = replace(trace, info={**trace.info, "params": {**trace.info["params"], "newcomers": 11}})  # a trace file's
    with pytest.raises(ConfigError, match=r"newcomers=11 leaves 1 of its 12 clients to train; allowed: 0\.\.10"):
        crowded.incumbents()


@pytest.fixture(scope="module")
def fedavg(tmp_path_factory):
    return replay("label-swap", "fedavg", tmp_path_factory.mktemp("fedavg"), TWO_CONCEPTS)


def test_newcomers_never_train_before_they_join_and_their_accuracy_is_recorded(fedavg, tmp_path):
    """Fails when the scheduler runs the whole trace (the newcomers would be sampled and trained from round 0)."""
    assert fedavg.partitions.shape[1] == 8
    assert max(int(p.max()) for p in fedavg.participants) < 8
    accuracy = fedavg.summary.newcomer_accuracy
    assert accuracy is not None and 0 < accuracy <= 1
    again = replay("label-swap", "fedavg", tmp_path, TWO_CONCEPTS)
    assert again.summary.newcomer_accuracy == accuracy
    without = replay("label-swap", "fedavg", tmp_path / "none", {**TWO_CONCEPTS, "newcomers": 0})
    assert without.summary.newcomer_accuracy is None
    assert metric_spec("newcomer_accuracy").read(fedavg.summary, Context()) == accuracy


def test_a_record_written_before_newcomers_reads_as_none(fedavg, tmp_path):
    data = json.loads((Path(fedavg.summary.run_dir) / "summary.json").read_text())
    del data["newcomer_accuracy"]
    (tmp_path / "summary.json").write_text(json.dumps(data))
    assert read_summary(tmp_path / "summary.json").newcomer_accuracy is None


def test_feddag_places_each_newcomer_with_its_concept(tmp_path):
    """Algorithm 4: a newcomer warms up, uploads, and one hierarchical pass at the chosen alpha puts it into a cluster
    of clients of its concept (the incumbents' 3 clusters hold one concept each, measured at seed 0). Fails when
    ``FedDAGSingle.admit`` places every newcomer in one cluster or skips the warm-up (zero updates)."""
    run = replay("label-swap", "feddag-single", tmp_path, TWO_CONCEPTS)
    truth = run.trace.groups_at(run.trace.rounds - 1)
    assert run.admitted is not None and len(set(truth[8:])) == 2  # both concepts among the newcomers
    for c in range(8, 12):
        members = truth[:8][run.admitted[:8] == run.admitted[c]]
        assert len(members) and (members == truth[c]).all(), (c, run.admitted.tolist(), truth.tolist())


def test_pacfl_places_a_newcomer_in_the_cluster_of_least_average_angle():
    """Fails when PACFL's ``admit`` takes the largest angle, or the default lowest-loss rule (the losses below point
    each newcomer at the other cluster)."""
    rng = np.random.default_rng(0)
    directions = np.linalg.qr(rng.normal(size=(16, 4)))[0].T
    pattern = [0, 0, 2, 2, 2, 0]  # clients 4 and 5 are newcomers
    inputs = [(rng.normal(size=(12, 1)) * directions[k] + 0.01 * rng.normal(size=(12, 16))).reshape(12, 1, 4, 4) for k in pattern]
    method = load_method("pacfl", {"p": "1"}).create()
    method.setup(context(4, participants=2))
    method.plan(0, queries(ScriptedClients(inputs=inputs)), rng)
    method.models = {"w": torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)}
    losses = np.ones((6, 2))
    losses[4, method.assignment[2]] = losses[5, method.assignment[0]] = 0.0
    start = method.admit(np.array([4, 5]), queries(ScriptedClients(inputs=inputs, losses=losses)), rng)
    expected = method.models["w"][torch.as_tensor(method.assignment[[2, 0]])]
    assert torch.equal(start["w"], expected)


def test_by_default_a_newcomer_starts_from_the_serving_model_of_lowest_loss():
    """IFCA's estimate: fails on argmax, or on choosing among every bank row (row 2 serves no client)."""
    method = load_method("ifca", {"k": "3"}).create()
    method.setup(context(4, participants=2))
    method.models = {"w": torch.arange(6, dtype=torch.float64).reshape(3, 2)}
    method.assignment = np.array([0, 1, 1, 0])
    losses = np.array([[0.0] * 3] * 4 + [[0.5, 0.2, 0.1], [0.1, 0.9, 0.0]])
    start = method.admit(np.array([4, 5]), queries(ScriptedClients(losses=losses)), np.random.default_rng(0))
    assert start["w"].tolist() == [[2.0, 3.0], [0.0, 1.0]]
