"""Golden-set evaluation: run queries in-process against an `Engine` and score the answers.

A golden set is a JSON list of ``{"query", "relevant", "secondary"?, "category"?}`` where each relevant
entry is a path (relative to the project root) or ``{"path", "start_line", "end_line"}``; the
semble benchmark's annotation files are valid golden sets. Metrics follow semble's definitions
(binary gains, the first result matching a target gives its rank, a file already found adds nothing):
Hit@1/5/10, MRR@10 and nDCG@10 at file level (path match) and chunk level (path match and, when the
target has lines, overlapping lines), per category and overall, with the engine's own latency.

Runs can be saved, compared, and swept over ranking parameters (fusion, rrfK, hybridWeight,
rerankTopN) without re-indexing, because only `config.search` changes between runs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from .service import Engine

__all__ = [
    "EvalRun",
    "GoldenQuery",
    "QueryResult",
    "Summary",
    "Target",
    "compare_runs",
    "evaluate",
    "load_golden",
    "ndcg_at_k",
    "parse_sweep",
    "summarize",
    "sweep",
    "target_ranks",
]

TOP_K = 10
SWEEP_FIELDS = {
    "fusion": "fusion_strategy",
    "fusionStrategy": "fusion_strategy",
    "rrfK": "rrf_k",
    "hybridWeight": "hybrid_weight",
    "rerankTopN": "rerank_top_n",
}


class GoldenError(ValueError):
    """A golden-set file is malformed; the message names the file and the entry."""


class Target(msgspec.Struct, frozen=True):
    path: str
    start_line: int | None = None
    end_line: int | None = None


class GoldenQuery(msgspec.Struct, frozen=True):
    query: str
    relevant: tuple[Target, ...]
    category: str = ""
    language: str = ""  # optional labels of generated sets: reports break down by them
    repo: str = ""


class Located(msgspec.Struct, frozen=True):
    """A result as scored: where it is (lines may be unknown)."""

    path: str
    start_line: int | None = None
    end_line: int | None = None


class QueryResult(msgspec.Struct):
    query: str
    category: str
    file_ranks: list[int]
    chunk_ranks: list[int]
    n_relevant: int
    latency_ms: float
    top: list[str]
    language: str = ""
    repo: str = ""


class Summary(msgspec.Struct):
    queries: int
    hit1: float
    hit5: float
    hit10: float
    mrr10: float
    ndcg10: float
    chunk_hit10: float
    chunk_mrr10: float
    chunk_ndcg10: float
    p50_ms: float
    p95_ms: float


class EvalRun(msgspec.Struct):
    label: str
    mode: str
    settings: dict[str, Any]
    overall: Summary
    by_category: dict[str, Summary]
    queries: list[QueryResult]


# ------------------------------------------------------------------------------------------ golden sets


def infer_category(query: str) -> str:
    """semble's rule for unlabelled queries: one word is a symbol query, "how ..." architecture."""
    if " " not in query.strip():
        return "symbol"
    return "architecture" if query.lower().startswith("how ") else "semantic"


def _target(raw: Any, where: str) -> Target:
    if isinstance(raw, str) and raw:
        return Target(raw.replace("\\", "/").removeprefix("./"))
    if isinstance(raw, dict) and isinstance(raw.get("path"), str):
        start, end = raw.get("start_line"), raw.get("end_line")
        if (start is None) != (end is None) or any(
            v is not None and (not isinstance(v, int) or v < 1) for v in (start, end)
        ):
            raise GoldenError(
                f"{where}: start_line and end_line must both be positive integers or both absent"
            )
        if start is not None and end is not None and end < start:
            raise GoldenError(f"{where}: end_line {end} is before start_line {start}")
        return Target(str(raw["path"]).replace("\\", "/").removeprefix("./"), start, end)
    raise GoldenError(f"{where}: a target is a path string or an object with a path, got {raw!r}")


