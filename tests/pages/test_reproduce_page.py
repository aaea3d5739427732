"""The ``reproduce`` page: claims judged on a tiny archive, rendered as ``reproduce --recorded`` reports them."""

import csv
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from driftbench.cli import main
from driftbench.pages.archived import Missing, report_parts
from driftbench.pages.catalog import PAGES
from driftbench.pages.claims_markdown import CLAIM_COLUMNS, not_yet_line
from driftbench.pages.render import Block, DataFile, Picture, read_block, write_rendered
from driftbench.reproduce.report import markdown_cell, read_report

ROOT = Path(__file__).resolve().parents[2]
SETTING = 'clients = 6, rounds = 6, drift_every = 2, fraction = 0.5, "train.participants" = 3, "train.local_steps" = 2'
DIAGNOSIS = 'diagnosis = "small-world"\n'


def claim(label: str, by: str = "", diagnosis: bool = True) -> str:
    """A [[claims]] table: the oracle ends above FedAvg (``by`` a margin) on a tiny drifting trace."""
    return (
        f'[[claims]]\nid = "{label}"\nwhere = "Table 1"\nclaim = "the oracle ends above FedAvg"\ntrace = "label-swap"\n'
        f'set = {{ {SETTING} }}\nmethods = ["oracle", "fedavg"]\nmetric = "final_accuracy"\n'
        f'direction = "oracle > fedavg{by}"\npaper_figure = "0.9 vs 0.6"\nkind = "exact"\nunit = "points"\n'
        f"paper_value = 10\n{DIAGNOSIS if diagnosis else ''}"
    )


TINY = (
    'paper = "A paper"\n\n[diagnoses.small-world]\nkind = "workload"\n'
    'evidence = "6 clients over 6 rounds leave little to learn."\ncommand = "driftbench reproduce tiny"\n\n'
    + claim("oracle")
    + claim("by-half", " by 0.5")
)
OTHER = 'paper = "Other paper"\n\n' + claim("lone", diagnosis=False)
RECORDED = ["--recorded", "--seeds", "0,1,2,3,4", "--second-stage", "5,6,7,8,9"]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A repository root: claim files tiny (archived, seeds 0-4) and other (archived only as a part), the pages, the
    83fbd63 report's verdicts with one that moved and one claim gone since."""
    root = tmp_path_factory.mktemp("repo")
    (root / "claims").mkdir()
    (root / "claims/tiny.toml").write_text(TINY)
    (root / "claims/other.toml").write_text(OTHER)
    (root / "docs").mkdir()
    for page in ("README.md", "docs/reproduce.md"):
        shutil.copy(ROOT / page, root / page)
    runs, archive = root / "runs", root / "results/reproduce-tiny"
    args = ["reproduce", "tiny", "--claims", str(root / "claims"), "--seeds", "0,1,2,3,4", "--jobs", "2", "--device", "cpu"]
    assert main([*args, "--quiet", "--out", str(runs)]) == 0
    assert main(["archive", str(runs), "--out", str(archive), "--quiet"]) == 0
    shutil.copytree(archive, root / "results/reproduce-other-part1")  # a part of a report is never rendered
    then = "paper,claim,verdict\nA paper,oracle,untestable\nA paper,gone,not reproduced\nOther paper,lone,reproduced\n"
    (root / "results/reproduce-83fbd63.csv").write_text(then)
    return root


@pytest.fixture(scope="module")
def rendered(root):
    """The page rendered from the root, and written into its files."""
    items = PAGES["reproduce"](root)
    write_rendered(root, items)
    return items


def block(items, name: str) -> str:
    """The rendered text of block ``name``."""
    return next(item.text for item in items if isinstance(item, Block) and item.name == name)


def test_the_claims_rows_are_those_reproduce_recorded_writes(root, rendered, capsys):
    report = root / "report"
    args = ["reproduce", "tiny", "--claims", str(root / "claims"), *RECORDED, "--out", str(root / "results/reproduce-tiny")]
    assert main([*args, "--report", str(report), "--quiet"]) == 0
    printed = capsys.readouterr().out
    expected = read_report(report / "reproduce.csv")
    table = [line for line in block(rendered, "reproduce-claims").splitlines() if line.startswith("| A paper |")]
    assert len(table) == len(expected) == 2
    for line, row in zip(table, expected, strict=True):
        cells = [markdown_cell(row[k]) for k in CLAIM_COLUMNS[:-1]]
        assert line.startswith("| " + " | ".join(cells) + " | small-world (workload) |")
        assert row["diagnosis"].startswith("workload: 6 clients over 6 rounds")
    verdicts = [row["verdict"] for row in expected]
    headline = block(rendered, "claims-headline")
    assert headline.startswith("Of the 2 paper claims of A paper, judged on their archived runs")
    assert f"{verdicts.count('inconclusive')} inconclusive" in headline and "Not archived yet: Other paper." in headline
    (commit,) = set(pq.read_table(root / "results/reproduce-tiny/runs.parquet", columns=["commit"])["commit"].to_pylist())
    assert f"The runs ran at: A paper at {commit[:7]}." in headline  # the archive's commit column
    assert "| A paper | 2 |" in block(rendered, "claims-table")
    assert "### A paper: small-world (workload)" in block(rendered, "reproduce-diagnoses")
    named = ", ".join(row["id"] for row in expected if row["verdict"] != "reproduced")
    assert f"Claims: {named}." in block(rendered, "reproduce-diagnoses")
    assert "`results/reproduce-tiny` | 10 |" in block(rendered, "reproduce-headline") and "0 failed" in printed


