"""Embed one "file card" per file (codebase_index.file_cards) for the benchmark repos and the validation
sets, for bench/file_vector_experiment.py. The indexes are only read; the card vectors go to
<cards-root>/<repo>/file_cards.npz and <cards-root>/val-<set>/file_cards.npz (paths, vectors, texts).

Usage: python bench/embed_file_cards.py [--cards-root ~/.cache/codebase-index-bench-fv] [--repo NAME ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from file_cards import CardChunk, file_card

from codebase_index.config import load_config
from codebase_index.embedder import shared_provider
from codebase_index.service import Engine

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent.parent / "shared" / "bench"
VAL = Path.home() / ".cache" / "codebase-index-val"


def _words(name: str) -> str:
    """`runtime/time/wheel/level.rs` -> `runtime time wheel level`; `Level.next_expiration` -> `level next
    expiration` (MiniLM reads words better than identifiers)."""
    import re

    from codebase_index.tokens import split_identifier

    out: list[str] = []
    for word in re.findall(
        r"[A-Za-z0-9_]+",
        name.rsplit(".", 1)[0]
        if "/" in name or (name.count(".") == 1 and name.endswith((".py", ".rs", ".go", ".ts", ".js")))
        else name,
    ):
        parts = split_identifier(word)
        out.extend(parts[1:] if len(parts) > 1 else parts)
    return " ".join(out)


def words_style(card: str) -> str:
    """The card with the path and every definition name spelled as words, kinds dropped."""
    lines = card.split("\n")
    out = [f"{_words(lines[0])} ({lines[0]})"]
    for line in lines[1:]:
        head, sep, doc = line.partition(": ")
        kind, _, symbol = head.partition(" ")
        if symbol and kind.isalpha() and kind.islower() and (sep or line == head):
            out.append(f"{_words(symbol)}{': ' + doc if doc else ''}")
        else:
            out.append(line)
    return "\n".join(out)


STYLE = "plain"


def cards_of(engine: Engine) -> dict[str, str]:
    """{path: card text} for every file of the engine's current branch."""
    rows = engine.store.conn.execute(
        "SELECT f.path, c.kind, c.symbol, c.text FROM files f JOIN chunks c ON c.content_key = f.content_key"
        " WHERE f.branch = ? ORDER BY f.path, c.ordinal",
        (engine.branch(),),
    )
    chunks: dict[str, list[CardChunk]] = {}
    for path, kind, symbol, text in rows:
        chunks.setdefault(path, []).append(CardChunk(kind, symbol, text))
    cards = {path: file_card(path, parts) for path, parts in chunks.items()}
    if STYLE == "words":
        cards = {path: words_style(card) for path, card in cards.items()}
    return cards


def embed_into(engine: Engine, out: Path) -> tuple[int, float]:
    provider = shared_provider(load_config(engine.root))
    if provider is None:
        raise SystemExit("no embedding provider")
    cards = cards_of(engine)
    paths = sorted(cards)
    t0 = time.perf_counter()
    vectors = provider.embed_documents([cards[p] for p in paths]) if paths else np.zeros((0, 384))
    seconds = time.perf_counter() - t0
    out.mkdir(parents=True, exist_ok=True)
    np.savez(
        out / "file_cards.npz",
        paths=np.array(paths),
        vectors=np.asarray(vectors, dtype=np.float32),
        texts=np.array([cards[p] for p in paths]),
    )
    return len(paths), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cards-root", type=Path, default=Path.home() / ".cache" / "codebase-index-bench-fv")
    parser.add_argument("--index-root", type=Path, default=Path.home() / ".cache" / "codebase-index-bench")
    parser.add_argument("--repos-root", type=Path, default=Path.home() / ".cache" / "bench-repos")
    parser.add_argument("--repo", action="append")
    parser.add_argument("--no-val", action="store_true")
    parser.add_argument(
        "--set-dir", type=Path, action="append", help="only this set (corpus/, index/); repeatable"
    )
    parser.add_argument("--style", choices=("plain", "words"), default="plain")
    args = parser.parse_args()
    global STYLE
    STYLE = args.style
    specs = json.loads((BENCH / "repos.json").read_text())
    targets: list[tuple[str, Path, Path]] = []
    for set_dir in args.set_dir or []:
        targets.append((f"val-{set_dir.name}", set_dir / "corpus", set_dir / "index"))
    for spec in [] if args.set_dir else specs:
        name = spec["name"]
        if args.repo and name not in args.repo:
            continue
        checkout = args.repos_root / name
        root = checkout / spec["benchmark_root"] if spec.get("benchmark_root") else checkout
        targets.append((name, root, args.index_root / name))
    if not args.no_val and not args.repo and not args.set_dir:
        for base in sorted(p for p in VAL.iterdir() if (p / "golden.json").is_file()):
            targets.append((f"val-{base.name}", base / "corpus", base / "index"))
    total, spent = 0, 0.0
    for label, root, index in targets:
        engine = Engine(root, index_path=index)
        try:
            n, seconds = embed_into(engine, args.cards_root / label)
        finally:
            engine.close()
        total += n
        spent += seconds
        print(f"{label:<12} {n:5d} cards {seconds:6.1f} s ({n / max(seconds, 1e-9):.1f}/s)", flush=True)
    print(f"total {total} cards in {spent:.0f} s ({total / max(spent, 1e-9):.1f}/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
