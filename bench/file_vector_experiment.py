"""File-level semantic evidence experiment (issue 3, "Meaning"): does a vector per FILE help hybrid search?
Results and decision: bench/file_vector_experiment.md.

A variant is SOURCE:USE[:WEIGHT[:INJECT]]. Sources of a file-level score (mean/max/top2 need no new
embeddings; card needs bench/embed_file_cards.py first):
    mean       cosine of the query with the normalised mean of the file's chunk vectors (its centroid)
    max        best chunk cosine of the file over ALL its chunks (the shipped vote sees the top-50 pool)
    top2       mean of the file's two best chunk cosines
    card       cosine with the file's card vector (bench/file_cards.py: path, module doc, definitions)
    card+X     mean of the card cosine and source X (max, mean, top2)
Uses (all only for hybrid queries that fuse by RRF, i.e. not literal ones, as the shipped file vote):
    add        an extra file vote: a chunk gains W * w_sem / (rrfK + rank of its file by the score),
               over the `--top-files` best files, beside the shipped vote
    replace    the same, with the shipped pool-based vote (RankParams.semantic_file) turned off
    boost      the rerank's first-stage score times 1 + W * (file score min-max scaled over candidates)
    boostall   boost for every hybrid query, literal ones too
    ctx        the semantic list itself ranks chunks by cosine + W * file score (a chunk read in the
               context of its file; also for --mode semantic via FV_MODE=semantic)
    ctxadd     ctx with 0.5, plus an add vote of weight W
INJECT > 0 appends the best chunk of each of the INJECT best files to the semantic candidates.

The shipped code is not modified: the variant wraps `fuse` and `rank` as `ranking.pipeline` calls them,
`VectorSnapshot.semantic_hits` and `Engine.search` in this process, so `base` reproduces the default.
Usage:
    python bench/file_vector_experiment.py --variant base --variant card:add:0.5 [--val] [--val-only]
        [--val-root ~/.cache/codebase-index-val-files]   (FV_CARDS=<cards root>, FV_MODE=semantic)
Writes /tmp/fv-<label>.json per variant (score.py --results input) and prints OVERALL / category lines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from codebase_index import ranking
from codebase_index.evaluation import evaluate, load_golden
from codebase_index.ranking import pipeline as rank_pipeline
from codebase_index.search import KeywordSnapshot
from codebase_index.service import Engine
from codebase_index.vectors import Hit, VectorSnapshot

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent.parent / "shared" / "bench"
VAL = Path.home() / ".cache" / "codebase-index-val"
MODE = os.environ.get("FV_MODE", "hybrid")
# Where bench/embed_file_cards.py wrote <repo>/file_cards.npz and val-<set>/file_cards.npz.
CARDS_ROOT = Path(os.environ.get("FV_CARDS", str(Path.home() / ".cache" / "codebase-index-bench-fv")))
SOURCES = ("mean", "max", "top2", "card", "card+max", "card+mean", "card+top2")
USES = ("add", "replace", "boost", "boostall", "ctx", "ctxadd")


@dataclass(frozen=True)
class Variant:
    source: str  # "base" or one of SOURCES
    use: str = "add"
    weight: float = 0.5
    top_files: int = 50
    inject: int = 0

    @property
    def label(self) -> str:
        if self.source == "base":
            return "base"
        return f"{self.source}-{self.use}-{self.weight:g}-t{self.top_files}-i{self.inject}"


def parse_variant(text: str, top_files: int) -> Variant:
    parts = text.split(":")
    if parts[0] == "base":
        return Variant("base")
    if parts[0] not in SOURCES:
        raise SystemExit(f"unknown file-vector source {parts[0]!r}; known: {', '.join(SOURCES)}")
    use = parts[1] if len(parts) > 1 else "add"
    if use not in USES:
        raise SystemExit(f"unknown use {use!r}; known: {', '.join(USES)}")
    weight = float(parts[2]) if len(parts) > 2 else 0.5
    inject = int(parts[3]) if len(parts) > 3 else 0
    return Variant(parts[0], use, weight, top_files, inject)


# -- file-level scores ----------------------------------------------------------------------------------

_CENTROIDS: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}


def centroids(snap: KeywordSnapshot, vecs: VectorSnapshot) -> tuple[np.ndarray, np.ndarray]:
    """(unit centroid per file, has-vector mask per file), cached per vector snapshot and its size."""
    found = _CENTROIDS.get(id(vecs))
    if found is not None and found[0] == len(vecs):
        return found[1], found[2]
    sums = np.zeros((len(snap.file_paths), vecs.dimensions), dtype=np.float32)
    rows = np.flatnonzero(vecs.present)
    np.add.at(sums, snap.doc_file[rows], vecs.matrix[rows])
    norms = np.linalg.norm(sums, axis=1)
    has = norms > 0
    sums[has] /= norms[has, None]
    _CENTROIDS[id(vecs)] = (len(vecs), sums, has)
    return sums, has


def _top2(cos: np.ndarray, files: np.ndarray, paths: Sequence[str]) -> dict[str, float]:
    """Mean of each file's two best chunk cosines (a one-chunk file keeps its one)."""
    out: dict[str, float] = {}
    for f in np.unique(files):
        best = np.sort(cos[files == f])[-2:]
        out[paths[int(f)]] = float(best.mean())
    return out


