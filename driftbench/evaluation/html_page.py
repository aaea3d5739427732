"""A self-contained HTML page (inline CSS, PNGs as data URIs, no scripts) of titled tables and plots."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from html import escape

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
th { background: #f0f0f0; }
td:nth-child(2), th:nth-child(2) { text-align: left; }
tr.oracle td { color: #666; font-style: italic; }
img { max-width: 48%; margin: 0.5em 1% 0.5em 0; }
.note { color: #a33; }
"""


@dataclass(frozen=True)
class Section:
    """One titled block of the page: a table of text cells, PNG plots and notes."""

    title: str
    subtitle: str
    rows: list[dict[str, str]]
    images: dict[str, bytes]  # caption -> PNG
    notes: list[str]


def render_page(title: str, sections: list[Section]) -> str:
    """The whole page."""
    body = "\n".join(render_section(s) for s in sections)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head>\n<body><h1>{escape(title)}</h1>\n{body}\n</body></html>\n"
    )


def render_row(row: dict[str, str], headers: list[str]) -> str:
    """One table row; a row whose cells mention "(oracle)" gets the oracle style."""
    oracle = ' class="oracle"' if any(v.endswith("(oracle)") for v in row.values()) else ""
    return f"<tr{oracle}>" + "".join(f"<td>{escape(row[h])}</td>" for h in headers) + "</tr>\n"


def render_section(section: Section) -> str:
    """A section's heading, table, plots and notes."""
    headers = list(section.rows[0]) if section.rows else []
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(render_row(row, headers) for row in section.rows)
    images = "".join(
        f'<img alt="{escape(name)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'
        for name, png in section.images.items()
    )
    notes = "".join(f'<p class="note">{escape(note)}</p>' for note in section.notes)
    return (
        f"<section><h2>{escape(section.title)}</h2><p>{escape(section.subtitle)}</p>\n"
        f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>\n<div>{images}</div>{notes}</section>"
    )
