#!/usr/bin/python3
"""Trains a small classifier in DistributedDataParallel (gloo, CPU), each rank
loading its share with feedline's DistributedBatchSampler, then evaluates
with pad=False so that every sample is counted exactly once.

Start it with a launcher; rank and world size come from its environment:

    PYTHONPATH=build/python torchrun --redirects 1 --tee 1 --nproc_per_node 2 \\
        examples/train_distributed.py --epochs 3

(--redirects 1 --tee 1: Debian's torchrun under Python 3.11 needs both,
docs/distributed.md says why.) Each rank prints one JSON line per epoch
(the indices it trained on, its steps, its mean loss) and one for the
evaluation, so that a test can check coverage from the outputs.
"""

import argparse
import json
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import feedline
from feedline import io


class Blobs(io.Dataset):
    """n points in `dim` dimensions around one centre per class; sample i is
    (features, label, i), so a rank can report which samples it saw."""

    def __init__(self, n, dim=8, classes=3, seed=0):
        rng = np.random.default_rng(seed)
        centres = rng.normal(0.0, 2.0, size=(classes, dim)).astype(np.float32)
        self.labels = rng.integers(0, classes, size=n).astype(np.int64)
        noise = rng.normal(0.0, 1.0, size=(n, dim)).astype(np.float32)
        self.features = centres[self.labels] + noise

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.features[i], self.labels[i], np.int64(i)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=203, help="dataset size (odd on purpose)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--partition", default="paddle", choices=["paddle", "torch"])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def emit(record):
    print(json.dumps(record), flush=True)


def main():
    args = parse_args()
    torch.set_num_threads(1)
    launch = io.resolve_launch()  # torchrun, paddle, OpenMPI or PMI variables
    # gloo's env:// rendezvous reads RANK and WORLD_SIZE; set them from the
    # launcher feedline found, so a paddle- or mpirun-started job works too.
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("gloo", rank=launch["rank"], world_size=launch["world_size"])
    rank = dist.get_rank()

    data = Blobs(args.samples, seed=args.seed)
    sampler = io.DistributedBatchSampler(data, args.batch_size, shuffle=True, seed=args.seed,
                                         partition=args.partition)
    loader = feedline.DataLoader(data, batch_sampler=sampler, num_workers=args.workers)

    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = DistributedDataParallel(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        seen, losses = [], []
        for features, labels, indices in loader:
            loss = F.cross_entropy(model(torch.as_tensor(features)), torch.as_tensor(labels))
            optimizer.zero_grad()
            loss.backward()  # DDP averages the gradients over the ranks
            optimizer.step()
            seen += indices.tolist()
            losses.append(loss.item())
        emit({"rank": rank, "launcher": launch["source"], "epoch": epoch, "steps": len(losses),
              "loss": float(np.mean(losses)), "indices": seen})

    # Exact evaluation: pad=False gives every sample to exactly one rank.
    eval_sampler = io.DistributedBatchSampler(data, args.batch_size, partition=args.partition,
                                              pad=False)
    counts = torch.zeros(2, dtype=torch.int64)  # correct, samples
    with torch.no_grad():
        for features, labels, _ in feedline.DataLoader(data, batch_sampler=eval_sampler):
            predicted = model(torch.as_tensor(features)).argmax(1)
            counts[0] += int((predicted == torch.as_tensor(labels)).sum())
            counts[1] += len(labels)
    dist.all_reduce(counts)
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    emit({"rank": rank, "eval_correct": int(counts[0]), "eval_samples": int(counts[1]),
          "weights_sum": float(weights.double().sum())})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
