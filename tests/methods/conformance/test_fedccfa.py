"""FedCCFA conformance (Chen et al., NeurIPS 2024; the authors' code, ``entities/FedCCFA.py``): small worked cases.

MADD (``FedCCFAServer.madd``: for a pair, the mean over the other classifiers z of the difference of their cosines
with z), per-class DBSCAN on it, the server's round (extractor averaged over every participant by data size;
each class's classifier rows and prototypes averaged within that class's cluster only; a participant alone keeps
its own), the contrastive alignment term and the client's round as a plan (balanced branch, classifier, extractor).
"""

import itertools
from functools import partial

import numpy as np
import pytest
import torch

from driftbench.data.pool import Pool
from driftbench.engine.batched import BatchedTrainer
from driftbench.engine.device_data import DevicePool, LocalWork, batch_plan
from driftbench.engine.features import FeaturePenalty, classifier_name
from driftbench.engine.models import build_model
from driftbench.engine.reference import train_sequential
from driftbench.methods.catalog import load_method
from driftbench.methods.fedccfa import contrastive_alignment, label_clusters, madd, prototypes
from driftbench.methods.rounds import RunContext, TrainResult
from driftbench.train_config import TrainConfig
from tests.methods.fakes import ScriptedClients, queries

SQRT_HALF = np.sqrt(0.5)


def test_madd_is_the_mean_cosine_difference_over_the_other_classifiers():
    """v0 = v1 = e1, v2 = e2, v3 = (e1 + e2) / sqrt 2. Cosines: c01 = 1, c02 = c12 = 0, c03 = c13 = c23 = 1/sqrt 2.
    MADD(0, 1) = (|c02 - c12| + |c03 - c13|) / 2 = 0; MADD(0, 2) = (|c01 - c21| + |c03 - c23|) / 2 = (1 + 0) / 2;
    MADD(0, 3) = (|c01 - c31| + |c02 - c32|) / 2 = ((1 - 1/sqrt 2) + 1/sqrt 2) / 2 = 1/2. On random rows the vectorised
    form equals the definition's double loop.

    Fails when MADD divides by n instead of n - 2 (the pairs' own terms counted as others): MADD(0, 2) = 1/4.
    """
    v = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [SQRT_HALF, SQRT_HALF]])
    d = madd(v)
    assert d[0, 1] == pytest.approx(0.0) and d[0, 2] == pytest.approx(0.5) and d[0, 3] == pytest.approx(0.5)
    assert d == pytest.approx(d.T) and np.diag(d) == pytest.approx(0.0)
    rows = np.random.default_rng(0).normal(size=(6, 4))
    cos = rows @ rows.T / np.outer(np.linalg.norm(rows, axis=1), np.linalg.norm(rows, axis=1))
    for i, j in itertools.combinations(range(6), 2):
        others = [z for z in range(6) if z not in (i, j)]
        assert madd(rows)[i, j] == pytest.approx(np.mean([abs(cos[i, z] - cos[j, z]) for z in others]))


def test_one_class_rows_of_two_concepts_cluster_apart():
    """Class rows (weight, bias) of five clients: three along (1, 0, 0) at different scales, two along (0, 1, 0).
    Within a side every cosine profile is the same (MADD 0); across, every other client differs by 1 (MADD 1):
    DBSCAN at eps 0.1 finds the two sides. With fewer than three rows MADD is undefined: each stays alone."""
    rows = np.array([[1.0, 0, 0], [2.0, 0, 0], [0.5, 0, 0], [0, 1.0, 0], [0, 3.0, 0]])
    clusters = label_clusters(rows, eps=0.1)
    assert len(set(clusters[:3])) == 1 and len(set(clusters[3:])) == 1 and clusters[0] != clusters[3]
    assert label_clusters(rows[:2], eps=0.1).tolist() == [0, 1]


# Six clients, two classes, features of width 2; the model is "body" (extractor) + "head" (classifier).
BALANCED_ROWS = {  # class -> each client's balanced (weight row, bias)
    0: [[1.0, 1.0, 0.0]] * 6,  # one concept: every cosine is 1
    1: [[1.0, 0, 0], [2.0, 0, 0], [1.5, 0, 0], [0, 1.0, 0], [0, 2.0, 0], [0, 0, 1.0]],  # {0, 1, 2}, {3, 4}, {5}
}
SIZES = np.array([10, 10, 20, 20, 30, 10])


