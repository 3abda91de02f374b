"""Validation sets (bench/make_validation_set.py) with and without the embedding header
(`embedder.EMBED_HEADER`): copies each set's text-only index to `index-hdr` once, embeds it with the
header, then evaluates hybrid and semantic search on both indexes and prints file-level nDCG@10 per
query style. The text-only indexes are only read.

Usage: python bench/header_validation.py [--val /tmp/val] [--set py --set ts ...] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from codebase_index import embedder
from codebase_index.evaluation import evaluate, load_golden
from codebase_index.service import Engine

MODES = ("hybrid", "semantic")


def run_set(base: Path, header: bool) -> dict[str, dict[str, float]]:
    """{mode/style: nDCG@10 (file level)} for one validation set and one variant."""
    embedder.EMBED_HEADER = header
    index = base / ("index-hdr" if header else "index")
    if header and not index.exists():
        shutil.copytree(base / "index", index)
    engine = Engine(base / "corpus", index_path=index)
    try:
        if header:
            t0 = time.perf_counter()
            report = engine.embed()
            if report is not None and report.embedded:
                print(f"  embedded {report.embedded} in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
        status = engine.status().embeddings
        if status is None or status.embedded != status.total:
            raise SystemExit(f"{index}: embeddings incomplete ({status})")
        golden = load_golden(base / "golden.json")
        out: dict[str, dict[str, float]] = {}
        for mode in MODES:
            run = evaluate(engine, golden, mode=mode, label=f"{base.name}-{mode}")
            out[f"{mode}/ALL"] = {"file": run.overall.ndcg10, "chunk": run.overall.chunk_ndcg10}
            for style, summary in run.by_category.items():
                out[f"{mode}/{style}"] = {"file": summary.ndcg10, "chunk": summary.chunk_ndcg10}
        return out
    finally:
        engine.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--val", type=Path, default=Path("/tmp/val"))
    parser.add_argument("--set", action="append", help="only these sets (py, js, ts, go); repeatable")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "header-val.json")
    args = parser.parse_args()
    names = args.set or ["py", "ts", "go", "js"]
    results: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for name in names:
        base = args.val / name
        print(f"{name}:", file=sys.stderr)
        results[name] = {"text": run_set(base, False), "header": run_set(base, True)}
        for key in results[name]["text"]:
            a, b = results[name]["text"][key], results[name]["header"][key]
            print(
                f"{name:<3} {key:<22} file {a['file']:.3f} -> {b['file']:.3f} ({b['file'] - a['file']:+.3f})"
                f"   chunk {a['chunk']:.3f} -> {b['chunk']:.3f} ({b['chunk'] - a['chunk']:+.3f})",
                flush=True,
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