def parse_golden(data: Any, source: str = "golden set") -> list[GoldenQuery]:
    """Validate a decoded golden set; every problem names the entry (index and query)."""
    if not isinstance(data, list):
        raise GoldenError(f"{source}: the top level must be a list of queries, got {type(data).__name__}")
    out: list[GoldenQuery] = []
    for i, item in enumerate(data):
        where = f"{source}[{i}]"
        if not isinstance(item, dict):
            raise GoldenError(f"{where}: each entry must be an object, got {type(item).__name__}")
        query = item.get("query")
        if not isinstance(query, str) or not query.strip():
            raise GoldenError(f"{where}: missing or empty 'query'")
        where = f"{where} ({query!r})"
        raw_targets = [*(item.get("relevant") or []), *(item.get("secondary") or [])]
        if not raw_targets:
            raise GoldenError(f"{where}: no 'relevant' targets")
        labels: dict[str, str] = {}
        for key in ("category", "language", "repo"):
            value = item.get(key)
            if value is not None and not isinstance(value, str):
                raise GoldenError(f"{where}: '{key}' must be a string")
            labels[key] = value or ""
        out.append(
            GoldenQuery(
                query=query,
                relevant=tuple(_target(t, where) for t in raw_targets),
                category=labels["category"] or infer_category(query),
                language=labels["language"],
                repo=labels["repo"],
            )
        )
    return out


def load_golden(path: Path) -> list[GoldenQuery]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise GoldenError(f"{path}: cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise GoldenError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
    return parse_golden(data, str(path))


# ------------------------------------------------------------------------------------------ metrics


def _matches(result: Located, target: Target, chunk_level: bool) -> bool:
    if result.path != target.path:
        return False
    if not chunk_level or target.start_line is None or result.start_line is None:
        return True
    assert target.end_line is not None and result.end_line is not None
    return not (result.end_line < target.start_line or result.start_line > target.end_line)


def target_ranks(results: Sequence[Located], targets: Iterable[Target], *, chunk_level: bool) -> list[int]:
    """1-based rank of the first result matching each target (targets never found are left out).

    >>> rs = [Located("a.py", 1, 5), Located("b.py", 1, 9), Located("a.py", 20, 30)]
    >>> target_ranks(rs, [Target("a.py", 20, 22), Target("c.py")], chunk_level=False)
    [1]
    >>> target_ranks(rs, [Target("a.py", 20, 22)], chunk_level=True)
    [3]
    """
    ranks = []
    for target in targets:
        for i, result in enumerate(results[:TOP_K], 1):
            if _matches(result, target, chunk_level):
                ranks.append(i)
                break
    return sorted(ranks)


def ndcg_at_k(ranks: Iterable[int], n_relevant: int, k: int = TOP_K) -> float:
    """Binary-gain nDCG@k; a rank shared by two targets counts once, IDCG uses min(k, n_relevant) ones.

    >>> round(ndcg_at_k([2], 1), 4), ndcg_at_k([1, 1], 2), ndcg_at_k([], 3)
    (0.6309, 0.6131471927654584, 0.0)
    """
    if n_relevant <= 0:
        return 0.0
    found = {r for r in ranks if 1 <= r <= k}
    dcg = sum(1.0 / math.log2(r + 1) for r in found)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, n_relevant)))
    return dcg / ideal


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def summarize(results: Sequence[QueryResult]) -> Summary:
    """Means over queries of every metric, plus latency percentiles."""
    n = len(results)

    def mean(values: Iterable[float]) -> float:
        vals = list(values)
        return sum(vals) / len(vals) if vals else 0.0

    def first(ranks: list[int]) -> int | None:
        return ranks[0] if ranks else None

    return Summary(
        queries=n,
        hit1=mean(1.0 if (f := first(r.file_ranks)) is not None and f <= 1 else 0.0 for r in results),
        hit5=mean(1.0 if (f := first(r.file_ranks)) is not None and f <= 5 else 0.0 for r in results),
        hit10=mean(1.0 if r.file_ranks else 0.0 for r in results),
        mrr10=mean(1.0 / r.file_ranks[0] if r.file_ranks else 0.0 for r in results),
        ndcg10=mean(ndcg_at_k(r.file_ranks, r.n_relevant) for r in results),
        chunk_hit10=mean(1.0 if r.chunk_ranks else 0.0 for r in results),
        chunk_mrr10=mean(1.0 / r.chunk_ranks[0] if r.chunk_ranks else 0.0 for r in results),
        chunk_ndcg10=mean(ndcg_at_k(r.chunk_ranks, r.n_relevant) for r in results),
        p50_ms=statistics.median([r.latency_ms for r in results]) if results else 0.0,
        p95_ms=_percentile([r.latency_ms for r in results], 0.95),
    )


