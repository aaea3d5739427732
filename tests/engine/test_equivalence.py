"""The batched engine trains exactly like the plain sequential loop (same init, same batches)."""

import numpy as np
import pytest
import torch

from driftbench.data.pool import Pool
from driftbench.engine.batched import BatchedTrainer, default_chunk_size
from driftbench.engine.device_data import DevicePool, LocalWork, batch_plan
from driftbench.engine.features import FeaturePenalty, classifier_name
from driftbench.engine.models import build_model
from driftbench.engine.reference import train_sequential
from driftbench.train_config import TrainConfig


def make_pool(shape=(3, 12, 12), n=200, classes=5):
    rng = np.random.default_rng(0)
    return Pool("t", rng.random((n, *shape), dtype=np.float32), rng.integers(0, classes, n), classes)


def run_rounds(trainer_fn, model, data, cfg, mu, rounds=3):
    """FedAvg over 4 clients with ragged steps, rotations and label maps; returns the global params."""
    rng = np.random.default_rng(1)
    windows = [rng.choice(200, 30, replace=False) for _ in range(4)]
    maps = np.stack([np.arange(5), np.arange(5)[::-1], (np.arange(5) + 1) % 5, np.arange(5)])
    glob = {n: p.detach().clone() for n, p in model.named_parameters()}
    for r in range(rounds):
        work = LocalWork(
            clients=np.arange(4),
            batches=batch_plan(np.random.default_rng([7, r]), windows, 3, 8),
            steps=np.array([3, 2, 3, 1]),
            label_maps=maps,
            rotations=np.array([0, 90, 180, 270]),
        )
        start = {n: p.unsqueeze(0).expand(4, *p.shape).clone() for n, p in glob.items()}
        out = trainer_fn(start, work, cfg, mu)
        glob = {n: p.mean(0) for n, p in out.params.items()}
    return glob


@pytest.mark.parametrize("model_name", ["mlp", "lenet5"])
@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float32, 1e-4)])
@pytest.mark.parametrize("chunk", ["default", None])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("weight_decay,mu", [(1e-3, 0.01), (0.0, 0.0)])
def test_batched_matches_sequential(model_name, dtype, tol, chunk, momentum, weight_decay, mu):
    pool = make_pool()
    model = build_model(model_name, pool.input_shape, pool.num_classes, seed=3, dtype=dtype)
    data = DevicePool(pool, torch.device("cpu"), dtype)
    cfg = TrainConfig(model=model_name, lr=0.1, momentum=momentum, weight_decay=weight_decay, batch_size=8, local_steps=3)
    chunk_size = default_chunk_size(model, data.device) if chunk == "default" else chunk
    trainer = BatchedTrainer(model, data, chunk_size)
    batched = run_rounds(trainer.train, model, data, cfg, mu=mu)
    sequential = run_rounds(lambda s, w, c, m: train_sequential(model, data, s, w, c, m), model, data, cfg, mu=mu)
    initial = dict(model.named_parameters())
    for name in batched:
        assert not torch.allclose(batched[name], initial[name])  # training moved the parameters
        assert (batched[name] - sequential[name]).abs().max().item() <= tol, name


def test_masks_freeze_entries_and_path_sums_to_the_update():
    pool = make_pool(shape=(1, 8, 8))
    model = build_model("mlp", pool.input_shape, pool.num_classes, seed=0, dtype=torch.float64)
    data = DevicePool(pool, torch.device("cpu"), torch.float64)
    cfg = TrainConfig(model="mlp", lr=0.1, momentum=0.9, weight_decay=1e-3, batch_size=8, local_steps=4)
    work = LocalWork(
        np.arange(2),
        batch_plan(np.random.default_rng(0), [np.arange(50), np.arange(50, 120)], 4, 8),
        np.array([4, 2]),
        np.tile(np.arange(5), (2, 1)),
        np.zeros(2, dtype=np.int64),
    )
    start = {n: p.detach().unsqueeze(0).repeat(2, *[1] * p.dim()) for n, p in model.named_parameters()}
    trainer = BatchedTrainer(model, data)
    plain = trainer.train(start, work, cfg)
    mask = (torch.rand(start["1.weight"].shape, generator=torch.Generator().manual_seed(0)) > 0.5).double()
    masked = trainer.train(
        start, work, cfg, masks={"1.weight": mask, "3.bias": torch.zeros_like(start["3.bias"])}, record=("5.weight",)
    )
    frozen = mask == 0
    assert torch.equal(masked.params["1.weight"][frozen], start["1.weight"][frozen])
    assert not torch.equal(masked.params["1.weight"][~frozen], start["1.weight"][~frozen])
    assert torch.equal(masked.params["3.bias"], start["3.bias"])
    assert not torch.allclose(plain.params["3.bias"], start["3.bias"])
    path = masked.path["5.weight"]
    assert path.shape == (2, 4, *start["5.weight"].shape[1:])
    torch.testing.assert_close(path.sum(1), masked.params["5.weight"] - start["5.weight"])
    assert torch.count_nonzero(path[1, 2:]) == 0  # client 1 trains 2 of the 4 steps


