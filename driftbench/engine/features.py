"""A model's classifier layer, the features it reads, and extra loss terms on those features."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

FeatureTerm = Callable[..., torch.Tensor]  # (features B x d, labels B, *one client's targets) -> scalar


def classifier_name(model: nn.Module) -> str:
    """Module name of the classifier: the last Linear layer, whose input are the features."""
    names: list[str] = [name for name, m in model.named_modules() if isinstance(m, nn.Linear)]
    if not names:
        raise ValueError("the model has no Linear classifier layer")
    return names[-1]


@contextmanager
def head_inputs(head: nn.Module) -> Iterator[list[torch.Tensor]]:
    """While active, each forward pass through ``head`` appends the features it reads to the yielded list."""
    captured: list[torch.Tensor] = []
    hook = head.register_forward_hook(lambda _m, inputs, _out: captured.append(inputs[0]))
    try:
        yield captured
    finally:
        hook.remove()


@dataclass(frozen=True)
class FeaturePenalty:
    """An extra local loss: client k adds ``weight[k] x term(features, labels, *(t[k] for t in targets))``.

    ``features`` are the classifier layer's input for the batch; ``targets`` are tensors stacked
    on the client axis (anchors, masks), in the order of the trained clients.
    """

    term: FeatureTerm
    weight: torch.Tensor  # (K,)
    targets: tuple[torch.Tensor, ...] = ()

    def rows(self, rows: slice) -> FeaturePenalty:
        """The penalty of clients ``rows`` only."""
        return FeaturePenalty(self.term, self.weight[rows], tuple(t[rows] for t in self.targets))

    def client(self, k: int) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        """Client ``k``'s weight and targets."""
        return self.weight[k], tuple(t[k] for t in self.targets)


def penalised(
    loss: torch.Tensor,
    term: FeatureTerm,
    features: torch.Tensor,
    labels: torch.Tensor,
    weight: torch.Tensor,
    targets: tuple[torch.Tensor, ...],
) -> torch.Tensor:
    """One client's objective: ``loss`` plus ``weight`` x its term on the batch's features (in the loss's dtype)."""
    return loss + weight * term(features.to(loss.dtype), labels, *targets)
