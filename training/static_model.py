"""Training the static code embedding model (python/codebase_index/embeddings/static.py) with numpy.

A text's vector is the sum of its tokens' rows, each scaled by the token's learned weight a_t =
softplus(w_t), L2-normalised. Trained with the symmetric in-batch contrastive loss (InfoNCE) on
(query -> code chunk) pairs (training/mine_pairs.py): every other chunk of the batch is a negative, and a
batch is drawn from one repository where it has enough pairs, so the negatives are the hard ones (the same
project's vocabulary). Gradients are written out by hand (the model is a sum, a norm and a dot product);
the table is updated with lazy Adam on the rows a batch touched. Deterministic for a seed.

Texts are tokenised exactly as at run time (`static.prepare`, the model folder's tokenizer), and a
chunk's text exactly as the index embeds it (`embedder.embedding_text` with its path + symbol header).
"""

from __future__ import annotations

import json
import math
import struct
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codebase_index.embedder import embedding_text
from codebase_index.embeddings.static import CARD, MAX_TOKENS, TOKENIZER, WEIGHTS, file_sha256, prepare

TRAIN_DOC_TOKENS = 256
"""Tokens of a chunk seen in training (run time reads MAX_TOKENS): most of a chunk's meaning is early."""


@dataclass
class Pair:
    query: str
    doc: str  # the chunk as the index embeds it
    repo: str
    kind: str
    language: str


def read_pairs(paths: Iterable[Path]) -> list[Pair]:
    """Pairs from mine_pairs.py's JSONL files, in file order."""
    out: list[Pair] = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                doc = embedding_text(row["path"], row["symbol"], row["chunk_kind"], row["text"], header=True)
                out.append(Pair(row["query"], doc, row["repo"], row["kind"], row["language"]))
    return out


def load_tokenizer(path: Path) -> Any:
    """The tokenizer as the run time uses it: no padding, no truncation (MAX_TOKENS cuts the ids)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def encode(tokenizer: Any, texts: Sequence[str], limit: int) -> list[np.ndarray]:
    """Token ids per text, prepared as at run time, at most `limit`."""
    out: list[np.ndarray] = []
    for start in range(0, len(texts), 4096):
        batch = [prepare(t) for t in texts[start : start + 4096]]
        for enc in tokenizer.encode_batch(batch, add_special_tokens=False):
            out.append(np.asarray(enc.ids[:limit], dtype=np.int64))
    return out


@dataclass
class Bags:
    """Texts as bags of tokens: for each (text, distinct token) its count, rows sorted by text."""

    rows: np.ndarray  # text index per entry
    tokens: np.ndarray
    counts: np.ndarray  # float32
    n: int

    @classmethod
    def of(cls, ids: Sequence[np.ndarray]) -> Bags:
        rows, tokens, counts = [], [], []
        for i, seq in enumerate(ids):
            if seq.size == 0:
                continue
            uniq, cnt = np.unique(seq, return_counts=True)
            rows.append(np.full(uniq.size, i, dtype=np.int64))
            tokens.append(uniq)
            counts.append(cnt.astype(np.float32))
        if not rows:
            empty = np.zeros(0, dtype=np.int64)
            return cls(empty, empty, np.zeros(0, dtype=np.float32), len(ids))
        return cls(np.concatenate(rows), np.concatenate(tokens), np.concatenate(counts), len(ids))


def softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x).astype(np.float32)


def inverse_softplus(y: np.ndarray) -> np.ndarray:
    return np.log(np.expm1(np.maximum(y, 1e-6))).astype(np.float32)


@dataclass
class TrainConfig:
    epochs: int = 3
    batch: int = 512
    lr_table: float = 2e-3
    lr_weights: float = 1e-2
    temperature: float = 0.05
    seed: int = 0
    min_repo_batch: int = 64
    """A repository with fewer pairs than this shares its batches with others."""


@dataclass
class Model:
    table: np.ndarray  # (V, d) float32
    weights: np.ndarray  # (V,) float32, pre-softplus
    history: list[dict[str, float]] = field(default_factory=list)

    def scaled(self) -> np.ndarray:
        """The table the run time uses: each row times its token's weight."""
        return self.table * softplus(self.weights)[:, None]

    def embed(self, bags: Bags) -> np.ndarray:
        return pool(self.scaled(), bags)[0]


