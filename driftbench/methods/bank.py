"""Helpers on model banks, dicts of parameter name -> tensor stacked over models (M x ...)."""

from __future__ import annotations

import numpy as np
import torch

from driftbench.engine.batched import Params
from driftbench.methods import server_work


def bank_rows(bank: Params, rows: np.ndarray) -> Params:
    """Models ``rows`` of ``bank``, stacked in that order."""
    index = torch.as_tensor(rows, device=next(iter(bank.values())).device)
    return {n: p[index] for n, p in bank.items()}


def replicate(params: Params, copies: int) -> Params:
    """``copies`` identical models stacked on a leading axis."""
    return {n: p.unsqueeze(0).repeat(copies, *([1] * p.dim())) for n, p in params.items()}


def cluster_average(bank: Params, trained: Params, cluster: np.ndarray, weights: np.ndarray) -> Params:
    """Replace each bank model that had participants by their weighted mean; keep the others."""
    server_work.charge(server_work.aggregation(len(cluster), server_work.model_parameters(bank)))
    device = next(iter(bank.values())).device
    index = torch.as_tensor(cluster, device=device)
    dtype = next(iter(bank.values())).dtype
    w = torch.as_tensor(weights, dtype=dtype, device=device)
    total = torch.zeros(len(next(iter(bank.values()))), dtype=dtype, device=device).index_add_(0, index, w)
    out = {}
    for name, models in bank.items():
        shape = (-1,) + (1,) * (models.dim() - 1)
        summed = torch.zeros_like(models).index_add_(0, index, trained[name] * w.view(shape))
        out[name] = torch.where(total.view(shape) > 0, summed / total.clamp(min=1e-30).view(shape), models)
    return out
