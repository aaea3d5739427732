import math

import numpy as np
import pytest

from driftbench.record.metrics import (
    Recovery,
    adjusted_rand,
    collapsed_without_drift,
    degeneracy,
    final_accuracy,
    first_reach,
    fixed_target,
    has_groups,
    mean_client_distance,
    noise_band,
    partition_changed,
    plateau_change,
    recovery,
    reference_target,
    speedup,
    streaming,
    time_to_accuracy,
    trailing_mean,
)
from driftbench.record.schema import Streaming, Target, TimeToAccuracy
from driftbench.traces.model import l1_shift, label_distribution

ROUNDS = np.array([1, 2, 3, 4, 5])
SECONDS = np.array([10.0, 20.0, 30.0, 40.0, 50.0])


def test_final_accuracy_single_evaluation():
    assert final_accuracy(np.array([0.7])) == pytest.approx(0.7)


def test_final_accuracy_ten_evaluations_uses_last_one():
    assert final_accuracy(np.array([0.0] * 9 + [0.9])) == pytest.approx(0.9)


def test_final_accuracy_rounds_count_up():
    # n = 11 -> ceil(1.1) = 2 evaluations: (0.6 + 0.8) / 2.
    assert final_accuracy(np.array([0.0] * 9 + [0.6, 0.8])) == pytest.approx(0.7)


def test_final_accuracy_thirty_evaluations_uses_exactly_three():
    # n = 30 -> 3 evaluations: (0.3 + 0.6 + 0.9) / 3 = 0.6; four would give 0.7.
    accuracy = np.array([0.0] * 26 + [1.0, 0.3, 0.6, 0.9])
    assert final_accuracy(accuracy) == pytest.approx(0.6)


def test_final_accuracy_empty_raises():
    with pytest.raises(ValueError):
        final_accuracy(np.array([]))


FIXED = fixed_target(0.8)


def test_first_reach_needs_the_smoothed_curve_at_the_target_three_evaluations_running():
    # trailing 3-means: 0.1, 0.3, 0.4667, 0.7167, 0.85, 0.8833, 0.9: >= 0.7 from index 3 on
    accuracy = np.array([0.1, 0.5, 0.8, 0.85, 0.9, 0.9, 0.9])
    assert first_reach(accuracy, 0.7) == 3
    assert first_reach(accuracy, 0.95) is None
    assert first_reach(np.array([]), 0.5) is None


def test_first_reach_ignores_a_spike_and_keeps_a_reach_that_a_later_dip_follows():
    spike = np.array([0.1, 0.9, 0.1, 0.1, 0.1, 0.1])  # 3-means 0.1, 0.5, 0.367, 0.367, 0.1, 0.1
    assert first_reach(spike, 0.5) is None
    dip_later = np.array([0.9, 0.9, 0.9, 0.9, 0.9, 0.1, 0.1, 0.1, 0.1])
    assert first_reach(dip_later, 0.85) == 0  # "stays above until the end" would never count it


def test_first_reach_near_the_end_needs_every_remaining_evaluation():
    assert first_reach(np.array([0.1, 0.1, 0.1, 0.1, 0.9, 0.9]), 0.3) == 4  # 3-means 0.367, 0.633 at indices 4, 5
    assert first_reach(np.array([0.0, 0.0, 0.0, 0.0, 0.0, 3.0]), 0.5) == 5  # the last evaluation alone


def test_time_to_accuracy_outcomes():
    # 3-means 0.1, 0.3, 0.5, 0.783, 0.933: reached at round 4, crossing 0.6 between 30 s (0.5) and 40 s (0.783)
    reached = time_to_accuracy(ROUNDS, SECONDS, np.array([0.1, 0.5, 0.9, 0.95, 0.95]), fixed_target(0.6))
    assert (reached.outcome, reached.rounds) == ("reached", 4) and reached.reached
    after = (0.5 + 0.9 + 0.95) / 3
    assert reached.sim_seconds == pytest.approx(30 + 10 * (0.6 - 0.5) / (after - 0.5))
    missed = time_to_accuracy(ROUNDS, SECONDS, np.array([0.1, 0.2, 0.3, 0.3, 0.3]), FIXED)
    assert (missed.outcome, missed.rounds, missed.target) == ("not_reached", None, FIXED) and not missed.reached
    empty = np.array([])
    assert time_to_accuracy(empty, empty, empty, FIXED).outcome == "not_reached"


