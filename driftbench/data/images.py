"""Decoding image files into uint8 arrays of one square size."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError
from tqdm import tqdm

from driftbench.errors import DataSourceError


def channels_first(image: Image.Image) -> np.ndarray:
    """An ``L`` or ``RGB`` image as a C x H x W uint8 array."""
    array = np.asarray(image, dtype=np.uint8)
    return array[None] if array.ndim == 2 else array.transpose(2, 0, 1)


def square(image: Image.Image, size: int, mode: str = "RGB") -> np.ndarray:
    """``image`` in ``mode`` (RGB or L), centre-cropped to a square and resized (antialiased bilinear): C x size x size uint8."""
    image.draft(mode, (2 * size, 2 * size))  # JPEG decodes at a reduced scale; a no-op for other formats
    image = image.convert(mode)
    width, height = image.size
    side = min(width, height)
    left, top = (width - side) // 2, (height - side) // 2
    return channels_first(image.resize((size, size), Image.Resampling.BILINEAR, box=(left, top, left + side, top + side)))


def _decode(path: Path, size: int, source: str) -> np.ndarray:
    try:
        with Image.open(path) as image:
            return square(image, size)
    except FileNotFoundError:
        raise DataSourceError(f"{source}: missing image {path}") from None
    except (UnidentifiedImageError, OSError) as exc:
        raise DataSourceError(f"{source}: cannot decode image {path}: {exc}") from None


def decode_files(paths: Sequence[Path], size: int, source: str) -> np.ndarray:
    """Decode ``paths`` in parallel threads into an N x 3 x size x size uint8 array, with a progress bar on a terminal."""
    out = np.empty((len(paths), 3, size, size), dtype=np.uint8)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        decoded = pool.map(lambda p: _decode(p, size, source), paths)
        for i, image in enumerate(tqdm(decoded, total=len(paths), desc=f"{source}: decoding", unit="img", disable=None)):
            out[i] = image
    return out
