"""``driftbench reproduce``: claim files, the verdict rule on synthetic summaries, and one tiny end-to-end report."""

import csv
import importlib.util
import math
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from driftbench.cli import main
from driftbench.errors import ConfigError
from driftbench.methods.catalog import load_method
from driftbench.record.runs import RunRecord, folder_record
from driftbench.record.schema import (
    SCHEMA_VERSION,
    Detection,
    RoundRow,
    RunOverhead,
    Scorecard,
    Streaming,
    Summary,
    read_rounds,
    read_summary,
    write_rounds,
)
from driftbench.reproduce.claim import DIAGNOSIS_KINDS, Claim
from driftbench.reproduce.claim_file import load_claims, read_claim_file
from driftbench.reproduce.judging import (
    ClaimResult,
    ClaimScores,
    finalize,
    judge,
    judge_claim,
    open_claims,
    second_look,
)
from driftbench.reproduce.planning import RunPlan, Setting, plan, with_literal
from driftbench.reproduce.report import COLUMNS, Report, read_report, report_section, row, shown_diagnosis, write_report
from driftbench.reproduce.run import reproduce
from driftbench.reproduce.scoring import score_claim
from driftbench.reproduce.verdict import (
    ALPHA,
    DETERMINISTIC,
    DIRECTION_ONLY,
    INCONCLUSIVE,
    INVALID_PREMISE,
    LOOK_ALPHA,
    NOT_REPRODUCED,
    REPRODUCED,
    UNTESTABLE,
    VERDICT_RULE,
    holm,
    level,
    one_sided_p,
    tost_p,
)
from driftbench.runner import Execution, PoolOptions, run_pool

TINY = 'clients = 10, rounds = 4, "train.participants" = 5, "train.local_steps" = 2'
BASE = Summary(
    schema_version=SCHEMA_VERSION,
    trace="static",
    trace_hash="0" * 64,
    method="fedavg",
    oracle=False,
    seed=0,
    rounds=10,
    final_accuracy=0.5,
    time_to_accuracy=None,
    streaming=Streaming(0.5, 0.5, None),
    recovery=(),
    ari_mean=None,
    ari_final=None,
    ari_rounds=0,
    n_clusters_final=1,
    partition_changes=0,
    degenerate=(),
    ari_reference=None,
    mean_client_distance_final=0.0,
    overhead=RunOverhead(0.0, 0.0, 0.0, 0, 0, 0),
    events={},
    scorecard=Scorecard(
        (0,), ((0.5,),), 0.5, None, None, None, None, 0.5, (), Detection("no_events", 10, 0, (), 0, 0, 0, None, None, 0)
    ),
    sim_seconds=1.0,
    wall_seconds=1.0,
    status="ok",
    diverged_round=None,
    run_dir="",
)


def claim_file(folder: Path, claims: str, name: str = "paper") -> Path:
    """A claim file ``<name>.toml`` in ``folder`` holding ``claims`` ([[claims]] tables)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(f'paper = "A paper"\n{claims}')
    return path


KIND = 'kind = "exact"\nunit = "points"\npaper_value = 10\n'  # an exact claim on an effect of 10 points


def one_claim(tmp_path: Path, methods: str, direction: str, metric: str = "final_accuracy", extra: str = "", kind: str = KIND):
    """The one claim of a claim file with these methods, direction and metric."""
    table = (
        f'[[claims]]\nid = "c"\nwhere = "Table 1"\nclaim = "a claim"\ntrace = "static"\nmethods = {methods}\n'
        f'metric = "{metric}"\ndirection = "{direction}"\npaper_figure = "1 vs 2"\n{kind}{extra}'
    )
    (claim,) = read_claim_file(claim_file(tmp_path, table))
    return claim


def evaluate(claim: Claim, runs: dict[int, dict[str, Summary]], twins=None, alpha: float = ALPHA) -> ClaimResult:
    """The claim's test (before Holm) on these runs (each a summary, its rows in the folder it names): scored, judged."""
    return judge_claim(claim, score_claim(claim, records(runs), twins and records(twins)), alpha)


def records(runs: dict[int, dict[str, Summary]]) -> dict[int, dict[str, RunRecord]]:
    """The runs' records, each read from the folder its summary names."""
    return {seed: {m: folder_record(Path(s.run_dir), s) for m, s in by.items()} for seed, by in runs.items()}


def seeds(**values: list[float]) -> dict[int, dict[str, Summary]]:
    """Synthetic summaries: method -> final accuracy per seed, as seed -> method -> summary."""
    count = len(next(iter(values.values())))
    return {s: {m: replace(BASE, method=m, seed=s, final_accuracy=v[s]) for m, v in values.items()} for s in range(count)}


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([0.70, 0.72, 0.71], [0.60, 0.62, 0.59], REPRODUCED),  # the 95% interval of the mean margin is above 0
        ([0.50, 0.40, 0.45], [0.60, 0.52, 0.55], NOT_REPRODUCED),  # below 0
        ([0.61, 0.30, 0.30, 0.30, 0.30], [0.60] * 5, NOT_REPRODUCED),  # holds once, the interval is still below 0
        ([0.50, 0.40, 0.45], [0.60, 0.70, 0.55], INCONCLUSIVE),  # fails at every seed, too spread for an interval below 0
        ([0.61, 0.90, 0.62], [0.60, 0.60, 0.60], INCONCLUSIVE),  # holds at every seed, but the interval contains 0
        ([0.70, 0.50, 0.66], [0.60, 0.60, 0.60], INCONCLUSIVE),  # mixed
        ([0.80], [0.50], INCONCLUSIVE),  # one seed gives no interval
        ([0.40], [0.50], INCONCLUSIVE),
    ],
)
def test_verdict_rule_on_paired_seeds(tmp_path, a, b, expected):
    claim = one_claim(tmp_path, '["fielding", "static"]', "fielding > static")
    result = evaluate(claim, seeds(fielding=a, static=b))
    assert result.verdict == expected, result.reason
    assert result.figure.startswith("final_accuracy: fielding ") and "; static " in result.figure
    assert ("±" in result.figure) == (len(a) > 1)


def test_less_than_and_margin_flip_the_statistic(tmp_path):
    runs = seeds(fedcm=[0.50, 0.60, 0.55], star=[0.60, 0.71, 0.64])  # star above by 10, 11 and 9 points
    assert evaluate(one_claim(tmp_path, '["fedcm", "star"]', "fedcm < star"), runs).verdict == REPRODUCED
    assert evaluate(one_claim(tmp_path, '["fedcm", "star"]', "star > fedcm by 0.05"), runs).verdict == REPRODUCED
    assert evaluate(one_claim(tmp_path, '["fedcm", "star"]', "star > fedcm by 0.2"), runs).verdict == NOT_REPRODUCED


def test_orderings_and_equality_within_a_margin(tmp_path):
    runs = {
        s: {
            m: replace(BASE, method=m, seed=s, events={"recluster_global": n}, n_clusters_final=5)
            for m, n in zip(["m1", "m2", "m3"], counts)
        }
        for s, counts in enumerate([(10, 5, 3), (11, 6, 3), (12, 5, 2)])  # smallest steps 2, 3, 3
    }
    counted = 'kind = "exact"\nunit = "count"\npaper_value = 7\n'  # m1 over m3: 7, 8, 10 against the paper's 7
    decreasing = one_claim(tmp_path, '["m1", "m2", "m3"]', "decreasing", "events.recluster_global", kind=counted)
    assert evaluate(decreasing, runs).verdict == REPRODUCED
    assert evaluate(replace(decreasing, direction=replace(decreasing.direction, relation="increasing")), runs).verdict == (
        NOT_REPRODUCED
    )
    runs[1]["m3"] = replace(runs[1]["m3"], events={"recluster_global": 7})  # m2 -> m3 rises at seed 1
    assert evaluate(decreasing, runs).verdict == INCONCLUSIVE
    same = one_claim(tmp_path, '["m1", "m2"]', "m1 = m2 within 0.5", "n_clusters_final")
    held = evaluate(same, runs)
    assert held.verdict == DETERMINISTIC and held.holds  # 5 and 5 at every seed: one value, no test
    assert "m1 and m2 give n_clusters_final 5 at every seed" in held.reason
    assert shown_diagnosis(held) is None and row(held)["diagnosis"] == "-"  # it holds: nothing to diagnose
    runs[0]["m2"] = replace(runs[0]["m2"], n_clusters_final=4)
    assert evaluate(same, runs).verdict == INCONCLUSIVE
    level = one_claim(tmp_path, '["m1", "m2"]', "m1 = m2 within 0.05")
    assert evaluate(level, seeds(m1=[0.80, 0.81, 0.82], m2=[0.80, 0.80, 0.83])).verdict == REPRODUCED  # TOST p 0.0065


def test_a_missing_metric_makes_the_claim_untestable(tmp_path):
    claim = one_claim(tmp_path, '["cflgt", "ifca"]', "cflgt > ifca", "ari_mean")
    result = evaluate(claim, seeds(cflgt=[0.5, 0.5], ifca=[0.4, 0.4]))
    assert result.verdict == UNTESTABLE and result.reason.startswith("cflgt, seed 0: no evaluation whose ground truth")