def test_a_final_accuracy_within_the_noise_band_of_the_target_is_not_distinguishable():
    noisy = np.array([0.1, 0.5, 0.76, 0.84, 0.76, 0.84, 0.76, 0.84])  # noise: last 4 evaluations, std 0.0462
    tta = time_to_accuracy(np.arange(8), np.arange(8) * 10.0, noisy, FIXED)
    assert tta.band == pytest.approx(np.std([0.76, 0.84, 0.76, 0.84], ddof=1))
    assert (tta.outcome, tta.rounds) == ("not_distinguishable", None)  # final 0.84 - 0.8 < 0.0462
    wide = Target(0.7, "reference", "fedavg", 0.8, 0.2)
    assert time_to_accuracy(np.arange(8), np.arange(8) * 10.0, noisy, wide).outcome == "not_distinguishable"


def test_reference_target_is_the_plateau_less_two_noise_bands():
    accuracy = np.array([0.1, 0.3, 0.5, 0.52, 0.48, 0.5, 0.52, 0.48])
    target = reference_target(accuracy, "fedavg")
    noise = np.std([0.48, 0.5, 0.52, 0.48], ddof=1)  # the last quarter, but at least 4 evaluations
    level = np.mean([0.48, 0.5, 0.52, 0.48])
    assert target == Target(pytest.approx(level - 2 * noise), "reference", "fedavg", pytest.approx(level), pytest.approx(noise))
    assert noise_band(np.array([0.5])) == 0.0


def test_the_reference_reaches_its_default_target_where_it_plateaus_however_long_the_run():
    rng = np.random.default_rng(0)
    rise = np.linspace(0.05, 0.5, 8)
    for length in (40, 80, 160):
        accuracy = np.concatenate([rise, 0.5 + 0.015 * rng.standard_normal(length - rise.size)])
        rounds = np.arange(length) * 5 + 4
        tta = time_to_accuracy(rounds, rounds * 2.0, accuracy, reference_target(accuracy, "fedavg"))
        assert tta.reached and tta.rounds is not None and tta.rounds <= 5 * 10 + 4


def test_speedup_ratio_of_seconds():
    reference = TimeToAccuracy(FIXED, "reached", 0.0, 10, 100.0)
    method = TimeToAccuracy(FIXED, "reached", 0.0, 4, 40.0)
    assert speedup(reference, method) == pytest.approx(2.5)


def test_speedup_none_unless_both_reached():
    tta = TimeToAccuracy(FIXED, "reached", 0.0, 4, 40.0)
    assert speedup(None, tta) is None
    assert speedup(tta, None) is None
    assert speedup(tta, TimeToAccuracy(FIXED, "not_distinguishable", 0.05, None, None)) is None


def test_speedup_method_at_zero_seconds():
    zero = TimeToAccuracy(FIXED, "reached", 0.0, 0, 0.0)
    assert speedup(TimeToAccuracy(FIXED, "reached", 0.0, 4, 40.0), zero) == math.inf
    assert speedup(zero, zero) == 1.0


def test_streaming_accuracy_by_hand():
    rounds = np.array([4, 9, 14, 19, 24, 29])
    accuracy = np.array([0.2, 0.6, 0.3, 0.5, 0.7, 0.9])
    # events at 12 and 20 (twice): intervals [.., 12): 0.2, 0.6; [12, 20): 0.3, 0.5; [20, ..): 0.7, 0.9
    result = streaming(rounds, accuracy, np.array([12, 20, 20]))
    assert result == Streaming(pytest.approx(3.2 / 6), pytest.approx(0.4), pytest.approx(2.4 / 4))
    assert streaming(rounds, accuracy, np.array([], dtype=int)).post_drift_accuracy is None
    assert streaming(rounds, accuracy, np.array([], dtype=int)).worst_interval_accuracy == pytest.approx(3.2 / 6)


