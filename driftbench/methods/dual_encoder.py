"""FedDAG's dual encoder (001 section 4) realised inside the run's model, and its cluster complementarity graph (Eq. 11-14).

Simplification: the two encoders are the two halves of the run's own encoder. Every hidden
layer's units are split in two; weights between halves are zero and never updated (update
masks hold them), so half 0 computes phi1 and half 1 phi2 from the same input, each at half
the width, and the classifier reads their concatenation (Eq. 15). This needs a feed-forward
chain of Linear/Conv2d layers (MLP, LeNet-5) with even widths.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import rankdata

from driftbench.engine.batched import Params
from driftbench.errors import ConfigError
from driftbench.methods import server_work as work


def encoder_halves(params: Params, classifier: str) -> dict[str, torch.Tensor]:
    """For every parameter, each entry's owner: 0 (primary encoder), 1 (secondary), -1 (cross-half, kept zero), 2 (classifier)."""
    owners: dict[str, torch.Tensor] = {}
    previous_out = None
    for name, p in params.items():
        if name.startswith(f"{classifier}."):
            owners[name] = torch.full(p.shape, 2, dtype=torch.int8)
            continue
        out = p.shape[0]
        if out % 2:
            raise ConfigError(f"feddag's dual encoder needs even layer widths; parameter {name!r} has {out} units")
        rows = (torch.arange(out) >= out // 2).to(torch.int8).view(-1, *([1] * (p.dim() - 1)))
        if p.dim() == 1 or previous_out is None:
            owners[name] = rows.expand(p.shape).clone()
        else:
            fan_in = p.shape[1]
            if fan_in % previous_out:
                raise ConfigError(
                    f"feddag's dual encoder needs a chain of Linear/Conv2d layers; {name!r} takes {fan_in} inputs "
                    f"after a layer of {previous_out} units"
                )
            cols = (torch.arange(fan_in) >= fan_in // 2).to(torch.int8).view(1, -1, *([1] * (p.dim() - 2)))
            owners[name] = torch.where(rows == cols, rows, torch.tensor(-1, dtype=torch.int8)).expand(p.shape).clone()
        if p.dim() > 1:
            previous_out = out
    return owners


def owner_masks(owners: dict[str, torch.Tensor], trained: tuple[int, ...], like: Params) -> Params:
    """0/1 masks (dtype and device of ``like``) selecting the entries owned by any of ``trained``."""
    return {
        name: torch.isin(o, torch.tensor(trained, dtype=torch.int8)).to(like[name].dtype).to(like[name].device)
        for name, o in owners.items()
    }


def rarity_ranks(counts: np.ndarray) -> np.ndarray:
    """Rank of each class among the classes a client holds (0 = rarest; ties share the lowest rank); -1 for absent classes.

    Choice: the paper ranks present classes only; an absent class gets rank -1, i.e. a demand
    one above the rarest present class and a supply of 0.
    """
    work.charge(work.sort(*counts.shape))
    ranks = np.full(counts.shape, -1.0)
    for i, row in enumerate(counts):
        present = row > 0
        ranks[i, present] = rankdata(row[present], method="min") - 1
    return ranks


def complementarity(counts: np.ndarray, angles: np.ndarray, assignment: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """Eq. 11-14: H[p, q] = sum_c demand[p, c] x supply[q, c] x alignment[p, q, c]; -inf on the diagonal.

    Alignment averages 1 - angle / 90 (angles clipped to [0, 90]) over client pairs across the two clusters.
    """
    ranks = rarity_ranks(counts)
    distinct = (counts > 0).sum(axis=1, keepdims=True)
    demand_client, supply_client = distinct - ranks, ranks + 1
    members = [assignment == z for z in clusters]
    demand = np.stack([demand_client[m].sum(axis=0) for m in members])
    supply = np.stack([supply_client[m].mean(axis=0) for m in members])
    work.charge(4 * angles.size)  # clip, scale and complement each angle, then the cluster-pair means
    gamma = 1.0 - np.clip(angles, 0.0, 90.0) / 90.0
    alignment = np.stack([np.stack([gamma[np.ix_(mp, mq)].mean(axis=(0, 1)) for mq in members]) for mp in members])
    scores: np.ndarray = np.einsum("pc,qc,pqc->pq", demand, supply, alignment)
    np.fill_diagonal(scores, -np.inf)
    return scores


def top_sources(scores: np.ndarray, k: int) -> np.ndarray:
    """The CC-graph: edge p -> q (p learns from q) for the ``k`` largest finite scores of each row."""
    edges = np.zeros(scores.shape, dtype=bool)
    for p, row in enumerate(scores):
        finite = np.flatnonzero(np.isfinite(row))
        edges[p, finite[np.argsort(-row[finite], kind="stable")[:k]]] = True
    return edges
