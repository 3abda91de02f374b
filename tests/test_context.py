"""codebase_context: routing, packing, the hard token budget (a seeded property test over random queries
and budgets), deduplication, reading order, time filters from a real git history, savings, CLI."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebase_index import tools
from codebase_index.context.pack import Evidence, omitted_summary, pack, signature_span
from codebase_index.context.route import route
from codebase_index.context.tokens import counter

REPO = Path(__file__).resolve().parents[1]

SHOP = {
    "shop/__init__.py": "from .cart import Cart\n",
    "shop/pricing.py": '''"""Prices: discounts and taxes."""


def apply_discount(total, code):
    """Take the discount a voucher code grants off a total."""
    if code == "HALF":
        return total / 2
    return total


class TaxTable:
    def __init__(self):
        self.rates = {"eu": 1.2}

    def rate(self, region):
        return self.rates.get(region, 1.0)
''',
    "shop/cart.py": """from .pricing import TaxTable, apply_discount


class Cart:
    def __init__(self):
        self.items = []
        self.taxes = TaxTable()

    def add(self, price):
        self.items.append(price)

    def total(self, code):
        subtotal = sum(self.items)
        discounted = apply_discount(subtotal, code)
        return discounted * self.taxes.rate("eu")
""",
    "shop/api.py": """from shop import Cart


def checkout(prices, code):
    cart = Cart()
    for p in prices:
        cart.add(p)
    return cart.total(code)
""",
    "tests/test_cart.py": """from shop.cart import Cart


def test_total():
    assert Cart().total(None) == 0
