"""Configuration: `<root>/.opencode/codebase-index.json` over `~/.config/opencode/codebase-index.json`.

Option names and defaults follow the opencode-codebase-index plugin so existing config files keep working.
Differences: `embeddingProvider` adds "embedded" (the bundled offline model) and drops "github-copilot";
the plugin's `indexing.maxDepth` / `maxFilesPerDirectory` caps are not offered because discovery never
drops files silently; `search.bm25` and the OpenCode plugin's own keys (`pythonPath`, `timeouts`,
`initializeTimeoutMs`, `backoffBaseMs`, `backoffCapMs`, `serveArgs`, read by plugin/src/config.ts) are ours.

Files are JSONC (comments, trailing commas). A string that is exactly `{env:NAME}` is replaced by that
environment variable. The project file is untrusted input (a cloned repository wrote it): the settings of
it that send code off the machine, read the environment or outside folders, or name a program
(`TRUST_KEYS`, remote providers, `{env:...}`) are used only once the user trusted that exact file
(trust.py, `codebase-index trust`); until then they are withheld and named (`ConfigLoad.notice`).

Every mistake is a `ConfigError` naming the file and the key path: unknown keys (with a suggestion),
wrong types, values out of range or not among the allowed ones. Merging: the project file wins per key,
nested objects merge per key, the MERGED_LISTS concatenate (global first, duplicates dropped). Every
field carries a description so `config_reference()` can generate the README's table.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import msgspec.inspect as mi

from .embeddings import BUILTIN_MODELS
from .index_home import IndexHomeError, project_index_dir
from .jsonc import ConfigError, strip_jsonc
from .patterns import DEFAULT_INCLUDE, MAX_SEGMENT_WILDCARDS, too_many_wildcards
from .trust import TrustError, is_trusted, read_project_file, sensitive_folder

CONFIG_FILE_NAME = "codebase-index.json"
PROJECT_CONFIG = Path(".opencode") / CONFIG_FILE_NAME
MERGED_LISTS = frozenset({"knowledgeBases", "knowledgeBaseRoots", "additionalInclude"})
"""Top-level lists that accumulate across the global and project files instead of being replaced."""


def _m(description: str, **constraints: Any) -> msgspec.Meta:
    return msgspec.Meta(description=description, **constraints)


class _Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """Shared options: immutable, camelCase in JSON, unknown keys rejected."""


class CustomProviderConfig(_Section, frozen=True):
    base_url: Annotated[str, _m("OpenAI-compatible API base URL; `/embeddings` is appended")] = ""
    model: Annotated[str, _m("Model name sent with each request")] = ""
    dimensions: Annotated[int, _m("Vector width the model returns (required for custom)", ge=0)] = 0
    api_key: Annotated[str | None, _m("API key, if the endpoint needs one (use `{env:VAR}`)")] = None
    max_tokens: Annotated[int, _m("Longest input, in tokens, the model accepts", ge=1)] = 8192
    timeout_ms: Annotated[int, _m("Per-request timeout", ge=1)] = 30_000
    concurrency: Annotated[int, _m("Embedding requests in flight at once", ge=1)] = 3
    request_interval_ms: Annotated[int, _m("Minimum pause between requests (0 for local servers)", ge=0)] = (
        1000
    )
    max_batch_size: Annotated[
        Annotated[int, msgspec.Meta(ge=1)] | None, _m("Most texts per request; null = provider default")
    ] = None


class Bm25Config(_Section, frozen=True):
    k1: Annotated[float, _m("BM25 term-frequency saturation", ge=0)] = 1.5
    b: Annotated[float, _m("BM25 length normalisation (0 = none, 1 = full)", ge=0, le=1)] = 0.75


class IndexingConfig(_Section, frozen=True):
    auto_index: Annotated[
        bool, _m("A search on an unindexed project indexes it first (false: searches ask for `index`)")
    ] = True
    watch_files: Annotated[bool, _m("Watch the tree and re-index changed files")] = True
    max_file_size: Annotated[int, _m("Files larger than this many bytes are skipped (too-large)", ge=1)] = (
        1_048_576
    )
    retries: Annotated[int, _m("Embedding retry attempts", ge=0)] = 3
    retry_delay_ms: Annotated[int, _m("Initial embedding retry delay (doubles each attempt)", ge=0)] = 1000
    auto_gc: Annotated[bool, _m("Remove orphaned index entries periodically")] = True
    gc_interval_days: Annotated[int, _m("Days between automatic clean-ups", ge=1)] = 7
    gc_orphan_threshold: Annotated[int, _m("Orphaned entries that trigger a clean-up", ge=0)] = 100
    require_project_marker: Annotated[
        bool, _m("Only watch/auto-index folders with a project marker (.git, package.json, ...)")
    ] = True


class SearchConfig(_Section, frozen=True):
    max_results: Annotated[int, _m("Results a search tool returns when the call gives no limit", ge=1)] = 20
    min_score: Annotated[
        float, _m("Tool results scoring below this are dropped (0 = keep all; scores are the ranker's)", ge=0)
    ] = 0.0
    include_context: Annotated[
        bool, _m("codebase_search shows each result's code, not only its location")
    ] = True
    hybrid_weight: Annotated[
        float, _m("Keyword share in fusion, score share or RRF weight (0 = vectors only)", ge=0, le=1)
    ] = 0.6
    fusion_strategy: Annotated[Literal["rrf", "weighted"], _m("How keyword and vector rankings merge")] = (
        "rrf"
    )
    rrf_k: Annotated[int, _m("Reciprocal-rank-fusion constant", ge=1)] = 60
    rerank_top_n: Annotated[
        int, _m("Candidates the built-in deterministic reranker reorders (0 = off)", ge=0, le=200)
    ] = 100
    context_lines: Annotated[int, _m("Extra source lines shown around each result", ge=0, le=50)] = 0
    query_embedding_timeout_ms: Annotated[
        int,
        _m(
            "How long a search waits for a remote provider to embed its query (one try); after that, or on "
            "any provider error, it answers with keyword results and a note",
            ge=1,
        ),
    ] = 2000
    ranker: Annotated[
        Literal["auto", "rules", "learned"],
        _m(
            "Candidate scorer: the hand-set rules, the model fitted on generated training queries, or auto "
            "(the model where it beats the rules on held-out repositories: pasted code and change requests; "
            "the rules elsewhere)"
        ),
    ] = "auto"
    bm25: Bm25Config = msgspec.field(default_factory=Bm25Config)


class RerankerConfig(_Section, frozen=True):
    enabled: Annotated[bool, _m("Send the top candidates to an external rerank API")] = False
    provider: Annotated[Literal["cohere", "jina", "custom"], _m("Rerank API flavour")] = "cohere"
    model: Annotated[str | None, _m("Rerank model; null = the provider's default")] = None
    api_key: Annotated[str | None, _m("API key for the rerank service (use `{env:VAR}`)")] = None
    base_url: Annotated[str | None, _m("Endpoint; null = provider default, required for custom")] = None
    top_n: Annotated[int, _m("Candidates sent to the reranker", ge=1)] = 15
    timeout_ms: Annotated[int, _m("Rerank request timeout", ge=1)] = 10_000


class DebugConfig(_Section, frozen=True):
    enabled: Annotated[
        bool, _m("Log at debug level (search timings, embedding batches, branch switches)")
    ] = False
    log_level: Annotated[
        Literal["error", "warn", "info", "debug"], _m("Least severe level logged when debug is off")
    ] = "info"


def effective_log_level(config: Config) -> str:
    """The logging level name the sidecar and MCP server use for this config."""
    if config.debug.enabled:
        return "DEBUG"
    return {"warn": "WARNING"}.get(config.debug.log_level, config.debug.log_level.upper())


class BackendConfig(_Section, frozen=True):
    """A shared search backend (a Qdrant collection that `codebase-index publish` fills)."""

    kind: Annotated[Literal["qdrant"], _m("The backend's engine")] = "qdrant"
    url: Annotated[
        str, _m("qdrant://HOST:PORT[/collection], http(s)://HOST:PORT, or qdrant+local://PATH (embedded)")
    ] = ""
    api_key: Annotated[str | None, _m('API key of the server; use "{env:VAR}"')] = None
    collection: Annotated[
        str | None, _m("Collection of the organisation or workspace (default: from url, else codebase)")
    ] = None
    shards: Annotated[
        Annotated[int, msgspec.Meta(ge=1)] | None,
        _m("Shards of a collection publish creates on a cluster; null = the server's default"),
    ] = None
    replicas: Annotated[
        Annotated[int, msgspec.Meta(ge=1)] | None,
        _m("Copies of each shard of a collection publish creates; null = the server's default"),
    ] = None


EmbeddingProviderName = Literal["auto", "embedded", "openai", "google", "ollama", "custom"]


class Config(_Section, frozen=True):
    embedding_provider: Annotated[
        EmbeddingProviderName,
        _m(
            "Who computes embeddings; auto = the bundled offline model, never a remote API (name a remote "
            "provider here to send code to one)"
        ),
    ] = "auto"
    embedding_model: Annotated[
        str | None,
        _m(
            'Embedding model; null = the provider\'s default. Embedded: "code-static" (the default, our '
            'static code model), "minilm" (all-MiniLM-L6-v2), or a sentence-transformers folder'
        ),
    ] = None
    embedded_backend: Annotated[
        Literal["auto", "onnx", "numpy"],
        _m("Engine of the optional MiniLM model: onnx (int8, fast), numpy (fp32), auto = onnx if it loads"),
    ] = "auto"
    custom_provider: CustomProviderConfig | None = None
    scope: Annotated[
        Literal["project", "global"], _m("Keep the index in the project or in the user's data folder")
    ] = "project"
    include: Annotated[tuple[str, ...], _m("Glob patterns of files to index; replaces the defaults")] = (
        DEFAULT_INCLUDE
    )
    additional_include: Annotated[tuple[str, ...], _m("Glob patterns added to include")] = ()
    exclude: Annotated[
        tuple[str, ...],
        _m("Gitignore-style patterns never indexed, on top of .gitignore and the built-in skips"),
    ] = ()
    include_secrets: Annotated[
        tuple[str, ...],
        _m(
            "Glob patterns of files indexed although their name or content marks them as secrets "
            "(credentials, private keys; skipped as secret otherwise)"
        ),
    ] = ()
    knowledge_bases: Annotated[
        tuple[str, ...], _m("Extra folders indexed with the project (absolute or relative to the root)")
    ] = ()
    knowledge_base_roots: Annotated[
        tuple[str, ...],
        _m(
            "Folders inside which an agent's add_knowledge_base call may add one (the CLI's `kb add` may add "
            "any folder); absolute or relative to the root"
        ),
    ] = ()
    python_path: Annotated[str | None, _m("Python interpreter the OpenCode plugin starts; null = auto")] = (
        None
    )
    # Read by the OpenCode plugin only (plugin/src/config.ts); validated here so a typo is reported.
    timeouts: Annotated[
        dict[str, Annotated[int, msgspec.Meta(ge=1)]],
        _m('OpenCode plugin: per-method call timeouts in ms, e.g. `{"index": 3600000}`'),
    ] = msgspec.field(default_factory=dict)
    initialize_timeout_ms: Annotated[
        Annotated[int, msgspec.Meta(ge=0)] | None,
        _m("OpenCode plugin: how long the sidecar may take to start; null = 30000"),
    ] = None
    backoff_base_ms: Annotated[
        Annotated[int, msgspec.Meta(ge=0)] | None,
        _m("OpenCode plugin: first restart delay after a crash; null = 250"),
    ] = None
    backoff_cap_ms: Annotated[
        Annotated[int, msgspec.Meta(ge=0)] | None, _m("OpenCode plugin: longest restart delay; null = 8000")
    ] = None
    serve_args: Annotated[
        tuple[str, ...], _m("OpenCode plugin: extra arguments for `codebase-index serve`")
    ] = ()
    indexing: IndexingConfig = msgspec.field(default_factory=IndexingConfig)
    search: SearchConfig = msgspec.field(default_factory=SearchConfig)
    reranker: RerankerConfig = msgspec.field(default_factory=RerankerConfig)
    debug: DebugConfig = msgspec.field(default_factory=DebugConfig)
    backend: BackendConfig | None = None


# --------------------------------------------------------------------------------------------- parsing

_ENV_WHOLE = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def _display(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _substitute_env(value: Any, key_path: str, where: str) -> Any:
    """Replace whole-string `{env:NAME}` placeholders; a partial one is an error, not a literal."""
    if isinstance(value, str):
        if "{env:" not in value:
            return value
        m = _ENV_WHOLE.fullmatch(value)
        if m is None:
            raise ConfigError(
                f'{where}: "{key_path}": an {{env:NAME}} placeholder must be the whole string, got {value!r}'
            )
        name = m.group(1)
        if name not in os.environ:
            raise ConfigError(
                f'{where}: "{key_path}" refers to environment variable {name}, which is not set'
            )
        return os.environ[name]
    if isinstance(value, list):
        return [_substitute_env(v, f"{key_path}[{i}]", where) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _substitute_env(v, f"{key_path}.{k}" if key_path else k, where) for k, v in value.items()}
    return value


def _unwrap(t: mi.Type) -> mi.Type:
    """Strip Annotated metadata and `| None` to reach the type that decides structure."""
    while True:
        if isinstance(t, mi.Metadata):
            t = t.type
        elif isinstance(t, mi.UnionType):
            rest = [x for x in t.types if not isinstance(x, mi.NoneType)]
            if len(rest) != 1:
                return t
            t = rest[0]
        else:
            return t


def _unknown_keys(data: dict[str, Any], struct: mi.StructType, prefix: str) -> Iterator[str]:
    fields = {f.encode_name: f for f in struct.fields}
    for key, value in data.items():
        path = f"{prefix}{key}"
        field = fields.get(key)
        if field is None:
            close = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.5)
            hint = f' (did you mean "{prefix}{close[0]}"?)' if close else ""
            yield f'unknown key "{path}"{hint}'
            continue
        inner = _unwrap(field.type)
        if isinstance(inner, mi.StructType) and isinstance(value, dict):
            yield from _unknown_keys(value, inner, path + ".")


def _type_at(path: str) -> mi.Type | None:
    t: mi.Type = mi.type_info(Config)
    for part in path.split("."):
        t = _unwrap(t)
        if not isinstance(t, mi.StructType):
            return None
        match = [f for f in t.fields if f.encode_name == part]
        if not match:
            return None
        t = match[0].type
    return _unwrap(t)


def _validation_message(exc: msgspec.ValidationError) -> str:
    """Reword msgspec's "... - at `$.a.b`" as `bad value for "a.b": ...`, listing allowed values."""
    text = str(exc)
    m = re.fullmatch(r"(.*) - at `\$\.?(.*)`", text, re.S)
    if m is None:
        return text
    problem, path = m.group(1), m.group(2)
    field_path = re.sub(r"\[\d+\]$", "", path)
    allowed = _type_at(field_path) if field_path else None
    if isinstance(allowed, mi.LiteralType):
        problem += " (allowed: " + ", ".join(json.dumps(v) for v in allowed.values) + ")"
    return f'bad value for "{path}": {problem}' if path else problem


