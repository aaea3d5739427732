"""The table ``driftbench run`` prints: per method, accuracy, time-to-accuracy speed-up over FedAvg, recovery and ARI."""

from __future__ import annotations

import numpy as np

from driftbench.record.metrics import speedup
from driftbench.record.schema import Summary
from driftbench.record.summarize import REFERENCE, summary_tta


def table_rows(summaries: list[Summary]) -> list[dict[str, str]]:
    """One printable row per run: accuracy, TTA speed-up over FedAvg, recovery, ARI, record path."""
    ref_tta = summary_tta(next((s for s in summaries if s.method == REFERENCE), None))
    rows = []
    for s in summaries:
        drops = [r.drop for r in s.recovery if r.drop is not None]
        recover = [r.rounds_to_recover for r in s.recovery if r.rounds_to_recover is not None]
        dropped = sum(r.outcome in ("recovered", "not_recovered") for r in s.recovery)
        gain = speedup(ref_tta, s.time_to_accuracy)
        rows.append(
            {
                "method": s.method + (" (oracle)" if s.oracle else ""),
                "final_acc": f"{s.final_accuracy:.3f}",
                "tta_speedup": "-" if gain is None else f"{gain:.2f}x",
                "mean_drop": f"{np.mean(drops):.3f}" if drops else "-",
                "rounds_to_recover": f"{np.mean(recover):.1f}" if recover else "-",
                "recovered": f"{len(recover)}/{dropped}",
                "ari_mean": "-" if s.ari_mean is None else f"{s.ari_mean:.3f}",
                "status": s.status,
                "run_dir": s.run_dir,
            }
        )
    return rows
