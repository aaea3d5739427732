"""The batched engine trains exactly like the plain sequential loop (same init, same batches)."""

import numpy as np
import pytest
import torch

from driftbench.data.pool import Pool
from driftbench.engine.batched import BatchedTrainer, default_chunk_size
from driftbench.engine.device_data import DevicePool, LocalWork, batch_plan
from driftbench.engine.models import build_model
from driftbench.engine.reference import train_sequential
from driftbench.engine.train_config import TrainConfig


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
def test_batched_matches_sequential(model_name, dtype, tol, chunk):
    pool = make_pool()
    model = build_model(model_name, pool.input_shape, pool.num_classes, seed=3, dtype=dtype)
    data = DevicePool(pool, torch.device("cpu"), dtype)
    cfg = TrainConfig(model=model_name, lr=0.1, momentum=0.9, weight_decay=1e-3, batch_size=8, local_steps=3)
    chunk_size = default_chunk_size(model, data.device) if chunk == "default" else chunk
    trainer = BatchedTrainer(model, data, chunk_size)
    batched = run_rounds(trainer.train, model, data, cfg, mu=0.01)
    sequential = run_rounds(lambda s, w, c, m: train_sequential(model, data, s, w, c, m), model, data, cfg, mu=0.01)
    initial = dict(model.named_parameters())
    for name in batched:
        assert not torch.allclose(batched[name], initial[name])  # training moved the parameters
        assert (batched[name] - sequential[name]).abs().max().item() <= tol, name
