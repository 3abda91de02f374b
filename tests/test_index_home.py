"""The index lives in `<project>/.codebase-index/` (issue 26), not under `.opencode/` where OpenCode runs npm;
an old `.opencode/index` is moved over once, keeping its vectors; a hostile repository's links and files
are never followed, moved or deleted; a read-only project keeps its index in the user cache."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from codebase_index import cli, repos
from codebase_index.config import Config, ConfigError, index_dir
from codebase_index.index_dir import GITIGNORE_TEXT
from codebase_index.index_home import user_cache_index_dir
from codebase_index.service import Engine

PY = Path(__file__).resolve().parents[1] / "python"


def project(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "app.py").write_text("def compute_invoice_total(lines):\n    return sum(lines)\n")
    (root / "util.py").write_text("def parse_wombat_date(text):\n    return text.split('-')\n")
    return root


def build(root: Path, index: Path | None = None) -> tuple[int, int, int]:
    """Index and embed; (files, chunks, embedded)."""
    engine = Engine(root, index_path=index, workers=1)
    try:
        engine.index()
        engine.embed()
        return counts(engine)
    finally:
        engine.close()


def counts(engine: Engine) -> tuple[int, int, int]:
    st = engine.status()
    assert st.embeddings is not None
    return st.files, st.chunks, st.embeddings.embedded


def test_default_index_is_codebase_index_with_its_own_gitignore_and_never_indexed(tmp_path: Path) -> None:
    root = project(tmp_path / "proj")
    engine = Engine(root, workers=1)
    try:
        assert engine.index_dir == root.resolve() / ".codebase-index"
        (root / ".codebase-index").mkdir()
        (root / ".codebase-index" / "planted.py").write_text("def planted_in_index_folder():\n    pass\n")
        engine.index(embed=False)
        st = engine.status()
        assert st.index_dir == str(root.resolve() / ".codebase-index")
        assert st.files == 2  # app.py, util.py: nothing under .codebase-index
        hits = engine.search("planted_in_index_folder", mode="keyword").results
        assert all(not h.path.startswith(".codebase-index") for h in hits)
    finally:
        engine.close()
    assert (root / ".codebase-index" / ".gitignore").read_text() == GITIGNORE_TEXT
    assert not (root / ".opencode").exists()


def test_an_old_opencode_index_moves_over_with_its_vectors(tmp_path: Path) -> None:
    root = project(tmp_path / "proj")
    old = root / ".opencode" / "index"
    before = build(root, old)  # what an older version built
    assert before[2] > 0
    engine = Engine(root, workers=1)  # the first start of this version
    try:
        assert engine.index_dir == root.resolve() / ".codebase-index"
        assert counts(engine) == before  # same files, chunks and vectors, nothing re-indexed
        answer = engine.search("invoice total")
        assert answer.results and answer.results[0].path == "app.py"
        assert engine.status().index_dir == str(root.resolve() / ".codebase-index")
    finally:
        engine.close()
    assert (root / ".codebase-index" / "codebase.db").is_file()
    assert not (root / ".opencode").exists()  # it held only our index


def test_the_repository_registry_follows_the_move(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(repos.REGISTRY_ENV, str(tmp_path / "registry.json"))
    root = project(tmp_path / "proj")
    old = root / ".opencode" / "index"
    build(root, old)  # registered with its old index folder
    assert [e.index_dir for e in repos.list_repos()] == [str(old.resolve())]
    Engine(root, workers=1).close()  # moves it
    assert [e.index_dir for e in repos.list_repos()] == [str(root.resolve() / ".codebase-index")]


def test_the_move_keeps_the_users_opencode_folder_and_never_overwrites_a_new_index(tmp_path: Path) -> None:
    root = project(tmp_path / "proj")
    build(root, root / ".opencode" / "index")
    (root / ".opencode" / "codebase-index.json").write_text("{}\n")
    engine = Engine(root, workers=1)
    engine.close()
    assert (root / ".codebase-index" / "codebase.db").is_file()
    assert (root / ".opencode" / "codebase-index.json").read_text() == "{}\n"  # the config stays
    # Both exist (an older version started again): the new one is used, the old one left alone.
    build(root, root / ".opencode" / "index")
    engine = Engine(root, workers=1)
    engine.close()
    assert engine.index_dir == root.resolve() / ".codebase-index"
    assert (root / ".opencode" / "index" / "codebase.db").is_file()


def test_the_move_refuses_links_and_files(tmp_path: Path) -> None:
    # `.opencode/index` a link out of the project: not followed, not moved, nothing deleted.
    elsewhere = tmp_path / "victim"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine\n")
    root = project(tmp_path / "a")
    (root / ".opencode").mkdir()
    (root / ".opencode" / "index").symlink_to(elsewhere)
    engine = Engine(root, workers=1)
    engine.close()
    assert engine.index_dir == root.resolve() / ".codebase-index"
    assert (root / ".opencode" / "index").is_symlink()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.txt"]
    # A link inside the project: not moved either (the target stays where it is).
    root = project(tmp_path / "b")
    (root / "data").mkdir()
    (root / ".opencode").mkdir()
    (root / ".opencode" / "index").symlink_to(root / "data")
    Engine(root, workers=1).close()
    assert (root / ".opencode" / "index").is_symlink() and (root / "data").is_dir()
    # A file named `.opencode/index`: left as it is.
    root = project(tmp_path / "c")
    (root / ".opencode").mkdir()
    (root / ".opencode" / "index").write_text("user notes\n")
    Engine(root, workers=1).close()
    assert (root / ".opencode" / "index").read_text() == "user notes\n"
    # `.opencode` itself a link to a folder holding an index: never moved out of there.
    outside = tmp_path / "outside-opencode"
    build(project(tmp_path / "d-src"), outside / "index")
    root = project(tmp_path / "d")
    (root / ".opencode").symlink_to(outside)  # the engine refuses such a project's config (trust.py)
    assert index_dir(root.resolve(), Config()) == root.resolve() / ".codebase-index"
    assert (outside / "index" / "codebase.db").is_file()


def test_files_a_repository_commits_under_opencode_index_stay_where_they_are(tmp_path: Path) -> None:
    """A real `.opencode/index` folder without the `.gitignore` every index folder gets is the repository's
    own (tracked) files: moving them would change the user's checkout."""
    from git_repo import GitRepo, git

    root = tmp_path / "cloned"
    GitRepo(root).commit(
        "ship an index folder", {"app.py": "def f():\n    pass\n", ".opencode/index/notes.md": "ours\n"}
    )
    engine = Engine(root, workers=1)
    engine.close()
    assert engine.index_dir == root.resolve() / ".codebase-index"
    assert (root / ".opencode" / "index" / "notes.md").read_text() == "ours\n"
    assert git(root, "status", "--porcelain").strip() == ""


