"""The rendered pages by name, each a function of the repository root (the archives in ``results/`` below it)."""

from __future__ import annotations

from driftbench.pages.leaderboard import leaderboard_page
from driftbench.pages.matrix import matrix_page
from driftbench.pages.render import Renderer
from driftbench.pages.reproduce_page import render_reproduce

PAGES: dict[str, Renderer] = {"leaderboard": leaderboard_page, "matrix": matrix_page, "reproduce": render_reproduce}