def _parse(text: str, where: str) -> dict[str, Any]:
    """JSONC text -> the top-level object, `$schema` dropped; `{env:...}` not substituted yet."""
    try:
        data = json.loads(strip_jsonc(text))
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: the top level must be an object, got {type(data).__name__}")
    data.pop("$schema", None)  # editors add it; it is not an option
    return data


def _validated(data: dict[str, Any], where: str) -> dict[str, Any]:
    """One file's settings, placeholders substituted and checked on their own, so every error names the
    file it came from."""
    data = _substitute_env(data, "", where)
    problems = list(_unknown_keys(data, mi.type_info(Config), ""))  # type: ignore[arg-type]
    if problems:
        raise ConfigError("\n".join(f"{where}: {p}" for p in problems))
    try:
        msgspec.convert(data, Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{where}: {_validation_message(exc)}") from exc
    return data


def _read_file(path: Path, where: str) -> dict[str, Any]:
    """A file of the user's own (the global file, --config): every setting is honoured."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read: {exc}") from exc
    return _validated(_parse(text, where), where)


def merge(base: dict[str, Any], override: dict[str, Any], *, top: bool = True) -> dict[str, Any]:
    """Project-over-global merge: per key, recursing into objects, accumulating MERGED_LISTS.

    >>> merge({"a": {"x": 1, "y": 2}, "knowledgeBases": ["k"]}, {"a": {"y": 3}, "knowledgeBases": ["k", "m"]})
    {'a': {'x': 1, 'y': 3}, 'knowledgeBases': ['k', 'm']}
    """
    out = dict(base)
    for key, value in override.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = merge(old, value, top=False)
        elif top and key in MERGED_LISTS and isinstance(old, list) and isinstance(value, list):
            out[key] = list(dict.fromkeys([*old, *value]))
        else:
            out[key] = value
    return out


def default_global_dir() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else Path.home() / ".config") / "opencode"


EXTRA_CONFIG_ENV = "CODEBASE_INDEX_CONFIG"
"""A config file layered over the project's (the MCP server's `--config PATH` sets it)."""


# Keys of a project file that send code or data off the machine, read outside the project or name a
# program: honoured only once the user trusted the file (trust.py). `embeddingModel` names a model folder
# for the embedded provider (anywhere on disk) or what a remote one runs; the built-in model names are fine.
TRUST_KEYS = (
    "includeSecrets",
    "knowledgeBaseRoots",
    "embeddingModel",
    "customProvider",
    "reranker",
    "backend",
    "pythonPath",
    "serveArgs",
)
LOCAL_PROVIDERS = frozenset({"auto", "embedded"})


class ConfigLoad(msgspec.Struct, frozen=True):
    """The effective configuration and what an untrusted project file asked for that was not honoured."""

    config: Config
    withheld: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()  # settings refused whoever wrote them (a knowledge base in ~/.ssh)

    def notice(self) -> str | None:
        """One line for status, index output and tool answers, or None when nothing was left out."""
        parts = [f"refused: {r}" for r in self.refused]
        untrusted = untrusted_notice(self.withheld)
        if untrusted:
            parts.append(untrusted)
        return "; ".join(parts) or None


def untrusted_notice(withheld: tuple[str, ...]) -> str | None:
    if not withheld:
        return None
    return (
        f"{PROJECT_CONFIG.as_posix()} is not trusted, so these settings of it are not used: "
        f"{', '.join(withheld)}. Review the file, then run `codebase-index trust` in the project to use them "
        "(a running agent session picks the change up when restarted)"
    )


def _env_paths(value: Any, path: str) -> Iterator[str]:
    """Key paths (dotted) whose value holds an `{env:...}` placeholder."""
    if isinstance(value, str):
        if "{env:" in value:
            yield path
    elif isinstance(value, list):
        if any(next(_env_paths(v, path), None) for v in value):
            yield path
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _env_paths(v, f"{path}.{k}" if path else str(k))


def _drop(data: dict[str, Any], dotted: str) -> None:
    *parents, leaf = dotted.split(".")
    node: Any = data
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(leaf, None)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def withhold_untrusted(data: dict[str, Any], root: Path) -> tuple[dict[str, Any], tuple[str, ...]]:
    """An untrusted project file's settings without the ones that need trust, and the names of those.

    Kept: include/exclude, indexing and search defaults, debug, the local provider choice, knowledge
    bases inside the project. Withheld: every `{env:VAR}` (a repository must not read the user's
    environment), remote providers, TRUST_KEYS, knowledge bases outside the project.

    >>> withhold_untrusted({"embeddingProvider": "custom", "include": ["*.py"]}, Path("/p"))
    ({'include': ['*.py']}, ('embeddingProvider',))
    """
    kept = json.loads(json.dumps(data))  # a deep copy of plain JSON
    withheld: list[str] = []
    provider = kept.get("embeddingProvider")
    if provider is not None and provider not in LOCAL_PROVIDERS:
        del kept["embeddingProvider"]
        withheld.append("embeddingProvider")
    for key in TRUST_KEYS:
        if key in kept and not (key == "embeddingModel" and kept[key] in BUILTIN_MODELS):
            del kept[key]
            withheld.append(key)
    for dotted in list(_env_paths(kept, "")):
        _drop(kept, dotted)
        withheld.append(dotted + " ({env:...})")
    bases = kept.get("knowledgeBases")
    if isinstance(bases, list):
        real_root = root.resolve()
        inside = [
            p
            for p in bases
            if isinstance(p, str) and _inside((real_root / Path(p).expanduser()).resolve(), real_root)
        ]
        if len(inside) < len(bases):
            kept["knowledgeBases"] = inside
            withheld.append(f"knowledgeBases ({len(bases) - len(inside)} outside the project)")
    return kept, tuple(withheld)


def _read_project(root: Path, where: str) -> tuple[bytes, dict[str, Any]] | None:
    """The project file's bytes (read once, never through a link) and its parsed settings, placeholders
    untouched; None when the project has none."""
    try:
        raw = read_project_file(root)
    except TrustError as exc:
        raise ConfigError(str(exc)) from exc
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: cannot read: {exc}") from exc
    return raw, _parse(text, where)


def _project_settings(root: Path, gdir: Path, where: str) -> tuple[dict[str, Any], tuple[str, ...]] | None:
    """The project file's settings as far as its trust allows; None when the project has none."""
    found = _read_project(root, where)
    if found is None:
        return None
    raw, data = found
    if is_trusted(root, raw, gdir):
        return _validated(data, where), ()
    kept, withheld = withhold_untrusted(data, root)
    return _validated(kept, where), withheld


