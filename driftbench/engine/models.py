"""Model architectures by name; none carries per-client buffers (no BatchNorm running statistics)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from driftbench.config import lookup


def scaled(units: int, width: float) -> int:
    """``units`` times ``width``, rounded, at least 1."""
    return max(1, round(units * width))


def mlp(input_shape: tuple[int, int, int], num_classes: int, width: float = 1.0) -> nn.Module:
    """Two hidden layers of 200 x ``width`` units with ReLU (at width 1, the MLP of FedAvg's MNIST experiments)."""
    c, h, w = input_shape
    hidden = scaled(200, width)
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(c * h * w, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, num_classes),
    )


def lenet5(input_shape: tuple[int, int, int], num_classes: int, width: float = 1.0) -> nn.Module:
    """LeNet-5 (conv6-pool-conv16-pool-fc120-fc84, each times ``width``); convolutions are padded below 32x32 inputs."""
    c, h, _ = input_shape
    c1, c2, f1, f2 = (scaled(units, width) for units in (6, 16, 120, 84))
    pad1 = 0 if h >= 32 else 2
    after1 = (h + 2 * pad1 - 4) // 2
    pad2 = 0 if after1 >= 6 else 2
    features = nn.Sequential(
        nn.Conv2d(c, c1, 5, padding=pad1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 5, padding=pad2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
    )
    with torch.no_grad():
        flat = features(torch.zeros(1, *input_shape)).shape[1]
    return nn.Sequential(features, nn.Linear(flat, f1), nn.ReLU(), nn.Linear(f1, f2), nn.ReLU(), nn.Linear(f2, num_classes))


def group_norm(channels: int) -> nn.GroupNorm:
    """GroupNorm over ``channels`` with gcd(32, channels) groups (Wu and He's 32 where the width allows)."""
    return nn.GroupNorm(math.gcd(32, channels), channels)


def without_batchnorm(model: nn.Module) -> nn.Module:
    """``model`` with every BatchNorm2d replaced in place by ``group_norm``: no running statistics, no buffers."""
    for name, child in model.named_children():
        if isinstance(child, nn.BatchNorm2d):
            setattr(model, name, group_norm(child.num_features))
        else:
            without_batchnorm(child)
    return model


def with_input_channels(model: nn.Module, channels: int) -> nn.Module:
    """``model`` with its first convolution rebuilt for ``channels`` input channels (torchvision's expect 3)."""
    name, conv = next((n, m) for n, m in model.named_modules() if isinstance(m, nn.Conv2d))
    if conv.in_channels != channels:
        parent_name, _, attr = name.rpartition(".")
        padding = conv.padding if isinstance(conv.padding, str) else _pair(conv.padding)
        replacement = nn.Conv2d(
            channels, conv.out_channels, _pair(conv.kernel_size), _pair(conv.stride), padding, bias=conv.bias is not None
        )
        setattr(model.get_submodule(parent_name), attr, replacement)
    return model


def _pair(value: tuple[int, ...]) -> tuple[int, int]:
    """A Conv2d's (height, width) setting, which torch types as ``tuple[int, ...]``."""
    height, width = value
    return height, width


def resnet18(input_shape: tuple[int, int, int], num_classes: int) -> nn.Module:
    """torchvision's ResNet-18 with GroupNorm; the ImageNet stem is kept, so a 32x32 input reaches layer4 at 1x1."""
    from torchvision import models  # importing torchvision takes seconds: only for the models that need it

    return with_input_channels(without_batchnorm(models.resnet18(num_classes=num_classes)), input_shape[0])


def shufflenet_v2(input_shape: tuple[int, int, int], num_classes: int) -> nn.Module:
    """torchvision's ShuffleNet v2 (1.0x) with GroupNorm; inputs down to 32x32 reach the last stage at 1x1."""
    from torchvision import models

    return with_input_channels(without_batchnorm(models.shufflenet_v2_x1_0(num_classes=num_classes)), input_shape[0])


MODELS: dict[str, Callable[[tuple[int, int, int], int], nn.Module]] = {
    "mlp": mlp,
    "lenet5": lenet5,
    "resnet18": resnet18,
    "shufflenet_v2": shufflenet_v2,
}


def build_model(
    name: str, input_shape: tuple[int, int, int], num_classes: int, seed: int, dtype: torch.dtype, width: float = 1.0
) -> nn.Module:
    """Instantiate model ``name`` (``width`` times its usual hidden sizes: mlp and lenet5) initialised from ``seed``."""
    factory: Callable[..., nn.Module] = lookup(MODELS, name, "model")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = factory(input_shape, num_classes, width) if width != 1 else factory(input_shape, num_classes)
    return model.to(dtype)


def forward_flops(model: nn.Module, input_shape: tuple[int, int, int]) -> float:
    """Multiply-add FLOPs (2 per MAC) of one sample's forward pass through Linear and Conv2d layers."""
    total = 0.0

    def count(module: nn.Module, _inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
        nonlocal total
        if isinstance(module, nn.Linear):
            total += 2.0 * module.in_features * module.out_features
        elif isinstance(module, nn.Conv2d):
            k = module.in_channels // module.groups * module.kernel_size[0] * module.kernel_size[1]
            total += 2.0 * k * output[0].numel()

    hooks = [m.register_forward_hook(count) for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
    try:
        with torch.no_grad():
            dtype = next(model.parameters()).dtype
            model(torch.zeros(1, *input_shape, dtype=dtype, device=next(model.parameters()).device))
    finally:
        for hook in hooks:
            hook.remove()
    return total
