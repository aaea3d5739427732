"""CI runs what the README tells a user to run: its set-up commands, verbatim, before any other gate."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    """The commands of the README's ``## Set-up`` code block, without their trailing comments."""
    section = (REPO / "README.md").read_text().split("\n## Set-up\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```(?:bash|sh)?\n(.*?)```", section, re.S)
    assert block, "README.md's Set-up section has no code block"
    return [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_ci_runs_the_readme_set_up_commands_verbatim_first():
    install, test = readme_commands()
    assert (install, test) == ("pip install -e '.[test]' && driftbench run --trace openimage-buckets", "pytest")
    lines = [line.strip() for line in (REPO / ".ci/run").read_text().splitlines()]
    assert install in lines, ".ci/run does not run the README's install line as written"
    at = lines.index(install)
    assert not [line for line in lines[:at] if line.startswith("gate ")], "a gate runs before the README's install"
    assert f"gate {test}" in lines[at:], ".ci/run does not run the README's test command as written, after the install"
