"""Add the query styles bench/make_validation_set.py does not write to a set's golden.json, in place:

  error-extra    a pasted error message with the words users put around it ("getting X when I run it",
                 "Error: X", "why does it fail with X"), target the raising definition
  error-partial  the message cut at the start or the end (a pasted fragment), same target
  relation       "who calls NAME" / "which function calls NAME" for a function with one to three callers
                 the code graph resolved (none in tests): targets the callers' call sites

Needs the set's index with its code graph (`Engine.finish_graph`). Seeded: the same set gives the same
queries. Entries it added before are replaced. For a validation set, write beside it (`--out
golden-extra.json`) and point validate.py at that file (`--golden golden-extra.json`).
Usage: python bench/augment_training_set.py SET [SET ...] [--seed 0] [--relations 40] [--out NAME]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

from codebase_index.ranking.features import _file_kinds
from codebase_index.service import Engine

ADDED = ("error-extra", "error-partial", "relation")
EXTRA = (
    "getting {m} when I run it",
    "Error: {m}",
    "why does it fail with {m}",
    "{m} after upgrading",
    "exception {m} in production logs",
)
ASK_CALLERS = ("who calls {n}", "which function calls {n}", "callers of {n}", "where is {n} called")


def augment(base: Path, seed: int, relations: int, out: str = "golden.json") -> dict[str, int]:
    rng = random.Random(f"{seed}:{base.name}")
    golden_path = base / "golden.json"
    golden = [g for g in json.loads(golden_path.read_text()) if g.get("category") not in ADDED]
    added: list[dict[str, object]] = []
    for g in golden:
        if g.get("category") != "error":
            continue
        message = str(g["query"])
        added.append({**g, "query": rng.choice(EXTRA).format(m=message), "category": "error-extra"})
        words = message.split()
        if len(words) >= 5:
            cut = rng.randint(1, 2)
            part = words[cut:] if rng.random() < 0.5 else words[:-cut]
            added.append({**g, "query": " ".join(part), "category": "error-partial"})
    engine = Engine(base / "corpus", index_path=base / "index")
    try:
        engine.finish_graph()
        rows = engine.store.conn.execute(
            "SELECT callee_name, callee_path, callee, COUNT(DISTINCT caller_path || ':' || caller) AS n "
            "FROM graph_edges WHERE confidence != 'name' GROUP BY callee_path, callee "
            "HAVING n BETWEEN 1 AND 3 ORDER BY callee_path, callee"
        ).fetchall()
        names: dict[str, int] = {}
        for name, *_ in rows:
            names[name] = names.get(name, 0) + 1
        picked = [
            r for r in rows if names[r[0]] == 1 and len(r[0]) >= 4 and re.fullmatch(r"[A-Za-z_]\w*", r[0])
        ]
        rng.shuffle(picked)
        for name, path, qualified, _ in picked[: relations * 3]:
            if len([a for a in added if a["category"] == "relation"]) >= relations:
                break
            if any(_file_kinds(path)[:1]):
                continue
            edges = engine.store.conn.execute(
                "SELECT DISTINCT caller_path, line FROM graph_edges WHERE callee_path = ? AND callee = ? "
                "AND confidence != 'name'",
                (path, qualified),
            ).fetchall()
            targets = [{"path": p, "start_line": n, "end_line": n} for p, n in edges if not _file_kinds(p)[0]]
            if not targets or all(t["path"] == path for t in targets):
                continue
            query = rng.choice(ASK_CALLERS).format(n=name)
            added.append({"query": query, "relevant": targets, "category": "relation"})
    finally:
        engine.close()
    (base / out).write_text(json.dumps(golden + added, indent=1))
    counts: dict[str, int] = {}
    for a in added:
        counts[str(a["category"])] = counts.get(str(a["category"]), 0) + 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sets", nargs="+", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--relations", type=int, default=40)
    parser.add_argument(
        "--out", default="golden.json", help="file name written in each set (default: in place)"
    )
    args = parser.parse_args()
    for base in args.sets:
        print(base.name, augment(base, args.seed, args.relations, args.out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