def test_a_run_of_a_baseline_that_collapsed_without_drift_makes_the_claims_premise_invalid(tmp_path):
    claim = one_claim(tmp_path, '["fedcm", "star"]', "fedcm < star")
    runs = seeds(fedcm=[0.50, 0.60, 0.55], star=[0.60, 0.71, 0.64])
    assert evaluate(claim, runs).verdict == REPRODUCED
    runs[1]["star"] = replace(runs[1]["star"], degenerate=("collapse_without_drift",))
    result = evaluate(claim, runs)
    assert (result.verdict, result.reason) == (
        INVALID_PREMISE,
        "premise 'no run collapses without drift' fails: star collapse_without_drift at seed 1",
    )
    runs[1]["star"] = replace(runs[1]["star"], degenerate=("one_cluster",))  # a clustering flag leaves the verdict
    assert evaluate(claim, runs).verdict == REPRODUCED


def test_a_claim_can_compare_scorecard_metrics(tmp_path):
    def with_forgetting(method, seed, value):
        return replace(BASE, method=method, seed=seed, scorecard=replace(BASE.scorecard, forgetting=value))

    runs = {s: {"a": with_forgetting("a", s, 0.05 + 0.01 * s), "b": with_forgetting("b", s, 0.30 + 0.012 * s)} for s in range(3)}
    result = evaluate(one_claim(tmp_path, '["a", "b"]', "a < b", "scorecard.forgetting"), runs)
    assert result.verdict == REPRODUCED and result.figure.startswith("scorecard.forgetting: a 0.060")
    missed = one_claim(tmp_path, '["a", "b"]', "a < b", "scorecard.detection_delay")
    result = evaluate(missed, runs)  # BASE's trace has no drift event: nothing was detected
    assert result.verdict == UNTESTABLE and result.reason == "a, seed 0: no drift event detected"


def test_tta_speedup_times_each_run_to_the_target_methods_final_accuracy(tmp_path):
    def run(name: str, accuracy: list[float]) -> Summary:
        folder = tmp_path / name
        folder.mkdir()
        rows = [RoundRow(r, 10.0 * (r + 1), 0.0, a, a, a, 0, float("nan"), 1, 0.0, 0.0, 0, 0) for r, a in enumerate(accuracy)]
        write_rounds(folder / "rounds.csv", rows)
        return replace(BASE, method=name, final_accuracy=accuracy[-1], run_dir=str(folder))

    # smoothed over 3 evaluations, feddrift's curve never holds its own final accuracy 0.6: it counts at its end, 50 s
    feddrift = run("feddrift", [0.1, 0.2, 0.3, 0.4, 0.6])
    fielding = run("fielding", [0.1, 0.7, 0.7, 0.7, 0.7])  # 3-means 0.1, 0.4, 0.5 (30 s), 0.7 (40 s): crosses 0.6 at 35 s
    never = run("never", [0.1, 0.2, 0.2, 0.2, 0.2])
    claim = one_claim(tmp_path, '["fielding", "feddrift"]', "fielding > feddrift", "tta_speedup", 'target = "feddrift"\n')
    assert claim.run_methods == ("fielding", "feddrift")
    result = evaluate(claim, {0: {"fielding": fielding, "feddrift": feddrift}})
    assert result.figure == (
        "tta_speedup (time to feddrift's final accuracy): fielding 0.00972 sim h; feddrift 0.0139 sim h; "
        "fielding over feddrift 1.43x (geometric mean)"
    )
    assert result.verdict == INCONCLUSIVE  # one seed
    pair = {"fielding": fielding, "feddrift": feddrift}
    same = evaluate(claim, {0: pair, 1: pair})  # no spread: the seeds are one measurement, ln(50 / 35) twice
    assert same.verdict == DETERMINISTIC and same.p is None and same.ours == pytest.approx(50 / 35)
    slow = evaluate(claim, {0: {"fielding": never, "feddrift": feddrift}})  # neither reaches it: both count at their end
    assert slow.figure.endswith("fielding over feddrift 1.00x (geometric mean)")
    default = one_claim(tmp_path, '["fielding", "feddrift"]', "fielding > feddrift", "tta_speedup")
    assert default.target == "fedavg" and default.run_methods == ("fielding", "feddrift", "fedavg")


BAD_CLAIMS = [
    ("", "claims: expected one or more [[claims]] tables"),
    ('[[claims]]\nid = "x"\n', "claims[0] (x): missing 'claim'"),
    ('[[claims]]\nid = "x"\nwhen = "now"\n', "claims[0] (x): unknown key 'when'"),
]
CLAIM = 'id = "x"\nwhere = "T1"\nclaim = "c"\ntrace = "static"\npaper_figure = "1"\n' + KIND
BAD_FIELDS = [
    (
        'methods = ["a", "b"]\nmetric = "accuracy"\ndirection = "a > b"\n',
        "claims[0] (x): metric 'accuracy': allowed: final_accuracy",
    ),
    ('methods = ["a", "b"]\nmetric = "final_accuracy"\ndirection = "a >> b"\n', "claims[0] (x): direction 'a >> b': expected"),
    ('methods = ["a", "b"]\nmetric = "final_accuracy"\ndirection = "a > c"\n', "claims[0] (x): methods ['a', 'b']: must be"),
    ('methods = ["a", "b"]\nmetric = "final_accuracy"\ndirection = "a > b by -1"\n', "the margin must be >= 0"),
    ('methods = ["a", "b"]\nmetric = "final_accuracy"\ndirection = "a = b within x"\n', "margin: expected a number, got 'x'"),
    ('methods = ["a"]\nmetric = "final_accuracy"\ndirection = "decreasing"\n', "an ordering needs at least two methods"),
    ('methods = ["a", "a"]\nmetric = "final_accuracy"\ndirection = "decreasing"\n', "methods: expected a list of distinct"),
    ('methods = "a"\nmetric = "final_accuracy"\ndirection = "decreasing"\n', "claims[0] (x): methods must be an array"),
    ('methods = ["a", "b"]\nmetric = "final_accuracy"\ndirection = "a > b"\ntarget = "a"\n', "target: only a tta_speedup"),
    ('methods = ["a", "b"]\nmetric = "events.jump"\ndirection = "a > b"\n', "metric 'events.jump': allowed:"),
]


@pytest.mark.parametrize(
    ("text", "message"), BAD_CLAIMS + [(f"[[claims]]\n{CLAIM}{fields}", message) for fields, message in BAD_FIELDS]
)
def test_a_bad_claim_file_is_one_line_naming_the_file_and_field(tmp_path, text, message):
    path = claim_file(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        read_claim_file(path)
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value) and "\n" not in str(error.value)


def test_duplicate_ids_unknown_papers_and_the_bundled_claims(tmp_path):
    table = f'[[claims]]\n{CLAIM}methods = ["a", "b"]\nmetric = "final_accuracy"\ndirection = "a > b"\n'
    with pytest.raises(ConfigError, match="id 'x' is used more than once"):
        read_claim_file(claim_file(tmp_path, table * 2))
    with pytest.raises(ConfigError, match=r"unknown paper 'nope'; claim files in .*: paper"):
        load_claims(tmp_path, ["nope"])
    bundled = load_claims()
    assert {c.paper for c in bundled} == {"fielding", "fedcm", "feddag", "mscfl", "cflgt"} and len(bundled) >= 40
    assert all((c.paper_value is None) == (c.kind == "driftbench") for c in bundled)  # a paper claim has the paper's value
    assert all(bool(c.difference) == (c.kind == "proxy") for c in bundled)
    assert all((c.bound is not None) == (c.kind == "bound") for c in bundled)
    planned = plan(bundled, (0,), "embedded", Execution(out=tmp_path))
    without_flower = set() if importlib.util.find_spec("flwr") else flower_claims(bundled)  # the tests accept both states
    workload = {c.key: f"workload differs: {c.workload}" for c in bundled if c.workload}
    assert set(planned.untestable) == set(workload) | without_flower
    assert {k: v for k, v in planned.untestable.items() if k in workload} == workload
    distinct = {(s, j.method, tuple(sorted(j.method_sets.items()))) for s, jobs in planned.jobs.items() for j in jobs}
    assert planned.count == len(distinct) < sum(len(c.run_methods) for c in bundled)  # claims share runs
    folders = [j.execution.out / j.label for jobs in planned.jobs.values() for j in jobs]
    assert len(set(folders)) == len(folders)  # a method with a claim's overrides gets a run folder of its own


def test_the_documented_small_example_is_three_claims_of_fedcm_on_a_shrunken_trace():
    example = load_claims(Path(__file__).resolve().parents[1] / "examples" / "claims-small")  # docs/reproduce.md's
    own = {c.id: c for c in load_claims(papers=["fedcm"]) if not c.literal}
    assert [c.id for c in example if not c.literal] == ["table3-migration", "table3-ifca", "table1-fedavg"]
    for claim in (c for c in example if not c.literal):
        original = own[claim.id]
        assert (claim.methods, claim.metric, claim.direction) == (original.methods, original.metric, original.direction)
        assert dict(claim.sets)["rounds"] == "24" and dict(claim.sets)["clients"] == "20"


