"""Trace model and trace files: segments, windows, events, hashing, save/load without pickle."""

import numpy as np
import pytest

from driftbench.errors import TraceFileError
from driftbench.traces.io import load_trace, save_trace
from driftbench.traces.model import TraceBuilder


def small_trace():
    """Two clients over 10 rounds; client 1 swaps labels 0<->1 and slides its window at round 4."""
    pool_y = np.array([0, 0, 1, 1, 2, 2, 0, 1, 2, 0])
    b = TraceBuilder(num_clients=2, rounds=10, num_classes=3)
    b.samples(0, train=[0, 2, 4], test=[6])
    b.samples(1, train=[1, 3, 5, 9], test=[7, 8])
    b.segment(0, 0, group=0)
    b.segment(1, 0, train=(0, 2), group=0)
    b.segment(1, 4, train=(1, 4), label_map=[1, 0, 2], rotation=180, group=1)
    b.event(4, [1], "concept")
    return b.build({"name": "tiny", "generator": "hand"}, pool_y), pool_y


def test_segments_windows_and_transforms_follow_the_rounds():
    trace, _ = small_trace()
    assert trace.segments_at(0).tolist() == [0, 1]
    assert trace.segments_at(3).tolist() == [0, 1]
    assert trace.segments_at(4).tolist() == [0, 2]
    assert trace.segments_at(9).tolist() == [0, 2]
    assert trace.train_indices(1).tolist() == [1, 3]
    assert trace.train_indices(2).tolist() == [3, 5, 9]
    assert trace.test_indices(2).tolist() == [7, 8]
    assert trace.label_maps[trace.seg_map[2]].tolist() == [1, 0, 2]
    assert trace.seg_rotation[2] == 180
    assert trace.groups_at(3).tolist() == [0, 0] and trace.groups_at(4).tolist() == [0, 1]
    assert trace.changed_at(0).tolist() == [0, 1]
    assert trace.changed_at(4).tolist() == [1]
    assert trace.changed_at(5).tolist() == []


def test_event_magnitude_is_the_mean_l1_shift_of_label_distributions():
    trace, _ = small_trace()
    (event,) = trace.events()
    # before: labels of [1, 3] = [0, 1] -> (.5, .5, 0); after: labels of [3, 5, 9] = [1, 2, 0]
    # mapped by [1, 0, 2] -> [0, 2, 1] -> (1/3, 1/3, 1/3); L1 = 1/6 + 1/6 + 1/3 = 2/3
    assert event.round == 4 and event.clients.tolist() == [1] and event.kind == "concept"
    assert event.magnitude == pytest.approx(2 / 3)


def test_save_load_round_trip_keeps_content_and_hash(tmp_path):
    trace, _ = small_trace()
    path = tmp_path / "t.trace"
    digest = save_trace(trace, path, {"train": {"lr": 0.1}, "methods": ["fedavg"]})
    loaded, defaults = load_trace(path)
    assert loaded.content_hash() == digest == trace.content_hash()
    assert defaults == {"train": {"lr": 0.1}, "methods": ["fedavg"]}
    for name, arr in trace.arrays().items():
        assert np.array_equal(arr, loaded.arrays()[name]), name
    assert loaded.info == trace.info


def test_hash_changes_when_any_content_changes():
    trace, _ = small_trace()
    base = trace.content_hash()
    for name, arr in trace.arrays().items():
        if arr.size == 0:
            continue
        changed = arr.copy()
        changed.flat[0] += 1
        assert type(trace)(trace.info, **{**trace.arrays(), name: changed}).content_hash() != base, name
    assert type(trace)({**trace.info, "generator": "other"}, **trace.arrays()).content_hash() != base
    assert type(trace)({**trace.info, "name": "renamed"}, **trace.arrays()).content_hash() == base  # a label


def test_corrupted_truncated_and_edited_files_are_refused(tmp_path):
    trace, _ = small_trace()
    path = tmp_path / "t.trace"
    save_trace(trace, path, {})
    raw = path.read_bytes()
    (tmp_path / "cut.trace").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(TraceFileError, match="cut.trace"):
        load_trace(tmp_path / "cut.trace")
    (tmp_path / "junk.trace").write_bytes(b"not a zip file at all")
    with pytest.raises(TraceFileError, match="junk.trace"):
        load_trace(tmp_path / "junk.trace")
    with pytest.raises(TraceFileError, match="no such trace file"):
        load_trace(tmp_path / "missing.trace")
    arrays = dict(np.load(path, allow_pickle=False))
    arrays["seg_group"] = arrays["seg_group"] + 1
    with open(tmp_path / "edited.trace", "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(TraceFileError, match="hash mismatch"):
        load_trace(tmp_path / "edited.trace")


def test_newer_format_version_is_refused(tmp_path):
    import json

    trace, _ = small_trace()
    path = tmp_path / "t.trace"
    save_trace(trace, path, {})
    arrays = dict(np.load(path, allow_pickle=False))
    header = json.loads(arrays["header"].tobytes())
    header["format"] = 99
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(tmp_path / "new.trace", "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(TraceFileError, match="format 99"):
        load_trace(tmp_path / "new.trace")