def test_the_forest_plot_is_drawn_from_its_data_file(root, rendered):
    data = next(item for item in rendered if isinstance(item, DataFile))
    picture = next(item for item in rendered if isinstance(item, Picture))
    assert (data.path, picture.path) == ("docs/images/reproduce-tiny.csv", "docs/images/reproduce-tiny.png")
    rows = list(csv.DictReader(data.text.splitlines()))
    assert [r["claim"] for r in rows] and {r["claim"] for r in rows} <= {"oracle", "by-half"}
    assert all(float(r["low"]) <= float(r["mean"]) <= float(r["high"]) for r in rows)
    assert (root / picture.path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "](images/reproduce-tiny.png)" in block(rendered, "reproduce-forest")


COMMAND = (
    "`driftbench reproduce other --seeds 0,1,2,3,4 --second-stage 5,6,7,8,9 --jobs 2 --device cpu --out runs-other "
    "&& driftbench archive runs-other --out results/reproduce-other`"
)


def test_a_paper_without_its_archive_shows_the_commands_that_make_it():
    line = not_yet_line(Missing("other", "Other paper"))
    assert line == f"- **Other paper**: its runs are not in the repository yet; {COMMAND} makes them."


def test_a_paper_archived_in_parts_shows_them_and_the_commands_that_complete_it(rendered):
    command = COMMAND
    unpack = "driftbench unpack results/reproduce-other-part1 --out runs-other && "
    line = (
        "- **Other paper**: part of its runs are in the repository, `results/reproduce-other-part1` (10 runs), not judged "
        f"until its report is complete; `{unpack}{command[1:]} completes them."
    )
    assert line in block(rendered, "reproduce-headline").splitlines()
    assert "Not archived yet: Other paper." in block(rendered, "claims-headline")  # the README names it, the docs say how
    assert "Other paper" not in block(rendered, "reproduce-claims")  # results/reproduce-other-part1 is not read


def test_the_moved_list_names_each_changed_verdict_and_what_decided_it(rendered):
    moved = block(rendered, "reproduce-moved")
    assert moved.startswith("3 claims of A paper have another verdict than in the 83fbd63 report")
    lines = moved.splitlines()
    oracle = next(line for line in lines if line.startswith("| A paper | oracle | untestable |"))
    assert "| decision table row " in oracle
    assert "| A paper | gone | not reproduced | - | no longer a claim of claims/ |" in lines
    assert "| A paper | by-half | - |" in moved  # not in the 83fbd63 report
    assert "Other paper" not in moved
    readme = block(rendered, "claims-table")  # the README's brief: old verdict to new, grouped, linking the reasons
    assert "Moved since the 83fbd63 report (why: [What moved](docs/reproduce.md#" in readme
    assert "A paper: oracle untestable → " in readme and "A paper: gone not reproduced → -" in readme


def test_check_names_the_block_whose_row_was_edited_by_hand(root, rendered, capsys):
    page = root / "docs/reproduce.md"
    text = page.read_text()
    assert main(["render", "reproduce", "--root", str(root), "--check"]) == 0
    claims = read_block(text, "reproduce-claims", str(page))
    edited = claims.replace("| A paper | oracle |", "| A paper | oracle-edited |", 1)
    assert edited != claims
    page.write_text(text.replace(claims, edited))
    try:
        assert main(["render", "reproduce", "--root", str(root), "--check"]) == 1
        out = capsys.readouterr().out
        assert "docs/reproduce.md, block 'reproduce-claims': line 3 is '| A paper | oracle-edited |" in out
    finally:
        page.write_text(text)


def test_a_papers_parts_are_listed_in_their_numbers_order_and_only_its_own(root, tmp_path):
    results = tmp_path / "results"
    for name in ("reproduce-other-part10", "reproduce-other-part2", "reproduce-other-partx", "reproduce-other-x-part1"):
        shutil.copytree(root / "results/reproduce-other-part1", results / name)
    (results / "reproduce-other-part3").mkdir()  # no archive in it
    assert report_parts(tmp_path, "other") == (("results/reproduce-other-part2", 10), ("results/reproduce-other-part10", 10))
