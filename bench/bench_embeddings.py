"""Throughput of the embedded MiniLM embedder on real code, and single-query latency.

Chunks are ~128-token windows of CPython stdlib sources (whatever interpreter runs this), so the
figures are comparable across machines of one kind. Run:

    .venv/bin/python bench/bench_embeddings.py [--chunks 300] [--repeat 2]

It also times the pool with OpenBLAS left at its own thread count (`blas=default`) to show why the
embedder pins BLAS to one thread per worker.

The machine is often shared, so every row also says how many cores the run actually got (process CPU
time / wall time) and its chunks per CPU-second: a 2-thread figure at "cores 1.1" was measured with one
core busy elsewhere and says little about the 2-core speed, while chunks per CPU-second barely moves.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

from codebase_index.embeddings import minilm
from codebase_index.embeddings.blas_threads import openblas_control
from codebase_index.embeddings.minilm import MiniLMEmbedder


def stdlib_chunks(embedder: MiniLMEmbedder, count: int, target_tokens: int = 128) -> list[str]:
    """Consecutive lines of stdlib modules, grouped until they reach about `target_tokens` tokens."""
    tokenizer = minilm._load_tokenizer(embedder.model_dir / "tokenizer.json", 100_000)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    chunks: list[str] = []
    for path in sorted(stdlib.glob("*.py")):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        current: list[str] = []
        tokens = 0
        for line in lines:
            if not line.strip():
                continue
            current.append(line)
            tokens += len(tokenizer.encode(line, add_special_tokens=False).ids)
            if tokens >= target_tokens - 2:
                chunks.append("\n".join(current))
                current, tokens = [], 0
                if len(chunks) >= count:
                    return chunks
    return chunks


@contextlib.contextmanager
def blas_untouched() -> Iterator[None]:
    """Swap the one-BLAS-thread guard out, to measure what it buys."""
    saved = minilm.single_blas_thread
    minilm.single_blas_thread = contextlib.nullcontext  # type: ignore[assignment]
    try:
        yield
    finally:
        minilm.single_blas_thread = saved


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3, help="rounds over all configurations")
    args = parser.parse_args()

    base = MiniLMEmbedder()
    t0 = time.perf_counter()
    base.embed_query("warm up")
    print(f"first use (load weights + tokenizer): {time.perf_counter() - t0:.2f} s")
    chunks = stdlib_chunks(base, args.chunks)
    lengths = [len(ids) for ids in base._encode(base._loaded(), chunks)]
    print(
        f"{len(chunks)} stdlib chunks, tokens mean {statistics.mean(lengths):.0f} "
        f"min {min(lengths)} max {max(lengths)}"
    )
    control = openblas_control()
    print(
        f"OpenBLAS control: {'found' if control else 'none'}; "
        f"default threads {control.get() if control else '?'}"
    )

    # Batches are capped at 16 texts (the provider's default) and `tokens` padded tokens.
    configs = [(t, b, "1/worker") for t in (1, 2) for b in (256, 512, 1024)]
    configs += [(1, 512, "default"), (2, 512, "default")]
    embedders = {}
    for threads, batch, blas in configs:
        embedder = MiniLMEmbedder(threads=threads, batch_size=16, batch_tokens=batch)
        embedder._model = base._loaded()  # share the loaded weights: measure compute only
        embedders[threads, batch, blas] = embedder
    # Rounds interleave the configurations so a burst of load from other processes hits them all alike.
    times: dict[tuple[int, int, str], list[float]] = {c: [] for c in configs}
    cpu: dict[tuple[int, int, str], list[float]] = {c: [] for c in configs}
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for _ in range(args.repeat):
        for config in configs:
            with blas_untouched() if config[2] == "default" else contextlib.nullcontext():
                t0, c0 = time.perf_counter(), time.process_time()
                embedders[config].embed_documents(chunks)
                times[config].append(time.perf_counter() - t0)
                cpu[config].append(time.process_time() - c0)
    for (threads, batch, blas), runs in times.items():
        best, median = min(runs), statistics.median(runs)
        cpu_median = statistics.median(cpu[threads, batch, blas])
        print(
            f"threads={threads} tokens={batch:>4} blas={blas:<8} best {len(chunks) / best:5.1f} chunks/s "
            f"({sum(lengths) / best:5.0f} tokens/s), median {len(chunks) / median:5.1f} chunks/s, "
            f"cores {cpu_median / median:4.2f}, {len(chunks) / cpu_median:5.1f} chunks/CPU-s"
        )
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")

    queries = [
        "where is the gitignore parsed",
        "open a sqlite connection with WAL mode",
        "function that splits camelCase identifiers into words",
        "retry an HTTP request with exponential backoff",
    ]
    latencies = []
    for i in range(60):
        t0 = time.perf_counter()
        base.embed_query(queries[i % len(queries)])
        latencies.append((time.perf_counter() - t0) * 1000)
    latencies.sort()
    print(
        f"embed_query: p50 {statistics.median(latencies):.1f} ms, "
        f"p90 {latencies[int(0.9 * len(latencies))]:.1f} ms"
    )


if __name__ == "__main__":
    main()
