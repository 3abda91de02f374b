"""call_graph and implementation_lookup through the tool layer and the CLI, on a small realistic project
(and on the `requests` benchmark repository when the corpus is present)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebase_index import tools
from codebase_index.graph.query import is_identifier, is_non_implementation, rank_definitions
from codebase_index.graph.store import DefinitionRow
from codebase_index.service import Engine

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


def refund(order):
    return order.total(None)
""",
    "tests/test_cart.py": """from shop.cart import Cart


def test_total():
    assert Cart().total(None) == 0
""",
    "docs/example.py": """def apply_discount(total, code):
    return total
""",
    "shop/pricing.pyi": "def apply_discount(total: float, code: str) -> float: ...\n",
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shop")
    for rel, text in SHOP.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    return root


@pytest.fixture(scope="module")
def runtime(shop: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tools.Runtime]:
    rt = tools.Runtime(shop, index_dir=tmp_path_factory.mktemp("index"))
    tools.call(rt, "index", {})
    yield rt
    rt.close()


def sites(data: dict, key: str = "edges") -> set[tuple[str, str, int, str, str]]:  # type: ignore[type-arg]
    return {(s["caller"], s["callerPath"], s["line"], s["callee"], s["confidence"]) for s in data[key]}


def test_callers_across_files_through_imports_and_receiver_types(runtime: tools.Runtime) -> None:
    result = tools.call(runtime, "call_graph", {"name": "apply_discount", "depth": 2})
    assert sites(result.data) == {
        ("Cart.total", "shop/cart.py", 14, "apply_discount", "import"),
        ("checkout", "shop/api.py", 8, "Cart.total", "import"),  # cart = Cart() via the package
        ("test_total", "tests/test_cart.py", 5, "Cart.total", "import"),
    }
    assert result.data["roots"][0]["path"] == "shop/pricing.py"
    assert "Cart.total (shop/cart.py:14) calls apply_discount [import]" in result.text
    assert {s["depth"] for s in result.data["edges"]} == {1, 2}


def test_callees_include_methods_on_typed_fields(runtime: tools.Runtime) -> None:
    result = tools.call(runtime, "call_graph", {"name": "Cart.total", "direction": "callees"})
    called = {(s["callee"], s["calleePath"]) for s in result.data["edges"]}
    assert called == {("apply_discount", "shop/pricing.py"), ("TaxTable.rate", "shop/pricing.py")}


def test_name_only_matches_are_counted_and_listed_on_request(runtime: tools.Runtime) -> None:
    # refund(order): order.total() has no known type, so it matches Cart.total by name only.
    plain = tools.call(runtime, "call_graph", {"symbolId": "shop/cart.py#Cart.total"})
    assert plain.data["nameMatchCount"] == 1 and plain.data["nameMatches"] == []
    assert "1 more call site(s) match by name only" in plain.text
    listed = tools.call(
        runtime, "call_graph", {"symbolId": "shop/cart.py#Cart.total", "includeNameMatches": True}
    )
    assert sites(listed.data, "nameMatches") == {("refund", "shop/api.py", 12, "Cart.total", "name")}


def test_call_graph_rejects_bad_params_with_specific_messages(runtime: tools.Runtime) -> None:
    with pytest.raises(tools.InvalidParams, match="exactly one of `name` or `symbolId`"):
        tools.call(runtime, "call_graph", {})
    with pytest.raises(tools.InvalidParams, match=r"path#Qualified\.name"):
        tools.call(runtime, "call_graph", {"symbolId": "Cart.total"})
    with pytest.raises(tools.InvalidParams, match="depth"):
        tools.call(runtime, "call_graph", {"name": "x", "depth": 4})
    missing = tools.call(runtime, "call_graph", {"name": "no_such_function"})
    assert missing.data["roots"] == [] and "No definition named" in missing.text


