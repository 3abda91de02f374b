"""Build the ranker's training, validation and change-description evaluation sets (issue 12) from the
repositories in bench/training_repos.json (none reserved; disjoint by repository across the splits).

Each repository comes from a bare mirror the `fetch` tool brought (MIRRORS/<owner>+<name>/repo), pinned
to the commit in training_repos.json. Per repository, under OUT/repos/<owner>+<name>/:
  corpus/          the pinned tree (git archive), with the docstrings of the description queries blanked
  golden.json      queries over corpus/ in eight styles (make_validation_set.py's four plus pasted
                   errors, renamed snippets, relation questions, see training_styles.py)
  index/           our engine's index of corpus/ (keyword + code graph; embeddings by --phase embed)
  changes/         a git clone whose branch cd-<parent12> is the PARENT snapshot of each chosen commit
  changes.json     change descriptions: commit subject -> the non-test files it modified, with the branch
                   to check out ("branch") before searching changes/ with index changes-index/
  changes-index/   one index, one catalog per cd-* branch (content-addressed, so snapshots share chunks)
OUT/manifest.json lists every repository (split, language, commit, paths) and the counts per style x
language x split; OUT/README.md says how to use it. Golden files are what
codebase_index.evaluation.load_golden reads; extra keys (style, language, repo, commit, parent, branch)
are a superset it ignores.

Usage:
    python bench/make_training_set.py --mirrors /work/.mirror [--out ~/.cache/codebase-index-train]
        [--phase generate|index|relations|changes|embed|manifest|all] [--split train ...] [--repo NAME ...]
Phases run in that order and each is resumable (a repository whose output exists is skipped unless
--force). Everything is seeded by --seed and the repository name.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import make_validation_set as mvs
import training_styles as ts

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = Path.home() / ".cache" / "codebase-index-train"
# ../shared/bench/reserved.txt of the main checkout; a worktree (/work/wt/NAME) finds it further up.
RESERVED = next(
    (p / "shared" / "bench" / "reserved.txt" for p in HERE.parents if (p / "shared" / "bench").is_dir()),
    HERE.parent.parent / "shared" / "bench" / "reserved.txt",
)
ALL_LANGUAGES = mvs.LANGUAGES | mvs.MORE_LANGUAGES
# Paths whose code is not the project's own (queries are never generated from them; they stay indexed).
_NOT_OWN = re.compile(
    r"(^|/)(vendor|vendored|third_party|thirdparty|external|deps|node_modules|dist|build|out|target|"
    r"examples?|samples?|benchmarks?|bench|docs?|site|website|scripts?|tools|fuzz|contrib)(/|$)"
    r"|\.min\.js$|\.d\.ts$|\.generated\.|_pb2\.py$|\.pb\.go$"
)
# Queries per style per repository (sampled, seeded); change descriptions per split.
CAPS = {
    "description": 200,
    "identifier": 200,
    "error": 80,
    "error_pasted": 120,
    "snippet": 150,
    "snippet_renamed": 150,
    "relation": 150,
}
CHANGES = {"train": 40, "validation": 40, "eval": 40}
CHANGE_WINDOW = {"train": 800, "validation": 800, "eval": 2000}
MAX_FILE_BYTES = 300_000
# Test code inside source files: Rust's `mod tests`, `test_*` functions.
_TEST_SYMBOL = re.compile(r"#(.*\.)?(tests?|test_\w*|Test\w*)(\.|$)")


def slug(repo: str) -> str:
    return repo.replace("/", "+")


def language_of(path: str, primary: str) -> str | None:
    """The parser for a file; `.h` follows the repository (C++ projects keep C++ in headers)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".h" and primary == "cpp":
        return "cpp"
    return ALL_LANGUAGES.get(suffix)


def is_test(rel: str) -> bool:
    return bool(mvs._TEST.search(rel.lower()))


def query_file(rel: str, primary: str) -> bool:
    """A file the queries may target: the project's own non-test source in a supported language."""
    return language_of(rel, primary) is not None and not is_test(rel) and not _NOT_OWN.search(rel.lower())


