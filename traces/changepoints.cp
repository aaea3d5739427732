# Staggered concept drift in FedDrift's changepoint format: one row per time step, one concept id per client.
# 10 clients, 10 time steps, 4 concepts; drifts arrive at different steps on different clients, none after step 6.
0 0 0 0 0 1 1 1 1 1
0 0 0 0 0 1 1 1 1 1
0 0 2 0 0 1 1 1 1 1
0 0 2 2 0 1 1 3 1 1
2 0 2 2 0 1 1 3 3 1
2 0 2 2 0 0 1 3 3 1
2 1 2 2 0 0 1 3 3 3
2 1 2 2 0 0 1 3 3 3
2 1 2 2 0 0 1 3 3 3
2 1 2 2 0 0 1 3 3 3
