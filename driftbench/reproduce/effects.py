"""Effect arithmetic: a claim's effect at each seed and the paper's, in the paper's unit, and the scale it is tested on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from driftbench.reproduce.claim import UNITS, Claim
from driftbench.reproduce.verdict import Effect, band

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


def logged(claim: Claim) -> bool:
    """Whether the claim's statistic is formed from the logs of its metric's values (VERDICT_RULE: a ratio effect is
    judged on the log scale); a speed-up's values are logs already (-ln time)."""
    return claim.effect == "ratio" and claim.metric != "tta_speedup"


def tested(claim: Claim, values: Values) -> dict[str, np.ndarray]:
    """The values the claim's statistic is formed from: its metric's, or their logs (``logged``; positive values)."""
    return {m: np.log(v) if logged(claim) else np.asarray(v, dtype=float) for m, v in values.items()}


def seed_effects(claim: Claim, values: Values) -> Effect | None:
    """Our effect at each seed in the paper's unit, beside the band the paper allows; None for an equivalence claim."""
    pair = ends(claim)
    if pair is None:
        return None
    hi, lo = (np.asarray(values[m], dtype=float) for m in pair)
    if claim.metric == "tta_speedup":
        effects = np.exp(hi - lo)  # values are -ln(time)
    elif claim.effect == "ratio":
        effects = hi / lo
    else:
        effects = (hi - lo) * UNITS[claim.unit]
    ratio = ratio_effect(claim)
    return Effect(tuple(float(e) for e in effects), band(paper_effect(claim), claim.bound, ratio), ratio)


def form_effect(claim: Claim, hi: float, lo: float) -> float | None:
    """The effect of two values: their difference, or their ratio (``effect = "ratio"``)."""
    if claim.effect == "difference":
        return hi - lo
    return hi / lo if lo else None


def paper_effect(claim: Claim) -> float | None:
    """The paper's effect: its number, or the effect of its values for the two methods that form it."""
    value, pair = claim.paper_value, ends(claim)
    if value is None or not isinstance(value, dict):
        return value
    if pair is None:
        return None
    return value[pair[0]] / value[pair[1]] if claim.metric == "tta_speedup" else form_effect(claim, *(value[m] for m in pair))
