"""Effect arithmetic: a claim's effect, ours (per seed and overall) and the paper's, in the paper's unit."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from driftbench.reproduce.claim import UNITS, Claim
from driftbench.reproduce.verdict import Effect, least_effect

Values = Mapping[str, Sequence[float]]  # method -> its metric's value at each of the claim's seeds, in order


def ends(claim: Claim) -> tuple[str, str] | None:
    """The two methods whose values form the claim's effect, the larger-claimed first; None for "A = B within X"."""
    d = claim.direction
    pairs = {">": (0, -1), "<": (-1, 0), "decreasing": (0, -1), "increasing": (-1, 0)}
    if d.relation not in pairs:
        return None
    hi, lo = pairs[d.relation]
    return d.methods[hi], d.methods[lo]


def ratio_effect(claim: Claim) -> bool:
    """Whether the claim's effect is a ratio (a speed-up, or ``effect = "ratio"``) rather than a difference."""
    return claim.metric == "tta_speedup" or claim.effect == "ratio"


def seed_effects(claim: Claim, values: Values) -> Effect | None:
    """Our effect at each seed in the paper's unit, beside the least the paper allows; None for an equivalence claim
    or a ratio that is not positive at every seed."""
    pair = ends(claim)
    if pair is None:
        return None
    hi, lo = (np.asarray(values[m], dtype=float) for m in pair)
    if claim.metric == "tta_speedup":
        effects = np.exp(hi - lo)  # values are -ln(time)
    elif claim.effect == "ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            effects = hi / lo
    else:
        effects = (hi - lo) * UNITS[claim.unit]
    ratio = ratio_effect(claim)
    if ratio and not (np.isfinite(effects).all() and (effects > 0).all()):
        return None
    return Effect(tuple(float(e) for e in effects), least_effect(paper_effect(claim), claim.bound, ratio), ratio)


def form_effect(claim: Claim, hi: float, lo: float) -> float | None:
    """The effect of two values: their difference, or their ratio (``effect = "ratio"``)."""
    if claim.effect == "difference":
        return hi - lo
    return hi / lo if lo else None


def ours_effect(claim: Claim, values: Values) -> float | None:
    """driftbench's effect in the paper's unit: a speed-up (geometric mean) for time to accuracy, else from the seed means."""
    pair = ends(claim)
    if pair is None:
        return None
    hi, lo = (float(np.mean(values[m])) for m in pair)
    if claim.metric == "tta_speedup":
        return math.exp(hi - lo)  # values are -ln(time)
    scale = UNITS[claim.unit]
    return form_effect(claim, hi * scale, lo * scale)


def paper_effect(claim: Claim) -> float | None:
    """The paper's effect: its number, or the effect of its values for the two methods that form it."""
    value, pair = claim.paper_value, ends(claim)
    if value is None or not isinstance(value, dict):
        return value
    if pair is None:
        return None
    return value[pair[0]] / value[pair[1]] if claim.metric == "tta_speedup" else form_effect(claim, *(value[m] for m in pair))
