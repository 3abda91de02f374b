"""Ranking features: what a candidate chunk's definition, name, path and file say about a parsed query,
and the file-level aggregates over the candidate list. Pure functions over small records (each is
unit-tested on its own); the scorer (`ranking.model`) combines them.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..bm25 import split_identifier, stem
from ..search import module_path
from .query import ParsedQuery, parse_query  # noqa: F401  (the doctests use it)


@functools.lru_cache(maxsize=1 << 16)
def _normalize_name(name: str) -> str:
    """Case-, underscore- and separator-insensitive form of an identifier: `get_user` == `getUser`."""
    return re.sub(r"[\W_]+", "", name).lower()


@functools.lru_cache(maxsize=1 << 16)
def _name_parts(name: str) -> tuple[str, ...]:
    """Lower-case parts of every identifier in a (possibly qualified) name."""
    parts: list[str] = []
    for word in re.findall(r"\w+", name):
        split = split_identifier(word)
        parts.extend(split[1:] if len(split) > 1 else split)
    return tuple(parts)


# Definition score of a name that matches the queried identifier only with its initial in the other case
# (`session()` or `command()` for "Session" or "Command"): by the conventions of most languages one is a
# type and the other a function or value, often a factory of the type. Benchmark symbol queries 0.950 ->
# 0.961 (requests Session, httpx Timeout, click Command); validation identifiers unchanged.
CASE_FOLDED_DEFINITION = 0.6


def _same_initial_case(ident: str, name: str) -> bool:
    """The first letters of the last component of `ident` and of `name` have the same case (`getUserById`
    ~ `get_user_by_id`, `$ZodError` ~ `ZodError`, not `Session` ~ `session`)."""
    first = re.search(r"[^\W\d_]", re.split(r"[.:#/]+|->", ident)[-1])
    other = re.search(r"[^\W\d_]", name)
    return first is None or other is None or first.group().isupper() == other.group().isupper()


@functools.lru_cache(maxsize=1 << 16)
def _qualified(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Components of a qualified name (`Foo::bar`, `pkg.Foo.bar`, `a->b`) as written and normalised."""
    components = tuple(c for c in re.split(r"[.:#/]+|->", name) if c)
    return components, tuple(_normalize_name(c) for c in components)


# ASCII characters `_normalize_name` drops (everything but letters and digits), for `str.translate`.
_ASCII_NON_WORD = {c: None for c in range(128) if not chr(c).isalnum()}


@functools.lru_cache(maxsize=1 << 16)
def _squashed(name: str) -> str:
    """`_normalize_name` of a whole qualified name: the concatenation of its normalised components (the
    separators `_qualified` splits on are dropped by the normalisation too). ASCII names skip the regex.
    Cached: the same chunks' symbols are candidates of query after query."""
    if name.isascii():
        return name.translate(_ASCII_NON_WORD).lower()
    return _normalize_name(name)


@functools.lru_cache(maxsize=1 << 12)
def _wanted_lasts(identifiers: tuple[str, ...]) -> tuple[str, ...]:
    """The normalised last component of each queried identifier that has one (`definition_score`)."""
    return tuple(wanted[-1] for wanted in (_qualified(ident)[1] for ident in identifiers) if wanted)


def definition_score(symbol: str, parsed: ParsedQuery) -> float:
    """1.0 when the chunk defines the queried identifier (last name component, case- and
    underscore-insensitive, but see `CASE_FOLDED_DEFINITION` for the case of its initial), 0.7 when it
    defines a member of it or its qualified tail matches (`Foo::bar` vs `Foo.bar`), else 0.

    >>> p = parse_query("Session")
    >>> definition_score("Session", p), definition_score("Session.request", p), definition_score("get", p)
    (1.0, 0.7, 0.0)
    >>> definition_score("session", p), definition_score("ConfigParser", parse_query("config_parser"))
    (0.6, 0.6)
    """
    if not symbol or not parsed.identifiers:
        return 0.0
    return definition_match(symbol, parsed.identifiers)


