"""The verdict rule without artifacts: a test per cell of its decision table, each look at its own level, monotonicity
(hypothesis), premises on the claimed method's own behaviour, and claims of one value."""

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t as student_t

from driftbench.reproduce.claim import Claim, Direction, Premise
from driftbench.reproduce.judging import ClaimScores, judge, open_claims
from driftbench.reproduce.report import row
from driftbench.reproduce.verdict import (
    ABOVE,
    BELOW,
    DECISIONS,
    DETERMINISTIC,
    DIRECTION_ONLY,
    INCONCLUSIVE,
    INVALID_PREMISE,
    NOT_REPRODUCED,
    OPEN,
    PASS_OFF,
    PASS_WITHIN,
    RANK,
    REPRODUCED,
    SIGN_EXCLUDED,
    TABLE,
    VERDICT_RULE,
    Effect,
    Evidence,
    band,
    decide,
    judged,
    one_sided_p,
)

PAIR = Claim("p", "A paper", "c", "T1", "a beats b", "static", {}, "final_accuracy", Direction(">", ("a", "b")), "-")


def claim(paper: float | None = 10.0, **fields) -> Claim:
    """A claim "a > b" on final accuracy in points, the paper's effect ``paper`` (or ``paper_value`` in ``fields``)."""
    return replace(PAIR, **{"paper_value": paper, **fields})


def scores(a, b, flags=None, premises=()) -> ClaimScores:
    """Scores of "a" and "b" at seeds 0, 1, ..., no run flagged unless ``flags`` (seed -> method -> flags); ``premises``:
    each metric premise's values (a ``none degenerate`` premise: empty)."""
    values = {s: {"a": x, "b": y} for s, (x, y) in enumerate(zip(a, b))}
    runs = {s: {"a": (), "b": (), **(flags or {}).get(s, {})} for s in values}
    return ClaimScores(values, runs, premises)


def points(*effects: float) -> tuple[Evidence, Effect]:
    """The evidence and effect of per-seed effects in points against the paper's 10 points, before Holm."""
    statistics = tuple(e / 100 for e in effects)
    return Evidence(statistics, one_sided_p(statistics)), Effect(effects, band(10.0, None, False))


def interval_of(low: float, high: float, n: int = 5) -> tuple[float, ...]:
    """``n`` per-seed effects whose 95% t-interval is [low, high]."""
    z = np.linspace(-1, 1, n)
    sd = (high - low) / 2 * math.sqrt(n) / student_t.ppf(0.975, n - 1)
    return tuple(float(v) for v in (low + high) / 2 + z / z.std(ddof=1) * sd)


# one example per row of the decision table: evidence and effect, the Holm-adjusted p and the family's size
CELLS = {
    PASS_WITHIN: (*points(9, 10, 11), None),
    PASS_OFF: (*points(35, 36, 34), None),
    SIGN_EXCLUDED: (*points(-5, -6, -4), None),
    OPEN: (*points(2, 12, 7), None),
}


@pytest.mark.parametrize("cell", list(DECISIONS))
def test_each_row_of_the_decision_table(cell):
    if cell in CELLS:
        evidence, effect, holm_p = CELLS[cell]
    elif cell == ABOVE:  # FedDAG's table4-30-pacfl-fmnist (literal): 5.77 [3.92, 7.62] points, the paper's 0.76
        values = interval_of(3.92, 7.62)
        evidence, effect, holm_p = (
            Evidence(tuple(v / 100 for v in values), 0.0005),
            Effect(values, band(0.76, None, False)),
            (0.03, 44),
        )
    else:  # BELOW: CFLGT's s3-accuracy, 2.43 [1.2, 3.66] points against the paper's 18.8, Holm p 0.027
        values = interval_of(1.2, 3.66)
        evidence, effect, holm_p = (
            Evidence(tuple(v / 100 for v in values), 0.001),
            Effect(values, band(18.8, None, False)),
            (0.027, 28),
        )
    assert decide(evidence, effect, (holm_p or (evidence.p, 1))[0] < 0.025) == cell
    row, reason = judged(evidence, effect, 0.025, holm_p)
    assert row == cell
    expected = {ABOVE: "the magnitude is decided off: ", BELOW: "the paper's effect is excluded: ", OPEN: "would settle it"}
    assert expected.get(cell, "") in reason
    assert DECISIONS[cell].meets in VERDICT_RULE and TABLE in VERDICT_RULE


