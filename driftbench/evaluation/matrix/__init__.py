"""The drift matrix: every method against every trace, grouped by the traces' kind of drift (docs/matrix.md).

``cells`` reads a runs folder or an archive into one row per (trace, method): final accuracy,
the share of the oracle's room over FedAvg with its paired interval, recovery after drift, time
to FedAvg's target, overhead, and why a cell has no number; ``ranking`` ranks the methods over
traces per kind of drift and overall (Friedman's test, Nemenyi's critical difference, from
``autorank``); ``figures`` draws the heatmap and the critical-difference diagrams; ``text`` writes
their Markdown; ``report`` writes them all into a folder (``matrix_report``).
"""
