"""`make train-embedder`: fit the static code embedding model on mined pairs and write its model folder.

    python training/train_embedder.py fit --pairs ~/.cache/codebase-index-train/pairs \\
        --repos training/repos.json --out python/codebase_index/embeddings/code-static
    python training/train_embedder.py eval MODEL_DIR --pairs ... --repos ...   # validation, pure cosine

The initial table is MiniLM's input token embeddings (the same WordPiece vocabulary; Apache-2.0), or a
seeded random one (`--init random`, what the fixture test uses). Training reads only pairs of repositories
marked `"split": "train"` in the manifest; `eval` scores the `"validation"` ones (pure-cosine retrieval
among each repository's own chunks, per pair kind) for the model given and, with `--baseline`, the
untrained table and MiniLM itself.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import static_model as sm

STATIC_NAME = "code-static-v2"


def minilm_dir() -> Path:
    from codebase_index.embeddings.minilm import default_model_dir

    return default_model_dir()


def split_files(pairs_dir: Path, repos: Path, split: str) -> list[Path]:
    """The pair files of the manifest's repositories in `split`, in manifest order."""
    entries = json.loads(repos.read_text(encoding="utf-8"))
    names = [e["repo"].replace("/", "+") for e in entries if e.get("split", "train") == split]
    return [pairs_dir / f"{n}.jsonl" for n in names if (pairs_dir / f"{n}.jsonl").is_file()]


def initial_table(kind: str, vocab: int, dims: int, seed: int) -> np.ndarray:
    if kind == "minilm":
        from codebase_index.embeddings.safetensors_reader import read_safetensors

        table = np.array(
            read_safetensors(minilm_dir() / "model.safetensors")["embeddings.word_embeddings.weight"]
        )
        return table.astype(np.float32)
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((vocab, dims)) / np.sqrt(dims)).astype(np.float32)


def parse_caps(specs: Sequence[str]) -> dict[str, float]:
    """`KIND=SHARE` specs (`ident=0.25`) as {kind: share}; the shares of all capped kinds sum below 1."""
    caps: dict[str, float] = {}
    for spec in specs:
        kind, sep, value = spec.partition("=")
        share = float(value) if sep else -1.0
        if not kind or not 0.0 < share < 1.0:
            raise SystemExit(f"--kind-cap wants KIND=SHARE with 0 < SHARE < 1, got {spec!r}")
        caps[kind] = share
    if sum(caps.values()) >= 1.0:
        raise SystemExit("--kind-cap shares must sum below 1")
    return caps


def cap_targets(counts: dict[str, int], caps: dict[str, float]) -> dict[str, int]:
    """How many pairs of each kind to keep so that each capped kind is at most its share of the result.
    A capped kind that is already under its share is kept whole (and counts as uncapped)."""
    binding = {k: s for k, s in caps.items() if counts.get(k, 0) > 0}
    while True:
        free = sum(n for k, n in counts.items() if k not in binding)
        total = free / (1.0 - sum(binding.values())) if binding else float(free)
        loose = {k for k, s in binding.items() if counts[k] <= s * total}
        if not loose:
            break
        binding = {k: s for k, s in binding.items() if k not in loose}
    return {k: (int(binding[k] * total) if k in binding else n) for k, n in counts.items()}


def _rng(seed: int, *parts: str) -> np.random.Generator:
    return np.random.default_rng([seed, *(zlib.crc32(p.encode()) for p in parts)])


def _keep(members: list[int], keep: int, rng: np.random.Generator) -> list[int]:
    return members if keep >= len(members) else sorted(rng.permutation(members)[:keep].tolist())


def mix(
    pairs: list[sm.Pair], caps: dict[str, float], max_per_repo: int, seed: int
) -> tuple[list[sm.Pair], dict[str, Any]]:
    """The data mix: at most `max_per_repo` pairs per repository (a seeded sample, kinds in proportion),
    then each capped kind down to its share of the whole, taken from every repository in the same
    proportion (a seeded sample per repository and kind; the rounding remainder goes to the largest
    repositories). Pairs keep their file order; the same seed gives the same pairs."""
    by_repo: dict[str, list[int]] = defaultdict(list)
    for i, pair in enumerate(pairs):
        by_repo[pair.repo].append(i)
    kept: list[int] = []
    for repo in sorted(by_repo):
        kept.extend(_keep(by_repo[repo], max_per_repo or len(by_repo[repo]), _rng(seed, "repo", repo)))
    kept.sort()
    counts: dict[str, int] = defaultdict(int)
    for i in kept:
        counts[pairs[i].kind] += 1
    targets = cap_targets(dict(counts), caps)
    cells: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i in kept:
        cells[(pairs[i].kind, pairs[i].repo)].append(i)
    chosen: list[int] = []
    for kind, target in sorted(targets.items()):
        keys = sorted((k for k in cells if k[0] == kind), key=lambda k: (-len(cells[k]), k[1]))
        ratio = target / counts[kind]
        quotas = {k: int(len(cells[k]) * ratio) for k in keys}
        for k in keys[: target - sum(quotas.values())]:
            quotas[k] += 1
        for k in keys:
            chosen.extend(_keep(cells[k], quotas[k], _rng(seed, "kind", *k)))
    chosen.sort()
    summary = {"kind_caps": caps, "max_per_repo": max_per_repo, "mined": len(pairs), "mixed": len(chosen)}
    return [pairs[i] for i in chosen], summary