def file_scores(
    source: str, snap: KeywordSnapshot, vecs: VectorSnapshot, query: np.ndarray, cards: dict[str, np.ndarray]
) -> dict[str, float]:
    """{path: file-level score} of one source for one query vector."""
    if source.startswith("card+"):
        other = file_scores(source[5:], snap, vecs, query, cards)
        return {p: (float(v @ query) + other[p]) / 2 for p, v in cards.items() if p in other}
    if source == "card":
        return {p: float(v @ query) for p, v in cards.items()}
    if source == "mean":
        mat, has = centroids(snap, vecs)
        s = mat @ query
        return {snap.file_paths[i]: float(s[i]) for i in np.flatnonzero(has)}
    rows = np.flatnonzero(vecs.present)
    cos = vecs.matrix[rows] @ query
    files = snap.doc_file[rows]
    if source == "max":
        best = np.full(len(snap.file_paths), -np.inf, dtype=np.float32)
        np.maximum.at(best, files, cos)
        return {snap.file_paths[i]: float(best[i]) for i in np.flatnonzero(np.isfinite(best))}
    if source == "top2":
        return _top2(cos, files, snap.file_paths)
    raise ValueError(f"unknown source {source!r}")


# -- the wrappers -------------------------------------------------------------------------------------------


@dataclass
class State:
    variant: Variant
    cards: dict[str, np.ndarray]
    snap: KeywordSnapshot | None = None
    scores: dict[str, float] | None = None  # this query's file scores
    ranks: dict[str, int] | None = None  # this query's best `top_files` files, 1-based
    boost_on: bool = False


STATE = State(Variant("base"), {})
_ORIG_FUSED = rank_pipeline.fuse
_ORIG_RANK = rank_pipeline.rank
_ORIG_SEARCH = Engine.search
_ORIG_SEMANTIC = VectorSnapshot.semantic_hits


def _rrf_branch(profile: ranking.ParsedQuery, kw: Sequence[Any], sem: Sequence[Any], config: Any) -> bool:
    """The shipped fusion takes the RRF path (where its file vote lives) for this query."""
    return (
        bool(kw)
        and bool(sem)
        and config.fusion_strategy != "weighted"
        and not (ranking.query.LITERAL_SCORE_FUSION and profile.literal)
    )


def patched_fused(
    profile: ranking.ParsedQuery,
    keyword_hits: Sequence[tuple[int, float]],
    semantic_hits: Sequence[tuple[int, float]],
    config: Any,
    file_of: Callable[[int], str] | None = None,
    params: ranking.RankParams | None = None,
    *extra: Any,
    **more: Any,
) -> list[tuple[int, float]]:
    """The shipped fusion plus the variant's file vote (`extra`, `more`: parameters `_fused` may gain)."""
    v = STATE.variant
    rrf = _rrf_branch(profile, keyword_hits, semantic_hits, config)
    STATE.boost_on = v.use == "boostall" or (v.use == "boost" and rrf)
    if v.use not in ("add", "replace", "ctxadd") or STATE.ranks is None or file_of is None or not rrf:
        return _ORIG_FUSED(profile, keyword_hits, semantic_hits, config, file_of, params, *extra, **more)
    p = params or ranking.RankParams()
    if v.use == "replace":
        p = replace(p, semantic_file=0.0)
    ordered = _ORIG_FUSED(profile, keyword_hits, semantic_hits, config, file_of, p, *extra, **more)
    w_sem = 2.0 * (1.0 - ranking.identifier_keyword_weight(profile, config.hybrid_weight))
    out = []
    for doc, score in ordered:
        r = STATE.ranks.get(file_of(doc))
        out.append((doc, score + (v.weight * w_sem / (config.rrf_k + r) if r is not None else 0.0)))
    out.sort(key=lambda item: (-item[1], item[0]))
    return out


