"""Methods cannot reach ground truth: nothing a method receives leads, through any attribute, to the trace's groups or events."""

import types

import numpy as np
import pytest
import torch

from driftbench.methods.catalog import IMPLEMENTATIONS, load_method
from driftbench.scheduler import RunSpec, Scheduler
from driftbench.traces.catalog import apply_sets, generate, load_spec
from driftbench.traces.model import Trace

TINY = {"clients": "8", "rounds": "2", "drift_every": "1", "train_samples": "10", "test_samples": "5", "train.participants": "4"}


def reachable(root):
    """Every object reachable from ``root`` through attributes, containers, bound methods and closures."""
    seen, stack = {}, [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (str, bytes, int, float, bool, type(None), type, types.ModuleType)):
            continue
        seen[id(obj)] = obj
        if isinstance(obj, dict):
            stack += [*obj.keys(), *obj.values()]
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack += list(obj)
        elif isinstance(obj, types.MethodType):
            stack.append(obj.__self__)
        elif isinstance(obj, types.FunctionType):
            stack += [c.cell_contents for c in obj.__closure__ or ()]
        elif isinstance(obj, (np.ndarray, torch.Tensor)):
            continue
        if hasattr(obj, "__dict__"):
            stack.append(vars(obj))
        stack += [getattr(obj, s) for s in getattr(type(obj), "__slots__", ()) if hasattr(obj, s)]
    return list(seen.values())


def captured_queries(name, tmp_path):
    """The scheduler, and the ClientQueries the method received in round 1 (after a drift event)."""
    spec = apply_sets(load_spec("label-swap"), TINY)
    trace, pool = generate(spec)
    scheduler = Scheduler(RunSpec(trace, pool, spec.train, load_method(name), 0, "cpu", tmp_path, quiet=True))
    scheduler.begin()
    got = []
    plan = scheduler.method.plan
    scheduler.method.plan = lambda rnd, queries, rng: got.append(queries) or plan(rnd, queries, rng)
    scheduler.step(0)
    scheduler.step(1)
    del scheduler.method.plan
    return scheduler, got[-1]


@pytest.mark.parametrize("name", ["fedavg", "fielding", "ifca"])
def test_what_a_method_receives_leads_nowhere_near_the_answer(name, tmp_path):
    scheduler, queries = captured_queries(name, tmp_path)
    trace = scheduler.trace
    secrets = [trace.seg_group, trace.event_round, trace.event_clients, trace.event_ptr, trace.event_magnitude]
    for obj in reachable([queries, scheduler.method]):
        assert not isinstance(obj, (Trace, Scheduler, RunSpec)), f"{name}: reaches a {type(obj).__name__}"
        if isinstance(obj, np.ndarray):
            assert not any(np.shares_memory(obj, s) for s in secrets), f"{name}: reaches ground truth"
    with pytest.raises(Exception, match="only an oracle"):
        queries.ground_truth()


def test_the_oracle_gets_ground_truth_through_its_own_query(tmp_path):
    scheduler, queries = captured_queries("oracle", tmp_path)
    assert IMPLEMENTATIONS["oracle"].oracle
    np.testing.assert_array_equal(queries.ground_truth(), scheduler.trace.groups_at(1))