def fit(args: argparse.Namespace) -> int:
    tokenizer_file = Path(args.tokenizer) if args.tokenizer else minilm_dir() / "tokenizer.json"
    tokenizer = sm.load_tokenizer(tokenizer_file)
    files = [Path(p) for p in args.pair_files] or split_files(Path(args.pairs), Path(args.repos), "train")
    pairs = sm.read_pairs(files)
    if args.max_pairs:
        pairs = pairs[: args.max_pairs]
    data_mix: dict[str, Any] | None = None
    if args.kind_cap or args.max_per_repo:
        pairs, data_mix = mix(pairs, parse_caps(args.kind_cap), args.max_per_repo, args.seed)
    print(f"{len(pairs)} pairs from {len(files)} files" + (f" (mix {data_mix})" if data_mix else ""))
    config = sm.TrainConfig(
        epochs=args.epochs, batch=args.batch, lr_table=args.lr, temperature=args.temperature, seed=args.seed
    )
    table = initial_table(args.init, tokenizer.get_vocab_size(), args.dims, args.seed)
    started = time.perf_counter()
    model = sm.train(pairs, tokenizer, table, config)
    kinds: dict[str, int] = {}
    languages: dict[str, int] = {}
    for p in pairs:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
        languages[p.language] = languages.get(p.language, 0) + 1
    card: dict[str, Any] = {
        "description": "Static code embedding model: one vector per WordPiece token (its weight folded in), "
        "summed and L2-normalised; trained contrastively on query -> code chunk pairs (training/).",
        "initial_table": args.init,
        "tokenizer": "all-MiniLM-L6-v2's WordPiece (uncased, Apache-2.0)",
        "training": {
            **vars(config).copy(),
            "pairs": len(pairs),
            "kinds": kinds,
            "languages": languages,
            **({"data_mix": data_mix} if data_mix else {}),
            "repositories": len({p.repo for p in pairs}),
            "seconds": round(time.perf_counter() - started, 1),
        },
        "licences": "pairs only from permissively licensed repositories; see training/repos.json",
    }
    out = sm.export(model, tokenizer_file, Path(args.out), args.name, card)
    print(f"wrote {out}")
    return 0


def evaluate(args: argparse.Namespace) -> int:
    from codebase_index.embeddings.static import StaticEmbedder

    files = [Path(p) for p in args.pair_files] or split_files(
        Path(args.pairs), Path(args.repos), "validation"
    )
    pairs = sm.read_pairs(files)
    print(f"{len(pairs)} validation pairs from {len(files)} files")
    systems: dict[str, Any] = {}
    model = StaticEmbedder(Path(args.model))
    systems[model.model_id] = model.embed_documents
    if args.baseline:
        from codebase_index.embeddings import create_embedded_provider

        minilm = create_embedded_provider(None)
        systems[minilm.model_id] = minilm.embed_documents
    results = {name: sm.retrieval_scores(fn, pairs, per_repo=args.per_repo) for name, fn in systems.items()}
    kinds = sorted({k for r in results.values() for k in r})
    print("| kind | n | " + " | ".join(results) + " |")
    print("|---|---|" + "---|" * len(results))
    for kind in kinds:
        n = next(r[kind]["n"] for r in results.values() if kind in r)
        cells = [f"{r[kind]['mrr10']:.3f}" if kind in r else "-" for r in results.values()]
        print(f"| {kind} | {n} | " + " | ".join(cells) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("fit")
    p.add_argument("pair_files", nargs="*", help="pair files (default: the manifest's train split)")
    p.add_argument("--pairs", default=str(Path.home() / ".cache/codebase-index-train/pairs"))
    p.add_argument("--repos", default=str(Path(__file__).with_name("repos.json")))
    p.add_argument("--out", required=True)
    p.add_argument("--name", default=STATIC_NAME)
    p.add_argument("--init", choices=["minilm", "random"], default="minilm")
    p.add_argument("--tokenizer", help="tokenizer.json (default: MiniLM's)")
    p.add_argument("--dims", type=int, default=384, help="width of a random initial table")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--temperature", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-pairs", type=int, default=0)
    p.add_argument(
        "--kind-cap",
        action="append",
        default=[],
        metavar="KIND=SHARE",
        help="cap a pair kind at SHARE of the pairs trained on (repeatable; seeded sample per repository)",
    )
    p.add_argument("--max-per-repo", type=int, default=0, help="at most N pairs per repository (seeded)")
    p.set_defaults(func=fit)
    p = sub.add_parser("eval")
    p.add_argument("model")
    p.add_argument("pair_files", nargs="*")
    p.add_argument("--pairs", default=str(Path.home() / ".cache/codebase-index-train/pairs"))
    p.add_argument("--repos", default=str(Path(__file__).with_name("repos.json")))
    p.add_argument("--per-repo", type=int, default=400)
    p.add_argument("--baseline", action="store_true", help="also score MiniLM")
    p.add_argument("--json")
    p.set_defaults(func=evaluate)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
