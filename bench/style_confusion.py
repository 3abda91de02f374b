"""Query parser check: the style `parse_query` names for each generated query, against the category the
set generated it as (make_training_set.py's golden files, and its change descriptions as "change").
Cheap (no index, no search), so run it beside validate.py for any change to ranking/style.py.

Usage:
    python bench/style_confusion.py [--train ~/.cache/codebase-index-train] [--split validation]
        [--show description:error] [--limit 40]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from codebase_index.ranking.query import STYLES, parse_query

DEFAULT_TRAIN = Path.home() / ".cache" / "codebase-index-train"


def queries(train: Path, split: str) -> list[tuple[str, str]]:
    """(category, query) for every golden query and change description of the split's repositories."""
    manifest = json.loads((train / "manifest.json").read_text())
    out: list[tuple[str, str]] = []
    for repo in manifest["repos"]:
        if repo["split"] != split:
            continue
        base = train / "repos" / repo["repo"].replace("/", "+")
        for name in ("golden.json", "changes.json"):
            if (base / name).is_file():
                out += [(q["category"], q["query"]) for q in json.loads((base / name).read_text())]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--train", type=Path, default=DEFAULT_TRAIN)
    parser.add_argument("--split", default="validation")
    parser.add_argument("--show", help="category:style whose queries to print")
    parser.add_argument("--limit", type=int, default=40)
    args = parser.parse_args()
    pairs = [(c, parse_query(q).style, q) for c, q in queries(args.train, args.split)]
    if not pairs:
        print(f"no queries for split {args.split!r} under {args.train}", file=sys.stderr)
        return 1
    counts = Counter((category, style) for category, style, _ in pairs)
    print(f"{'category':<16}" + "".join(f"{s[:10]:>11}" for s in STYLES) + f"{'total':>8}")
    for category in sorted({c for c, _, _ in pairs}):
        row = [counts[(category, s)] for s in STYLES]
        print(f"{category:<16}" + "".join(f"{n:>11}" for n in row) + f"{sum(row):>8}")
    if args.show:
        category, style = args.show.split(":")
        shown = [q for c, s, q in pairs if (c, s) == (category, style)]
        for query in shown[: args.limit]:
            print(" ", query[:200].replace("\n", "\\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