def load_config_report(root: Path | str, *, global_dir: Path | None = None) -> ConfigLoad:
    """The effective configuration for `root`: defaults, the global file, the project file (its
    trust-needing settings only once the user trusted it), then the file named by
    $CODEBASE_INDEX_CONFIG (which must exist when set); with what was withheld."""
    root = Path(root).resolve()
    gdir = global_dir if global_dir is not None else default_global_dir()
    merged: dict[str, Any] = {}
    used: list[str] = []
    withheld: tuple[str, ...] = ()
    global_file = gdir / CONFIG_FILE_NAME
    if global_file.is_file():
        merged = _read_file(global_file, str(global_file))
        used.append(str(global_file))
    project = _project_settings(root, gdir, PROJECT_CONFIG.as_posix())
    if project is not None:
        merged = merge(merged, project[0])
        withheld = project[1]
        used.append(PROJECT_CONFIG.as_posix())
    extra = os.environ.get(EXTRA_CONFIG_ENV)
    if extra:
        path = Path(extra).expanduser()
        if not path.is_file():
            raise ConfigError(f"{extra}: config file not found (from --config or ${EXTRA_CONFIG_ENV})")
        merged = merge(merged, _read_file(path, str(path)))
        used.append(str(path))
    try:
        config = msgspec.convert(merged, Config)
    except msgspec.ValidationError as exc:  # each file passed alone; kept for safety
        raise ConfigError(f"{' + '.join(used)}: {_validation_message(exc)}") from exc
    _check_combination(config, " + ".join(used) or "defaults")
    refused: list[str] = []
    kept: list[str] = []
    for raw, path in zip(config.knowledge_bases, knowledge_base_paths(root, config), strict=True):
        why = sensitive_folder(path)
        if why is None:
            kept.append(raw)
        else:
            refused.append(f"knowledgeBases: {raw} is never indexed ({why})")
    if refused:  # the rest of the configuration still works; the refusal is said where the notice goes
        config = msgspec.structs.replace(config, knowledge_bases=tuple(kept))
    return ConfigLoad(config, withheld, tuple(refused))