def segment_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Row sums of `values` between consecutive `starts` (the last segment runs to the end). A loop of
    slice sums: numpy's reduceat along axis 0 is ~15x slower on (60k, 384) float32."""
    ends = np.r_[starts[1:], values.shape[0]]
    out = np.empty((starts.size, *values.shape[1:]), dtype=values.dtype)
    for i, (start, end) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        out[i] = values[start:end].sum(axis=0)
    return out


def pool(scaled: np.ndarray, bags: Bags) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors of the bags' texts (rows with no token stay zero) and their norms before scaling."""
    out = np.zeros((bags.n, scaled.shape[1]), dtype=np.float32)
    if bags.rows.size:
        contrib = scaled[bags.tokens] * bags.counts[:, None]
        starts = np.flatnonzero(np.r_[True, bags.rows[1:] != bags.rows[:-1]])
        out[bags.rows[starts]] = segment_sums(contrib, starts)
    norms = np.linalg.norm(out, axis=1)
    safe = np.where(norms > 0, norms, 1.0).astype(np.float32)
    return out / safe[:, None], safe


def _grouped_sum(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys, the sum of `values` rows per key)."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    return sorted_keys[starts], segment_sums(values[order], starts)


def _backward(
    model: Model, bags: Bags, units: np.ndarray, norms: np.ndarray, d_units: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row gradients of the table and of the weights for one side: (token ids, dTable rows, dWeights)."""
    d_sum = (d_units - units * np.sum(units * d_units, axis=1, keepdims=True)) / norms[:, None]
    per_entry = d_sum[bags.rows]  # (entries, d)
    a = softplus(model.weights[bags.tokens])
    d_table = per_entry * (bags.counts * a)[:, None]
    d_a = np.sum(per_entry * model.table[bags.tokens], axis=1) * bags.counts
    sigmoid = 1.0 / (1.0 + np.exp(-model.weights[bags.tokens]))
    tokens, rows = _grouped_sum(bags.tokens, d_table)
    _, d_w = _grouped_sum(bags.tokens, (d_a * sigmoid)[:, None])
    return tokens, rows, d_w[:, 0]


def contrastive_step(
    model: Model, queries: Bags, docs: Bags, temperature: float
) -> tuple[float, tuple[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Loss of one batch (query i belongs to doc i) and the gradients of both sides."""
    scaled = model.scaled()
    uq, nq = pool(scaled, queries)
    ud, nd = pool(scaled, docs)
    logits = (uq @ ud.T) / temperature
    b = logits.shape[0]
    row = logits - logits.max(axis=1, keepdims=True)
    p_row = np.exp(row)
    p_row /= p_row.sum(axis=1, keepdims=True)
    col = logits - logits.max(axis=0, keepdims=True)
    p_col = np.exp(col)
    p_col /= p_col.sum(axis=0, keepdims=True)
    diag = np.arange(b)
    loss = -0.5 * (np.log(p_row[diag, diag] + 1e-12).mean() + np.log(p_col[diag, diag] + 1e-12).mean())
    eye = np.eye(b, dtype=np.float32)
    d_logits = 0.5 * ((p_row - eye) + (p_col - eye)) / b / temperature
    d_uq = d_logits @ ud
    d_ud = d_logits.T @ uq
    return float(loss), _backward(model, queries, uq, nq, d_uq), _backward(model, docs, ud, nd, d_ud)


class LazyAdam:
    """Adam whose moments and step count advance only for the rows a batch touched (sparse updates)."""

    def __init__(self, shape: tuple[int, ...], lr: float, beta1: float = 0.9, beta2: float = 0.999) -> None:
        self.m = np.zeros(shape, dtype=np.float32)
        self.v = np.zeros(shape, dtype=np.float32)
        self.t = np.zeros(shape[0], dtype=np.int64)
        self.lr, self.beta1, self.beta2 = lr, beta1, beta2

    def update(self, param: np.ndarray, rows: np.ndarray, grad: np.ndarray) -> None:
        self.t[rows] += 1
        t = self.t[rows].astype(np.float32)
        self.m[rows] = self.beta1 * self.m[rows] + (1 - self.beta1) * grad
        self.v[rows] = self.beta2 * self.v[rows] + (1 - self.beta2) * grad * grad
        shape = (-1,) + (1,) * (grad.ndim - 1)
        m_hat = self.m[rows] / (1 - self.beta1**t).reshape(shape)
        v_hat = self.v[rows] / (1 - self.beta2**t).reshape(shape)
        param[rows] -= self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)


