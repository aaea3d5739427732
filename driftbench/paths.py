"""Where the top-level catalogs (``traces/``, ``methods/``, ``claims/``, ``evaluation/``) are, in a checkout or a wheel."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
BUNDLED = PACKAGE / "bundled"  # a wheel's copy of the catalogs (pyproject.toml: [tool.hatch.build.targets.wheel.force-include])
CHECKOUT = PACKAGE.parent  # the repository's root, in a checkout or an editable install


def catalog_dir(name: str) -> Path:
    """The catalog folder ``name``: the wheel's copy when installed from one, else the repository's own folder."""
    bundled = BUNDLED / name
    return bundled if bundled.is_dir() else CHECKOUT / name