def test_a_claim_file_refuses_one_claim_counted_twice_naming_both(tmp_path):
    table = f'[[claims]]\n{CLAIM}methods = ["a", "b"]\nmetric = "final_accuracy"\ndirection = "{{}}"\n'
    path = claim_file(tmp_path, table.format("a > b").replace('id = "x"', 'id = "y"') + table.format("b < a"))
    with pytest.raises(ConfigError, match="claims 'y' and 'x' compare the same runs the same way") as error:
        read_claim_file(path)
    assert "\n" not in str(error.value)
    distinct = table.format("a > b") + table.format("a = b within 0.02").replace('id = "x"', 'id = "y"')
    assert [c.id for c in read_claim_file(claim_file(tmp_path, distinct))] == ["x", "y"]  # a lead and a near-tie
    near_tie = {c.id: c for c in load_claims(papers=["cflgt"])}["table2-right-k20"]
    assert (near_tie.direction.relation, near_tie.direction.margin) == ("=", 0.02) and "within 2 points" in near_tie.text


def flower_claims(claims):
    """The keys of the claims that run a method aggregated by a Flower strategy."""
    return {c.key for c in claims if any(getattr(load_method(m).params, "aggregator", "mean") != "mean" for m in c.run_methods)}


def test_without_flower_its_claims_are_untestable_with_the_reason_and_the_others_run(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "flwr.server", None)  # as if flwr were not installed
    bundled = load_claims()
    planned = plan(bundled, (0,), "embedded", Execution(out=tmp_path))
    flower = flower_claims(bundled)
    assert len(flower) == 4 and set(planned.untestable) == flower | {c.key for c in bundled if c.workload}
    assert all(planned.untestable[key].endswith("needs Flower: pip install 'driftbench[flower]'") for key in flower)
    assert planned.count > 0  # the claims that need no Flower still run
    figure6 = [c for c in bundled if c.key in flower]
    report = reproduce(figure6, (0,), "embedded", PoolOptions(jobs=1, quiet=True), Execution(out=tmp_path))
    assert [r.verdict for r in report.results] == [UNTESTABLE] * 4 and not report.outcomes
    assert report.results[0].reason == planned.untestable[figure6[0].key]


def test_claims_that_cannot_run_are_untestable_with_the_reason(tmp_path):
    def claim(trace: str, direction: str) -> str:
        a, b = direction.split(" > ")
        return (
            f'[[claims]]\nid = "{a}-{trace}"\nwhere = "T"\nclaim = "c"\ntrace = "{trace}"\nmethods = ["{a}", "{b}"]\n'
            f'metric = "final_accuracy"\ndirection = "{direction}"\npaper_figure = "1"\n{KIND}'
        )

    text = claim("static", "fedcm-nomigrate > fedcm") + claim("nowhere", "fedavg > oracle") + claim("static", "fedavg > oracle")
    claims = read_claim_file(claim_file(tmp_path, text))
    planned = plan(claims, (0,), "embedded", Execution(out=tmp_path))
    assert planned.untestable["paper/fedcm-nomigrate-static"].startswith("method 'fedcm-nomigrate' is not in methods/")
    assert planned.untestable["paper/fedavg-nowhere"].startswith("unknown trace 'nowhere'")
    assert [j.label for j in planned.jobs[Setting("static", ())]] == ["static/fedavg/seed0", "static/oracle/seed0"]
    paper = plan(claims[2:], (0,), "paper", Execution(out=tmp_path))
    assert "static.toml: trace has no [scale.paper] table" in paper.untestable["paper/fedavg-static"] and not paper.jobs


def test_settings_of_one_trace_get_their_own_folders_and_waves(tmp_path):
    default, other, static = Setting("label-swap", ()), Setting("label-swap", (("concepts", "6"),)), Setting("static", ())
    assert default.folder(tmp_path) == tmp_path and other.folder(tmp_path) == tmp_path / "label-swap+concepts=6"
    assert Setting("rotation", (("scale", "paper"),)).folder(tmp_path).name == "rotation+scale=paper"
    assert RunPlan({default: [], other: [], static: []}, {}).waves() == [[default, static], [other]]


