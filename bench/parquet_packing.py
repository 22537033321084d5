#!/usr/bin/python3
"""Packing a tokenized Parquet corpus: feedline against a plain pyarrow + numpy
packer on the same files, and against pyarrow's own read of those files.

The corpus: bench/text_corpus.py's documents (log-normal lengths, median
about 330 tokens, int32 ids), --mib MiB of Parquet in --files files with row
groups of --row-group documents, in a temporary folder; warm page cache.
Each contender goes through the corpus once in file order (no shuffle) and
makes rows of --seq-len tokens, --batch rows a batch, with input_ids,
labels (shifted, -100 after a document's last token and in padding),
position_ids, segment_ids and cu_seqlens:

  feedline  DataLoader(ParquetDataset(files, columns=["input_ids"]),
            batch_size, num_workers=--workers, pack=PackOptions(seq_len)):
            best fit over 64 open rows, long documents split. The dataset is
            made before the clock starts (its construction, which counts the
            documents' lengths from the column, is printed on its own).
  feedline, K workers
            the same with num_workers=K, for each K of --other-workers
            (default 0: the loop packs the rows itself while the dataset's
            reader threads decode the row groups).
  plain     what a user writes with pyarrow and numpy: ParquetFile.
            iter_batches over the token column, each batch's values and
            offsets as numpy arrays, documents placed greedily (next fit:
            the current row if it has room, else a new row; long documents
            split into full rows), each batch's fields filled with numpy
            slices, in one process.
  floor     pyarrow alone: read_row_group of the token column, group after
            group, file after file, nothing done with the values: what any
            packer of these files must at least spend.

Rounds alternate the contenders (the order rotated each round). Printed: tokens/s
(real tokens, padding not counted) and process CPU time per million tokens,
medians of --rounds, and the ratios of feedline's rate to each; then each
feedline variant's rate over the plain packer's;
then the padding share of feedline's rows (online best fit: each document in
turn to the open row with the least room that holds it, at most 64 rows
open), of the plain packer's (next fit), and of an offline best fit
decreasing over the same documents (all lengths known and sorted longest
first, any number of rows open: close to the fewest rows possible).

Usage: bench/parquet_packing.py [--build build] [--mib 100] [--rounds 5]
           [--seq-len 2048] [--batch 8] [--workers 2] [--other-workers 0]
           [--files 4] [--row-group 1000]
(with the venv's python: it needs pyarrow)
"""
import datetime
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from machine import cpu_model  # bench/machine.py
from text_corpus import docs_for_mib, packing_arguments, write_parquet  # bench/text_corpus.py
from text_packing import row_fields  # bench/text_packing.py


def run_feedline(dataset, args, workers):
    from feedline import io

    loader = io.DataLoader(dataset, batch_size=args.batch, num_workers=workers,
                           pack=io.PackOptions(args.seq_len))
    tokens = 0
    for batch in loader:
        tokens += int(np.count_nonzero(batch["segment_ids"]))
    loader.close()
    return tokens


class PlainPacker:
    """Next-fit packing into seq_len rows with numpy, batch rows at a time."""

    def __init__(self, seq_len, batch):
        self.seq_len, self.batch = seq_len, batch
        self.rows = []          # finished rows, each a list of pieces
        self.row, self.room = [], seq_len
        self.tokens = self.rows_made = 0

    def add(self, document):
        seq_len = self.seq_len
        for start in range(0, len(document), seq_len):
            piece = document[start:start + seq_len]
            if len(piece) > self.room:
                self.close_row()
            self.row.append(piece)
            self.room -= len(piece)
        if self.room == 0:
            self.close_row()

    def close_row(self):
        if self.row:
            self.rows.append(self.row)
            self.rows_made += 1
        self.row, self.room = [], self.seq_len
        if len(self.rows) == self.batch:
            self.emit()

    def emit(self):
        fields = row_fields(self.rows, self.seq_len, ends=True)
        self.tokens += int(np.count_nonzero(fields["segment_ids"]))
        self.rows = []

    def finish(self):
        self.close_row()
        if self.rows:
            self.emit()
        return self.tokens


def run_plain(paths, args):
    import pyarrow.parquet as pq

    packer = PlainPacker(args.seq_len, args.batch)
    for path in paths:
        for record_batch in pq.ParquetFile(path).iter_batches(batch_size=args.row_group,
                                                                columns=["input_ids"]):
            column = record_batch.column(0)
            offsets = column.offsets.to_numpy()
            values = column.values.to_numpy()
            for a, b in zip(offsets[:-1], offsets[1:]):
                packer.add(values[a:b])
    return packer.finish()