def test_implementation_lookup_prefers_real_code_over_docs_stubs_and_tests(runtime: tools.Runtime) -> None:
    result = tools.call(runtime, "implementation_lookup", {"query": "apply_discount"})
    assert result.data["strategy"] == "definition"
    paths = [r["path"] for r in result.data["results"]]
    assert paths[0] == "shop/pricing.py"
    assert set(paths) == {"shop/pricing.py", "docs/example.py", "shop/pricing.pyi"}
    assert 'if code == "HALF":' in result.data["results"][0]["content"]


def test_implementation_lookup_falls_back_to_search_for_descriptions(runtime: tools.Runtime) -> None:
    result = tools.call(runtime, "implementation_lookup", {"query": "discount voucher code total"})
    assert result.data["strategy"] == "search"
    first = result.data["results"][0]
    assert (first["path"], first["symbol"]) == ("shop/pricing.py", "apply_discount")


def test_ranking_and_classification_helpers() -> None:
    assert is_identifier("Session.send") and is_identifier("Foo::new") and is_identifier("a/b.py#X.y")
    assert not is_identifier("send the request")
    for path in ("tests/x.py", "pkg/test_x.py", "a/b_test.go", "src/x.spec.ts", "types/x.d.ts", "a.pyi"):
        assert is_non_implementation(path), path
    assert not is_non_implementation("src/testing_utils_impl.py") and not is_non_implementation("src/x.ts")
    defs = [
        DefinitionRow("f", "f", "function", "tests/test_a.py", 1, 2, "python"),
        DefinitionRow("f", "f", "function", "src/deep/er/a.py", 1, 2, "python"),
        DefinitionRow("f", "f", "function", "src/a.py", 1, 2, "python"),
        DefinitionRow("f", "f", "function", "lib/z.py", 1, 2, "python"),
    ]
    ranked = rank_definitions(defs, "f", {"lib/z.py#f": 3})
    assert [d.path for d in ranked] == ["lib/z.py", "src/a.py", "src/deep/er/a.py", "tests/test_a.py"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codebase_index.cli", *args], capture_output=True, text=True, timeout=300
    )


def test_cli_callers_callees_and_impl(shop: Path, tmp_path: Path) -> None:
    index = str(tmp_path / "cli-index")
    out = cli("callers", "apply_discount", "--root", str(shop), "--index-dir", index, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {(s["caller"], s["confidence"]) for s in data["edges"]} == {("Cart.total", "import")}
    out = cli("callees", "checkout", "--depth", "2", "--root", str(shop), "--index-dir", index)
    assert out.returncode == 0, out.stderr
    assert "Cart.total (shop/cart.py:12) called at shop/api.py:8 [import]" in out.stdout
    assert "    apply_discount (shop/pricing.py:4) called at shop/cart.py:14 [import]" in out.stdout
    out = cli("impl", "TaxTable.rate", "--root", str(shop), "--index-dir", index)
    assert out.returncode == 0 and "shop/pricing.py:15-16 method TaxTable.rate" in out.stdout
    out = cli("callers", "nothing_like_this", "--root", str(shop), "--index-dir", index)
    assert out.returncode == 1 and "No definition named" in out.stdout
    out = cli("callers", "x", "--depth", "5", "--root", str(shop), "--index-dir", index)
    assert out.returncode == 1 and "--depth must be 1, 2 or 3" in out.stderr


REQUESTS = Path.home() / ".cache" / "bench-repos" / "requests"


@pytest.mark.skipif(not REQUESTS.exists(), reason="corpus ~/.cache/bench-repos/requests is not present")
def test_real_repository_known_cross_file_caller(tmp_path: Path) -> None:
    engine = Engine(REQUESTS, index_path=tmp_path / "index", workers=1)
    try:
        engine.index()
        graph = engine.call_graph("Session.request")
        callers = {(e.caller, e.caller_path, e.confidence) for e in graph.edges}
        # api.request: `with sessions.Session() as session: return session.request(...)`
        assert ("request", "src/requests/api.py", "import") in callers
        found = engine.implementation_lookup("requote_uri")
        assert found.results[0].path == "src/requests/utils.py"
    finally:
        engine.close()
