"""Per-client test accuracy: each client's current test samples through its current model."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from driftbench.engine.batched import Params
from driftbench.engine.device_data import DevicePool

EVAL_CHUNK = 8192  # samples per forward pass


@torch.no_grad()
def client_accuracy(
    model: nn.Module,
    data: DevicePool,
    bank: Params,
    assignment: np.ndarray,
    test_windows: list[np.ndarray],
    label_maps: np.ndarray,
    rotations: np.ndarray,
) -> np.ndarray:
    """Accuracy of every client on its test window (with its label map and rotation) under ``bank[assignment[c]]``.

    One forward pass per model and chunk: all clients served by the same model are tested together.
    """
    lengths = np.array([len(w) for w in test_windows])
    owner = np.repeat(np.arange(len(test_windows)), lengths)
    idx = np.concatenate(test_windows)
    maps = torch.as_tensor(label_maps, device=data.device)
    correct = np.zeros(len(test_windows))
    for m in np.unique(assignment):
        params = {n: p[m] for n, p in bank.items()}
        rows = np.flatnonzero(assignment[owner] == m)
        for start in range(0, len(rows), EVAL_CHUNK):
            chunk = rows[start : start + EVAL_CHUNK]
            clients = owner[chunk]
            x, y = data.gather(torch.as_tensor(idx[chunk, None], device=data.device), maps[clients], rotations[clients])
            hit = functional_call(model, params, (x[:, 0],)).argmax(1) == y[:, 0]
            correct += np.bincount(clients, weights=hit.cpu().numpy(), minlength=len(test_windows))
    return correct / np.maximum(lengths, 1)
