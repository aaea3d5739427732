"""PACFL: principal angles (0 for identical subspaces, 90 for orthogonal), threshold clustering, one-shot upload."""

import numpy as np
import pytest
import torch
from scipy.linalg import subspace_angles

from driftbench.methods.catalog import load_method
from driftbench.methods.clustering import smallest_principal_angles
from driftbench.methods.pacfl import angle_clusters
from driftbench.methods.queries import Overhead
from tests.methods.fakes import ScriptedClients, context, events, queries


def test_identical_subspaces_are_0_and_orthogonal_ones_90_degrees():
    eye = torch.eye(6, dtype=torch.float64)
    bases = torch.stack([eye[:, :2], eye[:, [1, 0]], eye[:, 2:4]])
    angles = smallest_principal_angles(bases).numpy()
    assert angles[0, 1] == pytest.approx(0, abs=1e-5) and angles[0, 0] == pytest.approx(0, abs=1e-5)
    assert angles[0, 2] == pytest.approx(90) and angles[2, 1] == pytest.approx(90)


def test_angles_match_scipy_on_random_subspaces():
    rng = np.random.default_rng(0)
    bases = np.stack([np.linalg.qr(rng.normal(size=(8, 3)))[0] for _ in range(4)])
    ours = smallest_principal_angles(torch.as_tensor(bases)).numpy()
    expected = [[np.degrees(subspace_angles(a, b)).min() for b in bases] for a in bases]
    np.testing.assert_allclose(ours, expected, atol=1e-4)


def test_threshold_clustering_of_angles():
    angles = np.array([[0, 5, 80, 85], [5, 0, 82, 88], [80, 82, 0, 4], [85, 88, 4, 0]], dtype=float)
    labels = angle_clusters(angles, threshold=15)
    assert labels[0] == labels[1] != labels[2] == labels[3]
    assert len(set(angle_clusters(angles, threshold=90).tolist())) == 1


def test_one_shot_clustering_by_data_subspaces_and_its_upload():
    rng = np.random.default_rng(0)
    directions = np.linalg.qr(rng.normal(size=(16, 4)))[0].T  # 4 orthonormal 16-pixel patterns
    inputs = [
        (rng.normal(size=(12, 1)) * directions[2 * (c // 2)] + 0.01 * rng.normal(size=(12, 16))).reshape(12, 1, 4, 4)
        for c in range(4)
    ]  # clients 0, 1 on pattern 0; clients 2, 3 on pattern 2
    method = load_method("pacfl", {"p": "1"}).create()
    method.setup(context(4, participants=2))
    overhead = Overhead()
    method.plan(0, queries(ScriptedClients(inputs=inputs), overhead=overhead), np.random.default_rng(0))
    a = method.assignment
    assert a[0] == a[1] != a[2] == a[3] and method.num_models == 2
    assert (overhead.upload_bytes, overhead.download_bytes, overhead.client_extra_passes) == (4 * 16 * 1 * 4, 0, 0)
    method.plan(1, queries(ScriptedClients(inputs=inputs[::-1]), changed=[0, 1, 2, 3]), np.random.default_rng(1))
    assert method.assignment.tolist() == a.tolist()  # one shot
    assert events(method) == [("recluster_global", "0 1 2 3", 2.0)]
