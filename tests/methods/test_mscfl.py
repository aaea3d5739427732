"""MSCFL: COUNTTARGET (Algorithm 2), the Hamming consistency check, pruning, masked aggregation, phases, end to end."""

import json

import numpy as np
import pytest
import torch

from driftbench.cli import main
from driftbench.errors import ConfigError
from driftbench.methods.catalog import load_method
from driftbench.methods.mscfl import (
    count_target,
    hamming_distances,
    inconsistent,
    magnitude_masks,
    mask_bits,
    masked_average,
    structure_clusters,
    structure_similarity,
)
from driftbench.methods.queries import Overhead
from driftbench.methods.rounds import RunContext, TrainResult
from driftbench.methods.server_work import counting
from driftbench.train_config import TrainConfig
from tests.methods.fakes import ScriptedClients, events, queries


def test_count_target_counts_agreeing_target_positions_over_ratio_times_length():
    a = np.array([0, 0, 1, 1, 1, 0, 1, 1, 1, 1])
    b = np.array([0, 1, 0, 1, 1, 0, 1, 1, 1, 1])
    assert count_target(a, b, 0.3, 0) == pytest.approx(2 / 3)  # positions 0 and 5 pruned in both
    assert count_target(a, b, 0.7, 1) == pytest.approx(6 / 7)  # positions 3, 4, 6-9 retained in both


def test_structure_similarity_uses_the_side_of_the_smallest_ratio():
    masks = np.array(
        [
            [0, 0, 1, 1, 1, 1, 1, 1, 1, 1],  # pr 0.2
            [0, 1, 0, 1, 1, 1, 1, 1, 1, 1],  # pr 0.2
            [1, 1, 1, 0, 0, 0, 0, 0, 0, 0],  # pr 0.7, rr 0.3
            [1, 1, 0, 1, 0, 0, 0, 0, 0, 0],  # pr 0.7, rr 0.3
        ]
    )
    sim = structure_similarity(masks)
    assert sim[0, 1] == pytest.approx(count_target(masks[0], masks[1], 0.2, 0)) == pytest.approx(0.5)
    assert sim[2, 3] == pytest.approx(count_target(masks[2], masks[3], 0.3, 1)) == pytest.approx(2 / 3)
    # pr 0.2 vs rr 0.3: the pruned side; client 0 and 2 prune disjoint positions
    assert sim[0, 2] == pytest.approx(count_target(masks[0], masks[2], 0.2, 0)) == 0.0
    assert np.allclose(sim, sim.T) and np.allclose(np.diag(sim), 1.0)


def test_structure_clusters_recover_planted_mask_groups():
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1, 2], [5, 4, 6])
    prototypes = rng.random((3, 400)) > 0.4
    flips = rng.random((len(truth), 400)) < 0.05
    masks = (prototypes[truth] ^ flips).astype(np.float32)
    for clusters in (0, 3):  # K by silhouette, or fixed
        labels = structure_clusters(structure_similarity(masks), clusters)
        assert len(np.unique(labels)) == 3 and all(len(np.unique(labels[truth == g])) == 1 for g in range(3))


def test_hamming_distance_of_packed_masks_and_the_consistency_rule():
    a = {"w": torch.tensor([[1.0, 0, 1, 1, 0, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]])}
    b = {"w": torch.tensor([[1.0, 1, 1, 1, 0, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]])}
    assert hamming_distances(mask_bits(a, ("w",)), mask_bits(b, ("w",))).tolist() == [2, 0]
    previous, current = np.array([-1, 10, 10, 0, 0]), np.array([50, 11, 12, 0, 1])
    assert inconsistent(previous, current, 1.1).tolist() == [False, False, True, False, True]


