"""The sparse BM25 vector of a chunk, shared by the local multi-repository search and Qdrant.

A chunk's sparse vector holds, per term of OUR code-aware tokenizer (`tokens.tokenize`, as the local index
stores it), the BM25 term-frequency part `tf (k1 + 1) / (tf + k1 (1 - b + b len / L))`; the corpus part,
the IDF, is supplied at query time: by Qdrant's `idf` modifier over the collection, or by
`union_idf` over the repositories a local search covers (same formula, `bm25.idf`). A query is the
weighted term list of `ranking.query.keyword_query`, so score = sum over query terms of weight x idf x
tf part: BM25 over the union of the searched repositories.

`L` is a fixed reference length rather than each repository's average: a chunk's value never changes
when other chunks are added, so incremental publishing re-sends only changed chunks, and a collection
that several machines fill stays consistent.
"""

from __future__ import annotations

import functools
import math
import zlib

import numpy as np

K1 = 1.2
B = 0.75
# Tokens of a typical chunk (mean n_tokens of the stdlib index and this repository's: 84 and 95).
REFERENCE_LENGTH = 90.0


def term_index(term: str) -> int:
    """The sparse-vector dimension of a term: CRC-32 of its UTF-8 bytes (Qdrant indices are u32; the
    same on every machine, unlike the local index's term ids).

    >>> term_index("parse") == term_index("parse") and term_index("parse") != term_index("parser")
    True
    """
    return zlib.crc32(term.encode("utf-8", "surrogatepass"))


def tf_weights(tfs: np.ndarray, length: float) -> np.ndarray:
    """BM25 term-frequency part of each term of one chunk of `length` tokens.

    >>> [round(float(v), 3) for v in tf_weights(np.array([1, 3]), REFERENCE_LENGTH)]
    [1.0, 1.571]
    """
    tf = np.asarray(tfs, dtype=np.float64)
    norm = K1 * (1.0 - B + B * float(length) / REFERENCE_LENGTH)
    return tf * (K1 + 1.0) / (tf + norm)


def union_idf(n_docs: int, df: int) -> float:
    """IDF over several repositories' chunks, as Qdrant's `idf` modifier computes it over a collection.

    >>> round(union_idf(4, 2), 4)
    0.6931
    """
    return math.log1p((n_docs - df + 0.5) / (df + 0.5))


def field_terms(symbol: str, path: str) -> list[str]:
    """The terms a chunk's name and file add to its text: the symbol's tokens once and the path's as the
    local path field counts them (folders once, module name twice; `search.path_field_tokens`). The local
    single-repository search scores these as separate BM25 fields; one sparse vector holds them with the
    text (a chunk defining `JsonReader` in `stream/JsonReader.java` then matches the query `JsonReader` on
    its name, not only on the words of its body).

    >>> field_terms("parse_header", "lib/http.py")
    ['parse_header', 'parse', 'header', 'lib', 'http', 'http']
    """
    return _symbol_terms(symbol) + _path_terms(path)


@functools.lru_cache(maxsize=1 << 14)
def _symbol_terms(symbol: str) -> list[str]:
    from ..tokens import tokenize

    return tokenize(symbol)


@functools.lru_cache(maxsize=1 << 14)
def _path_terms(path: str) -> list[str]:
    """Cached: every chunk of a file has the same (callers only read the list)."""
    from ..search import path_field_tokens

    return path_field_tokens(path)


def sparse_vector(indices: np.ndarray, tfs: np.ndarray, length: float) -> tuple[list[int], list[float]]:
    """(indices, values) of a chunk for Qdrant from its term indices (`term_index`) and term frequencies;
    a repeated index (a field term also in the text, or the rare hash collision) sums its frequencies
    before the tf part is taken, as the local postings do."""
    idx: np.ndarray = np.asarray(indices, dtype=np.int64)
    tf: np.ndarray = np.asarray(tfs, dtype=np.float64)
    unique, inverse = np.unique(idx, return_inverse=True)
    if unique.shape[0] != idx.shape[0]:
        tf = np.bincount(inverse, weights=tf, minlength=unique.shape[0])
        idx = unique
    return [int(i) for i in idx], [float(v) for v in tf_weights(tf, length)]
