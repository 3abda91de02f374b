"""The trust boundary piece by piece: which project settings need `codebase-index trust`, how trust is
recorded and revoked, which folders are never knowledge bases, and which files are never indexed."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from codebase_index import cli, tools
from codebase_index.config import ConfigError, default_global_dir, load_config, load_config_report
from codebase_index.credentials import secret_content, secret_name
from codebase_index.files import discover
from codebase_index.knowledge import KnowledgeBaseError, validate
from codebase_index.service import Engine
from codebase_index.trust import TRUST_FILE_NAME, sensitive_folder, trust, untrust

HOSTILE = {
    "embeddingProvider": "openai",
    "embeddingModel": "/opt/models/anything",
    "customProvider": {"baseUrl": "http://127.0.0.1:9/v1", "apiKey": "{env:TRUST_TEST_KEY}"},
    "reranker": {"enabled": True, "provider": "cohere"},
    "backend": {"url": "qdrant://127.0.0.1:9/team"},
    "knowledgeBases": ["../sibling", "docs"],
    "knowledgeBaseRoots": ["/"],
    "includeSecrets": ["**"],
    "pythonPath": "./pwn.sh",
    "serveArgs": ["--index-dir", "/tmp/x"],
    "exclude": ["build/**"],
    "search": {"maxResults": 7},
    "debug": {"enabled": True},
}


def pem(label: str) -> str:
    """A PEM block shaped like a real key (header, base64 body, footer); random bytes, no key."""
    body = "\n".join(base64.b64encode(bytes(range(i, i + 48))).decode() for i in range(0, 240, 48))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRUST_TEST_KEY", "k-123")
    root = tmp_path / "proj"
    (root / ".opencode").mkdir(parents=True)
    (root / "docs").mkdir()
    (tmp_path / "sibling").mkdir()
    (root / ".opencode" / "codebase-index.json").write_text(json.dumps(HOSTILE))
    return root


def test_untrusted_file_keeps_harmless_keys_and_names_the_rest(project: Path) -> None:
    loaded = load_config_report(project)
    config = loaded.config
    assert config.embedding_provider == "auto" and config.embedding_model is None
    assert config.custom_provider is None and config.backend is None and not config.reranker.enabled
    assert config.python_path is None and config.serve_args == () and config.include_secrets == ()
    assert config.knowledge_bases == ("docs",) and config.knowledge_base_roots == ()
    assert config.exclude == ("build/**",) and config.search.max_results == 7 and config.debug.enabled
    assert loaded.withheld == (
        "embeddingProvider",
        "includeSecrets",
        "knowledgeBaseRoots",
        "embeddingModel",
        "customProvider",
        "reranker",
        "backend",
        "pythonPath",
        "serveArgs",
        "knowledgeBases (1 outside the project)",
    )
    notice = loaded.notice() or ""
    assert "not trusted" in notice and "`codebase-index trust`" in notice


def test_env_placeholders_are_not_expanded_for_an_untrusted_file(project: Path) -> None:
    (project / ".opencode" / "codebase-index.json").write_text(
        json.dumps({"knowledgeBases": ["{env:TRUST_TEST_KEY}"], "exclude": ["{env:UNSET_VAR_XYZ}"]})
    )
    loaded = load_config_report(project)  # an unset variable is not even an error: it is never read
    assert loaded.config.knowledge_bases == () and loaded.config.exclude == ()
    assert loaded.withheld == ("knowledgeBases ({env:...})", "exclude ({env:...})")


def test_trust_records_the_exact_file_and_any_change_revokes_it(project: Path) -> None:
    gdir = default_global_dir()
    assert cli.main(["trust", str(project)]) == 0
    record = json.loads((gdir / TRUST_FILE_NAME).read_text())
    assert list(record["files"]) == [str(project.resolve() / ".opencode" / "codebase-index.json")]
    assert (gdir / TRUST_FILE_NAME).stat().st_mode & 0o077 == 0
    config = load_config(project)
    assert config.embedding_provider == "openai" and config.custom_provider is not None
    assert config.custom_provider.api_key == "k-123"
    assert config.knowledge_bases == ("../sibling", "docs")
    path = project / ".opencode" / "codebase-index.json"
    path.write_text(path.read_text() + " ")
    assert load_config(project).embedding_provider == "auto"
    trust(project, gdir)
    assert load_config(project).embedding_provider == "openai"
    assert untrust(project, gdir) and not untrust(project, gdir)
    assert load_config(project).embedding_provider == "auto"


def test_trust_of_one_project_does_not_cover_a_copy(project: Path, tmp_path: Path) -> None:
    trust(project, default_global_dir())
    copy = tmp_path / "copy"
    (copy / ".opencode").mkdir(parents=True)
    (copy / ".opencode" / "codebase-index.json").write_bytes(
        (project / ".opencode" / "codebase-index.json").read_bytes()
    )
    assert load_config(copy).embedding_provider == "auto"


def test_a_linked_config_file_is_never_read_nor_trusted(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"search": {"maxResults": 3}}))
    path = project / ".opencode" / "codebase-index.json"
    path.unlink()
    path.symlink_to(outside)
    with pytest.raises(ConfigError, match="is a link"):
        load_config(project)
    assert cli.main(["trust", str(project)]) == 1
    # A linked .opencode folder too.
    path.unlink()
    (project / ".opencode").rmdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "codebase-index.json").write_text("{}")
    (project / ".opencode").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ConfigError, match="is a link or not a folder"):
        load_config(project)


def test_trust_without_a_file_or_with_an_invalid_one_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    assert cli.main(["trust", str(root)]) == 1
    assert "nothing to trust" in capsys.readouterr().err
    (root / ".opencode").mkdir()
    (root / ".opencode" / "codebase-index.json").write_text('{"embeddingProvider": "openai", "nope": 1}')
    assert cli.main(["trust", str(root)]) == 1
    assert 'unknown key "nope"' in capsys.readouterr().err
    assert not (default_global_dir() / TRUST_FILE_NAME).exists()


@pytest.mark.parametrize("raw", ["/etc", "~", "~/.ssh", "/proc/self", "/", "~/.config", "~/.aws/cli"])
def test_sensitive_folders_are_refused_everywhere(
    raw: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    for sub in (".ssh", ".aws/cli", ".config/gcloud"):
        (home / sub).mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("private")
    monkeypatch.setenv("HOME", str(home))
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text("def a():\n    return 1\n")
    with pytest.raises(KnowledgeBaseError, match=r"^refused: .* is never indexed \("):
        validate(root, raw)
    index = tmp_path / "index"
    rt = tools.Runtime(root, index_dir=index)
    try:
        with pytest.raises(tools.InvalidParams, match="never indexed"):
            tools.call(rt, "add_knowledge_base", {"path": raw})
        assert tools.call(rt, "list_knowledge_bases", {}).data == {"knowledgeBases": []}
    finally:
        rt.close()
    assert cli.main(["kb", "add", raw, "--root", str(root), "--index-dir", str(index)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "never indexed" in err
    # From the user's own config too: dropped, said, and the rest of the configuration still works.
    user = default_global_dir() / "codebase-index.json"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(json.dumps({"knowledgeBases": [raw], "search": {"maxResults": 3}}))
    loaded = load_config_report(root)
    assert loaded.config.knowledge_bases == () and loaded.config.search.max_results == 3
    assert "refused: knowledgeBases:" in (loaded.notice() or "")


def test_an_agent_adds_knowledge_bases_only_where_the_user_allows(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    shelf = tmp_path / "shelf" / "handbook"
    shelf.mkdir(parents=True)
    (shelf / "guide.md").write_text("# Guide\n\nRotate the widgets weekly.\n")
    with pytest.raises(KnowledgeBaseError, match="knowledgeBaseRoots"):
        validate(root, str(shelf), agent=True, config=load_config(root))
    assert validate(root, str(shelf)) == shelf.resolve()  # the user's own CLI may
    user = default_global_dir() / "codebase-index.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"knowledgeBaseRoots": [str(tmp_path / "shelf")]}))
    assert validate(root, str(shelf), agent=True, config=load_config(root)) == shelf.resolve()


def test_secret_names_and_contents() -> None:
    for name in (
        "credentials.json",
        "client_secret_42.apps.googleusercontent.com.json",
        "secrets.yaml",
        "secrets.toml",
        "env.sh",
        "api_key.txt",
        ".secrets.json",
        "id_rsa",
        "server.pem",
    ):
        assert secret_name(name, f"conf/{name}") is not None, name
    assert secret_name("config.json", ".docker/config.json") is not None
    assert secret_name("config.json", "app/config.json") is None
    assert secret_name("secrets.py", "app/secrets.py") is None  # code about secrets is code
    # Test secrets are assembled at run time, so this file itself holds none (it is indexed in `make demo`).
    key = pem("PRIVATE KEY")
    assert secret_content(json.dumps({"type": "service_account", "private_key": key}))  # `\n` escapes
    assert secret_content(key)
    assert secret_content(key.split("\n")[0] + "\n(a header alone: a parser's docs)\n") is None
    assert secret_content("aws_access_key_id = " + "AKIA" + "Z7QR3XW2LMNOP4ST")
    assert secret_content("AKIAIOSFODNN7EXAMPLE is the documented example") is None
    assert secret_content("token = 'ghp_" + "a1B2" * 9 + "'")
    assert secret_content("def rotate_private_key(path): ...") is None


def test_secret_files_are_skipped_counted_and_brought_back_only_by_trusted_include(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def serve():\n    return 'ok'\n")
    (root / "credentials.json").write_text('{"token": "t"}')
    (root / "src" / "keys.py").write_text(f'KEY = """{pem("EC PRIVATE KEY")}"""\n')
    found = discover(root)
    assert [f.path for f in found.files] == ["src/app.py", "src/keys.py"]  # by name at discovery
    assert found.skipped_counts()["secret"] == 1
    engine = Engine(root, index_path=tmp_path / "index", workers=1)
    try:
        report = engine.index(graph=False)
        assert report.skipped["secret"] == 2  # by content when read
        status = engine.status()
        assert status.secrets == ["credentials.json", "src/keys.py"]
        assert engine.search("EC PRIVATE KEY", mode="keyword").results == []
    finally:
        engine.close()
    # includeSecrets from an untrusted project file is withheld; from the user's own config it counts.
    (root / ".opencode").mkdir()
    (root / ".opencode" / "codebase-index.json").write_text('{"includeSecrets": ["credentials.json"]}')
    assert load_config(root).include_secrets == ()
    user = default_global_dir() / "codebase-index.json"
    user.parent.mkdir(parents=True)
    user.write_text('{"includeSecrets": ["credentials.json"]}')
    engine = Engine(root, index_path=tmp_path / "index", workers=1)
    try:
        report = engine.index(graph=False)
        assert report.skipped["secret"] == 1 and engine.status().secrets == ["src/keys.py"]
    finally:
        engine.close()


def test_sensitive_folder_relations(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert sensitive_folder(home, home) == "the home folder"
    assert sensitive_folder(home / "work" / "docs", home) is None
    assert "contains the home folder" in (sensitive_folder(tmp_path, home) or "")
    assert "is inside a credential store" in (sensitive_folder(home / ".ssh" / "keys", home) or "")
    assert "contains a credential store" in (sensitive_folder(home / ".config", home) or "")
    assert "system folder (/etc)" in (sensitive_folder(Path("/etc/ssl"), home) or "")


def test_a_committed_index_cannot_name_knowledge_bases(tmp_path: Path) -> None:
    """An index can come with the repository (`.codebase-index` force-added): the list of added knowledge
    bases an older version kept inside it would have indexed the user's other projects."""
    other = tmp_path / "other-project"
    other.mkdir()
    (other / "plans.py").write_text("def confidential_roadmap():\n    return 'q3'\n")
    root = tmp_path / "cloned"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 0\n")
    engine = Engine(root, workers=1)
    try:
        engine.index(graph=False)
        engine.store.set_meta("knowledge_bases", json.dumps([str(other)]))  # what the clone carried
        engine.index(graph=False)
        assert engine.knowledge_bases() == []
        assert engine.search("confidential_roadmap", mode="keyword").results == []
        note = engine.knowledge_base_note() or ""
        assert "not used" in note and str(other) in note
        # Added by the user (CLI), it is recorded outside the index and used.
        engine.add_knowledge_base(str(other))
        assert [kb.path for kb in engine.knowledge_bases()] == [str(other)]
    finally:
        engine.close()


def test_an_index_folder_linked_out_of_the_project_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "cloned"
    root.mkdir(parents=True)
    (root / "app.py").write_text("def main():\n    return 0\n")
    elsewhere = tmp_path / "victim-folder"
    elsewhere.mkdir()
    (root / ".codebase-index").symlink_to(elsewhere)
    with pytest.raises(ConfigError, match="leads outside the project"):
        Engine(root, workers=1)
    assert cli.main(["index", str(root), "--keyword-only"]) == 1
    assert list(elsewhere.iterdir()) == []
