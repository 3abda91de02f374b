from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest

from codebase_index.config import (
    BackendConfig,
    Config,
    ConfigError,
    CustomProviderConfig,
    config_reference,
    index_dir,
    knowledge_base_paths,
    load_config,
    strip_jsonc,
)
from codebase_index.patterns import DEFAULT_INCLUDE
from codebase_index.trust import trust


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "project"
    (root / ".opencode").mkdir(parents=True)
    gdir = tmp_path / "global"
    gdir.mkdir()
    return root, gdir


def put(path: Path, text: str | dict[str, object]) -> None:
    path.write_text(text if isinstance(text, str) else json.dumps(text))


def project(root: Path, text: str | dict[str, object]) -> None:
    put(root / ".opencode" / "codebase-index.json", text)


def trusted_project(root: Path, gdir: Path, text: str | dict[str, object]) -> None:
    """A project file the user trusted (`codebase-index trust`): every setting of it is honoured."""
    project(root, text)
    trust(root, gdir)


def glob_(gdir: Path, text: str | dict[str, object]) -> None:
    put(gdir / "codebase-index.json", text)


def test_defaults_without_files(dirs: tuple[Path, Path]) -> None:
    root, gdir = dirs
    config = load_config(root, global_dir=gdir)
    assert config == Config()
    assert config.embedding_provider == "auto"
    assert config.indexing.max_file_size == 1_048_576
    assert config.search.fusion_strategy == "rrf" and config.search.rrf_k == 60
    assert config.search.bm25.k1 == 1.5 and config.search.bm25.b == 0.75
    assert config.reranker.enabled is False and config.reranker.top_n == 15
    assert config.include == DEFAULT_INCLUDE
    with pytest.raises(AttributeError):
        config.scope = "global"  # type: ignore[misc]


def test_project_wins_per_key_nested_merge_and_list_accumulation(dirs: tuple[Path, Path]) -> None:
    root, gdir = dirs
    glob_(
        gdir,
        {
            "embeddingProvider": "ollama",
            "indexing": {"maxFileSize": 10, "watchFiles": False},
            "search": {"bm25": {"k1": 1.2}},
            "knowledgeBases": ["/docs", "../shared"],
            "additionalInclude": ["**/*.ps1"],
            "include": ["**/*.py"],
        },
    )
    project(
        root,
        {
            "indexing": {"maxFileSize": 20},
            "search": {"bm25": {"b": 0.5}},
            "knowledgeBases": ["../shared", "notes"],
            "additionalInclude": ["**/*.nix"],
            "include": ["**/*.ts"],
        },
    )
    config = load_config(root, global_dir=gdir)
    assert config.embedding_provider == "ollama"  # only in global
    assert config.indexing.max_file_size == 20  # project wins
    assert config.indexing.watch_files is False  # sibling key from global survives
    assert (config.search.bm25.k1, config.search.bm25.b) == (1.2, 0.5)
    assert config.knowledge_bases == ("/docs", "../shared", "notes")
    assert config.additional_include == ("**/*.ps1", "**/*.nix")
    assert config.include == ("**/*.ts",)  # other lists are replaced, not merged


