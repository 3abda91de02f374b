"""A cloned repository whose indexed files are swapped after indexing: for a link to a file outside the
project, a FIFO, /dev/zero (through a link or as a device node) or a folder. Answers (search with
context lines, codebase_context, codebase_edit_context, implementation_lookup, savings) must never read
the swapped-in thing, never hang and never read without bound: they answer from the indexed content and
the path is re-indexed. Path-level re-index (`notify/filesChanged`, the watcher) must not follow a link
out of the project either.

Every call that could hang on the old code runs in a thread with a deadline; a FIFO left waiting is
opened for writing so the stuck reader returns. Memory is capped while /dev/zero is in reach.
"""

from __future__ import annotations

import contextlib
import os
import resource
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codebase_index import tools
from codebase_index.files import FileRules
from codebase_index.models import SkippedFile

OUTSIDE_SECRET = "outside-secret-3c91f7"
PRICING = '''def apply_discount(total, code):
    """Take the discount a voucher code grants off a total."""
    if code == "HALF":
        return total / 2
    return total
'''
CART = """from pricing import apply_discount


def checkout(total, code):
    return apply_discount(total, code) * 1.2
"""
DEADLINE_S = 30.0


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, tools.Runtime]]:
    root = tmp_path / "cloned"
    root.mkdir()
    (root / "pricing.py").write_text(PRICING)
    (root / "cart.py").write_text(CART)
    (tmp_path / "outside.py").write_text(f"def apply_discount(total, code):\n    return '{OUTSIDE_SECRET}'\n")
    rt = tools.Runtime(root, index_dir=tmp_path / "index")
    rt.writer().index()
    yield root, rt
    rt.close()


@contextlib.contextmanager
def memory_capped(extra: int = 1 << 30) -> Iterator[None]:
    """Cap this process's address space at its current size plus `extra` while the block runs, so an
    unbounded read of /dev/zero fails with MemoryError instead of eating the machine."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as fh:
        current = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    cap = current + extra if hard == resource.RLIM_INFINITY else min(current + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def within_deadline(fn: Callable[[], Any], fifo: Path | None = None) -> Any:
    """fn() in a thread; fails (instead of hanging the suite) when it does not return in time."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # handed to the test thread
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    if thread.is_alive():
        if fifo is not None:  # a writer that comes and goes releases a reader blocked in open()
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail(f"hung for {DEADLINE_S}s reading a swapped file")
    if "error" in out:
        raise out["error"]
    return out["value"]


def answers(rt: tools.Runtime) -> dict[str, str]:
    """The text of every answer that reads project files from disk. The re-index the first answer
    queues waits (index_lock held) until all have answered, so each meets the swapped file."""
    with rt.index_lock:
        return _answers(rt)


def _answers(rt: tools.Runtime) -> dict[str, str]:
    texts = {}
    search = tools.call(rt, "codebase_search", {"query": "apply_discount voucher", "contextLines": 2})
    texts["search"] = search.text
    texts["context"] = tools.call(rt, "codebase_context", {"query": "apply_discount"}).text
    texts["edit"] = tools.call(rt, "codebase_edit_context", {"target": "apply_discount"}).text
    texts["lookup"] = tools.call(rt, "implementation_lookup", {"query": "apply_discount"}).text
    return texts


def assert_indexed_content(texts: dict[str, str]) -> None:
    for name, text in texts.items():
        assert OUTSIDE_SECRET not in text, name
        assert "\x00" not in text, name
    # The swapped file's lines come from the index: its definition is still shown.
    for name in ("search", "context", "edit", "lookup"):
        assert 'if code == "HALF":' in texts[name], name


def assert_reindexed(rt: tools.Runtime, path: str) -> None:
    """The answer queued the path: it was re-indexed and is no longer an indexed file."""
    rt.wait_reindexed()
    engine = rt.writer()
    assert path not in engine.store.file_rows(engine.branch())
    skipped = {row.path: row.reason for row in engine.store.skipped(engine.branch())}
    assert skipped.get(path) in ("ignored", "unreadable")


def test_file_swapped_for_a_link_outside_answers_from_the_index(project: tuple[Path, tools.Runtime]) -> None:
    root, rt = project
    (root / "pricing.py").unlink()
    (root / "pricing.py").symlink_to(root.parent / "outside.py")
    texts = within_deadline(lambda: answers(rt))
    assert_indexed_content(texts)
    assert_reindexed(rt, "pricing.py")


