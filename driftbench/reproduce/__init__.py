"""``driftbench reproduce``: each paper's claims (``claims/*.toml``) checked on the benchmark, one job a module."""