def test_reproduce_runs_the_claims_and_writes_the_report(tmp_path, capsys):
    claims = tmp_path / "claims"
    tables = (
        f'[[claims]]\nid = "oracle"\nwhere = "Table 1"\nclaim = "the oracle ends above FedAvg"\ntrace = "static"\n'
        f'set = {{ {TINY} }}\nmethods = ["oracle", "fedavg"]\nmetric = "final_accuracy"\ndirection = "oracle > fedavg"\n'
        f'paper_figure = "0.9 vs 0.6"\n{KIND}'
        f'[[claims]]\nid = "lr"\nwhere = "Table 2"\nclaim = "a larger step helps"\ntrace = "static"\n'
        f'set = {{ {TINY}, "train.lr" = 0.2 }}\nmethods = ["oracle", "fedavg"]\nmetric = "tta_speedup"\n'
        f'direction = "oracle > fedavg"\npaper_figure = "2x"\nkind = "exact"\nunit = "x"\npaper_value = 2\n'
        f'[[claims]]\nid = "missing"\nwhere = "Table 3"\nclaim = "no such variant"\ntrace = "static"\n'
        f'methods = ["fedcm-nomigrate", "fedcm"]\nmetric = "delta_permille"\ndirection = "fedcm-nomigrate < fedcm"\n'
        f'paper_figure = "1 vs 27"\nkind = "exact"\nunit = "permille"\npaper_value = {{ fedcm-nomigrate = 1, fedcm = 27 }}\n'
    )
    claim_file(claims, tables, "tiny")
    claim_file(claims, "", "broken")
    args = ["reproduce", "tiny", "--claims", str(claims), "--seeds", "0", "--jobs", "2", "--device", "cpu", "--quiet"]
    args += ["--out", str(tmp_path / "runs"), "--report", str(tmp_path / "report")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "3 paper claims:" in out and "Holm over each paper's claims" in out
    assert "4 runs (4 ran, 0 up to date, 0 failed)" in out
    walls = [read_summary(path).wall_seconds for path in (tmp_path / "runs").glob("*/static/*/seed0/summary.json")]
    assert len(walls) == 4 and f"in both): A paper {sum(walls) / 3600:.2f} h." in out  # each run once, for its one paper
    rows = read_report(tmp_path / "report/reproduce.csv")
    assert [r["id"] for r in rows] == ["oracle", "lr", "missing", "missing (literal)"]  # fedcm names its literal variant
    assert list(rows[0]) == list(COLUMNS) and rows[3]["verdict"] == UNTESTABLE
    assert rows[0]["verdict"] in (INCONCLUSIVE, NOT_REPRODUCED) and rows[0]["driftbench"].startswith("final_accuracy: oracle ")
    assert rows[1]["driftbench"].startswith("tta_speedup (time to fedavg's final accuracy): oracle ")
    assert rows[2]["verdict"] == UNTESTABLE and "'fedcm-nomigrate' is not in methods/" in rows[2]["reason"]
    tiny = "static+clients=10,rounds=4,train.local_steps=2,train.participants=5"
    assert (tmp_path / f"runs/{tiny}/static/oracle/seed0/summary.json").is_file()
    assert (tmp_path / "runs/static+clients=10,rounds=4,train.local_steps=2,train.lr=0.2,train.participants=5").is_dir()
    markdown = (tmp_path / "report/reproduce.md").read_text()
    first = "| A paper | oracle | exact | Table 1 | the oracle ends above FedAvg | 0.9 vs 0.6 | 10 points |"
    assert VERDICT_RULE in markdown and first in markdown and "Run time by paper" in markdown
    assert report_section(rows).rows[2]["verdict"] == UNTESTABLE
    report_in_runs = tmp_path / "runs/reproduce.csv"
    report_in_runs.write_bytes((tmp_path / "report/reproduce.csv").read_bytes())
    shutil.copytree(tmp_path / f"runs/{tiny}/static/oracle", tmp_path / "runs/static/oracle")  # a run at the top level
    assert main(["leaderboard", str(tmp_path / "runs"), "--out", str(tmp_path / "board")]) == 0
    page = (tmp_path / "board/index.html").read_text()
    assert "Paper claims" in page and "no such variant" in page

    assert main(args) == 0  # a second time, every run is up to date
    assert "4 runs (0 ran, 4 up to date, 0 failed)" in capsys.readouterr().out
    shutil.rmtree(tmp_path / f"runs/{tiny}/static/oracle")
    assert main([*args, "--recorded"]) == 0  # judges what is recorded, runs nothing
    assert "4 runs (0 ran, 3 up to date, 0 failed, 1 not recorded)" in capsys.readouterr().out
    assert not (tmp_path / f"runs/{tiny}/static/oracle").exists()
    again = read_report(tmp_path / "report/reproduce.csv")
    assert again[0]["verdict"] == UNTESTABLE and f"run {tiny.split('+')[0]}" in again[0]["reason"]
    assert "not recorded yet" in again[0]["reason"] and again[1]["driftbench"] == rows[1]["driftbench"]
    assert main([*args[:1], "broken", *args[2:]]) == 2
    assert "broken.toml: claims: expected one or more [[claims]] tables" in capsys.readouterr().err


def test_a_second_stage_runs_only_the_open_claims_at_its_seeds(tmp_path, capsys):
    """One seed leaves every claim open (no interval): the second stage runs seed 1 for the open claim's runs only."""
    claims = tmp_path / "claims"
    tables = (
        f'[[claims]]\nid = "oracle"\nwhere = "Table 1"\nclaim = "the oracle ends above FedAvg"\ntrace = "static"\n'
        f'set = {{ {TINY} }}\nmethods = ["oracle", "fedavg"]\nmetric = "final_accuracy"\ndirection = "oracle > fedavg"\n'
        f'paper_figure = "0.9 vs 0.6"\n{KIND}'
        f'[[claims]]\nid = "missing"\nwhere = "Table 2"\nclaim = "no such variant"\ntrace = "static"\n'
        f'set = {{ {TINY} }}\nmethods = ["fedavg", "fedavg-nowhere"]\nmetric = "final_accuracy"\n'
        f'direction = "fedavg > fedavg-nowhere"\npaper_figure = "0.9 vs 0.6"\n{KIND}'
    )
    claim_file(claims, tables, "tiny")
    args = ["reproduce", "--claims", str(claims), "--seeds", "0", "--second-stage", "1", "--jobs", "1", "--quiet"]
    args += ["--out", str(tmp_path / "runs"), "--device", "cpu"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "at Pocock's level 0.0147: seeds 0, then seeds 1 for the 1 claims the first left inconclusive" in out
    assert "4 runs (4 ran" in out  # seeds 0 and 1: the open claim's oracle and fedavg; the untestable claim runs none
    tiny = tmp_path / "runs/static+clients=10,rounds=4,train.local_steps=2,train.participants=5/static"
    assert sorted(p.parent.name + "/" + p.name for p in tiny.glob("*/seed*")) == [
        "fedavg/seed0",
        "fedavg/seed1",
        "oracle/seed0",
        "oracle/seed1",
    ]
    rows = read_report(tmp_path / "runs/reproduce.csv")
    assert rows[0]["reason"].startswith("holds at") and "/2 seeds" in rows[0]["reason"]  # judged on seeds 0 and 1
    assert rows[1]["verdict"] == UNTESTABLE  # decided at the first look: no second stage
    assert main([*args[:-4], "--second-stage", "0", "--out", str(tmp_path / "runs")]) == 2
    assert "--second-stage 0: expected 1 seeds (as many as --seeds), none of them in --seeds 0" in capsys.readouterr().err


def test_a_report_with_other_columns_is_refused(tmp_path):
    path = tmp_path / "reproduce.csv"
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows([["paper", "verdict"], ["A", "reproduced"]])
    with pytest.raises(ConfigError, match="reproduce.csv: columns"):
        read_report(path)


def test_what_differs_from_the_paper_is_one_line_in_the_notes_beside_the_protocol(tmp_path):
    extra = 'protocol = "IFCA told K = 5"\ndiffers = """60 samples per client,\n  not 500"""\n'
    claim = one_claim(tmp_path, '["a", "b"]', "a > b", extra=extra)
    assert claim.differs == "60 samples per client, not 500"
    notes = row(evaluate(claim, seeds(a=[0.7, 0.71, 0.72], b=[0.6, 0.6, 0.6])))["notes"]
    assert notes == "protocol: IFCA told K = 5 | differs: 60 samples per client, not 500"
    assert "differs" not in row(evaluate(one_claim(tmp_path, '["a", "b"]', "a > b"), seeds(a=[0.7], b=[0.6])))["notes"]


def test_a_diagnosis_is_shown_where_a_claim_does_not_reproduce_and_checked_when_read(tmp_path):
    diagnosis = (
        '[claims.diagnosis]\nkind = "workload"\ncommand = "driftbench run --trace static"\n'
        'evidence = """digits, not CIFAR-10:\n  the groups never conflict (ARI 1.0 at seeds 0-4)"""\n'
    )
    claim = one_claim(tmp_path, '["a", "b"]', "a > b", extra=diagnosis)
    assert (claim.diagnosis.kind, claim.diagnosis.evidence, claim.diagnosis.command) == (
        "workload",
        "digits, not CIFAR-10: the groups never conflict (ARI 1.0 at seeds 0-4)",
        "driftbench run --trace static",
    )
    failed = evaluate(claim, seeds(a=[0.50, 0.52, 0.49], b=[0.60, 0.61, 0.62]))
    assert failed.verdict == NOT_REPRODUCED
    assert row(failed)["diagnosis"] == (
        "workload: digits, not CIFAR-10: the groups never conflict (ARI 1.0 at seeds 0-4) Command: driftbench run --trace static"
    )
    assert row(evaluate(claim, seeds(a=[0.7, 0.71, 0.72], b=[0.6, 0.6, 0.6])))["diagnosis"] == "-"
    bare = one_claim(tmp_path, '["a", "b"]', "a > b")
    assert "not established" in row(evaluate(bare, seeds(a=[0.5, 0.5], b=[0.6, 0.6])))["diagnosis"]
    assert DIAGNOSIS_KINDS == ("method", "implementation", "workload")
    run = 'command = "driftbench run"\n'
    bad = {
        f'kind = "looks fine"\nevidence = "1"\n{run}': "diagnosis: kind 'looks fine': allowed: method, implementation, workload",
        f'kind = "method"\nevidence = "it does not"\n{run}': "diagnosis: evidence: expected the experiment's numbers",
        'kind = "method"\nevidence = "0.5 against 0.6"\n': "diagnosis: command: expected the command",
        f'kind = "implementation"\nevidence = "0.5 against 0.6"\n{run}': "diagnosis: commit: an implementation diagnosis",
        f'kind = "workload"\ncommit = "abc"\nevidence = "0.5"\n{run}': "diagnosis: commit: an implementation diagnosis",
    }
    for fields, message in bad.items():
        with pytest.raises(ConfigError, match=message):
            one_claim(tmp_path, '["a", "b"]', "a > b", extra=f"[claims.diagnosis]\n{fields}")
    fix = f'[claims.diagnosis]\nkind = "implementation"\ncommit = "abc1234"\nevidence = "the bug: 0.5 before"\n{run}'
    fixed = one_claim(tmp_path, '["a", "b"]', "a > b", extra=fix)
    shown = row(evaluate(fixed, seeds(a=[0.7, 0.71, 0.72], b=[0.6, 0.6, 0.6])))["diagnosis"]
    assert shown == "implementation (fixed in abc1234): the bug: 0.5 before Command: driftbench run"


def test_claims_may_share_a_diagnosis_their_file_names_once(tmp_path):
    shared = (
        '[diagnoses.collapse]\nkind = "method"\ncommand = "driftbench run --trace static"\n'
        'evidence = "falls from 0.9 to 0.3 at round 20"\n'
    )
    claim = '[[claims]]\nid = "{id}"\nwhere = "T"\nclaim = "c"\ntrace = "static"\nset = {{ rounds = {rounds} }}\n'
    claim += 'methods = ["a", "b"]\nmetric = "final_accuracy"\ndirection = "a > b"\npaper_figure = "1 vs 2"\n' + KIND
    claim += "{diagnosis}"
    named = 'diagnosis = "collapse"\n'
    two = claim.format(id="x", rounds=5, diagnosis=named) + claim.format(id="y", rounds=6, diagnosis=named)
    x, y = read_claim_file(claim_file(tmp_path, two + shared))
    assert x.diagnosis == y.diagnosis and x.diagnosis.evidence == "falls from 0.9 to 0.3 at round 20"
    unknown = claim.format(id="x", rounds=5, diagnosis='diagnosis = "colapse"\n') + claim.format(
        id="y", rounds=6, diagnosis=named
    )
    with pytest.raises(ConfigError, match="claims\\[0\\] \\(x\\): diagnosis 'colapse': the file's \\[diagnoses\\] are collapse"):
        read_claim_file(claim_file(tmp_path, unknown + shared))
    with pytest.raises(ConfigError, match="diagnoses.collapse: no claim names it"):
        read_claim_file(claim_file(tmp_path, claim.format(id="x", rounds=5, diagnosis="") + shared))


def test_the_markdown_names_each_diagnosis_on_its_rows_and_lists_it_once_below_with_a_forest_plot_per_paper(tmp_path):
    shared = (
        '[diagnoses.collapse]\nkind = "method"\ncommand = "driftbench run --trace static"\n'
        'evidence = "falls from 0.9 to 0.3 at round 20"\n'
    )
    claim = '[[claims]]\nid = "{id}"\nwhere = "T"\nclaim = "c"\ntrace = "static"\nset = {{ rounds = {rounds} }}\n'
    claim += 'methods = ["a", "b"]\nmetric = "final_accuracy"\ndirection = "a > b"\npaper_figure = "1 vs 2"\n' + KIND
    claim += 'diagnosis = "collapse"\n'
    x, y = read_claim_file(claim_file(tmp_path, claim.format(id="x", rounds=5) + claim.format(id="y", rounds=6) + shared))
    own = replace(x, id="z", kind="driftbench", paper_value=None)  # no paper effect: not drawn
    results = [evaluate(x, points(1, -1, 2, 0, 1)), evaluate(y, points(9, 11, 8, 12, 10)), evaluate(own, points(1, 2, 3))]
    report = Report(finalize(results), (0, 1, 2, 3, 4), "embedded")
    paths = write_report(report, tmp_path / "report")
    assert sorted(p.name for p in paths) == ["reproduce-paper.png", "reproduce-paper.svg", "reproduce.csv", "reproduce.md"]
    text = (tmp_path / "report/reproduce.md").read_text()
    assert text.count("falls from 0.9 to 0.3 at round 20") == 1  # the evidence once, below the table
    assert text.count("| collapse (method) |") == 2  # x not reproduced, z inconclusive; y reproduced shows none
    assert "### A paper: collapse (method)\n\nClaims: x, z.\n\nfalls from 0.9 to 0.3" in text
    assert "Command: `driftbench run --trace static`" in text and "![reproduce-paper](reproduce-paper.png)" in text
    csv_rows = read_report(tmp_path / "report/reproduce.csv")
    assert csv_rows[0]["diagnosis"] == "method: falls from 0.9 to 0.3 at round 20 Command: driftbench run --trace static"
    assert csv_rows[0]["interval"] == "[-0.816, 2.02] points" and csv_rows[1]["verdict"] == REPRODUCED
    svg = (tmp_path / "report/reproduce-paper.svg").read_text()
    assert "x (not reproduced)" in svg and "y (reproduced)" in svg and "z (" not in svg


@pytest.mark.parametrize(
    ("ours", "off"),
    [(41.0, False), (33.4, False), (44.0, True), (30.0, True)],  # paper 38.30: residual +2.7, -4.9, +5.7, -8.3 points
)
def test_a_calibrated_stand_in_shows_its_residual_and_reads_off_beyond_five_points(tmp_path, ours, off):
    calibrated = f'calibrated_to = {{ method = "fedavg", paper = 38.30, ours = {ours}, seeds = [10, 11] }}\n'
    claim = one_claim(tmp_path, '["a", "b"]', "a > b", extra=calibrated)
    assert (claim.calibrated_to.residual, claim.calibrated_to.within) == (pytest.approx(ours - 38.3), not off)
    shown = row(evaluate(claim, seeds(a=[0.7, 0.71, 0.72], b=[0.6, 0.6, 0.6])))
    assert (
        f"calibrated: fedavg {ours:.2f} against the paper's 38.30 (seeds 10,11, residual {ours - 38.3:+.1f} points)"
        in (shown["notes"])
    )
    assert ("the stand-in is off its calibration" in shown["reason"]) == off
    for fields, message in {
        'method = "fedavg", paper = 38.3, ours = 40': "calibrated_to: missing 'seeds'",
        'method = "fedavg", paper = "38.3", ours = 40, seeds = [1]': "calibrated_to: paper: expected the accuracy in points",
        'method = "fedavg", paper = 38.3, ours = 40, seeds = []': "calibrated_to: seeds: expected the calibration's seeds",
        'method = "fedavg", paper = 38.3, ours = 40, seeds = [1], k = 5': "calibrated_to: unknown key 'k'",
        'method = "fedavg", paper = 38.3, ours = 40, seeds = [1], metric = "mean"': "calibrated_to: metric 'mean': allowed:",
    }.items():
        with pytest.raises(ConfigError, match=message):
            one_claim(tmp_path, '["a", "b"]', "a > b", extra=f"calibrated_to = {{ {fields} }}\n")


def test_a_calibration_names_the_references_parameters_and_the_accuracy_it_reads(tmp_path):
    fields = 'method = "ifca", method_set = { k = 5 }, metric = "peak_accuracy", paper = 83.1, ours = 81.67, seeds = [10]'
    cal = one_claim(tmp_path, '["a", "b"]', "a > b", extra=f"calibrated_to = {{ {fields} }}\n").calibrated_to
    assert (cal.method, cal.method_sets, cal.metric) == ("ifca", (("k", "5"),), "peak_accuracy")
    assert str(cal).startswith("calibrated: ifca (peak) 81.67 against the paper's 83.10")


def test_calibrate_reruns_the_reference_once_per_setting_at_the_recorded_seeds(tmp_path, capsys):
    cal = 'calibrated_to = { method = "fedavg", paper = 50.0, ours = 12.5, seeds = [3], set = { rounds = 3 } }\n'
    tables = "".join(
        f'[[claims]]\nid = "{i}"\nwhere = "Table 1"\nclaim = "c"\ntrace = "static"\nset = {{ {TINY} }}\n'
        f'methods = ["oracle", "static"]\nmetric = "{metric}"\ndirection = "oracle > static"\n'
        f'paper_figure = "1 vs 2"\n{KIND}{cal}'
        for i, metric in (("one", "final_accuracy"), ("two", "mean_accuracy"))
    )
    claim_file(tmp_path / "claims", tables, "tiny")
    args = ["reproduce", "tiny", "--calibrate", "--claims", str(tmp_path / "claims"), "--jobs", "1", "--device", "cpu"]
    assert main([*args, "--quiet", "--out", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "1 calibrations: " in out and "tiny/one tiny/two" in out
    with open(tmp_path / "runs/calibration.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert (row["method"], row["metric"], row["seeds"], row["paper"], row["recorded"]) == (
        "fedavg",
        "final_accuracy",
        "3",
        "50.00",
        "12.50",
    )
    (run,) = (tmp_path / "runs").glob("static+*/static/fedavg/seed3")  # the claims' setting with the calibration's set
    assert "rounds=3," in run.parent.parent.parent.name and "rounds=4" not in run.parent.parent.parent.name
    summary = read_summary(run / "summary.json")
    assert summary.rounds == 3
    assert row["measured"] == f"{100 * summary.final_accuracy:.2f}"
    assert row["residual"] == f"{100 * summary.final_accuracy - 50:+.2f}"
    peak = cal.replace("seeds = [3]", 'seeds = [3], metric = "peak_accuracy"')
    claim_file(tmp_path / "claims", tables.replace(cal, peak), "peak")
    assert main(["reproduce", "peak", *args[2:], "--quiet", "--out", str(tmp_path / "runs")]) == 0  # the same run, read again
    with open(tmp_path / "runs/calibration.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    best = read_rounds(run / "rounds.csv")["accuracy_mean"].max()
    assert (row["metric"], row["measured"]) == ("peak_accuracy", f"{100 * best:.2f}")
    claim_file(tmp_path / "claims", tables.replace(cal, ""), "bare")
    assert main(["reproduce", "bare", *args[2:], "--out", str(tmp_path / "x")]) == 2
    assert "--calibrate: none of the 2 claims has calibrated_to" in capsys.readouterr().err


def test_figure6_claims_set_fielding_with_a_flower_strategy_against_that_strategy_alone(tmp_path):
    pytest.importorskip("flwr", reason="FIELDING's Figure 6 claims aggregate with Flower: pip install 'driftbench[flower]'")
    claims = {c.id: c for c in load_claims(papers=["fielding"])}
    for strategy, variant in (("FedYogi", "fielding-fedyogi"), ("QFedAvg", "fielding-qfedavg")):
        base = f"flower:{strategy}"
        assert load_method(variant).params == replace(load_method("fielding").params, aggregator=base)
        key = f"fig6-{strategy.lower()}"
        assert claims[key].methods == claims[f"{key}-tta"].methods == (variant, base)
        assert claims[f"{key}-tta"].target == base
    figure6 = [c for c in claims.values() if c.id.startswith("fig6")]
    assert plan(figure6, (0,), "embedded", Execution(out=tmp_path)).untestable == {}


def test_holm_and_tost_on_hand_made_numbers():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])  # 3 x 0.01; then max(2 x 0.03, 0.03); 0.04 -> 0.06
    assert holm([0.5]) == [0.5] and holm([0.6, 0.6]) == [1.0, 1.0]
    assert one_sided_p([0.1, 0.1, 0.1]) < 1e-12 and one_sided_p([-0.1, -0.1]) == 1.0 and one_sided_p([0.2]) == 1.0
    assert one_sided_p([0.1, 0.2, 0.15]) == pytest.approx(0.0175, abs=1e-4)  # t = 5.196 on 2 degrees of freedom
    assert tost_p([0.01, -0.02, 0.0, 0.01], 0.5) < 0.001  # well inside +/- 0.5
    assert tost_p([0.4, 0.6, 0.5, 0.55], 0.5) > 0.3  # at the margin: not shown equivalent
    assert tost_p([0.1, -0.1, 0.1, -0.1], 0.5) == pytest.approx(
        max(one_sided_p([0.4, 0.6, 0.4, 0.6]), one_sided_p([0.6, 0.4] * 2))
    )


def test_an_effect_more_than_3x_off_the_papers_holds_as_a_direction_only(tmp_path):
    claim = one_claim(tmp_path, '["a", "b"]', "a > b")  # the paper's effect: 10 points
    close = evaluate(claim, seeds(a=[0.70, 0.71, 0.72], b=[0.60, 0.61, 0.61]))  # +10.3 points
    far = evaluate(claim, seeds(a=[0.95, 0.96, 0.97], b=[0.60, 0.61, 0.61]))  # +35.3 points
    small = evaluate(claim, seeds(a=[0.63, 0.645, 0.635], b=[0.60, 0.61, 0.61]))  # +3 points
    assert close.paper == 10 and close.ours == pytest.approx(10.33, abs=0.01) and close.ratio == pytest.approx(1.033, abs=0.001)
    assert [r.verdict for r in finalize([close])] == [REPRODUCED]
    assert far.ratio == pytest.approx(3.53, abs=0.01) and [r.verdict for r in finalize([far])] == [DIRECTION_ONLY]
    assert small.ratio == pytest.approx(0.3, abs=0.001) and [r.verdict for r in finalize([small])] == [DIRECTION_ONLY]
    row_far = row(finalize([far])[0])
    assert (row_far["paper_value"], row_far["ours"], row_far["ratio"], row_far["kind"]) == (
        "10 points",
        "35.3 points",
        "3.5",
        "exact",
    )
    table = one_claim(
        tmp_path, '["a", "b"]', "a < b", kind='kind = "exact"\nunit = "permille"\npaper_value = { a = 1, b = 27 }\n'
    )
    assert evaluate(table, seeds(a=[1.0, 2.0, 3.0], b=[80.0, 82.0, 81.0])).ratio == pytest.approx(79 / 26)


BOUND = 'kind = "bound"\nbound = "{}"\nunit = "points"\npaper_value = 10\n'  # the paper bounds the effect by 10 points


@pytest.mark.parametrize(
    ("bound", "a", "expected"),
    [
        ("at_least", [0.95, 0.96, 0.97], REPRODUCED),  # +35.3 points: 3.5x the bound, and a bound has no 3x rule
        ("at_least", [0.65, 0.665, 0.655], DIRECTION_ONLY),  # +5 points: within 3x of 10, but below the bound
        ("at_most", [0.62, 0.635, 0.625], REPRODUCED),  # +2 points: under the bound, though 0.2x of it
        ("at_most", [0.85, 0.865, 0.855], DIRECTION_ONLY),  # +25 points: within 3x of 10, but over the bound
    ],
)
def test_a_bound_claim_checks_our_effect_against_the_bound_not_within_3x(tmp_path, bound, a, expected):
    # mutations: the 3x rule applied to a bound fails every row; a bound always met (not checked) fails rows 2 and 4
    claim = one_claim(tmp_path, '["a", "b"]', "a > b", kind=BOUND.format(bound))
    assert (claim.kind, claim.bound, claim.paper_value) == ("bound", bound, 10.0)
    (result,) = finalize([evaluate(claim, seeds(a=a, b=[0.60, 0.61, 0.61]))])
    assert result.verdict == expected and result.p is not None and result.p < 0.025
    shown = row(result)
    assert shown["kind"] == "bound" and shown["paper_value"] == f"{bound.replace('_', ' ')} 10 points"
    exact = replace(claim, kind="exact", bound=None)  # the same numbers read as a printed effect of 10 points
    assert finalize([evaluate(exact, seeds(a=a, b=[0.60, 0.61, 0.61]))])[0].verdict != expected
    relabelled = plan([exact], (0,), "embedded", Execution(out=tmp_path)).jobs
    assert plan([claim], (0,), "embedded", Execution(out=tmp_path)).jobs == relabelled  # a label changes no run


def test_labels_and_protocols_the_paper_audit_corrected():
    bundled = {c.key: c for c in load_claims()}
    relabelled = ["fielding/fig7-feddrift", *(f"fedcm/table3-{m}" for m in ("migration", "ifca", "pacfl", "flexcfl"))]
    assert all(bundled[k].kind == "proxy" for k in relabelled)
    bounds = [f"fielding/s3-{m}" for m in ("auxo", "flexcfl", "tta-auxo", "tta-flexcfl")]
    assert [(bundled[k].kind, bundled[k].bound) for k in bounds] == [("bound", "at_least")] * 4
    cflgt = bundled["cflgt/table1-fedprox"]
    assert cflgt.method_run("fedprox").sets == (("mu", "0.001"),)  # CFLGT's Table I caption: mu = 0.001
    assert load_method("fedprox", dict(cflgt.method_run("fedprox").sets)).params.mu == 0.001
    others = [c for c in bundled.values() if c.paper != "cflgt" and "fedprox" in c.run_methods]
    assert others and all(c.method_run("fedprox").sets == () for c in others)  # FIELDING's and Fed-CM's stay at 0.01
    assert load_method("fedprox").params.mu == 0.01


def points(*differences: float) -> dict[int, dict[str, Summary]]:
    """Runs of "a" over "b" (at 0.60) whose differences, in points, are ``differences``, one seed each."""
    return seeds(a=[0.60 + d / 100 for d in differences], b=[0.60] * len(differences))


def test_a_claim_whose_interval_lies_below_a_third_of_the_papers_effect_is_not_reproduced(tmp_path):
    """The paper's effect is excluded: 10 points claimed, ours 0.6 +/- 1.4 points (95% interval up to 2.0 < 3.33)."""
    claim = one_claim(tmp_path, '["a", "b"]', "a > b")  # the paper's effect: 10 points
    runs = points(1, -1, 2, 0, 1)
    result = evaluate(claim, runs)
    assert result.verdict == NOT_REPRODUCED and "the paper's effect is excluded" in result.reason
    assert "[-0.816, 2.02] lies below 3.33" in result.reason  # the effect's interval, in points, against 10 / 3
    assert finalize([result])[0].verdict == NOT_REPRODUCED
    small = replace(claim, paper_value=3.0)  # a third of 3 points is 1: the interval still holds it
    assert evaluate(small, runs).verdict == INCONCLUSIVE
    bound = replace(claim, kind="bound", bound="at_least", paper_value=2.5)  # "at least 2.5": the bound, not a third of it
    assert evaluate(bound, runs).verdict == NOT_REPRODUCED and "lies below 2.5" in evaluate(bound, runs).reason
    assert evaluate(replace(bound, paper_value=2.0), runs).verdict == INCONCLUSIVE  # 2.02 reaches it
    assert evaluate(replace(bound, bound="at_most"), runs).verdict == INCONCLUSIVE  # at most: only the sign excludes


def test_a_pass_that_holm_undoes_reads_not_reproduced_where_the_papers_effect_is_excluded(tmp_path):
    claim = one_claim(tmp_path, '["a", "b"]', "a > b")  # the paper's effect: 10 points
    alone = evaluate(claim, points(1.0, 0.7, 1.3))  # one-sided p 0.014, effect 1.0 +/- 0.75 points
    assert alone.verdict == DIRECTION_ONLY and 0.025 / 3 < (alone.p or 0) < 0.025  # passes alone, 10x below the paper's
    three = finalize([alone, alone, alone])  # Holm: 3 x 0.014 is not below 0.025, and 10 points are excluded
    assert [r.verdict for r in three] == [NOT_REPRODUCED] * 3 and "the paper's effect is excluded" in three[0].reason
    large = evaluate(claim, points(10.0, 7.0, 13.0))  # the same p, but the paper's 10 points inside the interval
    assert [r.verdict for r in finalize([large] * 3)] == [INCONCLUSIVE] * 3


def test_a_ratio_effect_is_judged_on_the_log_scale(tmp_path):
    """A ratio r against the paper's R as ln r against ln R: a 1.2x claim's band is 1.2^(1/3) = 1.063x to 1.2^3 = 1.728x."""
    ratio = 'kind = "exact"\nunit = "seconds"\neffect = "ratio"\npaper_value = { a = 1.2, b = 1.0 }\n'
    claim = one_claim(tmp_path, '["a", "b"]', "a > b", metric="final_accuracy", kind=ratio)
    fielding = evaluate(claim, seeds(a=[0.84, 0.93, 0.885, 0.90], b=[0.3] * 4))  # 2.8x-3.1x: fig6-fedyogi-tta's 2.95x
    assert fielding.verdict == DIRECTION_ONLY and "lies outside the band, 1.06x to 1.73x" in fielding.reason
    assert fielding.ours == pytest.approx(2.96, abs=0.01) and fielding.ratio == pytest.approx(5.95, abs=0.05)  # not 2.5
    near = evaluate(claim, seeds(a=[0.33, 0.39, 0.345, 0.36], b=[0.3] * 4))  # 1.1x, 1.3x, 1.15x, 1.2x
    assert near.verdict == REPRODUCED
    twenty = replace(claim, paper_value={"a": 20.0, "b": 1.0})  # its band starts at 20^(1/3) = 2.71x, not 20 / 3
    excluded = evaluate(twenty, seeds(a=[0.27, 0.45, 0.315, 0.39], b=[0.3] * 4))  # 0.9x-1.5x: up to 1.68x
    assert excluded.verdict == NOT_REPRODUCED and "lies below 2.71x" in excluded.reason
    assert excluded.evidence.statistics[0] == pytest.approx(math.log(0.9))  # e is the log of the ratio
    with pytest.raises(ConfigError, match="effect 'ratio': a ratio effect is judged on the log scale"):
        one_claim(tmp_path, '["a", "b"]', "a = b within 0.1", kind=ratio)
    zero = evaluate(claim, seeds(a=[0.84, 0.93], b=[0.3, 0.0]))
    assert zero.verdict == UNTESTABLE and zero.reason == "b, seed 1: final_accuracy 0, where a ratio effect needs values above 0"


def test_pococks_level_holds_the_error_rate_over_two_equal_looks():
    from scipy.stats import multivariate_normal, norm

    assert level(1) == ALPHA == 0.025 and level(2) == LOOK_ALPHA
    z = norm.isf(LOOK_ALPHA)
    assert z == pytest.approx(2.178, abs=0.002)
    # two looks at n and 2n seeds: the test statistics correlate sqrt(1/2); passing a false claim at either look
    both_below = multivariate_normal([0, 0], [[1, 0.5**0.5], [0.5**0.5, 1]]).cdf([z, z])
    assert 1 - both_below == pytest.approx(0.025, abs=0.0005)


def test_the_second_look_judges_the_open_claims_on_every_seed_and_keeps_the_decided_ones(tmp_path):
    """A two-stage pass (a), a two-stage fail (b: the paper's effect excluded at 10 seeds), a claim decided at the first
    look (c) and an open claim whose second stage has no runs (d), all of one paper (one Holm family)."""
    base = one_claim(tmp_path, '["a", "b"]', "a > b")  # the paper's effect: 10 points
    a, b, c, d = (replace(base, id=name) for name in "abcd")
    first_runs = [points(10, 2, 15, -2, 6), points(4, -1, 6, 0, 3), points(10, 11, 9, 10, 12), points(4, -1, 6, 0, 3)]
    first = [evaluate(claim, runs, alpha=LOOK_ALPHA) for claim, runs in zip((a, b, c, d), first_runs)]
    results = finalize(first, LOOK_ALPHA)
    assert [r.verdict for r in results] == [INCONCLUSIVE, INCONCLUSIVE, REPRODUCED, INCONCLUSIVE]
    again = [
        evaluate(a, points(10, 2, 15, -2, 6, 8, 6, 10, 7, 9), alpha=LOOK_ALPHA),
        evaluate(b, points(4, -1, 6, 0, 3, 0, -1, 1, 0, -1), alpha=LOOK_ALPHA),
        ClaimResult(d, UNTESTABLE, "run static/a/seed5 not recorded yet (--recorded runs nothing)"),
    ]
    final = second_look(results, first, again, (5, 6, 7, 8, 9))
    assert [r.verdict for r in final] == [REPRODUCED, NOT_REPRODUCED, REPRODUCED, INCONCLUSIVE]
    assert final[0].seeds == tuple(range(10)) and "Holm over 4 claims" in final[0].reason  # d in the family with its first p
    assert "the paper's effect is excluded" in final[1].reason
    assert final[2] == results[2]  # decided at the first look: its verdict and reason stand
    assert final[3].seeds == tuple(range(5)) and "second stage (seeds 5-9): run static/a/seed5 not recorded" in final[3].reason
    at_one_look = finalize([again[0]], ALPHA)  # the same 10 seeds as one look: the level is 0.025, not 0.0147
    assert at_one_look[0].verdict == REPRODUCED


def test_judging_is_pure_plain_per_seed_scores_give_the_same_verdicts_with_no_run_or_file(tmp_path, monkeypatch):
    """``judge`` on hand-written scores (no summary, no run folder), twice and over two looks: nothing is opened."""
    pair = one_claim(tmp_path, '["a", "b"]', "a > b")  # the paper's effect: 10 points
    premised = replace(one_claim(tmp_path, '["a", "b"]', "a > b", extra='premises = ["final_accuracy: b > a"]\n'), id="p")
    faster = replace(one_claim(tmp_path, '["a", "b"]', "a > b", "tta_speedup", 'target = "b"\n'), id="faster")

    def scores(a: list[float], b: list[float], **extra) -> ClaimScores:
        values = {s: {"a": x, "b": y} for s, (x, y) in enumerate(zip(a, b))}
        return ClaimScores(values, {s: {"a": (), "b": ()} for s in values}, **extra)

    scored = [
        (pair, scores([0.70, 0.62, 0.73], [0.60] * 3)),  # one-sided p 0.063: open
        (premised, scores([0.8] * 3, [0.6] * 3, premises=({s: {"a": 0.8, "b": 0.6} for s in range(3)},))),
        (faster, scores([-1.0, -1.1, -0.9], [-2.0] * 3, reached={0: False, 1: True, 2: False})),  # values: -ln(hours)
        (replace(pair, id="missing"), "run static/a/seed0 failed: out of memory"),
    ]
    again = [(pair, scores([0.70, 0.62, 0.73, 0.71, 0.69, 0.70], [0.60] * 6))]  # the open claim on both stages' seeds
    with monkeypatch.context() as nothing_read:
        for name in ("builtins.open", "io.open", "driftbench.record.runs.RunRecord.rounds"):
            nothing_read.setattr(name, lambda *args, **kwargs: pytest.fail("judging read a file"))
        first, twice = judge(scored), judge(list(scored))
        looked, two_looks = judge(scored, (3, 4, 5)), judge(scored, (3, 4, 5), again)
    assert first == twice
    assert [r.verdict for r in first] == [INCONCLUSIVE, INVALID_PREMISE, NOT_REPRODUCED, UNTESTABLE]
    assert first[1].reason == "premise 'final_accuracy: b > a' fails: b 0.600, a 0.800"
    assert first[2].reason == "a never reaches b's final accuracy at seed 0, 2: no speed-up there"
    assert first[3].reason == "run static/a/seed0 failed: out of memory"
    assert open_claims(looked) == [pair]
    assert (two_looks[0].verdict, two_looks[0].seeds) == (REPRODUCED, tuple(range(6))) and two_looks[1:] == first[1:]


def test_a_literal_twin_runs_the_claim_again_with_the_literal_variants_in_its_own_family(tmp_path, monkeypatch):
    literal = {"fedcm": "fedcm-literal", "fedcm-star": "fedcm-literal-star"}
    monkeypatch.setattr("driftbench.reproduce.planning.literal_variant", literal.get)
    extra = 'premises = ["pre_drift_accuracy: fedcm = fedcm-star within 0.03", "none degenerate"]\n'
    extra += "method_set = { fedcm = { tau = -0.8 } }\n"
    kind = 'kind = "exact"\nunit = "permille"\npaper_value = { fedcm = 1, fedcm-star = 27 }\n'
    claim = one_claim(tmp_path, '["fedcm", "fedcm-star"]', "fedcm < fedcm-star", extra=extra, kind=kind)
    other = replace(one_claim(tmp_path, '["a", "b"]', "a > b"), id="other")
    default, twin, untouched = with_literal([claim, other])
    assert default is claim and untouched is other and (twin.literal, twin.label) == (True, "c (literal)")
    assert twin.methods == ("fedcm-literal", "fedcm-literal-star") and twin.key == "paper/c (literal)" != claim.key
    assert twin.premises[0].text == "pre_drift_accuracy: fedcm-literal = fedcm-literal-star within 0.03"
    assert twin.premises[0].methods == twin.methods and twin.premises[1] == claim.premises[1]
    assert twin.paper_value == {"fedcm-literal": 1.0, "fedcm-literal-star": 27.0}
    assert twin.method_run("fedcm-literal").sets == (("tau", "-0.8"),)
    a = evaluate(replace(other, id="a"), seeds(a=[0.70, 0.67, 0.73], b=[0.60, 0.60, 0.60]))  # one-sided p 0.014
    twin_result = replace(a, claim=replace(a.claim, literal=True))
    done = finalize([a, twin_result])  # apart: Holm over 1 claim each, both pass; together neither would
    assert [r.verdict for r in done] == [REPRODUCED, REPRODUCED] and "Holm over 1 claims" in done[1].reason
    headline = Report(done, (0, 1, 2), "embedded").headline()
    assert headline.startswith("1 paper claims: 1 reproduced") and "1 literal twins" in headline


def test_a_literal_twin_shows_its_own_diagnosis_where_the_claim_names_one(tmp_path, monkeypatch):
    monkeypatch.setattr("driftbench.reproduce.planning.literal_variant", {"a": "a-literal"}.get)
    shared = "".join(
        f'[diagnoses.{name}]\nkind = "method"\ncommand = "driftbench run"\nevidence = "{name}: 0.5 against 0.9"\n'
        for name in ("default-fails", "literal-collapses")
    )
    extra = f'diagnosis = "default-fails"\nliteral_diagnosis = "literal-collapses"\n{shared}'
    default, twin = with_literal([one_claim(tmp_path, '["a", "b"]', "a > b", extra=extra)])
    assert default.diagnosis is not None and default.diagnosis.name == "default-fails"
    assert twin.diagnosis is not None and twin.diagnosis.name == "literal-collapses" and twin.literal
    only = f'diagnosis = "default-fails"\n{shared.split("[diagnoses.literal-collapses]")[0]}'
    _, inherits = with_literal([one_claim(tmp_path, '["a", "b"]', "a > b", extra=only)])
    assert inherits.diagnosis == default.diagnosis  # without literal_diagnosis the twin shows the claim's


def test_holm_over_a_papers_claims_keeps_its_driftbench_claims_apart(tmp_path):
    claim = one_claim(tmp_path, '["a", "b"]', "a > b")
    own = replace(claim, kind="driftbench", paper_value=None)
    alone = evaluate(claim, seeds(a=[0.70, 0.67, 0.73], b=[0.60, 0.60, 0.60]))  # one-sided p 0.014
    assert alone.verdict == REPRODUCED and 0.025 / 3 < (alone.p or 0) < 0.025
    three = finalize([alone, alone, alone])  # Holm: the smallest p times 3 is above 0.025
    assert [r.verdict for r in three] == [INCONCLUSIVE] * 3 and "Holm over 3 claims" in three[0].reason
    mixed = finalize([alone, replace(alone, claim=own), replace(alone, claim=own)])
    assert mixed[0].verdict == REPRODUCED and "Holm over 1 claims" in mixed[0].reason  # the paper's family is one claim


def test_a_failed_premise_gives_invalid_premise_with_the_failing_value(tmp_path):
    premise = 'premises = ["final_accuracy: oracle > a by 0.05", "none degenerate"]\n'
    claim = one_claim(tmp_path, '["a", "b"]', "a > b", extra=premise)
    assert claim.run_methods == ("a", "b", "oracle")
    runs = seeds(a=[0.80, 0.81, 0.82], b=[0.60, 0.61, 0.61], oracle=[0.83, 0.84, 0.85])
    result = evaluate(claim, runs)
    assert result.verdict == INVALID_PREMISE and result.p is None
    assert result.paper == 10 and result.ours is None  # the paper's effect is shown; ours is not compared with it
    assert result.reason == "premise 'final_accuracy: oracle > a by 0.05' fails: oracle 0.840, a 0.810"
    assert finalize([result])[0].verdict == INVALID_PREMISE
    roomy = {s: {**by, "oracle": replace(by["oracle"], final_accuracy=0.95)} for s, by in runs.items()}
    assert evaluate(claim, roomy).verdict == REPRODUCED
    roomy[1]["b"] = replace(roomy[1]["b"], degenerate=("one_cluster",))
    assert evaluate(claim, roomy).reason == "premise 'none degenerate' fails: b one_cluster at seed 1"
    within = one_claim(tmp_path, '["a", "b"]', "a > b", extra='premises = ["final_accuracy: a = b within 0.03"]\n')
    assert evaluate(within, runs).reason == "premise 'final_accuracy: a = b within 0.03' fails: a 0.810, b 0.607"


def rounds_run(folder: Path, name: str, accuracy: list[float], **fields) -> Summary:
    """A summary with a rounds.csv of these accuracies, one evaluation every 10 simulated seconds."""
    folder.mkdir(parents=True)
    rows = [RoundRow(r, 10.0 * (r + 1), 0.0, a, a, a, 0, float("nan"), 1, 0.0, 0.0, 0, 0) for r, a in enumerate(accuracy)]
    write_rounds(folder / "rounds.csv", rows)
    return replace(BASE, method=name, final_accuracy=fields.pop("final", accuracy[-1]), run_dir=str(folder), **fields)


def test_a_run_that_never_reaches_the_target_gives_no_speed_up(tmp_path):
    target = rounds_run(tmp_path / "t", "fedavg", [0.1, 0.5, 0.6, 0.6, 0.6])
    fast = rounds_run(tmp_path / "f", "fielding", [0.7, 0.7, 0.7, 0.7, 0.7])
    never = rounds_run(tmp_path / "n", "never", [0.1, 0.2, 0.2, 0.2, 0.2])
    claim = one_claim(tmp_path, '["fielding", "never"]', "fielding > never", "tta_speedup")
    runs = {s: {"fielding": fast, "never": never, "fedavg": target} for s in range(3)}
    charged = evaluate(claim, runs)  # the slower side is charged its end time (a bound); the same runs at every seed
    assert charged.verdict == DETERMINISTIC and charged.reason.endswith("the claim holds at it")
    flipped = one_claim(tmp_path, '["never", "fielding"]', "never > fielding", "tta_speedup")
    result = evaluate(flipped, runs)
    assert result.verdict == NOT_REPRODUCED
    assert result.reason == "never never reaches fedavg's final accuracy at seed 0, 1, 2: no speed-up there"
    assert result.paper == 10 and result.ours is None  # the paper's effect stays beside a speed-up never measured


def test_peak_accuracy_and_the_delta_against_the_no_drift_twin(tmp_path):
    peak = one_claim(tmp_path, '["a", "b"]', "a > b", "peak_accuracy")
    a = rounds_run(tmp_path / "a", "a", [0.2, 0.9, 0.5])
    b = rounds_run(tmp_path / "b", "b", [0.2, 0.6, 0.7])
    result = evaluate(peak, {s: {"a": a, "b": b} for s in range(2)})
    assert result.figure == "peak_accuracy: a 0.900 ± 0.000; b 0.700 ± 0.000" and result.ours == pytest.approx(20)
    twin = "twin = { fraction = 0 }\n"
    delta = one_claim(tmp_path, '["fedcm", "star"]', "fedcm < star", "delta_permille_stable", twin)
    assert delta.twin == {"fraction": "0"}
    runs = seeds(fedcm=[0.90, 0.89], star=[0.80, 0.81])
    twins = seeds(fedcm=[0.90, 0.90], star=[0.90, 0.90])
    result = evaluate(delta, runs, twins)  # delta: (0.90 - final) / 0.90 x 1000
    assert result.figure.startswith("delta_permille_stable: fedcm 5.56 ± 7.86; star 106 ± 7.86")
    with pytest.raises(ConfigError, match=r"\(c\): twin: a delta_permille_stable claim, and only it"):
        one_claim(tmp_path, '["fedcm", "star"]', "fedcm < star", "delta_permille_stable")


def test_method_overrides_give_runs_of_their_own(tmp_path):
    claim = one_claim(tmp_path, '["cflgt", "ifca"]', "cflgt > ifca", extra="method_set = { ifca = { k = 5 } }\n")
    other = replace(one_claim(tmp_path, '["cflgt", "ifca"]', "cflgt > ifca"), id="d")
    planned = plan([claim, other], (0,), "embedded", Execution(out=tmp_path))
    jobs = planned.jobs[Setting("static", ())]
    assert sorted((j.method, str(j.method_sets)) for j in jobs) == [("cflgt", "{}"), ("ifca", "{'k': '5'}"), ("ifca", "{}")]
    assert {str(j.execution.out.relative_to(tmp_path.resolve())) for j in jobs} == {".", "ifca+k=5"}
    assert claim.method_run("ifca").label == "ifca(k=5)"
    bad = replace(claim, method_sets={"ifca": {"kk": "5"}})
    assert "--set method (ifca): unknown key 'kk'" in plan([bad], (0,), "embedded", Execution(out=tmp_path)).untestable["paper/c"]


def test_runs_that_share_a_label_keep_their_own_outcomes(tmp_path):
    """Two runs of one method in one setting, with and without an override: one label, two folders, two outcomes."""
    extra = f"set = {{ {TINY} }}\n"
    claim = one_claim(tmp_path, '["fedavg", "ifca"]', "fedavg > ifca", extra=extra + "method_set = { ifca = { k = 3 } }\n")
    other = replace(one_claim(tmp_path, '["fedavg", "ifca"]', "fedavg > ifca", extra=extra), id="d")
    (jobs,) = plan([claim, other], (0,), "embedded", Execution(out=tmp_path / "runs")).jobs.values()
    ifca = [j for j in jobs if j.method == "ifca"]
    outcomes = run_pool(ifca, PoolOptions("local", jobs=2, quiet=True))
    assert len({j.label for j in ifca}) == 1 and len({j.execution.out for j in ifca}) == 2
    for job, outcome in zip(ifca, outcomes):
        assert outcome.summary is not None
        assert Path(outcome.summary.run_dir).resolve() == (job.execution.out / "static/ifca/seed0").resolve()


BAD_VALUES = [
    ('kind = "exact"\nunit = "points"\n', "claims[0] (x): missing 'paper_value': the paper's figure as a number"),
    ('kind = "guess"\nunit = "points"\npaper_value = 1\n', "(x): kind 'guess': allowed: exact, bound, proxy, driftbench"),
    ('kind = "exact"\nunit = "pts"\npaper_value = 1\n', "claims[0] (x): unit 'pts': allowed: points"),
    ('kind = "exact"\nunit = "points"\npaper_value = "high"\n', "claims[0] (x): paper_value 'high': expected a number"),
    ('kind = "exact"\nunit = "points"\npaper_value = { a = 1 }\n', "paper_value {'a': 1}: expected a number (the effect) or"),
    ('kind = "proxy"\nunit = "points"\npaper_value = 1\n', "claims[0] (x): difference: a proxy claim, and only it"),
    ('kind = "driftbench"\nunit = "points"\npaper_value = 1\n', "paper_value: a driftbench claim is on a figure the paper"),
    (KIND + 'premises = ["accuracy: a > b"]\n', "claims[0] (x): premises[0]: metric 'accuracy': allowed: final_accuracy"),
    (KIND + 'premises = ["a > b"]\n', "claims[0] (x): premises[0]: 'a > b': expected"),
    (KIND + 'premises = ["final_accuracy: increasing"]\n', "premises[0]: methods: an ordering needs at least two methods"),
    (KIND + "method_set = { c = { k = 5 } }\n", "claims[0] (x): method_set: 'c' is not one of the claim's runs ['a', 'b']"),
    (KIND + 'workload = " "\n', "claims[0] (x): workload: expected one line"),
    (KIND + "differs = 3\n", "claims[0] (x): differs must be a string, got 3"),
    (KIND + 'differs = " "\n', "claims[0] (x): differs: expected one line"),
    (KIND + 'bound = "at_least"\n', "claims[0] (x): bound: a bound claim, and only it, says which bound its paper_value is"),
    ('kind = "bound"\nunit = "points"\npaper_value = 1\n', "claims[0] (x): bound: a bound claim, and only it"),
    ('kind = "bound"\nbound = "above"\nunit = "points"\npaper_value = 1\n', "bound 'above': allowed: at_least, at_most"),
    (
        'kind = "bound"\nbound = "at_least"\nunit = "points"\npaper_value = { a = 1, b = 2 }\n',
        "claims[0] (x): bound: the paper_value of a bound is one number (the effect), got {'a': 1, 'b': 2}",
    ),
]


@pytest.mark.parametrize(("fields", "message"), BAD_VALUES)
def test_a_bad_paper_value_kind_or_premise_is_one_line_naming_the_file_claim_and_field(tmp_path, fields, message):
    text = '[[claims]]\nid = "x"\nwhere = "T1"\nclaim = "c"\ntrace = "static"\npaper_figure = "1"\n'
    text += f'methods = ["a", "b"]\nmetric = "final_accuracy"\ndirection = "a > b"\n{fields}'
    path = claim_file(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        read_claim_file(path)
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value) and "\n" not in str(error.value)
