#!/usr/bin/python3
"""Reading a tokenized Parquet corpus into feedline.io.TokenDataset, against
the per-document way: TokenDataset.from_parquet (Arrow's C++ reader, whole
buffers per row group) vs pyarrow's to_pylist() and one numpy array per
document (what a Python __getitem__ over the table amounts to).

The corpus: --docs documents with log-normal lengths (median about 330
tokens), int32 token ids, written as 4 Parquet files with row groups of
2,000 documents, in a temporary folder; warm page cache. Medians of
--rounds alternating runs.

Usage: bench/parquet_tokens.py [--build build] [--docs 40000] [--rounds 3]
(with the venv's python: it needs pyarrow)
"""
import argparse
import datetime
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from machine import cpu_model  # bench/machine.py


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--docs", type=int, default=40000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    import pyarrow as pa
    import pyarrow.parquet as pq

    from feedline import io

    rng = np.random.default_rng(0)
    n = args.docs
    lengths = np.exp(rng.normal(5.8, 1.1, n)).astype(np.int64) + 1
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tokens = rng.integers(0, 50000, int(offsets[-1]), dtype=np.int32)
    column = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(tokens))
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for f in range(4):
            part = column.slice(f * n // 4, (f + 1) * n // 4 - f * n // 4)
            paths.append(os.path.join(folder, f"part-{f}.parquet"))
            pq.write_table(pa.table({"input_ids": part}), paths[-1], row_group_size=2000)
        size = sum(os.path.getsize(p) for p in paths)
        print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_model()}, "
              f"{os.cpu_count()} CPUs, pyarrow {pa.__version__}")
        print(f"{n} documents, {offsets[-1]} tokens, {size / 2**20:.0f} MiB of Parquet")
        native, per_document = [], []
        for _ in range(args.rounds):
            start = time.perf_counter()
            fast = io.TokenDataset.from_parquet(os.path.join(folder, "*.parquet"))
            native.append(time.perf_counter() - start)
            start = time.perf_counter()
            docs = [np.asarray(d, dtype=np.int64) for p in paths
                    for d in pq.read_table(p).column("input_ids").to_pylist()]
            slow = io.TokenDataset.from_documents(docs)
            per_document.append(time.perf_counter() - start)
            assert len(fast) == len(slow) == n
        a, b = statistics.median(native), statistics.median(per_document)
        print("\n| reader | seconds (median) | M tokens/s |")
        print("|---|---|---|")
        print(f"| TokenDataset.from_parquet | {a:.2f} | {offsets[-1] / a / 1e6:.0f} |")
        print(f"| to_pylist + from_documents | {b:.2f} | {offsets[-1] / b / 1e6:.1f} |")
        print(f"\nfrom_parquet is {b / a:.1f}x faster")


if __name__ == "__main__":
    main()