def load_reserved(path: Path) -> set[str]:
    if not path.is_file():  # without the list nothing can be checked: refuse rather than skip the check
        raise SystemExit(f"{path}: the reserved-repository list is missing (give --reserved)")
    lines = path.read_text().splitlines()
    return {line.strip().lower() for line in lines if line.strip() and not line.startswith("#")}


def check_reserved(specs: list[dict[str, Any]], reserved: set[str]) -> None:
    """Refuse a reserved repository (or one whose name matches a reserved repository's name)."""
    names = {r.split("/")[-1] for r in reserved}
    for spec in specs:
        repo = spec["repo"].lower()
        if repo in reserved or repo.split("/")[-1] in names:
            raise SystemExit(f"{spec['repo']} is reserved for evaluation (or shares a reserved repo's name)")


def git(*args: str, cwd: Path | None = None) -> str:
    out = subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, errors="replace"
    )
    return out.stdout


# ------------------------------------------------------------------ phase: generate (static styles)


def generate(spec: dict[str, Any], mirror: Path, base: Path, seed: int) -> dict[str, Any]:
    """Materialise the pinned tree and write golden.json with every style but relations."""
    rng = random.Random(f"{seed}:{spec['repo']}")
    primary = spec["language"]
    corpus = base / "corpus"
    if corpus.exists():
        shutil.rmtree(corpus)
    corpus.mkdir(parents=True)
    missing = export_tree(mirror, spec["commit"], corpus)
    files: list[tuple[Path, str, str]] = []
    for path in sorted(corpus.rglob("*")):
        rel = path.relative_to(corpus).as_posix()
        if path.is_file() and query_file(rel, primary) and path.stat().st_size <= MAX_FILE_BYTES:
            files.append((path, rel, language_of(rel, primary) or ""))
    styles = mvs.collect(files, rng)
    defs: list[mvs.Definition] = []
    for path, rel, language in files:
        try:
            defs += mvs.parse_file(path, rel, language)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
    lang_by_path = {rel: language for _, rel, language in files}
    styles["error_pasted"] = []
    styles["snippet_renamed"] = []
    for d in defs:
        target = {"path": d.path, "start_line": d.start, "end_line": d.end}
        language = lang_by_path[d.path]
        if d.errors:
            i = rng.randrange(len(d.errors))
            query = ts.pasted_error(d.errors[i], d.error_kinds[i], language, rng)
            styles["error_pasted"].append({"query": query, "relevant": [target], "_def": d})
        if d.body and (snip := mvs._snippet(d.body, rng)) and (renamed := ts.rename_snippet(snip, rng)):
            styles["snippet_renamed"].append({"query": renamed, "relevant": [target], "_def": d})
    golden: list[dict[str, Any]] = []
    blanked: dict[str, list[tuple[int, int]]] = {}
    raising = [(d, d.errors) for d in defs if d.errors]
    for style in CAPS:
        items = list({str(i["query"]): i for i in styles.get(style, [])}.values())
        for item in rng.sample(items, min(CAPS[style], len(items))):
            d = item.pop("_def")
            if style == "description" and d.doc is not None:
                blanked.setdefault(d.path, []).append((d.doc[0], d.doc[1]))
            relevant: Any = item["relevant"]
            if style in ("error", "error_pasted"):
                relevant = relevant + error_targets(str(item["query"]), d, raising)
            golden.append(_entry(spec, style, item["query"], relevant, lang_by_path[d.path]))
    for path, rel, language in files:
        if rel in blanked:
            text = path.read_text(encoding="utf-8", errors="replace")
            path.write_text(mvs._blank_docs(text, blanked[rel], language), encoding="utf-8")
    (base / "golden.json").write_text(json.dumps(golden, indent=1))
    return {"files": len(files), "definitions": len(defs), "queries": len(golden), "missing_blobs": missing}