def test_magnitude_masks_prune_the_smallest_entries_of_each_row():
    w = torch.tensor([[[0.5, -0.1], [2.0, 0.05]], [[-3.0, 0.2], [0.1, 1.0]]])
    with counting() as server:
        masks = magnitude_masks({"w": w, "b": torch.ones(2, 2)}, ("w",), np.array([0.5, 0.25]))
    assert server.flops == 0  # the clients prune (Phase.prune): none of it is the server's work
    assert set(masks) == {"w"}
    assert masks["w"].tolist() == [[[1, 0], [1, 0]], [[1, 1], [0, 1]]]


def test_channel_pruning_drops_a_conv_layers_weakest_filters_whole_and_dense_entries_by_magnitude():
    kernel = torch.ones(2, 4, 1, 2, 2) * torch.tensor([[3.0, 0.5, 2.0, 1.0], [0.1, 0.2, 0.3, 0.4]]).view(2, 4, 1, 1, 1)
    kernel[0, 0, 0, 0, 0] = -9.0
    kernel[0, 3, 0, 0, 0] = 2.5  # a large entry in a weak filter: unstructured pruning keeps it, channel pruning does not
    dense = torch.tensor([[[0.5, -0.1], [2.0, 0.05]], [[-3.0, 0.2], [0.1, 1.0]]])
    models = {"conv": kernel, "fc": dense}
    masks = magnitude_masks(models, ("conv", "fc"), np.array([0.5, 0.25]), channels=True)
    assert masks["conv"].shape == kernel.shape
    assert masks["conv"].amax((2, 3, 4)).tolist() == [[1, 0, 1, 0], [0, 1, 1, 1]]
    assert bool((masks["conv"] == masks["conv"].amax((2, 3, 4), keepdim=True)).all())  # whole channels
    assert masks["fc"].tolist() == magnitude_masks(models, ("fc",), np.array([0.5, 0.25]))["fc"].tolist()
    assert magnitude_masks(models, ("conv",), np.array([0.5, 0.25]))["conv"][0, 3, 0, 0, 0] == 1


def test_masked_average_uses_only_participants_that_retained_each_entry():
    bank = {"w": torch.tensor([[9.0, 9.0, 9.0], [7.0, 7.0, 7.0]]), "b": torch.tensor([[0.0], [5.0]])}
    trained = {"w": torch.tensor([[1.0, 2.0, 0.0], [3.0, 0.0, 0.0], [4.0, 4.0, 4.0]]), "b": torch.tensor([[1.0], [4.0], [8.0]])}
    masks = {"w": torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])}
    out = masked_average(bank, trained, masks, np.array([0, 0, 1]), np.array([1.0, 3.0, 2.0]))
    # cluster 0: entry 0 by both (weights 1 and 3), entry 1 by the first only, entry 2 by none (kept)
    assert out["w"].tolist() == [[(1 * 1 + 3 * 3) / 4, 2.0, 9.0], [4.0, 4.0, 4.0]]
    assert out["b"].tolist() == [[(1 + 12) / 4], [8.0]]  # unmasked parameters: plain weighted mean


HEAD = {"head.weight": torch.zeros(2, 4), "head.bias": torch.zeros(2)}
STRONG = {0: [1.0, 1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 0.1], 1: [0.1, 0.1, 0.1, 0.1, 1.0, 1.0, 1.0, 1.0]}


def client_round(method, rnd, groups, overhead):
    """Run one client round with hand-made pre-trained models whose magnitudes follow ``groups``; returns the masks."""
    side = ScriptedClients(inputs=np.zeros((4, 40, 1)))
    plan = method.plan(rnd, queries(side, overhead=overhead), np.random.default_rng(rnd))
    pre, train = plan.phases
    assert (pre.epochs, pre.prune, train.epochs) == (10.0 if rnd == 0 else 1.0, None, 3.0) and plan.upload_floats == 1
    assert plan.models_downloaded == plan.models_uploaded == 1
    pretrained = {"head.weight": torch.tensor([STRONG[g] for g in groups]).reshape(4, 2, 4), "head.bias": torch.ones(4, 2)}
    masks = train.prune(pretrained)
    trained = {n: p * masks.get(n, 1) + 1.0 for n, p in pretrained.items()}
    trained["head.weight"] = pretrained["head.weight"] * masks["head.weight"] * (1 + torch.arange(1.0, 5.0).view(4, 1, 1))
    method.aggregate(rnd, TrainResult(plan, trained, np.ones(4), np.zeros(4), masks=masks))
    return plan, masks


