"""The leaderboard: ranking over seeds, oracle and incomplete rows, event columns, plots as PNG and SVG, the glossary,
refused hash mixes, and the HTML page in Chromium."""

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import replace
from html import escape

import numpy as np
import pandas as pd
import pytest

from driftbench.cli import main
from driftbench.evaluation.leaderboard.gather import reached_at_first_evaluation
from driftbench.evaluation.leaderboard.write import (
    GLOSSARY,
    HEADERS,
    HEADLINE,
    reached_text,
    readable,
    seconds,
    write_leaderboard,
)
from driftbench.evaluation.plots import CAPTIONS
from driftbench.evaluation.scorecard_view import DRIFT_GLOSSARY
from driftbench.record.metrics import speedup
from driftbench.record.runs import find_runs, read_records
from driftbench.record.summarize import summary_tta
from driftbench.runner import Execution, Request, plan_jobs, run_here

matplotlib_image = pytest.importorskip(
    "matplotlib.image", reason="the leaderboard's plots need matplotlib (pip install 'driftbench[plots]')"
)

TINY = {
    "clients": "10",
    "rounds": "6",
    "drift_every": "3",
    "fraction": "0.5",
    "train.participants": "5",
    "train.local_steps": "3",
}
METHODS = ["fedavg", "static", "oracle"]
PLOT_KINDS = [*CAPTIONS, "matrix"]  # the trace's plots and its drift scorecard's heatmaps
CHROMIUM = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--enable-logging=stderr", "--v=0"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """label-swap, tiny, three methods x two seeds; oracle seed 1 left incomplete."""
    root = tmp_path_factory.mktemp("runs")
    for seed in (0, 1):
        run_here(plan_jobs(Request({"label-swap": TINY}, tuple(METHODS), (seed,)), Execution("cpu", root)))
    (root / "label-swap/oracle/seed1/summary.json").unlink()
    return root


@pytest.fixture(scope="module")
def board(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("board")
    write_leaderboard(runs, out)
    return out


def summary(runs, method, seed):
    """The run's summary as readers see it, its time to FedAvg's target derived (``read_records``)."""
    [record] = read_records([runs / "label-swap" / method / f"seed{seed}"])
    return record.summary


def test_rows_rank_methods_by_mean_accuracy_over_seeds(runs, board):
    table = pd.read_csv(board / "leaderboard.csv")
    ranked = table[table["rank"].notna()]
    assert set(ranked["method"]) == {"fedavg", "static"} and list(ranked["rank"]) == [1, 2]
    assert ranked["final_accuracy_mean"].is_monotonic_decreasing and table["method"].iloc[-1] == "oracle"
    fedavg = table.set_index("method").loc["fedavg"]
    accuracies = [summary(runs, "fedavg", s).final_accuracy for s in (0, 1)]
    assert fedavg["final_accuracy_mean"] == pytest.approx(np.mean(accuracies))
    assert fedavg["final_accuracy_std"] == pytest.approx(np.std(accuracies, ddof=1))
    outcomes = [e.outcome for s in (0, 1) for e in summary(runs, "fedavg", s).recovery]
    assert fedavg["tta_reached"] == 2 and fedavg["tta_log_speedup"] == pytest.approx(0.0)
    assert pd.isna(fedavg["vs_reference"]) and fedavg["dropped_events"] == sum(o.endswith("recovered") for o in outcomes)
    assert fedavg["recovered_events"] == outcomes.count("recovered")
    static = table.set_index("method").loc["static"]
    gains = [speedup(summary_tta(summary(runs, "fedavg", s)), summary_tta(summary(runs, "static", s))) for s in (0, 1)]
    logs = [np.log(g) for g in gains if g is not None]
    assert static["tta_log_speedup"] == pytest.approx(np.mean(logs)) if logs else pd.isna(static["tta_log_speedup"])
    differences = [summary(runs, "static", s).final_accuracy - summary(runs, "fedavg", s).final_accuracy for s in (0, 1)]
    half = 12.706 * np.std(differences, ddof=1) / np.sqrt(2)  # Student's t, 1 degree of freedom, 97.5%
    assert static["vs_reference"] == pytest.approx(np.mean(differences))
    assert (static["vs_reference_low"], static["vs_reference_high"]) == pytest.approx(
        (np.mean(differences) - half, np.mean(differences) + half), rel=1e-4
    )
    means = [summary(runs, "static", s).streaming.mean_accuracy for s in (0, 1)]
    assert static["mean_accuracy"] == pytest.approx(np.mean(means)) and static["vs_reference_seeds"] == 2
    oracle = table.set_index("method").loc["oracle"]
    assert bool(oracle["oracle"]) and oracle["seeds"] == 1 and oracle["runs"] == "1 ok, 1 incomplete"
    assert oracle["ari_mean"] == pytest.approx(1.0)


def test_reached_counts_the_seeds_that_reached_the_target_at_their_first_evaluation(runs, board):
    """A run holding the target from its first evaluation has a speed-up bounded by the evaluation grid: it is counted."""
    table = pd.read_csv(board / "leaderboard.csv").set_index("method")
    for method, seeds in (("fedavg", (0, 1)), ("static", (0, 1)), ("oracle", (0,))):
        first = 0
        for seed in seeds:
            tta = summary(runs, method, seed).time_to_accuracy
            rounds = pd.read_csv(runs / "label-swap" / method / f"seed{seed}/rounds.csv")
            first += bool(tta is not None and tta.reached and tta.rounds == rounds["round"].iloc[0])
        assert table.loc[method, "tta_first_evaluation"] == first
    markdown = (board / "leaderboard.md").read_text()
    assert ("at 1st eval" in markdown) == bool(table["tta_first_evaluation"].sum())
    record = next(r for r in find_runs(runs) if (r.method, r.seed) == ("fedavg", 0))
    first = int(record.rounds()["round"].iloc[0])
    for rounds, outcome, expected in ((first, "reached", True), (first + 1, "reached", False), (None, "not_reached", False)):
        tta = replace(record.summary.time_to_accuracy, rounds=rounds, outcome=outcome)
        assert reached_at_first_evaluation(record, tta) is expected
        assert reached_text({"tta_runs": 1, "tta_reached": 1, "tta_not_distinguishable": 0, "tta_first_evaluation": 1}) == (
            "1/1 (1 at 1st eval)"
        )


def markdown_tables(md):
    """Each Markdown table's header cells, in order."""
    lines = md.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("| ") and (i == 0 or not lines[i - 1].startswith("|"))]
    return [[c.strip() for c in lines[i].strip("|").split("|")] for i in starts]


