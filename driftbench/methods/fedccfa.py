"""``fedccfa``: FedCCFA (Chen et al., NeurIPS 2024): class-level classifier clustering and clustered feature alignment.

Read from the authors' code (wenwenwenwenti/FedCCFA, ``entities/FedCCFA.py``, ``methods/FedCCFA.py``) and
the paper's overview. A participant's round has three phases, all in the shared engine:
1. balanced classifier: from the global extractor and the server's initial classifier, the classifier alone
   trains ``balanced_epochs`` epochs on a class-balanced subsample of the client's data (at most
   ``balanced_per_class`` samples of each class) and is uploaded; only the server's clustering uses it;
2. classifier: from the global extractor and the client's personal classifier, the classifier alone trains
   ``clf_epochs``;
3. extractor: the extractor alone trains ``rep_epochs`` with the alignment term w x CE(cos(feature,
   anchor_c) / ``temperature``) over the classes c, against the client's clustered anchors from its last round,
   from round ``align_from`` on; w = entropy of the client's label distribution / ``gamma``.
The client then uploads its model and its prototypes (mean feature of each class it holds) under it.
The server averages the extractors (weighted by data size). For each class separately it clusters the
participants' balanced classifier rows (the class's weight row and bias) by MADD (the mean, over the other
participants z, of |cos(v_i, v_z) - cos(v_j, v_z)|) with DBSCAN (``eps``, one sample a core point); within
each cluster of two or more it averages the participants' trained rows of that class and their prototypes of
it, which become every member's row and anchor; a participant alone keeps its own row and its own prototype.

Choices where driftbench or the code leaves them open (one line each):
- local work: the extractor phase is the trace's local steps at its lr (the code's rep_epochs at rep_lr are
  FedAvg's own settings there); the classifier phase takes clf_epochs / rep_epochs of those steps at
  clf_lr / rep_lr times the lr; the balanced phase runs balanced_epochs epochs of its subsample at the trace's
  batch size and balanced_clf_lr / rep_lr times the lr;
- a client's personal classifier starts as the initial classifier (the code's first-time participant starts
  its classifier phase from its balanced classifier);
- a client is served, and evaluated, with the current global extractor and its personal classifier (as
  driftbench serves FedAvg's non-participants the latest model; the code keeps their last extractor);
- MADD needs three participants: with fewer, no class is merged (the code divides by zero);
- an anchor averages the prototypes of the cluster's members that hold the class; a class none holds has no
  anchor, and the alignment's softmax runs over the classes that have one (the code assumes every client holds
  every class); entropy takes 0 log 0 = 0 (the code's gives NaN for a missing class);
- the code's defaults only: uniform weights within a cluster, contrastive alignment (``penalize = CL``) with
  clustered anchors; its L2 alignment, label-count weights, fixed lambda and oracle merging are not built.
Partition (``assignment``): clients whose classifiers are identical share a bank model (the global extractor
with that classifier), so under partial participation clients last trained in different rounds count apart.
Events, per class c (value c): ``split`` names participants whose row of c left c's largest cluster since their
previous round, ``merge`` those whose row returned to it.
Counting: one model download (the global extractor with the initial classifier) and upload per participant;
the label histogram (C numbers: the data size for the weighting and the entropy, which a real client computes
itself), the balanced classifier (C x (d + 1)) and the prototypes with their class counts (C x d + C) are
uploaded; the merged classifier rows and anchors (C x (2d + 1)) are downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from scipy.spatial.distance import cdist
from scipy.stats import entropy
from sklearn.cluster import DBSCAN
from sklearn.metrics.pairwise import cosine_similarity

from driftbench.config import require
from driftbench.engine.batched import Params as NamedTensors  # in the class body below, Params names the parameter dataclass
from driftbench.engine.features import FeaturePenalty
from driftbench.methods import server_work as work
from driftbench.methods.bank import replicate
from driftbench.methods.base import Method, ProxParams
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Phase, Plan, RunContext, TrainResult, sample_participants

POSITIVE = ("clf_epochs", "rep_epochs", "balanced_epochs", "clf_lr", "rep_lr", "balanced_clf_lr", "gamma", "temperature")
OUTSIDE = -1e4  # logit of a class without an anchor: exp() underflows to 0, unlike -inf it cannot make a NaN gradient


@dataclass(frozen=True)
class FedCCFAParams(ProxParams):
    """Phase lengths and learning rates, balanced subsample size, DBSCAN's eps, the alignment's gamma, temperature and start.

    The authors' code defaults (configs/FedCCFA.yaml).
    """

    clf_epochs: float = 1.0
    rep_epochs: float = 5.0
    balanced_epochs: float = 5.0
    balanced_per_class: int = 5
    clf_lr: float = 0.1
    rep_lr: float = 0.01
    balanced_clf_lr: float = 0.1
    eps: float = 0.1
    gamma: float = 20.0
    temperature: float = 0.1
    align_from: int = 20

    def __post_init__(self) -> None:
        super().__post_init__()
        require(
            self.aggregator == "mean",
            f"fedccfa aggregates extractors and classifier rows apart: aggregator must be 'mean', got {self.aggregator!r}",
        )
        for name in POSITIVE:
            require(getattr(self, name) > 0, f"{name} must be > 0, got {getattr(self, name)}")
        require(self.balanced_per_class >= 1, f"balanced_per_class must be >= 1, got {self.balanced_per_class}")
        require(self.eps >= 0, f"eps must be >= 0, got {self.eps}")
        require(self.align_from >= 0, f"align_from must be >= 0, got {self.align_from}")


def madd(vectors: np.ndarray) -> np.ndarray:
    """MADD distances (n x n, n >= 3): for i, j the mean over z != i, j of |cos(v_i, v_z) - cos(v_j, v_z)|."""
    n, d = vectors.shape
    work.charge(work.cosine_similarity(n, n, d) + work.distances(n, n, n, "l1"))
    cos = cosine_similarity(vectors)
    own = np.diag(cos)
    # the sum over every z, less the terms z = i (|c_ii - c_ji|) and z = j (|c_ij - c_jj|)
    total = cdist(cos, cos, "cityblock") - np.abs(own[:, None] - cos.T) - np.abs(cos - own[None, :])
    distances: np.ndarray = np.clip(total, 0, None) / (n - 2)
    np.fill_diagonal(distances, 0.0)
    return distances


def label_clusters(vectors: np.ndarray, eps: float) -> np.ndarray:
    """Cluster labels of one class's classifier rows: DBSCAN (eps, min_samples 1) on MADD; each apart when fewer than 3."""
    if len(vectors) < 3:
        return np.arange(len(vectors))
    work.charge(work.dbscan(len(vectors)))
    labels: np.ndarray = DBSCAN(eps=eps, min_samples=1, metric="precomputed").fit_predict(madd(vectors))
    return labels


