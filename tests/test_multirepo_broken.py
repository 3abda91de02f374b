"""Issue 27: `repos: ["*"]` answers from every registered repository that can answer; one whose
configuration is broken is skipped with a note naming it and why, through the CLI and the sidecar."""

from __future__ import annotations

import json
from pathlib import Path

from codebase_index.config import index_dir, load_config
from test_multirepo import cli, two_repos
from test_rpc import Sidecar

__all__ = ["two_repos"]  # the fixture, used by name


def break_config(root: Path) -> None:
    (root / ".opencode").mkdir(exist_ok=True)
    (root / ".opencode" / "codebase-index.json").write_text('{"search": {"bm25": ')


def test_all_repos_skips_a_broken_repository_through_the_cli(two_repos: tuple[Path, Path]) -> None:
    alpha, beta = two_repos
    break_config(beta)
    proc = cli(
        "search", "--all-repos", "--json", "--mode", "keyword", "--root", str(alpha), "validate_payment"
    )
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["results"][0]["repo"] == "alpha"
    assert {r["repo"] for r in payload["results"]} == {"alpha"}
    assert "beta" in payload["note"] and "skipped" in payload["note"], payload["note"]
    assert "invalid JSON" in payload["note"]
    text = cli("search", "--all-repos", "--mode", "keyword", "--root", str(alpha), "validate_payment")
    assert text.returncode == 0 and "skipped beta" in text.stderr and "[alpha]" in text.stdout
    # Named on purpose, the broken repository is still an error that says why.
    named = cli("search", "--repo", "beta", "--root", str(alpha), "validate_payment")
    assert named.returncode != 0 and "invalid JSON" in named.stderr


def test_all_repos_skips_a_broken_repository_through_the_sidecar(
    two_repos: tuple[Path, Path], tmp_path: Path
) -> None:
    alpha, beta = two_repos
    break_config(beta)
    sidecar = Sidecar(alpha, index_dir(alpha, load_config(alpha)))  # the sidecar over alpha's own index
    try:
        found = sidecar.result("search", {"query": "validate_payment", "repos": ["*"], "mode": "keyword"})
        assert found["data"]["results"][0]["repo"] == "alpha", found
        assert "beta" in found["data"]["note"] and "skipped" in found["data"]["note"]
    finally:
        sidecar.close()