def test_a_codebase_index_link_out_of_the_project_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path / "cloned")
    elsewhere = tmp_path / "victim-folder"
    elsewhere.mkdir()
    (root / ".codebase-index").symlink_to(elsewhere)
    with pytest.raises(ConfigError, match="leads outside the project"):
        Engine(root, workers=1)
    assert cli.main(["index", str(root), "--keyword-only"]) == 1
    assert list(elsewhere.iterdir()) == []
    # An old index is not moved onto the link either.
    (root / ".opencode").mkdir()
    (root / ".opencode" / "index").mkdir()
    with pytest.raises(ConfigError, match="leads outside the project"):
        Engine(root, workers=1)
    assert (root / ".opencode" / "index").is_dir() and list(elsewhere.iterdir()) == []


def test_an_old_index_in_use_by_another_process_is_used_where_it_is(tmp_path: Path) -> None:
    root = project(tmp_path / "proj")
    old = root / ".opencode" / "index"
    build(root, old)
    fd = os.open(old / "sidecar.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # an older sidecar still serving it
        engine = Engine(root, workers=1)
        engine.close()
        assert engine.index_dir == old.resolve()
        assert not (root / ".codebase-index").exists()
    finally:
        os.close(fd)
    engine = Engine(root, workers=1)  # its next start moves it
    engine.close()
    assert engine.index_dir == root.resolve() / ".codebase-index"


def test_processes_starting_at_once_move_it_once(tmp_path: Path) -> None:
    root = project(tmp_path / "proj")
    before = build(root, root / ".opencode" / "index")
    code = (
        "import sys; from pathlib import Path; from codebase_index.config import index_dir, load_config\n"
        "r = Path(sys.argv[1]).resolve(); print(index_dir(r, load_config(r)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(PY)}
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(4)
    ]
    outs = {p.communicate()[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert outs == {str(root.resolve() / ".codebase-index")}
    engine = Engine(root, workers=1)
    try:
        assert counts(engine) == before
    finally:
        engine.close()


def test_a_read_only_project_keeps_its_index_in_the_user_cache(tmp_path: Path) -> None:
    """chmod 0555 does not stop root: as root the CLI runs as `nobody` (in a folder it can reach)."""
    as_root = os.geteuid() == 0
    if as_root and shutil.which("setpriv") is None:
        pytest.skip("running as root, where chmod 0555 stops nothing, and no setpriv to run as nobody")
    base = Path(tempfile.mkdtemp()) if as_root else tmp_path
    try:
        os.chmod(base, 0o755)
        home = base / "home"
        home.mkdir(mode=0o777)
        os.chmod(home, 0o777)
        root = project(base / "ro")
        os.chmod(root, 0o555)
        env = {**os.environ, "PYTHONPATH": str(PY), "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")}
        for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "CODEBASE_INDEX_ROOT"):
            env.pop(name, None)
        drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if as_root else []

        def cli_run(*args: str) -> subprocess.CompletedProcess[str]:
            cmd = [*drop, sys.executable, "-m", "codebase_index.cli", *args]
            return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)

        expected = user_cache_index_dir(root.resolve()).relative_to(Path.home() / ".cache")
        expected = home / "cache" / expected
        assert (
            expected.name.startswith("ro-")
            and expected.parent == home / "cache" / "codebase-index" / "projects"
        )
        index = cli_run("index", str(root), "--keyword-only")
        assert index.returncode == 0, index.stderr
        status = cli_run("status", str(root))
        assert status.returncode == 0, status.stderr
        assert f"index:       {expected} " in status.stdout  # status says where
        assert (expected / "codebase.db").is_file()
        assert sorted(p.name for p in root.iterdir()) == ["app.py", "util.py"]
    finally:
        os.chmod(base / "ro", 0o755)
        if as_root:
            shutil.rmtree(base)