def test_each_trace_leads_with_a_headline_of_at_most_ten_columns_then_the_full_table(board):
    md = (board / "leaderboard.md").read_text()
    tables = markdown_tables(md.split("## Glossary")[0])
    assert tables[:2] == [list(HEADLINE.values()), list(HEADERS.values())] and len(tables[0]) <= 10
    assert len(tables) == 3 and tables[2][:2] == ["method", "seeds"]  # then the trace's drift scorecard
    assert (
        md.index("## label-swap")
        < md.index(f"| rank | method | {HEADLINE['final_vs_reference']} |")
        < md.index("### label-swap: all")
    )
    csv = pd.read_csv(board / "leaderboard.csv")
    assert {"final_accuracy_std", "vs_reference_low", "overhead_bytes", "cluster_seconds", "events_split"} <= set(csv.columns)
    row = next(line for line in md.split("### ")[0].splitlines() if "| static |" in line)  # the headline's row
    cells = [c.strip() for c in row.strip("|").split("|")]
    static = csv.set_index("method").loc["static"]
    assert cells[2].startswith(f"{static['final_accuracy_mean']:.3f} (") and f"{static['vs_reference']:+.3f} [" in cells[2]
    assert cells[6] == f"{static['recovered_events']}/{static['dropped_events']}" + (
        "" if pd.isna(static["rounds_to_recover"]) else f" in {static['rounds_to_recover']:.1f} rounds"
    )
    assert cells[8] == f"{readable(static['overhead_bytes'] / 1e6)} MB, {seconds(static['cluster_seconds'])} s"
    assert "e+" not in md and "e-0" not in md, "no exponent notation"


def test_numbers_are_formatted_for_reading():
    assert [readable(v) for v in (3520.4, 3.5, 0.0352, 0.0, 1e-5, 123456.0)] == [
        "3,520",
        "3.5",
        "0.0352",
        "0",
        "< 0.001",
        "123,456",
    ]
    assert [seconds(v) for v in (0.0123, 4.567, 45.67, 4567.0)] == ["0.01", "4.57", "45.7", "4,567"]


def test_markdown_marks_oracles_and_incomplete_runs(board, runs):
    md = (board / "leaderboard.md").read_text()
    assert "| - | oracle (oracle) | " in md and "| - | oracle (oracle) | 1 |" in md and "## label-swap" in md
    assert f"{runs / 'label-swap/oracle/seed1'}: incomplete: config.json but no summary.json" in md
    assert "![label-swap-accuracy](label-swap-accuracy.png)" in md and "([SVG](label-swap-accuracy.svg))" in md


