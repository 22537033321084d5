#!/usr/bin/python3
"""Packed token batches side by side: feedline's packing loader against
torch's DataLoader with a packing collate_fn, the usual way to pack in torch.

The job: --docs tokenized documents with log-normal lengths (median about
330 tokens, mean about 600, 5% over 2048: web text; bench/text_corpus.py,
shared with bench/text_vs_peers.py), packed into rows of
--seq-len tokens, --batch rows a batch, shuffled, --workers workers. Each
batch holds input_ids, labels (shifted, -100 across documents),
position_ids and segment_ids (feedline adds cu_seqlens).

  feedline  DataLoader(TokenDataset, shuffle=True, pack=PackOptions(seq_len,
            strategy)): the epoch's rows are planned from the lengths, then
            written in C++ straight into the batch.
  torch     torch.utils.data.DataLoader over a Dataset returning each document
            as a numpy array, batch_size = the documents that fill --batch
            rows on average, and a collate_fn that packs them first-fit with
            numpy (long documents split), the fields built with numpy.

Figures are tokens/s (real tokens, padding not counted) over one epoch,
worker start-up included, and the padding share of the rows; runs alternate
and the median of --rounds is printed as a markdown table.

Usage: bench/text_packing.py [--build build] [--docs 40000] [--seq-len 2048]
           [--batch 8] [--workers 2] [--rounds 3]
"""
import datetime
import os
import statistics
import sys
import time

import numpy as np

from machine import cpu_model  # bench/machine.py
from text_corpus import documents, packing_arguments  # bench/text_corpus.py


class Documents:
    """A torch Dataset of documents (numpy int32 arrays)."""

    def __init__(self, tokens, offsets):
        self.tokens, self.offsets = tokens, offsets

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, i):
        return self.tokens[self.offsets[i]:self.offsets[i + 1]]


def pack_collate(seq_len):
    import torch

    def collate(documents):
        # First fit over the batch's documents (long ones split into rows).
        pieces = []
        for d in documents:
            for start in range(0, len(d), seq_len):
                pieces.append(d[start:start + seq_len])
        rows, room = [], []
        for p in pieces:
            for r, free in enumerate(room):
                if free >= len(p):
                    rows[r].append(p)
                    room[r] -= len(p)
                    break
            else:
                rows.append([p])
                room.append(seq_len - len(p))
        return {name: torch.from_numpy(a) for name, a in row_fields(rows, seq_len).items()}

    return collate


def row_fields(rows, seq_len, ends=False):
    """The fields of packed rows (each a list of pieces, 1-D token arrays)
    built with numpy, as a hand-written packer does: input_ids, labels
    (shifted, -100 after each piece and in padding), position_ids,
    segment_ids; with `ends`, also the pieces' ends (cu_seqlens, [rows,
    seq_len + 1]: 0, each piece's end, then the row's token count repeated)."""
    n = len(rows)
    ids = np.zeros((n, seq_len), np.int64)
    labels = np.full((n, seq_len), -100, np.int64)
    pos = np.zeros((n, seq_len), np.int64)
    seg = np.zeros((n, seq_len), np.int32)
    cu = np.zeros((n, seq_len + 1), np.int32) if ends else None
    for r, row in enumerate(rows):
        at = 0
        for k, p in enumerate(row):
            m = len(p)
            ids[r, at:at + m] = p
            labels[r, at:at + m - 1] = p[1:]
            pos[r, at:at + m] = np.arange(m)
            seg[r, at:at + m] = k + 1
            at += m
            if ends:
                cu[r, k + 1] = at
        if ends:
            cu[r, len(row) + 1:] = at
    fields = {"input_ids": ids, "labels": labels, "position_ids": pos, "segment_ids": seg}
    if ends:
        fields["cu_seqlens"] = cu
    return fields


def run_feedline(io, docs, args, strategy):
    loader = io.DataLoader(docs, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                           seed=0, pack=io.PackOptions(args.seq_len, strategy=strategy))
    start = time.perf_counter()
    tokens = slots = 0
    for batch in loader:
        tokens += int(np.count_nonzero(batch["segment_ids"]))
        slots += batch["segment_ids"].size
    seconds = time.perf_counter() - start
    loader.close()
    return tokens / seconds, 1 - tokens / slots


def run_torch(tokens_array, offsets, mean_length, args):
    import torch

    docs_per_batch = max(1, round(args.batch * args.seq_len / mean_length))
    loader = torch.utils.data.DataLoader(Documents(tokens_array, offsets),
                                         batch_size=docs_per_batch, shuffle=True,
                                         num_workers=args.workers,
                                         collate_fn=pack_collate(args.seq_len))
    start = time.perf_counter()
    tokens = slots = 0
    for batch in loader:
        tokens += int(torch.count_nonzero(batch["segment_ids"]))
        slots += batch["segment_ids"].numel()
    return tokens / (time.perf_counter() - start), 1 - tokens / slots


def main():
    parser = packing_arguments(__doc__.split("\n")[0], rounds=3)
    parser.add_argument("--docs", type=int, default=40000)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    from feedline import io
    import torch

    tokens_array, offsets, lengths = documents(args.docs, seed=0)
    docs = io.TokenDataset(tokens_array, offsets)
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_model()}, "
          f"{os.cpu_count()} CPUs, torch {torch.__version__}")
    print(f"{args.docs} documents, {offsets[-1]} tokens ({offsets[-1] * 4 / 2**20:.0f} MiB as "
          f"int32), seq_len {args.seq_len}, batch {args.batch} rows, {args.workers} workers")
    runs = {"feedline best_fit": lambda: run_feedline(io, docs, args, "best_fit"),
            "feedline first_fit": lambda: run_feedline(io, docs, args, "first_fit"),
            "torch + packing collate": lambda: run_torch(tokens_array, offsets,
                                                         float(lengths.mean()), args)}
    results = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            results[name].append(run())
    base = statistics.median(r[0] for r in results["torch + packing collate"])
    print("\n| loader | tokens/s (median) | vs torch | padding |")
    print("|---|---|---|---|")
    for name, rounds in results.items():
        rate = statistics.median(r[0] for r in rounds)
        print(f"| {name} | {rate / 1e6:.2f} M | {rate / base:.2f}x | "
              f"{statistics.median(r[1] for r in rounds) * 100:.2f}% |")


if __name__ == "__main__":
    main()
