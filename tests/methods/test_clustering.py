"""Torch distance kernels against scipy, the exact width check, k-means on span coordinates, remixing, sampling, flat updates."""

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist, jensenshannon
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from driftbench.methods.clustering import (
    GPU_MIN_ENTRIES,
    SEEDING_SAMPLE,
    any_cluster_wider_than,
    as_kernel_tensor,
    flat_updates,
    independent_inits,
    kernel_device,
    kmeans,
    kmeans_of_few,
    lloyd,
    pairwise_distances,
    per_cluster_participants,
    remix_models,
    span_coordinates,
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


def planted_unit_rows(seed: int, n: int = 20, dim: int = 3000) -> np.ndarray:
    """n unit rows around 1 to 6 random directions, at one of four spreads (Auxo's participants' unit updates)."""
    rng = np.random.default_rng(seed)
    directions = rng.standard_normal((int(rng.integers(1, 7)), dim))
    spread = (2.0, 1.0, 0.5, 0.2)[seed % 4]
    return unit_vectors(directions[rng.integers(0, len(directions), n)] + spread * rng.standard_normal((n, dim)))


@pytest.mark.parametrize("block", range(4))
def test_kmeans_of_few_gives_the_labels_and_iterations_of_kmeans_on_all_coordinates(block):
    for seed in range(block * 25, block * 25 + 25):
        points = planted_unit_rows(seed)
        if seed % 5 == 0:
            points[3] = points[7]  # equal rows: an exact tie in the full space must stay one
        full = KMeans(n_clusters=4, n_init=1, random_state=seed % 3).fit(points)
        few = kmeans_of_few(points, 4, seed % 3)
        np.testing.assert_array_equal(few.labels_, full.labels_, err_msg=f"seed {seed}")
        assert few.n_iter_ == full.n_iter_, f"seed {seed}"
        scaled = kmeans_of_few(points * np.arange(1.0, 21.0)[:, None], 4, seed % 3, unit=True)  # Auxo's raw updates
        np.testing.assert_array_equal(scaled.labels_, full.labels_, err_msg=f"seed {seed}, unit")
        assert scaled.n_iter_ == full.n_iter_, f"seed {seed}, unit"


def test_span_coordinates_keep_distances_and_equal_rows_stay_equal():
    points = planted_unit_rows(1, n=12, dim=500)
    points[5] = points[2]
    points[9] = points[2]
    coordinates = span_coordinates(points)
    assert coordinates.shape == (12, 12)
    np.testing.assert_allclose(cdist(coordinates, coordinates), cdist(points, points), atol=1e-12)
    np.testing.assert_array_equal(coordinates[5], coordinates[2])
    np.testing.assert_array_equal(coordinates[9], coordinates[2])
    lengths = np.arange(1.0, 13.0)
    lengths[[5, 9]] = lengths[2]
    raw = points * lengths[:, None]  # Auxo's raw updates: rows 2, 5 and 9 equal
    unit = span_coordinates(raw, unit=True)
    np.testing.assert_allclose(cdist(unit, unit), cdist(points, points), atol=1e-12)
    np.testing.assert_array_equal(unit[5], unit[2])
    np.testing.assert_array_equal(unit[9], unit[2])


class ThreadedGram(np.ndarray):
    """Rows whose Gram matrix puts equal rows' squared norms ulps apart, as a many-threaded BLAS did on a 16-core host."""

    def __matmul__(self, other):
        gram = np.asarray(self) @ np.asarray(other)
        gram[9, 9] *= 1 + 4 * np.finfo(float).eps
        return gram


def test_equal_raw_rows_tie_when_their_gram_norms_differ_by_rounding():
    """Fails when the tie rule compares the rows after scaling them by their Gram norms (left 2.3e-8 apart on that host)."""
    points = planted_unit_rows(1, n=12, dim=500)
    lengths = np.arange(1.0, 13.0)
    points[9], lengths[9] = points[2], lengths[2]
    unit = span_coordinates((points * lengths[:, None]).view(ThreadedGram), unit=True)
    np.testing.assert_array_equal(unit[9], unit[2])
    np.testing.assert_allclose(cdist(unit, unit), cdist(points, points), atol=1e-12)


def test_flat_updates_are_the_float32_differences_widened():
    gen = torch.Generator().manual_seed(0)
    bank = {"w": torch.randn(3, 4, 5, generator=gen), "b": torch.randn(3, 4, generator=gen)}
    trained = {"w": torch.randn(6, 4, 5, generator=gen), "b": torch.randn(6, 4, generator=gen)}
    start = np.array([2, 0, 0, 1, 2, 1])
    rows = flat_updates(trained, bank, start)
    assert rows.dtype == np.float64 and rows.shape == (6, 24)
    for i, s in enumerate(start):
        expected = torch.cat([(trained[n][i] - bank[n][s]).reshape(-1) for n in ("w", "b")]).double().numpy()
        np.testing.assert_array_equal(rows[i], expected)
