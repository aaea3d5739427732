"""The drift matrix: the share of the oracle's room and its interval, the cells that lack runs, the rankings, the report
and its command, and the leaderboard page's heatmap."""

import io
import json
import shutil

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from driftbench.cli import main
from driftbench.evaluation.leaderboard.write import write_leaderboard
from driftbench.evaluation.matrix.cells import NO_ROOM, NOT_RUN, RUN_COLUMNS, Grid, read_matrix
from driftbench.evaluation.matrix.figures import HEATMAP_CAPTION, annotation, cd_figure, png_writer
from driftbench.evaluation.matrix.ranking import MIN_BLOCKS, SEED_BLOCKS, TRACE_BLOCKS, rank_group, rankings
from driftbench.evaluation.matrix.report import matrix_report
from driftbench.evaluation.matrix.text import GLOSSARY, ranking_markdown, room_table, share_text
from driftbench.record.archive_write import write_archive
from driftbench.record.runs import INCOMPLETE

pytest.importorskip("autorank", reason="the matrix's ranking needs autorank (pip install 'driftbench[matrix]')")

HAND_MADE = {  # static's final accuracies by method, seeds 0, 1, 2: the room 0.30, 0.35, 0.32; static takes about half
    "fedavg": [0.50, 0.55, 0.52],
    "static": [0.66, 0.72, 0.69],
    "oracle": [0.80, 0.90, 0.84],
}
NO_ROOM_LEFT = {  # static - fedavg 0.02, 0.025, 0.018 but oracle - fedavg -0.05, -0.06, -0.055: the oracle is below FedAvg
    "fedavg": [0.60, 0.62, 0.61],
    "static": [0.62, 0.645, 0.628],
    "oracle": [0.55, 0.56, 0.555],
}
UNSURE_ROOM = {  # static - fedavg 0.05, 0.06, 0.055, clearly above 0; the room 0.02, -0.01, 0.03 not distinguishable from 0
    "fedavg": [0.60, 0.62, 0.61],
    "static": [0.65, 0.68, 0.665],
    "oracle": [0.62, 0.61, 0.64],
}


def with_summary(folder, **changes):
    """Change fields of the run's summary.json in place."""
    path = folder / "summary.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def set_by_hand(runs, out, accuracies):
    """A copy of the runs folder ``runs`` in ``out`` with the static trace's final accuracies set (method: seeds 0, 1, 2)."""
    shutil.copytree(runs, out)
    for method, values in accuracies.items():
        for seed, accuracy in enumerate(values):
            with_summary(out / "static" / method / f"seed{seed}", final_accuracy=accuracy)
    return out


@pytest.fixture(scope="module")
def hand_made(tiny_matrix, tmp_path_factory):
    """The tiny matrix's runs with static's final accuracies set by hand (HAND_MADE), archived."""
    root = tmp_path_factory.mktemp("hand")
    write_archive(set_by_hand(tiny_matrix[0], root / "runs", HAND_MADE), root / "archive")
    return root / "archive"


def test_the_share_of_the_room_is_the_ratio_of_paired_means_with_fiellers_interval(hand_made):
    cells = read_matrix(hand_made).cells.set_index(["trace", "method"])
    fedavg, oracle, static = (np.array(HAND_MADE[m]) for m in ("fedavg", "oracle", "static"))
    over, room = static - fedavg, oracle - fedavg
    cell = cells.loc[("static", "static")]
    assert cell["room_share"] == pytest.approx(over.mean() / room.mean()) and cell["room_share_seeds"] == 3
    assert 0 < cell["room_share_low"] < cell["room_share"] < cell["room_share_high"] < 1
    for end in (cell["room_share_low"], cell["room_share_high"]):  # the paired t-test of over - r room is on its boundary
        assert stats.ttest_1samp(over - end * room, 0.0).pvalue == pytest.approx(0.05)
    assert cells.loc[("static", "fedavg"), "room_share"] == 0 and cells.loc[("static", "oracle"), "room_share"] == 1
    assert cells.loc[("static", "static"), "final_accuracy_mean"] == pytest.approx(static.mean())
    assert (cells.loc[("static", "static"), "drift"], cells.loc[("rotation", "static"), "drift"]) == ("none", "feature")


