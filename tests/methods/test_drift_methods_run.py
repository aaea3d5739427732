"""Every drift-aware method runs end to end through ``driftbench run`` on tiny label-swap and static traces, counting overhead."""

import json

import pytest

from driftbench.cli import main
from driftbench.methods.queries import FLOAT_BYTES
from driftbench.traces.catalog import resolve

METHODS = ("fielding", "ifca", "flexcfl", "pacfl", "cfl", "auxo", "feddrift")
TINY = [
    "--rounds",
    "6",
    "--set",
    "clients=12",
    "--set",
    "train_samples=12",
    "--set",
    "test_samples=6",
    "--set",
    "train.participants=4",
    "--set",
    "train.local_steps=2",
]
MODEL_BYTES = FLOAT_BYTES * (64 * 200 + 200 + 200 * 200 + 200 + 200 * 10 + 10)  # the MLP on 8x8 digits
SERVER_TIME = {"cluster_seconds": 0, "server_wall_seconds": 0, "client_query_seconds": 0}  # blanked: traffic compared


@pytest.mark.parametrize("trace", ["label-swap", "static"])
def test_every_method_runs_and_reports_overhead(trace, tmp_path):
    extra = (
        ["--set", "drift_every=2"] if trace == "label-swap" else ["--set", "source=digits"]
    )  # byte counts below assume 8x8 digits
    assert main(["run", "--trace", trace, "--method", ",".join(METHODS), "--out", str(tmp_path), "--quiet", *TINY, *extra]) == 0
    summaries = {m: json.loads((tmp_path / trace / m / "seed0/summary.json").read_text()) for m in METHODS}
    assert all(s["status"] == "ok" and s["overhead"]["cluster_seconds"] > 0 for s in summaries.values())

    sets = dict(item.split("=") for item in (TINY + extra)[3::2]) | {"rounds": "6"}
    t = resolve(trace, sets).trace
    changed = sum(len(t.changed_at(r)) for r in range(1, t.rounds))
    classes, clients, rounds, participants = t.num_classes, t.num_clients, t.rounds, 4
    # FIELDING (label): every client's histogram at round 0, each drifted client's later; nothing down, no passes
    assert summaries["fielding"]["overhead"] | SERVER_TIME == {
        **SERVER_TIME,
        "extra_upload_bytes": FLOAT_BYTES * classes * (clients + changed),
        "extra_download_bytes": 0,
        "client_extra_passes": 0,
    }
    # IFCA (K = 4): per participant and round, 3 extra models down, 4 losses up, 4 passes
    assert summaries["ifca"]["overhead"] | SERVER_TIME == {
        **SERVER_TIME,
        "extra_upload_bytes": rounds * participants * 4 * FLOAT_BYTES,
        "extra_download_bytes": rounds * participants * 3 * MODEL_BYTES,
        "client_extra_passes": rounds * participants * 4,
    }
    # PACFL (p = 3): every client's 3 principal vectors of 64 pixels, once
    assert summaries["pacfl"]["overhead"]["extra_upload_bytes"] == clients * 64 * 3 * FLOAT_BYTES
    # Auxo learns from training outputs only
    assert summaries["auxo"]["overhead"] | SERVER_TIME == {
        **SERVER_TIME,
        "extra_upload_bytes": 0,
        "extra_download_bytes": 0,
        "client_extra_passes": 0,
    }
    # FedDrift: every client evaluates every model every round (at least one model per round)
    assert summaries["feddrift"]["overhead"]["client_extra_passes"] >= clients * rounds
    assert (
        summaries["feddrift"]["overhead"]["extra_download_bytes"]
        == summaries["feddrift"]["overhead"]["client_extra_passes"] * MODEL_BYTES
    )