def offline_best_fit_decreasing_rows(lengths, seq_len):
    """The rows an offline best fit decreasing packs the documents into
    (long documents split into full rows, their remainders packed): every
    piece, longest first, to the row with the least room that holds it."""
    import bisect

    full = int(np.sum(lengths // seq_len))
    pieces = np.sort(lengths % seq_len)[::-1]
    rooms = []  # the open rows' room, ascending
    for piece in pieces[pieces > 0]:
        at = bisect.bisect_left(rooms, piece)
        if at == len(rooms):
            room = seq_len - piece
        else:
            room = rooms.pop(at) - piece
        if room > 0:
            bisect.insort(rooms, room)
        else:
            full += 1
    return full + len(rooms)


def run_floor(paths, args):
    import pyarrow.parquet as pq

    tokens = 0
    for path in paths:
        reader = pq.ParquetFile(path)
        for group in range(reader.num_row_groups):
            column = reader.read_row_group(group, columns=["input_ids"]).column(0)
            tokens += sum(len(chunk.values) for chunk in column.chunks)
    return tokens


def main():
    parser = packing_arguments(__doc__.split("\n")[0], rounds=5)
    parser.add_argument("--mib", type=float, default=100)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--row-group", type=int, default=1000)
    parser.add_argument("--other-workers", default="0",
                        help="comma-separated worker counts of further feedline contenders "
                             "('' for none)")
    args = parser.parse_args()
    others = [int(k) for k in args.other_workers.split(",") if k.strip()]
    sys.path.insert(0, os.path.join(args.build, "python"))
    import pyarrow as pa

    from feedline import io

    docs = docs_for_mib(args.mib)
    with tempfile.TemporaryDirectory() as folder:
        paths, lengths = write_parquet(folder, docs, args.files, args.row_group)
        size = sum(os.path.getsize(p) for p in paths)
        total = int(lengths.sum())
        print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_model()}, "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
              f"pyarrow {pa.__version__}")
        print(f"{docs} documents, {total} tokens, {size / 2**20:.0f} MiB of Parquet in "
              f"{args.files} files, row groups of {args.row_group}; seq_len {args.seq_len}, "
              f"batch {args.batch}, feedline with {args.workers} workers")
        start = time.perf_counter()
        dataset = io.ParquetDataset(paths, columns=["input_ids"])
        print(f"ParquetDataset construction (footers, lengths counted from the column): "
              f"{time.perf_counter() - start:.2f} s")
        runs = {
            "feedline": lambda: run_feedline(dataset, args, args.workers),
            "plain": lambda: run_plain(paths, args),
            "floor": lambda: run_floor(paths, args),
        }
        for k in others:
            runs[f"feedline, {k} workers"] = lambda k=k: run_feedline(dataset, args, k)
        names = list(runs)
        rates = {name: [] for name in names}
        cpu = {name: [] for name in names}
        for r in range(args.rounds):
            turn = r % len(names)
            for name in names[turn:] + names[:turn]:
                wall, process = time.perf_counter(), time.process_time()
                tokens = runs[name]()
                wall, process = time.perf_counter() - wall, time.process_time() - process
                expected = total if name == "floor" else tokens
                assert tokens == expected and tokens == total, (name, tokens, total)
                rates[name].append(tokens / wall)
                cpu[name].append(process / tokens * 1e6)
            print(f"round {r + 1}: " + ", ".join(
                f"{n} {rates[n][-1] / 1e6:.1f} M tokens/s" for n in names), flush=True)
        reads = dataset.stats()["row_group_reads"]
        epochs = args.rounds * (1 + len(others))
        print(f"feedline row group reads: {reads} over {epochs} epochs of "
              f"{dataset.num_row_groups} groups")
        median = {n: statistics.median(rates[n]) for n in names}
        print()
        print("| | tokens/s (median) | CPU s per M tokens (median) | feedline vs it |")
        print("|---|---:|---:|---:|")
        for n in names:
            print(f"| {n} | {median[n] / 1e6:.1f} M | {statistics.median(cpu[n]):.3f} | "
                  f"{median['feedline'] / median[n]:.2f}x |")
        print()
        for n in [n for n in names if n.startswith("feedline")]:
            print(f"{n}: {median[n] / median['plain']:.2f}x the plain packer's rate")
        seq_len = args.seq_len
        online = io.PackOptions(seq_len).plan(lengths)["padding_fraction"]
        plain_rows = PlainPacker(seq_len, args.batch)
        for length in lengths:
            plain_rows.add(np.zeros(length, np.int32))
        plain_rows.finish()
        plain_padding = 1 - total / (plain_rows.rows_made * seq_len)
        offline = 1 - total / (offline_best_fit_decreasing_rows(lengths, seq_len) * seq_len)
        print(f"\npadding: feedline (online best fit, 64 open rows) {online:.2%}, plain (next "
              f"fit) {plain_padding:.2%}, offline best fit decreasing {offline:.2%}")
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