def test_where_the_oracle_does_not_beat_fedavg_there_is_no_room_and_no_share(tiny_matrix, tmp_path):
    cells = read_matrix(set_by_hand(tiny_matrix[0], tmp_path / "runs", NO_ROOM_LEFT)).cells
    static = cells.set_index(["trace", "method"]).loc[("static", "static")]
    assert np.isnan(static["room_share"]) and static["room"] == pytest.approx(-0.055)  # not (0.021 / -0.055): -0.38
    row = {**static, "method": "static"}
    assert share_text(row) == NO_ROOM and share_text(row, short=True) == "no room"
    assert "| static | no room | " in room_table(cells) and annotation(static, "static", static["room_share"])[0] == "no room"
    assert "no room" in GLOSSARY["share of the room"] and "no room" in HEATMAP_CAPTION


def test_an_unbounded_share_is_marked_as_fedavgs_like_only_where_the_t_test_does_not_reject_zero(tiny_matrix, tmp_path):
    cells = read_matrix(set_by_hand(tiny_matrix[0], tmp_path / "runs", UNSURE_ROOM)).cells.set_index(["trace", "method"])
    static = cells.loc[("static", "static")]
    assert (static["room_share_low"], static["room_share_high"]) == (-np.inf, np.inf) and not static["room_share_contains_zero"]
    row = {**static, "method": "static"}
    assert share_text(row) == f"{static['room_share']:.2f} (unbounded)"  # static beats FedAvg at every seed: no ≈
    assert annotation(static, "static", static["room_share"])[0] == f"{static['room_share']:.2f}"
    unsure = {**row, "room_share_contains_zero": True}
    assert share_text(unsure).startswith("≈ ") and annotation(pd.Series(unsure), "static", static["room_share"])[0][0] == "≈"


def test_a_runs_folder_and_its_archive_give_the_same_cells(tiny_matrix):
    runs, archive = tiny_matrix
    pd.testing.assert_frame_equal(read_matrix(runs).cells, read_matrix(archive).cells)
    assert list(read_matrix(archive).cells["trace"].unique()) == ["static", "rotation"]  # by kind: none before feature