def test_the_rows_a_pass_off_the_band_meets_and_the_ends_of_the_band():
    below = points(1.0, 0.7, 1.3)  # passes alone (p 0.014), 10x below the paper's 10: decided off, the sign right
    assert decide(below[0], below[1], True) == PASS_OFF and DECISIONS[judged(*below, 0.025)[0]].verdict == DIRECTION_ONLY
    assert DECISIONS[judged(*below, 0.025, (0.042, 3))[0]].verdict == NOT_REPRODUCED  # Holm undoes it
    assert "lies below 3.33" in judged(*below, 0.025, (0.042, 3))[1]
    assert band(10.0, None, False) is not None and (band(10.0, None, False).low, band(10.0, None, False).high) == (10 / 3, 30)
    assert band(6.0, "at_least", False).high == math.inf and band(0.9, "at_most", False).low == -math.inf
    assert band(None, None, False) is None and band(0.0, None, False) is None and band(1.0, None, True) is None
    one = points(9)
    assert judged(*one, 0.025) == (OPEN, "holds at 1/1 seeds; mean margin +0.09; one seed gives no interval")


def test_an_interval_wholly_above_3x_the_papers_effect_is_a_decided_direction_only_in_a_report():
    """FedDAG's table4-30-pacfl-fmnist: 5.77 [3.92, 7.62] points against the paper's 0.76 read inconclusive where Holm
    did not pass it; at the first of two looks (0.0147) over 44 claims it is decided, and no second stage runs it."""
    values = interval_of(3.92, 7.62)
    pacfl = claim(0.76)
    a, b = [0.5 + v / 100 for v in values], [0.5] * 5
    others = [(replace(pacfl, id=f"o{i}"), scores([0.5, 0.52, 0.49, 0.51, 0.5], [0.5] * 5)) for i in range(43)]
    results = judge([(pacfl, scores(a, b)), *others], second=(5, 6, 7, 8, 9))
    first = results[0]
    assert first.p < 0.0147 and "Holm over 44 claims: p 0.022" in first.reason  # passes alone, not after Holm
    assert (
        first.verdict == DIRECTION_ONLY and "the magnitude is decided off" in first.reason and "lies above 2.28" in first.reason
    )
    assert pacfl not in open_claims(results)
    assert first.decision == ABOVE and {r.decision for r in results[1:]} <= set(DECISIONS)  # the row that decided each
    (untested,) = judge([(pacfl, "no runs")])
    assert untested.decision is None


def test_each_look_at_its_own_level_a_literal_twin_judged_once_at_0025():
    """table1-pacfl-fmnist (literal): p 0.018 (6.39 points against 2.41, 5/5 seeds), judged once: it passes at 0.025,
    where 0.0147 left it inconclusive."""
    runs = scores([0.66, 0.64, 0.68], [0.6] * 3)  # 6, 4 and 8 points: one-sided p 0.0175
    twin, default = claim(6.0, literal=True), claim(6.0)
    (twin_first,) = judge([(twin, runs)], second=(5, 6, 7))
    (default_first,) = judge([(default, runs)], second=(5, 6, 7))
    assert 0.0147 < twin_first.p < 0.025
    assert twin_first.verdict == REPRODUCED and default_first.verdict == INCONCLUSIVE  # one look; two looks at 0.0147
    assert open_claims([twin_first, default_first]) == [default]  # only the claim with two looks runs again
    assert judge([(default, runs)])[0].verdict == REPRODUCED  # a report of one stage: one look at 0.025
    assert "0.025" in VERDICT_RULE and "literal twins, never run again, are judged once, at 0.025" in VERDICT_RULE


KINDS = st.sampled_from(["difference", "ratio", "at_least", "at_most", "driftbench", "by", "less"])


