"""The dense engine's weight updates on CUDA read no uninitialised memory."""

import pytest
import torch

from driftbench.engine.dense import Product
from driftbench.engine.sgd import Chunk, sgd_update
from driftbench.train_config import TrainConfig


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_momentum_update_without_a_proximal_pull_ignores_stale_device_memory():
    """With momentum and mu = 0, the weight gradient once came from baddbmm with beta = -0.0, a cuBLAS product that read
    its uninitialised output, so a NaN left in the allocator's cache made whole updates NaN (oracle and static diverged
    on openimage-buckets on CUDA only). ``sgd_update`` now accumulates the product into the initialised momentum buffer;
    mutation: accumulate into a fresh ``torch.empty`` buffer instead."""
    torch.manual_seed(0)
    k, batch, out, inputs = 20, 20, 200, 192
    cfg = TrainConfig(lr=0.1, momentum=0.5)
    for _ in range(20):
        delta, below = torch.randn(k, batch, out, device="cuda"), torch.randn(k, batch, inputs, device="cuda")
        weight = torch.randn(k, out, inputs, device="cuda")
        stale = torch.full((k, out, inputs), float("nan"), device="cuda")
        del stale  # its block goes back to the cache, where a new tensor of this size is allocated next
        chunk = Chunk([weight.clone()], [weight], [torch.zeros_like(weight)], [None])
        sgd_update(chunk, 0, Product(delta, below), cfg, mu=0.0)
        assert torch.isfinite(chunk.live[0]).all()
        torch.testing.assert_close(chunk.live[0], weight - cfg.lr * torch.bmm(delta.transpose(1, 2), below))