@functools.lru_cache(maxsize=1 << 16)
def definition_match(symbol: str, identifiers: tuple[str, ...]) -> float:
    """`definition_score` of a symbol against the query's identifiers. Cached: the rank stage scores each
    candidate and the guarantees ask again for the same ones (`pipeline.guaranteed_first`)."""
    # Every match below needs some wanted last name equal to one of the symbol's normalised components,
    # hence inside their concatenation (`_squashed`): most candidates fail that cheap test (a first query
    # on the stdlib spent 0.33 ms of its 0.88 ms rerank splitting and normalising symbols it then rejected).
    squashed = _squashed(symbol)
    if not any(last in squashed for last in _wanted_lasts(identifiers)):
        return 0.0
    components, normalized = _qualified(symbol)
    if not components:
        return 0.0
    last = normalized[-1]
    best = 0.0
    for ident in identifiers:
        wanted = _qualified(ident)[1]
        if not wanted:
            continue
        if wanted[-1] == last and (len(wanted) == 1 or normalized[-len(wanted) :] == wanted):
            if _same_initial_case(ident, components[-1]):
                return 1.0
            best = max(best, CASE_FOLDED_DEFINITION)
            continue
        if wanted[-1] == last or wanted[-1] in normalized[:-1]:
            best = max(best, 0.7)
    return best


def stem_overlap(name: str, parsed: ParsedQuery) -> float:
    """Share of the query's content stems found among a name's identifier parts (stemmed):
    `parse config` ~ `parseConfig`, `ConfigParser`, `config_parser`.

    >>> stem_overlap("ConfigParser", parse_query("parse config"))
    0.5
    >>> stem_overlap("parse_config", parse_query("parse config"))
    1.0
    """
    if not name or not parsed.stems:
        return 0.0
    return len(parsed.stems & _name_stems(name)) / len(parsed.stems)


@functools.lru_cache(maxsize=1 << 16)
def _name_stems(name: str) -> frozenset[str]:
    """Stems of a name's identifier parts; cached: a search asks for ~100 names, repeated across searches."""
    return frozenset(stem(p) for p in _name_parts(name))