@settings(max_examples=250, deadline=None)
@given(
    kind=KINDS,
    paper=st.floats(0.3, 40),
    base=st.floats(-0.3, 0.3),
    noise=st.lists(st.floats(-1, 1), min_size=2, max_size=8).filter(lambda z: np.ptp(z) > 0.05),
    scale=st.floats(0.002, 0.1),
    shift=st.floats(0.001, 0.4),
    companions=st.lists(st.floats(0.0, 1.0), max_size=3),
    stages=st.sampled_from([(), (7, 8)]),
)
def test_moving_the_values_toward_the_claim_never_lowers_its_rank(kind, paper, base, noise, scale, shift, companions, stages):
    """Rank not reproduced < inconclusive < direction only < reproduced: a shift toward the claimed direction (for a ratio,
    a scaling) never lowers it, save reproduced turning direction only past the band's top (VERDICT_RULE)."""
    relation = "<" if kind == "less" else ">"
    fields = {
        "ratio": {"effect": "ratio", "paper_value": 1 + paper / 10, "unit": "x"},
        "at_least": {"kind": "bound", "bound": "at_least"},
        "at_most": {"kind": "bound", "bound": "at_most"},
        "driftbench": {"kind": "driftbench", "paper_value": None},
        "by": {"direction": Direction(">", ("a", "b"), 0.02)},
        "less": {"direction": Direction("<", ("a", "b"))},
    }.get(kind, {})
    tested = claim(paper, **fields)
    b = [0.5 + 0.01 * i for i in range(len(noise))]
    sign = -1 if relation == "<" else 1

    def verdict(moved: float):
        if kind == "ratio":
            a = [y * math.exp(base + scale * z + moved) for y, z in zip(b, noise)]
        else:
            a = [y + sign * (base + scale * z + moved) for y, z in zip(b, noise)]
        others = [
            (replace(tested, id=f"o{i}"), scores([0.5 + 0.1 * c, 0.51, 0.6], [0.5, 0.5, 0.5])) for i, c in enumerate(companions)
        ]
        return judge([(tested, scores(a, b)), *others], stages)[0]

    before, after = verdict(0.0), verdict(shift)
    assert before.verdict in RANK and after.verdict in RANK
    effect = after.effect
    overshoot = effect is not None and effect.band is not None and effect.scale(after.ours) > effect.band.high
    assert RANK[after.verdict] >= RANK[before.verdict] or (before.verdict, after.verdict, overshoot) == (
        REPRODUCED,
        DIRECTION_ONLY,
        True,
    ), (before.reason, after.reason)


def test_a_flag_on_the_claimed_methods_own_run_is_shown_beside_its_verdict_and_voids_nothing():
    """FEDDAG flagged at seed 6 (its start, before the detector's start rule): its accuracy claims are judged."""
    feddag = claim(4.12, direction=Direction(">", ("a", "b")), premises=(Premise("none degenerate", None),))
    flagged = {1: {"a": ("collapse_without_drift",)}}
    result = judge([(feddag, scores([0.90, 0.91, 0.89], [0.86, 0.865, 0.86], flagged, ({},)))])[0]
    assert result.verdict == REPRODUCED and result.shown == (
        "a collapse_without_drift at seed 1 (the claimed method's own behaviour, which the claim measures)",
    )
    assert "; beside the verdict: a collapse_without_drift at seed 1" in row(result)["reason"]
    baseline = judge([(feddag, scores([0.90, 0.91, 0.89], [0.86, 0.865, 0.86], {1: {"b": ("collapse_without_drift",)}}, ({},)))])[
        0
    ]
    assert (baseline.verdict, baseline.reason) == (
        INVALID_PREMISE,
        "premise 'no run collapses without drift' fails: b collapse_without_drift at seed 1",
    )
    drop = replace(feddag, metric="mean_drop")  # a drop at the drift, from a model that collapsed before it
    assert judge([(drop, scores([0.2, 0.21, 0.19], [0.1, 0.12, 0.1], flagged, ({},)))])[0].verdict == INVALID_PREMISE


