"""Local training in phases (``Plan.phases``) and reports of trained models (``Plan.report``) through the real scheduler."""

import numpy as np
import pytest
import torch

from driftbench.contracts import RecordedSpec, tiny_spec
from driftbench.errors import RunError
from driftbench.methods.base import Method, ProxParams
from driftbench.methods.catalog import IMPLEMENTATIONS
from driftbench.methods.queries import FLOAT_BYTES
from driftbench.methods.rounds import Phase, Plan, RunContext
from driftbench.scheduler import Checkpointing, RunSpec, run
from driftbench.scheduler.clients import class_balanced
from driftbench.traces.catalog import generate

HEAD = ("5.weight", "5.bias")  # the tiny MLP's classifier layer (Flatten, Linear, ReLU, Linear, ReLU, Linear)


def sizes(features, probs, labels):
    """A report of two numbers: the window's size and its mean feature norm."""
    return torch.stack([torch.tensor(float(len(labels))), features.norm(dim=1).mean().cpu()])


class Phased(Method):
    """One global model; every round the first four clients train the classifier, then the rest of the model, from
    model 0, and (``branch``) the classifier alone from model 1 (the initial model, parked) as a side branch.

    Unregistered (no ``name`` in its body); each round's TrainResult is kept in ``results``.
    """

    Params = ProxParams
    branch = True

    def setup(self, ctx: RunContext) -> None:
        super().setup(ctx)
        self.results: list = []

    def plan(self, rnd, clients, rng):
        self.models = {n: torch.cat([p[:1], self.ctx.init_params[n].unsqueeze(0)]) for n, p in self.models.items()}
        participants = np.arange(4)
        head = {n: p.new_tensor(float(n in HEAD)).expand(4, *p.shape) for n, p in self.ctx.init_params.items()}
        body = {n: 1 - m for n, m in head.items()}
        phases = [Phase(local_steps=1, lr_scale=2.0, masks=head), Phase(masks=body)]
        if self.branch:
            phases.append(Phase(start=np.ones(4, dtype=np.int64), epochs=1.0, per_class=1, masks=head))
        return Plan(participants, np.zeros(4, dtype=np.int64), phases=tuple(phases), report=sizes, download_floats=3)

    def aggregate(self, rnd, result):
        self.results.append(result)
        self.models = {n: result.params[n].mean(0, keepdim=True) for n in self.models}


class Unbranched(Phased):
    """``Phased`` without its side branch."""

    branch = False


@pytest.fixture(scope="module")
def phased_runs(tmp_path_factory):
    """For ``Phased`` and ``Unbranched``: the method object, the summary and the trace of a tiny label-swap run."""
    spec = tiny_spec("label-swap")
    trace, pool = generate(spec)
    runs = {}
    for cls in (Phased, Unbranched):
        IMPLEMENTATIONS[cls.__name__] = cls
        try:
            method = RecordedSpec(cls.__name__, cls.__name__, "", "", ProxParams())
            out = tmp_path_factory.mktemp(cls.__name__)
            summary = run(RunSpec(trace, pool, spec.train, method, 0, "cpu", out, quiet=True, checkpointing=Checkpointing(0)))
        finally:
            del IMPLEMENTATIONS[cls.__name__]
        runs[cls] = (method.methods[0], summary, trace)
    return runs


def test_phases_chain_the_main_line_and_a_side_branch_starts_from_its_own_rows(phased_runs):
    """Phase 1 moves the classifier only, phase 2 the rest only, so the upload has phase 1's classifier; the side
    branch starts from the parked initial model (its body is the initial body) and trains its classifier."""
    method, _, _ = phased_runs[Phased]
    result = method.results[-1]
    first, second, branch = result.phases
    init = method.ctx.init_params
    start = method.results[-2].params  # round 4's uploads: their mean is the model round 5 starts from
    for n in init:
        if n in HEAD:
            assert torch.equal(second[n], first[n]) and torch.equal(result.params[n], first[n])
            assert not torch.allclose(first[n], start[n].mean(0).expand_as(first[n]))
            assert not torch.allclose(branch[n], init[n].expand_as(branch[n]))
        else:
            torch.testing.assert_close(first[n], start[n].mean(0).expand_as(first[n]))
            assert not torch.allclose(second[n], first[n])
            assert torch.equal(branch[n], init[n].expand_as(branch[n]))


