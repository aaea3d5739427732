"""How far a metric may fall below its reference before ``driftbench check`` calls it a regression.

Runs are bit-identical on one machine; across CPU types float reductions round differently
and a few dozen rounds of training turn that into accuracy differences of up to about one
point on the CI suite's small test sets. A real regression costs several points.
"""

ACCURACY_TOLERANCE = 0.02  # absolute drop in final accuracy
ARI_TOLERANCE = 0.05  # absolute drop in mean ARI (clusterings of label histograms rarely move between CPUs)
