"""The scorecard of whole runs on a hand-built trace whose matrix, prequential accuracy and detections are known by construction.

Every label is 0; a drift event swaps labels 0 and 1 for its clients (so their labels become 1).
Clients 0 and 1 drift at round 4, clients 2 and 3 at round 8: segments [0, 4), [4, 8), [8, 12).
``ScriptedMoves`` holds a model that always predicts 0 and one that always predicts 1, so a
client's accuracy on a segment is 1 when its model predicts that segment's label, else 0.
"""

import json

import numpy as np
import pytest

from driftbench.data.pool import Pool
from driftbench.methods.base import IMPLEMENTATIONS
from driftbench.methods.catalog import MethodSpec
from driftbench.record.schema import read_summary
from driftbench.scheduler import RunSpec, run
from driftbench.traces.model import TraceBuilder
from driftbench.train_config import TrainConfig
from tests.methods.fakes import MoveScript, ScriptedMoves

SWAP = [1, 0, 2]
SCRIPTS = {
    "late": ((6, (0, 1)), (10, (2, 3))),  # each drifted pair moves to model 1 two rounds after its event
    "never": (),
    "spurious": ((2, (0,)),),  # client 0 moves before any drift
}


def hand_trace(drift: bool):
    pool = Pool("zeros", np.zeros((24, 1, 2, 2), np.float32), np.zeros(24, np.int64), 3)
    b = TraceBuilder(num_clients=4, rounds=12, num_classes=3)
    for c in range(4):
        b.samples(c, train=np.arange(4) + 6 * c, test=np.arange(4, 6) + 6 * c)
        b.segment(c, 0)
        if drift:
            b.segment(c, 4 if c < 2 else 8, label_map=SWAP)
    if drift:
        b.event(4, [0, 1], "label")
        b.event(8, [2, 3], "label")
    return b.build({"name": "hand", "generator": "hand"}, pool.y), pool


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setitem(IMPLEMENTATIONS, "scripted-moves", ScriptedMoves)


def run_script(tmp_path, name, drift=True):
    trace, pool = hand_trace(drift)
    method = MethodSpec(name, "scripted-moves", "", "", MoveScript(moves=SCRIPTS[name]))
    train = TrainConfig(participants=4, local_steps=1, batch_size=2)
    summary = run(RunSpec(trace, pool, train, method, seed=0, device="cpu", out=tmp_path, quiet=True))
    assert read_summary(tmp_path / "hand" / name / "seed0" / "summary.json") == summary
    return summary.scorecard


def test_a_late_reaction_scores_its_delay_and_the_matrix_it_leaves(tmp_path, scripted):
    card = run_script(tmp_path, "late")
    assert card.segment_starts == (0, 4, 8)
    assert card.accuracy_matrix == ((1.0, 0.5, 0.0), (0.5, 1.0, 0.5), (0.0, 0.5, 1.0))
    assert card.in_segment_accuracy == 1.0
    assert (card.next_segment_accuracy, card.next_segment_worst) == (0.5, 0.5)
    assert card.backward_transfer == pytest.approx(((0.0 - 1.0) + (0.5 - 1.0)) / 2)
    assert card.forgetting == pytest.approx(((1.0 - 0.0) + (1.0 - 0.5)) / 2)
    # rounds 0-3: 1; 4-5: half the clients wrong; 6-7: 1; 8-9: half wrong; 10-11: 1
    assert card.prequential_accuracy == pytest.approx(10 / 12)
    assert card.prequential_after_events == (0.75, 0.75)
    detection = card.detection
    assert [(e.round, e.delay, e.clients_detected, e.client_delay_mean) for e in detection.events] == [
        (4, 2, 2, 2.0),
        (8, 2, 2, 2.0),
    ]
    assert (detection.detected, detection.missed, detection.false_alarms, detection.delay_mean) == (2, 0, 0, 2.0)


def test_a_method_that_never_reacts_misses_every_event(tmp_path, scripted):
    card = run_script(tmp_path, "never")
    assert card.accuracy_matrix == ((1.0, 0.5, 0.0),) * 3
    assert card.in_segment_accuracy == pytest.approx(0.5)
    assert card.backward_transfer == 0.0 and card.forgetting == 0.0
    detection = card.detection
    assert (detection.reactions, detection.detected, detection.missed, detection.false_alarms) == (0, 0, 2, 0)
    assert detection.delay_mean is None and detection.clients_missed == 4


def test_a_reaction_without_drift_is_a_false_alarm(tmp_path, scripted):
    card = run_script(tmp_path, "spurious")
    # client 0 predicts 1 from round 2 on: right only where its label is 1
    assert card.accuracy_matrix == ((0.75, 0.75, 0.25),) * 3
    detection = card.detection
    assert (detection.reactions, detection.detected, detection.missed, detection.false_alarms) == (1, 0, 2, 1)


def test_a_trace_without_drift_gives_one_segment_and_no_events(tmp_path, scripted):
    card = run_script(tmp_path, "late", drift=False)
    assert card.segment_starts == (0,) and len(card.accuracy_matrix) == 1
    # from round 10 on every client predicts 1 on its all-0 labels
    assert card.accuracy_matrix == ((0.0,),)
    assert card.backward_transfer is None and card.next_segment_accuracy is None
    assert card.detection.outcome == "no_events" and card.detection.false_alarms == 2
    text = (tmp_path / "hand" / "late" / "seed0" / "summary.json").read_text()
    assert "NaN" not in text and json.loads(text)["scorecard"]["detection"]["outcome"] == "no_events"
