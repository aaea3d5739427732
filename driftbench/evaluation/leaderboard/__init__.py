"""The leaderboard over a runs folder: per trace, methods ranked by final accuracy (mean and std over seeds).

``gather`` reads each trace's run records into per-run rows (time to accuracy, speed-up over
FedAvg on the same seed); ``aggregate`` turns them into a row per method with paired
intervals and ranks them; ``write`` renders ``leaderboard.md``, ``leaderboard.csv``, each plot
as PNG and SVG, and a self-contained ``index.html``. Oracle methods are upper bounds, not
competitors: they are listed after the ranked methods, marked and unranked. Diverged runs count
with the accuracy they reached; incomplete runs are listed and left out of every number. The
time-to-accuracy speed-up is the geometric mean (the mean for ratios) over the seeds where both
the method and FedAvg reached the target; the other columns are arithmetic means over seeds
(and drift events). Differences from FedAvg and speed-ups carry a 95% interval over seeds,
paired by seed (``evaluation.paired``), and are marked where it contains no difference.
``write.GLOSSARY`` defines every column; both the Markdown and the page carry it.
"""
