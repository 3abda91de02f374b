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
from itertools import chain
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
_ASCII_WORDS = re.compile(r"[A-Za-z0-9]+|[!-#%-/:-@\[-^`{-~]")
"""Vocabulary entries that are a unit of their own (a letter-digit run or one punctuation character)."""
_ASCII_SPACE = re.compile(r"[ \t\n\r]+")
"""The spaces the pre-tokenizer always cuts at (other Unicode spaces stay inside a unit, for it to judge)."""
_CJK = (
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df\U0002a700-\U0002ceaf\U0002f800-\U0002fa1f"
)
_UNITS = re.compile(f"[^ \\t\\n\\r!-/:-@\\[-`{{-~{_CJK}]+|[!-#%-/:-@\\[-^`{{-~]|[{_CJK}]")
"""A text's units (see `token_ids`): stretches between the characters the pre-tokenizer always cuts at
(ASCII spaces; ASCII punctuation, each its own unit, except `_` and `$` that `prepare` turns into spaces;
CJK ideographs, each its own unit, spaced out by the normaliser). On plain ASCII these are its letter-digit
runs and punctuation. Everything else (accents, control characters the normaliser drops, other Unicode)
stays inside a unit for the tokenizer to judge, so the cut never changes the pieces."""
LONGEST_CACHED_UNIT = 100
"""Characters of the longest unit kept in the cache (WordPiece makes one [UNK] of any longer word)."""
WORD_CACHE_SIZE = 100_000
"""Distinct words whose pieces are kept (~20 MB; a large project uses tens of thousands); past it the cache
starts over from the vocabulary."""


def prepare(text: str) -> str:
    """Identifiers split into words, the same in training and at run time.

    >>> prepare("def parseHTTPHeader(raw_bytes): return XMLParser")
    'def parse HTTP Header(raw bytes): return XML Parser'
    """
    return _CAMEL.sub(" ", _JOINERS.sub(" ", text[:MAX_CHARS]))


def shipped_model_id() -> str:
    """The model id of the static model in the package (`embedded:<card name>`), read from its card."""
    card = json.loads((MODEL_FOLDER / CARD).read_text(encoding="utf-8"))
    return f"embedded:{card['name']}"


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
        self.folder = folder
        """Where the model was loaded from: the index pass's chunk workers load their copy from it."""
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
                    f"({found[:12]} != {expected[:12]}): reinstall local-codebase-index"
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
        vocabulary = self._tokenizer.get_vocab()
        self._single_pieces = {
            word: [piece]
            for word, piece in vocabulary.items()
            if word.isascii() and _ASCII_WORDS.fullmatch(word) and word == prepare(word).lower()
        }
        """A vocabulary entry is its own single piece (WordPiece takes the longest match first)."""
        self._word_pieces: dict[str, list[int]] = dict(self._single_pieces)
        specials = [t.content for t in self._tokenizer.get_added_tokens_decoder().values()]
        self._special = re.compile("|".join(map(re.escape, specials))) if specials else None
        """The tokenizer reads `[UNK]`, `[CLS]`, ... in a text as its special tokens: such text goes to it."""
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
        """Each text's token ids (no special tokens), at most MAX_TOKENS: exactly the tokenizer's answer
        for the prepared text.

        A text is cut into units (`_UNITS`: on code, its letter-digit runs and punctuation), each unit's
        pieces come from a cache the tokenizer fills once per distinct unit (`prepare` splits a run at its
        identifier joints, never across units; WordPiece never joins across them), and the text's ids are
        its units' pieces in order. Code repeats its words, so this is one regex pass and a lookup per
        word instead of a tokenizer pass per text (about 3x less CPU).
        """
        units_per_text = [self._units(text[:MAX_CHARS]) for text in texts]
        with self._lock:
            cache = self._word_pieces
            missing = {u for units in units_per_text for u in units if u not in cache}
            if len(cache) + len(missing) > WORD_CACHE_SIZE:
                cache.clear()
                cache.update(self._single_pieces)
                missing = {u for units in units_per_text for u in units if u not in cache}
            if missing:
                batch = sorted(missing)
                for unit, encoding in zip(batch, self._encode([prepare(u) for u in batch]), strict=True):
                    cache[unit] = encoding.ids
            pieces = cache.__getitem__
            out = [list(chain.from_iterable(map(pieces, units)))[:MAX_TOKENS] for units in units_per_text]
            for unit in missing:
                if len(unit) > LONGEST_CACHED_UNIT:  # a base64 blob or the like: never seen twice
                    del cache[unit]
            return out

    def _units(self, text: str) -> list[str]:
        """The units `token_ids` looks up for one text (see there)."""
        if self._special is None or not self._special.search(text):
            return _UNITS.findall(text)
        units: list[str] = []  # `[UNK]` and the like: the tokenizer matches them whole, so their runs too
        for run in _ASCII_SPACE.split(text):
            if self._special.search(run):
                units.append(run)
            else:
                units.extend(_UNITS.findall(run))
        return units

    def _encode(self, texts: list[str]) -> list[Any]:
        # encode_batch_fast (tokenizers >= 0.21) skips the character offsets we never read.
        encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
        return list(encode(texts, add_special_tokens=False))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        table = self._table
        for row, ids in enumerate(self.token_ids(texts)):
            if ids:
                # Each distinct token's row once, times its count: a batch-wide gather + reduceat was 25x
                # slower (memory), a plain gather-and-sum per text ~1.5x.
                pieces, counts = np.unique(np.asarray(ids, dtype=np.int64), return_counts=True)
                out[row] = counts.astype(np.float32) @ table[pieces]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
