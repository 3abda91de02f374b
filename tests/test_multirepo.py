"""Many repositories, one ranking: local multi-repository search over real indexes, and the same
repositories published to a real Qdrant store (qdrant-client's embedded mode, no server) and searched
from a process that has no local index."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from codebase_index import multirepo, repos
from codebase_index.backends import federated
from codebase_index.backends.base import BackendError
from codebase_index.backends.local import LocalBackend
from codebase_index.backends.publish import publish
from codebase_index.backends.qdrant import QdrantBackend, parse_target
from codebase_index.config import Config
from codebase_index.service import Engine
from project_config import write_project_config

ALPHA = {
    "billing/payments.py": '''"""Payment processing."""


def validate_payment(amount, currency):
    """Reject negative amounts and unknown currencies."""
    if amount <= 0:
        raise ValueError("amount must be positive")
    return currency in {"EUR", "USD"}


class Ledger:
    """Double-entry ledger of posted payments."""

    def post_entry(self, entry):
        self.entries.append(entry)
        return len(self.entries)
''',
    "billing/retry.py": '''def next_delay(attempt):
    """Exponential backoff for flaky payment gateways."""
    return min(30, 2 ** attempt)
''',
}
BETA = {
    "auth/tokens.ts": """export function refreshToken(session: Session): Session {
  // renew an expired OAuth access token with the refresh token
  return session.renew();
}