def test_partition_changes_ignore_relabelling():
    assert not partition_changed(np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0]))
    assert partition_changed(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1]))
    assert partition_changed(np.array([0, 0, 0, 0]), np.array([0, 0, 1, 1]))
    assert partition_changed(np.array([0, 0, 1, 1]), np.array([0, 0, 0, 0]))


def test_degeneracy_flags():
    one = np.ones(5)
    assert degeneracy(one, np.array([3]), np.array([]), clustering=True, reclusters=True) == ("one_cluster",)
    assert degeneracy(one, np.array([3]), np.array([]), clustering=False, reclusters=False) == ()
    # the partition changed only before the first drift event (round 10): nothing was done about drift
    assert degeneracy(one + 1, np.array([3]), np.array([10]), True, True) == ("clustering_unchanged",)
    assert degeneracy(one + 1, np.array([3, 12]), np.array([10]), True, True) == ()
    assert degeneracy(one + 1, np.array([], dtype=int), np.array([10]), True, False) == ()


def test_collapse_without_drift_flags_a_segment_that_ends_far_below_its_smoothed_best():
    rounds = np.arange(8)
    # trailing means of 3: best (0.9 + 0.9 + 0.9) / 3 = 0.9 at round 4; the run ends at 0.6: 0.3 below
    collapse = np.array([0.9, 0.9, 0.9, 0.9, 0.9, 0.6, 0.6, 0.6])
    assert collapsed_without_drift(rounds, collapse, np.array([], dtype=int))
    # an event at round 5 starts a new segment: the fall may be the drift's, so no flag
    assert not collapsed_without_drift(rounds, collapse, np.array([5]))
    # an event before the best, or after the fall has lasted to a segment's end, explains nothing
    assert collapsed_without_drift(rounds, collapse, np.array([1]))
    assert collapsed_without_drift(rounds, collapse, np.array([8]))
    # exactly 0.2 below is not more than 0.2; a lower threshold flags it
    level = np.array([0.5, 0.5, 0.5, 0.3, 0.3, 0.3])
    assert not collapsed_without_drift(rounds[:6], level, np.array([], dtype=int))
    assert collapsed_without_drift(rounds[:6], level, np.array([], dtype=int), fall=0.19)


def test_a_dip_that_recovers_or_a_single_noisy_evaluation_is_no_collapse():
    rounds = np.arange(8)
    # a dip to 0.2 in the middle of a segment, back to 0.9 before it ends (a method re-clustering)
    assert not collapsed_without_drift(rounds, np.array([0.9, 0.9, 0.9, 0.2, 0.3, 0.9, 0.9, 0.9]), np.array([], dtype=int))
    # the last evaluation alone 0.3 below: its trailing mean (0.9 + 0.9 + 0.6) / 3 is 0.1 below
    assert not collapsed_without_drift(rounds, np.array([0.9] * 7 + [0.6]), np.array([], dtype=int))
    assert not collapsed_without_drift(np.array([], dtype=int), np.array([]), np.array([], dtype=int))


