"""The labelled sample pool every trace indexes into."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Pool:
    """Labelled samples: ``x`` is N x C x H x W (float32 in [0, 1] or uint8), ``y`` is N int64.

    Clients hold index arrays into a pool, never copies. ``meta`` is an optional per-sample
    table (e.g. ``timestamp``, ``region``) for loaders of real datasets.
    """

    name: str
    x: np.ndarray
    y: np.ndarray
    num_classes: int
    meta: pd.DataFrame | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.x.ndim != 4:
            raise ValueError(f"pool {self.name}: x must be N x C x H x W, got shape {self.x.shape}")
        if self.y.shape != (len(self.x),) or self.y.dtype != np.int64:
            raise ValueError(f"pool {self.name}: y must be int64 of length {len(self.x)}")
        if len(self.y) and (self.y.min() < 0 or self.y.max() >= self.num_classes):
            raise ValueError(f"pool {self.name}: labels outside 0..{self.num_classes - 1}")

    def __len__(self) -> int:
        return len(self.y)

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """Shape of one sample: channels, height, width."""
        return tuple(self.x.shape[1:])

    def fingerprint(self) -> str:
        """SHA-256 of the samples and labels; a trace records it to detect a changed pool."""
        digest = hashlib.sha256()
        digest.update(str((self.x.shape, self.x.dtype.str, self.num_classes)).encode())
        digest.update(np.ascontiguousarray(self.x).tobytes())
        digest.update(self.y.tobytes())
        return digest.hexdigest()
