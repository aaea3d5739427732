"""Lockstep local training of many clients with torch.func: one fused SGD step for all clients."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

from driftbench.engine.device_data import DevicePool, LocalWork
from driftbench.engine.train_config import TrainConfig

Params = dict[str, torch.Tensor]


@dataclass(frozen=True)
class TrainOutput:
    """Trained parameters stacked on the client axis, each client's mean training loss and recorded step deltas."""

    params: Params
    loss: torch.Tensor
    path: Params = field(default_factory=dict)  # name -> (K, S, ...) parameter change at every local step


def default_chunk_size(model: nn.Module, device: torch.device) -> int | None:
    """Clients per fused forward/backward: all on CUDA or for conv-free models, one at a time for conv nets on CPU.

    On CPU, vmap turns a convolution over stacked weights into a grouped convolution, which
    is slower than one client at a time; dense layers batch into efficient matmuls.
    """
    if device.type == "cuda":
        return None
    return 1 if any(isinstance(m, nn.Conv2d) for m in model.modules()) else None


def stack(params: list[Params]) -> Params:
    """Stack per-client parameter dicts on a new leading axis."""
    return {name: torch.stack([p[name] for p in params]) for name in params[0]}


class BatchedTrainer:
    """Trains a batch of clients that share an architecture; parameters carry a leading client axis."""

    def __init__(self, model: nn.Module, data: DevicePool, chunk_size: int | None = None) -> None:
        self.model, self.data = model, data
        self.chunk_size = chunk_size
        self._grad = grad(self._loss, has_aux=True)
        self._vmapped = vmap(self._grad, in_dims=(0, 0, 0, 0, None), chunk_size=chunk_size)

    def _grads(self, params: Params, anchor: Params, x: torch.Tensor, y: torch.Tensor, mu: float) -> tuple[Params, torch.Tensor]:
        """Per-client gradients and losses; one client at a time skips vmap, whose per-chunk overhead then buys nothing."""
        if self.chunk_size != 1:
            return self._vmapped(params, anchor, x, y, mu)
        per_client = [
            self._grad({n: p[k] for n, p in params.items()}, {n: a[k] for n, a in anchor.items()}, x[k], y[k], mu)
            for k in range(len(x))
        ]
        return stack([g for g, _ in per_client]), torch.stack([loss for _, loss in per_client])

    def _loss(self, params: Params, anchor: Params, x: torch.Tensor, y: torch.Tensor, mu: float) -> tuple[torch.Tensor, torch.Tensor]:
        loss = F.cross_entropy(functional_call(self.model, params, (x,)), y)
        objective = loss
        if mu:
            objective = loss + 0.5 * mu * sum(((p - anchor[n]) ** 2).sum() for n, p in params.items())
        return objective, loss.detach()

    def train(
        self,
        start: Params,
        work: LocalWork,
        cfg: TrainConfig,
        mu: float = 0.0,
        masks: Params | None = None,
        record: tuple[str, ...] = (),
    ) -> TrainOutput:
        """Run ``work`` from ``start`` (K, ...) with SGD (momentum, weight decay) and FedProx term ``mu``.

        ``masks`` (name -> K x shape of 0/1) multiply every step's update, so masked entries keep
        their start value (pruned or frozen parameters); ``record`` names parameters whose
        change at every local step is returned in ``TrainOutput.path``.
        """
        device = self.data.device
        params = {n: p.clone() for n, p in start.items()}
        masks = masks or {}
        buffers = {n: torch.zeros_like(p) for n, p in params.items()} if cfg.momentum else {}
        idx = torch.as_tensor(work.batches, device=device)
        maps = torch.as_tensor(work.label_maps, device=device)
        steps = torch.as_tensor(work.steps, device=device)
        loss_sum = torch.zeros(len(steps), dtype=params[next(iter(params))].dtype, device=device)
        path: dict[str, list[torch.Tensor]] = {n: [] for n in record}
        for s in range(idx.shape[1]):
            active = steps > s
            masked = bool((work.steps <= s).any())  # decided on the host: no device sync per step
            x, y = self.data.gather(idx[:, s], maps, work.rotations)
            grads, loss = self._grads(params, start, x, y, mu)
            for name, p in params.items():
                g = grads[name]
                if cfg.weight_decay:
                    g = g.add(p, alpha=cfg.weight_decay)
                if cfg.momentum:
                    g = buffers[name].mul(cfg.momentum).add_(g)
                    buffers[name] = _where(active, g, buffers[name]) if masked else g
                if name in masks:
                    g = g * masks[name]
                params[name] = _where(active, p - cfg.lr * g, p) if masked else p.sub(g, alpha=cfg.lr)
                if name in path:
                    path[name].append(params[name] - p)
            loss_sum += torch.where(active, loss, torch.zeros_like(loss))
        recorded = {n: torch.stack(deltas, dim=1) for n, deltas in path.items()}
        return TrainOutput(params, loss_sum / steps.clamp(min=1), recorded)


def _where(active: torch.Tensor, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    return torch.where(active.view(-1, *([1] * (new.dim() - 1))), new, old)
