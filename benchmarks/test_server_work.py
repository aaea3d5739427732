"""A method's server work against the plain library call it replaces, timed interleaved in the same process.

Run: pytest benchmarks/test_server_work.py   (the ratio is checked against thresholds.json)
"""

import numpy as np
from sklearn.cluster import KMeans

from driftbench.methods.clustering import kmeans_of_few, unit_vectors
from driftbench.runner import native_threads

PARTICIPANTS, PARAMETERS, COHORTS = 20, 90_860, 4  # the main job: 20 participants' updates of the 3x8x8 MLP, K = 4


def test_auxo_kmeans_on_span_coordinates_vs_all_coordinates(speed_ratio):
    rng = np.random.default_rng(0)
    points = unit_vectors(rng.standard_normal((COHORTS, PARAMETERS))[rng.integers(0, COHORTS, PARTICIPANTS)])
    points += unit_vectors(rng.standard_normal((PARTICIPANTS, PARAMETERS)))
    with native_threads(1):  # as in the main job: one thread per run
        speed_ratio(
            lambda: kmeans_of_few(points, COHORTS, 0),
            lambda: KMeans(n_clusters=COHORTS, n_init=1, random_state=0).fit(points),
            "k-means of the participants' updates on span coordinates vs on all coordinates",
            rounds=10,
        )
