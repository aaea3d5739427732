"""The scorecard's pure functions on hand-made numbers: segments, matrix summaries, prequential intervals, detection."""

import math

import numpy as np
import pytest

from driftbench.record.scorecard import (
    backward_transfer,
    column_means,
    detection,
    forgetting,
    in_segment_accuracy,
    interval_means,
    next_segment_accuracies,
    reactions_of,
    scorecard,
    segment_ends,
    segment_starts,
)

# rows: after segment i; columns: on segment j
MATRIX = np.array([[0.9, 0.2, 0.5], [0.4, 0.8, 0.3], [0.6, 0.1, 0.7]])


def changes(*pairs):
    return [(r, np.array(c, dtype=np.int64)) for r, c in pairs]


def test_segments_start_at_zero_and_each_distinct_event_inside_the_run():
    starts = segment_starts(np.array([5, 5, 0, 12, 20]), 20)
    assert starts.tolist() == [0, 5, 12]
    assert segment_ends(starts, 20).tolist() == [4, 11, 19]
    assert segment_starts(np.array([], dtype=np.int64), 7).tolist() == [0]


def test_matrix_summaries_follow_their_formulas():
    assert in_segment_accuracy(MATRIX) == pytest.approx((0.9 + 0.8 + 0.7) / 3)
    assert next_segment_accuracies(MATRIX) == pytest.approx([0.2, 0.3])
    assert backward_transfer(MATRIX) == pytest.approx(((0.6 - 0.9) + (0.1 - 0.8)) / 2)
    # segment 0: best earlier 0.9, now 0.6; segment 1: best earlier 0.8, now 0.1
    assert forgetting(MATRIX) == pytest.approx(((0.9 - 0.6) + (0.8 - 0.1)) / 2)


def test_forgetting_takes_the_best_of_every_earlier_row_and_can_be_negative():
    recurring = np.array([[0.3, 0.5], [0.9, 0.2]])  # segment 0's data is learnt only after segment 1
    assert forgetting(recurring) == pytest.approx(0.3 - 0.9)
    assert backward_transfer(recurring) == pytest.approx(0.9 - 0.3)


def test_a_partial_matrix_uses_its_leading_square_block():
    partial = MATRIX[:2]  # the run stopped during segment 2
    assert in_segment_accuracy(partial) == pytest.approx(0.85)
    assert next_segment_accuracies(partial) == pytest.approx([0.2, 0.3])
    assert backward_transfer(partial) == pytest.approx(0.4 - 0.9)
    assert forgetting(partial) == pytest.approx(0.9 - 0.4)


def test_one_segment_has_no_transfer_and_no_next_segment():
    one = np.array([[0.75]])
    assert in_segment_accuracy(one) == 0.75
    assert next_segment_accuracies(one) == []
    assert backward_transfer(one) is None and forgetting(one) is None
    assert in_segment_accuracy(np.zeros((0, 1))) is None


def test_column_means_skip_clients_without_test_data_and_leave_empty_columns_nan():
    per_client = np.array([[1.0, 0.0, 0.0], [0.5, 1.0, 0.0]])
    has = np.array([[True, True, False], [True, False, False]])
    means = column_means(per_client, has)
    assert means[:2].tolist() == [0.75, 0.0] and math.isnan(means[2])


def test_interval_means_run_from_each_event_to_the_next_later_one():
    rounds = np.arange(10)
    values = np.arange(10, dtype=float)
    assert interval_means(rounds, values, np.array([3, 3, 7])) == [4.5, 4.5, 8.0]  # rounds 3-6, then 7-9
    assert interval_means(rounds, values, np.array([20])) == [None]


def test_detection_delay_false_alarm_and_miss():
    events = changes((10, [0, 1]), (30, [2, 3]), (50, [4]))
    reactions = changes(
        (5, [0, 1, 2, 3, 4]),  # before any event: false alarm
        (12, [1]),  # event 10, client 1 after 2 rounds
        (14, [0, 7]),  # event 10, client 0 after 4 rounds
        (31, [5]),  # touches no drifted client: false alarm
        (45, [2, 3]),  # 15 rounds after event 30: outside the window, false alarm
    )
    scored = detection(events, ["label"] * 3, reactions, window=10)
    assert [(e.delay, e.clients_detected, e.client_delay_mean) for e in scored.events] == [
        (2, 2, 3.0),
        (None, 0, None),
        (None, 0, None),
    ]
    assert (scored.detected, scored.missed, scored.false_alarms, scored.reactions) == (1, 2, 3, 5)
    assert scored.delay_mean == 2.0 and scored.client_delay_mean == 3.0 and scored.clients_missed == 3
    assert scored.outcome == "scored"


def test_a_reaction_in_the_event_round_has_delay_zero_and_one_reaction_may_answer_two_events():
    scored = detection(changes((4, [0]), (6, [1])), ["label", "label"], changes((6, [0, 1])), window=5)
    assert [e.delay for e in scored.events] == [2, 0] and scored.false_alarms == 0


def test_no_events_is_an_outcome_and_every_reaction_a_false_alarm():
    scored = detection([], [], changes((3, [0])), window=10)
    assert scored.outcome == "no_events" and scored.events == () and scored.false_alarms == 1
    assert scored.missed == 0 and scored.delay_mean is None and scored.client_delay_mean is None


def test_reactions_are_the_clustering_events_after_round_zero():
    rows = [
        {"round": 0, "kind": "recluster_global", "clients": "0 1 2", "value": 2.0},
        {"round": 3, "kind": "threshold", "clients": "", "value": 0.5},
        {"round": 4, "kind": "move", "clients": "1 2", "value": None},
    ]
    (reaction,) = reactions_of(rows)
    assert reaction[0] == 4 and reaction[1].tolist() == [1, 2]


def test_a_trace_without_events_gives_a_one_segment_scorecard_without_nan():
    card = scorecard(
        segment_starts(np.array([], dtype=np.int64), 10), np.array([[0.6]]), np.array([[0, 0.5], [1, 0.7]]), [], [], []
    )
    assert card.segment_starts == (0,) and card.accuracy_matrix == ((0.6,),)
    assert card.in_segment_accuracy == 0.6 and card.next_segment_accuracy is None and card.backward_transfer is None
    assert card.prequential_accuracy == pytest.approx(0.6) and card.prequential_after_events == ()
    assert card.detection.outcome == "no_events"


def test_scorecard_ignores_events_at_round_zero_and_keeps_empty_columns_null():
    matrix = np.array([[0.5, np.nan], [0.25, np.nan]])
    card = scorecard(np.array([0, 4]), matrix, np.zeros((0, 2)), changes((0, [0]), (4, [1])), ["label", "label"], [])
    assert card.accuracy_matrix == ((0.5, None), (0.25, None))
    assert card.next_segment_accuracy is None and card.prequential_accuracy is None
    assert [e.round for e in card.detection.events] == [4] and card.prequential_after_events == (None,)
