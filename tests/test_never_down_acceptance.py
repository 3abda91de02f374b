"""Issue 10 acceptance, indexing side, as a user meets it: a real git repository holding a one-line JSON
file, a Latin-1 Python file, a file git keeps through a gitignore re-include and a `.csv` added by
`additionalInclude` indexes with exit 0 from the CLI, and all four are searchable. Before this round the
JSON file aborted the run (IndexError), the Latin-1 file was "binary", the re-included file was dropped and
the CSV was "unsupported: no chunker"."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from test_cli import run


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def test_every_kind_of_file_indexes_and_is_searchable(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src" / "sub").mkdir(parents=True)
    (root / ".opencode").mkdir()
    (root / ".opencode" / "codebase-index.json").write_text(
        '{\n  // the reference README\'s own example\n  "additionalInclude": ["**/*.csv"],\n}\n'
    )
    (root / "package.json").write_text('{"name":"zephyrdemo","version":"1.0.0","private":true}')
    (root / "legacy.py").write_bytes("def grüße_kunde():\n    return 'Grüße aus Köln'\n".encode("latin-1"))
    (root / ".gitignore").write_text("src/sub/**\n!src/sub/kept.py\n")
    (root / "src" / "sub" / "kept.py").write_text("def reincluded_helper():\n    return 42\n")
    (root / "src" / "sub" / "dropped.py").write_text("def ignored_helper():\n    return 0\n")
    (root / "prices.csv").write_text("sku,price\nquokka-plush,19.99\nwombat-mug,7.50\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    assert "src/sub/kept.py" in git(root, "ls-files")  # git keeps it

    proc = run("index", "--verbose", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "indexed 4 files" in proc.stdout, proc.stdout  # package.json, legacy.py, kept.py, prices.csv
    assert "src/sub/dropped.py" in proc.stdout and "error" not in proc.stdout

    def top(query: str) -> str:
        found = run("search", "--json", "--mode", "keyword", "--root", str(root), query)
        assert found.returncode == 0, found.stderr
        return json.loads(found.stdout)["results"][0]["path"]

    assert top("zephyrdemo") == "package.json"
    assert top("Grüße Köln") == "legacy.py"
    assert top("reincluded_helper") == "src/sub/kept.py"
    assert top("quokka plush price") == "prices.csv"
    hybrid = run("search", "--json", "--root", str(root), "wombat mug")
    assert hybrid.returncode == 0 and json.loads(hybrid.stdout)["results"][0]["path"] == "prices.csv"
    git(root, "add", "-A")
    assert not [
        p
        for p in git(root, "diff", "--cached", "--name-only").split()
        if p.startswith((".codebase-index", ".opencode/index"))
    ]