def test_a_fall_that_lasts_three_evaluations_is_a_collapse_though_it_recovers_partly_before_the_drift():
    rounds = np.arange(12)
    events = np.array([10])
    # 0.9, then three evaluations at 0.65 (0.25 below), back to 0.8 before the drift at round 10: the segment's
    # smoothed end (0.65 + 0.8 + 0.8) / 3 = 0.75 is only 0.15 below its best, so the end alone flags nothing
    partial = np.array([0.9] * 5 + [0.65] * 3 + [0.8] * 2 + [0.4] * 2)
    assert collapsed_without_drift(rounds, partial, events)
    # the same fall for two evaluations only is a dip, and a third evaluation less than 0.2 below does not extend it
    assert not collapsed_without_drift(rounds, np.array([0.9] * 5 + [0.65] * 2 + [0.8] * 3 + [0.4] * 2), events)
    assert not collapsed_without_drift(rounds, np.array([0.9] * 5 + [0.65, 0.65, 0.72] + [0.8] * 2 + [0.4] * 2), events)
    # three evaluations in a row is the span: a longer one lowers nothing, a span of 4 lets this fall pass
    assert not collapsed_without_drift(rounds, partial, events, span=4)
    # the fall is measured from the best reached by then: the same curve rising to 0.9 only after it is no fall
    assert not collapsed_without_drift(rounds, np.array([0.6] * 5 + [0.65] * 3 + [0.9] * 2 + [0.4] * 2), events)


# FEDDAG on Table 4's stand-in (claims/feddag.toml, table4-ifca) at seed 6, re-made at 65a82fb, where it was flagged:
# driftbench run --trace label-shift --method feddag --seed 6 --set fraction=0 --set quantity_alpha=0.25
# --set source.noise=0.6 --set source.classes=10 --set source.samples_per_class=500 --set train.batch_size=60
# --set train.eval_every=2 (rounds.csv accuracy_mean at rounds 1, 3, ..., 199; final 0.903, ARI 0.99)
FEDDAG_SEED6 = [0.774, 0.531, 0.532, 0.554, 0.605, 0.789, 0.834, 0.888, 0.903, 0.899, 0.873, 0.813, 0.895, 0.894, 0.891]
FEDDAG_SEED6 += [0.899, 0.918, 0.913, 0.894, 0.882, 0.92, 0.912, 0.91, 0.91, 0.903, 0.91, 0.906, 0.915, 0.911, 0.918, 0.915]
FEDDAG_SEED6 += [0.907, 0.911, 0.909, 0.911, 0.912, 0.907, 0.91, 0.906, 0.906, 0.911, 0.907, 0.91, 0.915, 0.908, 0.914]
FEDDAG_SEED6 += [0.907, 0.906, 0.911, 0.912, 0.911, 0.919, 0.907, 0.899, 0.892, 0.905, 0.909, 0.915, 0.899, 0.906, 0.907]
FEDDAG_SEED6 += [0.908, 0.908, 0.905, 0.911, 0.915, 0.904, 0.903, 0.907, 0.905, 0.901, 0.906, 0.907, 0.909, 0.91, 0.911]
FEDDAG_SEED6 += [0.905, 0.906, 0.909, 0.91, 0.904, 0.903, 0.903, 0.907, 0.904, 0.905, 0.904, 0.905, 0.901, 0.908, 0.906]
FEDDAG_SEED6 += [0.903, 0.91, 0.903, 0.901, 0.902, 0.898, 0.902, 0.907, 0.901]
# Table 4's 30 % column (table4-30-ifca's setting: --set rho=0.3) at seed 2, flagged in the report, re-made: its warm-up
# models' 0.644, then 0.339-0.45 over rounds 3-11, 0.701 at round 15, and 0.64-0.73 to the end (final 0.666)
FEDDAG_30_SEED2 = [0.644, 0.379, 0.399, 0.339, 0.399, 0.45, 0.592, 0.701, 0.636, 0.696, 0.673, 0.676, 0.665, 0.672, 0.7]
FEDDAG_30_SEED2 += [0.707, 0.717, 0.679, 0.698, 0.66, 0.671, 0.7, 0.67, 0.717, 0.653, 0.678, 0.673, 0.724, 0.721, 0.717]
FEDDAG_30_SEED2 += [0.713, 0.681, 0.676, 0.717, 0.712, 0.667, 0.707, 0.701, 0.684, 0.706, 0.718, 0.694, 0.698, 0.669, 0.677]
FEDDAG_30_SEED2 += [0.7, 0.72, 0.685, 0.665, 0.661, 0.696, 0.693, 0.723, 0.677, 0.73, 0.695, 0.695, 0.729, 0.72, 0.72]
FEDDAG_30_SEED2 += [0.684, 0.658, 0.708, 0.716, 0.709, 0.68, 0.669, 0.706, 0.685, 0.647, 0.645, 0.684, 0.702, 0.699, 0.662]
FEDDAG_30_SEED2 += [0.678, 0.697, 0.695, 0.672, 0.704, 0.675, 0.703, 0.692, 0.67, 0.667, 0.652, 0.718, 0.67, 0.694, 0.713]
FEDDAG_30_SEED2 += [0.658, 0.659, 0.673, 0.655, 0.705, 0.664, 0.681, 0.707, 0.688, 0.566]
NO_EVENTS = np.array([], dtype=int)


