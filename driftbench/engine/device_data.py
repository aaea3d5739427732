"""The pool on the compute device, per-client batch plans and on-device transforms."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from driftbench.data.pool import Pool
from driftbench.errors import ConfigError

GATHER_BYTES = 16 << 20  # inputs gathered in one pass: all the local steps of a chunk of small samples


def resolve_device(name: str) -> torch.device:
    """``auto`` picks CUDA when present; ``cuda`` without a GPU is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name not in ("cpu", "cuda"):
        raise ConfigError(f"--device {name!r}: allowed: auto, cpu, cuda")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda: no CUDA device is available (use auto or cpu)")
    return torch.device(name)


@dataclass(frozen=True)
class LocalWork:
    """One round's local training for K clients: pool indices per step, step counts and transforms."""

    clients: np.ndarray  # (K,) client ids
    batches: np.ndarray  # (K, S, B) pool indices; client k uses steps 0..steps[k]-1
    steps: np.ndarray  # (K,) local steps per client
    label_maps: np.ndarray  # (K, C)
    rotations: np.ndarray  # (K,) degrees, multiples of 90


def batch_plan(rng: np.random.Generator, windows: list[np.ndarray], steps: int, batch_size: int) -> np.ndarray:
    """(K, steps, batch) pool indices: each client walks through reshuffled passes over its window."""
    plan = np.empty((len(windows), steps * batch_size), dtype=np.int64)
    for k, window in enumerate(windows):
        passes = -(-steps * batch_size // len(window))
        plan[k] = np.concatenate([rng.permutation(window) for _ in range(passes)])[: steps * batch_size]
    return plan.reshape(len(windows), steps, batch_size)


@dataclass(frozen=True)
class Transforms:
    """Per-client label maps and rotation groups of a fixed list of clients, already on the device."""

    label_maps: torch.Tensor  # (K, C)
    rotations: tuple[tuple[int, torch.Tensor | None], ...]  # (quarter turns, client rows or None for all rows)


class DevicePool:
    """A pool's samples and labels held once on the device; gathers transformed batches by index."""

    def __init__(self, pool: Pool, device: torch.device, dtype: torch.dtype) -> None:
        self.device, self.dtype = device, dtype
        self.x = torch.as_tensor(pool.x).to(device)
        self.y = torch.as_tensor(pool.y).to(device)
        self.scale = 1.0 / 255.0 if pool.x.dtype == np.uint8 else 1.0

    def transforms(self, label_maps: torch.Tensor | np.ndarray, rotations: np.ndarray) -> Transforms:
        """Move K clients' label maps and rotation groups to the device once, for many ``take`` calls."""
        quarters = rotations // 90 % 4
        groups = []
        for quarter in np.unique(quarters):
            if quarter:
                rows = np.flatnonzero(quarters == quarter)
                groups.append((int(quarter), None if len(rows) == len(quarters) else torch.as_tensor(rows, device=self.device)))
        return Transforms(torch.as_tensor(label_maps, device=self.device), tuple(groups))

    def take(self, idx: torch.Tensor, transforms: Transforms) -> tuple[torch.Tensor, torch.Tensor]:
        """Samples ``idx`` (K, ...) as (K, ..., C, H, W) inputs and (K, ...) labels; no host round trip."""
        flat = idx.reshape(-1)
        x = self.x.index_select(0, flat).view(*idx.shape, *self.x.shape[1:]).to(self.dtype)
        if self.scale != 1.0:
            x.mul_(self.scale)
        y = torch.gather(transforms.label_maps, 1, self.y.index_select(0, flat).view(len(idx), -1)).view(idx.shape)
        for quarter, rows in transforms.rotations:
            if rows is None:
                x = torch.rot90(x, quarter, dims=(-2, -1))
            else:
                x[rows] = torch.rot90(x[rows], quarter, dims=(-2, -1))
        return x, y

    def batches(self, idx: torch.Tensor, transforms: Transforms) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Each local step's batch of ``idx`` (K, S, B) as ``take`` gives it, taken ``GATHER_BYTES`` of steps at a time."""
        step_bytes = idx.shape[0] * idx.shape[2] * self.x[0].numel() * self.dtype.itemsize
        block = max(1, GATHER_BYTES // max(step_bytes, 1))
        for lo in range(0, idx.shape[1], block):
            x, y = self.take(idx[:, lo : lo + block], transforms)
            for s in range(x.shape[1]):
                yield x[:, s], y[:, s]

    def gather(self, idx: torch.Tensor, label_maps: torch.Tensor, rotations: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Samples ``idx`` (K, B) as (K, B, C, H, W) inputs and (K, B) labels after each client's transforms."""
        return self.take(idx, self.transforms(label_maps, rotations))
