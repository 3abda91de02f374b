"""The golden-set harness: parsing, metrics, a real in-process run, sweeps, comparison and the CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from codebase_index.evaluation import (
    GoldenError,
    Located,
    Target,
    breakdown,
    compare_runs,
    evaluate,
    load_golden,
    load_run,
    ndcg_at_k,
    parse_golden,
    parse_sweep,
    save_run,
    sweep,
    target_ranks,
)
from codebase_index.service import Engine


def test_parse_golden_accepts_semble_annotations_and_infers_categories() -> None:
    golden = parse_golden(
        [
            {"query": "Session", "relevant": ["src/s.py"], "secondary": [{"path": "src/a.py"}]},
            {"query": "how redirects work", "relevant": [{"path": "r.py", "start_line": 3, "end_line": 9}]},
            {"query": "retry policy", "relevant": ["./x\\y.py"], "category": "custom"},
        ]
    )
    assert [g.category for g in golden] == ["symbol", "architecture", "custom"]
    assert golden[0].relevant == (Target("src/s.py"), Target("src/a.py"))
    assert golden[1].relevant == (Target("r.py", 3, 9),)
    assert golden[2].relevant == (Target("x/y.py"),)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"query": "x"}, "top level must be a list"),
        ([{"relevant": ["a"]}], "missing or empty 'query'"),
        ([{"query": "x", "relevant": []}], "no 'relevant' targets"),
        ([{"query": "x", "relevant": [{"path": "a", "start_line": 3}]}], "both"),
        ([{"query": "x", "relevant": [{"path": "a", "start_line": 5, "end_line": 2}]}], "before"),
        ([{"query": "x", "relevant": [7]}], "a target is a path"),
    ],
)
def test_parse_golden_rejects_bad_entries(data: object, message: str) -> None:
    with pytest.raises(GoldenError, match=message):
        parse_golden(data, "set.json")


def test_load_golden_names_the_file_on_bad_json(tmp_path: Path) -> None:
    bad = tmp_path / "g.json"
    bad.write_text("[{]")
    with pytest.raises(GoldenError, match=r"g\.json:1:3: invalid JSON"):
        load_golden(bad)


def test_metrics_follow_semble_definitions() -> None:
    results = [Located("a.py", 1, 5), Located("a.py", 40, 50), Located("b.py", 1, 3)]
    targets = [Target("a.py", 40, 45), Target("b.py"), Target("c.py")]
    assert target_ranks(results, targets, chunk_level=False) == [1, 3]
    assert target_ranks(results, targets, chunk_level=True) == [2, 3]
    assert ndcg_at_k([1], 1) == 1.0
    assert ndcg_at_k([1, 1], 2) < 1.0  # one result covering two targets counts once
    assert ndcg_at_k([11], 1) == 0.0
    ideal = sum(1 / math.log2(i + 2) for i in range(10))  # IDCG caps at 10 targets
    assert ndcg_at_k([1, 2], 20) == pytest.approx((1 + 1 / math.log2(3)) / ideal)


def test_parse_sweep_validates_names_and_values() -> None:
    assert parse_sweep(["fusion=rrf,weighted", "rerankTopN=0,50"]) == {
        "fusion_strategy": ["rrf", "weighted"],
        "rerank_top_n": [0, 50],
    }
    with pytest.raises(GoldenError, match="unknown parameter"):
        parse_sweep(["k1=2"])
    with pytest.raises(GoldenError, match="bad value"):
        parse_sweep(["rrfK=ten"])
    with pytest.raises(GoldenError, match="expected NAME"):
        parse_sweep(["rrfK"])


def _project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "retry.py").write_text(
        "class RetryPolicy:\n    '''Exponential backoff between attempts.'''\n\n"
        "    def delay(self, attempt):\n        return 2 ** attempt\n"
    )
    (root / "src" / "cache.py").write_text(
        "def lookup(key):\n    '''Find a cached entry by key.'''\n    return key\n"
    )
    (root / "src" / "jar.py").write_text(
        "class CookieJar:\n    def store(self, cookie):\n        return cookie\n"
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


GOLDEN = [
    {"query": "RetryPolicy", "relevant": ["src/retry.py"]},
    {
        "query": "exponential backoff delay",
        "relevant": [{"path": "src/retry.py", "start_line": 4, "end_line": 5}],
    },
    {"query": "find cached entry", "relevant": ["src/cache.py"], "category": "semantic"},
    {"query": "cookie storage", "relevant": ["src/nowhere.py"], "category": "semantic"},
]


def test_evaluate_runs_in_process_and_scores(tmp_path: Path) -> None:
    engine = Engine(_project(tmp_path / "p"), index_path=tmp_path / "idx")
    engine.index()
    run = evaluate(engine, parse_golden(GOLDEN), mode="keyword", label="base")
    assert run.mode == "keyword"
    assert run.overall.queries == 4
    assert run.queries[0].file_ranks == [1]
    assert run.queries[3].file_ranks == []  # the target does not exist: a miss, not an error
    assert run.overall.hit10 == 0.75
    assert set(run.by_category) == {"symbol", "semantic"}
    assert run.by_category["semantic"].queries == 3
    assert run.overall.p95_ms >= run.overall.p50_ms > 0
    saved = tmp_path / "run.json"
    save_run(run, saved)
    assert load_run(saved).overall == run.overall
    runs = sweep(engine, parse_golden(GOLDEN), {"rerank_top_n": [0, 100]}, mode="keyword")
    assert [r.settings["rerankTopN"] for r in runs] == [0, 100]
    assert engine.config.search.rerank_top_n == 100  # restored
    report = compare_runs(run, runs[0])
    assert "OVERALL" in report and "queries changed" in report
    with pytest.raises(GoldenError, match=r"<= 200"):
        sweep(engine, parse_golden(GOLDEN), {"rerank_top_n": [500]}, mode="keyword")
    engine.close()


def test_language_and_repo_labels_reach_the_per_group_report(tmp_path: Path) -> None:
    labelled = [
        {**GOLDEN[0], "language": "python", "repo": "acme/retry"},
        {**GOLDEN[2], "language": "python", "repo": "acme/cache"},
        {**GOLDEN[3], "language": "go", "repo": "acme/cache"},
    ]
    with pytest.raises(GoldenError, match="'language' must be a string"):
        parse_golden([{**GOLDEN[0], "language": 3}])
    engine = Engine(_project(tmp_path / "p"), index_path=tmp_path / "idx")
    engine.index()
    run = evaluate(engine, parse_golden(labelled), mode="keyword")
    engine.close()
    assert [(q.language, q.repo) for q in run.queries] == [
        ("python", "acme/retry"),
        ("python", "acme/cache"),
        ("go", "acme/cache"),
    ]
    by_repo = breakdown(run.queries, ["repo"])
    assert {k: s.queries for k, s in by_repo.items()} == {("acme/cache",): 2, ("acme/retry",): 1}
    assert by_repo[("acme/retry",)].hit1 == 1.0
    by_style_language = breakdown(run.queries, ["category", "language"])
    assert by_style_language[("semantic", "go")].hit10 == 0.0  # the missing target
    assert by_style_language[("semantic", "python")].hit10 == 1.0
    with pytest.raises(ValueError, match="cannot break down by path"):
        breakdown(run.queries, ["path"])
    saved = tmp_path / "run.json"
    save_run(run, saved)
    assert load_run(saved).queries[2].language == "go"


def test_eval_command_line(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(GOLDEN))
    base = [sys.executable, "-m", "codebase_index.cli", "eval", str(golden), "--root", str(root)]
    base += ["--index-dir", str(tmp_path / "idx"), "--mode", "keyword"]
    first = subprocess.run([*base, "--out", str(tmp_path / "a.json")], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "OVERALL" in first.stdout
    second = subprocess.run(
        [*base, "--sweep", "rerankTopN=0,100", "--compare", str(tmp_path / "a.json")],
        capture_output=True,
        text=True,
    )
    assert second.returncode == 0, second.stderr
    assert "best nDCG@10" in second.stdout and "queries changed" in second.stdout
    bad = subprocess.run([*base, "--sweep", "nope=1"], capture_output=True, text=True)
    assert bad.returncode == 1 and "unknown parameter" in bad.stderr


def test_validate_script_reports_per_style_language_and_repo(tmp_path: Path) -> None:
    base = tmp_path / "acme-retry"
    _project(base / "corpus")
    labelled = [{**g, "language": "python", "repo": "acme/retry"} for g in GOLDEN]
    (base / "golden.json").write_text(json.dumps(labelled))
    other = tmp_path / "hand-written"  # no labels: its folder name stands for the repository
    _project(other / "corpus")
    (other / "golden.json").write_text(json.dumps(GOLDEN[:2]))
    for folder in (base, other):
        engine = Engine(folder / "corpus", index_path=folder / "index")
        engine.index()
        engine.close()
    script = Path(__file__).resolve().parents[1] / "bench" / "validate.py"
    out = subprocess.run(
        [sys.executable, str(script), "--sets", str(base), str(other), "--mode", "keyword"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "-- keyword by category x language" in out
    assert "semantic / python" in out and "n=3" in out  # 3 semantic-style queries of the labelled set
    assert "-- keyword by repo" in out
    assert "acme/retry" in out and "hand-written" in out
