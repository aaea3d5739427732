"""``driftbench bench clustering --json`` on tiny sizes: one JSON object with each figure beside the paper's."""

import json

from driftbench.cli import main


def test_bench_clustering_json_has_each_step_with_paper_figure_and_ratio(capsys):
    argv = ["bench", "clustering", "--json", "--clients", "300", "--classes", "20", "--kmeans-n", "400", "--kmeans-d", "16"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    results = {r["name"]: r for r in report["results"]}
    assert list(results) == ["global_reclustering", "per_client_adjustment", "kmeans"]
    assert results["kmeans"]["paper_seconds"] == 477.8 and results["global_reclustering"]["paper_seconds"] == 15.6
    for r in results.values():
        assert r["seconds"] > 0 and r["paper_over_ours"] == r["paper_seconds"] / r["seconds"]
        assert r["device"] == "cpu"  # small kernels stay on the CPU, with or without a GPU
    assert 2 <= report["clusters_found"] <= 10 and report["sizes"]["clients"] == 300
