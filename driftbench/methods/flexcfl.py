"""``flexcfl``: groups from decomposed update directions, fixed K, drifted clients migrate (Duan et al., IEEE TPDS 2021).

Choices (the paper; its authors' code, morningD/FlexCFL; driftbench):
- Cold start as the paper's EDC: cosines of each update to the top-K truncated-SVD directions, then K-means on them.
- Every client is clustered at round 0 (the paper pre-trains alpha*K sampled clients, cold-starts later ones one by one).
- A client's update direction is its negative gradient at the initial model (the code: 50 local iterations from it).
- K-means with 10 restarts (the code: one k-means++ run of at most 20 iterations); K is the trace's ``k``.
- Group direction: mean unit update of the group's latest participants (the code: the group's latest aggregate update).
- Drifted clients (``ClientQueries.changed``) migrate by their gradient at their group's model (the code: re-pretrain).
- Migration to the largest cosine similarity (least cosine dissimilarity), as the paper and the code.
- No inter-group aggregation (the paper's eta; the code's default group_agg_lr is 0); group models start from the init.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans
from sklearn.decomposition import TruncatedSVD
from sklearn.metrics.pairwise import cosine_similarity

from driftbench.methods import server_work as work
from driftbench.methods.bank import replicate
from driftbench.methods.base import Method
from driftbench.methods.clustering import ClusterCountParams, flat_updates, unit_vectors
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan, TrainResult


class FlexCFL(Method):
    """FlexCFL: k-means over each client's cosine similarities to the top-K truncated-SVD directions of all update directions.

    - Round 0: every client reports its gradient at the shared initial model (its update
      direction is the negative gradient, so the cold start covers all clients, not a subset).
    - Each group keeps a direction: the mean unit update of its latest participants.
    - Drifted clients (``ClientQueries.changed``) report their gradient at their group's model
      and migrate to the group whose direction is most cosine-similar to their negative gradient.
    """

    name = "flexcfl"
    Params = ClusterCountParams

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Group everyone at round 0; afterwards migrate drifted clients; sample participants uniformly."""
        if rnd == 0:
            directions = -clients.gradients(np.arange(self.ctx.num_clients), 0)
            self.assignment = decomposed_groups(directions, self.params.k, self.ctx.seed)
            self.events.clustering(self.assignment)
            k = int(self.assignment.max()) + 1
            self.models = replicate(self.ctx.init_params, k)
            work.charge(directions.size)
            self.group_directions = np.stack([unit_vectors(directions[self.assignment == g]).mean(0) for g in range(k)])
        elif len(clients.changed):
            self.migrate(clients, np.asarray(clients.changed))
        return self.uniform_plan(rng)

    def migrate(self, clients: ClientQueries, changed: np.ndarray) -> None:
        """Move each drifted client to the group whose direction is closest to its own."""
        before = self.assignment[changed]
        best: list[np.ndarray] = []
        own: list[np.ndarray] = []
        for group in np.unique(before):
            members = changed[before == group]
            directions = -clients.gradients(members, int(group))
            work.charge(work.cosine_similarity(len(members), len(self.group_directions), directions.shape[1]))
            similarity = cosine_similarity(directions, self.group_directions)
            self.assignment[members] = similarity.argmax(1)
            best.append(similarity.max(1))
            own.append(similarity[:, group])
        self.events.measure("migration_best_cosine_mean", float(np.concatenate(best).mean()))
        self.events.measure("migration_own_cosine_mean", float(np.concatenate(own).mean()))
        self.events.changes("move", changed, before, self.assignment[changed])

    def aggregate(self, rnd: int, result: TrainResult) -> None:
        """Average each group's participants and refresh the group directions from their updates."""
        updates = unit_vectors(flat_updates(result.params, self.models, result.plan.start_models))
        work.charge(updates.size)
        for g in np.unique(result.plan.start_models):
            self.group_directions[g] = updates[result.plan.start_models == g].mean(0)
        self.models = self.average(result)


def decomposed_groups(directions: np.ndarray, k: int, seed: int) -> np.ndarray:
    """k-means groups of the rows' cosine similarities to the top-k right singular vectors of the direction matrix."""
    k = min(k, len(directions))
    work.charge(work.svd(*directions.shape))
    components = (
        TruncatedSVD(n_components=k, algorithm="arpack" if k < min(directions.shape) else "randomized", random_state=seed)
        .fit(directions)
        .components_
    )
    work.charge(work.cosine_similarity(len(directions), k, directions.shape[1]))
    features = cosine_similarity(directions, components)
    model = KMeans(n_clusters=k, n_init=10, random_state=seed)
    labels: np.ndarray = model.fit_predict(features).astype(np.int64)
    work.charge(work.fitted_kmeans(model, *features.shape))
    return labels
