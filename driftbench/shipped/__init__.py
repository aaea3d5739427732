"""A shipped archive's runs: a new method placed beside them (``place``), and whether this code still makes them (``stale``).

Both run again what an archive's runs recorded: ``settings`` recovers, from each run's config.json,
the trace and method overrides that made it, so that the runs made now pair with the archived ones.
"""
