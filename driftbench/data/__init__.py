"""Labelled pools: the Pool type and the source registry (importing this fills it)."""

from driftbench.data import digits, fedscale, fmow, hf, synthetic, torchvision_sources  # noqa: F401  (registration)
from driftbench.data.pool import Pool
from driftbench.data.sources import SOURCES, Source, load_pool, source_params

__all__ = ["Pool", "SOURCES", "Source", "load_pool", "source_params"]
