"""The plain sequential per-client loop most research code uses; for benchmarks and equivalence tests only."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from driftbench.engine.batched import Params, TrainOutput, stack
from driftbench.engine.device_data import DevicePool, LocalWork
from driftbench.engine.features import FeaturePenalty, classifier_name, head_inputs, penalised
from driftbench.train_config import TrainConfig


def train_sequential(
    model: nn.Module,
    data: DevicePool,
    start: Params,
    work: LocalWork,
    cfg: TrainConfig,
    mu: float = 0.0,
    penalty: FeaturePenalty | None = None,
) -> TrainOutput:
    """Train each client in turn: deep-copy the model, torch.optim.SGD, one batch at a time (``penalty``: its term added)."""
    trained, losses = [], []
    for k in range(len(work.clients)):
        local = copy.deepcopy(model)
        with torch.no_grad():
            for name, p in local.named_parameters():
                p.copy_(start[name][k])
        anchor = [p.detach().clone() for p in local.parameters()]
        opt = torch.optim.SGD(local.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
        total = 0.0
        for s in range(int(work.steps[k])):
            idx = torch.as_tensor(work.batches[k : k + 1, s], device=data.device)
            maps = torch.as_tensor(work.label_maps[k : k + 1], device=data.device)
            x, y = data.gather(idx, maps, work.rotations[k : k + 1])
            opt.zero_grad()
            loss = batch_loss(local, x[0], y[0]) if penalty is None else penalised_batch_loss(local, x[0], y[0], penalty, k)
            objective = loss
            if mu:
                objective = loss + 0.5 * mu * sum(((p - a) ** 2).sum() for p, a in zip(local.parameters(), anchor))
            torch.autograd.backward(objective)  # what Tensor.backward runs; torch leaves that method unannotated
            opt.step()
            total += loss.item()
        trained.append({n: p.detach() for n, p in local.named_parameters()})
        losses.append(total / max(int(work.steps[k]), 1))
    return TrainOutput(stack(trained), torch.tensor(losses, dtype=start[next(iter(start))].dtype))


def batch_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The batch's mean cross-entropy."""
    return F.cross_entropy(model(x), y)


def penalised_batch_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor, penalty: FeaturePenalty, k: int) -> torch.Tensor:
    """``batch_loss`` plus client ``k``'s ``penalty`` term on the classifier layer's input (hooked for this pass only)."""
    with head_inputs(model.get_submodule(classifier_name(model))) as features:
        loss = batch_loss(model, x, y)
    weight, targets = penalty.client(k)
    return penalised(loss, penalty.term, features[0], y, weight, targets)
