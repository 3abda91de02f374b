"""Branch catalog, worktrees, detached HEAD, stale-branch GC, path-level and no-change re-indexing, on real
git repositories and a real SQLite index."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from codebase_index import git as gitfiles
from codebase_index.service import Engine
from codebase_index.watcher import Watcher


def git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return out.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "alpha.py").write_text("def alpha_handler():\n    return 'alpha'\n")
    (root / "pkg" / "beta.py").write_text("def beta_handler():\n    return 'beta'\n")
    git(root.parent, "init", "-q", "-b", "main", str(root))
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "one")
    return root


@pytest.fixture
def engine(repo: Path, tmp_path: Path) -> Engine:
    eng = Engine(repo, index_path=tmp_path / "index", workers=1)
    yield eng
    eng.close()


def symbols(engine: Engine, query: str) -> list[str]:
    return [r.symbol for r in engine.search(query, mode="keyword").results]


def test_worktree_and_detached_head_are_read_from_git_files(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "feature/x", str(wt))
    assert gitfiles.current_branch(repo) == "main"
    assert gitfiles.current_branch(wt) == "feature/x"
    gdir = gitfiles.git_dir(wt)
    assert gdir is not None and gdir.parent.name == "worktrees"
    assert gitfiles.common_dir(gdir) == (repo / ".git").resolve()
    assert gitfiles.local_branches(wt) == {"main", "feature/x"}
    assert gitfiles.worktree_heads(repo) == {"main", "feature/x"}
    sha = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "--detach")
    assert gitfiles.current_branch(repo) == f"detached:{sha}"
    git(repo, "pack-refs", "--all")
    assert gitfiles.local_branches(repo) == {"main", "feature/x"}  # from packed-refs now
    assert gitfiles.project_marker(repo) == ".git"
    assert gitfiles.project_marker(tmp_path) is None


def test_branch_reader_follows_checkouts_without_rereading_an_unchanged_head(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine asks for the branch on every search: `BranchReader` answers from two stat calls while
    nothing changed, and sees every checkout (a new branch, a detached HEAD, back), in a worktree too."""
    reads: list[Path] = []
    real = gitfiles.current_branch
    monkeypatch.setattr(gitfiles, "current_branch", lambda root: reads.append(root) or real(root))
    reader = gitfiles.BranchReader(repo)
    assert [reader() for _ in range(5)] == ["main"] * 5
    assert len(reads) == 2  # the first call learns where HEAD is, the second its signature
    git(repo, "checkout", "-q", "-b", "feature/y")
    assert reader() == "feature/y"
    sha = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "--detach")
    assert reader() == f"detached:{sha}"
    git(repo, "checkout", "-q", "main")
    assert reader() == "main"
    settled = len(reads)
    assert reader() == reader() == "main" and len(reads) <= settled + 1
    wt = tmp_path / "wt2"
    git(repo, "worktree", "add", "-q", "-b", "feature/z", str(wt))
    in_worktree = gitfiles.BranchReader(wt)
    assert in_worktree() == "feature/z"
    git(wt, "checkout", "-q", "-b", "feature/w")
    assert in_worktree() == "feature/w" and reader() == "main"
    plain = tmp_path / "plain"
    plain.mkdir()
    outside = gitfiles.BranchReader(plain)
    assert outside() == outside() == gitfiles.NO_GIT_BRANCH
    before = len(reads)
    assert outside() == gitfiles.NO_GIT_BRANCH and len(reads) == before  # no git: answered from the stat
    git(tmp_path, "init", "-q", "-b", "trunk", str(plain))
    assert outside() == "trunk"


def test_no_change_run_writes_nothing_and_a_same_size_edit_is_seen(engine: Engine, repo: Path) -> None:
    engine.index()
    generation = engine.store.generation()
    again = engine.index()
    assert (again.files_changed, again.files_removed, again.files_unchanged) == (0, 0, 2)
    assert engine.store.generation() == generation  # nothing written
    target = repo / "pkg" / "alpha.py"
    st = target.stat()
    target.write_text("def omega_handler():\n    return 'omega'\n")  # same length as before
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    report = engine.index()
    assert report.files_changed == 1
    assert symbols(engine, "omega_handler")[0] == "omega_handler"
    assert "alpha_handler" not in symbols(engine, "alpha_handler")


def test_stat_only_rescan_sees_edits_new_and_deleted_files(engine: Engine, repo: Path) -> None:
    """Folders whose mtime is old enough are trusted; files in them are still stat-checked, and a
    created or deleted file changes its folder's mtime, which sends the indexer back to the walk."""
    old = time.time_ns() - 10_000_000_000
    for folder in (repo, repo / "pkg"):
        os.utime(folder, ns=(old, old))
    engine.index()
    indexer = engine.indexer(engine.root)
    assert indexer._scan is not None  # folders are old: the walk was recorded
    engine.index()
    assert indexer._rescan_clean  # second run: stat-only
    (repo / "pkg" / "beta.py").write_text("def beta_handler():\n    return 'changed beta'\n")
    assert engine.index().files_changed == 1
    (repo / "pkg" / "gamma.py").write_text("def gamma_handler():\n    pass\n")
    assert engine.index().files == 3
    (repo / "pkg" / "gamma.py").unlink()
    report = engine.index()
    assert (report.files, report.files_removed) == (2, 1)


