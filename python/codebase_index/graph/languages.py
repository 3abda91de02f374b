"""Per-language table: grammar, query files and the few facts the resolver needs about each language."""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from tree_sitter import Language, Parser, Query
from tree_sitter_language_pack import get_language, get_parser


@dataclass(frozen=True)
class LanguageSpec:
    """What extraction and resolution need to know about one language."""

    name: str
    grammar: str
    query_files: tuple[str, ...]
    # Receivers that denote the enclosing class/impl (`self.m()`, `this.m()`).
    self_names: frozenset[str]
    # Receivers that denote the parent class (`super().m()`, `super.m()`).
    super_names: frozenset[str]
    # Separator of static paths in receivers: `pkg.f`, `Foo::new`.
    path_sep: str
    # Bare calls resolve in the enclosing class too (Java `helper()` == `this.helper()`).
    implicit_this: bool
    # Files in one directory with one package share their top-level names (Go, Java packages).
    package_scope: bool
    # Names that are never the repo's own code when nothing in the file binds them.
    builtins: frozenset[str]
    # A bare call that is neither local nor imported cannot reach another file (Go: same package only).
    bare_calls_need_binding: bool = False


def _words(spaced: str) -> frozenset[str]:
    return frozenset(spaced.split())


_PY_BUILTINS = frozenset(n for n in dir(builtins) if not n.startswith("_")) | {"__import__"}
_JS_GLOBALS = _words(
    "require console Object Array JSON Math Promise String Number Boolean Symbol Date Error TypeError "
    "RangeError RegExp Map Set WeakMap WeakSet Reflect Proxy BigInt parseInt parseFloat isNaN isFinite "
    "setTimeout clearTimeout setInterval clearInterval setImmediate queueMicrotask structuredClone "
    "encodeURIComponent decodeURIComponent encodeURI decodeURI fetch process Buffer globalThis window "
    "document URL URLSearchParams AbortController TextEncoder TextDecoder Intl ArrayBuffer Uint8Array "
    "DataView Blob FormData Headers Request Response EventTarget Event atob btoa"
)
_GO_BUILTINS = _words(
    "append cap clear close complex copy delete imag len make max min new panic print println real recover "
    "string int int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 uintptr float32 float64 byte rune "
    "bool error any"
)
_RUST_BUILTINS = _words(
    "Some None Ok Err Box Vec String Option Result Default drop panic Arc Rc Cell RefCell HashMap "
    "HashSet BTreeMap BTreeSet Mutex RwLock Pin Cow PhantomData"
)
_JAVA_BUILTINS = _words(
    "System String Object Integer Long Double Float Boolean Character Byte Short Math Arrays Collections "
    "List Map Set HashMap HashSet ArrayList LinkedList Optional Objects Thread StringBuilder Exception "
    "RuntimeException IllegalArgumentException IllegalStateException NullPointerException Class "
    "Iterator Iterable Stream Collectors"
)


def _ecmascript(name: str, query_files: tuple[str, ...]) -> LanguageSpec:
    return LanguageSpec(
        name=name,
        grammar=name,
        query_files=query_files,
        self_names=frozenset({"this"}),
        super_names=frozenset({"super"}),
        path_sep=".",
        implicit_this=False,
        package_scope=False,
        builtins=_JS_GLOBALS,
    )


SPECS: dict[str, LanguageSpec] = {
    "python": LanguageSpec(
        name="python",
        grammar="python",
        query_files=("python",),
        self_names=frozenset({"self", "cls"}),
        super_names=frozenset({"super()"}),
        path_sep=".",
        implicit_this=False,
        package_scope=False,
        builtins=_PY_BUILTINS,
    ),
    "javascript": _ecmascript("javascript", ("ecmascript",)),
    "typescript": _ecmascript("typescript", ("ecmascript", "typescript")),
    "tsx": _ecmascript("tsx", ("ecmascript", "typescript")),
    "go": LanguageSpec(
        name="go",
        grammar="go",
        query_files=("go",),
        self_names=frozenset(),
        super_names=frozenset(),
        path_sep=".",
        implicit_this=False,
        package_scope=True,
        builtins=_GO_BUILTINS,
        bare_calls_need_binding=True,
    ),
    "rust": LanguageSpec(
        name="rust",
        grammar="rust",
        query_files=("rust",),
        self_names=frozenset({"self", "Self"}),
        super_names=frozenset(),
        path_sep="::",
        implicit_this=False,
        package_scope=False,
        builtins=_RUST_BUILTINS,
    ),
    "java": LanguageSpec(
        name="java",
        grammar="java",
        query_files=("java",),
        self_names=frozenset({"this"}),
        super_names=frozenset({"super"}),
        path_sep=".",
        implicit_this=True,
        package_scope=True,
        builtins=_JAVA_BUILTINS,
    ),
}
ALIASES = {"jsx": "javascript", "js": "javascript", "ts": "typescript", "py": "python", "golang": "go"}


def language_spec(language: str) -> LanguageSpec | None:
    """The spec for a language id (chunker ids and a few short aliases), None when unsupported."""
    return SPECS.get(ALIASES.get(language, language))


def query_source(language: str) -> str:
    spec = SPECS[language]
    folder = resources.files("codebase_index.graph") / "queries"
    return "\n".join((folder / f"{name}.scm").read_text(encoding="utf-8") for name in spec.query_files)


@cache
def compiled_query(language: str) -> Query:
    """Compiling a query costs milliseconds, so each language's is built once per process."""
    lang: Language = get_language(SPECS[language].grammar)  # type: ignore[arg-type]
    return Query(lang, query_source(language))


# Roles of query patterns (the capture protocol in queries/python.scm).
DEF, SCOPE, REF, IMPORT, LOCAL, PACKAGE = range(6)
_ROLE_CAPTURE = re.compile(r"@((def|scope|ref)\.\w+|import|local|field|package)(?![\w.])")
Role = tuple[int, str, str]  # (role, kind, capture naming the pattern's node)


@cache
def query_plan(language: str) -> tuple[Query, tuple[Role, ...]]:
    """The extraction query and each pattern's role, read once from the pattern sources.

    Call-site patterns lose their node capture (`@ref.*`): the extractor locates a call by its receiver
    or name, and every capture the query does not return is a Python object not built per match."""
    lang: Language = get_language(SPECS[language].grammar)  # type: ignore[arg-type]
    source = query_source(language)
    query = Query(lang, source)
    encoded = source.encode("utf-8")
    roles: list[Role] = []
    for i in range(query.pattern_count):
        pattern = encoded[query.start_byte_for_pattern(i) : query.end_byte_for_pattern(i)].decode("utf-8")
        found = {m.group(1) for m in _ROLE_CAPTURE.finditer(pattern)}
        if len(found) != 1:
            raise ValueError(f"{language} query pattern {i} needs exactly one role capture, has {found}")
        capture = found.pop()
        head, _, kind = capture.partition(".")
        if head == "def":
            roles.append((DEF, kind, capture))
        elif head == "scope":
            roles.append((SCOPE, kind, capture))
        elif head == "ref":
            roles.append((REF, kind, capture))
        elif head == "import":
            roles.append((IMPORT, "", capture))
        elif head == "package":
            roles.append((PACKAGE, "", capture))
        else:
            roles.append((LOCAL, head, capture))
    for capture in {capture for role, _, capture in roles if role == REF}:
        query.disable_capture(capture)
    return query, tuple(roles)


@cache
def parser_for(language: str) -> Parser:
    return get_parser(SPECS[language].grammar)  # type: ignore[arg-type]
