"""The table ``driftbench run`` prints: per method, accuracy, time-to-accuracy speed-up over FedAvg, recovery and ARI."""

from __future__ import annotations

import numpy as np

from driftbench.record.metrics import SMOOTHING, SUSTAIN, TARGET_BANDS, speedup
from driftbench.record.schema import Summary, TimeToAccuracy
from driftbench.record.summarize import REFERENCE, summary_tta

OUTCOME_TEXT = {"not_reached": "not reached", "not_distinguishable": "n.d."}  # TTA outcomes without a number


def method_label(method: str, oracle: bool, degenerate: bool) -> str:
    """A method's name in a table: "(oracle)" after an upper bound, "†" after a degenerate run (``DEGENERACIES``)."""
    return method + (" (oracle)" if oracle else "") + (" †" if degenerate else "")


def tta_cells(reference: TimeToAccuracy | None, tta: TimeToAccuracy | None) -> tuple[str, str]:
    """The round a run reached its target (or why it has none) and its speed-up over the reference's time."""
    if tta is None:
        return "-", "-"
    if not tta.reached:
        return OUTCOME_TEXT[tta.outcome], "-"
    gain = speedup(reference, tta)
    return str(tta.rounds), "-" if gain is None else f"{gain:.2f}x"


def table_rows(summaries: list[Summary]) -> list[dict[str, str]]:
    """One printable row per run: accuracy, TTA round and speed-up over FedAvg, mean accuracy, recovery, ARI, record path."""
    ref_tta = summary_tta(next((s for s in summaries if s.method == REFERENCE), None))
    rows = []
    for s in summaries:
        drops = [r.drop for r in s.recovery if r.drop is not None]
        recover = [r.rounds_to_recover for r in s.recovery if r.rounds_to_recover is not None]
        dropped = sum(r.outcome in ("recovered", "not_recovered") for r in s.recovery)
        tta_round, gain = tta_cells(ref_tta, s.time_to_accuracy)
        rows.append(
            {
                "method": method_label(s.method, s.oracle, bool(s.degenerate)),
                "final_acc": f"{s.final_accuracy:.3f}",
                "tta_speedup": gain,
                "tta_round": tta_round,
                "mean_acc": f"{s.streaming.mean_accuracy:.3f}",
                "mean_drop": f"{np.mean(drops):.3f}" if drops else "-",
                "rounds_to_recover": f"{np.mean(recover):.1f}" if recover else "-",
                "recovered": f"{len(recover)}/{dropped}",
                "ari_mean": "-" if s.ari_mean is None else f"{s.ari_mean:.3f}",
                "status": s.status + (f" ({', '.join(s.degenerate)})" if s.degenerate else ""),
                "run_dir": s.run_dir,
            }
        )
    return rows


def target_line(summaries: list[Summary]) -> list[str]:
    """How the comparison's time-to-accuracy target was chosen, as one line (none without a target)."""
    tta = next((s.time_to_accuracy for s in summaries if s.time_to_accuracy is not None), None)
    if tta is None:
        return []
    t = tta.target
    if t.rule == "fixed":
        return [f"time-to-accuracy target {t.value:.3f} (--target); n.d.: final accuracy within the run's noise band of it"]
    return [
        f"time-to-accuracy target {t.value:.3f}: {t.reference}'s plateau {t.reference_level:.3f} less {TARGET_BANDS} x its "
        f"noise band {t.noise:.3f}; reached when the {SMOOTHING}-evaluation mean holds it {SUSTAIN} evaluations running; "
        "n.d.: final accuracy within the noise band of it"
    ]
