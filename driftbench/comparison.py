"""``driftbench run``: one trace against several methods, time-to-accuracy against FedAvg, the result table."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from driftbench.record.metrics import speedup
from driftbench.record.files import SUMMARY, read_json, run_dir
from driftbench.record.summarize import REFERENCE, summary_tta
from driftbench.errors import ConfigError
from driftbench.methods.catalog import MethodSpec, load_method
from driftbench.scheduler import Checkpointing, RunSpec, run
from driftbench.traces.catalog import resolve

log = logging.getLogger("driftbench")


def run_comparison(
    trace_name: str,
    methods: list[str],
    trace_sets: dict[str, str],
    method_sets: dict[str, str],
    seed: int,
    device: str,
    out: Path,
    target: float | None,
    quiet: bool,
    checkpointing: Checkpointing = Checkpointing(),
) -> list[dict[str, Any]]:
    """Run every method on the trace (FedAvg first, so the others can use its final accuracy as TTA target).

    ``checkpointing`` applies to each method's run folder: on resume, complete runs are kept and incomplete ones continue.
    """
    resolved = resolve(trace_name, trace_sets)
    names = methods or list(resolved.methods)
    specs = [load_method(m) for m in names]
    if method_sets:
        specs = [load_method(m, sets) for m, sets in zip(names, method_overrides(specs, method_sets))]
    specs.sort(key=lambda s: s.name != REFERENCE)
    summaries = []
    for spec in specs:
        run_target = target if target is not None else reference_target(out, resolved.trace, spec.name, seed)
        run_spec = RunSpec(resolved.trace, resolved.pool, resolved.train, spec, seed, device, out, run_target, quiet, checkpointing)
        log.info("running %s on %s (seed %d)", spec.name, resolved.trace.name, seed)
        summaries.append(run(run_spec))
    return summaries


def method_overrides(specs: list[MethodSpec], sets: dict[str, str]) -> list[dict[str, str]]:
    """Each method's share of the ``method.KEY`` overrides; a key that no selected method has is an error."""
    fields = [set(spec.params.__dataclass_fields__) for spec in specs]
    unknown = sorted(set(sets) - set().union(*fields))
    if unknown:
        allowed = "; ".join(f"{spec.name}: {', '.join(sorted(f)) or '(none)'}" for spec, f in zip(specs, fields))
        raise ConfigError(f"--set method.{unknown[0]}: no selected method has this parameter ({allowed})")
    return [{k: v for k, v in sets.items() if k in f} for f in fields]


def reference_target(out: Path, trace: Any, method: str, seed: int) -> float | None:
    """FedAvg's final accuracy on the same trace and seed (None for FedAvg itself, which uses its own)."""
    if method == REFERENCE:
        return None
    path = run_dir(out, trace.name, REFERENCE, seed) / SUMMARY
    if path.exists():
        ref = read_json(path)
        if ref.get("trace_hash") == trace.content_hash() and ref.get("status") == "ok":
            return float(ref["final_accuracy"])
    log.info("no FedAvg run of this trace and seed under %s: time-to-accuracy not computed for %s", out, method)
    return None


def table_rows(summaries: list[dict[str, Any]]) -> list[dict[str, str]]:
    """One printable row per run: accuracy, TTA speed-up over FedAvg, recovery, ARI, record path."""
    ref = next((s for s in summaries if s["method"] == REFERENCE), None)
    ref_tta = summary_tta(ref)
    rows = []
    for s in summaries:
        drops = [r["drop"] for r in s["recovery"] if r["drop"] is not None]
        recover = [r["rounds_to_recover"] for r in s["recovery"] if r["rounds_to_recover"] is not None]
        gain = speedup(ref_tta, summary_tta(s))
        rows.append({
            "method": s["method"] + (" (oracle)" if s["oracle"] else ""),
            "final_acc": f"{s['final_accuracy']:.3f}",
            "tta_speedup": "-" if gain is None else f"{gain:.2f}x",
            "mean_drop": f"{np.mean(drops):.3f}" if drops else "-",
            "rounds_to_recover": f"{np.mean(recover):.1f}" if recover else "-",
            "recovered": f"{len(recover)}/{len(s['recovery'])}",
            "ari_mean": "-" if s["ari_mean"] is None else f"{s['ari_mean']:.3f}",
            "status": s["status"],
            "run_dir": s["run_dir"],
        })
    return rows
