"""The sparse BM25 vector of a chunk, shared by the local multi-repository search and Qdrant.

A chunk's sparse vector holds, per term of OUR code-aware tokenizer (`bm25.tokenize`, as the local index
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


def sparse_vector(
    term_ids: np.ndarray, tfs: np.ndarray, length: float, hashes: np.ndarray
) -> tuple[list[int], list[float]]:
    """(indices, values) of a chunk for Qdrant: local term ids mapped through `hashes` (term id -> index),
    the rare hash collision inside one chunk summed into one dimension."""
    values = tf_weights(tfs, length)
    indices = hashes[np.asarray(term_ids, dtype=np.int64)]
    unique, inverse = np.unique(indices, return_inverse=True)
    if unique.shape[0] != indices.shape[0]:
        values = np.bincount(inverse, weights=values, minlength=unique.shape[0])
        indices = unique
    return [int(i) for i in indices], [float(v) for v in values]