def trust_preview(root: Path | str) -> tuple[bytes, tuple[str, ...]]:
    """What `codebase-index trust` is about to trust: the project file's bytes and the settings of it
    that need trust. Raises ConfigError when there is no file or it is invalid even when trusted."""
    root = Path(root).resolve()
    where = PROJECT_CONFIG.as_posix()
    found = _read_project(root, where)
    if found is None:
        raise ConfigError(f"{root} has no {where}: there is nothing to trust")
    raw, data = found
    _validated(data, where)
    return raw, withhold_untrusted(data, root)[1]


def config_notice(root: Path | str) -> str | None:
    """What an untrusted project file asked for and did not get, as one line; None when nothing was
    withheld or the configuration cannot be read (that error is reported where the engine is built)."""
    try:
        return load_config_report(root).notice()
    except ConfigError:
        return None


def load_config(root: Path | str, *, global_dir: Path | None = None) -> Config:
    """`load_config_report(root).config`."""
    return load_config_report(root, global_dir=global_dir).config


def _check_combination(config: Config, where: str) -> None:
    """Rules checked on the merged result (the files may split the keys between them)."""
    if config.embedding_provider == "custom":
        cp = config.custom_provider
        missing = [
            name
            for name, ok in (
                ("customProvider.baseUrl", cp is not None and cp.base_url),
                ("customProvider.model", cp is not None and cp.model),
                ("customProvider.dimensions", cp is not None and cp.dimensions > 0),
            )
            if not ok
        ]
        if missing:
            raise ConfigError(
                f'{where}: embeddingProvider is "custom" but {", ".join(missing)} '
                f"{'is' if len(missing) == 1 else 'are'} not set"
            )
    for key, patterns in (
        ("include", config.include),
        ("additionalInclude", config.additional_include),
        ("exclude", config.exclude),
        ("includeSecrets", config.include_secrets),
    ):
        for pattern in patterns:
            if too_many_wildcards(pattern):
                raise ConfigError(
                    f"{where}: {key} entry {pattern[:80]!r} has more than {MAX_SEGMENT_WILDCARDS} `*` in one "
                    "path segment; such a pattern could take minutes to match one file name"
                )
    if config.backend is not None and not config.backend.url:
        raise ConfigError(f"{where}: backend.url is not set (qdrant://HOST:PORT or qdrant+local://PATH)")
    if config.reranker.enabled and config.reranker.provider == "custom" and not config.reranker.base_url:
        raise ConfigError(f'{where}: reranker.provider is "custom" but reranker.baseUrl is not set')


