"""``feddag-single`` (FEDDAG*) and ``feddag``: clustering by fused data and gradient proximity (001 sections 3-4, A.8-A.9).

Warm-up (Algorithm 1, lines 6-14): every client trains its own copy of the shared initial
model for ``warmup_rounds`` (t_g) rounds without federation; its update is k-sparsified on
a coordinate set the server draws once for everyone (so updates stay comparable). Each client
then uploads per-class sample counts and p principal vectors per class. The server fuses the
gradient angles (Eq. 3) and the weighted class-wise principal angles (Eq. 4-6) with learned
per-client weights (Eq. 7-8) and picks a clustering from a threshold grid (Eq. 9-10).

Drift (A.9): every ``shift_every`` rounds every client reports its label histogram; a client
whose histogram moved by W1 > ``shift_fraction`` / C (Eq. 41) repeats the warm-up like a newcomer
(A.8), but from its cluster's model (A.6: re-clustering runs "without resetting the models"), while
that cluster still serves it; it then re-uploads its update since that start, learns its own fusion
weight and is placed by one hierarchical pass at the chosen alpha: into the cluster most of its
non-shifted HC-mates are in, or into a new cluster, the mean of its founders' warm-up models, when
it has none. Clusters left empty stay in the bank, untrained and serving no one.
Under label-permutation concept drift the trigger fires only where the permutation moves a
client's uneven label counts (on label-swap: on the clients that switched, at the events).

Choices where the paper is open (one line each; tests/methods/conformance/test_feddag.py checks Eq. 5-10):
- A.6's "without resetting the models": a re-warm-up starts from the cluster model, a founded cluster keeps all it learnt;
- Eq. 8's weights are optimised directly (L-BFGS-B in [0, 1], seeded uniform start), not as an MLP's output;
- Eq. 7 as printed: a pair uses its lower-index client's weight, so the last client's weight enters no pair;
- Eq. 9's L1 is averaged over the Z clusters (summed, it grows with Z at equal tightness);
- Algorithm 3 line 8 ("low loss and relatively few clusters"): the cluster count held over most thresholds
  among candidates below the one-cluster loss, then the lowest loss (B.10's plateau reading); on a proximity
  matrix without cluster structure no count holds for long and the lowest loss, i.e. the most clusters, wins;
- lam, gamma, tau (unset in the paper) pick B.10's planted 11 groups: 0.1, 1, 1;
- the readings tried on the paper's base settings (L1 summed as printed, ``compactness = "sum"``; line 8 as the
  lowest loss, ``line8 = "lowest"``; tau = 10; no size penalty, lam = 0) are in docs/methods.md ("FedDAG readings").

Newcomers (A.8, Algorithm 4): each warms up ``warmup_rounds`` rounds from the initial model like a shifted client,
learns its own fusion weight (the others' fixed), and one hierarchical pass at the chosen alpha places it as it
places a shifted client, except that one with no settled HC-mate joins the existing cluster nearest it on average
(Algorithm 4 line 14 takes an existing cluster's models; a shifted client there founds a new cluster).

Counting: warm-up rounds go through ordinary plans, so each warm-up round counts one model
download and upload per client (conservative: the paper's client keeps its model and uploads
only the sparse update); the sparse update is the uploaded model's subset and is not counted
again. Principal vectors, counts and histograms go through client queries, which count them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import torch

from driftbench.config import RECORDED_WHEN_SET, require
from driftbench.engine.batched import Params as NamedTensors  # in the class bodies below, Params names the parameter dataclass
from driftbench.methods import server_work as work
from driftbench.methods.bank import bank_rows, cluster_average, replicate
from driftbench.methods.base import Method, ProxParams
from driftbench.methods.dual_encoder import complementarity, encoder_halves, owner_masks, top_sources
from driftbench.methods.feddag_similarity import (
    class_angles,
    class_subspaces,
    cut,
    data_distance,
    first_seen_labels,
    fuse,
    fusion_weights,
    gradient_angles,
    label_shift,
    minmax,
    optimal_clustering,
    shifted,
    split_subspaces,
)
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan, RunContext, TrainResult, sample_participants

PRIMARY, SECONDARY, CLASSIFIER = 0, 1, 2  # owners of parameter entries in the dual encoder
SPARSE_STREAM, FUSION_STREAM = 11, 12  # RNG streams derived from the run seed


@dataclass(frozen=True)
class FedDAGSingleParams(ProxParams):
    """Warm-up, sparsity, principal vectors, weight range delta, threshold grid and Eq. 9-10 constants, shift check.

    The paper gives no values for lam, gamma, tau; these pick the planted 11 groups of B.10. ``compactness``
    (``mean`` or ``sum``) and ``line8`` (``plateau`` or ``lowest``) are Algorithm 3's open readings (module docstring).
    """

    warmup_rounds: int = 2
    sparsity: float = 0.02
    principal_vectors: int = 2
    delta: float = 0.6
    threshold_step: float = 0.05
    lam: float = 0.1
    gamma: float = 1.0
    tau: float = 1.0
    shift_every: int = 5
    shift_fraction: float = 0.2
    compactness: str = field(default="mean", metadata={RECORDED_WHEN_SET: True})
    line8: str = field(default="plateau", metadata={RECORDED_WHEN_SET: True})

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.compactness in ("mean", "sum"), f"compactness must be mean or sum, got {self.compactness!r}")
        require(self.line8 in ("plateau", "lowest"), f"line8 must be plateau or lowest, got {self.line8!r}")
        require(
            self.aggregator == "mean",
            f"feddag aggregates clusters and local models together: aggregator must be 'mean', got {self.aggregator!r}",
        )
        require(self.warmup_rounds >= 1, f"warmup_rounds must be >= 1, got {self.warmup_rounds}")
        require(0 < self.sparsity <= 1, f"sparsity must be in (0, 1], got {self.sparsity}")
        require(self.principal_vectors >= 1, f"principal_vectors must be >= 1, got {self.principal_vectors}")
        require(0 <= self.delta < 1, f"delta must be in [0, 1), got {self.delta}")
        require(0 < self.threshold_step <= 1, f"threshold_step must be in (0, 1], got {self.threshold_step}")
        require(self.lam >= 0 and self.tau > 0, f"lam must be >= 0 and tau > 0, got {self.lam} and {self.tau}")
        require(self.gamma >= 0, f"gamma must be >= 0, got {self.gamma}")
        require(self.shift_every >= 1, f"shift_every must be >= 1, got {self.shift_every}")
        require(self.shift_fraction > 0, f"shift_fraction must be > 0, got {self.shift_fraction}")


@dataclass(frozen=True)
class FedDAGParams(FedDAGSingleParams):
    """FEDDAG adds the number of source clusters each cluster learns from (top-k of the CC-graph)."""

    top_k: int = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.top_k >= 1, f"top_k must be >= 1, got {self.top_k}")


class FedDAGSingle(Method):
    """FEDDAG*: fused data + gradient proximity, threshold-searched hierarchical clusters, one model per cluster.

    The bank holds the cluster models first, then the local models of warming-up clients.
    """

    name = "feddag-single"
    Params = FedDAGSingleParams

    def setup(self, ctx: RunContext) -> None:
        """Every client starts its warm-up from the shared initial model."""
        super().setup(ctx)
        self.initial = self.initial_model(ctx.init_params)
        flat_size = sum(p.numel() for p in ctx.init_params.values())
        rng = np.random.default_rng([ctx.seed, SPARSE_STREAM])
        self.coordinates = np.sort(rng.choice(flat_size, max(1, round(self.params.sparsity * flat_size)), replace=False))
        self.clusters: NamedTensors = {}
        self.local = replicate(self.initial, ctx.num_clients)
        self.starts = self.local
        self.warming = np.arange(ctx.num_clients)
        self.warm_done = np.zeros(ctx.num_clients, dtype=np.int64)
        self.assignment = np.arange(ctx.num_clients)
        self.models = self.local
        self.alpha = 1.0
        self.sparse_updates = np.zeros((ctx.num_clients, len(self.coordinates)))
        self.counts = np.zeros((ctx.num_clients, ctx.num_classes))
        self.bases = np.zeros((ctx.num_clients, ctx.num_classes, self.params.principal_vectors, 0))
        self.angles = np.zeros((ctx.num_clients, ctx.num_clients, ctx.num_classes))
        self.weights = np.random.default_rng([ctx.seed, FUSION_STREAM]).uniform(size=ctx.num_clients)
        self.reference = np.zeros((ctx.num_clients, ctx.num_classes))

    @property
    def num_clusters(self) -> int:
        """Cluster models in the bank (0 during the initial warm-up)."""
        return len(next(iter(self.clusters.values()))) if self.clusters else 0

    def initial_model(self, params: NamedTensors) -> NamedTensors:
        """The model every warm-up starts from."""
        return {n: p.clone() for n, p in params.items()}

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Finish due warm-ups (cluster or place those clients), check for shifts, then train clusters and warm-ups."""
        done = self.warming[self.warm_done >= self.params.warmup_rounds]
        if len(done):
            self.place(done, clients)
        if self.num_clusters and rnd % self.params.shift_every == 0:
            self.check_shifts(clients)
        sampled = (
            sample_participants(rng, self.ctx.num_clients, self.ctx.train.participants) if self.num_clusters else sampled_none()
        )
        sampled = sampled[~np.isin(sampled, self.warming)]
        return self.training_plan(sampled)

    def training_plan(self, sampled: np.ndarray) -> Plan:
        """Sampled clients train their cluster's model; warming-up clients train their local models."""
        self.models = concat(self.clusters, self.local)
        participants = np.concatenate([sampled, self.warming])
        start = np.concatenate([self.assignment[sampled], self.num_clusters + np.arange(len(self.warming))])
        return Plan(participants, start, mu=self.params.mu, masks=self.masks(len(sampled), len(self.warming), 0))

    def masks(self, primary: int, warming: int, secondary: int) -> NamedTensors | None:
        """Update masks for primary, warm-up and secondary rows; the single model trains everything."""
        return None

    def aggregate(self, rnd: int, result: TrainResult) -> None:
        """Cluster rows average into their cluster (Eq. 18); warm-up rows replace their local model."""
        bank = cluster_average(self.models, result.params, result.plan.start_models, result.num_samples)
        z, w = self.num_clusters, len(self.warming)
        self.clusters = {n: p[:z] for n, p in bank.items()} if z else {}
        self.local = {n: p[z : z + w] for n, p in bank.items()}
        self.merge_extra_rows({n: p[z + w :] for n, p in self.models.items()}, {n: p[z + w :] for n, p in bank.items()})
        self.warm_done += 1
        self.models = concat(self.clusters, self.local)

    def merge_extra_rows(self, before: NamedTensors, after: NamedTensors) -> None:
        """Fold rows beyond the cluster and local models back into the bank (none for the single encoder)."""

    def place(self, done: np.ndarray, clients: ClientQueries, found: bool = True) -> None:
        """Collect the finished clients' uploads, refresh the proximity matrix and cluster (all clients) or place them
        (``reassign``; ``found``: whether a client with no settled HC-mate founds a cluster)."""
        rows = np.flatnonzero(np.isin(self.warming, done))
        flat = torch.cat([(self.local[n][rows] - self.starts[n][rows]).reshape(len(rows), -1) for n in self.initial], dim=1)
        work.charge(flat.numel())
        self.sparse_updates[done] = flat[:, torch.as_tensor(self.coordinates)].double().cpu().numpy()
        p, num_classes = self.params.principal_vectors, self.ctx.num_classes
        counts, bases = split_subspaces(
            clients.data(done, partial(class_subspaces, num_classes=num_classes, p=p)), num_classes, p
        )
        if self.bases.shape[-1] != bases.shape[-1]:
            self.bases = np.zeros((self.ctx.num_clients, *bases.shape[1:]))
        self.counts[done], self.bases[done], self.reference[done] = counts, bases, counts
        rim = class_angles(bases, counts, self.bases, self.counts)
        self.angles[done, :] = rim
        self.angles[:, done] = rim.transpose(1, 0, 2)
        gradient = minmax(gradient_angles(self.sparse_updates))
        data = minmax(data_distance(self.angles, self.counts, self.params.delta))
        free = np.isin(np.arange(self.ctx.num_clients), done)
        self.weights = fusion_weights(gradient, data, self.weights, free)
        adjacency = fuse(gradient, data, self.weights)
        local = {n: p[rows] for n, p in self.local.items()}
        if self.num_clusters:
            self.reassign(done, cut(adjacency, self.alpha), local, counts.sum(axis=1), adjacency if not found else None)
        else:
            s = self.params
            labels, self.alpha = optimal_clustering(
                adjacency, s.threshold_step, s.lam, s.gamma, s.tau, s.compactness == "sum", s.line8 == "plateau"
            )
            self.events.measure("feddag_alpha", self.alpha)
            self.events.measure("feddag_fusion_weight_mean", float(self.weights.mean()))
            self.clusters = self.cluster_models(local, labels, counts.sum(axis=1))
            self.assignment = labels
            self.events.clustering(labels)
        keep = ~np.isin(self.warming, done)
        self.warming, self.warm_done = self.warming[keep], self.warm_done[keep]
        rows_kept = np.flatnonzero(keep)
        self.local, self.starts = (bank_rows(bank, rows_kept) for bank in (self.local, self.starts))
        self.clusters_changed()

    def reassign(
        self, done: np.ndarray, labels: np.ndarray, local: NamedTensors, sizes: np.ndarray, nearest: np.ndarray | None
    ) -> None:
        """A placed client joins the cluster of most settled HC-mates. One with none founds a new cluster per HC
        cluster or, given the fused distances ``nearest``, joins the existing cluster nearest it on average."""
        settled = ~np.isin(np.arange(self.ctx.num_clients), np.concatenate([done, self.warming]))
        before = self.assignment[done]
        fresh: dict[int, int] = {}
        new = np.zeros(len(done), dtype=np.int64)
        for k, client in enumerate(done):
            mates = settled & (labels == labels[client])
            if mates.any():
                self.assignment[client] = np.bincount(self.assignment[mates]).argmax()
            elif nearest is not None:
                clusters = np.unique(self.assignment[settled])
                distance = [nearest[client, settled & (self.assignment == z)].mean() for z in clusters]
                self.assignment[client] = clusters[int(np.argmin(distance))]
            else:
                self.assignment[client] = fresh.setdefault(int(labels[client]), self.num_clusters + len(fresh))
                new[k] = 1
        if fresh:
            members = np.flatnonzero(new)
            groups = first_seen_labels(self.assignment[done[members]])
            grown = member_means({n: p[members] for n, p in local.items()}, groups, sizes[members])
            self.clusters = {n: torch.cat([p, grown[n]]) for n, p in self.clusters.items()}
        self.events.regrouping("migrate", self.assignment, done, before, np.array(list(fresh.values()), dtype=np.int64))

    def cluster_models(self, local: NamedTensors, labels: np.ndarray, sizes: np.ndarray) -> NamedTensors:
        """Each cluster's model at the first clustering: its members' mean warm-up model (training continues from them)."""
        return member_means(local, labels, sizes)

    def clusters_changed(self) -> None:
        """Hook after clusters change (the dual encoder rebuilds its CC-graph)."""

    def admit(self, newcomers: np.ndarray, clients: ClientQueries, rng: np.random.Generator) -> NamedTensors:
        """Algorithm 4: newcomers warm up locally, upload their sparse updates and subspaces, and are placed (``place``)."""
        self.grow(len(newcomers), rng)
        start = replicate(self.initial, len(newcomers))
        masks = self.masks(0, len(newcomers), 0)
        self.local = clients.local_models(newcomers, start, self.params.warmup_rounds, rng, masks)
        self.starts = start
        self.warming, self.warm_done = newcomers, np.full(len(newcomers), self.params.warmup_rounds)
        self.place(newcomers, clients, found=False)
        return bank_rows(self.clusters, self.assignment[newcomers])

    def newcomer_masks(self, count: int) -> NamedTensors | None:
        """A newcomer trains what a sampled client trains (the dual encoder: primary encoder and classifier)."""
        return self.masks(count, 0, 0)

    def grow(self, count: int, rng: np.random.Generator) -> None:
        """Room for ``count`` more clients in every per-client array; their fusion weights start uniform in [0, 1]."""
        self.ctx = replace(self.ctx, num_clients=self.ctx.num_clients + count)

        def padded(values: np.ndarray, axes: int = 1) -> np.ndarray:
            return np.pad(values, [(0, count)] * axes + [(0, 0)] * (values.ndim - axes))

        self.sparse_updates, self.counts, self.bases = padded(self.sparse_updates), padded(self.counts), padded(self.bases)
        self.reference, self.angles = padded(self.reference), padded(self.angles, 2)
        self.weights = np.concatenate([self.weights, rng.uniform(size=count)])
        self.assignment = np.concatenate([self.assignment, np.zeros(count, dtype=np.int64)])

    def check_shifts(self, clients: ClientQueries) -> None:
        """Eq. 41 on settled clients' label histograms; shifted clients start a warm-up from their cluster's model."""
        settled = np.setdiff1d(np.arange(self.ctx.num_clients), self.warming)
        histograms = clients.label_histograms(settled)
        distances = label_shift(histograms, self.reference[settled])
        for distance in distances[np.isfinite(distances)]:
            self.events.measure("feddag_label_w1", distance)
        moved = settled[shifted(distances, self.ctx.num_classes, self.params.shift_fraction)]
        self.reference[settled] = histograms
        if len(moved):
            self.warming = np.concatenate([self.warming, moved])
            self.warm_done = np.concatenate([self.warm_done, np.zeros(len(moved), dtype=np.int64)])
            start = bank_rows(self.clusters, self.assignment[moved])
            self.local, self.starts = concat(self.local, start), concat(self.starts, start)


