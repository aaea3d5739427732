"""The digits source and the source registry's name lookup."""

from __future__ import annotations

import numpy as np
import pytest

from driftbench.data import SOURCES, load_pool
from driftbench.errors import UnknownNameError


def test_digits_pool() -> None:
    pool = load_pool("digits")
    assert pool.name == "digits"
    assert len(pool) == 1797
    assert pool.x.shape == (1797, 1, 8, 8)
    assert pool.x.dtype == np.float32
    assert 0.0 <= pool.x.min() and pool.x.max() <= 1.0
    assert pool.num_classes == 10
    assert pool.y.dtype == np.int64
    assert set(np.unique(pool.y).tolist()) == set(range(10))


def test_unknown_source_lists_valid_names() -> None:
    with pytest.raises(UnknownNameError) as info:
        load_pool("no-such-source")
    message = str(info.value)
    assert "no-such-source" in message
    for name in SOURCES:
        assert name in message
    assert {"digits", "synthetic"} <= set(SOURCES)