def test_a_fall_from_the_first_evaluation_that_the_run_makes_up_is_its_start_not_a_collapse():
    """FEDDAG's classifier restart: the warm-up models' 0.774, three evaluations 0.22-0.24 below it, 0.789 by round 11."""
    rounds = np.arange(1, 2 * len(FEDDAG_SEED6), 2)
    # before the start rule it was flagged: three evaluations more than 0.2 below the best so far, the first one
    assert not collapsed_without_drift(rounds, np.array(FEDDAG_SEED6), NO_EVENTS)
    assert not collapsed_without_drift(rounds, np.array(FEDDAG_30_SEED2), NO_EVENTS)  # flagged before too


def test_a_fall_from_the_start_that_the_run_never_makes_up_or_a_later_one_is_still_a_collapse():
    rounds = np.arange(14)
    # FEDDAG at seed 8 on Fashion-MNIST (threshold-search-random): 0.88 at round 1, 0.16-0.57, back to 0.705 only
    never = np.array([0.88, 0.16, 0.35, 0.45, 0.57, 0.60, 0.65, 0.68, 0.70, 0.70, 0.705, 0.705, 0.70, 0.705])
    assert collapsed_without_drift(rounds, never, NO_EVENTS)
    # the start made up at evaluation 4, then a fall of three evaluations from the best reached after it
    later = np.array([0.8, 0.5, 0.5, 0.8, 0.85, 0.9, 0.9, 0.6, 0.6, 0.6, 0.9, 0.9, 0.9, 0.9])
    assert collapsed_without_drift(rounds, later, NO_EVENTS)
    assert not collapsed_without_drift(rounds, np.array([0.8, 0.5, 0.5, 0.8, 0.85] + [0.9] * 9), NO_EVENTS)
    # each segment has its own start: after a drift event at round 6, a fall from its first evaluation made up is none
    assert not collapsed_without_drift(rounds, np.array([0.9] * 6 + [0.8, 0.5, 0.5, 0.5] + [0.9] * 4), np.array([6]))
    assert collapsed_without_drift(rounds, np.array([0.9] * 6 + [0.8, 0.5, 0.5, 0.5] + [0.7] * 4), np.array([6]))


def test_collapse_without_drift_measures_each_segment_from_its_own_best():
    rounds = np.arange(8)
    # drift at 4: the second segment reaches 0.95 (smoothed) and ends 0.35 below it
    assert collapsed_without_drift(rounds, np.array([0.9, 0.9, 0.9, 0.9, 0.95, 0.95, 0.95, 0.6]), np.array([4]), fall=0.1)
    # below the first segment's level after the drift, but steady within its own segment: no flag
    assert not collapsed_without_drift(rounds, np.array([0.9, 0.9, 0.9, 0.9, 0.4, 0.4, 0.4, 0.4]), np.array([4]))


