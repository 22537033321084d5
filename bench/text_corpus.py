"""The tokenized corpus the text benchmarks share (bench/text_packing.py,
bench/text_vs_peers.py): documents with log-normal lengths (median about
330 tokens, mean about 600, 5% over 2048: web text) of uniform int32 token
ids below 50,000, made from fixed seeds, so that every loader and every run
sees the same documents; written as Parquet when asked.
"""
import argparse
import os

import numpy as np

# Parquet bytes per token of such documents, written without dictionary
# encoding (int32 ids of about 16 random bits, Snappy, which finds nothing
# to compress): to choose a document count for a size in MiB.
_PARQUET_BYTES_PER_TOKEN = 4.0


def lengths_of(docs, seed=0):
    """The lengths of `docs` documents (int64, each at least 1)."""
    rng = np.random.default_rng(seed)
    return np.exp(rng.normal(5.8, 1.1, docs)).astype(np.int64) + 1


def documents(docs, seed=0):
    """(tokens int32, offsets int64 [docs + 1], lengths): document i is
    tokens[offsets[i]:offsets[i + 1]]."""
    lengths = lengths_of(docs, seed)
    offsets = np.zeros(docs + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    rng = np.random.default_rng(seed + 1)
    tokens = rng.integers(0, 50000, int(offsets[-1]), dtype=np.int32)
    return tokens, offsets, lengths


def docs_for_mib(mib, seed=0):
    """About how many documents make `mib` MiB of Parquet."""
    mean = float(lengths_of(100000, seed).mean())
    return int(mib * 2**20 / (mean * _PARQUET_BYTES_PER_TOKEN)) + 1


def write_parquet(folder, docs, files, row_group, seed=0):
    """Writes the corpus of `docs` documents as `files` Parquet files (one
    list<int32> column input_ids, row groups of `row_group` documents) in
    `folder`; returns (paths, lengths). Without dictionary encoding: a
    vocabulary of 50,000 ids leaves a dictionary page per column chunk that
    saves little, and makes the writer several times slower."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tokens, offsets, lengths = documents(docs, seed)
    paths = []
    bounds = np.linspace(0, docs, files + 1).astype(np.int64)
    for f, (a, b) in enumerate(zip(bounds, bounds[1:])):
        local = (offsets[a:b + 1] - offsets[a]).astype(np.int32)
        values = pa.array(tokens[offsets[a]:offsets[b]])
        column = pa.ListArray.from_arrays(pa.array(local), values)
        path = os.path.join(folder, f"part-{f:03d}.parquet")
        pq.write_table(pa.table({"input_ids": column}), path, row_group_size=row_group,
                       use_dictionary=False)
        paths.append(path)
    return paths, lengths


def packing_arguments(description, rounds):
    """The command-line options the packing benchmarks share: --build,
    --seq-len, --batch, --workers and --rounds (default `rounds`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--build", default="build")
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=rounds)
    return parser