# ------------------------------------------------------------------------------------------ running


BREAKDOWN_KEYS = ("category", "language", "repo")


def breakdown(results: Sequence[QueryResult], keys: Sequence[str]) -> dict[tuple[str, ...], Summary]:
    """`summarize` per group of queries sharing the values of `keys` (fields of QueryResult, e.g.
    ("category", "language")): the per style x language x repo tables of a validation report.

    >>> r = [QueryResult("a", "identifier", [1], [1], 1, 1.0, [], "go", "x"),
    ...      QueryResult("b", "identifier", [], [], 1, 1.0, [], "go", "y")]
    >>> {k: s.mrr10 for k, s in breakdown(r, ["category", "language"]).items()}
    {('identifier', 'go'): 0.5}
    """
    unknown = [k for k in keys if k not in BREAKDOWN_KEYS]
    if unknown:
        raise ValueError(
            f"cannot break down by {', '.join(unknown)}; choose from {', '.join(BREAKDOWN_KEYS)}"
        )
    groups: dict[tuple[str, ...], list[QueryResult]] = {}
    for r in results:
        groups.setdefault(tuple(getattr(r, k) or "-" for k in keys), []).append(r)
    return {k: summarize(groups[k]) for k in sorted(groups)}


def _settings(engine: Engine) -> dict[str, Any]:
    s = engine.config.search
    return {
        "fusionStrategy": s.fusion_strategy,
        "rrfK": s.rrf_k,
        "hybridWeight": s.hybrid_weight,
        "rerankTopN": s.rerank_top_n,
    }


def evaluate(
    engine: Engine,
    golden: Sequence[GoldenQuery],
    *,
    mode: str | None = None,
    label: str = "run",
    warmup: bool = True,
) -> EvalRun:
    """Answer every golden query with `engine.search` (top 10) and score it. The first query is run
    once untimed when `warmup` is set, so loading the snapshot is not charged to a query."""
    if warmup and golden:
        engine.search(golden[0].query, top_k=TOP_K, mode=mode)
    results: list[QueryResult] = []
    strategy = mode or "default"
    for item in golden:
        t0 = time.perf_counter()
        response = engine.search(item.query, top_k=TOP_K, mode=mode)
        latency = (time.perf_counter() - t0) * 1000
        strategy = response.strategy
        located = [Located(r.path, r.start_line, r.end_line) for r in response.results]
        results.append(
            QueryResult(
                query=item.query,
                category=item.category,
                file_ranks=target_ranks(located, item.relevant, chunk_level=False),
                chunk_ranks=target_ranks(located, item.relevant, chunk_level=True),
                n_relevant=len(item.relevant),
                latency_ms=round(latency, 3),
                top=[f"{r.path}:{r.start_line}-{r.end_line}" for r in response.results[:5]],
                language=item.language,
                repo=item.repo,
            )
        )
    categories = sorted({r.category for r in results})
    return EvalRun(
        label=label,
        mode=strategy,
        settings=_settings(engine),
        overall=summarize(results),
        by_category={c: summarize([r for r in results if r.category == c]) for c in categories},
        queries=results,
    )


