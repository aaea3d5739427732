"""What a page renderer returns, and writing or checking it against the repository's files.

A renderer reads archives (``results/``) and returns blocks (Markdown between
``<!-- --8<-- [start:NAME] -->`` and ``<!-- --8<-- [end:NAME] -->``), whole data files and
pictures drawn from them. ``driftbench render`` writes them; ``--check`` re-renders and names the
first difference. A picture must exist and is checked through its data file, since PNG bytes differ across
font and library versions.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from driftbench.atomic import atomic_write
from driftbench.errors import ConfigError


@dataclass(frozen=True)
class Block:
    """Markdown between a file's start and end markers named ``name``."""

    path: str
    name: str
    text: str


@dataclass(frozen=True)
class DataFile:
    """A whole file rendered from the archives (a figure's data, a CSV table)."""

    path: str
    text: str


@dataclass(frozen=True)
class Picture:
    """A figure ``draw`` writes to ``path``, from data a ``DataFile`` holds (written, never compared)."""

    path: str
    draw: Callable[[BinaryIO], None]


Rendered = Block | DataFile | Picture
Renderer = Callable[[Path], Sequence[Rendered]]


MARKER = "<!-- --8<-- ["


def start_marker(name: str) -> str:
    """The line opening block ``name``."""
    return f"<!-- --8<-- [start:{name}] -->"


def end_marker(name: str) -> str:
    """The line closing block ``name``."""
    return f"<!-- --8<-- [end:{name}] -->"


def block_span(text: str, name: str, path: str) -> tuple[int, int]:
    """Where block ``name``'s content starts (the line after its start marker's) and ends (its end marker's line); a
    missing or doubled marker, or one that shares its line with other text, is an error."""
    start, end = start_marker(name), end_marker(name)
    lines = text.splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.strip() == start]
    until = [i for i, line in enumerate(lines) if line.strip() == end]
    if len(at) != 1 or len(until) != 1 or text.count(start) != 1 or text.count(end) != 1:
        raise ConfigError(f"{path}: needs exactly one '{start}' and one '{end}' line for the rendered block '{name}'")
    if until[0] <= at[0]:
        raise ConfigError(f"{path}: block '{name}' ends before it starts")
    offsets = [0, *itertools.accumulate(len(line) for line in lines)]
    return offsets[at[0] + 1], offsets[until[0]]


def with_block(text: str, block: Block) -> str:
    """``text`` with block ``block.name``'s content replaced by ``block.text`` (which may hold no marker)."""
    if MARKER in block.text:
        raise ConfigError(f"{block.path}: the rendered block '{block.name}' holds a marker ('{MARKER}'), which it may not")
    first, last = block_span(text, block.name, block.path)
    return text[:first] + content(block) + text[last:]


def content(block: Block) -> str:
    """A block's text as it stands in its page: ending in a newline unless empty."""
    return block.text if block.text.endswith("\n") or not block.text else block.text + "\n"


def read_block(text: str, name: str, path: str) -> str:
    """The content of block ``name`` in ``text``."""
    first, last = block_span(text, name, path)
    return text[first:last]


def write_rendered(root: Path, rendered: Sequence[Rendered]) -> list[str]:
    """Write every block, data file and picture below ``root``; the paths whose content changed."""
    changed: list[str] = []
    for item in rendered:
        path = root / item.path
        if isinstance(item, Picture):
            atomic_write(path, lambda fh, item=item: item.draw(fh))
            continue
        old = path.read_bytes().decode("utf-8") if path.exists() else None
        new = with_block(old or "", item) if isinstance(item, Block) else item.text
        if isinstance(item, Block) and old is None:
            raise ConfigError(f"{item.path}: missing; the rendered block '{item.name}' has no page to go in")
        if new != old:
            atomic_write(path, lambda fh, new=new: fh.write(new.encode("utf-8")))
            changed += [] if item.path in changed else [item.path]
    return changed


def first_difference(root: Path, rendered: Sequence[Rendered]) -> str | None:
    """A one-line description of the first rendered item that differs from the file, or ``None``."""
    for item in rendered:
        path = root / item.path
        if not path.exists():
            return f"{item.path}: missing (driftbench render writes it)"
        if isinstance(item, Picture):  # drawn from a data file that is compared; its pixels vary with the fonts
            continue
        text = path.read_bytes().decode("utf-8")
        have = read_block(text, item.name, item.path) if isinstance(item, Block) else text
        want = content(item) if isinstance(item, Block) else item.text
        if have != want:
            where = f"{item.path}, block '{item.name}'" if isinstance(item, Block) else item.path
            return f"{where}: {line_difference(have, want)}"
    return None


def line_difference(have: str, want: str) -> str:
    """The first line where ``have`` differs from ``want``, both shown."""
    for n, (a, b) in enumerate(zip(have.splitlines(), want.splitlines(), strict=False), start=1):
        if a != b:
            return f"line {n} is {short(a)!r}, rendered {short(b)!r}"
    diff = len(want.splitlines()) - len(have.splitlines())
    return f"the rendered text has {abs(diff)} {'more' if diff > 0 else 'fewer'} lines" if diff else "whitespace differs"


def short(line: str, width: int = 100) -> str:
    """``line``, cut to ``width`` characters."""
    return line if len(line) <= width else line[: width - 3] + "..."
