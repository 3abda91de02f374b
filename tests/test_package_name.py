"""One name everywhere: PyPI's `codebase-index` is another project, so the Python distribution is
`local-codebase-index` (the npm package's name) and nothing tells a user to install the old name."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# What a user reads or is shown: docs, the plugin and launcher sources, the skill and commands, and every
# message the Python engine can print.
SHOWN = (
    "*.md",
    "plugin/**/*.md",
    "plugin/src/**/*.ts",
    "bin/*.mjs",
    "skill/**/*",
    "commands/*",
    "python/**/*.py",
)
OLD_INSTALL = re.compile(
    r"\b(?:pip3?|pipx|uv pip|uv tool|python3? -m pip) install(?:\s+-[-\w=]+)*\s+['\"]?codebase-index(?![-\w])"
)


def test_the_python_distribution_carries_the_npm_name() -> None:
    npm = json.loads((REPO / "package.json").read_text(encoding="utf-8"))["name"]
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert re.findall(r'^name = "(.+)"$', pyproject, re.M) == [npm] == ["local-codebase-index"]
    scripts = pyproject.split("[project.scripts]\n", 1)[1].split("\n\n", 1)[0]
    assert scripts == 'codebase-index = "codebase_index.cli:main"', "the command keeps its name"


def test_no_install_instruction_names_the_other_projects_package() -> None:
    files = {
        p for pattern in SHOWN for p in REPO.glob(pattern) if p.is_file() and "__pycache__" not in p.parts
    }
    assert len(files) > 50 and REPO / "README.md" in files and REPO / "plugin/src/bootstrap.ts" in files
    found = [
        f"{p.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
        for p in sorted(files)
        for text in [p.read_text(encoding="utf-8", errors="replace")]
        for m in OLD_INSTALL.finditer(text)
    ]
    assert found == []


def test_the_old_name_pattern_catches_what_it_must() -> None:
    for bad in (
        "pip install codebase-index",
        "pipx install 'codebase-index[minilm]'",
        "pip install -U codebase-index",
    ):
        assert OLD_INSTALL.search(bad), bad
    for good in (
        "pip install local-codebase-index",
        "pip install codebase-index-tools",
        "`codebase-index install`",
    ):
        assert not OLD_INSTALL.search(good), good