def parse_sweep(specs: Sequence[str]) -> dict[str, list[Any]]:
    """`["rrfK=20,60", "fusion=rrf,weighted"]` -> {"rrf_k": [20, 60], "fusion_strategy": [...]}.

    >>> parse_sweep(["rrfK=20,60", "hybridWeight=0.3"])
    {'rrf_k': [20, 60], 'hybrid_weight': [0.3]}
    """
    grid: dict[str, list[Any]] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        if not sep or not values:
            raise GoldenError(
                f"sweep {spec!r}: expected NAME=V1,V2,... with NAME one of {', '.join(SWEEP_FIELDS)}"
            )
        field = SWEEP_FIELDS.get(name.strip())
        if field is None:
            raise GoldenError(f"sweep {spec!r}: unknown parameter {name!r} (use {', '.join(SWEEP_FIELDS)})")
        parsed: list[Any] = []
        for raw in values.split(","):
            raw = raw.strip()
            try:
                if field == "fusion_strategy":
                    if raw not in ("rrf", "weighted"):
                        raise ValueError(raw)
                    parsed.append(raw)
                elif field == "hybrid_weight":
                    parsed.append(float(raw))
                else:
                    parsed.append(int(raw))
            except ValueError as exc:
                raise GoldenError(f"sweep {spec!r}: bad value {raw!r} for {name}") from exc
        grid[field] = parsed
    return grid


def sweep(
    engine: Engine,
    golden: Sequence[GoldenQuery],
    grid: dict[str, list[Any]],
    *,
    mode: str | None = None,
    on_run: Callable[[EvalRun], None] | None = None,
) -> list[EvalRun]:
    """One run per combination of the grid's values (search settings only; the index is reused).
    The engine's configuration is restored afterwards."""
    original = engine.config
    names = list(grid)
    runs: list[EvalRun] = []
    try:
        for values in itertools.product(*(grid[n] for n in names)):
            changes = dict(zip(names, values, strict=True))
            try:
                search = msgspec.structs.replace(original.search, **changes)
                msgspec.convert(msgspec.to_builtins(search), type(search))  # re-validate the ranges
            except (TypeError, msgspec.ValidationError) as exc:
                raise GoldenError(f"sweep {changes}: {exc}") from exc
            engine.config = msgspec.structs.replace(original, search=search)
            label = ",".join(f"{k}={v}" for k, v in _settings(engine).items() if k in _camel(names))
            run = evaluate(engine, golden, mode=mode, label=label, warmup=not runs)
            runs.append(run)
            if on_run is not None:
                on_run(run)
    finally:
        engine.config = original
    return runs


def _camel(fields: Iterable[str]) -> set[str]:
    inverse = {"fusion_strategy": "fusionStrategy", "rrf_k": "rrfK", "hybrid_weight": "hybridWeight"}
    inverse["rerank_top_n"] = "rerankTopN"
    return {inverse[f] for f in fields}


# ------------------------------------------------------------------------------------------ reporting

_COLUMNS = ("ndcg10", "hit1", "hit5", "hit10", "mrr10", "chunk_ndcg10", "p50_ms", "p95_ms")


def format_run(run: EvalRun) -> str:
    """A table: one line per category and one overall."""
    head = f"{'':<14}{'n':>5}" + "".join(f"{c:>13}" for c in _COLUMNS)
    lines = [f"{run.label}  mode={run.mode}  {run.settings}", head]
    rows = [*run.by_category.items(), ("OVERALL", run.overall)]
    for name, s in rows:
        lines.append(f"{name:<14}{s.queries:>5}" + "".join(f"{getattr(s, c):>13.3f}" for c in _COLUMNS))
    return "\n".join(lines)


