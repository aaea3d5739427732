"""Torch distance kernels against scipy, the exact width check, bank remixing and per-cluster sampling."""

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist, jensenshannon
from sklearn.metrics import adjusted_rand_score

from driftbench.methods.clustering import (
    GPU_MIN_ENTRIES,
    SEEDING_SAMPLE,
    any_cluster_wider_than,
    as_kernel_tensor,
    independent_inits,
    kernel_device,
    kmeans,
    lloyd,
    pairwise_distances,
    per_cluster_participants,
    remix_models,
    unit_vectors,
)


@pytest.mark.parametrize("metric", ["l1", "js", "l2"])
def test_kernels_match_scipy(metric):
    rng = np.random.default_rng(0)
    a, b = rng.dirichlet(np.ones(6), 5), rng.dirichlet(np.ones(6), 4)
    ours = pairwise_distances(torch.as_tensor(a), torch.as_tensor(b), metric).numpy()
    expected = {
        "l1": cdist(a, b, "cityblock"),
        "l2": cdist(a, b),
        "js": np.array([[jensenshannon(x, y, base=2) for y in b] for x in a]),
    }[metric]
    np.testing.assert_allclose(ours, expected, atol=1e-6)


@pytest.mark.parametrize("metric", ["l1", "js"])
def test_width_check_agrees_with_brute_force(metric):
    rng = np.random.default_rng(1)
    points = rng.dirichlet(np.full(5, 0.5), 40)
    labels = rng.integers(0, 3, 40)
    widest = max(
        cdist(
            points[labels == c], points[labels == c], "cityblock" if metric == "l1" else lambda x, y: jensenshannon(x, y, base=2)
        ).max()
        for c in range(3)
    )
    for threshold in (0.5 * widest, widest - 1e-4, widest + 1e-4, 2 * widest):
        assert any_cluster_wider_than(torch.as_tensor(points), labels, metric, threshold) == (widest > threshold)


def test_remix_averages_members_old_models():
    bank = {"w": torch.tensor([[0.0], [10.0], [20.0]])}
    out = remix_models(bank, old=np.array([0, 0, 1, 2, 2]), new=np.array([0, 1, 1, 1, 0]))
    # new 0 = {client 0 (0), client 4 (20)} -> 10; new 1 = {client 1 (0), client 2 (10), client 3 (20)} -> 10
    assert out["w"][:, 0].tolist() == [10.0, 10.0]
    out = remix_models(bank, old=np.array([0, 1, 1]), new=np.array([0, 0, 1]))
    assert out["w"][:, 0].tolist() == [5.0, 10.0]


def test_independent_inits_shuffle_entries_deterministically():
    params = {"w": torch.arange(12.0).reshape(3, 4)}
    bank = independent_inits(params, 3, seed=0)
    assert bank["w"].shape == (3, 3, 4) and torch.equal(bank["w"][0], params["w"])
    assert not torch.equal(bank["w"][1], bank["w"][2])
    assert all(sorted(bank["w"][k].flatten().tolist()) == list(range(12)) for k in range(3))
    assert torch.equal(independent_inits(params, 3, seed=0)["w"], bank["w"])


def test_per_cluster_participants_draws_m_over_k_from_each():
    assignment = np.array([0] * 10 + [2] * 10 + [5] * 2)
    picked = per_cluster_participants(np.random.default_rng(0), assignment, 7)
    # K = 3 non-empty clusters, 7 // 3 = 2 each, the first 7 % 3 = 1 cluster gets one more
    assert np.bincount(assignment[picked], minlength=6).tolist() == [3, 0, 2, 0, 0, 2]
    assert picked.tolist() == sorted(set(picked.tolist()))


def test_large_kmeans_runs_lloyd_on_the_kernels_and_finds_planted_blobs():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, SEEDING_SAMPLE + 2000)
    points = (rng.normal(size=(4, 6)) * 10)[truth] + rng.normal(size=(len(truth), 6))
    labels = kmeans(points.astype(np.float32), 4, seed=0)
    assert adjusted_rand_score(truth, labels) == 1.0


def test_lloyd_moves_centers_to_member_means():
    points = torch.tensor([[0.0, 0.0], [0.0, 2.0], [10.0, 0.0], [10.0, 2.0]])
    labels = lloyd(points, torch.tensor([[1.0, 1.0], [9.0, 9.0]]))
    assert labels.tolist() == [0, 0, 1, 1]


def test_kernels_go_to_the_gpu_only_when_their_input_is_large(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert kernel_device(GPU_MIN_ENTRIES - 1).type == "cpu" and kernel_device(GPU_MIN_ENTRIES).type == "cuda"
    assert as_kernel_tensor(np.ones((5078, 100))).device.type == "cpu"  # FIELDING's paper-scale label distributions
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert kernel_device(GPU_MIN_ENTRIES).type == "cpu"
    assert as_kernel_tensor(np.ones((2, 3)), torch.device("cpu")).dtype == torch.float32


def test_unit_vectors_have_unit_norm_and_zero_rows_stay_zero():
    vectors = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [-2.0, 0.0, 0.0]])
    unit = unit_vectors(vectors)
    np.testing.assert_array_equal(unit[0], [0.6, 0.8, 0.0])
    np.testing.assert_array_equal(unit[1], np.zeros(3))
    assert unit[2, 0] == -1.0
