#!/usr/bin/env python3
"""Packed token batches from a Parquet corpus, side by side: feedline against
Hugging Face datasets + torch's DataLoader + a packing collate, and Grain.

The job: --docs tokenized documents with log-normal lengths (median about
330 tokens, mean about 600, 5% over 2048: web text) written as --files
Parquet files (a list<int32> column input_ids, row groups of --row-group
documents), packed into rows of --seq-len tokens, --batch rows a batch,
--workers workers. Each loader reads the files itself:

  feedline ParquetDataset       io.ParquetDataset(files) with
                                DataLoader(shuffle=True, pack=PackOptions(
                                seq_len, "best_fit")); max_row_groups holds
                                every row group (a shuffled epoch)
  feedline ParquetDataset, seq  the same in file order (shuffle=False), 4 row
                                groups held: bounded memory
  feedline.torch over datasets  feedline.torch.DataLoader(datasets.Dataset,
                                shuffle=True, pack=...): the one-line swap
  datasets + torch + collate    datasets.Dataset.from_parquet(files) in numpy
                                format, torch.utils.data.DataLoader(shuffle=
                                True, batch_size = the documents filling
                                --batch rows on average) and a first-fit
                                packing collate_fn in numpy
                                (bench/text_packing.py's)
  grain ParquetIterDataset      ParquetIterDataset per file, interleaved,
                                documents truncated to seq_len (its packers
                                take no longer ones),
                                BestFitPackIterDataset(num_packing_bins=64),
                                batch, mp_prefetch(--workers); skipped when
                                grain does not import (it needs a venv of its
                                own: --grain-path adds it to sys.path)

Figures are tokens/s (real tokens, padding not counted) over one epoch,
setup and worker start-up included (datasets' Arrow cache built from the
Parquet files excluded: it is made once), and the padding share of the
rows; runs alternate and the median of --rounds is printed as a markdown
table.

Usage: bench/text_vs_peers.py [--build build] [--docs 40000] [--files 4]
           [--row-group 2000] [--seq-len 2048] [--batch 8] [--workers 2]
           [--rounds 3] [--grain-path DIR] [--datasets-path DIR]
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
from text_packing import lengths_of, pack_collate  # bench/text_packing.py


def write_corpus(folder, args):
    import pyarrow as pa
    import pyarrow.parquet as pq

    lengths = lengths_of(args.docs, seed=0)
    rng = np.random.default_rng(1)
    paths = []
    for f, part in enumerate(np.array_split(lengths, args.files)):
        offsets = np.zeros(len(part) + 1, np.int32)
        np.cumsum(part, out=offsets[1:])
        values = pa.array(rng.integers(0, 50000, int(offsets[-1]), dtype=np.int32))
        column = pa.ListArray.from_arrays(pa.array(offsets), values)
        path = os.path.join(folder, f"part-{f:03d}.parquet")
        pq.write_table(pa.table({"input_ids": column}), path, row_group_size=args.row_group)
        paths.append(path)
    return paths, lengths


def count(batches, nonzero):
    tokens = slots = 0
    for batch in batches:
        seg = batch["segment_ids"]
        tokens += nonzero(seg)
        slots += int(np.prod(seg.shape))
    return tokens, slots


def run_feedline(paths, args, shuffle):
    from feedline import io

    start = time.perf_counter()
    ds = io.ParquetDataset(paths, columns=["input_ids"],
                           max_row_groups=10**6 if shuffle else 4)
    loader = io.DataLoader(ds, batch_size=args.batch, shuffle=shuffle, num_workers=args.workers,
                           seed=0, pack=io.PackOptions(args.seq_len, strategy="best_fit"))
    tokens, slots = count(loader, lambda s: int(np.count_nonzero(s)))
    seconds = time.perf_counter() - start
    loader.close()
    return tokens / seconds, 1 - tokens / slots


def run_feedline_torch(hf, args):
    import torch

    import feedline.torch as ft
    from feedline import io

    start = time.perf_counter()
    loader = ft.DataLoader(hf, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                           pack=io.PackOptions(args.seq_len, strategy="best_fit"))
    tokens, slots = count(loader, lambda s: int(torch.count_nonzero(s)))
    return tokens / (time.perf_counter() - start), 1 - tokens / slots


def run_datasets_torch(hf, mean_length, args):
    import torch

    docs_per_batch = max(1, round(args.batch * args.seq_len / mean_length))
    numpy_docs = hf.with_format("numpy")

    class Documents(torch.utils.data.Dataset):
        # The token column of a row, as datasets gives it in numpy format.
        def __len__(self):
            return len(numpy_docs)

        def __getitem__(self, i):
            return numpy_docs[i]["input_ids"]

    start = time.perf_counter()
    loader = torch.utils.data.DataLoader(Documents(), batch_size=docs_per_batch, shuffle=True,
                                         num_workers=args.workers,
                                         collate_fn=pack_collate(args.seq_len))
    tokens, slots = count(loader, lambda s: int(torch.count_nonzero(s)))
    return tokens / (time.perf_counter() - start), 1 - tokens / slots


def run_grain(paths, args):
    import grain
    import grain.experimental as ge

    start = time.perf_counter()
    files = grain.MapDataset.source(paths).map(ge.ParquetIterDataset)
    rows = ge.InterleaveIterDataset(files, cycle_length=len(paths))
    # Grain's packers refuse a document over seq_len: it is truncated (the
    # others split it), so Grain's epoch holds fewer tokens.
    seq_len = args.seq_len
    rows = rows.map(lambda row: {"input_ids": np.asarray(row["input_ids"][:seq_len], np.int32)})
    packed = ge.BestFitPackIterDataset(rows, length_struct={"input_ids": args.seq_len},
                                       num_packing_bins=64, seed=0)
    batches = packed.batch(args.batch)
    if args.workers:
        batches = batches.mp_prefetch(grain.MultiprocessingOptions(num_workers=args.workers))
    tokens = slots = 0
    for batch in batches:
        seg = batch["input_ids_segment_ids"]
        tokens += int(np.count_nonzero(seg))
        slots += seg.size
    return tokens / (time.perf_counter() - start), 1 - tokens / slots


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--docs", type=int, default=40000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--row-group", type=int, default=2000)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--grain-path", default=None, help="a folder with grain (pip --target)")
    parser.add_argument("--datasets-path", default=None,
                        help="a folder with datasets (pip --target), if not in the venv")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    for extra in (args.datasets_path, args.grain_path):
        if extra:
            sys.path.append(extra)
    import datasets
    import torch

    folder = tempfile.mkdtemp(prefix="text-vs-peers-")
    paths, lengths = write_corpus(folder, args)
    size = sum(os.path.getsize(p) for p in paths)
    hf = datasets.Dataset.from_parquet(paths, cache_dir=os.path.join(folder, "hf-cache"))
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_model()}, "
          f"{os.cpu_count()} CPUs, torch {torch.__version__}, datasets {datasets.__version__}")
    print(f"{args.docs} documents, {int(lengths.sum())} tokens, {args.files} files of row groups "
          f"of {args.row_group} ({size / 2**20:.0f} MiB of Parquet), seq_len {args.seq_len}, "
          f"batch {args.batch} rows, {args.workers} workers")
    runs = {
        "feedline ParquetDataset": lambda: run_feedline(paths, args, shuffle=True),
        "feedline ParquetDataset, in file order": lambda: run_feedline(paths, args, False),
        "feedline.torch over datasets.Dataset": lambda: run_feedline_torch(hf, args),
        "datasets + torch + packing collate": lambda: run_datasets_torch(
            hf, float(lengths.mean()), args),
    }
    try:
        import grain  # noqa: F401

        runs["grain ParquetIterDataset + BestFitPack"] = lambda: run_grain(paths, args)
    except ImportError as error:
        print(f"grain skipped: {error}")
    results = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            results[name].append(run())
    base = statistics.median(r[0] for r in results["datasets + torch + packing collate"])
    print("\n| loader | tokens/s (median) | vs datasets + torch | padding |")
    print("|---|---|---|---|")
    for name, rounds in results.items():
        rate = statistics.median(r[0] for r in rounds)
        print(f"| {name} | {rate / 1e6:.2f} M | {rate / base:.2f}x | "
              f"{statistics.median(r[1] for r in rounds) * 100:.2f}% |")


if __name__ == "__main__":
    main()
