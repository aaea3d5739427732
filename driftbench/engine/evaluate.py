"""Forward-only passes over clients' data: per-client accuracy and loss, and per-client gradients."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad

from driftbench.engine.batched import Params
from driftbench.engine.device_data import DevicePool

EVAL_CHUNK = 8192  # samples per forward pass
STATISTICS = ("accuracy", "loss")


@torch.no_grad()
def per_client_mean(
    model: nn.Module,
    data: DevicePool,
    bank: Params,
    model_of_client: np.ndarray,
    windows: list[np.ndarray],
    label_maps: np.ndarray,
    rotations: np.ndarray,
    statistic: str = "accuracy",
) -> np.ndarray:
    """Mean accuracy or loss of every client on its samples (with its label map and rotation) under ``bank[model_of_client[c]]``.

    One forward pass per model and chunk: all clients served by the same model are processed together.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    lengths = np.array([len(w) for w in windows])
    owner = np.repeat(np.arange(len(windows)), lengths)
    idx = np.concatenate(windows) if windows else np.zeros(0, dtype=np.int64)
    maps = torch.as_tensor(label_maps, device=data.device)
    total = np.zeros(len(windows))
    for m in np.unique(model_of_client):
        params = {n: p[m] for n, p in bank.items()}
        rows = np.flatnonzero(model_of_client[owner] == m)
        for start in range(0, len(rows), EVAL_CHUNK):
            chunk = rows[start : start + EVAL_CHUNK]
            clients = owner[chunk]
            x, y = data.gather(torch.as_tensor(idx[chunk, None], device=data.device), maps[clients], rotations[clients])
            logits = functional_call(model, params, (x[:, 0],))
            if statistic == "accuracy":
                values = logits.argmax(1) == y[:, 0]
            else:
                values = F.cross_entropy(logits, y[:, 0], reduction="none")
            total += np.bincount(clients, weights=values.double().cpu().numpy(), minlength=len(windows))
    return total / np.maximum(lengths, 1)


def client_gradients(
    model: nn.Module, data: DevicePool, params: Params, windows: list[np.ndarray], label_maps: np.ndarray, rotations: np.ndarray
) -> torch.Tensor:
    """Each client's gradient (flattened, K x P) of its mean loss over its window at ``params``."""

    def loss(p: Params, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(functional_call(model, p, (x,)), y)

    grad_fn = grad(loss)
    maps = torch.as_tensor(label_maps, device=data.device)
    rows = []
    for k, window in enumerate(windows):
        x, y = data.gather(torch.as_tensor(window[None], device=data.device), maps[k : k + 1], rotations[k : k + 1])
        grads = grad_fn(params, x[0], y[0])
        rows.append(torch.cat([g.reshape(-1) for g in grads.values()]))
    return torch.stack(rows)