@functools.lru_cache(maxsize=1 << 14)
def _path_parts(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """Stems of the module name (the file name without extension, or the folder of a module root such as
    `mod.rs`: see `search.module_path`) and of the directories above it."""
    head, base = module_path(path)
    return (
        frozenset(stem(p) for p in _name_parts(base)),
        frozenset(stem(p) for p in _name_parts(head)) if head else frozenset(),
    )


@functools.lru_cache(maxsize=1 << 10)
def _abbreviation_heads(stems: frozenset[str]) -> dict[str, frozenset[str]]:
    """Per stem of 5+ letters, the prefixes a path part abbreviating it may be: a code abbreviation of a
    word is a prefix of at least 3 letters, 2+ letters shorter (`impl` ~ implementations, `ser` ~
    serialization; `cfg` is not caught). Per query, so that each file costs one set test per word.
    Prefixes stop at `_MAX_HEAD` letters: every prefix of a long word would cost its length squared
    (a 10k-letter word took 237 MB), and no path part abbreviates with that many."""
    return {
        s: frozenset(s[:k] for k in range(3, min(len(s) - 1, _MAX_HEAD + 1))) for s in stems if len(s) >= 5
    }


_MAX_HEAD = 40


@functools.lru_cache(maxsize=1 << 10)
def _path_words(
    stems: frozenset[str], compounds: tuple[tuple[str, frozenset[str]], ...], abbreviation: bool
) -> frozenset[str]:
    """Every path part that can score for a query: its stems, its compounds and (with `abbreviation`)
    their abbreviations. A path with none of them scores 0 (`path_score` answers it with one set test)."""
    heads = _abbreviation_heads(stems).values() if abbreviation else ()
    return stems.union(*heads, (joined for joined, _ in compounds))


def path_score(
    path: str,
    parsed: ParsedQuery,
    abbreviation: float = 0.0,
    weights: Mapping[str, float] | None = None,
) -> float:
    """How well the file path names the query's subject: query stems in the file name count fully,
    in directory names half, and `abbreviation` times that when a path part only abbreviates the
    word (`impls.rs` for "implementations"); words a path part spells as one (`realip.go` for "real
    IP", see `_compounds`) count as found there. The result is the matched share of the query's stems,
    each stem counted by `weights` when given (see `path_stem_weights`; missing stems count 1.0).
    Compounds: benchmark hybrid 0.8519 -> 0.8535, keyword 0.8079 -> 0.8085; validation unchanged.

    >>> path_score("src/requests/sessions.py", parse_query("how sessions persist"))
    0.5
    >>> path_score("lib/router/layer.js", parse_query("router middleware"))
    0.25
    >>> path_score("lib/router/index.js", parse_query("router middleware"))  # a module root
    0.5
    >>> path_score("src/ser/impls.rs", parse_query("implementations"), abbreviation=0.5)
    0.5
    >>> path_score("middleware/realip.go", parse_query("real IP headers"))
    0.6666666666666666
    """
    if not parsed.stems:
        return 0.0
    name_stems, dir_stems = _path_parts(path)
    words = _path_words(parsed.stems, parsed.compounds, bool(abbreviation))
    if words.isdisjoint(name_stems) and words.isdisjoint(dir_stems):
        return 0.0  # what the loop below returns for such a path, without it
    prefixes = _abbreviation_heads(parsed.stems) if abbreviation else {}
    in_name: set[str] = set()
    in_dir: set[str] = set()
    for joined, run in parsed.compounds:
        if joined in name_stems:
            in_name |= run
        elif joined in dir_stems:
            in_dir |= run
    total = 0.0
    norm = 0.0
    for s in parsed.stems:
        w = 1.0 if weights is None else weights.get(s, 1.0)
        norm += w
        if s in name_stems or s in in_name:
            total += w
        elif s in dir_stems or s in in_dir:
            total += 0.5 * w
        elif abbreviation and (heads := prefixes.get(s)) is not None:
            if not heads.isdisjoint(name_stems):
                total += abbreviation * w
            elif not heads.isdisjoint(dir_stems):
                total += 0.5 * abbreviation * w
    return total / norm if norm > 0 else 0.0


_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|testing|spec|specs|e2e|fixtures?|testdata|mocks?)(/|$)"
    r"|(^|/)(test_[^/]*|conftest\.py)$|(_test|_spec|\.test|\.spec|Tests?|Spec)\.\w+$"
)
_EXAMPLE_PATH = re.compile(r"(^|/)_?(examples?|samples?|demos?|benchmarks?|bench|playground|scripts)(/|$)")
_VENDOR_PATH = re.compile(r"(^|/)(vendor|vendored|third_party|thirdparty|external|deps|node_modules)(/|$)")
_COMPAT_PATH = re.compile(r"(^|/)(_?compat\w*|legacy|deprecated)(/|\.|$)")
_DOC_EXTENSIONS = (".md", ".mdx", ".rst", ".txt", ".adoc")
_DOC_PATH = re.compile(r"(^|/)(docs?|documentation)(/|$)")


@dataclass(frozen=True)
class Penalties:
    """Multipliers (< 1 demotes) for files that are rarely the answer to an implementation question."""

    test: float = 0.55
    example: float = 0.6
    vendor: float = 0.6
    compat: float = 0.75
    stub: float = 0.7
    doc: float = 0.6
    superseded: float = 0.6  # old-version copies (`superseded_dirs`): keyword 0.8053 -> 0.8102
    # Private modules behind a public one (`shadowed_private`): benchmark hybrid 0.8640 -> 0.8652.
    shadowed: float = 0.6