def index_dir(root: Path | str, config: Config) -> Path:
    """Where the index for `root` lives: inside the project (the user cache if it is read-only), or per
    project under the XDG data folder."""
    root = Path(root).resolve()
    if config.scope == "project":  # <root>/.codebase-index, or the user cache (`index_home`)
        try:
            return project_index_dir(root)
        except IndexHomeError as exc:
            raise ConfigError(str(exc)) from exc
    xdg = os.environ.get("XDG_DATA_HOME")
    data = Path(xdg) if xdg else Path.home() / ".local" / "share"
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return data / "opencode" / "codebase-index" / f"{root.name or 'root'}-{digest}"


def knowledge_base_paths(root: Path | str, config: Config) -> list[Path]:
    """`knowledgeBases` as absolute paths (relative entries are taken from the project root)."""
    return _absolute(root, config.knowledge_bases)


def knowledge_base_roots(root: Path | str, config: Config) -> list[Path]:
    """`knowledgeBaseRoots` as absolute paths (relative entries are taken from the project root)."""
    return _absolute(root, config.knowledge_base_roots)


def _absolute(root: Path | str, paths: tuple[str, ...]) -> list[Path]:
    base = Path(root).resolve()
    return [(base / Path(p).expanduser()).resolve() for p in paths]


# ------------------------------------------------------------------------------------------- reference


