"""Search tool parameters left unset follow the project's `search` configuration."""

from __future__ import annotations

from pathlib import Path

from codebase_index import tools


def make_project(root: Path, config: str) -> Path:
    root.mkdir()
    for i in range(6):
        (root / f"payment_{i}.py").write_text(f"def settle_payment_{i}(amount):\n    return amount * {i}\n")
    (root / ".opencode").mkdir()
    (root / ".opencode" / "codebase-index.json").write_text(config)
    return root


def test_max_results_and_include_context_come_from_config(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", '{"search": {"maxResults": 2, "includeContext": false}}')
    rt = tools.Runtime(root, index_dir=tmp_path / "index")
    try:
        tools.call(rt, "index", {"estimateOnly": False})
        result = tools.call(rt, "search", {"query": "settle payment amount", "mode": "keyword"})
        assert len(result.data["results"]) == 2
        assert "return amount" not in result.text  # locations only
        explicit = tools.call(rt, "search", {"query": "settle payment amount", "limit": 4, "mode": "keyword"})
        assert len(explicit.data["results"]) == 4
    finally:
        rt.close()


def test_default_config_shows_code(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", "{}")
    rt = tools.Runtime(root, index_dir=tmp_path / "index")
    try:
        tools.call(rt, "index", {})
        result = tools.call(rt, "search", {"query": "settle_payment_3", "mode": "keyword"})
        assert "return amount * 3" in result.text
        assert len(result.data["results"]) == 6  # maxResults 20 > matches
    finally:
        rt.close()