def test_file_swapped_for_a_fifo_does_not_hang(project: tuple[Path, tools.Runtime]) -> None:
    root, rt = project
    fifo = root / "pricing.py"
    fifo.unlink()
    os.mkfifo(fifo)
    texts = within_deadline(lambda: answers(rt), fifo=fifo)
    assert_indexed_content(texts)
    assert_reindexed(rt, "pricing.py")


def test_file_swapped_for_a_link_to_dev_zero_is_not_read(project: tuple[Path, tools.Runtime]) -> None:
    root, rt = project
    (root / "pricing.py").unlink()
    (root / "pricing.py").symlink_to("/dev/zero")
    with memory_capped():
        texts = within_deadline(lambda: answers(rt))
    assert_indexed_content(texts)
    assert_reindexed(rt, "pricing.py")


def test_file_swapped_for_a_device_node_is_not_read(project: tuple[Path, tools.Runtime]) -> None:
    root, rt = project
    (root / "pricing.py").unlink()
    try:
        os.mknod(root / "pricing.py", 0o644 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers
    except (PermissionError, AttributeError):
        pytest.skip("creating a device node needs privileges")
    with memory_capped():
        texts = within_deadline(lambda: answers(rt))
    assert_indexed_content(texts)
    assert_reindexed(rt, "pricing.py")


def test_file_swapped_for_a_folder_answers_from_the_index(project: tuple[Path, tools.Runtime]) -> None:
    root, rt = project
    (root / "pricing.py").unlink()
    (root / "pricing.py").mkdir()
    texts = within_deadline(lambda: answers(rt))
    assert_indexed_content(texts)
    rt.wait_reindexed()
    engine = rt.writer()
    assert "pricing.py" not in engine.store.file_rows(engine.branch())


def test_savings_neither_stat_nor_read_through_a_link(project: tuple[Path, tools.Runtime]) -> None:
    root, rt = project
    big = root.parent / "big_outside.py"
    big.write_text("x = 1\n" * 20_000)
    (root / "pricing.py").unlink()
    (root / "pricing.py").symlink_to(big)
    search = within_deadline(lambda: tools.call(rt, "codebase_search", {"query": "apply_discount"}))
    # Only cart.py (a real file) counts; the link's 20,000-line target would dwarf it.
    assert search.data["savings"]["fileTokens"] < 200


def test_read_inside_refuses_links_on_the_way_and_paths_leaving_the_root(tmp_path: Path) -> None:
    from codebase_index.files import read_inside, stat_inside

    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.py").write_text(f"a = '{OUTSIDE_SECRET}'\n")
    (root / "linked").symlink_to(tmp_path / "elsewhere")
    assert read_inside(root, "src/a.py", 1000) == "a = 1\n"
    for rel in (
        "linked/a.py",
        "../elsewhere/a.py",
        "src/../../elsewhere/a.py",
        str(tmp_path / "elsewhere/a.py"),
    ):
        got = read_inside(root, rel, 1000)
        assert isinstance(got, SkippedFile) and got.reason == "unreadable", rel
        assert stat_inside(root, rel) is None
    (root / "src" / "big.py").write_text("b = 2\n" * 100)
    too_big = read_inside(root, "src/big.py", 100)
    assert isinstance(too_big, SkippedFile) and too_big.reason == "too-large"


def test_path_level_reindex_does_not_follow_a_linked_folder_out(tmp_path: Path) -> None:
    root = tmp_path / "cloned"
    root.mkdir()
    (root / "main.py").write_text("def main():\n    return 1\n")
    outside = tmp_path / "etc"
    outside.mkdir()
    (outside / "passwd.py").write_text(f"root = '{OUTSIDE_SECRET}'\n")
    rt = tools.Runtime(root, index_dir=tmp_path / "index")
    try:
        rt.writer().index()
        (root / "linkdir").symlink_to(outside)
        rt.reindex_paths(["linkdir/passwd.py", str(root / "linkdir" / "passwd.py"), "../etc/passwd.py"])
        engine = rt.writer()
        assert set(engine.store.file_rows(engine.branch())) == {"main.py"}
        found = tools.call(rt, "codebase_search", {"query": "root", "contextLines": 1})
        assert OUTSIDE_SECRET not in found.text
    finally:
        rt.close()
    rules = FileRules(root)
    assert rules.check("linkdir/passwd.py") is None
    assert rules.check("../etc/passwd.py") is None
