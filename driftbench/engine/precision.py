"""Arithmetic precision of training and evaluation, a recorded training setting: ``fp32``, ``tf32`` or ``bf16``.

- ``fp32`` (the default): float32 matmuls and convolutions in IEEE single precision, TF32 off
  everywhere (cuDNN convolutions otherwise default to TF32), so CUDA matches the CPU engine.
- ``tf32``: float32 matmuls and convolutions on TF32 tensor cores (CUDA; the CPU stays IEEE).
- ``bf16``: forward passes under bfloat16 autocast; parameters, losses and updates stay float32.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch


@contextmanager
def float32_math(precision: str) -> Iterator[None]:
    """Run the block's float32 matmuls and convolutions in TF32 for ``tf32``, in IEEE fp32 otherwise; restore after."""
    cudnn: Any = torch.backends.cudnn  # its conv and rnn settings are attached at run time
    backends: list[Any] = [torch.backends.cuda.matmul, cudnn.conv, cudnn.rnn]
    before = [backend.fp32_precision for backend in backends]
    for backend in backends:
        backend.fp32_precision = "tf32" if precision == "tf32" else "ieee"
    try:
        yield
    finally:
        for backend, value in zip(backends, before):
            backend.fp32_precision = value


def autocast(precision: str, device: torch.device) -> torch.autocast:
    """bfloat16 autocast for ``bf16`` forward passes; disabled for the other precisions."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")


@contextmanager
def evaluation(precision: str, device: torch.device) -> Iterator[None]:
    """Both settings at once, for passes that evaluate a model rather than train it."""
    with float32_math(precision), autocast(precision, device):
        yield
