"""The command line speaks its own language: `--version`, a bare command that shows every command, and
messages that name the CLI's flags and commands (`--max-tokens`, `--name-matches`, `codebase-index impl`),
never the tool parameters the sidecar and MCP faces use (`maxTokens`, `includeNameMatches`)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import codebase_index
from codebase_index.cli import main

TOOL_WORDS = re.compile(
    r"maxTokens|includeNameMatches|implementation_lookup|codebase_search|changedSince|\$\."
)

SHOP = {
    "shop/cart.py": """class Cart:
    def __init__(self):
        self.items = []

    def total(self, code):
        return sum(self.items)
""",
    "shop/api.py": """from shop.cart import Cart


def checkout(prices):
    return Cart().total(None)


def refund(order):
    return order.total(None)
""",
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shop")
    files = dict(SHOP)
    for n in range(40):  # more matching code than a small budget holds
        files[f"shop/discounts/rule_{n}.py"] = (
            f"def discount_rule_{n}(total, voucher):\n"
            f'    """Apply voucher discount rule {n} to the order total."""\n'
            f"    return total - {n} if voucher else total\n"
        )
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    assert main(["index", str(root), "--keyword-only"]) == 0
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"codebase-index {codebase_index.__version__}\n"


def test_bare_command_prints_usage_and_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert code == 2 and out == ""
    assert err.startswith("usage: codebase-index")
    for command in ("index", "search", "status", "context", "callers", "impl", "mcp", "install"):
        assert re.search(rf"^    {command}\s", err, re.M), command


def test_max_tokens_out_of_range_names_the_flag_and_its_range(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["context", "total"], ["edit-context", "Cart.total"]):
        code, out, err = run(capsys, *argv, "--max-tokens", "10", "--root", str(shop))
        assert code == 1 and out == ""
        assert err == "codebase-index: error: --max-tokens must be 128..8000, not 10\n"


def test_context_messages_name_cli_flags(shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "context", "voucher discount rule", "--max-tokens", "128", "--root", str(shop))
    assert code == 0
    assert out.rstrip().endswith("(raise --max-tokens or narrow the query)"), out
    assert not TOOL_WORDS.search(out.splitlines()[-1])
    code, _, err = run(capsys, "context", "total", "--changed-since", "no-such-rev", "--root", str(shop))
    assert code == 1 and "--changed-since/--changed-before" in err and not TOOL_WORDS.search(err), err


def test_call_graph_messages_name_cli_flags_and_commands(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "callers", "Cart.total", "--root", str(shop))
    assert code == 0 and "pass --name-matches to list them" in out, out
    code, out, _ = run(capsys, "callers", "nothing_like_this", "--root", str(shop))
    assert code == 1 and "Try `codebase-index impl` or `codebase-index search`" in out, out
    for text in (out,):
        assert not TOOL_WORDS.search(text)
