"""Crash safety and concurrency: SIGKILL at 20 random points of index runs on a generated repository,
searches while a writer indexes, and two projects (project and global scope) side by side."""

from __future__ import annotations

import os
import random
import signal
import threading
from pathlib import Path

import pytest

from codebase_index import indexer as indexer_module
from codebase_index.chunking import language_for_path
from codebase_index.config import Config, index_dir
from codebase_index.processing import content_key
from codebase_index.service import Engine
from codebase_index.store import Store

WORDS = [
    "parse",
    "render",
    "fetch",
    "cache",
    "retry",
    "merge",
    "token",
    "socket",
    "buffer",
    "ledger",
    "invoice",
    "schedule",
]


def module_text(i: int, version: int) -> str:
    rng = random.Random(i * 31 + version)
    funcs = []
    for j in range(rng.randint(2, 5)):
        a, b = rng.sample(WORDS, 2)
        funcs.append(
            f"def {a}_{b}_{i}_{j}(value, limit=10):\n"
            f'    """{a.title()} the {b} for module {i}, version {version}."""\n'
            f"    total = 0\n    for step in range(limit):\n        total += step * value\n"
            f"    return total  # v{version}marker{i}\n"
        )
    return "\n\n".join(funcs) + "\n"


def write_state(root: Path, version: int, n: int) -> dict[str, str]:
    """Version 1 and 2 differ in ~40% of files; a few files exist in only one of them."""
    state: dict[str, str] = {}
    for i in range(n):
        path = root / f"pkg{i % 6}" / f"mod_{i}.py"
        only_in = {0: 1, 1: 2}.get(i % 17)
        if only_in is not None and only_in != version:
            path.unlink(missing_ok=True)
            continue
        text = module_text(i, version if i % 5 < 2 else 0)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        state[path.relative_to(root).as_posix()] = text
    return state


def keys_of(state: dict[str, str]) -> dict[str, str]:
    return {p: content_key(language_for_path(p) or "", t) for p, t in state.items()}


def killed_run(root: Path, index: Path, kill_at: int) -> int:
    """Fork, index in the child and SIGKILL it at its `kill_at`-th progress event; returns the signal."""
    pid = os.fork()
    if pid == 0:  # child: everything it needs is imported already
        try:
            indexer_module.WRITE_BATCH_FILES = 7  # many transactions: many distinct kill points
            events = [0]

            def progress(phase: str, done: int, total: int) -> None:
                events[0] += 1
                if events[0] >= kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)

            Engine(root, index_path=index, workers=1).index(progress=progress)
        finally:
            os._exit(0)  # finished before the kill point: exit without running pytest's atexit
    _, status = os.waitpid(pid, 0)
    return os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0


def check_consistent(root: Path, index: Path, before: dict[str, str], after: dict[str, str]) -> None:
    store = Store.open(index, create=False)
    try:
        assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = store.file_stats("default")
        for path, (_, _, _, key, _) in rows.items():
            assert key in {before.get(path), after.get(path)}, path  # an old or a new version, never a mix
            n = store.conn.execute("SELECT n_chunks FROM contents WHERE key=?", (key,)).fetchone()
            assert n is not None, f"{path}: content row missing"
            stored = store.conn.execute("SELECT COUNT(*) FROM chunks WHERE content_key=?", (key,)).fetchone()
            assert stored[0] == n[0], f"{path}: half-written content"
        gone = set(before) - set(after)
        assert set(rows) <= set(before) | set(after)
        assert set(before) - gone <= set(rows) | set(after)
    finally:
        store.close()


def test_sigkill_at_twenty_random_points(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    index = tmp_path / "index"
    n = 120
    rng = random.Random(20)
    state = {1: write_state(root, 1, n)}
    engine = Engine(root, index_path=index, workers=1)
    engine.index()
    keys = {1: keys_of(state[1])}
    version = 1
    kills = recovered = 0
    for point in range(60):  # until 20 runs were really killed (a late kill point may let a run finish)
        if kills == 20:
            break
        target = 2 if version == 1 else 1
        state[target] = write_state(root, target, n)
        keys[target] = keys_of(state[target])
        kill_at = rng.randint(1, 12)
        sig = killed_run(root, index, kill_at)
        assert sig in (signal.SIGKILL, 0), f"point {point}"
        kills += sig == signal.SIGKILL
        check_consistent(root, index, keys[version], keys[target])
        # searches answer from whatever state was committed
        hits = engine.search(f"v{target}marker{point % n}", mode="keyword").results
        assert all(h.path in state[version] or h.path in state[target] for h in hits)
        report = engine.index()  # the next run completes and lands exactly on the new state
        assert {p: v[3] for p, v in engine.store.file_stats("default").items()} == keys[target]
        assert report.files == len(state[target])
        recovered += sig == signal.SIGKILL
        version = target
    engine.close()
    assert kills == recovered == 20


def test_no_database_locked_errors_while_searching_during_indexing(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    write_state(root, 1, 150)
    index = tmp_path / "index"
    writer = Engine(root, index_path=index, workers=1)
    writer.index()
    errors: list[BaseException] = []
    searches = [0]
    stop = threading.Event()

    def reader() -> None:
        engine = Engine(root, index_path=index, workers=1)
        try:
            while not stop.is_set():
                engine.search("parse render", mode="keyword")
                searches[0] += 1
        except BaseException as exc:  # the assertion below reports it
            errors.append(exc)
        finally:
            engine.close()

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for version in (2, 1, 2):
            write_state(root, version, 150)
            writer.index()
    finally:
        stop.set()
        thread.join(timeout=60)
        writer.close()
    assert errors == []
    assert searches[0] > 0


def test_two_projects_global_scope_do_not_collide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    config = Config(scope="global")
    roots = []
    for name in ("apricot", "blueberry"):
        root = tmp_path / "work" / name / "app"  # same folder name, different projects
        root.mkdir(parents=True)
        (root / "main.py").write_text(f"def {name}():\n    pass\n")
        roots.append(root)
    dirs = [index_dir(r, config) for r in roots]
    assert dirs[0] != dirs[1]
    assert all(str(d).startswith(str(tmp_path / "data")) for d in dirs)
    engines = [Engine(r, config) for r in roots]
    try:
        for e in engines:
            e.index()
        assert [r.symbol for r in engines[0].search("apricot", mode="keyword").results] == ["apricot"]
        assert [r.symbol for r in engines[1].search("blueberry", mode="keyword").results] == ["blueberry"]
        assert engines[0].search("blueberry", mode="keyword").results == []
        assert engines[1].search("apricot", mode="keyword").results == []
        assert engines[0].index_dir == dirs[0] and engines[1].index_dir == dirs[1]
    finally:
        for e in engines:
            e.close()
