import argparse
import importlib.util
import re
from pathlib import Path

import pytest

from driftbench.cli import parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
ISSUE_NUMBER = re.compile(r"[Ii]ssues? #?\d+|#\d+")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def load_hook():
    spec = importlib.util.spec_from_file_location("cli_reference", DOCS / "hooks" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def command_paths(p: argparse.ArgumentParser, path: str = "driftbench") -> dict[str, argparse.ArgumentParser]:
    found = {path: p}
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found |= command_paths(child, f"{path} {name}")
    return found


def prose(text: str) -> str:
    """The text outside fenced code blocks and inline code."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))


def test_reference_names_every_command_and_every_flag():
    reference = load_hook().render(parser())
    sections = dict(re.findall(r"^## `(driftbench[^`]*)`\n(.*?)(?=^## |\Z)", reference, re.MULTILINE | re.DOTALL))
    commands = command_paths(parser())
    assert set(sections) == set(commands)
    assert {"driftbench run", "driftbench trace export", "driftbench bench runs", "driftbench check-method"} <= set(commands)
    for path, command in commands.items():
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                assert re.search(rf"`{re.escape(option)}\b", sections[path]), f"{path}: {option} missing from the reference"
            if not action.option_strings and not isinstance(action, argparse._SubParsersAction):
                assert f"| `{action.metavar or action.dest}` |" in sections[path], f"{path}: {action.dest} missing"
            if action.help and action.help is not argparse.SUPPRESS:
                assert action.help.split()[0] in sections[path]


def test_reference_replaces_the_marker_only_on_its_page():
    hook = load_hook()
    page = (DOCS / "cli.md").read_text()
    assert page.count(hook.MARKER) == 1
    rendered = hook.on_page_markdown(page, None, None, None)
    assert hook.MARKER not in rendered and "## `driftbench sweep`" in rendered
    assert hook.on_page_markdown("# Traces\n", None, None, None) == "# Traces\n"


def test_reference_escapes_markdown_in_help_text():
    cell = load_hook().cell
    assert cell("runs/<trace>/seed<k>/ | a_b *c*") == r"runs/&lt;trace&gt;/seed&lt;k&gt;/ \| a\_b \*c\*"


def test_readme_is_short_and_keeps_the_set_up_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    set_up = readme.split("## Set-up", 1)[1]
    block = set_up.split("```bash\n", 1)[1].split("```", 1)[0]
    assert block.splitlines()[0].startswith("pip install -e '.[test]' && driftbench run --trace openimage-buckets   #")
    assert block.splitlines()[1].startswith("pytest   ")


@pytest.mark.parametrize(
    "path",
    [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))],
    ids=lambda p: p.name,
)
def test_no_issue_numbers(path):
    assert not ISSUE_NUMBER.findall(prose(path.read_text())), f"{path.name} refers to the issue tracker by number"


def test_issue_pattern_catches_what_it_should():
    assert ISSUE_NUMBER.findall(prose("as issue 23 said (#26), see issues 14"))
    assert not ISSUE_NUMBER.findall(prose("run `driftbench sweep #1` and\n```\nissue 3\n```\n"))


def test_every_page_is_in_the_navigation_and_every_link_target_exists():
    config = (ROOT / "mkdocs.yml").read_text()
    nav = set(re.findall(r":\s+(\S+\.md)$", config, re.MULTILINE))
    assert nav == {p.name for p in DOCS.glob("*.md")}
    readme = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(((?:docs/)?[\w./-]+\.md)(?:#[\w-]+)?\)", readme):
        assert (ROOT / target).is_file(), target
