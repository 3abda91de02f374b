"""Token counting for budgets and savings, with a real tokenizer we already ship.

The counter is the WordPiece tokenizer of the embedded model (all-MiniLM-L6-v2's vocabulary, which the
static code model uses: `embeddings/code-static/tokenizer.json`, run by HF `tokenizers`): it ships inside
the package, loads offline in milliseconds and is deterministic. WordPiece splits every punctuation mark and
sub-word, so on code it counts at least as many pieces as the byte-pair tokenizers of chat models, except
for the whitespace it drops: those models spend about one token on each line break with its indentation, so
each line break counts one more. Counts are additive over text joined at line breaks (the pre-tokenizer
splits on whitespace), and never below one per 4 bytes (WordPiece makes one [UNK] of a 5,000-character
word), so the sum over the parts of a text joined at line breaks is at least the count of the whole: a pack
is budgeted part by part and checked once more as a whole.

Without that file (a damaged install) the counter falls back to a byte estimate (one token per 2 bytes,
above what either tokenizer gives on code) and says so in `name`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

WORDPIECE_NAME = "all-MiniLM-L6-v2 WordPiece + line breaks"
ESTIMATE_NAME = "estimate: 1 token per 2 bytes (embedded model tokenizer not installed)"


def _load() -> Tokenizer | None:
    try:
        from tokenizers import Tokenizer

        from ..embeddings.static import MODEL_FOLDER, TOKENIZER

        tokenizer = Tokenizer.from_file(str(MODEL_FOLDER / TOKENIZER))
    except Exception:  # no tokenizer file, no tokenizers: the estimate still bounds the budget
        return None
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


class TokenCounter:
    """Counts tokens of text the way budgets and savings are reported (see the module docstring)."""

    def __init__(self, tokenizer: Tokenizer | None) -> None:
        self._tokenizer = tokenizer
        self.name = WORDPIECE_NAME if tokenizer is not None else ESTIMATE_NAME

    def count(self, text: str) -> int:
        if not text:
            return 0
        breaks = text.count("\n")
        if self._tokenizer is None:
            return max(1, -(-len(text.encode("utf-8", "replace")) // 2)) + breaks
        pieces = len(self._tokenizer.encode(text, add_special_tokens=False).ids)
        # WordPiece turns a word over 100 characters (base64, minified code) into one [UNK]: never count
        # fewer than one token per 4 bytes, about what byte-pair tokenizers give such text.
        return max(pieces, -(-len(text.encode("utf-8", "replace")) // 4)) + breaks

    def count_many(self, texts: Sequence[str]) -> list[int]:
        # One text at a time: encode_batch would start the tokenizer's own thread pool.
        return [self.count(t) for t in texts]


_shared: TokenCounter | None = None
_shared_lock = threading.Lock()


def counter() -> TokenCounter:
    """The process-wide counter (the tokenizer loads once)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = TokenCounter(_load())
        return _shared