def file_penalty(path: str, parsed: ParsedQuery, penalties: Penalties | None = None) -> float:
    """Multiplier for the file kind unless the query asks for that kind (a query about tests is not
    penalised for finding tests). Penalties of several kinds multiply.

    >>> file_penalty("tests/test_api.py", parse_query("session cookies"))
    0.55
    >>> file_penalty("tests/test_api.py", parse_query("session cookie tests"))
    1.0
    >>> file_penalty("src/api.py", parse_query("session cookies"))
    1.0
    >>> file_penalty("pkg/more.pyi", parse_query("chunked")), file_penalty("types/a.d.ts", parse_query("x"))
    (0.7, 0.7)
    """
    pen = penalties or Penalties()
    test, example, vendor, compat, stub, doc = _file_kinds(path)
    factor = 1.0
    if test and not parsed.wants_tests:
        factor *= pen.test
    if example and not parsed.wants_examples:
        factor *= pen.example
    if vendor:
        factor *= pen.vendor
    if compat:
        factor *= pen.compat
    if stub:
        factor *= pen.stub
    if doc and not parsed.wants_docs:
        factor *= pen.doc
    return factor


# Declaration-only files: TypeScript declarations and Python type stubs repeat an implementation's names and
# signatures (so both retrievers like them) without its code.
_STUB_SUFFIXES = (".d.ts", ".d.mts", ".d.cts", ".pyi")


@functools.lru_cache(maxsize=1 << 16)
def _file_kinds(path: str) -> tuple[bool, bool, bool, bool, bool, bool]:
    """(test, example, vendored, compat shim, declaration stub, docs) for a path; cached, paths repeat."""
    lower = path.lower()
    return (
        bool(_TEST_PATH.search(path)),
        bool(_EXAMPLE_PATH.search(lower)),
        bool(_VENDOR_PATH.search(lower)),
        bool(_COMPAT_PATH.search(lower)),
        lower.endswith(_STUB_SUFFIXES),
        lower.endswith(_DOC_EXTENSIONS) or bool(_DOC_PATH.search(lower)),
    )


_VERSION_DIR = re.compile(r"v(\d+)")


def superseded_dirs(paths: Iterable[str]) -> frozenset[str]:
    """Version folders (`v1/`, `v3/`) that hold an older copy of code kept for compatibility, as
    "dir/" prefixes: `vN` is superseded when a sibling `vM` with M > N exists, or when it is the only
    version folder there and most of its (3 or more) file names also exist directly in its parent
    (`pydantic/v1/fields.py` beside `pydantic/fields.py`). Queries about the current API rarely want
    those copies.

    >>> sorted(superseded_dirs(["src/v3/types.ts", "src/v4/types.ts", "src/index.ts"]))
    ['src/v3/']
    >>> sorted(superseded_dirs(["pkg/v1/a.py", "pkg/v1/b.py", "pkg/v1/c.py", "pkg/a.py", "pkg/b.py"]))
    ['pkg/v1/']
    >>> sorted(superseded_dirs(["api/v1/users.go", "api/handler.go"]))
    []
    """
    files_in: dict[str, set[str]] = {}
    versions: dict[str, dict[str, int]] = {}  # parent -> {version dir name: N}
    for path in paths:
        head, _, name = path.rpartition("/")
        files_in.setdefault(head, set()).add(name)
        parts = path.split("/")[:-1]
        for i, part in enumerate(parts):
            if (m := _VERSION_DIR.fullmatch(part)) is not None:
                versions.setdefault("/".join(parts[:i]), {})[part] = int(m.group(1))
    out: set[str] = set()
    for parent, found in versions.items():
        newest = max(found.values())
        for part, n in found.items():
            folder = f"{parent}/{part}" if parent else part
            if n < newest:
                out.add(folder + "/")
                continue
            own = files_in.get(folder, set())
            if len(found) == 1 and len(own) >= 3 and len(own & files_in.get(parent, set())) * 2 >= len(own):
                out.add(folder + "/")
    return frozenset(out)


