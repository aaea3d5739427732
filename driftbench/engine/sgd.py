"""SGD on a chunk of clients' stacked parameters, in place: torch.optim.SGD's arithmetic (momentum, weight decay), FedProx."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch

from driftbench.train_config import TrainConfig

GradFn = Callable[[list[torch.Tensor], torch.Tensor, torch.Tensor], tuple[list[torch.Tensor], torch.Tensor]]


class Gradient(Protocol):
    """A parameter's gradient g that is used without necessarily being stored."""

    def add_to(self, out: torch.Tensor, beta: float, alpha: float) -> None:
        """out <- beta * out + alpha * g, in place."""


@dataclass
class Chunk:
    """The tensors one chunk of clients trains in place: parameters, FedProx anchors, momentum buffers, update masks."""

    live: list[torch.Tensor]
    anchor: list[torch.Tensor]
    buffers: list[torch.Tensor]
    masks: list[torch.Tensor | None]
    pulls: dict[int, torch.Tensor] = field(default_factory=dict)  # parameter -> -mu * anchor, formed at its first step

    def pull(self, i: int, mu: float) -> torch.Tensor:
        """FedProx's constant part -mu * anchor of parameter ``i``'s gradient (``mu`` is fixed for a chunk's steps)."""
        if i not in self.pulls:
            self.pulls[i] = self.anchor[i] * -mu
        return self.pulls[i]

    def subset(self, params: slice) -> Chunk:
        """The chunk's parameters ``params`` (a slice of its lists) as a chunk of their own."""
        return Chunk(self.live[params], self.anchor[params], self.buffers[params], self.masks[params])

    @property
    def masked(self) -> bool:
        """Whether any parameter's update is masked."""
        return any(m is not None for m in self.masks)


StepFn = Callable[[Chunk, torch.Tensor, torch.Tensor, TrainConfig, float], torch.Tensor]


def gradient_step(grads_of: GradFn) -> StepFn:
    """A local step that takes the chunk's gradients from ``grads_of`` and applies ``sgd_step``; returns the losses."""

    def step(chunk: Chunk, x: torch.Tensor, y: torch.Tensor, cfg: TrainConfig, mu: float) -> torch.Tensor:
        grads, loss = grads_of(chunk.live, x, y)
        with torch.no_grad():
            sgd_step(chunk, grads, cfg, mu)
        return loss

    return step


def sgd_step(chunk: Chunk, grads: list[torch.Tensor], cfg: TrainConfig, mu: float) -> None:
    """p <- p - lr * mask * buf, buf <- momentum * buf + g + weight_decay * p + mu * (p - anchor); in place, as torch.optim.SGD.

    Without update masks this is torch.optim.SGD's fused kernel (one pass over parameters,
    gradients and buffers); the kernel cannot mask, so masked updates take three foreach passes.
    """
    if mu:
        torch._foreach_add_(grads, torch._foreach_sub(chunk.live, chunk.anchor), alpha=mu)
    if not chunk.masked:
        _fused_sgd(chunk.live, grads, chunk.buffers, cfg, cfg.weight_decay)
        return
    if cfg.weight_decay:
        torch._foreach_add_(grads, chunk.live, alpha=cfg.weight_decay)
    if cfg.momentum:
        torch._foreach_mul_(chunk.buffers, cfg.momentum)
        torch._foreach_add_(chunk.buffers, grads)
        grads = chunk.buffers
    update = [g if m is None else g * m for g, m in zip(grads, chunk.masks)]
    torch._foreach_add_(chunk.live, update, alpha=-cfg.lr)


def sgd_update(chunk: Chunk, i: int, gradient: Gradient, cfg: TrainConfig, mu: float) -> None:
    """``sgd_step`` for unmasked parameter ``i`` alone, in as few passes over it as its settings allow.

    Without momentum the gradient is accumulated straight into the parameter. With momentum it
    is accumulated straight into the momentum buffer (buf <- momentum * buf + g); the step then
    reads the buffer once, with torch.optim.SGD's fused kernel adding weight decay + mu and the
    FedProx pull -mu * anchor where there are any. Applied to each layer as soon as
    backpropagation has its gradient, it saves the passes that store every gradient and read it back.
    """
    p, decay = chunk.live[i], cfg.weight_decay + mu
    if not cfg.momentum:
        gradient.add_to(p, 1.0 - cfg.lr * decay, -cfg.lr)
        if mu:
            p.add_(chunk.anchor[i], alpha=cfg.lr * mu)
        return
    buf = chunk.buffers[i]
    gradient.add_to(buf, cfg.momentum, 1.0)
    if decay:
        _fused_sgd([p], [chunk.pull(i, mu)], [buf], cfg, decay, momentum=1.0)
    else:
        p.add_(buf, alpha=-cfg.lr)


def _fused_sgd(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    buffers: list[torch.Tensor],
    cfg: TrainConfig,
    weight_decay: float,
    momentum: float | None = None,
) -> None:
    """torch.optim.SGD's fused kernel (momentum buffers already initialised) with ``cfg``'s lr and momentum (or ``momentum``)."""
    torch._fused_sgd_(
        params,
        grads,
        buffers,
        weight_decay=weight_decay,
        momentum=cfg.momentum if momentum is None else momentum,
        lr=cfg.lr,
        dampening=0.0,
        nesterov=False,
        maximize=False,
        is_first_step=False,
    )