def test_xdg_config_home_is_the_default_global_dir(
    dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, _ = dirs
    xdg = tmp_path / "xdg"
    (xdg / "opencode").mkdir(parents=True)
    put(xdg / "opencode" / "codebase-index.json", {"scope": "global"})
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert load_config(root).scope == "global"


def test_jsonc_comments_and_trailing_commas(dirs: tuple[Path, Path]) -> None:
    root, gdir = dirs
    trusted_project(
        root,
        gdir,
        """\ufeff{
  // line comment
  "embeddingModel": "a//b /* not a comment */", /* block
     comment */
  "exclude": ["x/**", ],
  "search": {"maxResults": 5,},
}""",
    )
    config = load_config(root, global_dir=gdir)
    assert config.embedding_model == "a//b /* not a comment */"
    assert config.exclude == ("x/**",)
    assert config.search.max_results == 5


def test_jsonc_errors_name_file_and_line(dirs: tuple[Path, Path]) -> None:
    root, gdir = dirs
    project(root, '{\n  "scope": "project"\n  "debug": {}\n}')
    with pytest.raises(ConfigError, match=r"^\.opencode/codebase-index\.json:3:3: invalid JSON"):
        load_config(root, global_dir=gdir)
    project(root, '{"scope": "project"} /* never closed')
    with pytest.raises(ConfigError, match="unterminated"):
        load_config(root, global_dir=gdir)
    project(root, "[1, 2]")
    with pytest.raises(ConfigError, match="top level must be an object"):
        load_config(root, global_dir=gdir)


def test_strip_jsonc_keeps_escaped_quotes_in_strings() -> None:
    text = '{"a": "say \\"hi\\" // there", "b": [1, /* x */ 2,]}'
    assert json.loads(strip_jsonc(text)) == {"a": 'say "hi" // there', "b": [1, 2]}


def test_env_placeholders(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, gdir = dirs
    monkeypatch.setenv("CBI_TEST_KEY", "sekret")
    monkeypatch.setenv("CBI_TEST_KB", "/kb")
    trusted_project(
        root, gdir, {"reranker": {"apiKey": "{env:CBI_TEST_KEY}"}, "knowledgeBases": ["{env:CBI_TEST_KB}"]}
    )
    config = load_config(root, global_dir=gdir)
    assert config.reranker.api_key == "sekret"
    assert config.knowledge_bases == ("/kb",)

    monkeypatch.delenv("CBI_TEST_KEY")
    with pytest.raises(ConfigError) as err:
        load_config(root, global_dir=gdir)
    assert str(err.value) == (
        '.opencode/codebase-index.json: "reranker.apiKey" refers to environment variable CBI_TEST_KEY, '
        "which is not set"
    )

    trusted_project(root, gdir, {"reranker": {"apiKey": "Bearer {env:CBI_TEST_KB}"}})
    with pytest.raises(
        ConfigError, match=r'"reranker\.apiKey": an \{env:NAME\} placeholder must be the whole'
    ):
        load_config(root, global_dir=gdir)


def test_unknown_keys_top_level_and_nested_with_suggestion(dirs: tuple[Path, Path]) -> None:
    root, gdir = dirs
    project(root, {"indexing": {"maxFileSzie": 1}})
    with pytest.raises(ConfigError) as err:
        load_config(root, global_dir=gdir)
    assert str(err.value) == (
        '.opencode/codebase-index.json: unknown key "indexing.maxFileSzie"'
        ' (did you mean "indexing.maxFileSize"?)'
    )

    glob_(gdir, {"embedingProvider": "ollama", "zzz": 1, "search": {"bm25": {"k2": 1}}})
    project(root, {})
    with pytest.raises(ConfigError) as err:
        load_config(root, global_dir=gdir)
    lines = str(err.value).splitlines()
    where = str(gdir / "codebase-index.json")
    assert lines == [
        f'{where}: unknown key "embedingProvider" (did you mean "embeddingProvider"?)',
        f'{where}: unknown key "zzz"',
        f'{where}: unknown key "search.bm25.k2" (did you mean "search.bm25.k1"?)',
    ]


def test_unknown_key_inside_optional_section(dirs: tuple[Path, Path]) -> None:
    root, gdir = dirs
    trusted_project(root, gdir, {"customProvider": {"baseURL": "http://x"}})
    with pytest.raises(
        ConfigError, match=r'unknown key "customProvider\.baseURL" \(did you mean "customProvider\.baseUrl"'
    ):
        load_config(root, global_dir=gdir)


def test_schema_key_is_tolerated(dirs: tuple[Path, Path]) -> None:
    root, gdir = dirs
    project(root, {"$schema": "https://example.invalid/schema.json", "scope": "global"})
    assert load_config(root, global_dir=gdir).scope == "global"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"indexing": {"maxFileSize": "big"}},
            'bad value for "indexing.maxFileSize": Expected `int`, got `str`',
        ),
        ({"indexing": {"maxFileSize": 0}}, 'bad value for "indexing.maxFileSize": Expected `int` >= 1'),
        ({"search": {"hybridWeight": 1.5}}, 'bad value for "search.hybridWeight": Expected `float` <= 1.0'),
        ({"indexing": "yes"}, 'bad value for "indexing": Expected `object`, got `str`'),
        ({"exclude": ["a", 3]}, 'bad value for "exclude[1]": Expected `str`, got `int`'),
        ({"debug": {"enabled": "true"}}, 'bad value for "debug.enabled": Expected `bool`, got `str`'),
    ],
)
def test_wrong_types_and_ranges(dirs: tuple[Path, Path], body: dict[str, object], expected: str) -> None:
    root, gdir = dirs
    project(root, body)
    with pytest.raises(ConfigError) as err:
        load_config(root, global_dir=gdir)
    assert str(err.value) == f".opencode/codebase-index.json: {expected}"


