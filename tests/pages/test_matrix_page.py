"""The drift matrix's page and the leaderboard's section: "not yet" without results/matrix, its numbers with it, and
driftbench render --check passing after a render and failing after a hand edit."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

from driftbench.cli import main
from driftbench.pages.leaderboard import PAGE as SWEEPS
from driftbench.pages.matrix import MAKE, PAGE, SUITE
from driftbench.pages.render import read_block

ROOT = Path(__file__).resolve().parents[2]
TINY_SUITE = 'methods = ["fedavg", "static", "ifca", "oracle"]\nseeds = [0, 1, 2]\n[traces.static]\n[traces.rotation]\n'

pytest.importorskip("autorank", reason="the matrix's ranking needs autorank (pip install 'driftbench[matrix]')")


@pytest.fixture
def root(tmp_path):
    """A repository root holding the two pages and the matrix's suite, as checked in."""
    for name in (PAGE, SWEEPS, SUITE):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def block(root, page, name):
    return read_block((root / page).read_text(), name, page)


def hand_edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_without_the_archive_each_block_says_so_with_the_command(root, capsys):
    assert main(["render", "matrix", "leaderboard", "--root", str(root)]) == 0
    for page, name in ((PAGE, "matrix-heatmap"), (PAGE, "matrix-ranking"), (SWEEPS, "leaderboard-table")):
        text = block(root, page, name)
        assert "`results/matrix` does not exist yet" in text and MAKE in text
    assert "- **feature** (`rotation`): " in block(root, PAGE, "matrix-kinds")  # from the trace catalog, archive or not
    assert not (root / "docs/images").exists()
    capsys.readouterr()
    assert main(["render", "matrix", "leaderboard", "--check", "--root", str(root)]) == 0
    hand_edit(root / SWEEPS, "does not exist yet", "is on its way")
    assert main(["render", "matrix", "leaderboard", "--check", "--root", str(root)]) == 1
    assert "page 'leaderboard' differs from its render: docs/sweeps.md, block 'leaderboard-source'" in capsys.readouterr().out


def test_with_the_archive_the_pages_hold_its_numbers(root, tiny_matrix, capsys):
    shutil.copytree(tiny_matrix[1], root / "results/matrix")
    (root / SUITE).write_text(TINY_SUITE)
    assert main(["render", "matrix", "leaderboard", "--root", str(root)]) == 0
    heatmap = block(root, PAGE, "matrix-heatmap")
    assert "](images/matrix-heatmap.png)" in heatmap and "| method | static (none) | rotation (feature) |" in heatmap
    assert "| ifca | not run | not run |" in heatmap and "| oracle | 1 | 1 |" in heatmap
    assert "18 complete runs in `results/matrix`" in block(root, PAGE, "matrix-source")
    assert "**drift: none**: no test: " in block(root, PAGE, "matrix-ranking")
    cells = pd.read_csv(root / "docs/images/matrix.csv", keep_default_na=False)
    assert len(cells) == 8 and set(cells[cells["method"] == "ifca"]["note"]) == {"not run yet"}
    assert (root / "docs/images/matrix-heatmap.png").read_bytes()[:4] == b"\x89PNG"
    table = block(root, SWEEPS, "leaderboard-table")
    assert (
        table.startswith("| trace | rank | method | seeds | final accuracy | vs fedavg |")
        and "| static | - | oracle (oracle) |" in table
    )
    assert block(root, SWEEPS, "leaderboard-says").startswith("- `rotation`: first ")
    capsys.readouterr()
    assert main(["render", "matrix", "leaderboard", "--check", "--root", str(root)]) == 0
    hand_edit(root / "docs/images/matrix.csv", "static,none,fedavg", "static,none,FedAvg")
    assert main(["render", "matrix", "leaderboard", "--check", "--root", str(root)]) == 1
    assert "docs/images/matrix.csv: line 2 is " in capsys.readouterr().out
