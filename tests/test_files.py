from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codebase_index.files import FileRules, discover, read_text
from codebase_index.models import SKIP_REASONS, DiscoveredFile, SkippedFile
from codebase_index.patterns import ALWAYS_SKIP_DIRS, DEFAULT_INCLUDE, IgnoreRules, expand_braces


def write(root: Path, rel: str, content: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def paths(root: Path, **kwargs: object) -> list[str]:
    return [f.path for f in discover(root, **kwargs).files]  # type: ignore[arg-type]


def skipped(root: Path, **kwargs: object) -> dict[str, SkippedFile]:
    return {s.path: s for s in discover(root, **kwargs).skipped}  # type: ignore[arg-type]


def test_discovered_files_are_sorted_relative_posix_with_stat_fields(tmp_path: Path) -> None:
    write(tmp_path, "b.py")
    write(tmp_path, "a/z.ts", "let a = 1;\n")
    write(tmp_path, "a.go", "package a\n")
    result = discover(tmp_path)
    assert [f.path for f in result.files] == ["a.go", "a/z.ts", "b.py"]
    f = result.files[1]
    st = os.stat(tmp_path / "a" / "z.ts")
    assert f == DiscoveredFile("a/z.ts", str(tmp_path / "a" / "z.ts"), st.st_size, st.st_mtime_ns, st.st_ino)


def test_default_include_covers_chunker_languages_and_rejects_others(tmp_path: Path) -> None:
    for ext in ["kts", "lua", "ex", "exs", "hs", "zig", "hh", "cxx", "mts", "cts", "py", "md", "json", "htm"]:
        write(tmp_path, f"f.{ext}")
    write(tmp_path, "image.png", b"\x89PNG")
    write(tmp_path, "Makefile", "all:\n")
    got = set(paths(tmp_path))
    assert "f.kts" in got and "f.cts" in got and "f.htm" in got and len(got) == 14
    skips = skipped(tmp_path)
    assert skips["image.png"].reason == "unsupported"
    assert skips["Makefile"].reason == "unsupported"


def test_expand_braces_nested_and_unbalanced() -> None:
    assert expand_braces("a{b,c{d,e}}") == ["ab", "acd", "ace"]
    assert expand_braces("a{b") == ["a{b"]
    assert expand_braces("**/*.{x}") == ["**/*.{x}"]
    assert "**/*.tsx" in [p for raw in DEFAULT_INCLUDE for p in expand_braces(raw)]


def test_nested_gitignore_is_relative_to_its_folder(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log.py\n/top_only.py\n")
    write(tmp_path, "top_only.py")
    write(tmp_path, "sub/top_only.py")  # "/top_only.py" is anchored to the root
    write(tmp_path, "sub/.gitignore", "/local.py\ngen/\n")
    write(tmp_path, "sub/local.py")
    write(tmp_path, "local.py")  # sub/.gitignore must not reach outside sub/
    write(tmp_path, "sub/gen/a.py")
    write(tmp_path, "sub/deep/x.log.py")
    assert paths(tmp_path) == ["local.py", "sub/top_only.py"]
    skips = skipped(tmp_path)
    assert skips["sub/gen"] == SkippedFile("sub/gen", "ignored", "directory; sub/.gitignore")
    assert skips["sub/local.py"].detail == "sub/.gitignore"
    assert skips["sub/deep/x.log.py"].detail == ".gitignore"
    assert "sub/gen/a.py" not in skips  # an ignored folder is reported once, not walked


def test_negation_and_deeper_file_overrides_shallower(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.py\n!keep.py\n")
    write(tmp_path, "drop.py")
    write(tmp_path, "keep.py")
    write(tmp_path, "pkg/.gitignore", "!wanted.py\n")
    write(tmp_path, "pkg/wanted.py")
    write(tmp_path, "pkg/other.py")
    assert paths(tmp_path) == ["keep.py", "pkg/wanted.py"]


def test_git_info_exclude_and_codebaseindexignore(tmp_path: Path) -> None:
    write(tmp_path, ".git/info/exclude", "private.py\n")
    write(tmp_path, ".gitignore", "generated.py\n")
    write(tmp_path, "private.py")
    write(tmp_path, "generated.py")
    write(tmp_path, "big_fixture.py")
    write(tmp_path, "lib/.codebaseindexignore", "fixtures/\n")
    write(tmp_path, "lib/fixtures/f.py")
    write(tmp_path, "lib/code.py")
    # .codebaseindexignore is read after .gitignore in the same folder, so it can re-include.
    write(tmp_path, ".codebaseindexignore", "big_fixture.py\n!generated.py\n")
    assert paths(tmp_path) == ["generated.py", "lib/code.py"]
    skips = skipped(tmp_path)
    assert skips["private.py"].detail == ".git/info/exclude"
    assert skips["big_fixture.py"].detail == ".gitignore + .codebaseindexignore"
    assert skips["lib/fixtures"].detail == "directory; lib/.codebaseindexignore"
    assert skips[".git"].detail == "directory; always skipped"


def test_info_exclude_of_a_git_worktree(tmp_path: Path) -> None:
    git_dir = tmp_path / "main.git" / "worktrees" / "wt"
    write(git_dir, "commondir", "../..\n")
    write(tmp_path, "main.git/info/exclude", "secret_notes.md\n")
    root = tmp_path / "wt"
    write(root, ".git", f"gitdir: {git_dir}\n")
    write(root, "secret_notes.md")
    write(root, "readme.md")
    assert paths(root) == ["readme.md"]


def test_include_replaces_additional_extends_exclude_removes(tmp_path: Path) -> None:
    write(tmp_path, "a.py")
    write(tmp_path, "b.ts")
    write(tmp_path, "scripts/run.ps1", "echo\n")
    write(tmp_path, "src/generated/g.py")
    write(tmp_path, "src/types.d.ts")
    assert paths(tmp_path, include=["**/*.ts"]) == ["b.ts", "src/types.d.ts"]
    assert paths(tmp_path, include=["src/**/*.d.ts"]) == ["src/types.d.ts"]
    assert "scripts/run.ps1" in paths(tmp_path, additional_include=["scripts/*.ps1"])
    assert "a.py" in paths(tmp_path, additional_include=["scripts/*.ps1"])  # defaults kept
    kept = paths(tmp_path, exclude=["**/generated/**", "b.ts"])
    assert kept == ["a.py", "src/types.d.ts"]
    skips = skipped(tmp_path, exclude=["**/generated/**"])
    assert skips["src/generated"].detail == "directory; exclude option"


def test_exclude_beats_gitignore_negation(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "!a.py\n")
    write(tmp_path, "a.py")
    assert paths(tmp_path, exclude=["a.py"]) == []


def test_include_with_negation_uses_pattern_order(tmp_path: Path) -> None:
    write(tmp_path, "a.py")
    write(tmp_path, "a_test.py")
    assert paths(tmp_path, include=["**/*.py", "!**/*_test.py"]) == ["a.py"]


def test_always_skipped_dirs_hidden_dirs_secrets_locks_minified(tmp_path: Path) -> None:
    for d in ["node_modules", "dist", "vendor", "__pycache__", "target", ".venv", "build", ".next"]:
        assert d in ALWAYS_SKIP_DIRS
        write(tmp_path, f"{d}/x.js")
    write(tmp_path, ".hidden/x.py")
    write(tmp_path, "pkg.egg-info/PKG-INFO.txt")
    write(tmp_path, ".env", "TOKEN=1\n")
    write(tmp_path, ".env.local.json", "{}")
    write(tmp_path, "package-lock.json", "{}")
    write(tmp_path, "web/yarn.lock", "")
    write(tmp_path, "app.min.js", "a()")
    write(tmp_path, "app.js.map", "{}")
    write(tmp_path, ".eslintrc.json", "{}")  # hidden FILES are fine
    write(tmp_path, "app.js", "a()")
    assert paths(tmp_path) == [".eslintrc.json", "app.js"]
    skips = skipped(tmp_path)
    assert skips["node_modules"].detail == "directory; always skipped"
    assert skips[".hidden"].detail == "directory; hidden"
    assert skips["pkg.egg-info"].reason == "ignored"
    assert skips[".env"].detail.startswith("secrets")
    assert skips[".env.local.json"].detail.startswith("secrets")
    assert skips["web/yarn.lock"] == SkippedFile("web/yarn.lock", "generated", "lock file")
    assert skips["package-lock.json"].reason == "generated"
    assert skips["app.min.js"] == SkippedFile("app.min.js", "generated", "minified file or source map")
    assert skips["app.js.map"].reason == "generated"
    assert not any(p.startswith("node_modules/") for p in skips)


def test_too_large_and_zero_byte(tmp_path: Path) -> None:
    write(tmp_path, "big.py", "x" * 101)
    write(tmp_path, "edge.py", "x" * 100)
    write(tmp_path, "empty.py", "")
    assert paths(tmp_path, max_file_size=100) == ["edge.py", "empty.py"]
    assert skipped(tmp_path, max_file_size=100)["big.py"] == SkippedFile(
        "big.py", "too-large", "101 bytes > 100"
    )


def test_symlinks_never_followed_and_reported(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root, "real.py")
    write(root, "pkg/mod.py")
    write(tmp_path, "outside.py")
    (root / "link.py").symlink_to(root / "real.py")
    (root / "out.py").symlink_to(tmp_path / "outside.py")
    (root / "dirlink").symlink_to(root / "pkg", target_is_directory=True)
    (root / "up").symlink_to(tmp_path, target_is_directory=True)
    (root / "broken.py").symlink_to(root / "missing.py")
    (root / "loop_a.py").symlink_to(root / "loop_b.py")
    (root / "loop_b.py").symlink_to(root / "loop_a.py")
    result = discover(root)
    assert [f.path for f in result.files] == ["pkg/mod.py", "real.py"]  # indexed once, at the real path
    skips = {s.path: s for s in result.skipped}
    assert skips["link.py"] == SkippedFile("link.py", "ignored", "symlink to real.py (indexed there)")
    assert skips["out.py"].detail == "symlink to a file outside the root"
    assert skips["dirlink"].detail == "symlink to a directory (not followed)"
    assert skips["up"].detail == "symlink to a directory (not followed)"
    assert skips["broken.py"] == SkippedFile("broken.py", "unreadable", "broken symlink")
    assert skips["loop_a.py"].detail == "symlink loop"
    assert all(s.reason in SKIP_REASONS for s in result.skipped)


def test_fifo_is_not_a_regular_file(tmp_path: Path) -> None:
    write(tmp_path, "ok.py")
    os.mkfifo(tmp_path / "pipe.py")
    assert paths(tmp_path) == ["ok.py"]
    assert skipped(tmp_path)["pipe.py"] == SkippedFile("pipe.py", "unreadable", "not a regular file")
    # read_text must not block on it either (opened non-blocking, then rejected).
    got = read_text(str(tmp_path / "pipe.py"), "pipe.py")
    assert got == SkippedFile("pipe.py", "unreadable", "not a regular file")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions; FIFO/symlink tests cover it")
def test_unreadable_directory_and_file(tmp_path: Path) -> None:
    write(tmp_path, "locked/a.py")
    f = write(tmp_path, "secret.py")
    (tmp_path / "locked").chmod(0)
    f.chmod(0)
    try:
        skips = skipped(tmp_path)
        assert skips["locked"].reason == "unreadable"
        result = read_text(str(f), "secret.py")
        assert isinstance(result, SkippedFile) and result.reason == "unreadable"
    finally:
        (tmp_path / "locked").chmod(0o755)
        f.chmod(0o644)


def test_skipped_counts_and_nothing_silently_dropped(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "ignored.py\n")
    write(tmp_path, "ignored.py")
    write(tmp_path, "a.py")
    write(tmp_path, "pic.png", b"\x89PNG")
    write(tmp_path, "big.py", "x" * 50)
    write(tmp_path, "node_modules/m.js")
    result = discover(tmp_path, max_file_size=10)
    assert result.skipped_counts() == {"ignored": 2, "unsupported": 2, "too-large": 1}
    # Every directory entry of the root is accounted for in files or skipped.
    listed = {f.path for f in result.files} | {s.path for s in result.skipped}
    assert listed == {p.name for p in tmp_path.iterdir()}


def test_read_text_decodes_strips_bom_and_normalises_crlf(tmp_path: Path) -> None:
    p = write(tmp_path, "a.py", "\ufeffdef f():\r\n    return 'é'\r\n".encode())
    assert read_text(str(p)) == "def f():\n    return 'é'\n"
    assert read_text(p, "a.py") == "def f():\n    return 'é'\n"


def test_read_text_binary_invalid_utf8_missing_and_grown(tmp_path: Path) -> None:
    nul = write(tmp_path, "nul.py", b"abc\x00def")
    late_nul = write(tmp_path, "late.txt", b"a" * 9000 + b"\x00")
    latin1 = write(tmp_path, "latin.py", "caf\xe9\n".encode("latin-1"))
    grown = write(tmp_path, "grown.py", "x" * 20)
    assert read_text(str(nul), "nul.py") == SkippedFile("nul.py", "binary", "NUL byte")
    assert read_text(str(late_nul)) == "a" * 9000 + "\x00"  # only the first 8 KiB are sniffed
    assert read_text(str(latin1), "latin.py") == "caf\xe9\n"  # not UTF-8, but text: decoded, not "binary"
    missing = read_text(str(tmp_path / "gone.py"), "gone.py")
    assert isinstance(missing, SkippedFile) and missing.reason == "unreadable"
    too_big = read_text(str(grown), "grown.py", max_size=10)
    assert isinstance(too_big, SkippedFile) and too_big.reason == "too-large"


@pytest.mark.parametrize(
    ("name", "data", "text"),
    [
        # PEP 263 coding line (first or second line) names the codec.
        ("ru.py", "# -*- coding: koi8-r -*-\nname = 'привет'\n".encode("koi8-r"), "name = 'привет'"),
        ("ru2.py", "#!/usr/bin/env python\n# coding=cp1251\ns = 'мир'\n".encode("cp1251"), "s = 'мир'"),
        # XML declaration and HTML meta charset.
        (
            "a.xml",
            '<?xml version="1.0" encoding="ISO-8859-7"?>\n<a>Αθήνα</a>\n'.encode("iso-8859-7"),
            "Αθήνα",
        ),
        ("a.html", '<html><head><meta charset="windows-1251"></head><p>Киев</p>\n'.encode("cp1251"), "Киев"),
        (
            "b.html",
            '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">\nМосква\n'.encode("koi8-r"),
            "Москва",
        ),
        # Undeclared: Windows-1252 (smart quotes), else Latin-1 (0x81 is undefined in cp1252).
        ("w.txt", "“quoted” café\n".encode("cp1252"), "“quoted” café"),
        ("l.txt", b"caf\xe9 \x81\n", "caf\xe9 \x81"),
        # A UTF-16 BOM means UTF-16 (its NUL bytes do not make it binary).
        ("u16.txt", "\ufeffdef héllo():\n".encode("utf-16"), "def héllo():"),
    ],
)
def test_read_text_decodes_declared_and_legacy_encodings(
    tmp_path: Path, name: str, data: bytes, text: str
) -> None:
    got = read_text(write(tmp_path, name, data), name)
    assert isinstance(got, str) and text in got


def test_a_wrong_declaration_falls_back_instead_of_failing(tmp_path: Path) -> None:
    data = "# coding: ascii\nx = 'café'\n".encode("latin-1")
    assert read_text(write(tmp_path, "a.py", data), "a.py") == "# coding: ascii\nx = 'café'\n"
    assert read_text(write(tmp_path, "b.py", b"# coding: no-such-codec\nx = '\xe9'\n"), "b.py") == (
        "# coding: no-such-codec\nx = 'é'\n"
    )


def test_ignore_rules_single_path_checks_ancestors(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "logs/\n")
    write(tmp_path, "src/.gitignore", "*.gen.py\n")
    rules = IgnoreRules.load(tmp_path, exclude=["secret/"])
    assert rules.is_ignored("logs", is_dir=True)
    assert rules.is_ignored("a/logs/today.py")
    assert rules.explain("a/logs/today.py") == "inside a/logs: directory; .gitignore"
    assert rules.is_ignored("src/x.gen.py")
    assert not rules.is_ignored("x.gen.py")
    assert rules.is_ignored("node_modules/pkg/index.js")
    assert rules.is_ignored("secret/key.py")
    assert rules.is_ignored(".env")
    assert not rules.is_ignored("src/main.py")
    # Edited ignore files are picked up after invalidate().
    write(tmp_path, "src/.gitignore", "main.py\n")
    assert not rules.is_ignored("src/main.py")
    rules.invalidate()
    assert rules.is_ignored("src/main.py")


def test_file_rules_check_agrees_with_walk(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "skip_me.py\nout_dir/\n")
    write(tmp_path, "keep.py")
    write(tmp_path, "skip_me.py")
    write(tmp_path, "out_dir/a.py")
    write(tmp_path, "pic.png", b"\x89PNG")
    write(tmp_path, "big.py", "x" * 100)
    write(tmp_path, "node_modules/x/y.js")
    (tmp_path / "link.py").symlink_to(tmp_path / "keep.py")
    rules = FileRules(tmp_path, max_file_size=50)
    result = rules.walk()
    for f in result.files:
        assert rules.check(f.path) == f
    for s in result.skipped:
        if s.detail.startswith("directory"):
            assert rules.check(s.path) is None  # folders are not files
            assert rules.ignore.is_ignored(s.path, is_dir=True)
        else:
            assert rules.check(s.path) == s
    assert rules.check("out_dir/a.py") == SkippedFile(
        "out_dir/a.py", "ignored", "inside out_dir: directory; .gitignore"
    )
    assert rules.check("missing.py") is None


def test_matches_git_check_ignore(tmp_path: Path) -> None:
    """Cross-check the ignore decisions against git itself on a tricky set of patterns."""
    git = subprocess.run(["git", "--version"], capture_output=True)
    if git.returncode != 0:
        pytest.skip("git not installed")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path, ".gitignore", "*.tmp.py\n/root_only.py\ndocs/*.md\n!docs/keep.md\nnested/**/deep.py\n")
    write(tmp_path, "a/.gitignore", "!x.tmp.py\nlocal/\n")
    candidates = [
        "x.tmp.py",
        "a/x.tmp.py",
        "a/y.tmp.py",
        "root_only.py",
        "a/root_only.py",
        "docs/a.md",
        "docs/keep.md",
        "docs/sub/b.md",
        "nested/deep.py",
        "nested/p/q/deep.py",
        "a/local/z.py",
        "ok.py",
    ]
    for rel in candidates:
        write(tmp_path, rel)
    out = subprocess.run(
        ["git", "-C", str(tmp_path), "check-ignore", "--no-index", *candidates],
        capture_output=True,
        text=True,
    )
    git_ignored = set(out.stdout.split())
    assert {"x.tmp.py", "docs/a.md", "a/local/z.py"} <= git_ignored and "a/x.tmp.py" not in git_ignored
    rules = IgnoreRules.load(tmp_path)
    ours = {rel for rel in candidates if rules.is_ignored(rel)}
    assert ours == git_ignored
    assert set(paths(tmp_path)) == {c for c in candidates if c not in git_ignored}


GIT_CASES = {
    "re-include inside a /** folder": ("src/sub/**\n!src/sub/kept.py\n", {}),
    "no re-include inside an excluded folder": ("src/sub/\n!src/sub/kept.py\n", {}),
    "floating /** with re-include": ("**/gen/**\n!**/gen/keep.py\n", {}),
    "star then re-include a folder's files": ("*.py\n!keep/*.py\n", {}),
    "folder contents re-opened level by level": ("docs/*\n!docs/api/\ndocs/api/*\n!docs/api/index.py\n", {}),
    "nested ignore file re-includes": ("src/sub/**\n", {"src/sub/.gitignore": "!kept.py\n"}),
    "every folder (an unanchored pattern)": ("*/\n", {}),
}
GIT_TREE = [
    "top.py",
    "src/a.py",
    "src/sub/kept.py",
    "src/sub/other.py",
    "src/sub/deep/x.py",
    "gen/keep.py",
    "gen/drop.py",
    "lib/gen/keep.py",
    "lib/gen/deep/drop.py",
    "keep/a.py",
    "keep/deeper/b.py",
    "docs/api/index.py",
    "docs/api/other.py",
    "docs/guide.py",
]


@pytest.mark.parametrize("case", sorted(GIT_CASES))
def test_discovery_keeps_exactly_the_files_git_keeps(tmp_path: Path, case: str) -> None:
    """Compared with a real git: `git ls-files --others --exclude-standard` lists what git keeps."""
    import subprocess

    root_rules, nested = GIT_CASES[case]
    for rel in GIT_TREE:
        write(tmp_path, rel, "x = 1\n")
    write(tmp_path, ".gitignore", root_rules)
    for rel, text in nested.items():
        write(tmp_path, rel, text)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    kept_by_git = {p for p in listed if p.endswith(".py")}
    assert {f.path for f in discover(tmp_path).files} == kept_by_git
    for rel in GIT_TREE:
        ignored = subprocess.run(["git", "check-ignore", "-q", rel], cwd=tmp_path).returncode == 0
        assert FileRules(tmp_path).check(rel).__class__.__name__ == (
            "SkippedFile" if ignored else "DiscoveredFile"
        ), rel