def test_run_paths_updates_only_the_named_files(engine: Engine, repo: Path) -> None:
    engine.index()
    (repo / "pkg" / "alpha.py").write_text("def alpha_renamed():\n    pass\n")
    (repo / "pkg" / "new.py").write_text("def brand_new():\n    pass\n")
    (repo / "pkg" / "beta.py").unlink()
    report = engine.index_paths(["pkg/alpha.py", str(repo / "pkg" / "new.py"), "pkg/beta.py"])
    assert (report.files_changed, report.files_removed) == (2, 1)
    assert symbols(engine, "alpha_renamed")[0] == "alpha_renamed"
    assert symbols(engine, "brand_new")[0] == "brand_new"
    assert "beta_handler" not in symbols(engine, "beta_handler")
    # an unchanged file named again costs no write
    generation = engine.store.generation()
    assert engine.index_paths(["pkg/new.py"]).files_changed == 0
    assert engine.store.generation() == generation
    # a deleted folder drops everything under it
    (repo / "pkg" / "alpha.py").unlink()
    (repo / "pkg" / "new.py").unlink()
    (repo / "pkg").rmdir()
    assert engine.index_paths(["pkg"]).files_removed == 2
    assert engine.status().files == 0


def test_path_level_update_of_an_unknown_branch_runs_in_full(engine: Engine, repo: Path) -> None:
    engine.index()
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "pkg" / "alpha.py").write_text("def alpha_feature():\n    pass\n")
    report = engine.index_paths(["pkg/alpha.py"])
    assert report.branch == "feature"
    assert report.files == 2  # the whole catalog, not just the one file
    assert engine.store.has_catalog("feature")


def test_branch_switch_seen_by_the_watcher_indexes_under_the_new_name(engine: Engine, repo: Path) -> None:
    """The reference plugin's bug: it re-indexed the new checkout under the OLD branch name. Here the
    watcher sees HEAD move, the engine reads HEAD first, and the rows land under the new branch."""
    engine.index()
    done: list[str] = []

    def reindex_all() -> None:
        done.append(engine.index().branch)

    watcher = Watcher([repo], reindex_paths=engine.index_paths, reindex_all=reindex_all, debounce=0.05)
    watcher.start()
    try:
        assert watcher.status.state == "watching"
        git(repo, "checkout", "-q", "-b", "feature")
        (repo / "pkg" / "alpha.py").write_text("def alpha_feature():\n    pass\n")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            rows = engine.store.file_stats("feature")
            if rows and engine.search("alpha_feature", mode="keyword").results:
                break
            time.sleep(0.05)
    finally:
        watcher.stop()
    assert "feature" in done
    assert watcher.status.branch_switches >= 1
    main_keys = engine.store.file_stats("main")
    feature_keys = engine.store.file_stats("feature")
    assert main_keys["pkg/alpha.py"][3] != feature_keys["pkg/alpha.py"][3]
    assert main_keys["pkg/beta.py"][3] == feature_keys["pkg/beta.py"][3]  # shared content, stored once
    git(repo, "checkout", "-q", "-f", "main")
    engine.index()
    assert symbols(engine, "alpha_handler")[0] == "alpha_handler"
    assert "alpha_feature" not in symbols(engine, "alpha_feature")


def test_stale_branches_are_garbage_collected(engine: Engine, repo: Path) -> None:
    engine.index()
    git(repo, "checkout", "-q", "-b", "doomed")
    (repo / "pkg" / "alpha.py").write_text("def doomed_only():\n    pass\n")
    engine.index()
    git(repo, "checkout", "-q", "-f", "main")
    engine.index()
    assert set(engine.store.branches()) == {"main", "doomed"}
    assert engine.gc().stale_catalogs == []  # the ref still exists
    git(repo, "branch", "-q", "-D", "doomed")
    report = engine.gc()
    assert report.stale_catalogs == ["doomed"]
    assert report.files_removed == 2 and report.contents_removed == 1
    assert set(engine.store.branches()) == {"main"}
    count = engine.store.conn.execute("SELECT COUNT(*) FROM chunks WHERE text LIKE '%doomed_only%'")
    assert count.fetchone()[0] == 0


def test_auto_gc_policy(engine: Engine, repo: Path) -> None:
    from codebase_index import upkeep

    engine.index()
    store = engine.store
    assert not upkeep.auto_gc_due(repo, engine.config, store)  # first check starts the clock
    assert store.get_meta(upkeep.META_LAST_GC) is not None
    now = time.time()
    assert not upkeep.auto_gc_due(repo, engine.config, store, now=now)
    assert upkeep.auto_gc_due(repo, engine.config, store, now=now + 8 * 86400)  # gcIntervalDays 7
