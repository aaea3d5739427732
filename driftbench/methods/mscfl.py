"""``mscfl``: MSCFL (002, Algorithms 1-2): clustering by pruning masks, re-clustering when masks stop being consistent.

A client round is one communication round in two phases: the client pre-trains its cluster's
model for ``pretrain_epochs`` (E_pre), magnitude-prunes it to its own ratio pr (drawn once per
client from N(``prune_mean``, ``prune_std``^2) clipped to [``prune_min``, ``prune_max``]), trains
the pruned model for ``epochs`` (E_after) with pruned entries held at zero, and uploads model and
mask. The server computes each participant's Hamming distance H_t between its last two masks;
if some participant has H_t > ``tau`` x H_{t-1}, it re-clusters every client (Algorithm 2:
COUNTTARGET on pruned or retained positions, whichever ratio of the pair is smallest, then
hierarchical clustering). Each cluster's model is averaged entry by entry over the
participants that retained the entry (the intersection of retained parameters).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import numpy as np
import torch
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform
from sklearn.metrics import silhouette_score

from driftbench.config import RECORDED_WHEN_SET, require
from driftbench.engine.batched import Params
from driftbench.methods import server_work as work
from driftbench.methods.base import Method, ProxParams
from driftbench.methods.clustering import as_kernel_tensor, relabel, remix_models
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Phase, Plan, RunContext, TrainResult, sample_participants

RATIO_STREAM = 21  # RNG stream (with the run seed) of the clients' pruning ratios
CLUSTER_RANGE = (2, 10)  # K searched by silhouette when ``clusters`` = 0
PRUNING = ("magnitude", "channels")
BITS_PER_FLOAT = 32  # a mask travels as one bit per prunable entry, counted in float32 numbers


@dataclass(frozen=True)
class MSCFLParams(ProxParams):
    """E_pre (first round, later rounds), E_after, the pruning-ratio law, tau, cluster count, migration, pruning.

    ``migrate = false`` is MSCFL-alpha (clusters fixed after the first round). ``clusters`` = 0
    picks K in 2..10 by silhouette (the paper's code fixes K to the known number of groups).
    ``pruning = "channels"`` prunes conv output channels by their filter's L1 norm and dense
    layers by magnitude (a hybrid strategy for CNNs; the authors' code scores channels by
    BatchNorm scales, which driftbench's models lack); "magnitude" prunes every entry.
    Choice: the paper gives no E_pre / E_after ("pre-trains a few epochs"); the first round's E_pre
    (``first_pretrain_epochs``), whose masks make the first clustering, is the authors' code's 10;
    later rounds 1 and 3 epochs (the authors' 5 and 5 would triple the baselines' local work).
    sigma^2 = 0.25 -> std 0.5.
    """

    first_pretrain_epochs: float = 10.0
    pretrain_epochs: float = 1.0
    epochs: float = 3.0
    prune_mean: float = 0.4
    prune_std: float = 0.5
    prune_min: float = 0.2
    prune_max: float = 0.7
    tau: float = 1.1
    clusters: int = 0
    migrate: bool = True
    pruning: str = field(default="magnitude", metadata={RECORDED_WHEN_SET: True})

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.aggregator == "mean", f"mscfl averages under masks: aggregator must be 'mean', got {self.aggregator!r}")
        require(self.pretrain_epochs > 0, f"pretrain_epochs must be > 0, got {self.pretrain_epochs}")
        require(self.first_pretrain_epochs > 0, f"first_pretrain_epochs must be > 0, got {self.first_pretrain_epochs}")
        require(self.epochs > 0, f"epochs must be > 0, got {self.epochs}")
        require(self.prune_std >= 0, f"prune_std must be >= 0, got {self.prune_std}")
        require(
            0 < self.prune_min <= self.prune_max < 1,
            f"prune_min and prune_max must satisfy 0 < prune_min <= prune_max < 1, got {self.prune_min} and {self.prune_max}",
        )
        require(self.tau > 0, f"tau must be > 0, got {self.tau}")
        require(self.clusters >= 0, f"clusters must be >= 0 (0 = by silhouette), got {self.clusters}")
        require(self.pruning in PRUNING, f"pruning must be one of {PRUNING}, got {self.pruning!r}")


def pruning_ratios(rng: np.random.Generator, count: int, p: MSCFLParams) -> np.ndarray:
    """Each client's pruning ratio pr ~ N(prune_mean, prune_std^2), clipped to [prune_min, prune_max]."""
    return np.clip(rng.normal(p.prune_mean, p.prune_std, count), p.prune_min, p.prune_max)


def prunable(params: Params) -> tuple[str, ...]:
    """Names of the weight matrices and kernels (two or more dimensions); biases and norm scales are never pruned."""
    return tuple(n for n, p in params.items() if p.dim() >= 2)


def magnitude_masks(models: Params, names: tuple[str, ...], ratios: np.ndarray, channels: bool = False) -> Params:
    """Per model row and layer, a 0/1 mask with the round(ratio x units) lowest-scored units at 0.

    A unit is an entry scored by its magnitude, or, with ``channels``, a conv layer's output
    channel scored by its filter's L1 norm (dense layers stay entry by entry). Choice:
    layer-wise pruning (the paper allows any MP technique); ties are broken by position, so
    exactly that many units are pruned.
    """
    out = {}
    for name in names:
        p = models[name]
        by_channel = channels and p.dim() > 3  # a bank's conv kernels: rows x out x in x height x width
        scores = p.abs().reshape(len(p), p.shape[1], -1).sum(2) if by_channel else p.reshape(len(p), -1).abs()
        ranks = scores.argsort(dim=1, stable=True).argsort(dim=1, stable=True)
        pruned = torch.as_tensor(np.rint(ratios * scores.shape[1]), device=p.device)
        kept = (ranks >= pruned[:, None]).to(p.dtype)
        out[name] = kept.view(kept.shape + (1,) * (p.dim() - 2)).expand_as(p).contiguous() if by_channel else kept.view_as(p)
    return out


def mask_bits(masks: Params, names: tuple[str, ...]) -> np.ndarray:
    """Each row's masks flattened in ``names`` order and packed to bits (rows x ceil(L / 8) uint8)."""
    flat = torch.cat([masks[n].reshape(len(masks[n]), -1) for n in names], dim=1)
    return np.packbits(flat.bool().cpu().numpy(), axis=1)


def hamming_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise Hamming distance between packed masks (number of positions that differ)."""
    work.charge(3 * a.size)  # xor, bit count and sum per packed byte
    distances: np.ndarray = np.bitwise_count(np.bitwise_xor(a, b)).sum(axis=1).astype(np.int64)
    return distances


def inconsistent(previous: np.ndarray, current: np.ndarray, tau: float) -> np.ndarray:
    """Consistency check: H_t > tau x H_{t-1}, for clients with both distances (``previous`` < 0 means none yet)."""
    return (previous >= 0) & (current > tau * previous)


def count_target(a: np.ndarray, b: np.ndarray, ratio: float, target: int) -> float:
    """Algorithm 2's COUNTTARGET: positions where both masks equal ``target``, divided by ratio x length."""
    return float(((a == b) & (a == target)).sum() / (ratio * len(a)))


def structure_similarity(masks: np.ndarray) -> np.ndarray:
    """Algorithm 2 for every pair of 0/1 mask rows (clients x L): COUNTTARGET on the side of the smallest ratio.

    For clients i, j the smallest of (pr_i, pr_j, rr_i, rr_j) picks pruned positions (target 0,
    ratio min(pr)) or retained ones (target 1, ratio min(rr)); ties go to the pruned side.
    Choice: pr and rr are read from the masks themselves (they equal the drawn ratios up to rounding).
    """
    x = as_kernel_tensor(masks)
    length = x.shape[1]
    retained = x.mean(1)
    pr_min = torch.minimum((1 - retained)[:, None], (1 - retained)[None, :])
    rr_min = torch.minimum(retained[:, None], retained[None, :])
    use_pruned = pr_min <= rr_min
    work.charge(2 * work.matmul(len(x), length, len(x)) + x.numel())
    counts = torch.where(use_pruned, (1 - x) @ (1 - x).T, x @ x.T)
    ratio = torch.where(use_pruned, pr_min, rr_min).clamp_min(1 / length)
    return (counts / (ratio * length)).double().cpu().numpy()


def structure_clusters(similarity: np.ndarray, clusters: int) -> np.ndarray:
    """Average-linkage hierarchical clustering on 1 - similarity into ``clusters`` groups, or K in 2..10 by silhouette when 0.

    Labels are 0..K-1; one cluster when no K in range gives at least two groups.
    """
    distance = np.clip(1 - (similarity + similarity.T) / 2, 0, None)
    np.fill_diagonal(distance, 0)
    if len(distance) < 2:
        return np.zeros(len(distance), dtype=np.int64)
    tree = linkage(squareform(distance, checks=False), method="average")
    work.charge(work.linkage(len(distance)))
    if clusters:
        return relabel(fcluster(tree, clusters, criterion="maxclust"))
    best, best_score = np.zeros(len(distance), dtype=np.int64), -np.inf
    for k in range(CLUSTER_RANGE[0], min(CLUSTER_RANGE[1], len(distance) - 1) + 1):
        labels = fcluster(tree, k, criterion="maxclust")
        if len(np.unique(labels)) < 2:
            continue
        score = silhouette_score(distance, labels, metric="precomputed")
        work.charge(work.silhouette(len(distance)))
        if score > best_score:
            best, best_score = relabel(labels), score
    return best


def masked_average(bank: Params, trained: Params, masks: Params, cluster: np.ndarray, weights: np.ndarray) -> Params:
    """Each bank entry becomes the weighted mean over the participants of its cluster that retained it.

    Parameters without a mask count as retained by everyone; an entry no participant of its
    cluster retained (or a cluster without participants) keeps the bank's value.
    """
    device, dtype = next(iter(bank.values())).device, next(iter(bank.values())).dtype
    index = torch.as_tensor(cluster, device=device)
    w = torch.as_tensor(weights, dtype=dtype, device=device)
    out = {}
    for name, models in bank.items():
        entry = w.view((-1,) + (1,) * (models.dim() - 1)) * (masks[name] if name in masks else 1)
        entry = entry.expand_as(trained[name])
        work.charge(2 * work.aggregation(*trained[name].reshape(len(cluster), -1).shape))  # values and weights, entry by entry
        total = torch.zeros_like(models).index_add_(0, index, entry)
        summed = torch.zeros_like(models).index_add_(0, index, trained[name] * entry)
        out[name] = torch.where(total > 0, summed / total.clamp(min=1e-30), models)
    return out


class MSCFL(Method):
    """MSCFL; participants are drawn uniformly, except that every client takes part in the first round.

    A client round is one scheduler round of two phases (pre-training, then pruning on the
    client and training the pruned model), so MSCFL gets as many communication rounds as the
    methods it is compared with. Evaluation always uses the cluster models. Choices:
    - every client pre-trains in the first round, all from the shared initial model, so the
      first clustering compares masks of one starting point (the paper's full participation);
      later re-clusterings use each client's latest mask;
    - one epoch = ceil(window size / batch size) steps for each participant;
    - after a clustering the Hamming history restarts (as in the authors' code): masks pruned
      from the old cluster models are not compared with masks pruned from the new ones, so a
      client needs three masks after a clustering before it can trigger the next one;
    - a new clustering's models start as the mean of their members' old cluster models, then
      this round's uploads are averaged in;
    - COUNTTARGET's r is the pair's smaller ratio (Algorithm 2 writes pr or rr without an index); ties go to pruned;
    - H_t and H_{t-1} are a participant's distances between its own last three masks, which under partial
      participation come from the rounds it took part in, not from consecutive rounds.
    Counting: a participant downloads its cluster model and uploads the trained pruned model
    (counted dense) plus the mask at one bit per prunable entry (L / 32 float32 numbers); the
    pruning is the client's work, not the server's.
    """

    name = "mscfl"
    Params = MSCFLParams

    @property
    def reclusters(self) -> bool:
        """Only with re-clustering on mask inconsistency (MSCFL-alpha: ``migrate`` false)."""
        return bool(self.params.migrate)

    def setup(self, ctx: RunContext) -> None:
        """One shared model; pruning ratios drawn once per client; no masks yet."""
        super().setup(ctx)
        self.ratios = pruning_ratios(np.random.default_rng([ctx.seed, RATIO_STREAM]), ctx.num_clients, self.params)
        self.names = prunable(ctx.init_params)
        self.mask_length = sum(ctx.init_params[n].numel() for n in self.names)
        self.masks = np.zeros((ctx.num_clients, -(-self.mask_length // 8)), dtype=np.uint8)
        self.seen = np.zeros(ctx.num_clients, dtype=bool)  # has uploaded a mask
        self.fresh = np.zeros(ctx.num_clients, dtype=bool)  # has uploaded a mask since the last clustering
        self.hamming = np.full(ctx.num_clients, -1, dtype=np.int64)  # H_{t-1} per client; -1 = not yet
        self.clustered = False

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Every client in the first round, then a uniform draw: pre-training, then pruning and training the pruned model."""
        if self.seen.all():
            participants = sample_participants(rng, self.ctx.num_clients, self.ctx.train.participants)
            pretrain = self.params.pretrain_epochs
        else:
            participants, pretrain = np.arange(self.ctx.num_clients), self.params.first_pretrain_epochs
        channels = self.params.pruning == "channels"
        prune = partial(magnitude_masks, names=self.names, ratios=self.ratios[participants], channels=channels)
        return Plan(
            participants,
            self.assignment[participants],
            mu=self.params.mu,
            upload_floats=-(-self.mask_length // BITS_PER_FLOAT),
            phases=(Phase(epochs=pretrain), Phase(epochs=self.params.epochs, prune=prune)),
        )

    def aggregate(self, rnd: int, result: TrainResult) -> None:
        """Check each participant's mask against its last ones, re-cluster on inconsistency, average under the masks."""
        participants = result.plan.participants
        bits = mask_bits(result.masks, self.names)
        current = np.where(self.fresh[participants], hamming_distances(self.masks[participants], bits), -1)
        drifted = inconsistent(self.hamming[participants], current, self.params.tau)
        self.measure_consistency(self.hamming[participants], current, drifted)
        self.masks[participants], self.hamming[participants] = bits, current
        self.seen[participants] = self.fresh[participants] = True
        if self.seen.all() and (not self.clustered or (self.params.migrate and drifted.any())):
            self._cluster()
            self.fresh[:], self.hamming[:] = False, -1
        self.models = masked_average(self.models, result.params, result.masks, self.assignment[participants], result.num_samples)

    def measure_consistency(self, previous: np.ndarray, current: np.ndarray, drifted: np.ndarray) -> None:
        """Record each participant's H_t and, where H_{t-1} exists, H_t / H_{t-1} (the test is ratio > tau); then the count."""
        for before, now in zip(previous, current):
            if now >= 0:
                self.events.measure("mscfl_hamming", now)
            if now >= 0 and before > 0:
                self.events.measure("mscfl_hamming_ratio", now / before)
        self.events.measure("mscfl_inconsistent_clients", int(drifted.sum()))

    def _cluster(self) -> None:
        masks = np.unpackbits(self.masks, axis=1, count=self.mask_length)
        labels = structure_clusters(structure_similarity(masks), self.params.clusters)
        self.models = remix_models(self.models, self.assignment, labels)
        self.assignment, self.clustered = labels, True
        self.events.clustering(labels)