def batches(
    pairs: Sequence[Pair], doc_ids: Sequence[int], config: TrainConfig, epoch: int
) -> Iterator[list[int]]:
    """Pair indices per batch: one repository's pairs together where it has enough, the small ones mixed;
    a chunk appears once per batch (a second query for it would be its own false negative)."""
    rng = np.random.default_rng([config.seed, epoch])
    by_repo: dict[str, list[int]] = defaultdict(list)
    for i, pair in enumerate(pairs):
        by_repo[pair.repo].append(i)
    groups: list[list[int]] = []
    mixed: list[int] = []
    for repo in sorted(by_repo):
        members = [by_repo[repo][j] for j in rng.permutation(len(by_repo[repo]))]
        if len(members) < config.min_repo_batch:
            mixed.extend(members)
            continue
        groups.extend(members[s : s + config.batch] for s in range(0, len(members), config.batch))
    mixed = [mixed[j] for j in rng.permutation(len(mixed))]
    groups.extend(mixed[s : s + config.batch] for s in range(0, len(mixed), config.batch))
    for g in rng.permutation(len(groups)):
        seen: set[int] = set()
        batch = []
        for i in groups[g]:
            if doc_ids[i] not in seen:
                seen.add(doc_ids[i])
                batch.append(i)
        if len(batch) >= 8:
            yield batch


def idf_weights(doc_bags: Bags, vocab: int) -> np.ndarray:
    """Initial token weights: smoothed inverse document frequency, mean 1 over the tokens seen."""
    df = np.bincount(doc_bags.tokens, minlength=vocab).astype(np.float32)
    idf = np.log1p(doc_bags.n / (df + 1.0)).astype(np.float32)
    seen = df > 0
    idf /= max(float(idf[seen].mean()), 1e-6) if seen.any() else 1.0
    return inverse_softplus(np.maximum(idf, 0.05))


def train(
    pairs: Sequence[Pair],
    tokenizer: Any,
    init_table: np.ndarray,
    config: TrainConfig,
    *,
    log: Any = print,
) -> Model:
    """Fit the table and the token weights on `pairs`, starting from `init_table`."""
    doc_index: dict[str, int] = {}
    doc_ids = [doc_index.setdefault(p.doc, len(doc_index)) for p in pairs]
    docs = list(doc_index)
    q_tokens = encode(tokenizer, [p.query for p in pairs], MAX_TOKENS)
    d_tokens = encode(tokenizer, docs, TRAIN_DOC_TOKENS)
    vocab = init_table.shape[0]
    model = Model(init_table.astype(np.float32).copy(), idf_weights(Bags.of(d_tokens), vocab))
    opt_table = LazyAdam(model.table.shape, config.lr_table)
    opt_weights = LazyAdam(model.weights.shape, config.lr_weights)
    step = 0
    for epoch in range(config.epochs):
        started, losses = time.perf_counter(), []
        for batch in batches(pairs, doc_ids, config, epoch):
            queries = Bags.of([q_tokens[i] for i in batch])
            batch_docs = Bags.of([d_tokens[doc_ids[i]] for i in batch])
            loss, q_grad, d_grad = contrastive_step(model, queries, batch_docs, config.temperature)
            tokens, rows = _grouped_sum(
                np.concatenate([q_grad[0], d_grad[0]]), np.concatenate([q_grad[1], d_grad[1]])
            )
            _, d_w = _grouped_sum(
                np.concatenate([q_grad[0], d_grad[0]]), np.concatenate([q_grad[2], d_grad[2]])[:, None]
            )
            opt_table.update(model.table, tokens, rows)
            opt_weights.update(model.weights, tokens, d_w[:, 0])
            losses.append(loss)
            step += 1
        entry = {
            "epoch": epoch,
            "steps": step,
            "loss": float(np.mean(losses)) if losses else math.nan,
            "seconds": time.perf_counter() - started,
        }
        model.history.append(entry)
        log(f"epoch {epoch}: loss {entry['loss']:.4f} over {len(losses)} batches in {entry['seconds']:.1f}s")
    return model


