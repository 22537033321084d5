#!/usr/bin/env python3
"""Packed token batches from a Parquet corpus, side by side: feedline against
Hugging Face datasets + torch's DataLoader + a packing collate, and Grain.

The job: tokenized documents with log-normal lengths (median about 330
tokens, mean about 600, 5% over 2048: web text; bench/text_corpus.py, shared
with bench/text_packing.py), --mib MiB of them written as --files Parquet
files (a list<int32> column input_ids, row groups of --row-group documents),
packed into rows of --seq-len tokens, --batch rows a batch, --workers
workers. Each loader reads the files itself:

  feedline ParquetDataset       io.ParquetDataset(files) with
                                DataLoader(shuffle=True, pack=PackOptions(
                                seq_len, "best_fit")); max_row_groups holds
                                every row group (a shuffled epoch)
  feedline ParquetDataset, seq  the same in file order (shuffle=False), 4 row
                                groups held: bounded memory (with --all)
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

Each run loads for --seconds after its first batch (or to the end of the
epoch, if sooner):
tokens/s counts real tokens (padding not), from the first batch on; the
time to the first batch (set-up, the plan, worker start-up) is its own
column; padding is the share of the rows' slots the run's batches left
empty. datasets' Arrow cache, built from the Parquet files once, is not
timed. Runs alternate, and the median of --rounds is printed as a markdown
table. The default size (200 MiB, 3 rounds of 12 s) runs in about four
minutes; --mib 8 --seconds 3 --rounds 1 checks that it runs.

Usage: bench/text_vs_peers.py [--build build] [--mib 200] [--files 4]
           [--row-group 2000] [--seq-len 2048] [--batch 8] [--workers 2]
           [--rounds 3] [--seconds 12] [--all] [--grain-path DIR]
           [--datasets-path DIR]
"""
import argparse
import datetime
import gc
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from machine import cpu_model  # bench/machine.py
from text_corpus import docs_for_mib, write_parquet  # bench/text_corpus.py
from text_packing import pack_collate  # bench/text_packing.py


class Meter:
    """Counts a run's batches against its time budget (--seconds after the
    first batch): tokens/s from the first batch on, the time to the first
    batch, and the padding share."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.start = time.perf_counter()
        self.first = None
        self.tokens = self.after_first = self.slots = 0

    def add(self, tokens, slots):
        """Counts a batch; False once the budget, counted from the first
        batch, is spent."""
        now = time.perf_counter()
        if self.first is None:
            self.first = now
        else:
            self.after_first += tokens
        self.tokens += tokens
        self.slots += slots
        return now - self.first < self.seconds

    def result(self):
        now = time.perf_counter()
        first = (self.first or now) - self.start
        rate = self.after_first / max(now - (self.first or now), 1e-9)
        return rate, first, 1 - self.tokens / max(self.slots, 1)


def run_feedline(paths, args, shuffle):
    from feedline import io

    meter = Meter(args.seconds)
    ds = io.ParquetDataset(paths, columns=["input_ids"],
                           max_row_groups=10**6 if shuffle else 4)
    loader = io.DataLoader(ds, batch_size=args.batch, shuffle=shuffle, num_workers=args.workers,
                           seed=0, pack=io.PackOptions(args.seq_len, strategy="best_fit"))
    for batch in loader:
        seg = batch["segment_ids"]
        if not meter.add(int(np.count_nonzero(seg)), seg.size):
            break
    result = meter.result()
    loader.close()
    return result


def run_feedline_torch(hf, args):
    import torch

    import feedline.torch as ft
    from feedline import io

    meter = Meter(args.seconds)
    loader = ft.DataLoader(hf, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                           pack=io.PackOptions(args.seq_len, strategy="best_fit"))
    for batch in loader:
        seg = batch["segment_ids"]
        if not meter.add(int(torch.count_nonzero(seg)), seg.numel()):
            break
    result = meter.result()
    loader.close()
    return result


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

    meter = Meter(args.seconds)
    loader = torch.utils.data.DataLoader(Documents(), batch_size=docs_per_batch, shuffle=True,
                                         num_workers=args.workers,
                                         collate_fn=pack_collate(args.seq_len))
    batches = iter(loader)
    for batch in batches:
        seg = batch["segment_ids"]
        if not meter.add(int(torch.count_nonzero(seg)), seg.numel()):
            break
    result = meter.result()
    del batches  # stops its workers
    gc.collect()
    return result


def run_grain(paths, args):
    import grain
    import grain.experimental as ge

    meter = Meter(args.seconds)
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
    iterator = iter(batches)
    for batch in iterator:
        seg = batch["input_ids_segment_ids"]
        if not meter.add(int(np.count_nonzero(seg)), seg.size):
            break
    result = meter.result()
    close = getattr(iterator, "close", None)
    if close is not None:
        close()  # stops its worker processes
    del iterator
    gc.collect()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--mib", type=float, default=200, help="MiB of Parquet to write")
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--row-group", type=int, default=2000)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=12,
                        help="how long each run loads (at most an epoch)")
    parser.add_argument("--all", action="store_true",
                        help="also feedline in file order, with 4 row groups held")
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

    with tempfile.TemporaryDirectory(prefix="text-vs-peers-") as folder:
        docs = docs_for_mib(args.mib)
        paths, lengths = write_parquet(folder, docs, args.files, args.row_group)
        size = sum(os.path.getsize(p) for p in paths)
        hf = datasets.Dataset.from_parquet(paths, cache_dir=os.path.join(folder, "hf-cache"))
        print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
              f"{cpu_model()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
              f"datasets {datasets.__version__}")
        print(f"{docs} documents, {int(lengths.sum())} tokens, {args.files} files of row "
              f"groups of {args.row_group} ({size / 2**20:.0f} MiB of Parquet), seq_len "
              f"{args.seq_len}, batch {args.batch} rows, {args.workers} workers, "
              f"{args.seconds:g} s a run")
        runs = {"feedline ParquetDataset": lambda: run_feedline(paths, args, shuffle=True)}
        if args.all:
            runs["feedline ParquetDataset, in file order"] = lambda: run_feedline(
                paths, args, False)
        runs["feedline.torch over datasets.Dataset"] = lambda: run_feedline_torch(hf, args)
        runs["datasets + torch + packing collate"] = lambda: run_datasets_torch(
            hf, float(lengths.mean()), args)
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
        print("\n| loader | tokens/s (median) | vs datasets + torch | first batch | padding |")
        print("|---|---|---|---|---|")
        for name, rounds in results.items():
            rate = statistics.median(r[0] for r in rounds)
            print(f"| {name} | {rate / 1e6:.2f} M | {rate / base:.2f}x | "
                  f"{statistics.median(r[1] for r in rounds):.2f} s | "
                  f"{statistics.median(r[2] for r in rounds) * 100:.2f}% |")


if __name__ == "__main__":
    main()