def shadowed_private(paths: Iterable[str]) -> frozenset[str]:
    """Private modules that implement a public module of the same name: `_x.ext` or `_x_impl.ext`
    (anywhere, e.g. `_internal/_fields.py`) when a public `x.ext` exists (`fields.py`). Questions about
    the feature name the public module, the entry point users read; its private twin is the detail
    behind it. A package whose modules are all private (`httpx/_client.py`) has no twins.

    >>> sorted(shadowed_private(["pkg/fields.py", "pkg/_internal/_fields.py", "pkg/_internal/_utils.py"]))
    ['pkg/_internal/_fields.py']
    >>> sorted(shadowed_private(["click/termui.py", "click/_termui_impl.py", "click/__init__.py"]))
    ['click/_termui_impl.py']
    >>> sorted(shadowed_private(["httpx/_client.py", "httpx/_models.py"]))
    []
    """
    names: dict[str, list[str]] = {}
    for path in paths:
        names.setdefault(path.rpartition("/")[2], []).append(path)
    public = {name for name in names if not name.startswith("_")}
    out: set[str] = set()
    for name, where in names.items():
        if not name.startswith("_") or name.startswith("__"):
            continue
        bare = name.lstrip("_")
        base, dot, ext = bare.partition(".")
        if bare in public or (base.endswith("_impl") and f"{base[:-5]}{dot}{ext}" in public):
            out.update(where)
    return frozenset(out)


def path_stem_weights(paths: Sequence[str]) -> dict[str, float]:
    """How much each stem found in the paths counts in `path_score`: the square root of its BM25 idf over
    the files (name and folder stems) relative to the idf of a stem no path has. A word most paths
    share (the project's own name: "trpc" in `initTRPC.ts`, a `src` folder) says little about which
    file a query means; a stem absent from the map counts 1.0. Benchmark hybrid 0.8715 -> 0.8736 (18
    repos >= semble: monolog -0.008 -> +0.001; trpc -0.029 -> -0.011), keyword 0.8399 -> 0.8408;
    validation MEAN hybrid 0.9375 -> 0.9385, keyword 0.9434 -> 0.9435. The plain ratio (no root):
    0.8743 but keyword mode 0.8383; its square: 0.8708.

    >>> w = path_stem_weights(["pkg/a.py", "pkg/b.py", "pkg/router.py", "pkg/c.py"])
    >>> round(w["router"], 2), round(w["pkg"], 2)
    (0.72, 0.21)
    """
    df: dict[str, int] = {}
    for path in paths:
        name, dirs = _path_parts(path)
        for s in name | dirs:
            df[s] = df.get(s, 0) + 1
    n = len(paths)
    unseen = math.log(1.0 + (n + 0.5) / 0.5)
    return {s: math.sqrt(math.log(1.0 + (n - d + 0.5) / (d + 0.5)) / unseen) for s, d in df.items()}


def file_coherence(chunk_scores: Sequence[float], max_chunks: int) -> float:
    """Support from a file's other matching chunks: the mean of its next-best `max_chunks` normalised
    chunk scores after the best (0 for a file with one matching chunk).

    >>> file_coherence([1.0, 0.5, 0.5], 3)
    0.3333333333333333
    >>> file_coherence([0.9], 3)
    0.0
    """
    if max_chunks <= 0 or len(chunk_scores) < 2:
        return 0.0
    rest = sorted(chunk_scores, reverse=True)[1 : 1 + max_chunks]
    return sum(rest) / max_chunks


def file_mass(by_file: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Each file's total candidate score relative to the largest total (0..1): the file the candidate
    list as a whole points at, however its evidence is split into chunks.

    >>> file_mass({"a.py": [1.0, 0.5], "b.py": [0.75]})
    {'a.py': 1.0, 'b.py': 0.5}
    """
    sums = {path: sum(vals) for path, vals in by_file.items()}
    top = max(sums.values(), default=0.0)
    return {path: (s / top if top > 0 else 0.0) for path, s in sums.items()}
