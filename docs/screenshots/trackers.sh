#!/usr/bin/env bash
# Re-makes docs/screenshots/tensorboard.png and docs/screenshots/mlflow.png: the main job's six runs in TensorBoard
# and in MLflow's UI, each served on localhost and captured in headless Chromium.
#
#   bash docs/screenshots/trackers.sh            # runs the main job with --log tensorboard --log mlflow (minutes)
#   bash docs/screenshots/trackers.sh RUNS_DIR   # exports the main job's runs already under RUNS_DIR instead
#
# Needs the extra tracking-ui (pip install -e '.[tracking-ui]': MLflow's UI server) and Debian's chromium
# (apt-get install -y chromium). Everything happens in a fresh temporary folder; the servers listen on 127.0.0.1
# only and are stopped at the end.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
runs=${1:+$(cd "$1" && pwd)}
work=$(mktemp -d)
tb_port=${TB_PORT:-16006}
mlflow_port=${MLFLOW_PORT:-15000}
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
unset MLFLOW_TRACKING_URI MLFLOW_EXPERIMENT_NAME  # a fresh ./mlflow.db, whose experiment driftbench is number 1

if [ -n "$runs" ]; then
    driftbench export tensorboard "$runs" --quiet
    driftbench export mlflow "$runs" --quiet
else
    driftbench run --trace openimage-buckets --quiet --out runs --log tensorboard --log mlflow
fi

tensorboard --logdir tensorboard --host 127.0.0.1 --port "$tb_port" > tensorboard.log 2>&1 &
pids+=($!)
# MLflow's UI opens its assistant panel over the page on a first visit from localhost, so Chromium reaches it as
# mlflow.test (mapped to 127.0.0.1 below), a name the server is told to accept.
MLFLOW_DISABLE_TELEMETRY=true mlflow server --backend-store-uri sqlite:///mlflow.db --host 127.0.0.1 \
    --port "$mlflow_port" --workers 1 --allowed-hosts "mlflow.test:$mlflow_port,127.0.0.1:$mlflow_port" > mlflow.log 2>&1 &
pids+=($!)

up() {  # wait (120 s at most) until the URL answers
    for _ in $(seq 120); do
        curl -sf -o /dev/null "$1" && return 0
        sleep 1
    done
    echo "error: $1 did not answer within 120 s" >&2
    return 1
}
up "http://127.0.0.1:$tb_port/data/plugin/scalars/tags"
up "http://127.0.0.1:$mlflow_port/health"

shot() {  # shot URL FILE WIDTH,HEIGHT: a screenshot in headless Chromium with a fresh profile
    profile=$(mktemp -d -p "$work")
    chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
        --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars \
        --host-resolver-rules="MAP mlflow.test 127.0.0.1" --virtual-time-budget=25000 --window-size="$3" \
        --screenshot="$2" "$1" 2> /dev/null
}
# TensorBoard's time series of the evaluations, unsmoothed, drawn as SVG (headless Chromium has no WebGL)
tags="rounds/(accuracy_mean|accuracy_p10|ari|n_clusters|sim_seconds|cluster_seconds)"
shot "http://127.0.0.1:$tb_port/?forceSVG=true&smoothing=0&tagFilter=$(python -c 'import sys, urllib.parse as u; print(u.quote(sys.argv[1], safe=""))' "$tags")#timeseries" \
    "$here/tensorboard.png" 1600,1400
# MLflow's metric page: mean client accuracy of the six runs on one chart, and each run's latest, min and max
url=$(curl -sf -X POST -H "Content-Type: application/json" "http://127.0.0.1:$mlflow_port/ajax-api/2.0/mlflow/runs/search" \
    -d '{"experiment_ids": ["1"], "max_results": 100, "order_by": ["attributes.run_name ASC"]}' | python -c '
import json, sys, urllib.parse
runs = [r["info"]["run_id"] for r in json.load(sys.stdin)["runs"]]
query = {"runs": runs, "metric": "rounds/accuracy_mean", "experiments": ["1"], "plot_metric_keys": ["rounds/accuracy_mean"]}
print("&".join(f"{k}={urllib.parse.quote(json.dumps(v), safe=str())}" for k, v in query.items()))')
shot "http://mlflow.test:$mlflow_port/#/metric?$url&x_axis=step&y_axis_scale=linear&line_smoothness=1&show_point=false" \
    "$here/mlflow.png" 1600,1000
echo "wrote $here/tensorboard.png and $here/mlflow.png"
