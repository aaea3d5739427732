"""The render mechanism: blocks replaced between markers, data files written, the first difference named."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftbench.errors import ConfigError
from driftbench.pages.render import Block, DataFile, Picture, end_marker, first_difference, start_marker, write_rendered

PAGE = f"# Title\n\nkept\n{start_marker('table')}\nold row\n{end_marker('table')}\nkept too\n"


def test_a_block_is_replaced_between_its_markers_and_the_rest_kept(tmp_path: Path) -> None:
    (tmp_path / "page.md").write_text(PAGE)
    changed = write_rendered(tmp_path, [Block("page.md", "table", "| a |\n| 1 |"), DataFile("data/t.csv", "a\n1\n")])
    assert changed == ["page.md", "data/t.csv"]
    text = (tmp_path / "page.md").read_text()
    assert text == PAGE.replace("old row\n", "| a |\n| 1 |\n")
    assert write_rendered(tmp_path, [Block("page.md", "table", "| a |\n| 1 |")]) == []


def test_check_names_the_first_differing_block_and_line(tmp_path: Path) -> None:
    (tmp_path / "page.md").write_text(PAGE)
    assert first_difference(tmp_path, [Block("page.md", "table", "old row")]) is None
    difference = first_difference(tmp_path, [Block("page.md", "table", "new row")])
    assert difference == "page.md, block 'table': line 1 is 'old row', rendered 'new row'"
    assert first_difference(tmp_path, [DataFile("gone.csv", "a\n")]) == "gone.csv: missing (driftbench render writes it)"


def test_a_picture_is_drawn_and_must_exist_but_its_bytes_are_never_compared(tmp_path: Path) -> None:
    picture = Picture("fig.png", lambda fh: fh.write(b"png"))
    assert first_difference(tmp_path, [picture]) == "fig.png: missing (driftbench render writes it)"
    write_rendered(tmp_path, [picture])
    assert (tmp_path / "fig.png").read_bytes() == b"png"
    assert first_difference(tmp_path, [Picture("fig.png", lambda fh: fh.write(b"other"))]) is None


@pytest.mark.parametrize(
    "page",
    [
        "no markers\n",
        PAGE + start_marker("table") + "\n",
        f"{start_marker('table')} old {end_marker('table')}\n",  # markers sharing a line with text
    ],
)
def test_a_missing_or_doubled_marker_is_a_one_line_error(tmp_path: Path, page: str) -> None:
    (tmp_path / "page.md").write_text(page)
    with pytest.raises(ConfigError, match=r"page.md: needs exactly one .* for the rendered block 'table'"):
        write_rendered(tmp_path, [Block("page.md", "table", "x")])
    assert (tmp_path / "page.md").read_text() == page


def test_a_block_holding_a_marker_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    (tmp_path / "page.md").write_text(PAGE)
    with pytest.raises(ConfigError, match=r"page.md: the rendered block 'table' holds a marker"):
        write_rendered(tmp_path, [Block("page.md", "table", f"row\n{end_marker('other')}")])
    assert (tmp_path / "page.md").read_text() == PAGE


def test_crlf_pages_keep_their_line_endings_outside_the_block(tmp_path: Path) -> None:
    page = PAGE.replace("\n", "\r\n")
    (tmp_path / "page.md").write_bytes(page.encode())
    write_rendered(tmp_path, [Block("page.md", "table", "new")])
    assert (tmp_path / "page.md").read_bytes().decode() == page.replace("old row\r\n", "new\n")
