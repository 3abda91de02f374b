"""Progress and status text for embeddings: the CLI's terminal bar and plain (piped) lines, and the one-line
embedding status the CLI and the sidecar's status tool share."""

from __future__ import annotations

import io
import time
from pathlib import Path

import msgspec

from codebase_index import tools
from codebase_index.cli import Progress
from codebase_index.embedder import EmbeddingStatus
from codebase_index.format import duration, format_embeddings
from project_config import write_project_config
from provider_server import serve
from test_vectors import make_repo, remote_config


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_progress_reports_start_periodic_pace_and_end() -> None:
    out, clock = io.StringIO(), Clock()
    progress = Progress(out, plain_every=10.0, clock=clock)
    progress("embed", 0, 1000)
    for done in range(64, 1000, 64):
        clock.now += 2.0  # 32 chunks/s
        progress("embed", done, 1000)
    clock.now += 1.0
    progress("embed", 1000, 1000)
    lines = out.getvalue().splitlines()
    assert lines[0] == "embed: started (1000 items)"
    assert lines[1] == "embed: 320/1000, 32.0/s, 21s left", "a line every 10 s with the pace"
    assert len(lines) == 5 and lines[-1] == "embed: 1000/1000 in 31s"


def test_interleaved_phases_each_keep_their_start_and_pace() -> None:
    """An index run chunks the next slice while it writes this one: each phase is announced once, paced
    from its own start, and ended once."""
    out, clock = io.StringIO(), Clock()
    progress = Progress(out, plain_every=10.0, clock=clock)
    for step in range(1, 11):
        clock.now += 3.0
        progress("chunk", step * 100, 1000)
        progress("write", (step - 1) * 100, 1000)
    clock.now += 3.0
    progress("write", 1000, 1000)
    lines = out.getvalue().splitlines()
    assert [line for line in lines if "started" in line] == [
        "chunk: started (1000 items)",
        "write: started (1000 items)",
    ]
    assert "chunk: 1000/1000 in 27s" in lines and "write: 1000/1000 in 30s" in lines
    periodic = [line for line in lines if "/s" in line]
    assert periodic and all(", 33.3/s" in line for line in periodic), periodic


def test_terminal_bar_redraws_one_line_and_ends_it() -> None:
    out, clock = Tty(), Clock()
    progress = Progress(out, clock=clock)
    progress("embed", 0, 200)
    clock.now += 5.0
    progress("embed", 100, 200)
    clock.now += 0.01
    progress("embed", 110, 200)  # too soon after the last draw: skipped
    clock.now += 5.0
    progress("embed", 200, 200)
    text = out.getvalue()
    assert "\n" not in text[:-1] and text.endswith("\n"), "one line, ended once"
    frames = text.strip().split("\r")
    assert frames[-1].startswith("    embed [##############################] 200/200, 20.0/s")
    assert "100/200, 20.0/s, 5s left" in text and "110/200" not in text


def test_embedding_status_line() -> None:
    base = EmbeddingStatus("embedded", "embedded:all-MiniLM-L6-v2", 384, 250, 1000, 0, 25.0)
    assert format_embeddings(base) == (
        "250/1000 chunks (25%) with embedded:all-MiniLM-L6-v2, 750 waiting (hybrid search uses the vectors "
        "there are)"
    )
    running = msgspec.structs.replace(base, running=True, failures=50, last_failure="HTTP 500")
    assert format_embeddings(running) == (
        "250/1000 chunks (25%) with embedded:all-MiniLM-L6-v2, embedding now at 25.0 chunks/s, ~28s left; "
        "50 failed, retried on the next run: HTTP 500"
    )
    # A pass still running once every chunk is done says nothing about embedding now; one chunk short of
    # done is not 100%.
    done = msgspec.structs.replace(base, embedded=1000, running=True)
    assert format_embeddings(done) == "1000/1000 chunks (100%) with embedded:all-MiniLM-L6-v2"
    almost = msgspec.structs.replace(base, embedded=2049, total=2050, running=True)
    assert format_embeddings(almost).startswith(
        "2049/2050 chunks (99%) with embedded:all-MiniLM-L6-v2, embedding now at 25.0 chunks/s"
    )
    none = EmbeddingStatus(None, None, None, 0, 10, 0, None, error="no embedding provider available")
    assert format_embeddings(none) == "none, keyword search only (no embedding provider available)"
    assert [duration(s) for s in (4.6, 185, 7800)] == ["5s", "3m05s", "2h10m"]


def test_sidecar_status_text_shows_embedding_progress(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", {"a.py": "def alpha():\n    return 1\n", "b.py": "X = 2\n"})
    with serve(dims=8, delay=0.5) as server:
        write_project_config(root, msgspec.to_builtins(remote_config(server.base_url)))
        rt = tools.Runtime(root, index_dir=tmp_path / "idx")
        try:
            tools.call(rt, "index", {})
            during = tools.call(rt, "status", {})  # the provider takes 0.5 s per request
            assert during.data["embeddings"]["running"] is True
            # status names the endpoint the texts go to (issue 13: private by default, say where code goes)
            expected = f"embeddings: 0/2 chunks (0%) with custom:fake-embed on {server.base_url}"
            assert f"{expected}, embedding now" in during.text, during.text
            deadline = time.monotonic() + 60
            while rt.embedding_running() and time.monotonic() < deadline:
                time.sleep(0.05)
            status = tools.call(rt, "status", {})
            emb = status.data["embeddings"]
            assert emb["running"] is False and emb["embedded"] == emb["total"] == 2
            assert "embeddings: 2/2 chunks (100%) with custom:fake-embed" in status.text
        finally:
            rt.close()