def patched_rank(
    candidates: Iterable[ranking.Candidate], profile: ranking.ParsedQuery, params: Any = None, *extra: Any
) -> list[ranking.Ranked]:
    """The shipped rerank, with first-stage scores boosted by the file score for boost variants."""
    cands = list(candidates)
    scores = STATE.scores
    if not STATE.boost_on or not scores or not cands:
        return _ORIG_RANK(cands, profile, params, *extra)
    vals = [scores.get(c.path) for c in cands]
    known = [x for x in vals if x is not None]
    if not known:
        return _ORIG_RANK(cands, profile, params, *extra)
    lo, span = min(known), (max(known) - min(known)) or 1.0
    w = STATE.variant.weight
    boosted = [
        c._replace(score=c.score * (1 + w * ((x - lo) / span if x is not None else 0.0)))
        for c, x in zip(cands, vals, strict=True)
    ]
    return _ORIG_RANK(boosted, profile, params, *extra)


def patched_semantic(
    self: VectorSnapshot,
    query: np.ndarray,
    k: int,
    mask: np.ndarray | None = None,
    exclude: Callable[[int], bool] | None = None,
) -> list[Hit]:
    v, snap, scores = STATE.variant, STATE.snap, STATE.scores
    if v.use in ("ctx", "ctxadd") and scores and snap is not None:
        per_file = np.array([scores.get(p, 0.0) for p in snap.file_paths], dtype=np.float32)
        w = v.weight if v.use == "ctx" else 0.5
        total = self.matrix @ query + w * per_file[snap.doc_file[: self.matrix.shape[0]]]
        total[~self.present] = -np.inf
        if mask is not None:
            total[~mask] = -np.inf
        top = np.argsort(-total, kind="stable")[:k]
        return [Hit(int(d), float(total[d])) for d in top if np.isfinite(total[d])]
    hits = _ORIG_SEMANTIC(self, query, k, mask, exclude)
    if v.inject <= 0 or STATE.ranks is None or snap is None:
        return hits
    have = {snap.docs[h.doc].path for h in hits}
    cos = self.matrix @ query
    for path, rank in STATE.ranks.items():
        if rank > v.inject or path in have:
            continue
        docs = np.flatnonzero((snap.doc_file == snap.file_paths.index(path)) & self.present)
        if docs.size:
            best = int(docs[np.argmax(cos[docs])])
            hits.append(Hit(best, float(cos[best])))
    return hits


def patched_search(self: Engine, query: str, **kwargs: Any) -> Any:
    v = STATE.variant
    STATE.scores = STATE.ranks = None
    STATE.boost_on = False
    if v.source != "base" and kwargs.get("mode") in (None, "hybrid", "semantic"):
        snap = self.snapshot()
        vecs = self.vector_snapshot(snap)
        if vecs is not None and len(vecs):
            STATE.snap = snap
            STATE.scores = file_scores(v.source, snap, vecs, self.query_vector(query), STATE.cards)
            ranked = sorted(STATE.scores.items(), key=lambda kv: (-kv[1], kv[0]))[: v.top_files]
            STATE.ranks = {path: i + 1 for i, (path, _) in enumerate(ranked)}
    return _ORIG_SEARCH(self, query, **kwargs)


rank_pipeline.fuse = patched_fused  # type: ignore[assignment,unused-ignore]
rank_pipeline.rank = patched_rank  # type: ignore[assignment,unused-ignore]
VectorSnapshot.semantic_hits = patched_semantic  # type: ignore[method-assign]
Engine.search = patched_search  # type: ignore[method-assign]


