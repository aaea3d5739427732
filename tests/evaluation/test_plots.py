"""Leaderboard plots on synthetic curves: statistics over seeds, shared round axis, drift-event lines, re-clustering stars,
distinct styles for coinciding curves, fixed ARI axis, PNG and SVG output, and no matplotlib chatter."""

import logging
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib", reason="the leaderboard's plots need matplotlib (pip install 'driftbench[plots]')")

from driftbench.evaluation.plots import (  # noqa: E402
    CAPTIONS,
    MethodRuns,
    accuracy_figure,
    accuracy_time_figure,
    ari_figure,
    clients_figure,
    clusters_figure,
    method_styles,
    quiet_matplotlib,
    render,
    seed_stats,
    summary_figure,
    trace_plots,
)
from driftbench.record.schema import ROUND_COLUMNS  # noqa: E402

ROUNDS = np.arange(0, 20, 2)  # evaluated every other round
EVENTS = [5, 11]


def table(accuracy, ari=np.nan, clusters=2):
    """A rounds.csv table with the given accuracy per evaluation."""
    accuracy = np.asarray(accuracy, dtype=float)
    rows = pd.DataFrame({c: 0.0 for c in ROUND_COLUMNS}, index=range(len(ROUNDS)))
    rows["round"] = ROUNDS
    rows["sim_seconds"] = ROUNDS * 1.5
    rows["accuracy_mean"] = accuracy
    rows["accuracy_p10"], rows["accuracy_p90"] = accuracy - 0.1, accuracy + 0.1
    rows["ari"] = ari
    rows["n_clusters"] = clusters
    return rows


def runs():
    base = np.linspace(0.2, 0.8, len(ROUNDS))
    ari = np.where(ROUNDS >= 6, 0.5, np.nan)
    return [
        MethodRuns("a", 2, seed_stats([table(base, ari), table(base + 0.1, ari)]), [6, 13]),
        MethodRuns("b", 1, seed_stats([table(base)]), []),
        MethodRuns("c", 1, seed_stats([table(base)]), []),  # the same curve as b
    ]


def by_gid(fig, prefix):
    return [a for ax in fig.axes for a in ax.get_children() if (a.get_gid() or "").startswith(prefix)]


def test_seed_stats_are_mean_min_and_max_per_round():
    stats = seed_stats([table(np.full(len(ROUNDS), 0.2)), table(np.full(len(ROUNDS), 0.6))])
    assert list(stats["round"]) == list(ROUNDS)
    assert np.allclose(stats["accuracy_mean_mean"], 0.4)
    assert np.allclose(stats["accuracy_mean_min"], 0.2) and np.allclose(stats["accuracy_mean_max"], 0.6)
    assert np.allclose(stats["accuracy_p90_mean"], 0.5) and stats["ari_mean"].isna().all()


@pytest.mark.parametrize("build", [accuracy_figure, clients_figure, clusters_figure, ari_figure])
def test_round_plots_share_the_axis_and_mark_events_and_reclusters(build):
    data = runs()
    with quiet_matplotlib():
        fig = build("t", data, EVENTS, method_styles([r.method for r in data]))
    for ax in [a for a in fig.axes if a.get_visible()]:
        assert ax.get_xlim() == (0, 18) and ax.get_xlabel() == "round"
        lines = [a for a in ax.get_children() if (a.get_gid() or "").startswith("drift-event-")]
        assert sorted(line.get_xdata()[0] for line in lines) == EVENTS
    (stars,) = by_gid(fig, "recluster-a")
    assert stars.get_marker() == "*" and list(stars.get_xdata()) == [6, 13]
    assert not by_gid(fig, "recluster-b")
    if build is accuracy_figure:  # a star sits on the seed-mean curve, interpolated between evaluations
        mean = data[0].column("accuracy_mean")
        assert stars.get_ydata() == pytest.approx(np.interp([6, 13], mean["round"], mean["mean"]))


def test_accuracy_against_time_marks_events_on_each_curve():
    data = runs()
    with quiet_matplotlib():
        fig = accuracy_time_figure("t", data, EVENTS, method_styles([r.method for r in data]))
    triangles = by_gid(fig, "drifts-on-")
    assert len(triangles) == 3 and list(triangles[0].get_xdata()) == pytest.approx([7.5, 16.5])  # rounds 5 and 11 at 1.5 s
    (stars,) = by_gid(fig, "recluster-a")
    assert list(stars.get_xdata()) == pytest.approx([9.0, 19.5])
    assert fig.axes[0].get_xlabel() == "simulated time (s)"


