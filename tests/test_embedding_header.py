"""The embedded text of a chunk (`embedder.embedding_text`) and its cache key, with and without the
file/symbol header (`embedder.EMBED_HEADER`), against a real provider server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebase_index import embedder
from codebase_index.embedder import embedding_header, embedding_key, embedding_text
from codebase_index.processing import chunk_hash
from codebase_index.service import Engine
from provider_server import serve
from test_vectors import embedded_texts, make_repo, remote_config

BODY = "def shared_helper(value):\n    return value * 2 + 1\n"
# The same file content at two paths: one content key, so the same chunk rows under two files.
FILES = {
    "src/a.py": BODY,
    "lib/b.py": BODY,
    "web/app.ts": "export function renderPage(): string {\n  return '';\n}\n",
}


def test_embedding_text_puts_the_header_first_only_when_asked() -> None:
    text = "def send(self):\n    pass"
    assert embedding_text("src/s.py", "Session.send", "method", text, header=False) == text
    assert (
        embedding_text("src/s.py", "Session.send", "method", text, header=True)
        == "src/s.py: method Session.send\n" + text
    )
    assert embedding_header("README.md", "", "doc") == "README.md\n", "no symbol: the path alone"
    assert embedding_header("m.py", "a,\n  b", "block") == "m.py: block a, b\n", "whitespace folded"


def test_long_symbol_lists_are_cut_at_a_name_boundary() -> None:
    names = ", ".join(f"CONSTANT_NUMBER_{i}" for i in range(40))
    header = embedding_header("consts.py", names, "block")
    symbol = header.removeprefix("consts.py: block ").rstrip("\n")
    assert len(symbol) <= 120 and names.startswith(symbol) and symbol.endswith(",")
    assert header.count("\n") == 1 and header.endswith("\n")


def test_embedding_key_follows_the_embedded_text() -> None:
    h = chunk_hash("x = 1")
    assert embedding_key("a.py", "x", "block", h, header=False) == h, "text only: the chunk hash"
    with_a = embedding_key("a.py", "x", "block", h, header=True)
    assert with_a != h
    assert with_a == embedding_key("a.py", "x", "block", h, header=True), "deterministic"
    assert with_a != embedding_key("b.py", "x", "block", h, header=True), "another path, another text"
    assert with_a != embedding_key("a.py", "y", "block", h, header=True), "another symbol"
    assert with_a != embedding_key("a.py", "x", "block", chunk_hash("x = 2"), header=True)


@pytest.mark.parametrize("header", [False, True])
def test_same_text_at_two_paths_embeds_once_without_header_twice_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, header: bool
) -> None:
    monkeypatch.setattr(embedder, "EMBED_HEADER", header)
    root = make_repo(tmp_path / "repo", FILES)
    with serve(dims=8) as server:
        engine = Engine(root, remote_config(server.base_url), index_path=tmp_path / "idx")
        engine.index()
        report = engine.embed()
        assert report is not None and report.failed == 0 and report.pending == 0
        texts = embedded_texts(server)
        shared = [t for t in texts if t.endswith(BODY.strip())]
        if header:
            assert sorted(shared) == [
                "lib/b.py: function shared_helper\n" + BODY.strip(),
                "src/a.py: function shared_helper\n" + BODY.strip(),
            ]
        else:
            assert shared == [BODY.strip()]
        status = engine.status().embeddings
        assert status is not None and status.embedded == status.total == len(texts)
        vecs = engine.vector_snapshot()
        assert vecs is not None and len(vecs) == vecs.n_docs, "every document found its vector"
        again = engine.embed()
        assert again is not None and again.embedded == 0 and len(embedded_texts(server)) == len(texts)
        engine.close()


def test_gc_keeps_header_vectors_still_needed_and_drops_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedder, "EMBED_HEADER", True)
    root = make_repo(tmp_path / "repo", FILES)
    with serve(dims=8) as server:
        engine = Engine(root, remote_config(server.base_url), index_path=tmp_path / "idx")
        engine.index()
        engine.embed()
        count = "SELECT COUNT(*) FROM embeddings"
        before = engine.store.conn.execute(count).fetchone()[0]
        (root / "lib" / "b.py").unlink()  # its chunk lives on in src/a.py, but not under b.py's header
        engine.index()
        report = engine.gc()
        assert report.embeddings_removed == 1
        assert engine.store.conn.execute(count).fetchone()[0] == before - 1
        status = engine.status().embeddings
        assert status is not None and status.embedded == status.total == before - 1
        again = engine.embed()
        assert again is not None and again.embedded == 0, "nothing still needed was dropped"
        engine.close()