def test_one_client_trains_when_all_clients_share_a_fused_step():
    pool = make_pool(shape=(1, 8, 8))
    model = build_model("mlp", pool.input_shape, pool.num_classes, seed=0, dtype=torch.float64)
    data = DevicePool(pool, torch.device("cpu"), torch.float64)
    cfg = TrainConfig(model="mlp", lr=0.1, batch_size=8, local_steps=2)
    work = LocalWork(
        np.arange(1),
        batch_plan(np.random.default_rng(0), [np.arange(50)], 2, 8),
        np.array([2]),
        np.arange(5)[None],
        np.zeros(1, dtype=np.int64),
    )
    start = {n: p.detach().unsqueeze(0).clone() for n, p in model.named_parameters()}
    batched = BatchedTrainer(model, data, chunk_size=None).train(start, work, cfg)
    sequential = train_sequential(model, data, start, work, cfg)
    for name in start:
        assert (batched.params[name] - sequential.params[name]).abs().max().item() <= 1e-10, name


def anchor_pull(features, labels, anchors):
    """A feature term for the tests: mean squared distance of each feature to its class's anchor."""
    return (features - anchors.index_select(0, labels)).pow(2).sum(1).mean()


@pytest.mark.parametrize("model_name,chunk", [("mlp", None), ("lenet5", 1), ("lenet5", None)])
def test_feature_penalty_trains_like_the_sequential_loop(model_name, chunk):
    """Each client adds weight[k] x its term on the classifier's input features: the dense MLP (vmap fallback), the
    one-client working copy and vmap(grad) match the plain loop; a zero weight is plain training, and the penalty moves
    the result (it is not ignored)."""
    pool = make_pool()
    model = build_model(model_name, pool.input_shape, pool.num_classes, seed=3, dtype=torch.float64)
    data = DevicePool(pool, torch.device("cpu"), torch.float64)
    cfg = TrainConfig(model=model_name, lr=0.1, momentum=0.9, weight_decay=1e-3, batch_size=8, local_steps=3)
    width = model.get_submodule(classifier_name(model)).in_features
    anchors = torch.randn(3, pool.num_classes, width, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    penalty = FeaturePenalty(anchor_pull, torch.tensor([0.5, 0.0, 2.0], dtype=torch.float64), (anchors,))
    work = LocalWork(
        np.arange(3),
        batch_plan(np.random.default_rng(0), [np.arange(60), np.arange(60, 130), np.arange(130, 200)], 3, 8),
        np.array([3, 3, 2]),
        np.tile(np.arange(5), (3, 1)),
        np.zeros(3, dtype=np.int64),
    )
    start = {n: p.detach().unsqueeze(0).repeat(3, *[1] * p.dim()) for n, p in model.named_parameters()}
    trainer = BatchedTrainer(model, data, chunk)
    batched = trainer.train(start, work, cfg, mu=0.01, penalty=penalty)
    sequential = train_sequential(model, data, start, work, cfg, mu=0.01, penalty=penalty)
    plain = trainer.train(start, work, cfg, mu=0.01)
    for name in start:
        assert (batched.params[name] - sequential.params[name]).abs().max().item() <= 1e-10, name
        torch.testing.assert_close(batched.params[name][1], plain.params[name][1], rtol=0, atol=1e-12)
    torch.testing.assert_close(batched.loss, sequential.loss, rtol=0, atol=1e-10)
    first = next(iter(start))  # the first layer: the penalty reaches it through the features
    assert not torch.allclose(batched.params[first][0], plain.params[first][0])


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_conv_clients_train_side_by_side_on_threads_like_the_sequential_loop(threads):
    """On CPU a conv net trains one client per torch thread, each on its own working copy with single-threaded
    operators: 5 clients with ragged steps, rotations and label maps match the plain loop in float64 for 1, 2 and 3
    threads; as many copies as threads are made, and torch's thread count is back afterwards."""
    pool = make_pool()
    model = build_model("lenet5", pool.input_shape, pool.num_classes, seed=3, dtype=torch.float64)
    data = DevicePool(pool, torch.device("cpu"), torch.float64)
    cfg = TrainConfig(model="lenet5", lr=0.1, momentum=0.9, weight_decay=1e-3, batch_size=8, local_steps=3)
    windows = [np.arange(40 * k, 40 * k + 40) for k in range(5)]
    work = LocalWork(
        np.arange(5),
        batch_plan(np.random.default_rng(0), windows, 3, 8),
        np.array([3, 1, 2, 3, 0]),
        np.stack([np.roll(np.arange(5), k) for k in range(5)]),
        np.array([0, 90, 180, 270, 0]),
    )
    start = {n: p.detach().unsqueeze(0).repeat(5, *[1] * p.dim()) for n, p in model.named_parameters()}
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        trainer = BatchedTrainer(model, data, default_chunk_size(model, data.device))
        batched = trainer.train(start, work, cfg, mu=0.01)
        assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(before)
    sequential = train_sequential(model, data, start, work, cfg, mu=0.01)
    assert trainer.made == threads
    for name in start:
        assert (batched.params[name] - sequential.params[name]).abs().max().item() <= 1e-10, name
    torch.testing.assert_close(batched.loss, sequential.loss, rtol=0, atol=1e-10)