def test_the_method_a_reclustering_claim_tests_is_judged_where_it_never_reclusters():
    """MSCFL's fig6-label claims: MSCFL flagged clustering_unchanged, the failure they test, under "none degenerate"."""
    mscfl = replace(
        claim(None, kind="driftbench", metric="mean_drop", direction=Direction("<", ("a", "b"))),
        premises=(Premise("none degenerate", None),),
    )
    unchanged = {s: {"a": ("clustering_unchanged",)} for s in range(3)}
    result = judge([(mscfl, scores([0.30, 0.28, 0.33], [0.10, 0.12, 0.09], unchanged, ({},)))])[0]
    assert result.verdict == NOT_REPRODUCED and "clustering_unchanged at seed 0, 1, 2" in result.shown[0]
    ordering = replace(PAIR, direction=Direction("decreasing", ("a", "b", "c")))
    assert ordering.claimed == ("a", "b", "c") and mscfl.claimed == ("a",)


def test_a_premise_the_seed_means_miss_voids_the_claim_only_where_the_seeds_exclude_it():
    """FIELDING's s3-flexcfl: FlexCFL 1.03 points above FedProx on the seed means, against "within 1 point"."""
    premise = Premise("final_accuracy: b = c within 0.01", "final_accuracy", Direction("=", ("b", "c"), 0.01))
    s3 = claim(6.9, kind="bound", bound="at_least", premises=(premise,))
    b, c = [0.436, 0.426, 0.422, 0.398, 0.441], [0.431, 0.396, 0.409, 0.386, 0.448]
    a = [0.566, 0.586, 0.536, 0.556, 0.571]
    premised = ({s: {"b": x, "c": y} for s, (x, y) in enumerate(zip(b, c))},)
    result = judge([(s3, scores(a, b, premises=premised))])[0]
    assert result.verdict == REPRODUCED
    assert result.shown == (
        "premise 'final_accuracy: b = c within 0.01' missed on the seed means (b 0.425, c 0.414), not excluded by the seeds",
    )
    far = ({s: {"b": x, "c": x - 0.05 + 0.001 * s} for s, x in enumerate(b)},)  # 5 points apart at every seed
    voided = judge([(s3, scores(a, b, premises=far))])[0]
    assert voided.verdict == INVALID_PREMISE and voided.reason.startswith("premise 'final_accuracy: b = c within 0.01' fails")


def test_a_claim_of_one_value_is_deterministic_never_a_p_value_of_0():
    """Fed-CM's table2-kmeans (identical runs: the same partition, the same training) and MSCFL's counted cost."""
    accuracy = [0.738, 0.821, 0.823, 0.756, 0.839]
    kmeans = claim(None, direction=Direction("=", ("a", "b"), 0.01))
    hierarchical = claim(0.1)
    other = replace(claim(10.0), id="other")
    results = judge(
        [
            (kmeans, scores(accuracy, accuracy)),
            (hierarchical, scores(accuracy, accuracy)),
            (other, scores([0.7, 0.72, 0.71], [0.6, 0.61, 0.59])),
        ]
    )
    assert [r.verdict for r in results[:2]] == [DETERMINISTIC, DETERMINISTIC] and [r.p for r in results[:2]] == [None, None]
    assert results[0].reason.startswith("deterministic: one value: a and b give equal final_accuracy at each seed")
    assert [r.holds for r in results] == [True, False, None]
    assert results[0].reason.endswith("the claim holds at it") and results[1].reason.endswith("the claim does not hold at it")
    assert "Holm over 1 claims" in results[2].reason  # one value is in no Holm family
    cost = replace(claim(None, kind="driftbench"), effect="ratio", unit="seconds", metric="clustering_seconds")
    counted = judge([(cost, scores([0.432 * 6.66] * 5, [0.432] * 5))])[0]  # 6.66x at every seed: p 8.6e-65 before
    assert counted.verdict == DETERMINISTIC and counted.p is None and counted.ours == pytest.approx(6.66)
    assert "the claim's statistic is +1.9 at every seed" in counted.reason