def test_a_side_branch_leaves_the_main_line_as_it_was_without_it(phased_runs):
    """Placed last, the branch draws its batches after the main line's: the uploads equal those of the plan without it."""
    branched, unbranched = phased_runs[Phased][0].results, phased_runs[Unbranched][0].results
    for a, b in zip(branched, unbranched):
        for n in a.params:
            assert torch.equal(a.params[n], b.params[n])
    assert len(unbranched[-1].phases) == 2 and len(branched[-1].phases) == 3


def test_reports_and_extra_downloads_are_counted(phased_runs):
    """Every round each of the 4 participants uploads a 2-number report of its trained model (a forward pass over its
    window) and downloads 3 numbers beyond the model."""
    method, summary, trace = phased_runs[Phased]
    rounds = trace.rounds
    assert summary.overhead.extra_upload_bytes == rounds * 4 * 2 * FLOAT_BYTES
    assert summary.overhead.extra_download_bytes == rounds * 4 * 3 * FLOAT_BYTES
    assert summary.overhead.client_extra_passes == rounds * 4
    reports = method.results[-1].reports
    windows = trace.seg_train[trace.segments_at(rounds - 1)[:4]]
    assert reports.shape == (4, 2) and reports[:, 0].tolist() == (windows[:, 1] - windows[:, 0]).tolist()


def test_class_balanced_takes_the_rarest_class_count_of_each_class_at_most_per_class():
    """Classes 0 x 5, 1 x 2, 3 x 4: per_class 5 takes 2 of each held class (6 samples), per_class 1 one of each."""
    window = np.arange(100, 111)
    labels = np.array([0, 0, 0, 0, 0, 1, 1, 3, 3, 3, 3])
    rng = np.random.default_rng(0)
    picked = class_balanced(rng, window, labels, 5)
    assert np.bincount(labels[picked - 100]).tolist() == [2, 2, 0, 2] and len(set(picked)) == 6
    assert np.bincount(labels[class_balanced(rng, window, labels, 1) - 100]).tolist() == [1, 1, 0, 1]


def test_a_plan_refuses_phases_beside_its_own_masks_or_without_a_main_line():
    one = np.zeros(1, dtype=np.int64)
    with pytest.raises(RunError, match="sets masks, record and local_steps in its phases"):
        Plan(one, one, local_steps=3, phases=(Phase(),))
    with pytest.raises(RunError, match="needs a main line"):
        Plan(one, one, phases=(Phase(start=one),))


def first_input_cut(models):
    """Prune the classifier weight's first input column, and nothing else."""
    mask = torch.ones_like(models["5.weight"])
    mask[:, :, 0] = 0
    return {"5.weight": mask}


class Pruned(Phased):
    """One global model; every round the first four clients train it, prune it with ``first_input_cut`` and train on."""

    def plan(self, rnd, clients, rng):
        phases = (Phase(local_steps=1), Phase(local_steps=2, prune=first_input_cut))
        return Plan(np.arange(4), np.zeros(4, dtype=np.int64), phases=phases)


def test_a_pruning_phase_zeroes_what_it_prunes_keeps_it_at_zero_and_returns_its_masks(tmp_path):
    spec = tiny_spec("label-swap")
    trace, pool = generate(spec)
    IMPLEMENTATIONS["Pruned"] = Pruned
    try:
        method = RecordedSpec("Pruned", "Pruned", "", "", ProxParams())
        run(RunSpec(trace, pool, spec.train, method, 0, "cpu", tmp_path, quiet=True, checkpointing=Checkpointing(0)))
    finally:
        del IMPLEMENTATIONS["Pruned"]
    results = method.methods[0].results
    assert results and all(list(r.masks) == ["5.weight"] for r in results)
    for r in results:
        weight = r.params["5.weight"]
        assert torch.equal(r.masks["5.weight"][:, :, 0], torch.zeros_like(weight[:, :, 0]))
        assert not weight[:, :, 0].any() and weight[:, :, 1:].all()  # pruned at zero after training; the rest trained
    with pytest.raises(RunError, match="fixed masks or a prune function"):
        Phase(masks={}, prune=first_input_cut)
