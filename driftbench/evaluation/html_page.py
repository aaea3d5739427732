"""A self-contained HTML page (inline CSS, PNGs as data URIs, no scripts, nothing fetched) of titled sections."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from html import escape

STYLE = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f; background: #fff;
       max-width: 1500px; margin: 0 auto; padding: 1.5em 2em 4em; }
h1 { font-size: 1.6em; margin: 0.2em 0; }
h2 { font-size: 1.3em; margin-top: 2.2em; padding-top: 0.6em; border-top: 2px solid #ddd; }
.subtitle, .intro { color: #555; }
nav a { margin-right: 1.2em; }
a { color: #0b5cad; }
.table { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.85em; font-variant-numeric: tabular-nums; }
th, td { padding: 0.35em 0.5em; text-align: right; border-bottom: 1px solid #e3e3e3; white-space: nowrap; }
thead th { background: #f3f4f6; border-bottom: 2px solid #bbb; }
tbody tr:nth-child(even) { background: #fafafa; }
tbody tr:hover { background: #eef4ff; }
td:nth-child(2), th:nth-child(2) { text-align: left; font-weight: 600; }
tr.oracle td { color: #666; font-style: italic; font-weight: normal; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.25em 1.2em; margin: 0.8em 0; }
dt { font-weight: 600; }
dd { margin: 0; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 1.5em; margin: 1em 0; }
figure { margin: 0; }
figure img { width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #444; }
details { margin: 0.8em 0; }
summary { cursor: pointer; font-weight: 600; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; }
pre { background: #f6f8fa; padding: 0.8em 1em; overflow-x: auto; }
.note { color: #a33; }
"""


@dataclass(frozen=True)
class Image:
    """A plot: its caption, the PNG embedded in the page, and a link to its vector (SVG) file."""

    caption: str
    png: bytes
    svg_href: str | None = None


@dataclass(frozen=True)
class Links:
    """Links in a collapsible block: title, then per group label, link text -> href (a relative path or URI)."""

    title: str
    groups: dict[str, dict[str, str]]


@dataclass(frozen=True)
class Section:
    """One titled block of the page; each part but the title is optional and shows in the order below."""

    title: str
    subtitle: str = ""
    rows: list[dict[str, str]] = field(default_factory=list)  # a table of text cells; columns from the first row
    more_rows: tuple[str, list[dict[str, str]]] | None = None  # a second, collapsible table below it: its title and rows
    images: list[Image] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # warnings, shown in red above the table
    facts: dict[str, str] = field(default_factory=dict)  # term -> text, a definition list (settings, a glossary)
    links: Links | None = None
    code: str = ""  # preformatted text, e.g. commands


def render_page(title: str, sections: list[Section], intro: str = "") -> str:
    """The whole page: title, intro, a contents line and the sections."""
    ids = section_ids(sections)
    contents = " ".join(f'<a href="#{i}">{escape(s.title)}</a>' for i, s in zip(ids, sections))
    body = "\n".join(render_section(s, i) for s, i in zip(sections, ids))
    intro_html = f'<p class="intro">{escape(intro)}</p>' if intro else ""
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head>\n<body><h1>{escape(title)}</h1>{intro_html}\n<nav>{contents}</nav>\n{body}\n</body></html>\n"
    )


def section_ids(sections: list[Section]) -> list[str]:
    """A distinct anchor per section, from its title."""
    ids: list[str] = []
    for section in sections:
        slug = re.sub(r"[^a-z0-9]+", "-", section.title.lower()).strip("-") or "section"
        ids.append(slug if slug not in ids else f"{slug}-{len(ids)}")
    return ids


def render_row(row: dict[str, str], headers: list[str]) -> str:
    """One table row; a row whose cells mention "(oracle)" gets the oracle style."""
    oracle = ' class="oracle"' if any(v.endswith("(oracle)") for v in row.values()) else ""
    return f"<tr{oracle}>" + "".join(f"<td>{escape(row[h])}</td>" for h in headers) + "</tr>\n"


def render_section(section: Section, anchor: str) -> str:
    """A section's heading and its parts."""
    parts = [f'<section id="{escape(anchor)}"><h2>{escape(section.title)}</h2>']
    if section.subtitle:
        parts.append(f'<p class="subtitle">{escape(section.subtitle)}</p>')
    if section.facts:
        parts.append(render_facts(section.facts))
    parts += [f'<p class="note">{escape(note)}</p>' for note in section.notes]
    if section.rows:
        parts.append(render_table(section.rows))
    if section.more_rows is not None:
        title, rows = section.more_rows
        parts.append(f"<details><summary>{escape(title)}</summary>{render_table(rows)}</details>")
    if section.images:
        parts.append('<div class="figures">' + "".join(render_image(i) for i in section.images) + "</div>")
    if section.links is not None:
        parts.append(render_links(section.links))
    if section.code:
        parts.append(f"<pre><code>{escape(section.code)}</code></pre>")
    return "\n".join(parts) + "</section>"


def render_facts(facts: dict[str, str]) -> str:
    """A definition list."""
    return "<dl>" + "".join(f"<dt>{escape(term)}</dt><dd>{escape(text)}</dd>" for term, text in facts.items()) + "</dl>"


def render_table(rows: list[dict[str, str]]) -> str:
    """A table of text rows under the first row's keys, scrolling sideways when wider than the page."""
    headers = list(rows[0])
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(render_row(row, headers) for row in rows)
    return f'<div class="table"><table><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table></div>'


def render_image(image: Image) -> str:
    """A figure: the PNG as a data URI, the caption and the SVG link."""
    data = base64.b64encode(image.png).decode()
    svg = f' <a href="{escape(image.svg_href)}">SVG</a>' if image.svg_href else ""
    return (
        f'<figure><img alt="{escape(image.caption)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{escape(image.caption)}{svg}</figcaption></figure>"
    )


def render_links(links: Links) -> str:
    """A collapsible block with one line of links per group."""
    lines = "".join(
        f"<dt>{escape(group)}</dt><dd>"
        + " ".join(f'<a href="{escape(href)}">{escape(text)}</a>' for text, href in items.items())
        + "</dd>"
        for group, items in links.groups.items()
    )
    return f"<details><summary>{escape(links.title)}</summary><dl>{lines}</dl></details>"