def _type_name(t: mi.Type) -> str:
    constraints = ""
    if isinstance(t, mi.Metadata):
        t = t.type
    if isinstance(t, mi.UnionType):
        return " | ".join(_type_name(x) for x in t.types)
    if isinstance(t, mi.NoneType):
        return "null"
    if isinstance(t, mi.BoolType):
        return "boolean"
    if isinstance(t, mi.IntType | mi.FloatType):
        bounds = [f">= {t.ge}" if t.ge is not None else "", f"<= {t.le}" if t.le is not None else ""]
        constraints = ", ".join(b for b in bounds if b)
        base = "integer" if isinstance(t, mi.IntType) else "number"
        return f"{base} ({constraints})" if constraints else base
    if isinstance(t, mi.StrType):
        return "string"
    if isinstance(t, mi.LiteralType):
        return " | ".join(json.dumps(v) for v in t.values)
    if isinstance(t, mi.VarTupleType | mi.ListType):
        return _type_name(t.item_type) + "[]"
    if isinstance(t, mi.DictType):
        return f"{{{_type_name(t.key_type)}: {_type_name(t.value_type)}}}"
    return type(t).__name__


def _description(t: mi.Type) -> str:
    if isinstance(t, mi.Metadata) and t.extra_json_schema:
        return str(t.extra_json_schema.get("description", ""))
    return ""


def config_reference() -> list[tuple[str, str, str, str]]:
    """(key path, type, default as JSON, meaning) for every option, in declaration order; nested objects
    are flattened to dotted paths. The README's configuration table is generated from this."""
    rows: list[tuple[str, str, str, str]] = []

    def walk(struct: mi.StructType, prefix: str) -> None:
        for f in struct.fields:
            inner = _unwrap(f.type)
            if isinstance(inner, mi.StructType):
                walk(inner, f"{prefix}{f.encode_name}.")
                continue
            default = f.default if f.default is not msgspec.NODEFAULT else f.default_factory()
            rows.append(
                (
                    prefix + f.encode_name,
                    _type_name(f.type),
                    msgspec.json.encode(default).decode(),
                    _description(f.type),
                )
            )

    walk(mi.type_info(Config), "")  # type: ignore[arg-type]
    return rows


def reference_markdown() -> str:
    """The configuration table as it appears in README.md (a test keeps the two equal)."""
    lines = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for key, type_name, default, meaning in config_reference():
        cells = [f"`{key}`", type_name.replace("|", "\\|"), f"`{default}`", meaning.replace("|", "\\|")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(reference_markdown(), end="")