def server_round():
    """FedCCFA's plan and aggregation for six clients that all take part, with hand-made training results."""
    method = load_method("fedccfa").create()
    init = {
        "body.weight": torch.zeros(2, 3, dtype=torch.float64),
        "head.weight": torch.zeros(2, 2, dtype=torch.float64),
        "head.bias": torch.zeros(2, dtype=torch.float64),
    }
    method.setup(RunContext(6, 2, init, TrainConfig(participants=6), seed=0, classifier="head"))
    hist = np.stack([[s // 2, s - s // 2] for s in SIZES]).astype(float)
    hist[4] = [SIZES[4], 0]  # client 4 holds no sample of class 1
    plan = method.plan(0, queries(ScriptedClients(hist=hist)), np.random.default_rng(0))
    balanced = torch.tensor(np.stack([BALANCED_ROWS[0], BALANCED_ROWS[1]], axis=1))  # clients x classes x 3
    rng = np.random.default_rng(1)
    trained = {
        "body.weight": torch.tensor(rng.normal(size=(6, 2, 3))),
        "head.weight": torch.tensor(rng.normal(size=(6, 2, 2))),
        "head.bias": torch.tensor(rng.normal(size=(6, 2))),
    }
    protos = rng.normal(size=(6, 2, 2))
    counts = hist.copy()
    reports = np.concatenate([protos.reshape(6, -1), counts], axis=1)
    phase_params = {"body.weight": trained["body.weight"], "head.weight": balanced[..., :2], "head.bias": balanced[..., 2]}
    result = TrainResult(plan, trained, np.ones(6), np.zeros(6), phases=(phase_params, trained, trained), reports=reports)
    method.aggregate(0, result)
    return method, trained, protos


def test_server_averages_the_extractor_over_all_and_classifier_rows_and_anchors_within_each_class_cluster():
    """Extractor: the data-size-weighted mean of all six. Class 0 (one cluster): every client gets the mean of the six
    trained class-0 rows and prototypes. Class 1: clients 0-2 get their mean, 3-4 theirs (the anchor from client 3
    alone: client 4 holds no class 1), client 5, alone, keeps its own row and prototype. Clients 0-2 then share one
    classifier, 3-4 another, 5 its own: three bank models, the global extractor in each.

    Fails when classifier rows are averaged over all participants instead of within the class's cluster
    (``cluster_means`` ignoring ``clusters``): class 1 rows of the two concepts become one.
    """
    method, trained, protos = server_round()
    weights = torch.tensor(SIZES / SIZES.sum())
    extractor = torch.einsum("k,kij->ij", weights, trained["body.weight"])
    torch.testing.assert_close(method.extractor["body.weight"], extractor)
    rows = torch.cat([trained["head.weight"], trained["head.bias"].unsqueeze(2)], dim=2)
    heads = torch.cat([method.heads["head.weight"], method.heads["head.bias"].unsqueeze(2)], dim=2)
    for client in range(6):
        torch.testing.assert_close(heads[client, 0], rows[:, 0].mean(0))
        torch.testing.assert_close(method.anchors[client, 0], torch.tensor(protos[:, 0].mean(0)))
    for group in ([0, 1, 2], [3, 4], [5]):
        for client in group:
            torch.testing.assert_close(heads[client, 1], rows[group, 1].mean(0))
    torch.testing.assert_close(method.anchors[0, 1], torch.tensor(protos[[0, 1, 2], 1].mean(0)))
    torch.testing.assert_close(method.anchors[4, 1], torch.tensor(protos[3, 1]))
    torch.testing.assert_close(method.anchors[5, 1], torch.tensor(protos[5, 1]))
    assert method.anchored.all()
    a = method.assignment
    assert a[0] == a[1] == a[2] != a[3] == a[4] != a[5] != a[0] and method.num_models == 3
    for client in range(6):
        model = {n: p[a[client]] for n, p in method.models.items()}
        torch.testing.assert_close(model["body.weight"], extractor)
        torch.testing.assert_close(model["head.bias"], heads[client, :, 2])


def test_the_clients_apart_from_a_class_largest_cluster_are_logged_as_splits():
    """Class 1's largest cluster is {0, 1, 2}: clients 3, 4 and 5 split on class 1 (event value 1), nobody on class 0."""
    method, _, _ = server_round()
    assert [(row["kind"], row["clients"], row["value"]) for row in method.events.rows] == [("split", "3 4 5", 1.0)]


def test_alignment_is_cross_entropy_of_cosines_to_the_anchored_classes():
    """T = 0.5; anchors a0 = e1, a1 = e2, class 2 without an anchor. A feature e1 of class 0 has cosines (1, 0) with
    (a0, a1): CE = log(1 + e^(-2)); a feature e2 of class 1 the same; a sample of class 2 has no anchor and does not
    count. With class 2's anchor (e1 + e2) / sqrt 2 in play, sample 0's softmax would include e^(2 / sqrt 2).
    With no anchor at all the term is 0 and its gradient finite."""
    features = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([0, 1, 2])
    anchors = torch.tensor([[1.0, 0.0], [0.0, 1.0], [SQRT_HALF, SQRT_HALF]], dtype=torch.float64)
    term = contrastive_alignment(features, labels, anchors, torch.tensor([True, True, False]), temperature=0.5)
    assert term.item() == pytest.approx(np.log1p(np.exp(-2.0)))
    none = contrastive_alignment(features, labels, anchors, torch.zeros(3, dtype=torch.bool), temperature=0.5)
    (gradient,) = torch.autograd.grad(none, features)
    assert none.item() == 0.0 and torch.isfinite(gradient).all()


@pytest.mark.parametrize("model_name,chunk", [("mlp", None), ("lenet5", 1)])
def test_alignment_trains_in_the_engine_as_in_the_plain_loop(model_name, chunk):
    """The alignment as the engine's feature penalty (per-client anchors and anchored classes, vmapped for the MLP, the
    one-client working copy for LeNet-5) trains exactly like the plain per-client loop, and it changes the result."""
    rng = np.random.default_rng(0)
    pool = Pool("t", rng.random((120, 1, 8, 8), dtype=np.float32), rng.integers(0, 4, 120), 4)
    model = build_model(model_name, pool.input_shape, 4, seed=0, dtype=torch.float64)
    data = DevicePool(pool, torch.device("cpu"), torch.float64)
    cfg = TrainConfig(model=model_name, lr=0.1, momentum=0.9, batch_size=8, local_steps=3)
    width = model.get_submodule(classifier_name(model)).in_features
    anchors = torch.tensor(rng.normal(size=(2, 4, width)))
    anchored = torch.tensor([[True, True, False, True], [True, False, True, True]])
    penalty = FeaturePenalty(
        partial(contrastive_alignment, temperature=0.1), torch.tensor([0.1, 0.05], dtype=torch.float64), (anchors, anchored)
    )
    work = LocalWork(
        np.arange(2),
        batch_plan(rng, [np.arange(60), np.arange(60, 120)], 3, 8),
        np.array([3, 3]),
        np.tile(np.arange(4), (2, 1)),
        np.zeros(2, dtype=np.int64),
    )
    start = {n: p.detach().unsqueeze(0).repeat(2, *[1] * p.dim()) for n, p in model.named_parameters()}
    trainer = BatchedTrainer(model, data, chunk)
    engine, plain = (
        trainer.train(start, work, cfg, penalty=penalty),
        train_sequential(model, data, start, work, cfg, penalty=penalty),
    )
    unaligned = trainer.train(start, work, cfg)
    for name in start:
        torch.testing.assert_close(engine.params[name], plain.params[name], rtol=0, atol=1e-10)
    assert not torch.allclose(engine.params[next(iter(start))], unaligned.params[next(iter(start))])


def test_a_report_holds_each_class_mean_feature_and_count():
    """Features of classes 0, 0, 2: class 0's mean, zeros for class 1 (absent), class 2's feature; counts (2, 0, 1)."""
    features = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    report = prototypes(features, torch.zeros(3, 3), torch.tensor([0, 0, 2]), num_classes=3)
    assert report.tolist() == [2.0, 3.0, 0.0, 0.0, 5.0, 6.0, 2.0, 0.0, 1.0]


def test_a_round_plans_a_balanced_branch_then_classifier_then_extractor():
    """The balanced branch trains the classifier alone from the parked row (global extractor, initial classifier)
    for 5 epochs of at most 5 samples per class at clf_lr / rep_lr = 10 x the lr; then the classifier alone for
    10 / 5 = 2 steps at 10 x; then the extractor alone for the trace's steps. Alignment starts at round 20, weighted
    entropy / 20 (natural log), for clients with anchors only."""
    method = load_method("fedccfa").create()
    init = {"body.weight": torch.ones(2, 3), "head.weight": torch.ones(2, 2), "head.bias": torch.ones(2)}
    method.setup(RunContext(3, 2, init, TrainConfig(participants=3), seed=0, classifier="head"))
    method.extractor["body.weight"] += 1.0
    hist = np.array([[5.0, 5.0], [6.0, 4.0], [2.0, 8.0]])
    plan = method.plan(0, queries(ScriptedClients(hist=hist)), np.random.default_rng(0))
    balanced, classifier, extractor = plan.phases
    parked = {n: p[balanced.start[0]] for n, p in method.models.items()}
    assert torch.equal(parked["body.weight"], torch.full((2, 3), 2.0)) and torch.equal(parked["head.weight"], init["head.weight"])
    assert (balanced.epochs, balanced.per_class, balanced.lr_scale) == (5.0, 5, pytest.approx(10.0))
    assert (classifier.local_steps, classifier.lr_scale, classifier.start) == (2, pytest.approx(10.0), None)
    assert (extractor.local_steps, extractor.lr_scale, extractor.start, extractor.penalty) == (None, 1.0, None, None)
    for phase, trained in ((balanced, "head"), (classifier, "head"), (extractor, "body")):
        assert {n for n, m in phase.masks.items() if m.all()} == {n for n in init if n.startswith(trained)}
        assert not any(m.any() for n, m in phase.masks.items() if not n.startswith(trained))
    method.anchored[[0, 2]] = True
    penalty = method.plan(20, queries(ScriptedClients(hist=hist)), np.random.default_rng(0)).phases[2].penalty
    expected = [np.log(2) / 20, 0.0, -(0.2 * np.log(0.2) + 0.8 * np.log(0.8)) / 20]
    assert penalty.weight.tolist() == pytest.approx(expected)