def test_bad_enum_value_lists_allowed_values(dirs: tuple[Path, Path]) -> None:
    root, gdir = dirs
    trusted_project(root, gdir, {"embeddingProvider": "github-copilot"})
    with pytest.raises(ConfigError) as err:
        load_config(root, global_dir=gdir)
    message = str(err.value)
    assert message.startswith(
        '.opencode/codebase-index.json: bad value for "embeddingProvider": Invalid enum'
    )
    assert '"embedded"' in message and '"ollama"' in message
    trusted_project(root, gdir, {"search": {"fusionStrategy": "max"}})
    with pytest.raises(ConfigError, match=r'"search\.fusionStrategy".*allowed: "rrf", "weighted"'):
        load_config(root, global_dir=gdir)


def test_custom_provider_requirements_checked_after_merge(dirs: tuple[Path, Path]) -> None:
    root, gdir = dirs
    glob_(gdir, {"customProvider": {"baseUrl": "http://localhost:8080/v1", "model": "nomic"}})
    trusted_project(root, gdir, {"embeddingProvider": "custom"})
    with pytest.raises(ConfigError, match=r'"custom" but customProvider\.dimensions is not set'):
        load_config(root, global_dir=gdir)
    trusted_project(root, gdir, {"embeddingProvider": "custom", "customProvider": {"dimensions": 768}})
    config = load_config(root, global_dir=gdir)
    assert config.custom_provider is not None
    assert (config.custom_provider.base_url, config.custom_provider.dimensions) == (
        "http://localhost:8080/v1",
        768,
    )
    assert config.custom_provider.timeout_ms == 30_000
    trusted_project(root, gdir, {"reranker": {"enabled": True, "provider": "custom"}})
    with pytest.raises(ConfigError, match=r"reranker\.baseUrl is not set"):
        load_config(root, global_dir=gdir)