def test_a_cell_without_its_runs_says_why(tiny_matrix, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(tiny_matrix[0], runs)
    (runs / "static/oracle/seed1/summary.json").unlink()  # crashed, or still running
    shutil.rmtree(runs / "rotation/static/seed2")
    with_summary(runs / "rotation/oracle/seed0", status="diverged", diverged_round=4)
    grid = Grid(("static", "rotation"), ("fedavg", "static", "ifca", "oracle"), (0, 1, 2))
    cells = read_matrix(runs, grid).cells.set_index(["trace", "method"])
    assert tuple(cells.loc[("static", "oracle"), ["status", "note"]]) == ("partial", f"seed 1 {INCOMPLETE}")
    assert tuple(cells.loc[("rotation", "static"), ["status", "note"]]) == ("partial", f"seed 2: {NOT_RUN}")
    assert tuple(cells.loc[("rotation", "oracle"), ["status", "note"]]) == ("ok", "seed 0: diverged at round 4")
    assert tuple(cells.loc[("static", "ifca"), ["status", "note", "seeds"]]) == ("not run", NOT_RUN, 0)
    assert np.isnan(cells.loc[("static", "ifca"), "room_share"])
    assert cells.loc[("static", "static"), "room_share_seeds"] == 2  # the oracle's seed 1 is missing from the pairs
    write_archive(runs, tmp_path / "archive")  # an archive holds complete runs only: the incomplete one is not run there
    archived = read_matrix(tmp_path / "archive", grid).cells.set_index(["trace", "method"])
    assert archived.loc[("static", "oracle"), "note"] == f"seed 1: {NOT_RUN}"


def runs_frame(accuracies: dict[str, list[float]], blocks: list[tuple[str, int]]) -> pd.DataFrame:
    """Complete runs with the given final accuracies per method, block by block (trace, seed)."""
    rows = [
        dict(zip(RUN_COLUMNS, (trace, "label", method, seed, False, values[i], "abc")))
        for method, values in accuracies.items()
        for i, (trace, seed) in enumerate(blocks)
    ]
    return pd.DataFrame(rows)


TRACES = [(f"t{i}", 0) for i in range(8)]
ROTATING = {"a": [0.8, 0.7, 0.6] * 3, "b": [0.7, 0.6, 0.8] * 3, "c": [0.6, 0.8, 0.7] * 3}  # each first, second, third in turn


def test_methods_the_evidence_does_not_separate_are_tied():
    ranking = rank_group("label", runs_frame({m: v[:8] for m, v in ROTATING.items()}, TRACES))
    table = ranking.table.set_index("method")
    assert table["pvalue"].iloc[0] > 0.05 and set(table["block_unit"]) == {TRACE_BLOCKS}
    assert {m: set(table.loc[m, "tied_with"].split(", ")) for m in "abc"} == {m: set("abc") - {m} for m in "abc"}


def test_a_method_that_is_always_worst_is_separated_from_the_rest():
    accuracies = {**{m: v[:8] for m, v in ROTATING.items()}, "worst": [0.1] * 8}
    table = rank_group("label", runs_frame(accuracies, TRACES)).table.set_index("method")
    assert table.loc["worst", "mean_rank"] == 4 and table.loc["worst", "tied_with"] == ""
    assert table["pvalue"].iloc[0] < 0.05 and table["critical_difference"].iloc[0] > 0
    assert list(table.index)[-1] == "worst" and all("worst" not in table.loc[m, "tied_with"] for m in "abc")
    assert set(table.loc["a", "tied_with"].split(", ")) == {"b", "c"}


def test_a_ranking_friedmans_test_does_not_reject_has_no_diagram_and_says_why():
    ranking = rank_group("label", runs_frame({m: v[:8] for m, v in ROTATING.items()}, TRACES))
    assert ranking.result.posthoc == "nemenyi" and ranking.table["pvalue"].iloc[0] >= 0.05 and not ranking.diagram
    text = ranking_markdown([ranking], lambda r: "cd.png" if r.diagram else None)
    assert "cd.png" not in text and "No critical-difference diagram: Friedman's test finds no difference" in text


def test_two_methods_are_compared_by_a_two_sided_wilcoxon_test():
    better, worse = [0.8, 0.7, 0.9, 0.6, 0.75], [0.5] * 5  # better at every one of 5 traces: one-sided p 1/32, two-sided 1/16
    ranking = rank_group("label", runs_frame({"a": better, "b": worse}, TRACES[:5]))
    table = ranking.table.set_index("method")
    assert list(table["pvalue"]) == pytest.approx([stats.wilcoxon(better, worse).pvalue] * 2) == [0.0625, 0.0625]
    assert table.loc["a", "tied_with"] == "b" and table.loc["b", "tied_with"] == "a"
    assert "Wilcoxon's signed-rank test (two-sided) p = 0.062." in ranking_markdown([ranking], lambda r: None)


def test_a_ranking_of_three_methods_or_more_draws_its_critical_difference_diagram():
    ranking = rank_group("label", runs_frame({**{m: v[:8] for m, v in ROTATING.items()}, "worst": [0.1] * 8}, TRACES))
    buffer = io.BytesIO()
    png_writer(lambda: cd_figure(ranking))(buffer)
    assert ranking.diagram and buffer.getvalue()[:4] == b"\x89PNG"


def test_few_traces_rank_over_their_seeds_and_too_few_blocks_say_so():
    pairs = [(trace, seed) for trace in ("t0", "t1") for seed in range(4)]  # 8 (trace, seed) blocks of 2 traces
    seeded = rank_group("concept", runs_frame({"a": [0.8] * 8, "b": [0.5] * 8}, pairs))
    assert set(seeded.table["block_unit"]) == {SEED_BLOCKS} and set(seeded.table["blocks"]) == {8}
    assert seeded.table.set_index("method").loc["a", "tied_with"] == "" and not seeded.diagram  # Wilcoxon: no diagram
    few = rank_group("feature", runs_frame({"a": [0.8] * 2, "b": [0.5] * 2}, [("t0", 0), ("t0", 1)]))
    assert few.table.empty and few.result is None and f"needs at least 2 methods and {MIN_BLOCKS} blocks" in few.note
    alone = rank_group("none", runs_frame({"a": [0.8] * 8}, TRACES))
    assert alone.table.empty and "1 method(s)" in alone.note


def test_a_block_some_method_lacks_is_left_out_and_named_and_the_oracle_not_ranked():
    runs = runs_frame({m: v[:8] for m, v in ROTATING.items()}, TRACES)
    runs = runs[~((runs["method"] == "c") & (runs["trace"] == "t7"))]
    oracle = runs_frame({"oracle": [1.0] * 8}, TRACES).assign(oracle=True)
    overall, label = rankings(pd.concat([runs, oracle]), ["label"])
    assert overall.group == "all" and "oracle" not in set(overall.table["method"])
    assert set(label.table["blocks"]) == {7} and label.note == "left out, for lack of some method's run: t7 (seed 0)"


def test_a_seed_some_method_lacks_is_left_out_of_its_trace_before_the_trace_is_averaged():
    pairs = [(f"t{i}", seed) for i in range(6) for seed in (0, 1)]
    accuracies = {  # t0 seed 1 puts a first; without it b is first there
        "a": [0.5, 0.9] + [0.8, 0.8, 0.7, 0.7, 0.6, 0.6] * 2,
        "b": [0.6, 0.6] + [0.7, 0.7, 0.6, 0.6, 0.8, 0.8] * 2,
        "c": [0.55, 0.7] + [0.6, 0.6, 0.8, 0.8, 0.7, 0.7] * 2,
    }
    runs = runs_frame(accuracies, pairs)
    t0_seed1 = (runs["trace"] == "t0") & (runs["seed"] == 1)
    lacking = rank_group("label", runs[~(t0_seed1 & (runs["method"] == "c"))])
    pd.testing.assert_frame_equal(lacking.table, rank_group("label", runs[~t0_seed1]).table)
    assert set(lacking.table["block_unit"]) == {TRACE_BLOCKS} and set(lacking.table["blocks"]) == {6}
    assert lacking.note == "left out, for lack of some method's run: t0 (seed 1)"


def test_the_block_unit_is_decided_on_the_traces_every_method_ran():
    pairs = [(f"t{i}", seed) for i in range(MIN_BLOCKS) for seed in (0, 1)]
    runs = runs_frame({"a": [0.8] * len(pairs), "b": [0.5] * len(pairs)}, pairs)
    ranking = rank_group("label", runs[~((runs["method"] == "b") & (runs["trace"] == "t4"))])  # 4 traces left: too few
    assert set(ranking.table["block_unit"]) == {SEED_BLOCKS} and set(ranking.table["blocks"]) == {8}
    assert ranking.note == "left out, for lack of some method's run: t4 (seeds 0, 1)"


def test_the_report_writes_its_files_and_the_command_names_what_is_missing(tiny_matrix, tmp_path, capsys):
    paths = matrix_report(tiny_matrix[1], tmp_path / "report")
    assert {p.name for p in paths} == {"matrix.md", "matrix.csv", "matrix-ranking.csv", "matrix-heatmap.png"}  # 2 ranked: no CD
    assert all((tmp_path / "report" / p.name).read_bytes()[:4] == b"\x89PNG" for p in paths if p.suffix == ".png")
    page = (tmp_path / "report/matrix.md").read_text()
    assert "](matrix-heatmap.png)" in page and "| static (none) | rotation (feature) |" in page
    assert "**every trace**: 6 (trace, seed) pairs; Wilcoxon's signed-rank test (two-sided) p = " in page
    cells = pd.read_csv(tmp_path / "report/matrix.csv")
    assert len(cells) == 6 and set(cells["status"]) == {"ok"}
    suite = tmp_path / "suite.toml"
    suite.write_text('methods = ["fedavg", "static", "ifca", "oracle"]\nseeds = [0, 1, 2]\n[traces.static]\n[traces.rotation]\n')
    assert main(["matrix", str(tiny_matrix[1]), "--out", str(tmp_path / "cli"), "--suite", str(suite)]) == 0
    assert "matrix.md" in capsys.readouterr().out
    cells = pd.read_csv(tmp_path / "cli/matrix.csv", keep_default_na=False).set_index(["trace", "method"])
    assert cells.loc[("rotation", "ifca"), "note"] == NOT_RUN and len(cells) == 8


def test_the_leaderboard_page_shows_the_heatmap_where_fedavg_and_the_oracle_ran(tiny_matrix, tmp_path):
    write_leaderboard(tiny_matrix[1], tmp_path / "both")
    page = (tmp_path / "both/index.html").read_text()
    assert "<h2>Drift matrix</h2>" in page and "Drift matrix: share of the oracle&#x27;s room" in page
    runs = tmp_path / "runs"
    shutil.copytree(tiny_matrix[0] / "static" / "fedavg", runs / "static" / "fedavg")
    write_leaderboard(runs, tmp_path / "fedavg")
    assert "Drift matrix" not in (tmp_path / "fedavg/index.html").read_text()
