"""Change-description evaluation (issue 12): commit messages -> the non-test files the commit modified,
searched over the PARENT snapshot, on the `eval` repositories of bench/training_repos.json (built by
bench/make_training_set.py --split eval; disjoint from training and validation).

Systems (each run writes {repo: [[path, ...] per query]} to --out):
  ours-hybrid / ours-keyword  our engine on repos/X/changes-index (the clone checked out at the query's
                              branch); the file ranking is the distinct files of the top 40 chunks
  bm25-file                   whole-file BM25 (k1 1.2, b 0.75) over the snapshot's source files
  semble                      semble 0.7 (run with semble's venv python; SEMBLE_MODEL_NAME as in
                              ../shared/peers/README.md), default hybrid search, top 40 chunks
Scoring (`score RUN.json ...`): file-level MRR@10, Hit@1, Recall@10 (share of the commit's files among
the first 10 distinct files) and nDCG@10, mean over queries, per language and overall.

Hybrid needs the snapshots' vectors: `embed` embeds every cd-* catalog of each changes-index in one job
(no checkouts; contents shared between snapshots embed once) with the configured provider.

`--index-name NAME` (run, embed) reads and embeds repos/X/NAME instead of changes-index: one copy per
embedding model (an index keeps the built-in model that embedded it), e.g. changes-index-static embedded
and searched with CODEBASE_INDEX_CONFIG naming {"embeddingModel": "code-static"}.

Usage:
    python bench/eval_changes.py embed [--repo NAME ...] [--split validation] [--index-name NAME]
    python bench/eval_changes.py run --system ours-hybrid --out /tmp/ours-hybrid.json
    SEMBLE_MODEL_NAME=... semble-venv/bin/python bench/eval_changes.py run --system semble --out s.json
    python bench/eval_changes.py score /tmp/ours-hybrid.json /tmp/bm25.json s.json
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_TRAIN = Path.home() / ".cache" / "codebase-index-train"
CHUNKS = 40
# Whole-file BM25 reads the source files of the languages the sets cover (the eval repos' code).
SOURCE = re.compile(
    r"\.(py|js|mjs|cjs|jsx|ts|tsx|mts|go|rs|java|kt|cs|rb|php|c|h|cc|cpp|hpp|cxx|hh|swift|scala)$"
)
_TOKEN = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|\d+")


def eval_sets(train: Path, split: str = "eval") -> list[tuple[str, Path, list[dict[str, Any]]]]:
    """(repo, its folder, its change descriptions) of one split of the manifest."""
    manifest = json.loads((train / "manifest.json").read_text())
    out = []
    for repo in manifest["repos"]:
        if repo["split"] != split:
            continue
        base = train / "repos" / repo["repo"].replace("/", "+")
        if (base / "changes.json").is_file():
            out.append((repo["repo"], base, json.loads((base / "changes.json").read_text())))
    return out


def _files_of(chunks: list[str], n: int = 10) -> list[str]:
    seen: list[str] = []
    for path in chunks:
        if path not in seen:
            seen.append(path)
        if len(seen) == n:
            break
    return seen


def _snapshot(clone: Path, branch: str, into: Path) -> None:
    archive = subprocess.run(["git", "-C", str(clone), "archive", branch], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)


def tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def bm25_files(root: Path, query: str, k1: float = 1.2, b: float = 0.75) -> list[str]:
    docs: dict[str, Counter[str]] = {}
    for path in root.rglob("*"):
        if path.is_file() and SOURCE.search(path.name):
            try:
                docs[path.relative_to(root).as_posix()] = Counter(tokens(path.read_text(errors="replace")))
            except OSError:
                continue
    if not docs:
        return []
    avg = sum(sum(c.values()) for c in docs.values()) / len(docs)
    terms = set(tokens(query))
    df = {t: sum(1 for c in docs.values() if t in c) for t in terms}
    scores: dict[str, float] = {}
    for name, counts in docs.items():
        length = sum(counts.values())
        s = 0.0
        for t in terms:
            tf = counts.get(t, 0)
            if tf:
                idf = math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg))
        if s > 0:
            scores[name] = s
    return sorted(scores, key=lambda p: (-scores[p], p))[:10]


def run(
    system: str, train: Path, only: list[str] | None, split: str = "eval", index_name: str = "changes-index"
) -> dict[str, list[list[str]]]:
    out: dict[str, list[list[str]]] = {}
    for repo, base, queries in eval_sets(train, split):
        if only and repo not in only:
            continue
        t0 = time.perf_counter()
        ranked: list[list[str]] = []
        strategies: Counter[str] = Counter()
        if system.startswith("ours-"):
            from codebase_index.service import Engine

            mode = system.removeprefix("ours-")
            clone = base / "changes"
            for q in queries:
                subprocess.run(["git", "-C", str(clone), "checkout", "-q", "-f", q["branch"]], check=True)
                engine = Engine(clone, index_path=base / index_name)
                try:
                    response = engine.search(q["query"], top_k=CHUNKS, mode=mode)
                finally:
                    engine.close()
                # What actually ran: a hybrid run without vectors answers keyword-fallback/hybrid-partial.
                strategies[response.strategy] += 1
                ranked.append(_files_of([r.path for r in response.results]))
        else:
            for q in queries:
                with tempfile.TemporaryDirectory() as tmp:
                    root = Path(tmp)
                    _snapshot(base / "changes", q["branch"], root)
                    if system == "bm25-file":
                        ranked.append(bm25_files(root, q["query"]))
                    elif system == "semble":
                        from semble import SembleIndex  # type: ignore[import-not-found]

                        index = SembleIndex.from_path(str(root))
                        hits = index.search(q["query"], top_k=CHUNKS)
                        ranked.append(_files_of([_rel(h, root) for h in hits]))
                    else:
                        raise SystemExit(f"unknown system {system}")
        out[repo] = ranked
        ran = f" strategies {dict(strategies)}" if strategies else ""
        print(
            f"{system} {repo}: {len(queries)} queries in {time.perf_counter() - t0:.0f}s{ran}",
            file=sys.stderr,
            flush=True,
        )
    return out


def embed(
    train: Path, only: list[str] | None, split: str = "eval", index_name: str = "changes-index"
) -> None:
    """Embed the cd-* catalogs (the parent snapshots) of each repository's changes-index and sync its
    ANN index, as `Engine.embed` does for one branch. With `split` validation, acceptance.py's change
    descriptions then run hybrid too (without vectors hybrid falls back to keyword there)."""
    from codebase_index.embedder import EmbeddingJob
    from codebase_index.service import Engine
    from codebase_index.vectors import AnnIndex

    for repo, base, queries in eval_sets(train, split):
        if only and repo not in only:
            continue
        engine = Engine(base / "changes", index_path=base / index_name)
        try:
            provider = engine.embedding_provider()
            if provider is None:
                raise SystemExit(f"no embedding provider: {engine.embedding_error()}")
            catalogs = sorted({q["branch"] for q in queries})
            t0 = time.perf_counter()
            shown = [t0]

            def progress(
                done: int, total: int, t0: float = t0, shown: list[float] = shown, repo: str = repo
            ) -> None:
                now = time.perf_counter()
                if now - shown[0] >= 60 or done == total:
                    shown[0] = now
                    rate = done / max(now - t0, 1e-9)
                    print(f"  {repo}: {done}/{total} ({rate:.1f}/s)", file=sys.stderr, flush=True)

            report = EmbeddingJob(engine.index_dir, catalogs, provider).run(progress)
            count = engine.store.conn.execute(
                "SELECT COUNT(*) FROM embeddings WHERE model_id = ?", (provider.model_id,)
            ).fetchone()[0]
            if count >= engine.ann_threshold():
                AnnIndex.sync(engine.store, engine.index_dir, provider.model_id, provider.dimensions)
            print(
                f"embed {repo}: {report.embedded} embedded, {report.failed} failed, {report.pending} pending,"
                f" {count} vectors of {provider.model_id} in {time.perf_counter() - t0:.0f}s",
                file=sys.stderr,
                flush=True,
            )
        finally:
            engine.close()


def _rel(hit: Any, root: Path) -> str:
    chunk = getattr(hit, "chunk", hit)
    path = str(getattr(chunk, "file_path", getattr(chunk, "path", "")))
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path


def query_metrics(files: list[str], relevant: list[str]) -> tuple[float, float, float, float]:
    """(MRR@10, Hit@1, Recall@10, nDCG@10) of one query's file ranking against the changed files.

    >>> query_metrics(["a", "b", "c"], ["b", "z"])
    (0.5, 0.0, 0.5, 0.38685280723454163)
    """
    targets = set(relevant)
    ranks = [i + 1 for i, f in enumerate(files[:10]) if f in targets]
    mrr = 1 / ranks[0] if ranks else 0.0
    hit1 = 1.0 if ranks and ranks[0] == 1 else 0.0
    recall = len(ranks) / len(targets)
    dcg = sum(1 / math.log2(r + 1) for r in ranks)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(targets))))
    return mrr, hit1, recall, dcg / ideal


def score(paths: list[Path], train: Path, split: str = "eval") -> None:
    sets = {repo: queries for repo, _, queries in eval_sets(train, split)}
    print(f"{'system':<14} {'lang':<11} {'n':>4} {'MRR@10':>7} {'Hit@1':>6} {'R@10':>6} {'nDCG10':>7}")
    for path in paths:
        results = json.loads(path.read_text())
        rows: dict[str, list[tuple[float, float, float, float]]] = {}
        for repo, ranked in results.items():
            for q, files in zip(sets[repo], ranked, strict=True):
                for key in (q["language"], "ALL"):
                    rows.setdefault(key, []).append(query_metrics(files, q["relevant"]))
        for key in sorted(rows, key=lambda k: (k == "ALL", k)):
            vals = rows[key]
            means = [sum(v[i] for v in vals) / len(vals) for i in range(4)]
            print(f"{path.stem:<14} {key:<11} {len(vals):>4} " + " ".join(f"{m:>6.3f}" for m in means))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run")
    p.add_argument("--system", required=True, choices=["ours-hybrid", "ours-keyword", "bm25-file", "semble"])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--train", type=Path, default=DEFAULT_TRAIN)
    p.add_argument("--repo", action="append")
    e = sub.add_parser("embed")
    e.add_argument("--train", type=Path, default=DEFAULT_TRAIN)
    e.add_argument("--repo", action="append")
    s = sub.add_parser("score")
    s.add_argument("runs", type=Path, nargs="+")
    s.add_argument("--train", type=Path, default=DEFAULT_TRAIN)
    for sub_parser in (p, e, s):
        sub_parser.add_argument("--split", default="eval", help="the manifest's split (eval, validation)")
    for sub_parser in (p, e):
        sub_parser.add_argument(
            "--index-name", default="changes-index", help="the index folder in each repository's set"
        )
    args = parser.parse_args()
    if args.cmd == "run":
        args.out.write_text(json.dumps(run(args.system, args.train, args.repo, args.split, args.index_name)))
    elif args.cmd == "embed":
        embed(args.train, args.repo, args.split, args.index_name)
    else:
        score(args.runs, args.train, args.split)
    return 0


if __name__ == "__main__":
    sys.exit(main())
