"""Local SGD steps of dense ReLU networks over stacked weights, with backpropagation written out in batched matmuls.

``vmap(grad(...))`` computes the same gradients, but on a CPU the small per-client products
are bound by memory traffic: functorch writes every gradient (some transposed), and the SGD
step reads them back. Here each layer's update is applied as soon as backpropagation passes
it, its weight gradient accumulated straight into the weights (or momentum buffers) by one
batched product, so the stacked weights are read twice and written once per step.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from driftbench.engine.sgd import Chunk, gradient_step, sgd_step, sgd_update
from driftbench.train_config import TrainConfig


def dense_layers(model: nn.Module) -> list[str] | None:
    """The Linear layers' names of a Sequential of [Flatten] Linear (ReLU Linear)* with biases; None for any other model."""
    if not isinstance(model, nn.Sequential):
        return None
    modules = list(model.named_children())
    if modules and type(modules[0][1]) is nn.Flatten and (modules[0][1].start_dim, modules[0][1].end_dim) == (1, -1):
        modules = modules[1:]
    linear, between = modules[0::2], modules[1::2]
    if len(modules) % 2 == 0 or not all(type(m) is nn.Linear and m.bias is not None for _, m in linear):
        return None
    return [name for name, _ in linear] if all(type(m) is nn.ReLU for _, m in between) else None


def forward(live: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """Every layer's input (K, B, in), the loss gradient at the logits and the mean cross-entropy losses (K,).

    ``live`` is [weight (K, out, in), bias (K, out)] per layer, ``x`` (K, B, ...) and ``y`` (K, B).
    """
    weights, biases = live[0::2], live[1::2]
    batch = x.shape[1]
    inputs = [x.reshape(x.shape[0], batch, -1)]
    for w, b in zip(weights[:-1], biases[:-1]):
        inputs.append(torch.baddbmm(b.unsqueeze(1), inputs[-1], w.transpose(1, 2)).relu_())
    logits = torch.baddbmm(biases[-1].unsqueeze(1), inputs[-1], weights[-1].transpose(1, 2))
    log_p = F.log_softmax(logits, dim=-1)
    picked = log_p.gather(2, y.unsqueeze(-1))
    delta = log_p.exp_().scatter_add_(2, y.unsqueeze(-1), torch.full_like(picked, -1.0)).div_(batch)
    return inputs, delta, -picked.mean(dim=(1, 2))


def backprop(weights: list[torch.Tensor], inputs: list[torch.Tensor], delta: torch.Tensor) -> Iterator[tuple[int, torch.Tensor]]:
    """(layer, loss gradient at its output), last layer first; ReLU's derivative at 0 is 0, as in autograd.

    The next gradient is computed before a layer is yielded, so the caller may update that
    layer's weight in place.
    """
    for layer in range(len(weights) - 1, -1, -1):
        below = torch.ops.aten.threshold_backward(torch.bmm(delta, weights[layer]), inputs[layer], 0) if layer else delta
        yield layer, delta
        delta = below


def dense_grads(live: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Per-client gradients of the mean cross-entropy, in ``live``'s order, and the losses (K,)."""
    with torch.no_grad():
        inputs, delta, loss = forward(live, x, y)
        grads = list(live)
        for layer, d in backprop(live[0::2], inputs, delta):
            grads[2 * layer : 2 * layer + 2] = [torch.bmm(d.transpose(1, 2), inputs[layer]), d.sum(1)]
    return grads, loss


_masked_step = gradient_step(dense_grads)


def dense_step(chunk: Chunk, x: torch.Tensor, y: torch.Tensor, cfg: TrainConfig, mu: float) -> torch.Tensor:
    """A local SGD step of the chunk, each weight updated as backpropagation reaches it, then the biases; the losses (K,).

    Masked updates need the whole gradient, so they take ``dense_grads`` and ``sgd_step``.
    """
    if chunk.masked:
        return _masked_step(chunk, x, y, cfg, mu)
    with torch.no_grad():
        inputs, delta, loss = forward(chunk.live, x, y)
        bias_grads: list[torch.Tensor] = []
        for layer, d in backprop(chunk.live[0::2], inputs, delta):
            sgd_update(chunk, 2 * layer, Product(d, inputs[layer]), cfg, mu)
            bias_grads.insert(0, d.sum(1))
        sgd_step(chunk.subset(slice(1, None, 2)), bias_grads, cfg, mu)
    return loss


@dataclass(frozen=True)
class Product:
    """A layer's weight gradient delta^T @ below (K, out, in), formed by one batched product only where it is used."""

    delta: torch.Tensor
    below: torch.Tensor

    def add_to(self, out: torch.Tensor, beta: float, alpha: float) -> None:
        """out <- beta * out + alpha * g."""
        out.baddbmm_(self.delta.transpose(1, 2), self.below, beta=beta, alpha=alpha)