def load_cards(folder: Path) -> dict[str, np.ndarray]:
    """{path: card vector} written by bench/embed_file_cards.py ({} when there is none)."""
    path = folder / "file_cards.npz"
    if not path.exists():
        return {}
    data = np.load(path, allow_pickle=False)
    return {str(p): v.astype(np.float32) for p, v in zip(data["paths"], data["vectors"], strict=True)}


# -- runs ------------------------------------------------------------------------------------------------


def bench_run(variants: list[Variant], index_root: Path, repos_root: Path, only: list[str] | None) -> None:
    specs = json.loads((BENCH / "repos.json").read_text())
    results: dict[str, dict[str, dict[str, list[dict[str, object]]]]] = {v.label: {} for v in variants}
    for spec in specs:
        name = spec["name"]
        if only and name not in only:
            continue
        checkout = repos_root / name
        root = checkout / spec["benchmark_root"] if spec.get("benchmark_root") else checkout
        annotations = json.loads((BENCH / "annotations" / f"{name}.json").read_text())
        queries = [t["query"] for t in annotations if t.get("repo", name) == name]
        engine = Engine(root, index_path=index_root / name)
        STATE.cards = load_cards(CARDS_ROOT / name)
        for v in variants:
            STATE.variant = v
            per: dict[str, list[dict[str, object]]] = {}
            for q in queries:
                resp = engine.search(q, top_k=10, mode=MODE)
                per[q] = [
                    {"path": r.path, "start_line": r.start_line, "end_line": r.end_line} for r in resp.results
                ]
            results[v.label][name] = per
        engine.close()
    for v in variants:
        out = Path(f"/tmp/fv-{v.label}.json")
        out.write_text(json.dumps(results[v.label]))
        cmd = [sys.executable, str(BENCH / "score.py"), "--repos", str(BENCH / "repos.json")]
        cmd += ["--annotations", str(BENCH / "annotations"), "--root", str(repos_root), "--results", str(out)]
        for name in only or []:
            cmd += ["--repo", name]
        text = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        wanted = ("architecture", "semantic", "symbol", "OVERALL")
        lines = [ln.split() for ln in text.splitlines() if ln.startswith("[repo] ")]
        summary = "  ".join(f"{f[1][:4]} {f[3]}" for f in lines if f[1] in wanted)
        print(f"BENCH {v.label:<26} {summary}", flush=True)


def val_run(variants: list[Variant], sets: list[str], val: Path) -> None:
    for v in variants:
        STATE.variant = v
        parts: list[str] = []
        means: list[float] = []
        for name in sets:
            base = val / name
            engine = Engine(base / "corpus", index_path=base / "index")
            STATE.cards = load_cards(CARDS_ROOT / f"val-{name}")
            try:
                run = evaluate(engine, load_golden(base / "golden.json"), mode=MODE, label=name)
            finally:
                engine.close()
            desc = run.by_category.get("description")
            means.append(run.overall.ndcg10)
            parts.append(f"{name} {run.overall.ndcg10:.3f}" + (f" (desc {desc.ndcg10:.3f})" if desc else ""))
        print(f"VAL   {v.label:<26} mean {sum(means) / len(means):.3f}  " + "  ".join(parts), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variant", action="append", required=True)
    parser.add_argument("--top-files", type=int, default=50)
    parser.add_argument("--index-root", type=Path, default=Path.home() / ".cache" / "codebase-index-bench")
    parser.add_argument("--repos-root", type=Path, default=Path.home() / ".cache" / "bench-repos")
    parser.add_argument("--repo", action="append")
    parser.add_argument("--val", action="store_true", help="also run the validation sets")
    parser.add_argument("--val-only", action="store_true")
    parser.add_argument("--set", action="append", help="validation sets (default: all under --val-root)")
    parser.add_argument("--val-root", type=Path, default=VAL, help="folder of validation sets")
    args = parser.parse_args()
    variants = [parse_variant(t, args.top_files) for t in args.variant]
    if not args.val_only:
        bench_run(variants, args.index_root, args.repos_root, args.repo)
    if args.val or args.val_only:
        sets = args.set or sorted(p.name for p in args.val_root.iterdir() if (p / "golden.json").is_file())
        val_run(variants, sets, args.val_root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