def test_recovery_two_events_last_runs_to_end():
    rounds = np.arange(1, 11)
    accuracy = np.array([0.5, 0.6, 0.7, 0.8, 0.4, 0.695, 0.79, 0.9, 0.3, 0.5])
    first, second = recovery(rounds, accuracy, np.array([5, 9]), ["label", "concept"])
    # Event 5: pre = (0.6 + 0.7 + 0.8) / 3 = 0.7; interval rounds 5..8, trough 0.4 at round 5;
    # round 6 has 0.695 >= 0.7 - 0.01: 1 round; post = (0.695 + 0.79 + 0.9) / 3 = 0.795.
    assert (first.round, first.kind, first.outcome) == (5, "label", "recovered")
    assert first.pre == pytest.approx(0.7) and first.trough == pytest.approx(0.4) and first.drop == pytest.approx(0.3)
    assert first.rounds_to_recover == 1 and first.post == pytest.approx(0.795)
    assert first.delta_permille == pytest.approx((0.7 - 0.795) / 0.7 * 1000)  # ended above pre: negative
    # Event 9: pre = 0.795; interval rounds 9..10, trough 0.3; 0.5 never reaches 0.785.
    assert (second.round, second.kind, second.outcome, second.rounds_to_recover) == (9, "concept", "not_recovered", None)
    assert second.drop == pytest.approx(0.495) and second.post == pytest.approx(0.4)


def test_recovery_counts_from_the_trough_not_from_a_late_dip():
    # At round 3 accuracy still equals pre; it falls at round 4 and is back at round 6: 3 rounds, not 0.
    rounds = np.arange(6) + 1
    accuracy = np.array([0.8, 0.8, 0.8, 0.5, 0.6, 0.8])
    (event,) = recovery(rounds, accuracy, np.array([3]), ["label"])
    assert (event.outcome, event.rounds_to_recover) == ("recovered", 3) and event.drop == pytest.approx(0.3)


def test_recovery_without_a_drop_is_no_drop_never_negative():
    rounds = np.arange(1, 7)
    accuracy = np.array([0.5, 0.5, 0.5, 0.6, 0.7, 0.8])
    (event,) = recovery(rounds, accuracy, np.array([4]), ["label"])
    assert (event.outcome, event.drop, event.rounds_to_recover) == ("no_drop", 0.0, None)
    assert event.trough == pytest.approx(0.6) and event.delta_permille == pytest.approx(-400.0)


def test_recovery_event_without_prior_evaluation():
    rounds = np.array([1, 2, 3])
    accuracy = np.array([0.2, 0.1, 0.4])
    assert recovery(rounds, accuracy, np.array([1]), ["feature"]) == [
        Recovery(1, "feature", "no_baseline", None, None, None, None, None, None)
    ]


def test_recovery_event_interval_without_evaluation():
    rounds = np.array([1, 2, 3, 10])
    accuracy = np.array([0.2, 0.4, 0.6, 0.9])
    first, second = recovery(rounds, accuracy, np.array([5, 6]), ["label", "label"])
    assert first.outcome == "no_baseline" and first.drop is None  # [5, 6) holds no evaluation
    assert second.outcome == "no_drop" and second.pre == pytest.approx(0.4)


def test_recovery_zero_pre_gives_no_delta():
    rounds = np.array([1, 2])
    accuracy = np.array([0.0, 0.0])
    assert recovery(rounds, accuracy, np.array([2]), ["label"]) == [
        Recovery(2, "label", "no_drop", 0.0, 0.0, 0.0, 0.0, None, None)
    ]


def test_recovery_duplicate_events_get_identical_entries():
    rounds = np.array([1, 2, 3])
    accuracy = np.array([0.8, 0.5, 0.9])
    first, second = recovery(rounds, accuracy, np.array([2, 2]), ["label", "label"])
    assert first == second
    assert first.trough == pytest.approx(0.5)  # interval runs to the end, not [2, 2)
    assert first.rounds_to_recover == 1


def test_recovery_no_events():
    assert recovery(np.array([1]), np.array([0.5]), np.array([], dtype=int), []) == []


def test_recovery_unsorted_events_raise():
    with pytest.raises(ValueError):
        recovery(np.array([1, 2]), np.array([0.5, 0.6]), np.array([2, 1]), ["label", "label"])


def test_has_groups_needs_two_known_groups():
    assert has_groups(np.array([0, 1, -1])) and not has_groups(np.array([0, 0, -1])) and not has_groups(np.array([-1]))