class FedDAG(FedDAGSingle):
    """FEDDAG: FEDDAG*'s clusters with dual encoders and cross-cluster representation sharing (section 4).

    Each round a sampled client trains its cluster's primary encoder and classifier (Eq. 16-18)
    and, when its cluster is a source in the CC-graph, also the mean of its learners' secondary
    encoders with everything else frozen (Eq. 19-20); the aggregated change is added to each
    learner's secondary encoder (Eq. 21). Choices and simplifications:
    - learners' secondary encoders are combined by their mean (Eq. 19 writes a sum);
    - the second phase is a second plan row for the same client: it counts one more model
      download and upload, and the clock runs the two phases side by side, not one after the other;
    - warm-up trains the primary encoder and classifier; a cluster's primary encoder is the
      sample-weighted mean of its members' (Eq. 22), its secondary encoder and classifier
      are the initial ones (Algorithm 1, line 14);
    - a newcomer starts from its cluster's model, secondary encoder included, where Algorithm 4 line 15 sums the
      related clusters' secondary encoders (the cluster's own already takes in their changes, Eq. 21).
    """

    name = "feddag"
    Params = FedDAGParams

    def setup(self, ctx: RunContext) -> None:
        """Split the encoder in two halves; no CC-graph until the first clustering."""
        self.owners = encoder_halves(ctx.init_params, ctx.classifier)
        super().setup(ctx)
        self.first_mask = owner_masks(self.owners, (PRIMARY, CLASSIFIER), self.initial)
        self.second_mask = owner_masks(self.owners, (SECONDARY,), self.initial)
        self.classifier_mask = owner_masks(self.owners, (CLASSIFIER,), self.initial)
        self.sources = np.zeros((0, 0), dtype=bool)
        self.composite_learners = np.zeros((0, 0), dtype=bool)

    def initial_model(self, params: NamedTensors) -> NamedTensors:
        """The shared initialisation with the cross-half weights zeroed."""
        return {n: torch.where(self.owners[n].to(p.device) >= 0, p, torch.zeros_like(p)) for n, p in params.items()}

    def masks(self, primary: int, warming: int, secondary: int) -> NamedTensors | None:
        """Primary and warm-up rows train the primary encoder and classifier; secondary rows the secondary encoder."""
        kinds = [self.first_mask] * (primary + warming) + [self.second_mask] * secondary
        return {n: torch.stack([k[n] for k in kinds]) for n in self.initial} if kinds else None

    def training_plan(self, sampled: np.ndarray) -> Plan:
        """FEDDAG*'s plan plus one secondary row per sampled client of a source cluster, starting from its composite encoder."""
        base = super().training_plan(sampled)
        composites, learners = self.composites()
        self.composite_learners = learners
        row_of = {int(q): k for k, q in enumerate(np.flatnonzero(self.sources.any(axis=0)))} if self.sources.size else {}
        second = np.array([c for c in sampled if int(self.assignment[c]) in row_of], dtype=np.int64)
        if not len(second):
            self.composite_learners = np.zeros((0, self.num_clusters), dtype=bool)
            return base
        offset = self.num_clusters + len(self.warming)
        self.models = concat(self.models, composites)
        return Plan(
            np.concatenate([base.participants, second]),
            np.concatenate([base.start_models, offset + np.array([row_of[int(self.assignment[c])] for c in second])]),
            mu=self.params.mu,
            masks=self.masks(len(sampled), len(self.warming), len(second)),
        )

    def composites(self) -> tuple[NamedTensors, np.ndarray]:
        """Per source cluster: its model with the secondary encoder replaced by the mean of its learners' (and who they are)."""
        if not self.sources.size or not self.sources.any():
            return {}, np.zeros((0, self.num_clusters), dtype=bool)
        learners = self.sources[:, self.sources.any(axis=0)].T  # (sources, clusters): learners of each source
        weights = torch.as_tensor(learners / learners.sum(axis=1, keepdims=True))
        second = self.second_mask
        source_index = torch.as_tensor(np.flatnonzero(self.sources.any(axis=0)))
        work.charge(work.matmul(learners.shape[0], learners.shape[1], work.model_parameters(self.clusters)))
        out = {}
        for n, p in self.clusters.items():
            mean = torch.tensordot(weights.to(p.dtype).to(p.device), p, dims=1)
            out[n] = p[source_index.to(p.device)] * (1 - second[n]) + mean * second[n]
        return out, learners

    def merge_extra_rows(self, before: NamedTensors, after: NamedTensors) -> None:
        """Eq. 21: each source's aggregated secondary-encoder change is added to each of its learners' secondary encoders."""
        if not len(self.composite_learners):
            return
        second = self.second_mask
        learners = torch.as_tensor(self.composite_learners.T.astype(np.float64))
        work.charge(work.matmul(learners.shape[0], learners.shape[1], work.model_parameters(self.clusters)))
        changed, size = 0.0, 0.0
        for n, p in self.clusters.items():
            change = (after[n] - before[n]) * second[n]
            self.clusters[n] = p + torch.tensordot(learners.to(p.dtype).to(p.device), change, dims=1)
            changed += float(change.pow(2).sum())
            size += float((before[n] * second[n]).pow(2).sum())
        self.events.measure("feddag_secondary_relative_change", (changed / size) ** 0.5 if size else 0.0)

    def cluster_models(self, local: NamedTensors, labels: np.ndarray, sizes: np.ndarray) -> NamedTensors:
        """Eq. 22: primary encoder from the members' warm-up encoders; secondary encoder and classifier from the initial model."""
        models = super().cluster_models(local, labels, sizes)
        classifier = self.classifier_mask
        return {n: p * (1 - classifier[n]) + self.initial[n] * classifier[n] for n, p in models.items()}

    def clusters_changed(self) -> None:
        """Rebuild the CC-graph over the non-empty clusters (Eq. 11-14, top-k sources per cluster)."""
        self.sources = np.zeros((self.num_clusters, self.num_clusters), dtype=bool)
        present = np.unique(self.assignment)
        if len(present) < 2:
            return
        scores = complementarity(self.counts, self.angles, self.assignment, present)
        edges = top_sources(scores, self.params.top_k)
        self.sources[np.ix_(present, present)] = edges


def member_means(local: NamedTensors, labels: np.ndarray, sizes: np.ndarray) -> NamedTensors:
    """Per cluster label: the sample-weighted mean of its members' models (every parameter)."""
    models = {n: p[:1].repeat(int(labels.max()) + 1, *([1] * (p.dim() - 1))) for n, p in local.items()}
    return cluster_average(models, local, labels, np.maximum(sizes, 1))


def concat(*banks: NamedTensors) -> NamedTensors:
    """Banks stacked one after the other (empty banks are skipped)."""
    banks = tuple(b for b in banks if b)
    return {n: torch.cat([b[n] for b in banks]) for n in banks[0]} if banks else {}


def sampled_none() -> np.ndarray:
    """No sampled clients (during the initial warm-up every client trains its own model)."""
    return np.zeros(0, dtype=np.int64)