def test_every_plot_is_written_as_png_and_svg(board):
    names = sorted(p.stem for p in board.glob("*.png"))
    assert names == sorted(f"label-swap-{kind}" for kind in PLOT_KINDS)
    for name in names:
        assert (board / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert ET.parse(board / f"{name}.svg").getroot().tag == "{http://www.w3.org/2000/svg}svg"
    svg = (board / "label-swap-accuracy.svg").read_text()
    assert 'id="drift-event-3"' in svg, "the trace's drift event, at round 3, is drawn"


def test_glossary_defines_every_column_once_in_markdown_and_page(board):
    assert set(HEADERS.values()) | set(HEADLINE.values()) <= set(GLOSSARY)
    md = (board / "leaderboard.md").read_text()
    page = (board / "index.html").read_text()
    assert md.count("## Glossary") == 1 and page.count("<h2>Glossary</h2>") == 1
    for term in ("pre", "trough", "drop", "outcome", "rounds to recover", "delta ‰", "ARI"):
        assert f"- **{term}**: {GLOSSARY[term]}" in md and f"<dt>{escape(term)}</dt><dd>{escape(GLOSSARY[term])}</dd>" in page
    assert "(pre - post) / pre x 1000" in GLOSSARY["delta ‰"] and ">= 2 groups" in GLOSSARY["ARI"]


def test_page_shows_run_settings_and_links_run_folders_and_svgs(board, runs):
    page = (board / "index.html").read_text()
    configs = [json.loads((runs / f"label-swap/fedavg/seed{s}/config.json").read_text()) for s in (0, 1)]
    config = configs[0]
    hashes = " ".join(f"seed{s}:{c['trace']['hash'][:12]}" for s, c in enumerate(configs))  # each seed draws its own data
    assert f"<dt>trace hash</dt><dd>{hashes}</dd>" in page and "<dt>seeds</dt><dd>0, 1</dd>" in page
    assert "<dt>rounds</dt><dd>6</dd>" in page
    assert f"<dt>git revision</dt><dd>{(config['git_revision'] or 'unknown')[:12]}</dd>" in page
    hrefs = re.findall(r'href="([^"#]+)"', page)
    folders = [h for h in hrefs if not h.endswith(".svg")]
    assert len(folders) == 6 and all(not h.startswith(("/", "file:")) for h in folders), "run folders are linked relatively"
    assert {(board / h).resolve() for h in folders} == {p.parent.resolve() for p in runs.glob("*/*/seed*/config.json")}
    svgs = [h for h in hrefs if h.endswith(".svg")]
    assert len(svgs) == len(PLOT_KINDS) and all((board / h).is_file() for h in svgs)
    assert "http" not in page, "no external URL: the page fetches nothing"


def test_method_events_give_columns_and_recluster_markers(runs, tmp_path):
    edited = tmp_path / "runs"
    shutil.copytree(runs, edited)
    seed0 = edited / "label-swap/fedavg/seed0"  # FedAvg records no events of its own
    with open(seed0 / "events.csv", "a") as fh:
        fh.write("2,fedavg,recluster_global,0 1 2,\n2,fedavg,move,3,\n4,fedavg,split,,\n")
    summary_json = json.loads((seed0 / "summary.json").read_text())
    summary_json["events"].update(recluster_global=1, move=1, split=1)
    (seed0 / "summary.json").write_text(json.dumps(summary_json))
    write_leaderboard(edited, tmp_path / "board")
    table = pd.read_csv(tmp_path / "board/leaderboard.csv").set_index("method")
    fedavg = table.loc["fedavg"]
    assert fedavg["events_recluster_global"] == 0.5 and fedavg["events_move"] == 0.5 and fedavg["events_split"] == 0.5
    static_clusterings = [summary(runs, "static", s).events["recluster_global"] for s in (0, 1)]
    assert static_clusterings == [1, 1] and table.loc["static", "events_recluster_global"] == 1.0  # its round-0 clustering
    md = (tmp_path / "board/leaderboard.md").read_text()
    assert "| re-clusterings | moves | other events |" in md and "| 0.5 | 0.5 | split 0.5 |" in md
    for kind in ("accuracy", "clients", "accuracy-time", "clusters", "ari"):
        svg = (tmp_path / f"board/label-swap-{kind}.svg").read_text()
        assert 'id="recluster-fedavg"' in svg and 'id="recluster-static"' in svg


def test_runs_of_one_trace_with_different_hashes_are_refused(runs, tmp_path, capsys):
    mixed = tmp_path / "mixed"
    shutil.copytree(runs, mixed)
    config_path = mixed / "label-swap/static/seed0/config.json"
    config = json.loads(config_path.read_text())
    config["trace"]["hash"] = "f" * 64
    config_path.write_text(json.dumps(config))
    assert main(["leaderboard", str(mixed), "--out", str(tmp_path / "board")]) == 2
    err = capsys.readouterr().err
    assert "runs of trace 'label-swap' at seed 0 have different trace hashes" in err and "ffffffffffff" in err
    assert str(mixed / "label-swap/static/seed0") in err and not (tmp_path / "board").exists()


def chromium(args, tmp_path):
    """Run headless Chromium; return (stdout, console lines)."""
    binary = shutil.which("chromium")
    if binary is None:
        if os.environ.get("DRIFTBENCH_REQUIRE_CHROMIUM"):
            pytest.fail("chromium is required here (.ci/run installs it) but is not on PATH")
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    profile = tmp_path / "chromium-profile"
    done = subprocess.run([binary, *CHROMIUM, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=120)
    return done.stdout, [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


def test_index_html_renders_in_headless_chromium(board, tmp_path):
    page = (board / "index.html").as_uri()
    shot = tmp_path / "shot.png"
    _, console = chromium([f"--screenshot={shot}", "--window-size=1400,1400", page], tmp_path)
    assert console == []
    pixels = matplotlib_image.imread(shot)[..., :3]
    assert (pixels.min(axis=2) < 0.9).mean() > 0.02, "screenshot is blank"
    assert ((pixels.max(axis=2) - pixels.min(axis=2)) > 0.3).sum() > 500, "no coloured plot lines in the screenshot"
    dom, console = chromium(["--dump-dom", page], tmp_path)
    assert console == []
    for header in (
        "rank",
        "method",
        "final accuracy",
        "TTA speed-up",
        "rounds to recover",
        "ARI",
        "extra MB",
        "recovery",
        "flags",
    ):
        assert f"<th>{header}</th>" in dom
    headline = dom.split("<table>")[1].split("</thead>")[0]
    assert headline.count("<th>") == len(HEADLINE) <= 10 and "<summary>all columns</summary>" in dom
    assert dom.count('src="data:image/png;base64,') == len(PLOT_KINDS) + 1  # and the drift matrix's heatmap
    assert 'class="oracle"' in dom and "<h2>Drift matrix</h2>" in dom
    assert 'src="http' not in dom and "<link" not in dom and "<script" not in dom, "the page must be self-contained"


def test_chromium_console_errors_are_caught(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('broken page')</script></body></html>")
    _, console = chromium(["--dump-dom", page.as_uri()], tmp_path)
    assert any("broken page" in line for line in console)


def test_sort_ranks_by_the_chosen_streaming_accuracy(runs, tmp_path):
    write_leaderboard(runs, tmp_path / "board", sort="worst-interval")
    table = pd.read_csv(tmp_path / "board/leaderboard.csv")
    ranked = table[table["rank"].notna()]
    assert ranked["worst_interval_accuracy"].is_monotonic_decreasing and list(ranked["rank"]) == [1, 2]
    worst = [summary(runs, "static", s).streaming.worst_interval_accuracy for s in (0, 1)]
    assert table.set_index("method").loc["static", "worst_interval_accuracy"] == pytest.approx(np.mean(worst))


def test_drift_scorecard_has_its_own_table_heatmap_and_glossary(board, runs):
    md = (board / "leaderboard.md").read_text()
    page = (board / "index.html").read_text()
    assert md.count("### label-swap: drift scorecard") == 1 and "<h2>label-swap: drift scorecard</h2>" in page
    assert "![label-swap-matrix](label-swap-matrix.png)" in md and 'href="label-swap-matrix.svg"' in page
    for term, text in DRIFT_GLOSSARY.items():
        assert f"- **{term}**: {text}" in md and f"<dt>{escape(term)}</dt><dd>{escape(text)}</dd>" in page
    line = next(row for row in md.splitlines() if row.startswith("| fedavg |"))
    cards = [summary(runs, "fedavg", seed).scorecard for seed in (0, 1)]
    events = sum(len(c.detection.events) for c in cards)
    assert events > 0 and f"| 0/{events} |" in line, "one model never reacts: every event missed"
    forgetting = np.mean([c.forgetting for c in cards])
    assert f"| {forgetting:.3f} |" in line