def test_index_dir_project_and_global(
    dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, _ = dirs
    assert index_dir(root, Config()) == root.resolve() / ".codebase-index"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    global_cfg = Config(scope="global")
    first = index_dir(root, global_cfg)
    assert first.parent == tmp_path / "data" / "opencode" / "codebase-index"
    assert first.name.startswith("project-")
    other = tmp_path / "elsewhere" / "project"
    other.mkdir(parents=True)
    assert index_dir(other, global_cfg) != first  # same folder name, different root
    assert index_dir(root, global_cfg) == first  # stable


def test_knowledge_base_paths(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    root, _ = dirs
    config = Config(knowledge_bases=("../shared", str(tmp_path / "abs")))
    assert knowledge_base_paths(root, config) == [tmp_path / "shared", tmp_path / "abs"]


def _leaf_paths(cls: type[msgspec.Struct], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for field in msgspec.structs.fields(cls):
        t = field.type
        nested = [
            a for a in getattr(t, "__args__", (t,)) if isinstance(a, type) and issubclass(a, msgspec.Struct)
        ]
        if isinstance(t, type) and issubclass(t, msgspec.Struct):
            nested = [t]
        if nested:
            out |= _leaf_paths(nested[0], f"{prefix}{field.encode_name}.")
        else:
            out.add(prefix + field.encode_name)
    return out


def test_config_reference_covers_every_field_with_meaning_and_valid_default() -> None:
    rows = config_reference()
    keys = [r[0] for r in rows]
    assert len(keys) == len(set(keys))
    assert set(keys) == _leaf_paths(Config)
    for key, type_name, default, meaning in rows:
        assert type_name and meaning, key
        json.loads(default)  # defaults are valid JSON
    by_key = {r[0]: r for r in rows}
    assert by_key["indexing.maxFileSize"][1:3] == ("integer (>= 1)", "1048576")
    assert by_key["search.fusionStrategy"][1] == '"rrf" | "weighted"'
    assert by_key["search.bm25.k1"][2] == "1.5"
    assert by_key["customProvider.apiKey"][1] == "string | null"
    # The whole reference, written back as a config file, loads and equals the defaults.
    nested: dict[str, object] = {}
    for key, _, default, _ in rows:
        *parents, leaf = key.split(".")
        node = nested
        for p in parents:
            node = node.setdefault(p, {})  # type: ignore[assignment]
        node[leaf] = json.loads(default)
    assert msgspec.convert(nested, Config) == Config(
        custom_provider=CustomProviderConfig(), backend=BackendConfig()
    )


def test_debug_section_sets_the_log_level(tmp_path: Path) -> None:
    from codebase_index.config import effective_log_level, load_config
    from codebase_index.rpc import resolve_log_level

    assert effective_log_level(Config()) == "INFO"
    (tmp_path / ".opencode").mkdir()
    (tmp_path / ".opencode" / "codebase-index.json").write_text('{"debug": {"logLevel": "warn"}}')
    assert effective_log_level(load_config(tmp_path, global_dir=tmp_path / "none")) == "WARNING"
    (tmp_path / ".opencode" / "codebase-index.json").write_text('{"debug": {"enabled": true}}')
    assert effective_log_level(load_config(tmp_path, global_dir=tmp_path / "none")) == "DEBUG"
    assert resolve_log_level(tmp_path, "error") == "error"
    (tmp_path / ".opencode" / "codebase-index.json").write_text('{"debug": {"logSearch": true}}')
    with pytest.raises(ConfigError, match="logSearch"):
        load_config(tmp_path, global_dir=tmp_path / "none")


def _plugin_setting_keys() -> list[str]:
    """The keys of `PluginSettings` in plugin/src/config.ts: what the plugin documents for the file."""
    source = (Path(__file__).resolve().parent.parent / "plugin" / "src" / "config.ts").read_text("utf-8")
    body = source.split("export interface PluginSettings {", 1)[1].split("\n}", 1)[0]
    return re.findall(r"^\s+(\w+)\??:", body, re.M)


def test_every_plugin_setting_is_a_valid_engine_key(dirs: tuple[Path, Path]) -> None:
    root, gdir = dirs
    keys = _plugin_setting_keys()
    assert {"pythonPath", "timeouts", "serveArgs", "initializeTimeoutMs"} <= set(keys), keys
    values: dict[str, object] = {
        "pythonPath": "/opt/venv/bin/python",
        "timeouts": {"index": 3_600_000, "search": 5000},
        "initializeTimeoutMs": 60_000,
        "backoffBaseMs": 100,
        "backoffCapMs": 2000,
        "serveArgs": ["--index-dir", "/tmp/idx"],
    }
    assert set(keys) == set(values), "a new plugin setting needs a value here and a field in Config"
    # The same file, JSONC with a comment and trailing commas, as the plugin reads it.
    text = "{\n  // plugin settings\n" + ",\n".join(
        f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in values.items()
    )
    trusted_project(root, gdir, text + ",\n}\n")
    config = load_config(root, global_dir=gdir)
    assert config.timeouts == {"index": 3_600_000, "search": 5000}
    assert config.serve_args == ("--index-dir", "/tmp/idx")
    assert config.initialize_timeout_ms == 60_000 and config.backoff_cap_ms == 2000
    trusted_project(root, gdir, {"timeouts": {"search": "soon"}})
    with pytest.raises(ConfigError, match='bad value for "timeouts'):
        load_config(root, global_dir=gdir)


@pytest.mark.parametrize("key", ["include", "additionalInclude", "exclude", "includeSecrets"])
def test_a_pattern_that_would_backtrack_for_minutes_is_a_config_error(tmp_path: Path, key: str) -> None:
    """An untrusted project file keeps its include/exclude keys; `*a*a*a*a*a*ab` took ~50 s to match one
    250-character name through the regular expression it compiles to (issue 27)."""
    from project_config import write_project_config

    trusted = key == "includeSecrets"  # withheld from an untrusted file: the user's own setting here
    write_project_config(tmp_path, {key: ["*.py", "*a*a*a*a*a*ab"]}, trusted=trusted)
    with pytest.raises(ConfigError, match=f"{key} entry '\\*a\\*a\\*a\\*a\\*a\\*ab' has more than 3"):
        load_config(tmp_path)
    write_project_config(tmp_path, {key: ["*.py", "*_*_*.tmp"]}, trusted=trusted)
    load_config(tmp_path)  # three wildcards in a segment are fine
