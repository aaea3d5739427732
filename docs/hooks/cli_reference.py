"""MkDocs hook: replaces the marker in docs/cli.md with a command reference rendered from driftbench's argparse parser."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterator
from typing import Any

MARKER = "<!-- cli-reference -->"
WIDTH = 80  # usage lines wrap here whatever the terminal's width


Command = tuple[tuple[str, ...], str, argparse.ArgumentParser]


def commands(p: argparse.ArgumentParser, path: tuple[str, ...] = ("driftbench",), help_text: str = "") -> Iterator[Command]:
    """Yield (command path, its one-line help, its parser) for ``p`` and every subcommand below it, depth first."""
    yield path, help_text, p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, child in action.choices.items():
                yield from commands(child, (*path, name), helps.get(name, ""))


def usage(p: argparse.ArgumentParser) -> str:
    """The parser's usage line(s) at a fixed width (set on the parser), without the leading 'usage: ' and its indent."""
    p.formatter_class = functools.partial(argparse.HelpFormatter, width=WIDTH)
    prefix = "usage: "
    lines = p.format_usage().strip().splitlines()
    return "\n".join(line.removeprefix(prefix if i == 0 else " " * len(prefix)) for i, line in enumerate(lines))


def argument_name(p: argparse.ArgumentParser, action: argparse.Action) -> str:
    """How an argument is written, as argparse's help writes it: ``--out OUT``, ``--device {auto,cpu,cuda}``, ``NAME``."""
    return p._get_formatter()._format_action_invocation(action)


def cell(text: str) -> str:
    """Text fit for one Markdown paragraph or table cell: one line, Markdown's special characters escaped."""
    text = " ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for char in "\\`*_[]|":
        text = text.replace(char, "\\" + char)
    return text


def arguments_table(p: argparse.ArgumentParser) -> list[str]:
    """The Markdown table of a parser's arguments (help and subcommand actions left out)."""
    rows = [
        f"| `{argument_name(p, a)}` | {cell(a.help or '')}{' (required)' if a.required and a.option_strings else ''} |"
        for a in p._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
    ]
    return ["| argument | meaning |", "| --- | --- |", *rows] if rows else []


def render(p: argparse.ArgumentParser) -> str:
    """The command reference of ``p`` in Markdown: per command its usage, description, arguments and examples."""
    out: list[str] = []
    for path, help_text, command in commands(p):
        out += [f"## `{' '.join(path)}`", ""]
        if help_text:
            out += [cell(help_text[0].upper() + help_text[1:]) + ".", ""]
        if command.description and command.description != help_text:
            out += [cell(command.description), ""]
        out += ["```", usage(command), "```", ""]
        table = arguments_table(command)
        if table:
            out += [*table, ""]
        if command.epilog:
            out += ["```", command.epilog.strip("\n"), "```", ""]
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Put the rendered reference where the page holds the marker (MkDocs calls this for every page)."""
    if MARKER not in markdown:
        return markdown
    from driftbench.cli import parser

    return markdown.replace(MARKER, render(parser()))
