"""The dense engine's weight-gradient products on CUDA read no uninitialised memory."""

import pytest
import torch

from driftbench.engine.dense import _Product


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("beta", [-0.0, 0.0])
def test_gradient_without_a_proximal_pull_ignores_stale_device_memory(beta):
    """With momentum and mu = 0, ``sgd_update`` forms g as ``plus(anchor, -mu)``: baddbmm with beta = -0.0 ran a
    cuBLAS product that read its uninitialised output, so a NaN left in the allocator's cache made whole updates NaN
    (oracle and static diverged on openimage-buckets on CUDA only; on an H100 this test failed for -0.0 and passed
    for 0.0). Mutation: ``plus`` back to baddbmm alone."""
    torch.manual_seed(0)
    k, batch, out, inputs = 20, 20, 200, 192
    for _ in range(20):
        delta, below = torch.randn(k, batch, out, device="cuda"), torch.randn(k, batch, inputs, device="cuda")
        anchor = torch.randn(k, out, inputs, device="cuda")
        stale = torch.full((k, out, inputs), float("nan"), device="cuda")
        del stale  # its block goes back to the cache, where the product's output is allocated next
        gradient = _Product(delta, below).plus(anchor, beta)
        assert torch.isfinite(gradient).all()
        torch.testing.assert_close(gradient, torch.bmm(delta.transpose(1, 2), below))
