"""A minimal reader for the `.safetensors` weight format.

The format is tiny (8-byte little-endian header length, a JSON header, raw tensor bytes), so reading it
ourselves avoids a dependency for ~90 MB of float32 weights that numpy can view without copying.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

# safetensors dtype names -> numpy little-endian dtypes (BF16 has no numpy dtype; handled separately).
_DTYPES: dict[str, str] = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}
# A header larger than this is not a real safetensors file (the reference implementation caps it too).
_MAX_HEADER = 100 * 1024 * 1024


class SafetensorsError(ValueError):
    """The file is not a well-formed safetensors file."""


def parse_safetensors(data: bytes | memoryview) -> dict[str, np.ndarray]:
    """Views every tensor in `data` as a read-only numpy array (no copy, except BF16 -> float32)."""
    buf = memoryview(data)
    if len(buf) < 8:
        raise SafetensorsError("file shorter than the 8-byte header length")
    (header_len,) = struct.unpack("<Q", buf[:8])
    if header_len > min(_MAX_HEADER, len(buf) - 8):
        raise SafetensorsError(f"header length {header_len} exceeds the file size")
    try:
        header = json.loads(bytes(buf[8 : 8 + header_len]))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SafetensorsError(f"header is not valid JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise SafetensorsError("header is not a JSON object")
    body = buf[8 + header_len :]
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = _tensor(name, info, body)
    return tensors


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Reads a whole `.safetensors` file; arrays share one bytes buffer, so they stay read-only."""
    return parse_safetensors(Path(path).read_bytes())


def _tensor(name: str, info: object, body: memoryview) -> np.ndarray:
    if not isinstance(info, dict):
        raise SafetensorsError(f"{name}: entry is not an object")
    dtype_name = info.get("dtype")
    shape = info.get("shape")
    offsets = info.get("data_offsets")
    if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
        raise SafetensorsError(f"{name}: bad shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
        raise SafetensorsError(f"{name}: bad data_offsets {offsets!r}")
    start, end = offsets
    if not 0 <= start <= end <= len(body):
        raise SafetensorsError(f"{name}: data_offsets {offsets} outside the data ({len(body)} bytes)")
    count = int(np.prod(shape, dtype=np.int64))
    raw = body[start:end]
    if dtype_name == "BF16":
        if len(raw) != count * 2:
            raise SafetensorsError(f"{name}: {len(raw)} bytes do not hold {shape} BF16 values")
        # bfloat16 is the top half of a float32: shift the bits up to widen it.
        wide = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return wide.view(np.float32).reshape(shape)
    if dtype_name not in _DTYPES:
        raise SafetensorsError(f"{name}: unsupported dtype {dtype_name!r}")
    dtype = np.dtype(_DTYPES[dtype_name])
    if len(raw) != count * dtype.itemsize:
        raise SafetensorsError(f"{name}: {len(raw)} bytes do not hold {shape} {dtype_name} values")
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)