def error_targets(
    query: str, target: mvs.Definition, raising: list[tuple[mvs.Definition, list[str]]]
) -> list[dict[str, Any]]:
    """The other definitions raising the message the query pastes (whole, or the part pasted): a message
    several definitions raise ("n must be at least 1") is answered by any of them, not only by the one
    the query was drawn from."""
    part = max((ts.pasted_part(query, e) for e in target.errors), key=len, default="")
    at = (target.path, target.start, target.end)
    others = [d for d in ts.same_message_raisers(part, raising) if (d.path, d.start, d.end) != at]
    return [{"path": d.path, "start_line": d.start, "end_line": d.end} for d in others]


def export_tree(mirror: Path, commit: str, dest: Path) -> int:
    """Write the tree of `commit` under `dest`; blobs the snapshot lacks (files >= 4 MiB) are left out
    and counted (`git archive` refuses such a tree, so it is written blob by blob then)."""
    archive = subprocess.run(["git", "--git-dir", str(mirror), "archive", commit], capture_output=True)
    if archive.returncode == 0:
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
        return 0
    listing = subprocess.run(
        ["git", "--git-dir", str(mirror), "ls-tree", "-r", "-z", commit], check=True, capture_output=True
    ).stdout.decode("utf-8", "replace")
    blobs = []
    for item in listing.split("\0"):
        meta, _, path = item.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob" and parts[0] != "120000":
            blobs.append((parts[2], path))
    batch = subprocess.run(
        ["git", "--git-dir", str(mirror), "cat-file", "--batch"],
        input="".join(f"{sha}\n" for sha, _ in blobs).encode(),
        check=True,
        capture_output=True,
    ).stdout
    missing, pos = 0, 0
    for _sha, path in blobs:
        end = batch.index(b"\n", pos)
        header = batch[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[1] == b"missing":
            missing += 1
            continue
        size = int(header[2])
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(batch[pos : pos + size])
        pos += size + 1
    return missing


def _entry(
    spec: dict[str, Any], style: str, query: str, relevant: list[Any], language: str
) -> dict[str, Any]:
    return {
        "query": query,
        "relevant": relevant,
        "category": style,
        "style": style,
        "language": language,
        "repo": spec["repo"],
    }


# ------------------------------------------------------------------ phase: index / relations / embed


def index_corpus(base: Path) -> dict[str, Any]:
    from codebase_index.service import Engine

    engine = Engine(base / "corpus", index_path=base / "index")
    try:
        t0 = time.perf_counter()
        report = engine.index()
        return {"files": report.files, "chunks": report.chunks, "seconds": round(time.perf_counter() - t0, 1)}
    finally:
        engine.close()


def relations(spec: dict[str, Any], base: Path, seed: int) -> int:
    """Add "who calls X" questions to golden.json: X a uniquely named function with 1-5 resolved
    callers in our code graph; the targets are the callers' definitions."""
    from codebase_index.graph.query import call_graph
    from codebase_index.graph.records import MODULE_CALLER
    from codebase_index.graph.store import GraphStore
    from codebase_index.service import Engine

    rng = random.Random(f"{seed}:{spec['repo']}:relation")
    golden = [g for g in json.loads((base / "golden.json").read_text()) if g["style"] != "relation"]
    engine = Engine(base / "corpus", index_path=base / "index")
    try:
        engine.finish_graph()
        store = GraphStore(engine.store.conn)
        branch = engine.branch()
        rows = store.conn.execute(
            """SELECT d.name, COUNT(*) FROM graph_defs d CROSS JOIN files f ON f.content_key = d.content_key
               WHERE f.branch = ? AND d.kind IN ('function', 'method') GROUP BY d.name HAVING COUNT(*) = 1""",
            (branch,),
        ).fetchall()
        names = sorted(name for name, _ in rows if len(name) >= 4 and not name.startswith("__"))
        rng.shuffle(names)
        found: list[dict[str, Any]] = []
        for name in names:
            if len(found) >= CAPS["relation"]:
                break
            graph = call_graph(store, branch, name, direction="callers")
            root = graph.roots[0] if len(graph.roots) == 1 else None
            if (
                root is None
                or not query_file(root.path, spec["language"])
                or _TEST_SYMBOL.search(root.symbol_id)
            ):
                continue
            callers: dict[tuple[str, str], set[int]] = {}
            for e in graph.edges:
                if e.caller != MODULE_CALLER:
                    callers.setdefault((e.caller_path, e.caller), set()).add(e.line)
            callers.pop((graph.roots[0].path, graph.roots[0].name), None)  # recursion is not an answer
            if not 1 <= len(callers) <= 5:
                continue
            targets: list[dict[str, Any]] = []
            for (path, qualified), lines in sorted(callers.items()):
                # An overloaded caller (Java, C#) is several definitions of one qualified name: the
                # targets are those holding a call, not the first overload.
                spans = store.definitions(branch, f"{path}#{qualified}")
                calling = [s for s in spans if any(s.start_line <= n <= s.end_line for n in lines)]
                targets += [
                    {"path": path, "start_line": s.start_line, "end_line": s.end_line}
                    for s in (calling or spans[:1])
                ]
                if not spans:
                    break
            else:
                language = language_of(graph.roots[0].path, spec["language"]) or spec["language"]
                entry = _entry(spec, "relation", ts.relation_question(name, rng), targets, language)
                entry["symbol"] = graph.roots[0].symbol_id
                found.append(entry)
    finally:
        engine.close()
    (base / "golden.json").write_text(json.dumps(golden + found, indent=1))
    return len(found)


def embed(base: Path, index_dir: str, root: str) -> int:
    from codebase_index.service import Engine

    engine = Engine(base / root, index_path=base / index_dir)
    try:
        report = engine.embed()
        return report.embedded if report is not None else 0
    finally:
        engine.close()


# ------------------------------------------------------------------ phase: changes


def changes(spec: dict[str, Any], mirror: Path, base: Path, seed: int, split: str) -> dict[str, Any]:
    """Pick commits, branch their parents in a clone and index each parent snapshot."""
    from codebase_index.service import Engine

    rng = random.Random(f"{seed}:{spec['repo']}:changes")
    primary = spec["language"]
    candidates = ts.candidate_changes(
        mirror,
        spec["commit"],
        window=CHANGE_WINDOW[split],
        is_source=lambda p: language_of(p, primary) is not None and not _NOT_OWN.search(p.lower()),
        is_test=is_test,
    )
    chosen = ts.pick_changes(candidates, CHANGES[split], rng)
    clone = base / "changes"
    if not (clone / ".git").is_dir():
        if clone.exists():
            shutil.rmtree(clone)
        git("clone", "-q", "--shared", "--no-checkout", str(mirror), str(clone))
    golden: list[dict[str, Any]] = []
    engine = Engine(clone, index_path=base / "changes-index")
    started = time.perf_counter()
    try:
        for c in chosen:
            branch = f"cd-{c.parent[:12]}"
            try:
                git("checkout", "-q", "-f", "-B", branch, c.parent, cwd=clone)
            except subprocess.CalledProcessError:  # the snapshot lacks a blob of this tree (>= 4 MiB)
                subprocess.run(["git", "branch", "-D", branch], cwd=clone, capture_output=True)  # may be HEAD
                continue
            present = [p for p in c.files if (clone / p).is_file()]
            if not present:
                continue
            engine.index(graph=False)
            entry = _entry(spec, "change", c.query, present, language_of(present[0], primary) or primary)
            entry |= {"commit": c.commit, "parent": c.parent, "branch": branch, "subject": c.subject}
            golden.append(entry)
    finally:
        engine.close()
    (base / "changes.json").write_text(json.dumps(golden, indent=1))
    return {
        "candidates": len(candidates),
        "queries": len(golden),
        "seconds": round(time.perf_counter() - started),
    }


# ------------------------------------------------------------------ manifest


def manifest(specs: list[dict[str, Any]], out: Path, seed: int) -> dict[str, Any]:
    counts: Counter[tuple[str, str, str]] = Counter()
    repos = []
    for spec in specs:
        base = out / "repos" / slug(spec["repo"])
        entry = {k: spec[k] for k in ("repo", "language", "split", "commit")}
        entry |= {
            "corpus": f"repos/{slug(spec['repo'])}/corpus",
            "index": f"repos/{slug(spec['repo'])}/index",
        }
        n = 0
        for name in ("golden.json", "changes.json"):
            path = base / name
            if path.is_file():
                for g in json.loads(path.read_text()):
                    counts[(spec["split"], g["style"], g["language"])] += 1
                    n += 1
        entry["queries"] = n
        repos.append(entry)
    table: dict[str, dict[str, dict[str, int]]] = {}
    for (split, style, language), n in sorted(counts.items()):
        table.setdefault(split, {}).setdefault(style, {})[language] = n
    totals = {split: sum(sum(v.values()) for v in styles.values()) for split, styles in table.items()}
    data = {"seed": seed, "repos": repos, "counts": table, "totals": totals}
    (out / "manifest.json").write_text(json.dumps(data, indent=1))
    lines = [
        f"# codebase-index ranker training data (seed {seed})",
        "",
        "```",
        (__doc__ or "").strip(),
        "```",
        "",
    ]
    lines += ["| split | style | language | queries |", "|---|---|---|---|"]
    for split, styles in table.items():
        for style, by_language in styles.items():
            lines += [f"| {split} | {style} | {language} | {n} |" for language, n in by_language.items()]
    lines += [
        "",
        f"Totals: {totals}",
        "",
        "| repo | split | language | commit | queries |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['repo']} | {r['split']} | {r['language']} | {r['commit'][:12]} | {r['queries']} |"
        for r in repos
    ]
    (out / "README.md").write_text("\n".join(lines) + "\n")
    return data


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--repos", type=Path, default=HERE / "training_repos.json")
    parser.add_argument("--reserved", type=Path, default=RESERVED)
    parser.add_argument(
        "--phase", action="append", help="generate, index, relations, changes, embed, manifest"
    )
    parser.add_argument("--split", action="append", help="only these splits (train, validation, eval)")
    parser.add_argument("--repo", action="append", help="only these repositories (owner/name)")
    parser.add_argument("--force", action="store_true", help="redo phases whose output exists")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    phases = args.phase or ["generate", "index", "relations", "changes", "manifest"]
    specs = json.loads(args.repos.read_text())
    check_reserved(specs, load_reserved(args.reserved))
    selected = [
        s
        for s in specs
        if (not args.split or s["split"] in args.split) and (not args.repo or s["repo"] in args.repo)
    ]
    for spec in selected:
        base = args.out / "repos" / slug(spec["repo"])
        mirror = args.mirrors / slug(spec["repo"]) / "repo"
        t0 = time.perf_counter()
        done: dict[str, Any] = {}
        if spec["split"] != "eval":
            if "generate" in phases and (args.force or not (base / "golden.json").is_file()):
                done["generate"] = generate(spec, mirror, base, args.seed)
            if "index" in phases and (args.force or not (base / "index").is_dir()):
                done["index"] = index_corpus(base)
            if "relations" in phases and (base / "index").is_dir():
                done["relations"] = relations(spec, base, args.seed)
            if "embed" in phases:
                done["embed"] = embed(base, "index", "corpus")
        if "changes" in phases and (args.force or not (base / "changes.json").is_file()):
            done["changes"] = changes(spec, mirror, base, args.seed, spec["split"])
        if "embed" in phases and spec["split"] == "eval" and (base / "changes.json").is_file():
            done["embed-changes"] = embed_changes(base)
        print(f"{spec['repo']:<36} {spec['split']:<10} {done} {time.perf_counter() - t0:.0f}s", flush=True)
    if "manifest" in phases:
        data = manifest(specs, args.out, args.seed)
        print(json.dumps(data["totals"]))
    return 0


def embed_changes(base: Path) -> int:
    """Embed every parent snapshot of changes/ (one branch at a time; shared contents embed once)."""
    total = 0
    for entry in json.loads((base / "changes.json").read_text()):
        git("checkout", "-q", "-f", entry["branch"], cwd=base / "changes")
        total += embed(base, "changes-index", "changes")
    return total


if __name__ == "__main__":
    sys.exit(main())