def compare_runs(base: EvalRun, new: EvalRun) -> str:
    """Side-by-side table of two runs (per category and overall) with deltas, plus the queries whose
    file-level nDCG@10 moved most."""
    lines = [f"base: {base.label} ({base.mode})   new: {new.label} ({new.mode})"]
    lines.append(f"{'':<14}{'metric':<14}{'base':>9}{'new':>9}{'delta':>9}")
    cats = [*sorted(set(base.by_category) | set(new.by_category)), "OVERALL"]
    for cat in cats:
        a = base.overall if cat == "OVERALL" else base.by_category.get(cat)
        b = new.overall if cat == "OVERALL" else new.by_category.get(cat)
        if a is None or b is None:
            lines.append(f"{cat:<14}(only in one run)")
            continue
        for metric in ("ndcg10", "hit1", "mrr10", "chunk_ndcg10", "p50_ms"):
            va, vb = getattr(a, metric), getattr(b, metric)
            lines.append(f"{cat:<14}{metric:<14}{va:>9.3f}{vb:>9.3f}{vb - va:>+9.3f}")
    before = {q.query: ndcg_at_k(q.file_ranks, q.n_relevant) for q in base.queries}
    moved = sorted(
        (
            (ndcg_at_k(q.file_ranks, q.n_relevant) - before[q.query], q.query)
            for q in new.queries
            if q.query in before
        ),
        key=lambda item: -abs(item[0]),
    )
    changed = [m for m in moved if abs(m[0]) > 1e-9]
    lines.append(f"queries changed: {len(changed)} of {len(new.queries)}")
    for delta, query in changed[:10]:
        lines.append(f"  {delta:+.3f}  {query}")
    return "\n".join(lines)


def save_run(run: EvalRun, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msgspec.json.format(msgspec.json.encode(run)))


def load_run(path: Path) -> EvalRun:
    try:
        return msgspec.json.decode(path.read_bytes(), type=EvalRun)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise GoldenError(f"{path}: not a saved evaluation run: {exc}") from exc


# ------------------------------------------------------------------------------------------ CLI


def add_eval_parser(sub: Any) -> None:
    p = sub.add_parser("eval", help="score search quality on a golden set (in-process)")
    p.add_argument("golden", help="golden-set JSON: [{query, relevant, secondary?, category?}, ...]")
    p.add_argument("--root", help="project root (default: $CODEBASE_INDEX_ROOT or .)")
    p.add_argument("--index-dir", help="where the index lives (default: <root>/.codebase-index)")
    p.add_argument("--mode", choices=["keyword", "semantic", "hybrid"], default=None, help="retrieval mode")
    p.add_argument("--no-index", action="store_true", help="do not bring the index up to date first")
    p.add_argument("--out", help="save the run (JSON) here")
    p.add_argument("--compare", help="a saved run to compare this one with")
    p.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="sweep a search setting (fusion, rrfK, hybridWeight, rerankTopN); repeat for a grid",
    )
    p.add_argument("--json", action="store_true", help="print the run(s) as JSON")
    p.set_defaults(func=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    from .cli import CliError, _engine

    try:
        golden = load_golden(Path(args.golden))
        grid = parse_sweep(args.sweep)
        base = load_run(Path(args.compare)) if args.compare else None
    except GoldenError as exc:
        raise CliError(str(exc)) from exc
    engine = _engine(args)
    try:
        if not args.no_index:
            engine.index()
        if grid:
            runs = sweep(engine, golden, grid, mode=args.mode)
        else:
            runs = [evaluate(engine, golden, mode=args.mode, label=Path(args.golden).stem)]
    except GoldenError as exc:
        raise CliError(str(exc)) from exc
    finally:
        engine.close()
    if args.out:
        save_run(runs[0] if len(runs) == 1 else runs[-1], Path(args.out))
    if args.json:
        sys.stdout.write(msgspec.json.encode(runs if grid else runs[0]).decode() + "\n")
        return 0
    for run in runs:
        print(format_run(run))
        print()
    if grid:
        best = max(runs, key=lambda r: r.overall.ndcg10)
        print(f"best nDCG@10 {best.overall.ndcg10:.4f}: {best.label}")
    if base is not None:
        print(compare_runs(base, runs[0] if len(runs) == 1 else max(runs, key=lambda r: r.overall.ndcg10)))
    return 0