""",
}


def _git(root: Path, *args: str, date: str = "2020-01-01T00:00:00") -> str:
    env = {
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(root),
    }
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True, env=env
    ).stdout


pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shop")
    for rel, text in SHOP.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "first")
    # A second commit changes only the cart, later.
    cart = root / "shop/cart.py"
    cart.write_text(cart.read_text() + "\n    def clear(self):\n        self.items = []\n")
    _git(root, "commit", "-q", "-am", "clear", date="2024-06-01T00:00:00")
    return root


@pytest.fixture(scope="module")
def runtime(shop: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tools.Runtime]:
    rt = tools.Runtime(shop, index_dir=tmp_path_factory.mktemp("index"))
    rt.writer().index(embed=False)  # keyword only: these tests run without
    yield rt
    rt.close()


def _shown_numbers(root: Path, item: dict) -> list[int]:  # type: ignore[type-arg]
    """The file line numbers an item shows: its text lines (gap markers aside) matched in order against
    the file from start_line."""
    file_lines = [ln.rstrip() for ln in (root / item["path"]).read_text().splitlines()]
    numbers, n = [], item["start_line"]
    for line in item["text"].split("\n"):
        if line == "    ...":
            continue
        while file_lines[n - 1] != line:
            n += 1
        numbers.append(n)
        n += 1
    assert numbers[0] == item["start_line"] and numbers[-1] == item["end_line"]
    return numbers


def test_routes_by_query_style() -> None:
    assert route("apply_discount").route == "definition"
    assert route("Cart.total").route == "definition"
    r = route("who calls apply_discount?")
    assert (r.route, r.direction, r.target) == ("graph", "callers", "apply_discount")
    r = route("what does Cart.total call")
    assert (r.route, r.direction, r.target) == ("graph", "callees", "Cart.total")
    assert route("where are discounts applied to a total").route == "search"
    assert route("TypeError: unsupported operand").style == "error"
    assert route("where is apply_discount used").route == "graph"


def test_identifier_gets_its_definition_first_then_callers(runtime: tools.Runtime) -> None:
    result = tools.call(runtime, "context", {"query": "apply_discount"})
    data = result.data
    assert data["route"] == "definition" and data["strategy"].startswith("definition+keyword")
    first = data["items"][0]
    assert (first["path"], first["symbol"], first["reason"]) == (
        "shop/pricing.py",
        "apply_discount",
        "defines apply_discount",
    )
    assert "def apply_discount(total, code):" in first["text"] and "return total / 2" in first["text"]
    callers = [i for i in data["items"] if i["reason"] == "calls apply_discount"]
    assert [(c["path"], c["symbol"]) for c in callers] == [("shop/cart.py", "Cart.total")]
    assert "discounted = apply_discount(subtotal, code)" in callers[0]["text"]
    assert data["tokens"] <= data["maxTokens"] == 1500
    assert counter().count(result.text) == data["tokens"]


def test_relation_question_answers_from_the_call_graph(runtime: tools.Runtime) -> None:
    data = tools.call(runtime, "context", {"query": "who calls Cart.total"}).data
    assert data["route"] == "graph"
    reasons = {(i["path"], i["reason"]) for i in data["items"]}
    assert ("shop/api.py", "calls Cart.total") in reasons
    assert ("tests/test_cart.py", "calls Cart.total") in reasons
    callees = tools.call(runtime, "context", {"query": "what does Cart.total call"}).data
    assert ("shop/pricing.py", "called by Cart.total") in {(i["path"], i["reason"]) for i in callees["items"]}


def test_description_falls_back_to_keyword_search_without_embeddings(runtime: tools.Runtime) -> None:
    data = tools.call(runtime, "context", {"query": "voucher code discount off a total"}).data
    assert data["route"] == "search" and data["strategy"] == "keyword-fallback"
    assert data["items"][0]["path"] == "shop/pricing.py"
    assert data["items"][0]["reason"] == "matched"


def test_items_are_in_reading_order_and_never_repeat_a_line(runtime: tools.Runtime) -> None:
    data = tools.call(runtime, "context", {"query": "Cart total taxes rate items", "maxTokens": 4000}).data
    order: list[str] = []
    for item in data["items"]:
        if not order or order[-1] != item["path"]:
            assert item["path"] not in order, "a file's items are kept together"
            order.append(item["path"])
    keys = [(i["path"], n) for i in data["items"] for n in _shown_numbers(runtime.root, i)]
    assert len(keys) == len(set(keys))
    same_file = [i["start_line"] for i in data["items"] if i["path"] == "shop/cart.py"]
    assert same_file == sorted(same_file) and len(same_file) >= 1


def test_pack_is_deduplicated_line_by_line() -> None:
    lines = tuple(f"line {i}" for i in range(1, 21))
    outer = Evidence("a.py", 1, 20, "Outer", "class", "matched", lines)
    inner = Evidence("a.py", 5, 8, "Outer.m", "method", "matched", lines[4:8])
    tail = Evidence("a.py", 15, 25, "tail", "block", "matched", (*lines[14:], "x1", "x2", "x3", "x4", "x5"))
    packed = pack([outer, inner, tail], 4000, counter().count)
    shown = [ln for item in packed.items for ln in item.text.split("\n") if ln != "    ..."]
    assert len(shown) == len(set(shown)) == 25
    assert packed.omitted.duplicates == 1  # the inner method added nothing new
    assert [(i.start_line, i.end_line) for i in packed.items] == [(1, 20), (21, 25)]


def test_long_definitions_are_condensed_to_signature_doc_and_matching_lines() -> None:
    body = [f"    step_{i} = compute(step_{i - 1})" for i in range(1, 200)]
    lines = (
        "def refresh_token(session, scope):",
        '    """Renew the access token."""',
        *body,
        "    return renew",
    )
    focus = frozenset({len(lines)})
    ev = Evidence("auth.py", 1, len(lines), "refresh_token", "function", "matched", lines, focus)
    packed = pack([ev], 300, counter().count)
    (item,) = packed.items
    assert item.form == "condensed"
    assert item.text.split("\n")[:2] == [
        "def refresh_token(session, scope):",
        '    """Renew the access token."""',
    ]
    assert item.text.endswith("    return renew") and "    ..." in item.text
    assert packed.tokens <= 300


def test_signature_span_handles_decorators_docstrings_and_braces() -> None:
    sig, doc = signature_span(["@cache", "def f(a,", "      b):", '    """Doc."""', "    return a"])
    assert (sig, doc) == ([1, 2], [0, 3])
    sig, doc = signature_span(["// Parse one header.", "func parse(s string) (Header, error) {", "\treturn"])
    assert (sig, doc) == ([1], [0])


def test_omitted_summary_groups_by_folder() -> None:
    text, counts = omitted_summary(["tests/a.py", "tests/b.py", "tests/c.py", "docs/x.md", "setup.py"])
    assert text == "5 more: 3 in tests/, 1 in docs/, 1 in ./"
    assert counts == {"tests/": 3, "docs/": 1, "./": 1}


def test_budget_is_never_exceeded_random_queries_and_budgets(tmp_path: Path) -> None:
    """Property test (seeded): over random queries of every style and random budgets, the pack's text
    as counted by the tokenizer never exceeds maxTokens, `tokens` is that count, and no line repeats."""
    src = REPO / "python" / "codebase_index"
    root = tmp_path / "proj"
    for sub in ("graph", "context", "chunking"):
        shutil.copytree(src / sub, root / sub, ignore=shutil.ignore_patterns("__pycache__", "*.scm"))
    (root / "huge.py").write_text("def huge():\n    x = '" + "A" * 30_000 + "'\n" + "    y = 1\n" * 3000)
    rt = tools.Runtime(root, index_dir=tmp_path / "index")
    try:
        rt.writer().index()
        vocab = sorted(
            {w for p in root.rglob("*.py") for w in p.read_text().split() if w.isidentifier() and len(w) > 3}
        )
        rng = random.Random(14)
        count = counter().count
        for _ in range(60):
            style = rng.choice(["identifier", "words", "relation", "error", "code"])
            words = rng.sample(vocab, rng.randint(1, 6))
            query = {
                "identifier": words[0],
                "words": " ".join(words),
                "relation": f"who calls {words[0]}",
                "error": f"ValueError: invalid {words[0]} in {' '.join(words[1:])}",
                "code": f"{words[0]}({', '.join(words[1:])})",
            }[style]
            budget = rng.choice(
                [128, 129, 200, 333, 500, 777, 1000, 1500, 2000, 4000, rng.randint(128, 8000)]
            )
            result = tools.call(rt, "context", {"query": query, "maxTokens": budget})
            assert count(result.text) <= budget, (query, budget)
            assert result.data["tokens"] == count(result.text)
            keys = [(i["path"], n) for i in result.data["items"] for n in _shown_numbers(root, i)]
            assert len(keys) == len(set(keys)), (query, budget)
    finally:
        rt.close()


def test_bad_params_are_refused(runtime: tools.Runtime) -> None:
    with pytest.raises(tools.InvalidParams, match="maxTokens"):
        tools.call(runtime, "context", {"query": "x", "maxTokens": 50})
    with pytest.raises(tools.InvalidParams, match="query"):
        tools.call(runtime, "context", {"query": "   "})
    with pytest.raises(tools.InvalidParams, match="changedSince"):
        tools.call(runtime, "context", {"query": "cart", "changedSince": "no-such-rev-or-date"})


def test_changed_since_and_before_filter_by_git_history(runtime: tools.Runtime) -> None:
    recent = tools.call(runtime, "context", {"query": "cart items", "changedSince": "HEAD~1"}).data
    assert recent["items"] and {i["path"] for i in recent["items"]} == {"shop/cart.py"}
    assert all(i["end_line"] >= 16 for i in recent["items"])  # only chunks holding the new lines
    dated = tools.call(runtime, "codebase_search", {"query": "cart items", "changedSince": "2022-01-01"}).data
    assert {r.path for r in dated["results"]} == {"shop/cart.py"}
    old = tools.call(
        runtime, "codebase_peek", {"query": "cart items clear", "changedBefore": "2022-01-01"}
    ).data
    assert old["results"] and all(r.symbol != "Cart.clear" for r in old["results"])
    everything = tools.call(runtime, "codebase_peek", {"query": "total", "changedSince": "1990-01-01"}).data
    assert len({r.path for r in everything["results"]}) >= 3


def test_savings_are_recorded_per_tool_and_shown(runtime: tools.Runtime) -> None:
    before = tools.call(runtime, "savings", {}).data["thisSession"].get("codebase_context", {"answers": 0})
    data = tools.call(runtime, "context", {"query": "apply_discount"}).data
    assert data["savings"]["returnedTokens"] == data["tokens"]
    whole = sum(counter().count((Path(runtime.root) / p).read_text().rstrip("\n")) for p in data["files"])
    assert data["savings"]["fileTokens"] == whole
    report = tools.call(runtime, "savings", {})
    ctx = report.data["thisSession"]["codebase_context"]
    assert ctx["answers"] == before["answers"] + 1
    assert "codebase_context" in report.text and "whole files" in report.text
    metrics = tools.call(runtime, "metrics", {}).data
    assert metrics["savings"]["allSessions"]["codebase_context"]["answers"] >= ctx["answers"]
    status = tools.call(runtime, "status", {})
    assert "savings: this session" in status.text
    ledger = json.loads((runtime.index_dir / "savings.json").read_text())
    assert ledger["sessions"][runtime.savings.session]["tools"]["codebase_context"]["answers"] >= 1


def test_cli_context_json_and_savings(shop: Path, tmp_path: Path) -> None:
    index = tmp_path / "cli-index"
    cmd = [sys.executable, "-m", "codebase_index.cli"]
    out = subprocess.run(
        [
            *cmd,
            "context",
            "apply_discount",
            "--max-tokens",
            "300",
            "--json",
            "--root",
            str(shop),
            "--index-dir",
            str(index),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(out.stdout)
    assert {"query", "maxTokens", "tokens", "items", "omitted"} <= set(data)
    assert data["maxTokens"] == 300 and data["tokens"] <= 300
    assert set(data["items"][0]) >= {"path", "start_line", "end_line", "symbol", "reason", "text"}
    text = subprocess.run(
        [*cmd, "savings", "--root", str(shop), "--index-dir", str(index)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "codebase_context" in text and "all sessions (2)" in text
    edit = subprocess.run(
        [*cmd, "edit-context", "Cart.total", "--root", str(shop), "--index-dir", str(index)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "definition of Cart.total" in edit and "calls Cart.total" in edit


def test_edit_context_gathers_definition_callers_callees_and_tests(runtime: tools.Runtime) -> None:
    result = tools.call(runtime, "edit_context", {"target": "Cart.total"})
    data = result.data
    by_reason = {(i["path"], i["symbol"], i["reason"]) for i in data["items"]}
    assert ("shop/cart.py", "Cart.total", "definition of Cart.total") in by_reason
    assert ("shop/api.py", "checkout", "calls Cart.total") in by_reason
    assert ("tests/test_cart.py", "test_total", "test reaching Cart.total") in by_reason
    assert ("shop/pricing.py", "apply_discount", "called by Cart.total") in by_reason
    assert "similar code left out" in data["notice"]  # no embeddings in this index
    assert data["tokens"] <= 1500 and counter().count(result.text) == data["tokens"]
    assert data["savings"]["returnedTokens"] == data["tokens"]


def test_edit_context_by_location_and_deeper_tests(runtime: tools.Runtime) -> None:
    data = tools.call(runtime, "edit_context", {"target": "shop/pricing.py:7", "maxTokens": 600}).data
    first = data["items"][0]
    assert (first["symbol"], first["reason"]) == ("apply_discount", "definition of apply_discount")
    tests_ = [i for i in data["items"] if i["reason"].startswith("test reaching")]
    assert [(t["symbol"], t["reason"]) for t in tests_] == [
        ("test_total", "test reaching apply_discount (via Cart.total, 2 hops)")
    ]
    assert data["tokens"] <= 600
    missing = tools.call(runtime, "edit_context", {"target": "shop/pricing.py:2"}).data
    assert "no definition of shop/pricing.py covers line 2" in missing["notice"]


def test_edit_context_adds_similar_code_once_embedded(shop: Path, tmp_path: Path) -> None:
    rt = tools.Runtime(shop, index_dir=tmp_path / "index")
    try:
        assert rt.writer().index().embedded > 0  # the default model embeds in the index pass
        data = tools.call(rt, "edit_context", {"target": "Cart.add", "maxTokens": 2000}).data
        similar = [i for i in data["items"] if i["reason"].startswith("similar to Cart.add")]
        assert similar and all(i["symbol"] != "Cart.add" for i in similar)
        assert data["notice"] is None
    finally:
        rt.close()