def cluster_means(values: torch.Tensor, clusters: np.ndarray, holds: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """For each row i, the mean of ``values`` over the rows of i's cluster where ``holds``; and whether any does."""
    members = torch.as_tensor((clusters[:, None] == clusters[None, :]) & holds[None, :], dtype=values.dtype)
    members = members.to(values.device)
    count = members.sum(1)
    work.charge(work.matmul(len(members), len(members), values[0].numel()))
    means = (members @ values.reshape(len(values), -1)) / count.clamp(min=1)[:, None]
    return means.view_as(values), count > 0


def contrastive_alignment(
    features: torch.Tensor, labels: torch.Tensor, anchors: torch.Tensor, anchored: torch.Tensor, temperature: float
) -> torch.Tensor:
    """Mean over samples whose class has an anchor of CE(cos(feature, anchor_c) / temperature over the anchored c, label)."""
    logits = F.cosine_similarity(features.unsqueeze(1), anchors.unsqueeze(0), dim=2) / temperature
    log_p = F.log_softmax(logits.masked_fill(~anchored, OUTSIDE), dim=1)
    held = anchored.gather(0, labels)
    picked = log_p.gather(1, labels.unsqueeze(1)).squeeze(1)
    return -(picked * held).sum() / held.sum().clamp(min=1)


def prototypes(features: torch.Tensor, probs: torch.Tensor, labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """A client's report: the mean feature of each class (C x d, zero for a class it lacks), then its class counts (C)."""
    counts = torch.bincount(labels, minlength=num_classes).to(features.dtype)
    sums = features.new_zeros(num_classes, features.shape[1]).index_add_(0, labels, features)
    return torch.cat([(sums / counts.clamp(min=1)[:, None]).reshape(-1), counts])


def only(names: tuple[str, ...], like: NamedTensors, rows: int) -> NamedTensors:
    """Update masks (rows x shape, broadcast views) that train ``names`` and freeze every other parameter."""
    return {n: p.new_tensor(float(n in names)).expand(rows, *p.shape) for n, p in like.items()}


class FedCCFA(Method):
    """FedCCFA: per-class DBSCAN of balanced classifiers, cluster-wise classifier rows and anchors, a global extractor."""

    name = "fedccfa"
    Params = FedCCFAParams

    def setup(self, ctx: RunContext) -> None:
        """The initial extractor is the global one; every client's classifier starts as the initial one, without anchors."""
        super().setup(ctx)
        self.head_names = (f"{ctx.classifier}.weight", f"{ctx.classifier}.bias")
        head = ctx.init_params[self.head_names[0]]
        self.extractor = {n: p.clone() for n, p in ctx.init_params.items() if n not in self.head_names}
        self.heads = replicate({n: ctx.init_params[n] for n in self.head_names}, ctx.num_clients)
        self.anchors = head.new_zeros(ctx.num_clients, *head.shape)
        self.anchored = torch.zeros(ctx.num_clients, head.shape[0], dtype=torch.bool, device=head.device)
        self.apart = np.zeros((ctx.num_clients, head.shape[0]), dtype=bool)
        self.histograms = np.zeros((0, head.shape[0]))
        self.publish()

    def publish(self) -> None:
        """Rebuild the bank: one model (global extractor + classifier) per distinct classifier; clients point at theirs."""
        flat = torch.cat([self.heads[n].reshape(self.ctx.num_clients, -1) for n in self.head_names], dim=1)
        self.assignment = torch.unique(flat, dim=0, return_inverse=True)[1].cpu().numpy().astype(np.int64)
        first = torch.as_tensor(np.unique(self.assignment, return_index=True)[1], device=flat.device)
        self.models = {
            n: self.heads[n][first] if n in self.head_names else self.extractor[n].expand(len(first), *p.shape).clone()
            for n, p in self.ctx.init_params.items()
        }

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Participants train the balanced classifier (a side branch), then their classifier, then their extractor."""
        p, train = self.params, self.ctx.train
        participants = sample_participants(rng, self.ctx.num_clients, train.participants)
        self.histograms = clients.label_histograms(participants)
        balanced_start = self.num_models  # the global extractor with the initial classifier, parked past the bank
        self.models = {
            n: torch.cat([m, (self.ctx.init_params[n] if n in self.head_names else self.extractor[n]).unsqueeze(0)])
            for n, m in self.models.items()
        }
        k = len(participants)
        heads, extractor = only(self.head_names, self.ctx.init_params, k), only(tuple(self.extractor), self.ctx.init_params, k)
        head_floats = sum(self.ctx.init_params[n].numel() for n in self.head_names)
        anchor_floats = self.anchors[0].numel()
        phases = (
            Phase(
                start=np.full(k, balanced_start),
                epochs=p.balanced_epochs,
                per_class=p.balanced_per_class,
                lr_scale=p.balanced_clf_lr / p.rep_lr,
                masks=heads,
            ),
            Phase(
                local_steps=max(1, round(train.local_steps * p.clf_epochs / p.rep_epochs)),
                lr_scale=p.clf_lr / p.rep_lr,
                masks=heads,
            ),
            Phase(masks=extractor, penalty=self.alignment(rnd, participants)),
        )
        return Plan(
            participants,
            self.assignment[participants],
            mu=p.mu,
            phases=phases,
            report=partial(prototypes, num_classes=self.ctx.num_classes),
            upload_floats=head_floats,
            download_floats=head_floats + anchor_floats,
        )

    def alignment(self, rnd: int, participants: np.ndarray) -> FeaturePenalty | None:
        """The extractor phase's alignment: weight entropy / gamma for clients with anchors, from ``align_from``; else None."""
        held = self.anchored[torch.as_tensor(participants, device=self.anchored.device)]
        weights = entropy(self.histograms, axis=1) / self.params.gamma * held.any(1).cpu().numpy()
        if rnd < self.params.align_from or not weights.any():
            return None
        self.events.measure("fedccfa_alignment_weight", float(weights.mean()))
        index = torch.as_tensor(participants, device=self.anchors.device)
        return FeaturePenalty(
            partial(contrastive_alignment, temperature=self.params.temperature),
            torch.as_tensor(weights, dtype=self.anchors.dtype, device=self.anchors.device),
            (self.anchors[index], held),
        )

    def aggregate(self, rnd: int, result: TrainResult) -> None:
        """Average the extractors; per class, cluster the balanced rows and share trained rows and prototypes in each cluster."""
        participants = result.plan.participants
        index = torch.as_tensor(participants, device=self.anchors.device)
        sizes = torch.as_tensor(self.histograms.sum(1), dtype=self.anchors.dtype, device=self.anchors.device)
        work.charge(work.aggregation(len(participants), sum(p[0].numel() for p in self.extractor.values())))
        self.extractor = {n: torch.einsum("k,k...->...", sizes / sizes.sum(), result.params[n]) for n in self.extractor}
        assert result.reports is not None  # the plan asks for prototypes
        classes, width = self.anchors.shape[1:]
        protos = torch.as_tensor(result.reports[:, : classes * width], dtype=self.anchors.dtype, device=self.anchors.device)
        protos = protos.view(len(participants), classes, width)
        holds = result.reports[:, classes * width :] > 0
        weight, bias = (result.params[n] for n in self.head_names)
        balanced = torch.cat([result.phases[0][self.head_names[0]], result.phases[0][self.head_names[1]].unsqueeze(2)], dim=2)
        balanced_rows = balanced.double().cpu().numpy()
        rows = torch.cat([weight, bias.unsqueeze(2)], dim=2)
        apart = np.zeros((len(participants), classes), dtype=bool)
        counts = []
        for c in range(classes):
            clusters = label_clusters(balanced_rows[:, c], self.params.eps)
            counts.append(len(np.unique(clusters)))
            apart[:, c] = clusters != np.bincount(clusters).argmax()
            rows[:, c], _ = cluster_means(rows[:, c], clusters, np.ones(len(participants), dtype=bool))
            protos[:, c], held = cluster_means(protos[:, c], clusters, holds[:, c])
            self.anchored[index, c] = held
        self.heads[self.head_names[0]][index] = rows[..., :-1]
        self.heads[self.head_names[1]][index] = rows[..., -1]
        self.anchors[index] = protos
        self.events.measure("fedccfa_clusters_per_label", float(np.mean(counts)))
        self.log_moves(participants, apart)
        self.publish()

    def log_moves(self, participants: np.ndarray, apart: np.ndarray) -> None:
        """Per class c: ``split`` (value c) for participants whose row of c left c's largest cluster, ``merge`` for those back."""
        was = self.apart[participants]
        for c in range(apart.shape[1]):
            for kind, moved in (("split", apart[:, c] & ~was[:, c]), ("merge", was[:, c] & ~apart[:, c])):
                if moved.any():
                    self.events.record(kind, clients=participants[moved], value=c)
        self.apart[participants] = apart
