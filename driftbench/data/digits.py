"""scikit-learn's 8x8 handwritten digits (1,797 real samples, shipped with scikit-learn)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.datasets import load_digits

from driftbench.data.pool import Pool
from driftbench.data.sources import Source, register


@dataclass(frozen=True)
class DigitsParams:
    """The digits source takes no parameters."""


def load(_params: DigitsParams) -> Pool:
    """All 1,797 digits as 1 x 8 x 8 float32 images scaled to [0, 1]."""
    bunch = load_digits()
    x = (bunch.images.astype(np.float32) / 16.0)[:, None, :, :]
    return Pool("digits", x, bunch.target.astype(np.int64), num_classes=10)


register(Source("digits", "scikit-learn 8x8 handwritten digits, 10 classes, 1,797 samples (offline)", DigitsParams, load))