export class TokenCache {
  get(key: string): string | undefined {
    return this.items[key];
  }
}
""",
    "auth/headers.ts": """export function parseAuthorizationHeader(header: string): string[] {
  // split "Bearer <token>" into its scheme and credentials
  return header.split(" ");
}
""",
}
QUERIES = [
    "refreshToken",
    "validate_payment",
    "renew an expired oauth token",
    "exponential backoff for payment gateways",
    "Ledger post entry",
    "parse the authorization header",
]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def make_repo(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "initial")
    return root


def index(root: Path) -> None:
    engine = Engine(root, workers=1)
    try:
        engine.index()
        engine.embed()
    finally:
        engine.close()


@pytest.fixture
def two_repos(tmp_path: Path) -> tuple[Path, Path]:
    alpha = make_repo(tmp_path / "alpha", ALPHA)
    beta = make_repo(tmp_path / "beta", BETA)
    index(alpha)
    index(beta)
    return alpha, beta


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codebase_index.cli", *args],
        cwd=cwd,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )


def top(results: list[dict], n: int = 5) -> list[tuple[str, str, int]]:
    return [(r["repo"], r["path"], r["start_line"]) for r in results[:n]]


def local_search(root: Path, query: str) -> list[dict]:
    proc = cli("search", "--all-repos", "--json", "--top", "5", "--root", str(root), query)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["results"]


def test_registry_lists_every_indexed_repository(two_repos: tuple[Path, Path]) -> None:
    alpha, beta = two_repos
    assert [(e.name, e.root) for e in repos.list_repos()] == [
        ("alpha", str(alpha.resolve())),
        ("beta", str(beta.resolve())),
    ]
    proc = cli("repos", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [e["name"] for e in json.loads(proc.stdout)] == ["alpha", "beta"]
    with pytest.raises(repos.RegistryError, match="`codebase-index repos list` lists"):
        repos.resolve(["gamma"])


def test_all_repos_search_finds_a_symbol_of_another_repository(two_repos: tuple[Path, Path]) -> None:
    alpha, _ = two_repos
    # From inside repo A, a symbol that only repo B defines: today's single-repo search cannot see it.
    found = local_search(alpha, "refreshToken")
    assert found[0]["repo"] == "beta" and found[0]["symbol"] == "refreshToken"
    assert {r["repo"] for r in found} == {"alpha", "beta"}  # one ranking over both, each labelled
    assert found[0]["score"] == 1.0 and all(r["score"] <= 1.0 for r in found)
    text = cli("search", "--all-repos", "--root", str(alpha), "refreshToken").stdout
    assert text.startswith("[beta] auth/tokens.ts:1-4")
    # Naming repositories narrows the search; the single-repository search is unchanged.
    only = cli("search", "--repo", "alpha", "--json", "--root", str(alpha), "refreshToken")
    assert {r["repo"] for r in json.loads(only.stdout)["results"]} == {"alpha"}
    single = json.loads(cli("search", "--json", "--root", str(alpha), "refreshToken").stdout)
    assert all(r["path"].startswith("billing/") and "repo" not in r for r in single["results"])


def test_multi_repository_search_takes_keyword_mode(two_repos: tuple[Path, Path]) -> None:
    alpha, _ = two_repos
    proc = cli("search", "--all-repos", "--mode", "keyword", "--json", "--root", str(alpha), "refreshToken")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["strategy"] == "keyword" and payload.get("note") is None, payload
    assert payload["results"][0]["repo"] == "beta" and payload["results"][0]["symbol"] == "refreshToken"
    semantic = cli("search", "--all-repos", "--mode", "semantic", "--root", str(alpha), "refreshToken")
    assert semantic.returncode == 1 and "hybrid or keyword" in semantic.stderr


def test_published_collection_answers_like_the_local_indexes(
    two_repos: tuple[Path, Path], tmp_path: Path
) -> None:
    alpha, _ = two_repos
    store = tmp_path / "qdrant-store"
    for root in two_repos:
        proc = cli("publish", "--to", f"qdrant+local://{store}#team", "--json", "--root", str(root))
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        assert report["sent"] == report["chunks"] > 0 and report["without_vector"] == 0
    # A teammate's machine: no local index anywhere, only `backend` configured.
    client = tmp_path / "client"
    config = {"backend": {"kind": "qdrant", "url": f"qdrant+local://{store}", "collection": "team"}}
    write_project_config(client, config)
    env_registry = os.environ["CODEBASE_INDEX_REGISTRY"]
    os.environ["CODEBASE_INDEX_REGISTRY"] = str(tmp_path / "empty-registry.json")
    try:
        listed = cli("repos", "list", "--backend", "--json", "--root", str(client))
        assert listed.returncode == 0, listed.stderr
        assert [(r["name"], r["branch"]) for r in json.loads(listed.stdout)] == [
            ("alpha", "main"),
            ("beta", "main"),
        ]
        remote = {}
        for query in QUERIES:
            proc = cli("search", "--json", "--top", "5", "--root", str(client), query)
            assert proc.returncode == 0, proc.stderr
            payload = json.loads(proc.stdout)
            assert payload["strategy"] == "hybrid", payload
            remote[query] = payload["results"]
    finally:
        os.environ["CODEBASE_INDEX_REGISTRY"] = env_registry
    assert not (client / ".codebase-index").exists()  # answered from the collection, nothing indexed
    for query in QUERIES:
        assert top(remote[query]) == top(local_search(alpha, query)), query
    assert remote["refreshToken"][0]["symbol"] == "refreshToken"
    assert "renew()" in remote["refreshToken"][0]["preview"] + str(remote["refreshToken"][0])


def test_republishing_sends_only_the_changed_file(two_repos: tuple[Path, Path], tmp_path: Path) -> None:
    alpha, _ = two_repos
    backend = QdrantBackend.connect(f"qdrant+local://{tmp_path / 'store'}")
    engine = Engine(alpha, workers=1)
    try:
        first = publish(engine, backend, "alpha")
        assert first.sent == first.chunks and backend.count() == first.chunks
        again = publish(engine, backend, "alpha")
        assert (again.sent, again.deleted, again.unchanged) == (0, 0, first.chunks)
        # Another machine with the same checkout publishes: everything is already there, nothing is sent.
        other = Engine(alpha, index_path=tmp_path / "other-index", workers=1)
        try:
            assert publish(other, backend, "alpha").sent == 0
        finally:
            other.close()
        # One file changes: its function's body, and a function is added.
        changed_text = ALPHA["billing/retry.py"].replace("min(30,", "min(60,")
        (alpha / "billing" / "retry.py").write_text(
            changed_text + '\n\ndef jitter(delay):\n    """Spread retries."""\n    return delay * 0.9\n'
        )
        engine.index()
        changed = engine.store.conn.execute(
            "SELECT COUNT(*) FROM files f JOIN chunks c ON c.content_key = f.content_key "
            "WHERE f.branch = 'main' AND f.path = 'billing/retry.py'"
        ).fetchone()[0]
        third = publish(engine, backend, "alpha")
        assert third.sent == changed == 2  # both chunks of the changed file, nothing else
        assert third.deleted == 1  # the file's old single chunk
        assert third.unchanged == first.chunks - 1
        assert backend.count() == third.chunks
        records, _ = backend.client.scroll(backend.collection, limit=100, with_payload=["path", "start_line"])
        retry = sorted(r.payload["start_line"] for r in records if r.payload["path"] == "billing/retry.py")
        assert retry == [1, 6]
    finally:
        engine.close()
        backend.close()


def test_branches_are_filtered_like_local_search(two_repos: tuple[Path, Path], tmp_path: Path) -> None:
    alpha, _ = two_repos
    backend = QdrantBackend.connect(f"qdrant+local://{tmp_path / 'store'}")
    config = Config()
    try:
        engine = Engine(alpha, workers=1)
        try:
            publish(engine, backend, "alpha")
            git(alpha, "checkout", "-q", "-b", "feature")
            (alpha / "billing" / "refunds.py").write_text("def issue_refund(payment):\n    return -payment\n")
            engine.index()
            report = publish(engine, backend, "alpha")
            assert (report.branch, report.sent, report.linked) == ("feature", 1, report.chunks - 1)
        finally:
            engine.close()

        def hits(branch: str) -> list[str]:
            chosen = [r for r in backend.repos() if r.name == "alpha"]
            chosen = [type(r)(r.name, branch, r.chunks, r.root, r.model) for r in chosen]
            found, _, _ = federated.search(
                backend, "issue_refund", chosen, config, multirepo.query_embedder(config, "issue_refund")
            )
            return [r.symbol for r in found]

        assert hits("feature")[0] == "issue_refund"
        assert "issue_refund" not in hits("main")
        # The checkout decides the branch searched, as for a local search.
        git(alpha, "checkout", "-q", "main")
        assert next(r.branch for r in multirepo.backend_repos(backend, ["alpha"], alpha)) == "main"
    finally:
        backend.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_backend_failure_is_a_clear_error_and_local_search_still_works(
    two_repos: tuple[Path, Path], tmp_path: Path
) -> None:
    alpha, _ = two_repos
    port = closed_port()
    write_project_config(alpha, {"backend": {"url": f"qdrant://127.0.0.1:{port}/team"}})
    proc = cli("search", "--backend", "--root", str(alpha), "validate_payment")
    # Local indexes exist: the answer comes from them, with a note naming the failure.
    assert proc.returncode == 0, proc.stderr
    assert f"shared backend failed (qdrant at http://127.0.0.1:{port}" in proc.stderr
    assert "[alpha] billing/payments.py" in proc.stdout
    proc = cli("publish", "--root", str(alpha))
    assert proc.returncode == 1
    assert f"qdrant at http://127.0.0.1:{port}" in proc.stderr and "Traceback" not in proc.stderr
    assert cli("search", "--root", str(alpha), "validate_payment").returncode == 0  # local search unaffected
    with pytest.raises(BackendError, match="unknown backend address"):
        parse_target("redis://x")


def test_local_backend_scores_one_corpus(two_repos: tuple[Path, Path]) -> None:
    """Keyword candidates of several repositories are scored with the IDF of their union: the same
    chunk scores the same whichever repository list it is searched in, as long as the union is equal."""
    backend = LocalBackend.open(repos.list_repos())
    try:
        query = federated.parse_query("payment amount token", Config())
        both = backend.repos()
        kw = backend._keyword(query, [backend.view(r.name) for r in both], federated.Filters(), 50)
        assert {c.repo for c, _ in kw} == {"alpha", "beta"}
        assert all(s > 0 for _, s in kw) and [s for _, s in kw] == sorted((s for _, s in kw), reverse=True)
    finally:
        backend.close()


def test_search_and_peek_tools_take_repos(two_repos: tuple[Path, Path]) -> None:
    from codebase_index import tools

    alpha, _ = two_repos
    rt = tools.Runtime(alpha)
    try:
        found = tools.call(rt, "codebase_search", {"query": "refreshToken", "repos": ["*"], "limit": 3})
        assert found.text.startswith("[beta] auth/tokens.ts:1-4")
        first = msgspec.to_builtins(found.data["results"][0])
        assert first["repo"] == "beta" and first["symbol"] == "refreshToken"
        peek = tools.call(rt, "codebase_peek", {"query": "validate_payment", "repos": [".", "beta"]})
        assert peek.text.splitlines()[0].startswith("[alpha] billing/payments.py")
        assert {msgspec.to_builtins(h)["repo"] for h in peek.data["results"]} == {"alpha", "beta"}
        with pytest.raises(tools.InvalidParams, match="no indexed repository named 'gamma'"):
            tools.call(rt, "codebase_search", {"query": "x", "repos": ["gamma"]})
        plain = tools.call(rt, "codebase_search", {"query": "refreshToken"})
        assert "repo" not in msgspec.to_builtins(plain.data["results"][0])
    finally:
        rt.close()


def test_context_tool_takes_repos(two_repos: tuple[Path, Path]) -> None:
    from codebase_index import tools

    alpha, _ = two_repos
    rt = tools.Runtime(alpha)
    try:
        pack = tools.call(rt, "codebase_context", {"query": "renew an expired oauth token", "repos": ["*"]})
        paths = [item["path"] for item in pack.data["items"]]
        assert (
            "[beta] auth/tokens.ts" in paths
        )  # another repository's evidence, labelled, from its chunk text
        assert "return session.renew();" in pack.text
        own = tools.call(rt, "codebase_context", {"query": "renew an expired oauth token"})
        assert not any(item["path"].startswith("[") for item in own.data["items"])
    finally:
        rt.close()
