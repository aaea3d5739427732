"""Pages rendered from the archives in ``results/``: the README's and the docs' tables, figures and their data."""