def test_adjusted_rand_relabelled_partition_is_one():
    assert adjusted_rand(np.array([0, 0, 1, 1]), np.array([5, 5, 3, 3])) == 1.0


def test_adjusted_rand_leaves_out_clients_without_truth():
    truth = np.array([0, 0, 1, 1, -1, -1])
    assignment = np.array([0, 0, 1, 1, 0, 1])
    assert adjusted_rand(truth, assignment) == 1.0


def test_adjusted_rand_hand_computed():
    # Contingency [[2, 1], [0, 3]]: index = 1 + 3 = 4; row pairs 3 + 3 = 6;
    # column pairs 1 + 6 = 7; expected = 6 * 7 / C(6, 2) = 2.8; max = 6.5;
    # ARI = (4 - 2.8) / (6.5 - 2.8) = 12 / 37.
    truth = np.array([0, 0, 0, 1, 1, 1])
    assignment = np.array([0, 0, 1, 1, 1, 1])
    assert adjusted_rand(truth, assignment) == pytest.approx(12 / 37)


def test_adjusted_rand_without_truth_raises():
    with pytest.raises(ValueError):
        adjusted_rand(np.array([-1, -1]), np.array([0, 1]))


def test_mean_client_distance_averages_over_clients_and_skips_singletons():
    distributions = np.array(
        [
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.5, 0.5, 0.0],
            [0.0, 0.0, 1.0],
            [0.0, 0.5, 0.5],
            [0.0, 0.5, 0.5],
        ]
    )
    # Cluster 0: pair distances 2 (0-1), 1 (0-2), 1 (1-2) -> per client 1.5, 1.5, 1.0.
    # Cluster 9 is the singleton client 3, left out. Cluster 4: identical rows -> 0, 0.
    # Mean over five clients: 4 / 5.
    assignment = np.array([0, 0, 0, 9, 4, 4])
    assert mean_client_distance(distributions, assignment) == pytest.approx(0.8)


def test_mean_client_distance_all_singletons_is_zero():
    distributions = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert mean_client_distance(distributions, np.array([0, 1])) == 0.0


def test_label_distribution_histogram():
    distribution = label_distribution(np.array([0, 2, 2, 1]), 4)
    np.testing.assert_allclose(distribution, [0.25, 0.25, 0.5, 0.0])


def test_label_distribution_empty_is_zeros():
    np.testing.assert_array_equal(label_distribution(np.array([], dtype=int), 3), [0.0, 0.0, 0.0])


def test_label_distribution_out_of_range_raises():
    with pytest.raises(ValueError):
        label_distribution(np.array([0, 3]), 3)


def test_l1_shift():
    before = np.array([0.25, 0.25, 0.5, 0.0])
    after = np.array([0.5, 0.0, 0.25, 0.25])
    assert l1_shift(before, after) == pytest.approx(1.0)
    assert l1_shift(before, before) == 0.0


def test_trailing_mean_uses_up_to_window_values():
    assert trailing_mean(np.array([1.0, 2.0, 4.0, 8.0]), 2).tolist() == [1.0, 1.5, 3.0, 6.0]


def test_plateau_change_compares_the_halves_of_the_last_fifth():
    rising = np.concatenate([np.zeros(80), np.linspace(0.0, 0.2, 20)])  # tail halves average 0.0474 and 0.1526
    assert plateau_change(rising) == pytest.approx(0.2 * 10 / 19)
    assert plateau_change(np.full(50, 0.7)) == 0.0


def test_plateau_change_ignores_the_middle_value_of_an_odd_tail_and_sign():
    assert plateau_change(np.array([0.0] * 12 + [0.5, 0.4, 0.9])) == pytest.approx(0.4)
    assert plateau_change(np.array([0.9, 0.5, 0.4])) == pytest.approx(0.1)


def test_plateau_change_needs_two_evaluations():
    with pytest.raises(ValueError, match="at least two"):
        plateau_change(np.array([0.5]))
