"""Knowledge bases: external folders indexed into the project's store, through engine, tools and CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codebase_index import cli, tools
from codebase_index.config import default_global_dir
from codebase_index.knowledge import KnowledgeBaseError
from codebase_index.service import Engine
from project_config import write_project_config


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "util.py").write_text("def project_helper():\n    pass\n")
    kb = tmp_path / "handbook"
    (kb / "guides").mkdir(parents=True)
    # same relative path as a project file: must not collide
    (kb / "src").mkdir()
    (kb / "src" / "util.py").write_text("def handbook_helper():\n    pass\n")
    (kb / "guides" / "deploy.md").write_text("# Deploying\n\nRoll out with blue green switching.\n")
    (kb / ".gitignore").write_text("drafts/\n")
    (kb / "drafts").mkdir()
    (kb / "drafts" / "secret.md").write_text("# Unfinished rollout musings\n")
    return project, kb


def test_add_search_list_remove(layout: tuple[Path, Path], tmp_path: Path) -> None:
    project, kb_dir = layout
    engine = Engine(project, index_path=tmp_path / "index", workers=1)
    try:
        engine.index()
        kb, report = engine.add_knowledge_base(str(kb_dir))
        assert (kb.label, kb.source, report.files) == (
            "handbook",
            "added",
            2,
        )  # drafts/ ignored by its own rules
        hits = engine.search("handbook_helper", mode="keyword").results
        assert hits[0].path == "kb:handbook/src/util.py"
        assert engine.search("project_helper", mode="keyword").results[0].path == "src/util.py"
        assert engine.search("musings", mode="keyword").results == []
        # a new index run keeps knowledge bases fresh too
        (kb_dir / "guides" / "deploy.md").write_text("# Deploying\n\nCanary releases first.\n")
        assert engine.index().knowledge_bases == {"handbook": 2}
        assert engine.search("canary", mode="keyword").results[0].path == "kb:handbook/guides/deploy.md"
        # path-level updates route to the knowledge base
        (kb_dir / "guides" / "extra.md").write_text("# Extra\n\nObservability dashboards.\n")
        engine.index_paths([str(kb_dir / "guides" / "extra.md")])
        assert engine.search("observability", mode="keyword").results[0].path == "kb:handbook/guides/extra.md"
        assert [k.path for k in engine.knowledge_bases()] == [str(kb_dir)]
        # persisted in the store: a new engine sees it
        engine.close()
        engine = Engine(project, index_path=tmp_path / "index", workers=1)
        assert [k.label for k in engine.knowledge_bases()] == ["handbook"]
        engine.remove_knowledge_base("handbook")
        assert engine.knowledge_bases() == []
        assert not [
            r for r in engine.search("handbook_helper", mode="keyword").results if r.path.startswith("kb:")
        ]
        left = engine.store.conn.execute("SELECT COUNT(*) FROM chunks WHERE text LIKE '%handbook_helper%'")
        assert left.fetchone()[0] == 0
    finally:
        engine.close()


def test_bad_paths_are_refused_with_a_reason(layout: tuple[Path, Path], tmp_path: Path) -> None:
    project, _ = layout
    engine = Engine(project, index_path=tmp_path / "index", workers=1)
    try:
        engine.index()
        with pytest.raises(KnowledgeBaseError, match="does not exist"):
            engine.add_knowledge_base(str(tmp_path / "nope"))
        with pytest.raises(KnowledgeBaseError, match="inside the project"):
            engine.add_knowledge_base("src")
        with pytest.raises(KnowledgeBaseError, match="contains the project"):
            engine.add_knowledge_base(str(tmp_path))
        (tmp_path / "file.txt").write_text("x")
        with pytest.raises(KnowledgeBaseError, match="not a directory"):
            engine.add_knowledge_base(str(tmp_path / "file.txt"))
        with pytest.raises(KnowledgeBaseError, match="not a registered"):
            engine.remove_knowledge_base("elsewhere")
    finally:
        engine.close()


def test_config_listed_knowledge_base(layout: tuple[Path, Path], tmp_path: Path) -> None:
    project, kb_dir = layout
    write_project_config(project, {"knowledgeBases": ["../handbook"]})
    engine = Engine(project, index_path=tmp_path / "index", workers=1)
    try:
        report = engine.index()
        assert report.knowledge_bases == {"handbook": 2}
        assert engine.search("handbook_helper", mode="keyword").results[0].path == "kb:handbook/src/util.py"
        with pytest.raises(KnowledgeBaseError, match="config file"):
            engine.remove_knowledge_base(str(kb_dir))
    finally:
        engine.close()


def test_tools_and_cli(layout: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project, kb_dir = layout
    index = tmp_path / "index"
    # An agent may add folders only inside the user's own knowledgeBaseRoots (tests/test_secrets.py).
    user_config = default_global_dir() / "codebase-index.json"
    user_config.parent.mkdir(parents=True)
    user_config.write_text(json.dumps({"knowledgeBaseRoots": [str(tmp_path)]}))
    rt = tools.Runtime(project, index_dir=index)
    try:
        tools.call(rt, "index", {})
        added = tools.call(rt, "add_knowledge_base", {"path": str(kb_dir)})
        assert added.data["files"] == 2 and "kb:handbook" in added.text
        listed = tools.call(rt, "list_knowledge_bases", {})
        assert [k["label"] for k in listed.data["knowledgeBases"]] == ["handbook"]
        with pytest.raises(tools.InvalidParams, match="does not exist"):
            tools.call(rt, "add_knowledge_base", {"path": str(tmp_path / "missing")})
        tools.call(rt, "remove_knowledge_base", {"path": str(kb_dir)})
        assert tools.call(rt, "list_knowledge_bases", {}).data == {"knowledgeBases": []}
    finally:
        rt.close()
    base = ["--root", str(project), "--index-dir", str(index)]
    assert cli.main(["kb", "add", str(kb_dir), *base]) == 0
    assert "added kb:handbook" in capsys.readouterr().out
    assert cli.main(["kb", "list", *base, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["files"] == 2
    assert cli.main(["kb", "remove", "handbook", *base]) == 0
    assert cli.main(["kb", "remove", *base]) == 1
    assert "needs a folder" in capsys.readouterr().err
