"""``auxo``: cohorts re-formed every round from the participants' updates (Liu et al., SoCC 2023), as FIELDING's baseline.

Choices (the paper as FIELDING describes it; the authors' code, Auxo's HeterClientManager; driftbench):
- Only the round's selected clients are re-clustered, every round, by their updates (FIELDING's Table 1 and 2.1).
- K fixed cohorts (the trace's ``k``); Auxo grows cohorts by splitting one when its reward table says so.
- All of last round's participants are clustered together (the code clusters each cohort's participants).
- K-means of unit updates (the code: updates centred on the participants' mean, then normalised; reward tables).
- K-means groups keep cohort identities by maximum-overlap matching (Hungarian), ties broken by the solver.
- A cohort's first members bring a copy of the model most of them trained; no per-cohort participant budget.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from driftbench.methods import server_work as work
from driftbench.methods.base import Method
from driftbench.methods.clustering import ClusterCountParams, flat_updates, kmeans_of_few
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan, RunContext, TrainResult


class Auxo(Method):
    """Auxo: each round's participants are re-clustered by their (unit) updates into at most K cohorts.

    - Only participants move: a client's cohort changes when it is sampled (FIELDING's point:
      drifted clients that are not selected stay where they were).
    - The k-means groups of last round's participants are matched to cohorts by the largest
      overlap with the cohorts they trained (Hungarian assignment); the moves take effect at
      the start of the next round, so this server work is timed.
    - A cohort that gets its first members starts from a copy of the model most of them
      trained (Auxo grows cohorts by splitting; driftbench fixes their number at K).
    """

    name = "auxo"
    Params = ClusterCountParams

    def setup(self, ctx: RunContext) -> None:
        """One model copied into K cohorts, every client in cohort 0; no updates yet."""
        super().setup(ctx)
        self.models = {n: p.repeat(self.params.k, *([1] * (p.dim() - 1))) for n, p in self.models.items()}
        self.used = np.zeros(self.params.k, dtype=bool)
        self.used[0] = True
        self.last_clients = np.zeros(0, dtype=np.int64)
        self.last_updates = np.zeros((0, 0))

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Regroup last round's participants, then sample this round's uniformly."""
        if len(self.last_clients) >= 2:
            self.regroup(self.last_clients, self.last_updates)
        return self.uniform_plan(rng)

    def regroup(self, ids: np.ndarray, updates: np.ndarray) -> None:
        """k-means of the unit updates; groups matched to cohorts by overlap; new cohorts copy their source model."""
        k = min(self.params.k, len(ids))
        model = kmeans_of_few(updates, k, self.ctx.seed, unit=True)
        groups = model.labels_
        work.charge(work.fitted_kmeans(model, *updates.shape))
        before = self.assignment[ids]
        overlap = np.zeros((k, self.params.k))
        np.add.at(overlap, (groups, before), 1.0)
        rows, cohorts = linear_sum_assignment(overlap, maximize=True)
        work.charge(work.hungarian(*overlap.shape))
        self.events.measure("matched_overlap_fraction", float(overlap[rows, cohorts].sum() / len(ids)))
        fresh = cohorts[~self.used[cohorts]]
        for g, cohort in zip(rows, cohorts):
            members = ids[groups == g]
            if not self.used[cohort]:
                source = int(np.bincount(before[groups == g]).argmax())
                for p in self.models.values():
                    p[cohort] = p[source]
                self.used[cohort] = True
            self.assignment[members] = cohort
        self.events.regrouping("move", self.assignment, ids, before, fresh)

    def aggregate(self, rnd: int, result: TrainResult) -> None:
        """Average each cohort's participants; keep their updates for next round's regrouping."""
        self.last_clients = result.plan.participants.copy()
        self.last_updates = flat_updates(result.params, self.models, result.plan.start_models)
        self.models = self.average(result)