@pytest.mark.parametrize("migrate", [True, False])
def test_mscfl_clusters_by_masks_and_reclusters_only_when_masks_change_faster_than_tau(migrate):
    method = load_method("mscfl", {"prune_std": "0", "prune_mean": "0.5", "migrate": str(migrate).lower()}).create()
    method.setup(RunContext(4, 2, HEAD, TrainConfig(participants=4), seed=0, classifier="head"))
    overhead = Overhead()
    plan, masks = client_round(method, 0, [0, 1, 0, 1], overhead)
    assert plan.participants.tolist() == [0, 1, 2, 3] and masks["head.weight"][0].flatten().tolist() == [1] * 4 + [0] * 4
    assert "head.bias" not in masks  # biases are never pruned
    assert method.assignment.tolist() in ([0, 1, 0, 1], [1, 0, 1, 0]) and method.num_models == 2
    a = method.assignment[0]
    # clients 0 and 2 (1 x 2 and 1 x 4 on their retained half) average there; their pruned half keeps the initial 0
    assert method.models["head.weight"][a].flatten().tolist() == [3.0] * 4 + [0.0] * 4
    assert method.models["head.bias"][a].tolist() == [2.0, 2.0]
    assert overhead.upload_bytes == 0  # no client query: the mask upload goes through Plan.upload_floats
    client_round(method, 1, [0, 1, 0, 1], overhead)  # first masks after the clustering: no distance yet
    assert method.hamming.tolist() == [-1, -1, -1, -1]
    client_round(method, 2, [0, 1, 0, 1], overhead)  # same masks: H = 0
    assert method.hamming.tolist() == [0, 0, 0, 0] and method.assignment[0] == a
    client_round(method, 3, [1, 1, 0, 1], overhead)  # client 0's mask flips: H = 8 > 1.1 x 0
    assert method.hamming.tolist() == ([-1] * 4 if migrate else [8, 0, 0, 0])  # a clustering restarts the history
    moved = method.assignment[0] == method.assignment[1]
    assert moved == migrate and len(np.unique(method.assignment)) == 2
    assert events(method) == [("recluster_global", "0 1 2 3", 2.0)] * (2 if migrate else 1)


def test_bad_parameters_name_the_field():
    with pytest.raises(ConfigError, match="prune_min"):
        load_method("mscfl", {"prune_min": "0.8"})
    with pytest.raises(ConfigError, match="tau"):
        load_method("mscfl", {"tau": "0"})
    with pytest.raises(ConfigError, match="clusters"):
        load_method("mscfl", {"clusters": "x"})
    with pytest.raises(ConfigError, match="pruning must be one of"):
        load_method("mscfl", {"pruning": "random"})


MASK_FLOATS = -(-(64 * 200 + 200 * 200 + 200 * 10) // 32)  # one bit per weight of the MLP on 8x8 digits


@pytest.mark.parametrize("migrate", ["true", "false"])
def test_mscfl_runs_on_label_swap_through_the_cli(tmp_path, capsys, migrate):
    args = [
        "run",
        "--trace",
        "label-swap",
        "--method",
        "mscfl",
        "--out",
        str(tmp_path),
        "--rounds",
        "6",
        "--set",
        "clients=12",
        "--set",
        "train.participants=6",
        "--set",
        "drift_every=3",
        "--set",
        f"method.migrate={migrate}",
        "--quiet",
    ]
    assert main(args) == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "label-swap/mscfl/seed0/summary.json").read_text())
    assert summary["status"] == "ok" and summary["n_clusters_final"] >= 2
    # six client rounds of 12, then 6 participants: each uploads its mask
    assert summary["overhead"]["extra_upload_bytes"] == 4 * (12 + 5 * 6) * MASK_FLOATS
