"""Procedural class-conditional images: a shifted class pattern under nuisance texture and noise.

Classes can come in families of look-alikes (``family_size`` > 1): the members of a family
share one pattern and differ only by a faint member pattern of relative weight
``family_spread``. Labels are numbered member-major (label = member x families + family), so
any contiguous block of ``families`` labels holds one member of every family, and a random
split of the labels over groups mostly puts look-alikes with different groups. That is why
clustering pays off on this source: a global model must split its prior and capacity between
look-alikes it can barely tell apart, while a group's model sees one member of a family and
only has to tell families apart. FIELDING's Open Images clients are alike in kind (600
classes, many of them near-synonyms, under a small ShuffleNet).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from driftbench.config import require
from driftbench.data.pool import Pool
from driftbench.data.sources import Source, register

GABORS_PER_CLASS = 2
BLOBS_PER_CLASS = 2
SMOOTH_SPACING = 0.4  # distance between the nuisance texture's basis bumps, in image widths
CONTRAST = (0.2, 1.5)  # per-sample pattern amplitude; the low end makes some samples ambiguous
SIGNAL_SCALE = 0.18  # grey-level std of a unit-std pattern around mid-grey
COLOUR_CAST = 0.1  # std of a per-sample, per-channel brightness offset


@dataclass(frozen=True)
class SyntheticParams:
    """Size, seed and difficulty of the synthetic pool.

    ``noise``: std of per-pixel Gaussian noise in grey levels (0..1); ``shift``: largest
    translation as a fraction of ``size``; ``nuisance``: strength of the class-independent
    smooth texture relative to the class pattern; ``family_size``: classes per family of
    look-alikes (1: every class distinct); ``family_spread``: weight of a member's own pattern
    against its family's (0: identical members, 1: unrelated ones).
    """

    classes: int = 10
    size: int = 32
    channels: int = 3
    samples_per_class: int = 200
    noise: float = 0.2
    seed: int = 0
    shift: float = 0.25
    nuisance: float = 1.0
    family_size: int = 1
    family_spread: float = 0.05

    def __post_init__(self) -> None:
        require(self.classes >= 2, f"classes must be >= 2, got {self.classes}")
        require(8 <= self.size <= 256, f"size must be in 8..256, got {self.size}")
        require(1 <= self.channels <= 4, f"channels must be in 1..4, got {self.channels}")
        require(
            self.samples_per_class >= 1,
            f"samples_per_class must be >= 1, got {self.samples_per_class}",
        )
        require(0.0 <= self.noise <= 1.0, f"noise must be in [0, 1], got {self.noise}")
        require(self.seed >= 0, f"seed must be >= 0, got {self.seed}")
        require(0.0 <= self.shift <= 0.5, f"shift must be in [0, 0.5], got {self.shift}")
        require(0.0 <= self.nuisance <= 4.0, f"nuisance must be in [0, 4], got {self.nuisance}")
        require(
            self.family_size >= 1 and self.classes % self.family_size == 0,
            f"family_size must be >= 1 and divide classes ({self.classes}), got {self.family_size}",
        )
        require(0.0 <= self.family_spread <= 1.0, f"family_spread must be in [0, 1], got {self.family_spread}")

    @property
    def families(self) -> int:
        """Number of look-alike families (``classes`` when ``family_size`` is 1)."""
        return self.classes // self.family_size


def _margin(params: SyntheticParams) -> int:
    """Largest translation in pixels."""
    return int(round(params.shift * params.size))


def _axis(size: int, margin: int = 0) -> np.ndarray:
    """Pixel centres of a size-pixel image widened by ``margin`` on each side, in image widths."""
    return (np.arange(size + 2 * margin) - margin + 0.5) / size


def _smooth_basis(t: np.ndarray) -> np.ndarray:
    """Gaussian bumps spaced SMOOTH_SPACING apart along ``t``: a len(t) x r matrix, rows of unit sum."""
    count = math.ceil((t[-1] - t[0]) / SMOOTH_SPACING) + 3
    centres = t[0] - SMOOTH_SPACING + SMOOTH_SPACING * np.arange(count)
    basis = np.exp(-0.5 * ((t[:, None] - centres[None, :]) / SMOOTH_SPACING) ** 2)
    normalised: np.ndarray = basis / basis.sum(axis=1, keepdims=True)
    return normalised


def _smooth_fields(rng: np.random.Generator, basis: np.ndarray, lead: tuple[int, ...]) -> np.ndarray:
    """Random smooth fields of shape ``lead`` x L x L, each of zero mean and unit std."""
    r = basis.shape[1]
    fields: np.ndarray = basis @ rng.standard_normal((*lead, r, r)) @ basis.T
    fields -= fields.mean(axis=(-2, -1), keepdims=True)
    fields /= fields.std(axis=(-2, -1), keepdims=True) + 1e-8
    return fields


def _colour(rng: np.random.Generator, channels: int) -> np.ndarray:
    """A random unit vector over channels (a random sign when there is one channel)."""
    c = rng.standard_normal(channels)
    return c / (np.linalg.norm(c) + 1e-8)


def _gabor(rng: np.random.Generator, t: np.ndarray) -> np.ndarray:
    """A grating of random orientation, frequency and phase under a Gaussian envelope at a random place."""
    theta, freq, phase = rng.uniform(0, math.pi), rng.uniform(2.0, 5.0), rng.uniform(0, 2 * math.pi)
    cy, cx = rng.uniform(0.25, 0.75, size=2)
    sigma = rng.uniform(0.12, 0.25)
    along = math.cos(theta) * (t[None, :] - cx) + math.sin(theta) * (t[:, None] - cy)
    envelope = np.exp(-((t[:, None] - cy) ** 2 + (t[None, :] - cx) ** 2) / (2 * sigma**2))
    grating: np.ndarray = envelope * np.cos(2 * math.pi * freq * along + phase)
    return grating


def _blob(rng: np.random.Generator, t: np.ndarray) -> np.ndarray:
    """A Gaussian blob of random centre and width."""
    cy, cx = rng.uniform(0.2, 0.8, size=2)
    sigma = rng.uniform(0.05, 0.12)
    blob: np.ndarray = np.exp(-((t[:, None] - cy) ** 2 + (t[None, :] - cx) ** 2) / (2 * sigma**2))
    return blob


def _pattern(rng: np.random.Generator, channels: int, t: np.ndarray) -> np.ndarray:
    """A random colour pattern of Gabor gratings and blobs on the axis ``t``: channels x L x L."""
    pattern = np.zeros((channels, t.size, t.size))
    for _ in range(GABORS_PER_CLASS):
        pattern += _colour(rng, channels)[:, None, None] * _gabor(rng, t)
    for _ in range(BLOBS_PER_CLASS):
        pattern += _colour(rng, channels)[:, None, None] * _blob(rng, t)
    return pattern


def prototype(params: SyntheticParams, label: int) -> np.ndarray:
    """Class ``label``'s pattern on the image widened by the shift margin: channels x L x L.

    Without families it depends only on ``seed``, ``label``, ``channels``, ``size`` and ``shift``,
    so a class looks the same whatever ``classes`` and ``samples_per_class`` are. In a family,
    the family's pattern (that of class ``family`` without families) is mixed with a member
    pattern at weight ``family_spread``. The unshifted image has zero mean per channel and unit std.
    """
    margin = _margin(params)
    t = _axis(params.size, margin)
    family, member = label % params.families, label // params.families
    proto = _pattern(np.random.default_rng([params.seed, family, 0]), params.channels, t)
    if params.family_size > 1:
        own = _pattern(np.random.default_rng([params.seed, family, 2, member]), params.channels, t)
        spread = params.family_spread
        proto = math.sqrt(1 - spread**2) * proto / proto.std() + spread * own / own.std()
    centre = proto[:, margin : margin + params.size, margin : margin + params.size]
    proto -= centre.mean(axis=(1, 2), keepdims=True)
    normalised: np.ndarray = proto / (centre.std() + 1e-8)
    return normalised


def _crops(canvas: np.ndarray, rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """``n`` randomly translated size x size windows of a C x L x L canvas: n x C x size x size."""
    windows = np.lib.stride_tricks.sliding_window_view(canvas, (size, size), axis=(1, 2))
    dy, dx = rng.integers(0, windows.shape[1], size=(2, n))
    return windows[:, dy, dx].transpose(1, 0, 2, 3)


def _to_uint8(x: np.ndarray) -> np.ndarray:
    """Grey levels in [0, 1] (overwritten) rounded and clipped to uint8 0..255."""
    x *= 255.0
    np.rint(x, out=x)
    np.clip(x, 0.0, 255.0, out=x)
    return x.astype(np.uint8)


def _class_samples(params: SyntheticParams, label: int) -> np.ndarray:
    """The uint8 samples of class ``label``: samples_per_class x channels x size x size."""
    rng = np.random.default_rng([params.seed, label, 1])
    n, c, size = params.samples_per_class, params.channels, params.size
    x = _crops(prototype(params, label), rng, n, size) * rng.uniform(*CONTRAST, size=(n, 1, 1, 1))
    x += params.nuisance * _smooth_fields(rng, _smooth_basis(_axis(size)), (n, c))
    x *= SIGNAL_SCALE
    x += 0.5 + rng.normal(0.0, COLOUR_CAST, size=(n, c, 1, 1))
    noise = rng.standard_normal(x.shape)
    noise *= params.noise
    x += noise
    return _to_uint8(x)


def load(params: SyntheticParams) -> Pool:
    """``classes * samples_per_class`` uint8 images ordered by class (each class contiguous)."""
    x = np.concatenate([_class_samples(params, label) for label in range(params.classes)])
    y = np.repeat(np.arange(params.classes, dtype=np.int64), params.samples_per_class)
    return Pool("synthetic", x, y, num_classes=params.classes)


register(
    Source(
        "synthetic",
        "procedural class-conditional colour images: shifted class patterns, nuisance texture, noise",
        SyntheticParams,
        load,
    )
)