def test_coinciding_curves_stay_distinguishable():
    data = runs()
    with quiet_matplotlib():
        fig = accuracy_figure("t", data, EVENTS, method_styles([r.method for r in data]))
    b, c = (line for line in fig.axes[0].get_lines() if line.get_label() in ("b (1 seed)", "c (1 seed)"))
    assert np.array_equal(b.get_ydata(), c.get_ydata())
    assert (b.get_linestyle(), b.get_marker()) != (c.get_linestyle(), c.get_marker())
    assert b.get_markevery()[0] != c.get_markevery()[0], "markers of coinciding curves must not overlap"


def test_ari_axis_is_fixed_and_skipped_without_ari():
    data = runs()
    styles = method_styles([r.method for r in data])
    with quiet_matplotlib():
        fig = ari_figure("t", data, EVENTS, styles)
        assert fig.axes[0].get_ylim() == (-0.1, 1.0)
        assert [line.get_label() for line in fig.axes[0].get_lines() if "seed" in line.get_label()] == ["a (2 seeds)"]
        assert ari_figure("t", data[1:], EVENTS, styles) is None


def test_summary_chart_has_reference_lines_and_points_with_spread():
    rows = pd.DataFrame(
        {
            "method": ["fielding", "fedavg", "oracle"],
            "oracle": [False, False, True],
            "final_accuracy_mean": [0.8, 0.5, 0.9],
            "final_accuracy_std": [0.05, 0.01, np.nan],
            "overhead_bytes": [2e6, 0.0, 0.0],
            "cluster_seconds": [0.3, 0.0, 0.0],
        }
    )
    with quiet_matplotlib():
        fig = summary_figure("t", rows, method_styles(["fielding", "fedavg", "oracle"]))
    for ax in fig.axes:
        flat = [line for line in ax.get_lines() if len(set(line.get_ydata())) == 1 and line.get_linestyle() == ":"]
        assert sorted(line.get_ydata()[0] for line in flat) == [0.5, 0.9]
        assert ax.get_xscale() == "symlog"
    (points,) = [c for c in fig.axes[0].containers]
    assert points.lines[0].get_xydata().tolist() == [[2.0, 0.8]]  # 2e6 bytes = 2 MB
    assert points.has_yerr


def test_plots_are_written_as_png_and_valid_svg():
    data = runs()
    rows = pd.DataFrame(
        {
            "method": ["a", "b", "c"],
            "oracle": [False, False, False],
            "final_accuracy_mean": [0.8, 0.7, 0.7],
            "final_accuracy_std": [0.01, np.nan, np.nan],
            "overhead_bytes": [1e5, 0.0, 0.0],
            "cluster_seconds": [0.1, 0.0, 0.0],
        }
    )
    plots = trace_plots("t", data, EVENTS, rows)
    assert [p.name for p in plots] == [f"t-{kind}" for kind in CAPTIONS]
    for plot in plots:
        assert plot.png[:8] == b"\x89PNG\r\n\x1a\n" and set(plot.files) == {f"{plot.name}.png", f"{plot.name}.svg"}
        root = ET.fromstring(plot.svg)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
    svg = next(p.svg for p in plots if p.name == "t-accuracy").decode()
    assert 'id="drift-event-5"' in svg and 'id="drift-event-11"' in svg and 'id="recluster-a"' in svg


def test_rendering_is_reproducible():
    data = runs()
    with quiet_matplotlib():
        styles = method_styles([r.method for r in data])
        first, second = (render("x", "c", accuracy_figure("t", data, EVENTS, styles)) for _ in range(2))
    assert first.svg == second.svg


def test_matplotlib_chatter_stays_off_the_terminal(caplog):
    with caplog.at_level(logging.INFO), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with quiet_matplotlib():
            logging.getLogger("matplotlib.font_manager").warning("Matplotlib is building the font cache")
            logging.getLogger("matplotlib.font_manager").info("generated new fontManager")
            warnings.warn("Glyph missing from font", UserWarning, stacklevel=1)
    assert caplog.records == [] and caught == []
