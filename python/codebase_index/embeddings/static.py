"""The default embedded model: a static code embedding model, run with numpy and `tokenizers` alone.

One vector per token (its learned weight folded in), summed over a text's tokens and L2-normalised: the
kind of model semble and model2vec use, trained by us on query -> code pairs (training/, the model card
in the model folder). No transformer runs, so embedding costs a tokenizer pass and a table lookup: tens of
times faster than MiniLM, and a query embeds in microseconds.

Text is prepared the same way in training and here (`prepare`): identifiers are split into their words
(`parseHttpHeader`, `parse_http_header` -> `parse Http Header`) so code and questions share tokens; the
WordPiece tokenizer lower-cases. The model folder holds `tokenizer.json`, `model.safetensors` (int8
rows with a float32 scale each) and `model.json` (id, width, the sha256 of both files, checked at load:
a damaged or swapped file is refused with the reason, never silently used).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import EmbeddingError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MODEL_FOLDER = Path(__file__).with_name("code-static")
CARD = "model.json"
WEIGHTS = "model.safetensors"
TOKENIZER = "tokenizer.json"
MAX_TOKENS = 1024
"""Tokens of one text that count: a chunk's later lines add little to its meaning once this many did."""
MAX_CHARS = 64_000
"""Characters handed to the tokenizer per text (a guard against megabyte strings; chunks are far smaller)."""

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_JOINERS = re.compile(r"[_$]+")


def prepare(text: str) -> str:
    """Identifiers split into words, the same in training and at run time.

    >>> prepare("def parseHTTPHeader(raw_bytes): return XMLParser")
    'def parse HTTP Header(raw bytes): return XML Parser'
    """
    return _CAMEL.sub(" ", _JOINERS.sub(" ", text[:MAX_CHARS]))


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class StaticEmbedder:
    """Thread-safe: the table is read-only and the tokenizer is used from one thread at a time."""

    backend = "numpy-static"
    backend_note: str | None = None
    inline = True
    embed_header = True
    """Chunks are embedded behind their `path: kind symbol` header, as in training (embedder.header_for)."""
    """Cheap enough to embed in the index pass itself (Engine._embed_inline), not as a later phase."""

    def __init__(self, folder: Path | None = None) -> None:
        folder = Path(folder) if folder is not None else MODEL_FOLDER
        card_path = folder / CARD
        try:
            card: dict[str, Any] = json.loads(card_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EmbeddingError(f"the embedded model's card {card_path} cannot be read: {exc}") from exc
        for name in (WEIGHTS, TOKENIZER):
            expected = str(card.get("sha256", {}).get(name, ""))
            try:
                found = file_sha256(folder / name)
            except OSError as exc:
                raise EmbeddingError(f"the embedded model's {name} cannot be read: {exc}") from exc
            if found != expected:
                raise EmbeddingError(
                    f"the embedded model's {name} in {folder} does not match its recorded sha256 "
                    f"({found[:12]} != {expected[:12]}): reinstall codebase-index"
                )
        from tokenizers import Tokenizer

        from .safetensors_reader import read_safetensors

        tensors = read_safetensors(folder / WEIGHTS)
        rows, scales = tensors["embeddings"], tensors["scales"]
        self._table = (rows.astype(np.float32) * scales.astype(np.float32)[:, None]).astype(np.float32)
        self._tokenizer: Tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._lock = threading.Lock()
        self._model_id = f"embedded:{card['name']}"
        self._dimensions = int(self._table.shape[1])
        if int(card.get("dimensions", self._dimensions)) != self._dimensions:
            raise EmbeddingError(
                f"the embedded model's card says {card['dimensions']} dimensions, the table has "
                f"{self._dimensions}"
            )
        self.card = card

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids (no special tokens), at most MAX_TOKENS."""
        prepared = [prepare(t) for t in texts]
        with self._lock:
            # encode_batch_fast (tokenizers >= 0.21) skips the character offsets we never read.
            encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
            encodings = encode(prepared, add_special_tokens=False)
        return [e.ids[:MAX_TOKENS] for e in encodings]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        table = self._table
        for row, ids in enumerate(self.token_ids(texts)):
            if ids:
                # One gather and sum per text: a batch-wide gather + reduceat was 25x slower (memory).
                out[row] = table[np.asarray(ids, dtype=np.int64)].sum(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