# ------------------------------------------------------------------------------------------------ export


def quantize(scaled: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows and a float32 scale per row (the largest magnitude maps to 127)."""
    peak = np.abs(scaled).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    rows = np.clip(np.rint(scaled / scales[:, None]), -127, 127).astype(np.int8)
    return rows, scales


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """The safetensors layout (8-byte header length, JSON header, raw little-endian data)."""
    names = {np.dtype("int8"): "I8", np.dtype("float32"): "F32", np.dtype("float16"): "F16"}
    header: dict[str, Any] = {}
    offset = 0
    blobs = []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {
            "dtype": names[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        offset += len(data)
        blobs.append(data)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)))
        fh.write(raw)
        for blob in blobs:
            fh.write(blob)


def export(model: Model, tokenizer_file: Path, out: Path, name: str, card: dict[str, Any]) -> Path:
    """Write the model folder the run time loads: weights, tokenizer, and the card with both sha256."""
    out.mkdir(parents=True, exist_ok=True)
    rows, scales = quantize(model.scaled())
    write_safetensors(out / WEIGHTS, {"embeddings": rows, "scales": scales})
    (out / TOKENIZER).write_bytes(Path(tokenizer_file).read_bytes())
    full = {
        "name": name,
        "dimensions": int(rows.shape[1]),
        "vocabulary": int(rows.shape[0]),
        **card,
        "history": model.history,
        "sha256": {WEIGHTS: file_sha256(out / WEIGHTS), TOKENIZER: file_sha256(out / TOKENIZER)},
    }
    (out / CARD).write_text(json.dumps(full, indent=1) + "\n", encoding="utf-8")
    return out


# ---------------------------------------------------------------------------------------------- evaluate


def retrieval_scores(
    embed: Any, pairs: Sequence[Pair], *, per_repo: int = 400, seed: int = 0
) -> dict[str, dict[str, float]]:
    """Pure-cosine retrieval among each repository's own chunks: MRR@10 and Hit@1 per kind and overall.
    `embed(texts) -> unit rows`. Up to `per_repo` queries per repository (seeded sample)."""
    rng = np.random.default_rng(seed)
    by_repo: dict[str, list[int]] = defaultdict(list)
    for i, pair in enumerate(pairs):
        by_repo[pair.repo].append(i)
    ranks: dict[str, list[float]] = defaultdict(list)
    for repo in sorted(by_repo):
        members = by_repo[repo]
        docs = sorted({pairs[i].doc for i in members})
        index = {d: j for j, d in enumerate(docs)}
        doc_vectors = embed(docs)
        chosen = [members[j] for j in rng.permutation(len(members))[:per_repo]]
        q_vectors = embed([pairs[i].query for i in chosen])
        scores = q_vectors @ doc_vectors.T
        for row, i in enumerate(chosen):
            target = scores[row, index[pairs[i].doc]]
            rank = int((scores[row] > target).sum()) + 1
            reciprocal = 1.0 / rank if rank <= 10 else 0.0
            for key in (pairs[i].kind, "ALL"):
                ranks[key].append(reciprocal)
    return {
        k: {"mrr10": float(np.mean(v)), "hit1": float(np.mean([r == 1.0 for r in v])), "n": len(v)}
        for k, v in sorted(ranks.items())
    }
