"""The fmow-timeline generator: dated arrivals, windows over the last rounds, synthetic types or FMoW regions."""

import numpy as np
import pandas as pd

from driftbench.data.pool import Pool
from driftbench.traces.catalog import apply_sets, generate, load_spec
from driftbench.traces.fmow_timeline import FmowTimelineParams, make
from driftbench.traces.windows import arrival_rounds, window_bounds


def test_windows_hold_the_last_rounds_and_are_widened_to_min_size():
    arrivals = np.array([-9, -5, -1, 0, 3, 8, 9])
    assert window_bounds(arrivals, np.array([0, 4, 10]), 6, 1).tolist() == [[1, 4], [2, 5], [5, 7]]
    assert window_bounds(arrivals, np.array([-20, 30]), 6, 2).tolist() == [[0, 2], [5, 7]]
    # the first window_rounds worth of data is there at round 0: 2 rounds a day, window 4 -> days 0 and 1
    assert arrival_rounds(np.array([0, 1, 2]), 2, 4).tolist() == [-2, 0, 2]


def test_synthetic_regions_switch_type_at_the_event_and_windows_move_every_update():
    sets = {
        "clients": 12,
        "rounds": 40,
        "update_every": 5,
        "window_rounds": 10,
        "event_round": 20,
        "event_fraction": 0.5,
        "train_samples": 60,
        "test_samples": 20,
        "min_window": 2,
        "source.classes": 6,
        "source.size": 8,
        "source.samples_per_class": 20,
    }
    trace, pool = generate(apply_sets(load_spec("fmow-timeline"), {k: str(v) for k, v in sets.items()}))
    events = trace.events()
    assert {e.round for e in events if e.kind == "arrival"} <= set(range(5, 40, 5))
    (switch,) = [e for e in events if e.kind == "label"]
    assert switch.round == 20 and len(switch.clients) == 6
    assert (trace.groups_at(19)[switch.clients] != trace.groups_at(20)[switch.clients]).all()
    assert (np.isin(trace.seg_start, np.arange(0, 40, 5))).all() and not trace.seg_rotation.any()  # turned_types is off
    for client in range(12):
        for rnd in (0, 20, 35):
            assert len(trace.train_indices(trace.segments_at(rnd)[client])) >= 2


def fmow_pool():
    days = np.array([0, 1, 2, 3, 10, 11, 12, 0, 5, 30, 31, 7])
    region = np.array([326, 326, 326, 326, 326, 326, 326, 327, 327, 327, 327, 400])
    meta = pd.DataFrame(
        {
            "timestamp": pd.Timestamp("2015-01-01") + pd.to_timedelta(days, unit="D"),
            "region": region,
            "split": ["train"] * len(days),
        }
    )
    y = (np.arange(len(days)) % 3).astype(np.int64)
    return Pool("fmow-like", np.zeros((len(days), 1, 2, 2), np.uint8), y, 3, meta)


def test_fmow_pools_give_one_client_per_region_with_samples_by_date():
    pool = fmow_pool()
    params = FmowTimelineParams(clients=100, rounds=40, window_rounds=8, update_every=4, min_window=1, test_fraction=0.3)
    trace = make(params, pool).build({"name": "t", "generator": "fmow-timeline"}, pool.y)
    assert trace.num_clients == 2 and trace.num_groups == 0  # region 400 has one sample
    day = ((pool.meta["timestamp"] - pool.meta["timestamp"].min()).dt.days).to_numpy()
    for client, region in enumerate((326, 327)):
        train = trace.train_idx[trace.train_ptr[client] : trace.train_ptr[client + 1]]
        test = trace.test_idx[trace.test_ptr[client] : trace.test_ptr[client + 1]]
        assert set(train.tolist()) | set(test.tolist()) == set(np.flatnonzero(pool.meta["region"] == region).tolist())
        assert len(test) >= 1 and (np.diff(day[train]) >= 0).all()
    # region 326 at round 0 holds days 0..3 (2 rounds a day, 8-round window); by round 20 days 6..9 are empty,
    # so the window is widened to its latest sample before then (min_window = 1)
    first = trace.train_indices(trace.segments_at(0)[0])
    assert set(day[first]) <= {0, 1, 2, 3}
    assert day[trace.train_indices(trace.segments_at(20)[0])].max() <= 12
